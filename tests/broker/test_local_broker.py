"""The local broker really works: lifecycle, a produce/consume round trip, safe stop.

Tests marked ``broker`` need Java 17+ (and Maven on the very first run, to fetch the jars).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.broker_fixture import kafka_bootstrap  # noqa: F401  (fixture)
from toolwire import cli
from toolwire.broker import local

N_MESSAGES = 100


async def _roundtrip(bootstrap: str) -> None:
    """3-partition topic, 100 keyed messages with headers, read back by a consumer group."""
    topic = f"tw-test-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        resp = await admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
        assert [err for _, err, _ in resp.topic_errors] == [0]
        # A broker's metadata cache learns of a new topic a little after CreateTopics returns
        # (KRaft: the controller commits it, the broker replays it), so a describe made at
        # once may list no partitions yet: look again, within a bound, before judging.
        deadline = time.monotonic() + 15
        while True:
            described = await admin.describe_topics([topic])
            if described[0].get("partitions") or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert len(described[0]["partitions"]) == 3
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        for i in range(N_MESSAGES):
            await producer.send(
                topic,
                value=f"value-{i}".encode(),
                key=f"key-{i % 7}".encode(),
                headers=[("seq", str(i).encode()), ("kind", b"test")],
            )
        await producer.flush()
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"tw-group-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    seen: dict[int, tuple[bytes | None, dict[str, bytes]]] = {}
    partitions: set[int] = set()
    try:
        async with asyncio.timeout(60):
            while len(seen) < N_MESSAGES:
                batch = await consumer.getmany(timeout_ms=1000)
                for tp, records in batch.items():
                    for rec in records:
                        headers = dict(rec.headers)
                        seen[int(headers["seq"])] = (rec.value, headers)
                        partitions.add(tp.partition)
        await consumer.commit()
        assert consumer.assignment(), "consumer group got no partitions"
    finally:
        await consumer.stop()

    assert sorted(seen) == list(range(N_MESSAGES))
    for i, (value, headers) in seen.items():
        assert value == f"value-{i}".encode()
        assert headers == {"seq": str(i).encode(), "kind": b"test"}
    assert len(partitions) > 1, "7 keys over 3 partitions should use more than one"


# --------------------------------------------------------------------------- with a broker


@pytest.mark.broker
def test_session_broker_roundtrip(kafka_bootstrap: str) -> None:  # noqa: F811
    asyncio.run(_roundtrip(kafka_bootstrap))


@pytest.mark.broker
def test_lifecycle_start_status_roundtrip_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second, private broker: start -> status -> real traffic -> stop -> gone."""
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)  # always our own broker
    state_dir = tmp_path / "broker"
    info = local.start(state_dir, heap="256m")
    try:
        assert info.bootstrap.startswith("127.0.0.1:")
        assert info.kafka_version == local.kafka_version()
        recorded = json.loads((state_dir / "broker.json").read_text())
        assert recorded["pid"] == info.pid
        assert recorded["bootstrap"] == info.bootstrap

        st = local.status(state_dir)
        assert st is not None
        assert st["ready"] is True
        assert st["pid"] == info.pid
        assert st["cluster_id"]

        # a healthy recorded broker is reused, not duplicated
        assert local.ensure_broker(state_dir) == (info.bootstrap, False)
        with pytest.raises(local.BrokerError, match="already running"):
            local.start(state_dir, heap="256m")

        asyncio.run(_roundtrip(info.bootstrap))
    finally:
        stopped = local.stop(state_dir)

    assert stopped is True
    assert not local.is_running(info.pid)
    assert local.status(state_dir) is None
    assert not (state_dir / "broker.json").exists()
    assert local.stop(state_dir) is False  # idempotent


# --------------------------------------------------------------------------- same address again

_TIME_WAIT = "06"  # TCP state codes in /proc/net/tcp*
_LISTEN = "0A"


def _tcp_states(port: int) -> list[str] | None:
    """States of the TCP sockets whose *local* port is ``port`` (None without /proc/net)."""
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        return None
    states = []
    for table in tables:
        with contextlib.suppress(OSError):
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    states.append(fields[3])
    return states


def _assert_time_wait(port: int, timeout: float = 10.0) -> None:
    """``port`` is held by TIME_WAIT connections only, so a bind without SO_REUSEADDR (the
    probe before the fix) is refused: the condition the restart tests rely on."""
    deadline = time.monotonic() + timeout
    states = _tcp_states(port)
    while states is not None and time.monotonic() < deadline:
        if states and set(states) == {_TIME_WAIT}:
            break
        time.sleep(0.05)
        states = _tcp_states(port)
    if states is not None:
        assert states and set(states) == {_TIME_WAIT}, f"port {port}: states {states}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as plain, \
            pytest.raises(OSError) as refused:
        plain.bind(("127.0.0.1", port))
    assert refused.value.errno == errno.EADDRINUSE


