"""A real, single-node Apache Kafka broker that toolwire fetches and runs by itself.

Why this exists: the pipeline is only trustworthy if it is tested against a real broker
(real group rebalances, real headers, real changelog topics), but developers and CI only
reach package registries. Apache's tarball mirrors are out of reach; Maven Central is not.
So the broker's jars come from Maven Central (pinned in ``ops/kafka/pom.xml``), are cached
under ``~/.cache/toolwire/kafka-<version>/lib``, and ``java -cp 'lib/*' kafka.Kafka`` runs
one KRaft node (broker + controller in one JVM) bound to 127.0.0.1 only.

Lifecycle state lives in a *state dir* (default ``./.toolwire/broker``):

``broker.json``        pid, bootstrap address, ports, log path: the only way we find it again.
``server.properties``  generated per start (the last ports are reused whenever Kafka can
                       bind them; see :func:`_bindable`).
``ports.json``         the last ports, so a restart comes back at the same address.
``log4j2.properties``  logging config; broker output goes to ``broker.log``.
``data/``              the KRaft metadata log and topic data; survives stop/start.

Processes are only ever signalled by the pid recorded in ``broker.json``, and only after
checking ``/proc/<pid>/cmdline`` says it is ``kafka.Kafka`` run from *this* state dir, so a
stale file whose pid was reused by something else never gets that something killed.

If ``KAFKA_BOOTSTRAP_SERVERS`` is set, callers use that broker instead
(:func:`ensure_broker` returns it and starts nothing).

By default the broker has one PLAINTEXT listener. :class:`BrokerOptions` changes that for a
caller that asks (a test of a secured cluster): extra or overriding server properties (e.g. a
SASL_SSL listener), SCRAM users created when the data dir is formatted, and the connection
options the readiness probe then needs.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from toolwire.config.settings import Settings

__all__ = [
    "DEFAULT_HEAP",
    "KAFKA_VERSION",
    "BrokerError",
    "BrokerInfo",
    "BrokerOptions",
    "LocalBroker",
    "configured_bootstrap",
    "default_cache_root",
    "default_state_dir",
    "ensure_broker",
    "fetch",
    "is_running",
    "kafka_version",
    "start",
    "status",
    "stop",
]

#: Fallback when ops/kafka/pom.xml cannot be found (e.g. an installed wheel with a warm
#: cache). The pom is the source of truth; tests assert the two agree.
KAFKA_VERSION = "4.3.1"
DEFAULT_HEAP = "512m"
DEFAULT_START_TIMEOUT = 90.0
DEFAULT_STOP_TIMEOUT = 20.0
MAVEN_TIMEOUT = 900.0
FORMAT_TIMEOUT = 120.0
LOG_TAIL_LINES = 30
MIN_JAVA = 17

BROKER_JSON = "broker.json"
PORTS_JSON = "ports.json"
LOG_NAME = "broker.log"
_LOCK_NAME = ".lock"
_COMPLETE_MARKER = ".complete"
_MAIN_CLASS = "kafka.Kafka"
_STORAGE_TOOL = "kafka.tools.StorageTool"
_STATE_PROP = "toolwire.state.dir"

ENV_BOOTSTRAP = "KAFKA_BOOTSTRAP_SERVERS"
ENV_STATE_DIR = "TOOLWIRE_STATE_DIR"
ENV_CACHE = "TOOLWIRE_KAFKA_CACHE"
ENV_POM = "TOOLWIRE_KAFKA_POM"

_T = TypeVar("_T")

# Popen handles of brokers started by this process, so stop() can reap them (no zombies,
# no "subprocess still running" ResourceWarning).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class BrokerError(RuntimeError):
    """The local broker could not be fetched, started, probed or stopped; says why."""


@dataclass(frozen=True)
class BrokerOptions:
    """Optional changes to the generated broker; the default changes nothing.

    ``properties`` are merged over the generated ``server.properties`` (a key given here wins;
    an empty value removes the key). In a value, ``{broker_port}`` and ``{controller_port}``
    stand for the ports picked for this start, e.g. ``{"listeners":
    "SASL_SSL://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}"}``.
    The first listener's port is the one in ``bootstrap``.

    ``scram`` are ``kafka-storage format --add-scram`` credentials, e.g.
    ``SCRAM-SHA-512=[name=alice,password=alice-secret]``, created when the data dir is formatted
    (the first start of a state dir only). They are passed on the tool's command line and never
    written to ``broker.json``.

    ``client`` are the aiokafka connection options (``security_protocol``, ``ssl_context``,
    ``sasl_*``) that the readiness probe uses when the first listener is not PLAINTEXT.
    """

    properties: Mapping[str, str] = field(default_factory=dict)
    scram: Sequence[str] = ()
    client: Mapping[str, Any] | None = field(default=None, repr=False)


def _say(msg: str) -> None:
    """Progress for humans goes to stderr so stdout stays parseable (status prints JSON)."""
    print(f"toolwire: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- locations


def _settings() -> Settings:
    """The deployment's settings (the one reader of the environment), or a BrokerError that
    says which value to fix."""
    try:
        return Settings.from_env()
    except ValueError as exc:
        raise BrokerError(str(exc)) from None


def default_state_dir() -> Path:
    """``$TOOLWIRE_STATE_DIR/broker`` if set, else ``./.toolwire/broker`` (gitignored)."""
    return (_settings().state_dir / "broker").absolute()


def default_cache_root() -> Path:
    """Root of the jar cache: ``$TOOLWIRE_KAFKA_CACHE`` or ``~/.cache/toolwire``.

    Jars land in ``<root>/kafka-<version>/lib`` so several versions can coexist.
    """
    cache = _settings().kafka_cache
    return cache.expanduser().absolute() if cache else Path.home() / ".cache" / "toolwire"


def configured_bootstrap() -> str | None:
    """The externally provided broker (``KAFKA_BOOTSTRAP_SERVERS``, in the environment or the
    settings file), if any.

    When set, nothing here starts a broker: CI or a developer pointed us at one on purpose.
    """
    return _settings().bootstrap.strip() or None


def _find_pom() -> Path | None:
    """Locate ops/kafka/pom.xml: env override, the checkout this module lives in, or cwd."""
    pom = _settings().kafka_pom
    if pom:
        return pom.expanduser().absolute()
    here = Path(__file__).resolve()
    candidates = [p / "ops" / "kafka" / "pom.xml" for p in here.parents]
    cwd = Path.cwd().absolute()
    candidates += [p / "ops" / "kafka" / "pom.xml" for p in (cwd, *cwd.parents)]
    for pom in candidates:
        if pom.is_file():
            return pom
    return None


def kafka_version(pom: Path | None = None) -> str:
    """The pinned Kafka version: ``<kafka.version>`` from the pom, else :data:`KAFKA_VERSION`."""
    pom = pom or _find_pom()
    if pom is None or not pom.is_file():
        return KAFKA_VERSION
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(pom).getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not (node.text or "").strip():
        raise BrokerError(f"{pom} has no <properties><kafka.version>")
    return (node.text or "").strip()


# --------------------------------------------------------------------------- fetch


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float) -> Iterator[None]:
    """Exclusive flock with a bounded wait: two test runs must not fetch/start at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BrokerError(
                        f"timed out after {timeout:.0f}s waiting for lock {path}"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _lib_is_complete(lib: Path, version: str) -> bool:
    marker = lib.parent / _COMPLETE_MARKER
    return marker.is_file() and (lib / f"kafka_2.13-{version}.jar").is_file()


def _run_tool(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run Maven or a Kafka tool to completion, output captured for the error message."""
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, check=False)


def fetch(cache_dir: Path | None = None, *, pom: Path | None = None) -> Path:
    """Make sure the broker's jars are on disk; return the ``lib`` dir to put on the classpath.

    ``cache_dir`` is the cache *root* (default :func:`default_cache_root`); jars go to
    ``<cache_dir>/kafka-<version>/lib``. A complete lib dir is reused without running Maven;
    otherwise Maven copies the pom's dependencies (its own ``~/.m2`` being the second cache),
    into a temp dir that is renamed into place, so an interrupted fetch never looks complete.
    """
    pom = pom or _find_pom()
    version = kafka_version(pom)
    root = (cache_dir or default_cache_root()).absolute()
    home = root / f"kafka-{version}"
    lib = home / "lib"
    if _lib_is_complete(lib, version):
        return lib
    with _file_lock(home / _LOCK_NAME, timeout=MAVEN_TIMEOUT + 60):
        if _lib_is_complete(lib, version):  # another process fetched while we waited
            return lib
        if pom is None or not pom.is_file():
            raise BrokerError(
                "cannot find ops/kafka/pom.xml to fetch Kafka from; run from a toolwire "
                f"checkout or set {ENV_POM}=/path/to/ops/kafka/pom.xml"
            )
        mvn = shutil.which("mvn")
        if mvn is None:
            raise BrokerError(
                "Maven (`mvn`) is needed once to fetch the Kafka broker jars from Maven "
                "Central; install it (Debian/Ubuntu: `apt-get install maven`) or point "
                f"{ENV_BOOTSTRAP} at an existing broker"
            )
        _say(f"fetching Apache Kafka {version} from Maven Central (first run only)…")
        t0 = time.monotonic()
        tmp = home / f"lib.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [
            mvn,
            "-B",
            "-q",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
        ]
        try:
            proc = _run_tool(cmd, MAVEN_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BrokerError(f"Maven did not finish within {MAVEN_TIMEOUT:.0f}s") from exc
        if proc.returncode != 0 or not (tmp / f"kafka_2.13-{version}.jar").is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            out = _tail_text(proc.stdout + proc.stderr, LOG_TAIL_LINES)
            raise BrokerError(
                f"Maven could not fetch Kafka {version} (exit {proc.returncode}):\n"
                f"  {' '.join(cmd)}\n{out}"
            )
        shutil.rmtree(lib, ignore_errors=True)
        tmp.rename(lib)
        jars = sorted(p.name for p in lib.glob("*.jar"))
        (home / _COMPLETE_MARKER).write_text(
            json.dumps({"kafka_version": version, "jars": jars, "fetched_at": time.time()})
        )
        _say(f"Kafka {version}: {len(jars)} jars in {lib} ({time.monotonic() - t0:.1f}s)")
    return lib


# --------------------------------------------------------------------------- java


def _java() -> str:
    """Path of a ``java`` that can run Kafka 4.x (17+), or a BrokerError saying what to install."""
    java_home = _settings().java_home
    java = None
    if java_home and (java_home / "bin" / "java").is_file():
        java = str(java_home / "bin" / "java")
    java = java or shutil.which("java")
    hint = "install a JDK/JRE 17+ (Debian/Ubuntu: `apt-get install openjdk-17-jre-headless`)"
    if java is None:
        raise BrokerError(
            f"`java` not found; Kafka {kafka_version()} needs Java {MIN_JAVA}+: {hint}"
        )
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrokerError(f"could not run `{java} -version`: {exc}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match:
        major = int(match.group(1))
        if major == 1 and match.group(2):  # "1.8.0_xxx" style
            major = int(match.group(2))
        if major < MIN_JAVA:
            raise BrokerError(f"{java} is Java {major}; Kafka 4.x needs {MIN_JAVA}+: {hint}")
    return java


# --------------------------------------------------------------------------- process helpers


def _read_cmdline(pid: int) -> list[str] | None:
    """argv of ``pid`` (None if gone). /proc on Linux, ``ps`` elsewhere."""
    proc = Path(f"/proc/{pid}/cmdline")
    if Path("/proc/self").exists():
        try:
            raw = proc.read_bytes()
        except OSError:
            return None
        return [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    try:
        out = subprocess.run(
            ["ps", "-o", "args=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split() if out.returncode == 0 and out.stdout.strip() else None


def _is_zombie(pid: int) -> bool:
    """Exited but not yet reaped by its parent.

    The JVM's main thread can show state Z while the shutdown hooks still run on other
    threads, so only a Z leader with no threads left counts as exited.
    """
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
    except (OSError, ValueError):
        return False
    state = fields.get("State", "").strip()[:1]
    threads = fields.get("Threads", "1").strip()
    return state == "Z" and threads in ("0", "1")


def _reap(pid: int) -> None:
    """Collect an exited child of ours so it does not linger as a zombie."""
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is not None:
            _CHILDREN.pop(pid, None)
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie has already exited)."""
    if pid <= 0:
        return False
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, but not ours to signal; _owned() will say no
    return not _is_zombie(pid)


def is_running(pid: int) -> bool:
    """True while ``pid`` has not exited (an exited, unreaped zombie counts as gone)."""
    return _alive(pid)


def _owned(pid: int, state_dir: Path) -> bool:
    """Is ``pid`` the kafka.Kafka JVM we started from ``state_dir``? Guards every kill."""
    if not _alive(pid):
        return False
    argv = _read_cmdline(pid)
    if not argv:
        return False
    marker = str(state_dir.resolve())
    return _MAIN_CLASS in argv and any(marker in arg for arg in argv)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


def _tail_text(text: str, n: int) -> str:
    lines = text.rstrip("\n").splitlines()[-n:]
    return "\n".join("    " + line for line in lines) if lines else "    (no output)"


def _tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode(errors="replace")
    except OSError:
        return f"    ({path} is missing)"
    return _tail_text(text, n)


# --------------------------------------------------------------------------- broker info


@dataclass(frozen=True)
class BrokerInfo:
    """What ``broker.json`` records about a running broker (and what :func:`start` returns)."""

    pid: int
    bootstrap: str
    broker_port: int
    controller_port: int
    log_path: str
    data_dir: str
    state_dir: str
    kafka_version: str
    heap: str
    started_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (the ``broker.json`` format)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BrokerInfo:
        """Inverse of :meth:`to_dict`; raises KeyError/TypeError/ValueError if malformed."""
        return cls(
            pid=int(data["pid"]),
            bootstrap=str(data["bootstrap"]),
            broker_port=int(data["broker_port"]),
            controller_port=int(data["controller_port"]),
            log_path=str(data["log_path"]),
            data_dir=str(data["data_dir"]),
            state_dir=str(data["state_dir"]),
            kafka_version=str(data["kafka_version"]),
            heap=str(data["heap"]),
            started_at=float(data.get("started_at", 0.0)),
        )


def read_info(state_dir: Path) -> BrokerInfo | None:
    path = state_dir / BROKER_JSON
    try:
        return BrokerInfo.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable/corrupt: treated as stale, removed by stop()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


# --------------------------------------------------------------------------- probing


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion even if the caller is already inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _metadata(bootstrap: str, timeout: float,
                    security: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One real Metadata round trip; this, not an open port, is what "ready" means."""
    from aiokafka.admin import AIOKafkaAdminClient

    from toolwire.kafka.clients import open_client

    ms = max(1000, int(timeout * 1000))
    async with open_client(AIOKafkaAdminClient, bootstrap, start_timeout=timeout,
                           request_timeout_ms=ms, **(security or {})) as admin:
        cluster: dict[str, Any] = await asyncio.wait_for(admin.describe_cluster(), timeout)
    if not cluster.get("brokers"):
        raise BrokerError(f"{bootstrap} answered metadata but lists no live broker yet")
    return cluster


def _port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe(bootstrap: str, timeout: float = 5.0, *,
          security: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Cluster metadata from ``bootstrap``, or None if it does not answer within ``timeout``.

    ``security``: aiokafka connection options for a secured listener
    (:func:`toolwire.config.security.client_options`). A plain TCP connect goes first so a
    not-yet-listening broker costs no aiokafka error spam.
    """
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    if host and port.isdigit() and not _port_open(host.strip("[]"), int(port)):
        return None
    try:
        return _run_sync(_metadata(bootstrap, timeout, security))
    except Exception:
        return None


# --------------------------------------------------------------------------- config


def _free_ports(preferred: tuple[int, int] | None, *,
                lost: str | None = None) -> tuple[int, int]:
    """Broker and controller ports on 127.0.0.1: each port of ``preferred`` (the last start's,
    from ``ports.json``) that Kafka can bind again, a fresh one for any it cannot.

    Reuse is what keeps ``bootstrap`` stable across ``stop``/``start``: running workers and
    publishers only know that address. A port held only by TIME_WAIT (or FIN_WAIT) remnants of
    the last run's connections *is* reused, because Kafka binds it with SO_REUSEADDR (see
    :func:`_bindable`); a new port is picked only when something really holds it (a listener),
    and then a line on stderr names the old and the new address.

    ``lost`` (why Kafka just failed to bind ``preferred`` after all: the port was taken between
    this check and its bind) picks fresh ports for both, and says so the same way.
    There is a small window between closing the probe sockets and Kafka binding; start()
    retries on EADDRINUSE.
    """
    if preferred is not None and preferred[0] == preferred[1]:
        preferred = None  # a hand-edited ports.json; nothing sensible to keep
    if preferred is None:
        first, second = _ephemeral_ports(2, avoid=())
        return first, second
    errors: dict[int, str] = {}
    for port in preferred:
        error = lost or _bind_error(port)
        if error is not None:
            errors[port] = error
    keep = [port for port in preferred if port not in errors]
    replacements = iter(_ephemeral_ports(len(errors), avoid=keep))
    broker_port, controller_port = (
        port if port not in errors else next(replacements) for port in preferred
    )
    if broker_port != preferred[0]:
        _say(f"the broker's previous address 127.0.0.1:{preferred[0]} cannot be bound again "
             f"({_why(errors)}); it moves to 127.0.0.1:{broker_port} (controller port "
             f"{preferred[1]} -> {controller_port}); clients of the old address must be "
             "pointed at the new one")
    elif controller_port != preferred[1]:
        _say(f"the broker's previous controller port {preferred[1]} cannot be bound again "
             f"({_why(errors)}); it uses {controller_port}; the bootstrap address "
             f"127.0.0.1:{broker_port} is unchanged")
    return broker_port, controller_port


def _why(errors: Mapping[int, str]) -> str:
    return "; ".join(f"port {port}: {error}" for port, error in errors.items())


def _ephemeral_ports(n: int, avoid: Sequence[int]) -> list[int]:
    """``n`` distinct ports that nothing on 127.0.0.1 uses now, none of them in ``avoid``."""
    if n <= 0:
        return []
    socks: list[socket.socket] = []
    try:
        while len(socks) < n + len(avoid):  # at most len(avoid) of them can be in avoid
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        ports = [s.getsockname()[1] for s in socks]
        return [port for port in ports if port not in avoid][:n]
    finally:
        for s in socks:
            s.close()


def _bind_error(port: int) -> str | None:
    """Why Kafka could not bind ``127.0.0.1:port`` now, or None if it could.

    The test bind is made the way Kafka's own is: Java's ``ServerSocketChannel`` sets
    SO_REUSEADDR before ``bind`` on Linux (and every Unix), so connections of the previous
    run still in TIME_WAIT (the broker closes its client connections first when it stops, so
    its own port collects them) do not stop it; a listener, or a socket bound without
    SO_REUSEADDR, on that port does. A bind without SO_REUSEADDR would refuse the TIME_WAIT
    port too, and move a restarted broker for nothing.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno == errno.EADDRINUSE:
                reason += " (something is listening on it, or holds it without SO_REUSEADDR)"
            return reason
    return None


def _bindable(port: int) -> bool:
    """Can Kafka bind ``127.0.0.1:port`` now? See :func:`_bind_error`."""
    return _bind_error(port) is None


def _server_properties(broker_port: int, controller_port: int, data_dir: Path,
                       overrides: Mapping[str, str] | None = None) -> str:
    """One KRaft node, loopback only, every replication factor 1.

    auto.create.topics.enable=false on purpose: faust creates the topics it consumes
    (changelogs, repartition, leader topic) itself, and the app creates its source/sink
    topics; a typo must fail loudly instead of silently creating a 1-partition topic.
    offsets/transaction topics get 1 partition instead of 50 so the first group join and
    the first transactional producer are quick on a 2-core machine.
    """
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}"
        ),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "auto.create.topics.enable": "false",
        "delete.topic.enable": "true",
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "log.retention.hours": "168",
    }
    for key, value in (overrides or {}).items():
        value = value.replace("{broker_port}", str(broker_port))
        value = value.replace("{controller_port}", str(controller_port))
        if value:
            props[key] = value
        else:
            props.pop(key, None)
    lines = ["# Generated by toolwire/broker/local.py on every start; edits are overwritten."]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


LOG4J2 = """\
# Generated by toolwire/broker/local.py. Everything goes to stdout (the broker's log file).
status = warn
# Log4j's own JVM shutdown hook would stop logging while Kafka is still shutting down,
# dropping exactly the lines that say whether the shutdown was clean.
shutdownHook = disable
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
# The full config dump on every client/server start buries the lines that matter.
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def _cluster_id() -> str:
    """A Kafka Uuid string (22-char URL-safe base64, never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _format_storage(java: str, lib: Path, props: Path, log4j: Path, data_dir: Path,
                    scram: Sequence[str] = ()) -> None:
    """``kafka-storage format --standalone``: once per data dir (meta.properties marks it),
    with the SCRAM credentials to create (``--add-scram``)."""
    if (data_dir / "meta.properties").is_file():
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        java,
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        f"{lib}/*",
        _STORAGE_TOOL,
        "format",
        "--standalone",
        "--cluster-id",
        _cluster_id(),
        "--config",
        str(props),
    ]
    for credential in scram:
        cmd += ["--add-scram", credential]
    try:
        proc = _run_tool(cmd, FORMAT_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"storage format did not finish in {FORMAT_TIMEOUT:.0f}s") from exc
    if proc.returncode != 0:
        raise BrokerError(
            f"formatting {data_dir} failed (exit {proc.returncode}):\n"
            + re.sub(r"password=[^,\]\s]*", "password=***",  # the SCRAM credentials
                     _tail_text(proc.stdout + proc.stderr, LOG_TAIL_LINES))
        )


# --------------------------------------------------------------------------- lifecycle


def _launch(
    java: str, lib: Path, state_dir: Path, heap: str, props: Path, log4j: Path, log: Path
) -> subprocess.Popen[bytes]:
    if log.exists():
        log.replace(log.with_name(LOG_NAME + ".1"))  # keep exactly one previous run
    cmd = [
        java,
        f"-Xmx{heap}",
        f"-Xms{heap}",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-D{_STATE_PROP}={state_dir.resolve()}",  # what _owned() looks for before a kill
        f"-Dlog4j2.configurationFile={log4j}",
        f"-Dkafka.logs.dir={state_dir}",
        "-cp",
        f"{lib}/*",
        _MAIN_CLASS,
        str(props),
    ]
    with log.open("wb") as out:
        child = subprocess.Popen(
            cmd,
            cwd=state_dir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the caller's terminal must not kill it
            close_fds=True,
        )
    _CHILDREN[child.pid] = child
    return child


def _kill(pid: int, timeout: float) -> None:
    """SIGTERM (Kafka shuts down cleanly), then SIGKILL after ``timeout``. Pid only."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not _wait_gone(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 5.0)
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=1)


def start(
    state_dir: Path | None = None,
    heap: str = DEFAULT_HEAP,
    *,
    timeout: float = DEFAULT_START_TIMEOUT,
    cache_dir: Path | None = None,
    options: BrokerOptions | None = None,
) -> BrokerInfo:
    """Start a broker for ``state_dir`` and return once a metadata request succeeds.

    ``options`` changes the generated configuration (see :class:`BrokerOptions`); without
    them the broker has one PLAINTEXT listener. Raises BrokerError if one is already running
    there (use :func:`ensure_broker` to reuse it), if Java/Maven are missing, or if it is not
    ready within ``timeout`` seconds (then it is killed and the error carries the tail of
    broker.log).
    """
    _check_heap(heap)
    state_dir = (state_dir or default_state_dir()).absolute()
    state_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(state_dir / _LOCK_NAME, timeout=timeout + 60):
        return _start_locked(state_dir, heap, timeout, cache_dir, options)


def _check_heap(heap: str) -> None:
    """Reject what java would reject, before a slow JVM launch says it less clearly."""
    if not re.fullmatch(r"[1-9]\d*[kKmMgG]?", heap):
        raise BrokerError(f"heap must look like 256m, 512m or 1g (got {heap!r})")


def _start_locked(state_dir: Path, heap: str, timeout: float, cache_dir: Path | None,
                  options: BrokerOptions | None = None) -> BrokerInfo:
    options = options or BrokerOptions()
    old = read_info(state_dir)
    if old is not None and _owned(old.pid, state_dir):
        raise BrokerError(f"a broker is already running for {state_dir} (pid {old.pid})")
    (state_dir / BROKER_JSON).unlink(missing_ok=True)  # stale

    lib = fetch(cache_dir)
    java = _java()
    version = kafka_version()
    data_dir = state_dir / "data"
    log = state_dir / LOG_NAME
    props = state_dir / "server.properties"
    log4j = state_dir / "log4j2.properties"
    log4j.write_text(LOG4J2)
    preferred: tuple[int, int] | None = None
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        saved = json.loads((state_dir / PORTS_JSON).read_text())
        preferred = (int(saved["broker_port"]), int(saved["controller_port"]))

    deadline = time.monotonic() + timeout
    lost: str | None = None
    for attempt in range(3):
        broker_port, controller_port = _free_ports(preferred if attempt == 0 or lost else None,
                                                   lost=lost)
        lost = None
        props.write_text(_server_properties(broker_port, controller_port, data_dir,
                                            options.properties))
        _format_storage(java, lib, props, log4j, data_dir, options.scram)
        child = _launch(java, lib, state_dir, heap, props, log4j, log)
        info = BrokerInfo(
            pid=child.pid,
            bootstrap=f"127.0.0.1:{broker_port}",
            broker_port=broker_port,
            controller_port=controller_port,
            log_path=str(log),
            data_dir=str(data_dir),
            state_dir=str(state_dir),
            kafka_version=version,
            heap=heap,
        )
        _write_json(state_dir / BROKER_JSON, info.to_dict())  # stop() works even mid-start
        _write_json(
            state_dir / PORTS_JSON,
            {"broker_port": broker_port, "controller_port": controller_port},
        )
        try:
            while time.monotonic() < deadline:
                if child.poll() is not None:
                    break
                budget = min(5.0, max(1.0, deadline - time.monotonic()))
                if probe(info.bootstrap, timeout=budget, security=options.client):
                    return info
                time.sleep(0.25)
        except BaseException:  # Ctrl-C mid-start: do not leave a half-started JVM behind
            _kill(child.pid, DEFAULT_STOP_TIMEOUT)
            (state_dir / BROKER_JSON).unlink(missing_ok=True)
            raise
        exited = child.poll() is not None
        if exited and "Address already in use" in log.read_text(errors="replace"):
            _CHILDREN.pop(child.pid, None)
            (state_dir / BROKER_JSON).unlink(missing_ok=True)
            if preferred is not None and broker_port == preferred[0]:  # say it moves
                lost = f"Kafka got 'Address already in use', see {LOG_NAME}.1"
            continue  # lost the port race; pick new ports
        if not exited:
            _kill(child.pid, DEFAULT_STOP_TIMEOUT)
        _CHILDREN.pop(child.pid, None)
        (state_dir / BROKER_JSON).unlink(missing_ok=True)
        why = (
            f"exited with code {child.returncode}"
            if exited
            else f"did not answer a metadata request within {timeout:.0f}s (killed)"
        )
        raise BrokerError(
            f"Kafka {version} broker (pid {child.pid}) {why}.\n"
            f"Last {LOG_TAIL_LINES} lines of {log}:\n{_tail(log)}"
        )
    raise BrokerError(f"could not bind free ports on 127.0.0.1 after 3 tries; see {log}")


def stop(state_dir: Path | None = None, *, timeout: float = DEFAULT_STOP_TIMEOUT) -> bool:
    """Stop the broker recorded in ``state_dir/broker.json``; True if one was stopped.

    Only the recorded pid is signalled, and only if it is still our ``kafka.Kafka`` for this
    state dir; a stale broker.json (process gone or pid reused) is just removed.
    """
    state_dir = (state_dir or default_state_dir()).absolute()
    if not state_dir.is_dir():
        return False
    with _file_lock(state_dir / _LOCK_NAME, timeout=timeout + 60):
        path = state_dir / BROKER_JSON
        info = read_info(state_dir)
        stopped = False
        if info is not None and _owned(info.pid, state_dir):
            _kill(info.pid, timeout)
            stopped = True
        path.unlink(missing_ok=True)
        return stopped


def status(state_dir: Path | None = None, *, timeout: float = 5.0,
           security: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """``broker.json`` plus liveness, or None when no broker of ours runs for ``state_dir``.

    ``ready`` says whether a metadata request answered within ``timeout`` seconds (made with
    ``security``, the connection options of a broker started with a secured listener). Read
    only: a stale broker.json is reported as None but left for stop()/start() to clean up.
    """
    state_dir = (state_dir or default_state_dir()).absolute()
    info = read_info(state_dir)
    if info is None or not _owned(info.pid, state_dir):
        return None
    cluster = probe(info.bootstrap, timeout=timeout, security=security)
    result = info.to_dict()
    result.update(
        alive=True,
        ready=cluster is not None,
        cluster_id=(cluster or {}).get("cluster_id"),
        uptime_s=round(time.time() - info.started_at, 1),
    )
    return result


def ensure_broker(
    state_dir: Path | None = None,
    heap: str = DEFAULT_HEAP,
    *,
    timeout: float = DEFAULT_START_TIMEOUT,
    cache_dir: Path | None = None,
    options: BrokerOptions | None = None,
) -> tuple[str, bool]:
    """``(bootstrap, started_by_us)``: the env broker, else a healthy running one, else a new one.

    ``started_by_us`` tells the caller whether it owns the broker (and should stop it).
    A recorded broker that is alive but not answering gets ``timeout`` to become ready (it
    may still be starting in another process) before it is stopped and replaced. ``options``:
    see :func:`start` (a running broker is probed with ``options.client``).
    """
    env = configured_bootstrap()
    if env:
        return env, False
    _check_heap(heap)
    state_dir = (state_dir or default_state_dir()).absolute()
    state_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(state_dir / _LOCK_NAME, timeout=timeout + 60):
        info = read_info(state_dir)
        if info is not None and _owned(info.pid, state_dir):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(info.pid):
                if probe(info.bootstrap, timeout=5.0,
                         security=options.client if options else None):
                    return info.bootstrap, False
                time.sleep(0.5)
            _say(f"broker pid {info.pid} in {state_dir} is not answering; replacing it")
            _kill(info.pid, DEFAULT_STOP_TIMEOUT)
        return _start_locked(state_dir, heap, timeout, cache_dir, options).bootstrap, True


@dataclass
class LocalBroker:
    """Object-style handle on one state dir, for callers that prefer it to the functions."""

    state_dir: Path = field(default_factory=default_state_dir)
    heap: str = DEFAULT_HEAP
    timeout: float = DEFAULT_START_TIMEOUT
    cache_dir: Path | None = None
    options: BrokerOptions | None = None

    def fetch(self) -> Path:
        """See :func:`fetch`."""
        return fetch(self.cache_dir)

    def start(self) -> BrokerInfo:
        """See :func:`start`."""
        return start(self.state_dir, self.heap, timeout=self.timeout, cache_dir=self.cache_dir,
                     options=self.options)

    def stop(self) -> bool:
        """See :func:`stop`."""
        return stop(self.state_dir)

    def status(self) -> dict[str, Any] | None:
        """See :func:`status`."""
        return status(self.state_dir,
                      security=self.options.client if self.options else None)

    def ensure(self) -> tuple[str, bool]:
        """See :func:`ensure_broker`."""
        return ensure_broker(
            self.state_dir, self.heap, timeout=self.timeout, cache_dir=self.cache_dir,
            options=self.options,
        )
