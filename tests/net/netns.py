"""A small routed network of Linux network namespaces, with faults made while processes run.

Why namespaces: a test of what the pipeline does when the network fails needs a network that
really fails (packets that vanish, links that die) without touching the machine's own
network. Each host is a namespace of its own with one veth link to a *hub* namespace; the
hub routes between the hosts. Everything lives in 198.18.0.0/15 (RFC 2544, reserved for
benchmark networks, never routed on the internet), one random /24 of it per
:class:`Network`.

Why a routed hub in its own namespace, not a bridge (and not the root namespace):

* A ``blackhole`` route in the *sender's* own namespace does not make packets vanish: the
  sender's kernel refuses them at once (``connect()`` fails with ``EINVAL``, measured on
  this kernel), which is nothing like a partition, where a connect hangs until it times
  out. A fault must drop packets *between* the hosts, where neither end can see it. On a
  bridge (layer 2) routes do not apply, so the hub routes (layer 3): each host has its own
  /30 to the hub, and a fault is a ``blackhole`` route in the hub's per-source routing table
  of the sending host. The hub drops such packets silently (no ICMP), so a connect times
  out and an established connection just gets no answer; one direction can be cut alone.
* In its own namespace the hub changes nothing of the machine: no link, route, address or
  ``ip_forward`` setting appears in the root namespace (veth pairs are created directly
  between the hub and the host namespaces), nothing there can route 198.18/15 out of the
  machine, and no firewall of the root namespace can interfere. Deleting the namespaces
  removes every link with them.

Names: every namespace is ``tw<pid>-<run>-<host>`` (``pid`` the creating process, so that
:func:`sweep_stale` can tell a crashed run's leftovers from a live run's), every link
``tw<run>h<k>`` (host side) or ``tw<run>p<k>`` (hub side), at most 9 characters (Linux allows
15).

Processes started in a host (:meth:`Host.run`) are tracked and, when the network closes,
signalled by pid (SIGTERM, then SIGKILL); any other process left in a namespace (a child of
one of them) is found with ``ip netns pids`` and killed by pid too. Nothing is ever killed
by name.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

#: RFC 2544's benchmark block: addresses that exist only on networks a test builds.
BENCHMARK_NET = ipaddress.IPv4Network("198.18.0.0/15")
PREFIX = "tw"
#: /30 blocks in a /24 are 64; the last one holds the hub's marker address.
MAX_HOSTS = 63
#: Routing table (and rule preference) of host ``k``'s outgoing traffic in the hub.
TABLE_BASE = 1000
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Short (namespace names stay readable, link names do not carry it) and shell-safe.
_HOST_NAME = re.compile(r"[a-z][a-z0-9]{0,11}")
_OURS = re.compile(rf"^{PREFIX}(\d+)-([0-9a-f]{{4}})-[a-z0-9]+$")
_LOCK = Path("/run/lock" if Path("/run/lock").is_dir() else tempfile.gettempdir()) / (
    "toolwire-netns.lock")
_unusable: list[str | None] = []  # the cached answer of unusable()


class NetError(RuntimeError):
    """An ``ip`` command failed, or the network could not be built or removed; says which."""


# --------------------------------------------------------------------------- ip


def _ip_path() -> str | None:
    """``ip`` is often in /usr/sbin, which a non-login PATH may lack."""
    return shutil.which("ip") or next(
        (p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip") if os.access(p, os.X_OK)), None)


def ip(*args: str, check: bool = True, timeout: float = 10.0) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS``; with ``check``, a failure raises :class:`NetError` with its stderr."""
    path = _ip_path()
    if path is None:
        raise NetError("`ip` (iproute2) not found")
    cmd = [path, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    if check and done.returncode != 0:
        raise NetError(f"`ip {' '.join(args)}` failed ({done.returncode}): "
                       f"{(done.stderr or done.stdout).strip()}")
    return done


def namespaces() -> list[str]:
    """Names of every named network namespace on the machine (``ip netns list``)."""
    out = ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(ns: str) -> list[int]:
    """Pids of every process whose network namespace is ``ns`` (empty if it is gone)."""
    out = ip("netns", "pids", ns, check=False).stdout
    return [int(tok) for tok in out.split() if tok.isdigit()]


def root_links() -> list[str]:
    """Link names of the root namespace (``ip -o link``): a test checks none of ours is here."""
    out = ip("-o", "link", "show", check=False).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def unusable() -> str | None:
    """Why namespaces cannot be used here (not root, no ``ip``, no netns support), or None.

    Found out once per process by trying: creating a namespace with a veth pair and deleting
    it again is the only check that covers a container without the capability too.
    """
    if _unusable:
        return _unusable[0]
    reason: str | None = None
    if os.geteuid() != 0:
        reason = f"this process is not root (euid {os.geteuid()})"
    elif _ip_path() is None:
        reason = "`ip` (iproute2) not found"
    else:
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(2)}-probe"
        try:
            ip("netns", "add", name)
            ip("-n", name, "link", "set", "lo", "up")
            ip("-n", name, "link", "add", "twprobe0", "type", "veth", "peer", "name", "twprobe1")
        except (NetError, OSError, subprocess.TimeoutExpired) as exc:
            reason = f"`ip netns` does not work here: {exc}"
        finally:
            ip("netns", "del", name, check=False)
    _unusable.append(reason)
    return reason