def _time_wait_port() -> int:
    """A port on 127.0.0.1 left as a stopped broker leaves its own: the listener (bound with
    SO_REUSEADDR, as Java binds) and its accepted connection close first, the client then
    reads EOF and closes, so the accepted connection's side ends in TIME_WAIT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port: int = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        conn, _ = server.accept()
    with client:
        conn.close()
        assert client.recv(1) == b""
    _assert_time_wait(port)
    return port


@contextlib.contextmanager
def _listener(port: int) -> Iterator[socket.socket]:
    """Something else really listening on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past any TIME_WAIT
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield sock


def _unused_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _restart_keeps_address(state_dir: Path) -> tuple[local.BrokerInfo, local.BrokerInfo]:
    """start, traffic, stop with a publisher and raw connections still open (so the broker
    closes first and its port is left in TIME_WAIT), start again; the publisher goes on."""
    info = await asyncio.to_thread(local.start, state_dir, "256m")
    topic = f"tw-restart-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=info.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=info.bootstrap, acks="all",
                                request_timeout_ms=30000)
    await producer.start()
    try:
        await asyncio.wait_for(producer.send_and_wait(topic, b"before"), 30)
        raw = [socket.create_connection(("127.0.0.1", port), timeout=5)
               for port in (info.broker_port, info.broker_port, info.controller_port)]
        assert await asyncio.to_thread(local.stop, state_dir) is True
        for sock in raw:  # the broker closed them first; close ours: TIME_WAIT on its side
            with sock:
                assert sock.recv(1) == b""
        await asyncio.to_thread(_assert_time_wait, info.broker_port)

        again = await asyncio.to_thread(local.start, state_dir, "256m")
        assert again.pid != info.pid
        # the publisher that lived through the restart still reaches the broker
        await asyncio.wait_for(producer.send_and_wait(topic, b"after"), 60)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=again.bootstrap,
                                group_id=f"tw-group-{uuid.uuid4().hex[:8]}",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    seen: list[bytes | None] = []
    try:
        async with asyncio.timeout(60):
            while len(seen) < 2:
                batch = await consumer.getmany(timeout_ms=1000)
                seen += [rec.value for records in batch.values() for rec in records]
    finally:
        await consumer.stop()
    assert seen == [b"before", b"after"]
    return info, again


