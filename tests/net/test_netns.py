"""Tests of the network-fault harness itself: each fault does what it says, and is undone.

Every assertion here is one a broken harness would fail: a fault that refused packets
instead of dropping them (a connect *refused* or *invalid*, not timed out), a one-way cut
that cut both ways, a heal that left a route behind, a relay that was not slower than the
direct path, a cleanup that left a namespace or a process. All traffic goes between the
198.18.0.0/15 addresses of the network a test built, or over 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import socket
import statistics
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net.agent import Agent, payload
from tests.net.netns import (
    BENCHMARK_NET,
    Network,
    ip,
    namespaces,
    netns_pids,
    root_links,
)
from tests.net.relay import RelayThread

pytestmark = [pytest.mark.netns, pytest.mark.timeout(60)]

#: What a probe waits for a connect that must time out; short, the tests stay quick.
PROBE = 1.0

#: ``python -c`` programs: an echo server that answers one connection (prints its port),
#: and a client that sends "ping" and prints the answer.
ECHO_ONCE = """
import socket, sys
srv = socket.create_server((sys.argv[1], 0))
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
conn.sendall(conn.recv(100))
"""
PING = """
import socket, sys
conn = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
conn.sendall(b"ping")
print(conn.recv(100).decode())
"""


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _assert_timeout(answer: dict[str, object], timeout: float = PROBE) -> None:
    """A silent drop: the connect waited its whole timeout (no RST, no ICMP error)."""
    assert answer["ok"] is False, answer
    assert answer["error"] == "timeout", answer
    assert float(str(answer["elapsed"])) >= 0.9 * timeout, answer


def _udp_from(agent: Agent, sender: str) -> list[str]:
    return [data for peer, data in agent.stats()["udp"] if peer == sender]


# --------------------------------------------------------------------------- topology


def test_two_hosts_reach_each_other_over_tcp(net: Network) -> None:
    """Connected both ways, peers see each other's own address (routed, no NAT), lo is up,
    every address is in the network's /24 of 198.18.0.0/15 and every name is short."""
    a, b = net.host("a"), net.host("b")
    assert net.subnet is not None and net.subnet.subnet_of(BENCHMARK_NET)
    for host in (a, b):
        assert ipaddress.IPv4Address(host.address) in net.subnet
        assert "UP" in host.ip("link", "show", "lo").split(">")[0]
        assert host.ns.startswith("tw") and host.ns in namespaces()
        for link in (host.link, host.peer):
            assert link.startswith("tw") and len(link) <= 15
    server = b.python(ECHO_ONCE, b.address, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    client = a.python(PING, b.address, str(port), stdout=subprocess.PIPE, text=True)
    out, _ = client.communicate(timeout=10)
    assert out.strip() == "ping"
    assert server.wait(timeout=5) == 0

    agent_a, agent_b = Agent(a), Agent(b)
    port_a = agent_a.listen()
    conn = agent_b.connect(a.address, port_a)
    assert conn["ok"] and conn["local"] == b.address
    assert agent_b.echo(conn["id"], "pong")["data"] == "pong"
    assert agent_a.stats()["accepts"] == [b.address]
    # Each namespace has its own loopback, and it works.
    local = agent_a.call("listen", host="127.0.0.1", port=0)["port"]
    assert agent_a.connect("127.0.0.1", local)["ok"]


# --------------------------------------------------------------------------- blackholes


def test_blackhole_makes_a_connect_time_out_not_fail(net: Network) -> None:
    """Before: a closed port is *refused* (so the probe can tell). After ``blackhole``: a
    connect either way waits out its timeout, and the server saw no new accept."""
    a, b = net.host("a"), net.host("b")
    agent_a, agent_b = Agent(a), Agent(b)
    port_b, port_a = agent_b.listen(), agent_a.listen()
    closed = agent_a.connect(b.address, 1)
    assert closed["error"] == "refused", closed
    assert agent_a.connect(b.address, port_b)["ok"]

    net.blackhole(a, b)
    assert net.blocked == {("a", "b"), ("b", "a")}
    _assert_timeout(agent_a.connect(b.address, port_b, timeout=PROBE))
    _assert_timeout(agent_a.connect(b.address, 1, timeout=PROBE))  # no RST from a closed port
    _assert_timeout(agent_b.connect(a.address, port_a, timeout=PROBE))
    assert agent_b.stats()["accepts"] == [a.address]  # the one from before only


def test_blackhole_stalls_an_established_connection_until_healed(net: Network) -> None:
    """A send on an open connection gets no answer (and no error) while the blackhole
    lasts; after ``heal`` TCP's retransmission delivers it on the same connection."""
    a, b = net.host("a"), net.host("b")
    agent_a, agent_b = Agent(a), Agent(b)
    conn = agent_a.connect(b.address, agent_b.listen())
    assert agent_a.echo(conn["id"], "before")["data"] == "before"

    net.blackhole(a, b)
    stalled = agent_a.echo(conn["id"], "during", timeout=PROBE)
    assert stalled["error"] == "timeout" and stalled["data"] == "", stalled

    net.heal(a, b)
    assert net.blocked == frozenset()
    late = agent_a.call("recv", id=conn["id"], size=len("during"), timeout=8.0)
    assert late == {**late, "ok": True, "data": "during"}, late
    assert agent_a.echo(conn["id"], "after")["data"] == "after"


def test_one_way_blackhole_drops_one_direction_only(net: Network) -> None:
    """``blackhole(a, b, one_way=True)``: a's datagrams to b vanish, b's reach a; TCP
    between them stalls (it needs both directions)."""
    a, b = net.host("a"), net.host("b")
    agent_a, agent_b = Agent(a), Agent(b)
    udp_a, udp_b = agent_a.udp_listen(), agent_b.udp_listen()
    tcp_b = agent_b.listen()

    net.blackhole(a, b, one_way=True)
    assert net.blocked == {("a", "b")}
    assert agent_a.call("udp_send", host=b.address, port=udp_b, data="a-", count=5)["sent"] == 5
    assert agent_b.call("udp_send", host=a.address, port=udp_a, data="b-", count=5)["sent"] == 5
    deadline = time.monotonic() + 3.0
    while len(_udp_from(agent_a, b.address)) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(_udp_from(agent_a, b.address)) == [f"b-{i}" for i in range(5)]
    time.sleep(0.3)  # what was going to arrive at b has
    assert _udp_from(agent_b, a.address) == []
    _assert_timeout(agent_a.connect(b.address, tcp_b, timeout=PROBE))
    assert agent_b.stats()["accepts"] == []  # the SYN never reached b

    net.heal(a, b)
    agent_a.call("udp_send", host=b.address, port=udp_b, data="healed-", count=1)
    deadline = time.monotonic() + 3.0
    while not _udp_from(agent_b, a.address) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _udp_from(agent_b, a.address) == ["healed-0"]


def test_heal_restores_both_directions(net: Network) -> None:
    """After ``heal`` new connects succeed both ways and no blackhole route is left in the
    hub (a heal that forgot one direction fails here)."""
    a, b = net.host("a"), net.host("b")
    agent_a, agent_b = Agent(a), Agent(b)
    port_a, port_b = agent_a.listen(), agent_b.listen()
    net.blackhole(a, b)
    _assert_timeout(agent_b.connect(a.address, port_a, timeout=PROBE))
    net.heal(a, b)
    assert agent_a.connect(b.address, port_b)["ok"]
    assert agent_b.connect(a.address, port_a)["ok"]
    for host in (a, b):
        assert "blackhole" not in ip("-n", net.hub, "route", "show", "table",
                                     str(host.table)).stdout


def test_partition_cuts_one_host_from_the_others(net: Network) -> None:
    """``partition(a)``: a reaches neither b nor c, neither reaches a, b and c still talk;
    ``heal_all`` brings it all back."""
    a, b, c = net.host("a"), net.host("b"), net.host("c")
    agents = {h.name: Agent(h) for h in (a, b, c)}
    ports = {name: agent.listen() for name, agent in agents.items()}
    net.partition(a)
    assert net.blocked == {("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")}
    _assert_timeout(agents["a"].connect(b.address, ports["b"], timeout=PROBE))
    _assert_timeout(agents["c"].connect(a.address, ports["a"], timeout=PROBE))
    assert agents["b"].connect(c.address, ports["c"])["ok"]
    assert agents["c"].connect(b.address, ports["b"])["ok"]
    net.heal_all()
    assert agents["a"].connect(c.address, ports["c"])["ok"]
    assert agents["b"].connect(a.address, ports["a"])["ok"]


def test_link_down_is_a_dead_link_and_link_up_restores_it(net: Network) -> None:
    """``link_down(a)``: what a sends is lost (its connect times out, its open connection
    gets no answer), others cannot reach it; ``link_up`` restores the same connection."""
    a, b = net.host("a"), net.host("b")
    agent_a, agent_b = Agent(a), Agent(b)
    port_a, port_b = agent_a.listen(), agent_b.listen()
    conn = agent_a.connect(b.address, port_b)
    assert agent_a.echo(conn["id"], "up")["data"] == "up"

    net.link_down(a)
    assert net.down == {"a"}
    assert "NO-CARRIER" in a.ip("link", "show", a.link)
    _assert_timeout(agent_a.connect(b.address, port_b, timeout=PROBE))
    stalled = agent_a.echo(conn["id"], "down", timeout=PROBE)
    assert stalled["error"] == "timeout", stalled
    reverse = agent_b.connect(a.address, port_a, timeout=PROBE)
    assert reverse["ok"] is False and reverse["error"] in ("timeout", "unreachable"), reverse

    net.link_up(a)
    assert net.down == frozenset()
    late = agent_a.call("recv", id=conn["id"], size=len("down"), timeout=8.0)
    assert late["ok"] and late["data"] == "down", late
    assert agent_b.connect(a.address, port_a)["ok"]


# --------------------------------------------------------------------------- cleanup


def test_cleanup_removes_everything_when_the_body_raises(netns_ready: None) -> None:
    """Namespaces, links and processes (ours and a child we never saw) are gone after a
    failing body; another network open at the same time has its own /24 and survives."""
    with Network(["x"]) as other:
        with pytest.raises(RuntimeError, match="the test failed"), Network(["a", "b"]) as net:
            a = net.host("a")
            a.run(["sleep", "60"])
            a.run(["sh", "-c", "sleep 60 & wait"])  # the inner sleep is not ours: a straggler
            net.blackhole(a, "b")
            net.link_down("b")
            deadline = time.monotonic() + 5
            while len(a.pids()) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            pids = a.pids()
            assert len(pids) == 3, pids
            names = net.names()
            assert other.subnet != net.subnet
            raise RuntimeError("the test failed")
        listed, links = namespaces(), root_links()
        assert not [n for n in names if n in listed or n in links]
        assert not [pid for pid in pids if _alive(pid)]
        assert other.hosts[0].ns in listed
        assert netns_pids(other.hosts[0].ns) == []
    assert other.hosts[0].ns not in namespaces()


def test_cleanup_after_a_normal_exit_and_an_agent_still_running(netns_ready: None) -> None:
    """An agent left running when the body ends is killed by pid, and nothing of the
    network is listed afterwards."""
    with Network() as net:
        a = net.host("a")
        agent = Agent(a)
        names = net.names()
        pid = agent.proc.pid
        assert pid in a.pids()
    listed, links = namespaces(), root_links()
    assert not [n for n in names if n in listed or n in links]
    assert agent.proc.returncode is not None and not _alive(pid)


# --------------------------------------------------------------------------- relay


@contextlib.contextmanager
def _loopback_server(kind: str) -> Iterator[int]:
    """An in-process echo or sink server on 127.0.0.1 (threads); yields its port."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            if kind == "echo":
                while data := conn.recv(65536):
                    conn.sendall(data)
            else:
                head = b""
                while len(head) < 8:
                    head += conn.recv(8 - len(head))
                (size,) = struct.unpack(">Q", head)
                digest, left = hashlib.sha256(), size
                while left:
                    part = conn.recv(min(65536, left))
                    if not part:
                        return
                    digest.update(part)
                    left -= len(part)
                conn.sendall(digest.digest())

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(srv.getsockname()[1])
    finally:
        stop.set()
        srv.close()


def _rtts(address: tuple[str, int], count: int = 5) -> list[float]:
    with socket.create_connection(address, timeout=5) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(count):
            t0 = time.monotonic()
            sock.sendall(b"x")
            assert sock.recv(1) == b"x"
            times.append(time.monotonic() - t0)
        return times


def _sink_send(address: tuple[str, int], size: int) -> float:
    body = payload(size)
    t0 = time.monotonic()
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(struct.pack(">Q", size) + body)
        answer = b""
        while len(answer) < 32:
            part = sock.recv(32 - len(answer))
            assert part, "closed before the digest"
            answer += part
    assert answer == hashlib.sha256(body).digest(), "bytes were lost or reordered"
    return time.monotonic() - t0


def test_relay_adds_its_delay_each_way_in_process() -> None:
    """50 ms each way: every round trip through the relay takes ≥ 100 ms (a timer's
    millisecond of slack) and not much more; the direct path is far quicker."""
    with _loopback_server("echo") as port:
        direct = _rtts(("127.0.0.1", port))
        with RelayThread(("127.0.0.1", 0), ("127.0.0.1", port), delay=0.05) as relay:
            relayed = _rtts(relay.address)
    assert statistics.median(direct) < 0.02, direct
    assert min(relayed) >= 0.099, relayed
    assert statistics.median(relayed) < 0.1 + 0.08, relayed


def test_relay_caps_throughput_and_keeps_order_in_process() -> None:
    """512 KiB at 1 MB/s takes ≥ ~0.5 s (the bucket's 16 KiB burst aside), arrives
    intact and in order (the sink's SHA-256 matches)."""
    size = 512 * 1024
    with _loopback_server("sink") as port:
        direct = _sink_send(("127.0.0.1", port), size)
        with RelayThread(("127.0.0.1", 0), ("127.0.0.1", port), rate=1_000_000) as relay:
            capped = _sink_send(relay.address, size)
    assert direct < 0.2, direct
    assert 0.45 <= capped < 2.0, capped


def test_relay_closes_both_sides_when_either_closes() -> None:
    """The client closing closes the relay's connection to the server (the server reads
    EOF), and the server closing closes the client's (it reads EOF)."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(5)
    with srv, RelayThread(("127.0.0.1", 0), srv.getsockname()[:2], delay=0.01) as relay:
        client = socket.create_connection(relay.address, timeout=5)
        upstream, _ = srv.accept()
        with upstream:
            upstream.settimeout(5)
            client.sendall(b"last words")
            client.close()
            got = b""
            while part := upstream.recv(100):
                got += part
            assert got == b"last words"  # delivered, then EOF

        client = socket.create_connection(relay.address, timeout=5)
        upstream, _ = srv.accept()
        upstream.sendall(b"bye")
        upstream.close()
        with client:
            got = b""
            while part := client.recv(100):
                got += part
            assert got == b"bye"


def test_relay_buffers_are_bounded() -> None:
    """A target that never reads stops the sender after the socket buffers and the relay's
    256 KiB per direction are full, not after everything was sent (which an unbounded
    queue would take)."""
    srv = socket.create_server(("127.0.0.1", 0))
    total = 0
    with srv, RelayThread(("127.0.0.1", 0), srv.getsockname()[:2]) as relay:
        client = socket.create_connection(relay.address, timeout=5)
        upstream, _ = srv.accept()  # accepted, never read
        with client, upstream:
            client.settimeout(0.5)
            block = b"z" * 65536
            with contextlib.suppress(TimeoutError):
                while total < 256 * 1024 * 1024:
                    total += client.send(block)
    assert total < 64 * 1024 * 1024, total


def test_relay_in_a_namespace_slows_the_link_between_two_hosts(net: Network) -> None:
    """``python -m tests.net.relay`` in host r between a and b: a's round trip to b through
    it gains ≥ 2 x 50 ms, and 512 KiB at 1 MB/s takes ≥ 0.45 s, intact."""
    a, b, r = net.host("a"), net.host("b"), net.host("r")
    agent_a, agent_b = Agent(a), Agent(b)
    echo_port, sink_port = agent_b.listen(), agent_b.listen(kind="sink")
    relays = []
    for listen, target in ((9092, echo_port), (9093, sink_port)):
        proc = r.module("tests.net.relay", "--listen", f"{r.address}:{listen}",
                        "--target", f"{b.address}:{target}", "--delay-ms", "50",
                        "--rate", "1000000", stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline()) == {"listening": f"{r.address}:{listen}"}
        relays.append(proc)

    direct = agent_a.connect(b.address, echo_port)
    slow = agent_a.connect(r.address, 9092)
    direct_rtt = min(agent_a.echo(direct["id"], "x")["elapsed"] for _ in range(3))
    slow_rtt = [agent_a.echo(slow["id"], "x")["elapsed"] for _ in range(3)]
    assert direct_rtt < 0.02
    assert min(slow_rtt) >= 0.099, slow_rtt
    assert statistics.median(slow_rtt) < 0.1 + 0.1, slow_rtt

    sent = agent_a.call("sink_send", host=r.address, port=9093, size=512 * 1024, timeout=10)
    assert sent["ok"], sent
    assert 0.45 <= sent["elapsed"] < 3.0, sent
    for proc in relays:  # SIGTERM: the relay exits cleanly
        assert r.stop(proc) == 0