#: Set (to 1) where the network-fault tests must run, as CI does (``.ci/run``): a machine that
#: cannot build namespaces then fails them instead of skipping them.
REQUIRE_VARIABLE = "TOOLWIRE_REQUIRE_NETNS"


def require_root() -> None:
    """Skip the calling test, saying why, where network namespaces cannot be built (fail it
    instead when ``TOOLWIRE_REQUIRE_NETNS=1``: CI asserts that these tests ran)."""
    reason = unusable()
    if reason is not None:
        why = f"tests/net needs root and a working `ip netns`: {reason}"
        if os.environ.get(REQUIRE_VARIABLE) == "1":
            pytest.fail(f"{why} ({REQUIRE_VARIABLE}=1: these tests must run here)")
        pytest.skip(why)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_namespace_processes(ns: str, timeout: float = 5.0) -> list[int]:
    """SIGKILL, by pid, every process still in ``ns``; wait (bounded) until none is left.

    Returns the pids that were killed. A namespace outlives ``ip netns del`` while any
    process is in it (with its links), so this comes before the delete.
    """
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in netns_pids(ns) if p != os.getpid()]
        if not pids:
            return killed
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if pid not in killed:
                killed.append(pid)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)  # a child of ours: reap it
        if time.monotonic() > deadline:
            raise NetError(f"processes {pids} in {ns} did not die within {timeout:.0f}s")
        time.sleep(0.05)


def sweep_stale() -> list[str]:
    """Delete the namespaces of runs that died without cleaning up (their pid is gone).

    A run killed with SIGKILL cannot remove its namespaces; the next run does. Namespaces of
    a live process (another test run going on now) are left alone.
    """
    swept = []
    for ns in namespaces():
        match = _OURS.match(ns)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        if _pid_alive(int(match.group(1))):
            continue
        with contextlib.suppress(NetError):
            kill_namespace_processes(ns)
        ip("netns", "del", ns, check=False)
        swept.append(ns)
    return swept


@contextlib.contextmanager
def _subnet_lock(timeout: float = 30.0) -> Iterator[None]:
    """Two runs starting at once must not both pick the same free /24."""
    with _LOCK.open("a+") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise NetError(f"timed out waiting for {_LOCK}") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def addresses_in_use() -> list[ipaddress.IPv4Interface]:
    """Every IPv4 address of the root namespace and of every named namespace.

    The namespaces of other runs count: their /24 is in use even though it is not visible
    from here.
    """
    texts = [ip("-4", "-o", "addr", "show", check=False).stdout]
    texts += [ip("-n", ns, "-4", "-o", "addr", "show", check=False).stdout for ns in namespaces()]
    found = []
    for text in texts:
        for match in re.finditer(r"\binet (\d+\.\d+\.\d+\.\d+/\d+)", text):
            found.append(ipaddress.IPv4Interface(match.group(1)))
    return found


def pick_subnet(rng: secrets.SystemRandom | None = None) -> ipaddress.IPv4Network:
    """A random /24 of 198.18.0.0/15 that no address on the machine is in (call locked)."""
    rng = rng or secrets.SystemRandom()
    used = [a.network for a in addresses_in_use() if a.network.overlaps(BENCHMARK_NET)]
    candidates = list(BENCHMARK_NET.subnets(new_prefix=24))
    rng.shuffle(candidates)
    for subnet in candidates:
        if not any(subnet.overlaps(u) for u in used):
            return subnet
    raise NetError("every /24 of 198.18.0.0/15 is already in use on this machine")