@pytest.mark.broker
@pytest.mark.timeout(240)
def test_restart_with_port_in_time_wait_comes_back_at_same_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue: stop then start moved the broker when its port was in TIME_WAIT (the probe
    bound without SO_REUSEADDR; Kafka binds with it), stranding workers and publishers.
    Then, with something really listening on the old port, it moves and says so."""
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    state_dir = tmp_path / "broker"
    try:
        info, again = asyncio.run(_restart_keeps_address(state_dir))
        assert again.bootstrap == info.bootstrap
        assert (again.broker_port, again.controller_port) == (info.broker_port,
                                                              info.controller_port)
        assert "cannot be bound again" not in capsys.readouterr().err

        assert local.stop(state_dir) is True
        with _listener(info.broker_port):
            moved = local.start(state_dir, heap="256m")
            assert moved.bootstrap != info.bootstrap
            err = capsys.readouterr().err
            assert f"previous address {info.bootstrap} cannot be bound again" in err
            assert f"moves to {moved.bootstrap}" in err
            assert local.probe(moved.bootstrap) is not None
    finally:
        local.stop(state_dir)
    assert local.status(state_dir) is None


# --------------------------------------------------------------------------- no broker needed


def test_stop_with_stale_pid_kills_nothing_and_cleans_up(tmp_path: Path) -> None:
    state_dir = tmp_path / "broker"
    state_dir.mkdir()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        info = local.BrokerInfo(
            pid=bystander.pid,
            bootstrap="127.0.0.1:1",
            broker_port=1,
            controller_port=2,
            log_path=str(state_dir / "broker.log"),
            data_dir=str(state_dir / "data"),
            state_dir=str(state_dir),
            kafka_version=local.kafka_version(),
            heap="256m",
        )
        (state_dir / "broker.json").write_text(json.dumps(info.to_dict()))

        assert local.status(state_dir) is None  # alive, but not our kafka.Kafka
        assert local.stop(state_dir) is False
        assert bystander.poll() is None, "stop() killed a process that was not its broker"
        assert not (state_dir / "broker.json").exists()
    finally:
        bystander.kill()
        bystander.wait(10)


def test_stop_with_dead_pid_or_garbage(tmp_path: Path) -> None:
    state_dir = tmp_path / "broker"
    state_dir.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(10)
    (state_dir / "broker.json").write_text(json.dumps({"pid": gone.pid, "bootstrap": "x"}))
    assert local.status(state_dir) is None
    assert local.stop(state_dir) is False
    assert not (state_dir / "broker.json").exists()

    (state_dir / "broker.json").write_text("{not json")
    assert local.stop(state_dir) is False
    assert not (state_dir / "broker.json").exists()
    assert local.stop(tmp_path / "never-created") is False


def test_env_bootstrap_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "broker.example:9092")
    assert local.configured_bootstrap() == "broker.example:9092"
    assert local.ensure_broker(tmp_path / "unused") == ("broker.example:9092", False)
    assert not (tmp_path / "unused").exists()
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "  ")
    assert local.configured_bootstrap() is None


def test_default_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TOOLWIRE_STATE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert local.default_state_dir() == tmp_path / ".toolwire" / "broker"
    monkeypatch.setenv("TOOLWIRE_STATE_DIR", str(tmp_path / "elsewhere"))
    assert local.default_state_dir() == tmp_path / "elsewhere" / "broker"
    monkeypatch.setenv("TOOLWIRE_KAFKA_CACHE", str(tmp_path / "cache"))
    assert local.default_cache_root() == tmp_path / "cache"


def test_pom_pins_the_fallback_version() -> None:
    pom = Path(__file__).resolve().parents[2] / "ops" / "kafka" / "pom.xml"
    assert local.kafka_version(pom) == local.KAFKA_VERSION
    assert local.KAFKA_VERSION.startswith("4.")


def test_server_properties_bind_loopback_only(tmp_path: Path) -> None:
    text = local._server_properties(19092, 19093, tmp_path / "data")
    props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["process.roles"] == "broker,controller"
    assert props["auto.create.topics.enable"] == "false"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"


def test_main_usage_and_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    assert cli.main(["broker"]) == 2
    assert cli.main(["broker", "bogus"]) == 2
    assert cli.main(["broker", "--help"]) == 0
    assert "start,stop,status" in capsys.readouterr().out
    assert cli.main(["broker", "status", "--state-dir", str(tmp_path)]) == 1
    assert json.loads(capsys.readouterr().out) == {"running": False, "state_dir": str(tmp_path)}
    assert cli.main(["broker", "stop", "--state-dir", str(tmp_path)]) == 0
    assert "no broker running" in capsys.readouterr().out


def test_port_probe_binds_like_kafka() -> None:
    """A listener makes a port taken; a closed connection in TIME_WAIT does not (Kafka binds
    with SO_REUSEADDR, so it can bind that port, and so must the probe)."""
    with _listener(_unused_port()) as sock:
        port = sock.getsockname()[1]
        assert not local._bindable(port)
        assert "Address already in use" in (local._bind_error(port) or "")

    port = _time_wait_port()  # asserts that a bind without SO_REUSEADDR is refused
    assert local._bind_error(port) is None
    assert local._bindable(port)
    with _listener(port):  # what Kafka does next: bind + listen with SO_REUSEADDR
        pass


def test_free_ports_moves_only_off_a_listened_port(capsys: pytest.CaptureFixture[str]) -> None:
    broker_port, controller_port = _time_wait_port(), _time_wait_port()
    assert local._free_ports((broker_port, controller_port)) == (broker_port, controller_port)
    assert capsys.readouterr().err == ""

    with _listener(broker_port):
        new_broker, kept = local._free_ports((broker_port, controller_port))
    assert kept == controller_port
    assert new_broker not in (broker_port, controller_port)
    err = capsys.readouterr().err
    assert f"previous address 127.0.0.1:{broker_port} cannot be bound again" in err
    assert f"moves to 127.0.0.1:{new_broker}" in err

    with _listener(controller_port):
        kept, new_controller = local._free_ports((broker_port, controller_port))
    assert kept == broker_port
    assert new_controller not in (broker_port, controller_port)
    err = capsys.readouterr().err
    assert f"controller port {controller_port} cannot be bound again" in err
    assert f"bootstrap address 127.0.0.1:{broker_port} is unchanged" in err

    # Kafka itself lost the race for them: both move, and it says why
    lost = local._free_ports((broker_port, controller_port), lost="Kafka got EADDRINUSE")
    assert set(lost).isdisjoint({broker_port, controller_port}) and lost[0] != lost[1]
    assert "Kafka got EADDRINUSE" in capsys.readouterr().err

    first, second = local._free_ports(None)
    assert first != second
    assert capsys.readouterr().err == ""
