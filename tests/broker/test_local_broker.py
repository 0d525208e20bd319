"""The local broker really works: lifecycle, a produce/consume round trip, safe stop.

Tests marked ``broker`` need Java 17+ (and Maven on the very first run, to fetch the jars).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
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
        described = await admin.describe_topics([topic])
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
