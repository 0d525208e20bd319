"""docker-compose.yml starts what users expect, checked without a Docker engine.

No engine runs where the tests run, so this reads the file as Compose would and checks the
promises the README makes: a pinned KRaft Kafka 4.x, nothing published beyond 127.0.0.1, topics
applied from the contracts before any worker starts, workers pointed at the broker; and that the
file agrees with the code and the other files it names: every ``TOOLWIRE_*`` variable is a
setting the code reads and its value parses, the workers' topics are the contracts topics-init
applies, Prometheus scrapes every worker on its metrics port with the rules mounted where its
configuration looks for them, and Grafana gets the datasource and the dashboard directory that
its provisioning files name. The workers' healthcheck is run, as written, against a real probe
server.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from toolwire.app.health import Health, serve
from toolwire.app.metrics import WorkerMetrics
from toolwire.broker.local import ENV_CACHE, kafka_version
from toolwire.config.settings import Settings, known_variables
from toolwire.core.limits import Limits
from toolwire.tools.topics import ENV_TOPICS_DIR, load_contracts

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
TOOLWIRE_IMAGE = "toolwire:local"


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict) and isinstance(data.get("services"), dict)
    return data["services"]  # type: ignore[no-any-return]


def _interpolate(value: str) -> str:
    """Compose's ``${NAME:-default}`` / ``${NAME-default}`` / ``${NAME}``, with NAME unset."""
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}",
                  lambda m: m.group(1) or "", value)


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