# --------------------------------------------------------------------------- hosts


@dataclass(eq=False)
class Host:
    """One host: a namespace with a loopback and one link to the hub.

    ``address`` is the host's only address besides 127.0.0.1 (its loopback is its own);
    every other host is reached through ``gateway``, the hub's end of the link.
    """

    name: str
    ns: str
    address: str
    gateway: str
    index: int
    #: The host's end of its veth pair (inside ``ns``) and the hub's end (inside the hub).
    link: str
    peer: str
    #: The hub's routing table for packets this host sends.
    table: int
    processes: list[subprocess.Popen[Any]] = field(default_factory=list, repr=False)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment for a process in this host: ours, the repository on
        ``PYTHONPATH`` (so ``python -m tests.net.relay`` works from anywhere),
        ``TWNET_HOST`` and ``TWNET_ADDRESS``, unbuffered Python output, then ``extra``."""
        env = dict(os.environ)
        paths = [str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env.update(PYTHONPATH=os.pathsep.join(paths), PYTHONUNBUFFERED="1",
                   TWNET_HOST=self.name, TWNET_ADDRESS=self.address)
        env.update(extra)
        return env

    def run(self, argv: Sequence[str | os.PathLike[str]], **popen_kwargs: Any
            ) -> subprocess.Popen[Any]:
        """Start ``argv`` inside this host's namespace (``ip netns exec``, which execs it,
        so the pid is the program's own) and track it for cleanup.

        Defaults, each overridable: ``env=self.env()``, ``cwd`` the repository,
        ``stdin=DEVNULL``, ``start_new_session=True`` (a Ctrl-C meant for pytest does not
        reach it half-way; the network stops it).
        """
        path = _ip_path()
        if path is None:
            raise NetError("`ip` (iproute2) not found")
        popen_kwargs.setdefault("env", self.env())
        popen_kwargs.setdefault("cwd", REPO_ROOT)
        popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
        popen_kwargs.setdefault("start_new_session", True)
        proc: subprocess.Popen[Any] = subprocess.Popen(
            [path, "netns", "exec", self.ns, *(os.fspath(a) for a in argv)], **popen_kwargs)
        self.processes.append(proc)
        return proc

    def python(self, code: str, *args: str, **popen_kwargs: Any) -> subprocess.Popen[Any]:
        """``python -c code args`` in this host, with this interpreter (the venv's)."""
        return self.run([sys.executable, "-c", code, *args], **popen_kwargs)

    def module(self, module: str, *args: str, **popen_kwargs: Any) -> subprocess.Popen[Any]:
        """``python -m module args`` in this host."""
        return self.run([sys.executable, "-m", module, *args], **popen_kwargs)

    def ip(self, *args: str) -> str:
        """Output of ``ip -n <ns> ARGS`` (for looking at the host's links and routes)."""
        return ip("-n", self.ns, *args).stdout

    def pids(self) -> list[int]:
        """Every process in this host's namespace, ours or their children."""
        return netns_pids(self.ns)

    def stop(self, proc: subprocess.Popen[Any], grace: float = 2.0) -> int | None:
        """SIGTERM ``proc`` by pid, SIGKILL after ``grace`` seconds; its exit code."""
        return _stop_all([proc], grace)[0]

    def stop_all(self, grace: float = 2.0) -> None:
        """Stop every process :meth:`run` started here (all signalled at once)."""
        _stop_all(self.processes, grace)


def _stop_all(procs: Sequence[subprocess.Popen[Any]], grace: float) -> list[int | None]:
    """SIGTERM every live one by pid, wait up to ``grace`` overall, SIGKILL the rest; reap
    them and close their pipes (no zombies, no ResourceWarning)."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    codes: list[int | None] = []
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        codes.append(proc.returncode)
    return codes


# --------------------------------------------------------------------------- network


class Network:
    """Hosts in namespaces around a routing hub; a context manager that removes it all.

    ``hosts`` are created on entry; :meth:`host` adds more later (or returns an existing
    one). Faults: :meth:`blackhole`, :meth:`heal`, :meth:`partition`, :meth:`link_down`,
    :meth:`link_up`, each taking effect at once for the processes already running.
    """

    def __init__(self, hosts: Iterable[str] = (), *, subnet: str | None = None) -> None:
        self.run_id = secrets.token_hex(2)
        self.tag = f"{PREFIX}{os.getpid()}-{self.run_id}"
        self.hub = f"{self.tag}-hub"
        self.subnet: ipaddress.IPv4Network | None = (
            ipaddress.IPv4Network(subnet) if subnet is not None else None)
        if self.subnet is not None and (self.subnet.prefixlen != 24
                                        or not self.subnet.subnet_of(BENCHMARK_NET)):
            raise ValueError(f"subnet must be a /24 of {BENCHMARK_NET}, not {subnet}")
        self._initial = list(hosts)
        self._hosts: dict[str, Host] = {}
        self._blocked: set[tuple[str, str]] = set()
        self._down: set[str] = set()
        self._made: list[str] = []  # namespaces, in the order made (the hub first)
        self._open = False

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Network:
        self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.close()
        except NetError as cleanup:
            if exc is None:
                raise
            # The body's failure is the one to see; the leftover is said, not lost.
            warnings.warn(f"network cleanup after a failure: {cleanup}", stacklevel=2)

    def open(self) -> None:
        """Build the hub (under a lock, with the /24 picked) and the initial hosts; on any
        failure, remove whatever was made and raise."""
        if self._open:
            return
        try:
            with _subnet_lock():
                if self.subnet is None:
                    self.subnet = pick_subnet()
                elif any(a.ip in self.subnet for a in addresses_in_use()):
                    raise NetError(f"{self.subnet} is already in use on this machine")
                self._make_hub()
            self._open = True
            for name in self._initial:
                self.host(name)
        except BaseException:
            self.close()
            raise

    def _make_hub(self) -> None:
        assert self.subnet is not None
        self._made.append(self.hub)
        ip("netns", "add", self.hub)
        ip("-n", self.hub, "link", "set", "lo", "up")
        # The marker address: the /24 shows as in use to a run that picks after us.
        marker = ipaddress.IPv4Address(int(self.subnet.broadcast_address) - 1)
        ip("-n", self.hub, "addr", "add", f"{marker}/32", "dev", "lo")
        ip("netns", "exec", self.hub, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")

    def close(self) -> None:
        """Stop every process, delete every namespace made (hosts, then the hub).

        Raises :class:`NetError` if a namespace is still listed afterwards. Safe to call
        twice, and after a half-finished :meth:`open`.
        """
        self._open = False
        problems: list[str] = []
        procs = [p for h in self._hosts.values() for p in h.processes]
        _stop_all(procs, grace=2.0)
        for ns in reversed(self._made):
            try:
                kill_namespace_processes(ns)
            except NetError as exc:
                problems.append(str(exc))
            done = ip("netns", "del", ns, check=False)
            if done.returncode != 0 and ns in namespaces():
                problems.append(f"`ip netns del {ns}`: {done.stderr.strip()}")
        left = sorted(set(self._made) & set(namespaces()))
        if left:
            problems.append(f"namespaces still listed: {left}")
        self._made = [ns for ns in self._made if ns in left]
        self._blocked.clear()
        self._down.clear()
        if problems:
            raise NetError("; ".join(problems))

    # -- hosts -----------------------------------------------------------------------------

    @property
    def hosts(self) -> tuple[Host, ...]:
        """Every host, in the order made."""
        return tuple(self._hosts.values())

    def names(self) -> list[str]:
        """Every namespace and link name this network made (what cleanup must remove)."""
        links = [n for h in self._hosts.values() for n in (h.link, h.peer)]
        return [*self._made, *links]

    def host(self, name: str) -> Host:
        """The host called ``name``, created (namespace, link, address, route) if new."""
        if name in self._hosts:
            return self._hosts[name]
        if not self._open or self.subnet is None:
            raise NetError("the network is not open (use it as a context manager)")
        if not _HOST_NAME.fullmatch(name) or name == "hub":
            raise ValueError(f"host name must match {_HOST_NAME.pattern} (not 'hub'): {name!r}")
        k = len(self._hosts)
        if k >= MAX_HOSTS:
            raise NetError(f"at most {MAX_HOSTS} hosts per network")
        base = int(self.subnet.network_address) + 4 * k
        host = Host(name=name, ns=f"{self.tag}-{name}",
                    address=str(ipaddress.IPv4Address(base + 2)),
                    gateway=str(ipaddress.IPv4Address(base + 1)), index=k,
                    link=f"{PREFIX}{self.run_id}h{k}", peer=f"{PREFIX}{self.run_id}p{k}",
                    table=TABLE_BASE + k)
        self._made.append(host.ns)  # first, so that close() removes a half-made host
        self._hosts[name] = host
        hub, ns = self.hub, host.ns
        ip("netns", "add", ns)
        ip("-n", ns, "link", "set", "lo", "up")
        # Made inside the hub with its other end put straight into the host: neither end
        # ever exists in the root namespace.
        ip("-n", hub, "link", "add", host.peer, "type", "veth",
           "peer", "name", host.link, "netns", ns)
        ip("-n", hub, "addr", "add", f"{host.gateway}/30", "dev", host.peer)
        ip("-n", hub, "link", "set", host.peer, "up")
        ip("-n", ns, "addr", "add", f"{host.address}/30", "dev", host.link)
        ip("-n", ns, "link", "set", host.link, "up")
        # Only the network's own /24 is routed: any other address stays unreachable.
        ip("-n", ns, "route", "add", str(self.subnet), "via", host.gateway, "dev", host.link)
        ip("-n", hub, "rule", "add", "from", f"{host.address}/32",
           "lookup", str(host.table), "pref", str(host.table))
        return host

    def _get(self, host: Host | str) -> Host:
        name = host.name if isinstance(host, Host) else host
        try:
            return self._hosts[name]
        except KeyError:
            raise KeyError(f"no host {name!r} in this network "
                           f"(hosts: {', '.join(self._hosts) or 'none'})") from None

    # -- faults ----------------------------------------------------------------------------

    @property
    def blocked(self) -> frozenset[tuple[str, str]]:
        """``(sender, receiver)`` host names whose packets the hub drops now."""
        return frozenset(self._blocked)

    @property
    def down(self) -> frozenset[str]:
        """Names of the hosts whose link is down now."""
        return frozenset(self._down)

    def blackhole(self, a: Host | str, b: Host | str, one_way: bool = False) -> None:
        """Packets from ``a`` to ``b`` vanish, and (unless ``one_way``) from ``b`` to ``a``.

        The hub drops them (a ``blackhole`` route for the receiver's /32 in the sender's
        table), silently: a connect times out, a sent segment is retransmitted unanswered.
        With ``one_way`` only ``a``'s packets to ``b`` vanish: UDP from ``b`` still reaches
        ``a``; TCP in either direction stalls (it needs both).
        """
        src, dst = self._get(a), self._get(b)
        if src is dst:
            raise ValueError(f"{src.name} cannot be cut off from itself")
        pairs = [(src, dst)] if one_way else [(src, dst), (dst, src)]
        for sender, receiver in pairs:
            ip("-n", self.hub, "route", "replace", "blackhole", f"{receiver.address}/32",
               "table", str(sender.table))
            self._blocked.add((sender.name, receiver.name))

    def heal(self, a: Host | str, b: Host | str) -> None:
        """Undo every blackhole between ``a`` and ``b``, both directions."""
        src, dst = self._get(a), self._get(b)
        for sender, receiver in ((src, dst), (dst, src)):
            if (sender.name, receiver.name) in self._blocked:
                ip("-n", self.hub, "route", "del", "blackhole", f"{receiver.address}/32",
                   "table", str(sender.table))
                self._blocked.discard((sender.name, receiver.name))

    def partition(self, host: Host | str, others: Iterable[Host | str] | None = None) -> None:
        """Cut ``host`` off from ``others`` (default: every other host), both directions."""
        one = self._get(host)
        rest = [self._get(o) for o in others] if others is not None else [
            h for h in self._hosts.values() if h is not one]
        for other in rest:
            self.blackhole(one, other)

    def heal_all(self) -> None:
        """Remove every blackhole and bring every link back up."""
        for sender, receiver in sorted(self._blocked):
            self.heal(sender, receiver)
        for name in sorted(self._down):
            self.link_up(name)

    def link_down(self, host: Host | str) -> None:
        """The host's link dies: its hub-side end is set down (like a switch port).

        The host keeps its address and routes but its interface loses carrier, so what it
        sends is lost without an error (its connects time out); the hub has no route to it
        any more and answers the others with ICMP network unreachable.
        """
        one = self._get(host)
        ip("-n", self.hub, "link", "set", one.peer, "down")
        self._down.add(one.name)

    def link_up(self, host: Host | str) -> None:
        """Bring the host's link back (the hub's route to it returns with it)."""
        one = self._get(host)
        ip("-n", self.hub, "link", "set", one.peer, "up")
        self._down.discard(one.name)
