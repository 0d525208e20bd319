"""docker-compose.yml starts what users expect, checked without a Docker engine.

No engine runs where the tests run, so this reads the file as Compose would and checks the
promises the README makes: a pinned KRaft Kafka 4.x, nothing published beyond 127.0.0.1, topics
applied from the contracts before any worker starts, workers pointed at the broker.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolwire.broker.local import kafka_version

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict) and isinstance(data.get("services"), dict)
    return data["services"]  # type: ignore[no-any-return]


def _environment(service: dict[str, Any]) -> dict[str, str]:
    """Compose accepts a mapping or a list of NAME=value; either way, a dict of strings."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command")
    if isinstance(command, str):
        return shlex.split(command)
    assert isinstance(command, list), service
    return [str(part) for part in command]


def _depends_on(service: dict[str, Any]) -> dict[str, str]:
    """Service → condition (the short list form means service_started)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def test_the_services(services: dict[str, dict[str, Any]]) -> None:
    assert {"kafka", "topics-init", "worker"} <= set(services)


def test_kafka_is_the_official_image_pinned_to_4x(services: dict[str, dict[str, Any]]) -> None:
    image = services["kafka"]["image"]
    match = re.fullmatch(r"apache/kafka:(4\.\d+\.\d+)", image)
    assert match, f"{image} is not apache/kafka with a pinned 4.x.y tag"
    assert match.group(1) == kafka_version(ROOT / "ops" / "kafka" / "pom.xml"), (
        "compose and the development broker (ops/kafka/pom.xml) should run the same Kafka")


def test_kafka_runs_kraft_single_node(services: dict[str, dict[str, Any]]) -> None:
    env = _environment(services["kafka"])
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    node = env["KAFKA_NODE_ID"]
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{node}@kafka:9093"
    listeners = env["KAFKA_LISTENERS"].split(",")
    assert "PLAINTEXT://:9092" in listeners and "CONTROLLER://:9093" in listeners
    advertised = env["KAFKA_ADVERTISED_LISTENERS"].split(",")
    assert "PLAINTEXT://kafka:9092" in advertised
    assert any(a.endswith("://127.0.0.1:9094") for a in advertised)
    assert "CONTROLLER" not in env["KAFKA_ADVERTISED_LISTENERS"]
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    for name in ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
                 "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"):
        assert env[name] == "1", name
    assert env["KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"] == "0"
    # Every listener name has a security protocol.
    protocols = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert {listener.split("://")[0] for listener in listeners} <= set(protocols)


def test_kafka_has_a_healthcheck_that_asks_the_broker(
        services: dict[str, dict[str, Any]]) -> None:
    check = services["kafka"]["healthcheck"]
    text = " ".join(check["test"]) if isinstance(check["test"], list) else check["test"]
    assert "kafka-broker-api-versions" in text or "kafka-topics" in text
    assert "--bootstrap-server" in text


def test_ports_are_published_on_127_0_0_1_only(services: dict[str, dict[str, Any]]) -> None:
    published = [(name, port) for name, s in services.items() for port in s.get("ports", [])]
    assert published, "the host needs a way to reach the broker"
    for name, port in published:
        if isinstance(port, dict):  # long syntax
            assert port.get("host_ip") == "127.0.0.1", (name, port)
        else:
            assert str(port).startswith("127.0.0.1:"), (name, port)
    assert ("kafka", "127.0.0.1:9094:9094") in published


def test_topics_init_applies_the_contracts_once_kafka_is_healthy(
        services: dict[str, dict[str, Any]]) -> None:
    init = services["topics-init"]
    assert _command(init) == ["toolwire", "topics", "apply"]
    assert _environment(init)["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert _depends_on(init) == {"kafka": "service_healthy"}
    assert str(init.get("restart", "no")) == "no"


def test_workers_start_after_topics_init_succeeded(services: dict[str, dict[str, Any]]) -> None:
    worker = services["worker"]
    assert _command(worker) == ["toolwire", "worker"]
    assert _environment(worker)["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert _depends_on(worker)["topics-init"] == "service_completed_successfully"
    assert worker.get("deploy", {}).get("replicas", 1) >= 1


def test_topics_init_and_workers_agree_on_partitions(
        services: dict[str, dict[str, Any]]) -> None:
    """The changelogs the workers create must match the chunks topic topics-init creates."""
    init, worker = _environment(services["topics-init"]), _environment(services["worker"])
    assert init.get("TOOLWIRE_PARTITIONS") == worker.get("TOOLWIRE_PARTITIONS")


def test_every_dependency_exists(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for dependency in _depends_on(service):
            assert dependency in services, f"{name} depends on unknown service {dependency}"


def test_the_image_is_built_from_the_repository(services: dict[str, dict[str, Any]]) -> None:
    for name in ("topics-init", "worker"):
        build = services[name].get("build")
        if build is None:
            assert str(services[name]["image"]).startswith("python:3.11"), name
            continue
        context = ROOT / (build if isinstance(build, str) else build.get("context", "."))
        dockerfile = context / (
            "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile"))
        assert dockerfile.is_file(), dockerfile
        text = dockerfile.read_text()
        # Everything a COPY names must exist (wildcards aside), or the build fails.
        for line in text.splitlines():
            if line.startswith("COPY "):
                for source in line.split()[1:-1]:
                    if not any(ch in source for ch in "*?[") and not source.startswith("--"):
                        assert (context / source).exists(), f"{dockerfile}: {source}"
        assert "TOOLWIRE_TOPICS_DIR" in text, "an installed wheel has no topics/ beside it"