def _ports(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(host ip, host port, container port) of each published port."""
    out = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            out.append((str(port.get("host_ip", "")), int(port["published"]),
                        int(port["target"])))
            continue
        parts = str(port).split("/")[0].split(":")
        assert len(parts) == 3, f"{port}: give host ip, host port and container port"
        out.append((parts[0], int(parts[1]), int(parts[2])))
    return out


def _mounts(service: dict[str, Any]) -> dict[PurePosixPath, Path]:
    """Container path → host path of each bind mount (short or long syntax)."""
    out: dict[PurePosixPath, Path] = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            source, target = str(volume["source"]), str(volume["target"])
        else:
            source, target = str(volume).split(":")[:2]
        assert source.startswith("./"), f"{volume}: bind mounts from the repository only"
        out[PurePosixPath(target)] = ROOT / source
    return out


def _host_path(mounts: dict[PurePosixPath, Path], target: PurePosixPath) -> Path | None:
    """The host file that a container path is, through the mounts (None when not mounted)."""
    for mount, source in mounts.items():
        if target == mount or mount in target.parents:
            return source / target.relative_to(mount)
    return None


def _toolwire_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services.items() if s.get("image") == TOOLWIRE_IMAGE}


def _workers(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services.items()
            if s.get("image") == TOOLWIRE_IMAGE and _command(s) == ["toolwire", "worker"]}


def _settings(service: dict[str, Any]) -> Settings:
    env = {k: _interpolate(v) for k, v in _environment(service).items()}
    return Settings.from_env(env)


def _flag(service: dict[str, Any], flag: str, default: str) -> str:
    for part in _command(service):
        if part.startswith(f"{flag}="):
            return part.split("=", 1)[1]
    return default


def test_the_services(services: dict[str, dict[str, Any]]) -> None:
    assert {"kafka", "topics-init", "prometheus", "grafana"} <= set(services)
    assert len(_workers(services)) == 2, "two workers, each scraped by name"


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
    hosts = [host_port for s in services.values() for _, host_port, _ in _ports(s)]
    assert len(hosts) == len(set(hosts)), f"a host port is published twice: {hosts}"


def test_topics_init_applies_the_contracts_once_kafka_is_healthy(
        services: dict[str, dict[str, Any]]) -> None:
    init = services["topics-init"]
    assert _command(init) == ["toolwire", "topics", "apply"]
    assert _environment(init)["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert _depends_on(init) == {"kafka": "service_healthy"}
    assert str(init.get("restart", "no")) == "no"


def test_workers_start_after_topics_init_succeeded(services: dict[str, dict[str, Any]]) -> None:
    for name, worker in _workers(services).items():
        assert _environment(worker)["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092", name
        assert _depends_on(worker)["topics-init"] == "service_completed_successfully", name
        assert worker.get("deploy", {}).get("replicas", 1) == 1, (
            f"{name}: one container per worker service, so each has its own metrics target")


def test_topics_init_and_workers_agree_on_partitions(
        services: dict[str, dict[str, Any]]) -> None:
    """The changelogs the workers create must match the chunks topic topics-init creates."""
    init = _environment(services["topics-init"])
    for name, worker in _workers(services).items():
        assert init.get("TOOLWIRE_PARTITIONS") == _environment(worker).get(
            "TOOLWIRE_PARTITIONS"), name


def test_every_toolwire_variable_is_a_setting_the_code_reads(
        services: dict[str, dict[str, Any]]) -> None:
    known = known_variables()
    assert {"TOOLWIRE_METRICS_PORT", "TOOLWIRE_MAX_CALLS", ENV_TOPICS_DIR, ENV_CACHE} <= known
    # Each name is a Settings or Limits field (or one of the few paths read elsewhere).
    fields = {f.name for f in (*dataclasses.fields(Settings), *dataclasses.fields(Limits))}
    for name, service in services.items():
        for variable in _environment(service):
            if variable.startswith("TOOLWIRE_"):
                assert variable in known, f"{name}: {variable} is not a Toolwire setting"
                field = variable.removeprefix("TOOLWIRE_").lower()
                assert field in fields or f"{field}_seconds" in fields or variable in (
                    ENV_TOPICS_DIR, ENV_CACHE), f"{name}: {variable} is no Settings field"
    for service in _toolwire_services(services).values():
        _settings(service)  # every value parses (a bad one raises, naming the variable)


def test_workers_and_topics_init_use_the_same_contracted_topics(
        services: dict[str, dict[str, Any]]) -> None:
    expected = None
    for name, service in _toolwire_services(services).items():
        settings = _settings(service)
        names = [c.name for c in load_contracts(ROOT / "topics", settings)]
        assert names == [settings.topic_chunks, settings.topic_assembled,
                         settings.topic_deadletter], name
        seen = (settings.app_id, settings.partitions, tuple(names))
        assert expected in (None, seen), f"{name} uses other topics or group: {seen}"
        expected = seen
    # Topic names left to their defaults are the ones the contract files state.
    stated = {json.loads(p.read_text())["name"] for p in (ROOT / "topics").glob("*.json")}
    assert expected is not None and set(expected[2]) == stated


def test_workers_serve_metrics_on_all_interfaces_published_on_loopback(
        services: dict[str, dict[str, Any]]) -> None:
    for name, worker in _workers(services).items():
        settings = _settings(worker)
        assert settings.metrics_port is not None, f"{name}: set TOOLWIRE_METRICS_PORT"
        assert settings.metrics_bind == "0.0.0.0", (
            f"{name}: inside a container /metrics must listen beyond loopback")
        ports = _ports(worker)
        assert [(ip, target) for ip, _, target in ports] == [
            ("127.0.0.1", settings.metrics_port)], f"{name}: publish the metrics port only"
        check = " ".join(worker["healthcheck"]["test"])
        assert f"127.0.0.1:{settings.metrics_port}/healthz" in check, name


def _healthcheck(service: dict[str, Any]) -> list[str]:
    """The healthcheck's command in exec form (``CMD``; ``CMD-SHELL`` through ``sh -c``)."""
    test = service["healthcheck"]["test"]
    if isinstance(test, str):
        return ["sh", "-c", test]
    kind, *args = [str(part) for part in test]
    assert kind in ("CMD", "CMD-SHELL"), test
    return args if kind == "CMD" else ["sh", "-c", " ".join(args)]


def test_workers_are_restarted_and_probed_for_liveness(
        services: dict[str, dict[str, Any]]) -> None:
    """A worker that exits (75 on a publish fault) is restarted; its healthcheck asks /healthz,
    which turns 503 on a failed or stalled worker, and gives the start time to join."""
    for name, worker in _workers(services).items():
        assert worker.get("restart") == "unless-stopped", name
        check = worker["healthcheck"]
        command = _healthcheck(worker)
        assert command[:2] == ["python", "-c"], f"{name}: the image has python, not curl"
        assert "/healthz" in command[2] and "/metrics" not in command[2], name
        seconds = {key: _duration(check[key]) for key in ("interval", "timeout", "start_period")}
        assert seconds["timeout"] <= seconds["interval"], name
        assert 1 <= int(check["retries"]) <= 5, name
        assert seconds["start_period"] >= 30, f"{name}: a worker takes a while to join"
        assert _depends_on(worker)["kafka"] == "service_healthy", name


def test_the_workers_healthcheck_runs_against_a_real_probe() -> None:
    """The healthcheck's Python, as Compose runs it, against the real server: exit 0 while
    live, non-zero with the reason on stderr (what ``docker inspect`` shows) once not."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    worker = next(iter(_workers(services).values()))
    port = _settings(worker).metrics_port
    command = _healthcheck(worker)
    clock = [0.0]
    health = Health(120, clock=lambda: clock[0])
    server = serve(health, WorkerMetrics({}, dict, health=health).registry, "127.0.0.1", 0)
    try:
        code = command[2].replace(f"127.0.0.1:{port}/", f"127.0.0.1:{server.port}/")
        assert code != command[2]

        def probe() -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=30, check=False)

        health.started()
        live = probe()
        assert live.returncode == 0 and live.stdout.strip() == "ok", live.stderr
        health.backlog(True)
        clock[0] += 121
        stalled = probe()
        assert stalled.returncode == 1
        assert stalled.stderr.startswith("503 stalled: unread input"), stalled.stderr
        health.failed("KafkaTimeoutError")
        failed = probe()
        assert (failed.returncode, failed.stderr.strip()) == (1, "503 failed: KafkaTimeoutError")
    finally:
        server.close()
    down = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=False)
    assert down.returncode != 0  # nothing listening: unhealthy too


def test_prometheus_does_not_wait_for_the_workers(services: dict[str, dict[str, Any]]) -> None:
    """Prometheus must come up to report a worker that never gets healthy as down."""
    assert not set(_depends_on(services["prometheus"])) & set(_workers(services))


def _duration(value: object) -> float:
    """Compose's duration (``10s``, ``1m30s``, ``500ms``) in seconds."""
    text = str(value)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    assert parts and "".join(n + u for n, u in parts) == text, text
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
    return sum(float(n) * scale[u] for n, u in parts)


def test_prometheus_scrapes_every_worker_and_loads_the_rules(
        services: dict[str, dict[str, Any]]) -> None:
    prometheus = services["prometheus"]
    assert re.fullmatch(r"prom/prometheus:v2\.\d+\.\d+", prometheus["image"])
    mounts = _mounts(prometheus)
    for source in mounts.values():
        assert source.exists(), source
    config_path = PurePosixPath(_flag(prometheus, "--config.file",
                                      "/etc/prometheus/prometheus.yml"))
    config_file = _host_path(mounts, config_path)
    assert config_file == ROOT / "ops" / "prometheus" / "prometheus.yml"
    config = yaml.safe_load(config_file.read_text())
    # Rule files are relative to the configuration file, in the container as in the checkout.
    rules = [_host_path(mounts, config_path.parent / r) for r in config["rule_files"]]
    assert rules == [ROOT / "ops" / "prometheus" / "alerts.yml"]
    assert all(r is not None and r.is_file() for r in rules)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    targets = {t for static in jobs["toolwire"]["static_configs"] for t in static["targets"]}
    workers = {f"{w.get('hostname', name)}:{_settings(w).metrics_port}"
               for name, w in _workers(services).items()}
    assert targets == workers
    for target in targets:  # the hostname is also the service's name on the network
        assert target.split(":")[0] in services
    # Host port of the UI: the container port Prometheus listens on.
    listen = _flag(prometheus, "--web.listen-address", ":9090").rsplit(":", 1)[1]
    assert [(ip, target) for ip, _, target in _ports(prometheus)] == [
        ("127.0.0.1", int(listen))]


def test_grafana_gets_the_datasource_and_the_dashboards(
        services: dict[str, dict[str, Any]]) -> None:
    grafana = services["grafana"]
    assert re.fullmatch(r"grafana/grafana(-oss)?:\d+\.\d+\.\d+", grafana["image"])
    mounts = _mounts(grafana)
    for source in mounts.values():
        assert source.exists(), source
    provisioning = PurePosixPath("/etc/grafana/provisioning")
    datasources_dir = _host_path(mounts, provisioning / "datasources")
    dashboards_dir = _host_path(mounts, provisioning / "dashboards")
    assert datasources_dir == ROOT / "ops" / "grafana" / "provisioning" / "datasources"
    assert dashboards_dir == ROOT / "ops" / "grafana" / "provisioning" / "dashboards"
    # The datasource is the prometheus service on the port it listens on.
    listen = _flag(services["prometheus"], "--web.listen-address", ":9090").rsplit(":", 1)[1]
    datasources = [d for f in sorted(datasources_dir.glob("*.yml"))
                   for d in yaml.safe_load(f.read_text())["datasources"]]
    assert [d["url"] for d in datasources] == [f"http://prometheus:{listen}"]
    # Each dashboard provider's path is a mounted directory holding the dashboard.
    providers = [p for f in sorted(dashboards_dir.glob("*.yml"))
                 for p in yaml.safe_load(f.read_text())["providers"]]
    assert providers
    for provider in providers:
        path = _host_path(mounts, PurePosixPath(provider["options"]["path"]))
        assert path == ROOT / "ops" / "grafana" / "dashboards", provider
        assert (path / "toolwire.json").is_file()
    home = _environment(grafana).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        home_file = _host_path(mounts, PurePosixPath(home))
        assert home_file is not None and home_file.is_file(), home
    assert _depends_on(grafana).get("prometheus") == "service_healthy"
    assert [(ip, target) for ip, _, target in _ports(grafana)] == [("127.0.0.1", 3000)]


def test_every_dependency_exists(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for dependency in _depends_on(service):
            assert dependency in services, f"{name} depends on unknown service {dependency}"


def test_the_image_is_built_from_the_repository(services: dict[str, dict[str, Any]]) -> None:
    for name in ("topics-init", *_workers(services)):
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
