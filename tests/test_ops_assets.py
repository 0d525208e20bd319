"""The operations assets, checked with the real tools.

``ops/prometheus`` (scrape configuration, alert rules and their unit tests) goes through
Prometheus' own ``promtool``; the Grafana dashboard and ``ops/RUNBOOK.md`` are checked against
the code (every metric name a query uses is one ``pipeline/toolwire/app/metrics.py`` exports, every
``toolwire`` command the runbook cites parses with the real command line, every dead-letter
reason and alert has its section); and one broker test runs a real worker and a real
``prometheus`` on 127.0.0.1 and evaluates every dashboard query through Prometheus' HTTP API.

``promtool`` and ``prometheus`` come from Debian's ``prometheus`` package, which
``bash ops/run tests`` installs when they are missing. Without them these tests fail, saying so:
they are never skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.app.support import (
    Chunk,
    WithMetrics,
    Worker,
    collect,
    free_port,
    interleave,
    produce,
    request_chunks,
    with_provider,
)
from tests.core.sse import body, call, chunk
from tests.stream.test_processor import World, record
from toolwire.app.metrics import WorkerMetrics
from toolwire.cli import build_parser
from toolwire.core.records import REASONS
from toolwire.stream.messages import H_CHUNK_SEQ, H_PROVIDER

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS_DIR = ROOT / "ops" / "prometheus"
CONFIG = PROMETHEUS_DIR / "prometheus.yml"
ALERTS = PROMETHEUS_DIR / "alerts.yml"
ALERTS_TEST = PROMETHEUS_DIR / "alerts_test.yml"
GRAFANA_DIR = ROOT / "ops" / "grafana"
DASHBOARD = GRAFANA_DIR / "dashboards" / "toolwire.json"
RUNBOOK = ROOT / "ops" / "RUNBOOK.md"
COMPOSE = ROOT / "docker-compose.yml"

INSTALL = ("install Prometheus 2.x so that `prometheus` and `promtool` are on PATH: "
           "`bash ops/run tests` does it on Debian/Ubuntu (apt-get install -y "
           "--no-install-recommends prometheus); elsewhere see https://prometheus.io/download/")
#: Names the runbook proposes for what the metrics do not tell; none may exist yet (once one
#: does, the runbook's "What the metrics do not tell" section needs rewriting).
PROPOSED_METRICS: frozenset[str] = frozenset()
#: What Grafana puts in place of its variables when the test evaluates a panel's query.
RATE_INTERVAL = "1m"


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: {INSTALL}", pytrace=False)
    return path


def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False,
                          **kwargs)


# -- metric names ---------------------------------------------------------------------------

def exported_metrics() -> dict[str, str]:
    """Every sample name a worker exports → its family's type, from metrics.py's registry."""
    metrics = WorkerMetrics({}, dict)
    names: dict[str, str] = {}
    for family in metrics.registry.collect():
        suffixes = {"counter": ("_total",), "gauge": ("",),
                    "histogram": ("_bucket", "_sum", "_count")}[family.type]
        for suffix in suffixes:
            names[family.name + suffix] = family.type
    return names


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_OFFSET = re.compile(r"\boffset\s+-?\w+")
_VARIABLES = re.compile(r"\$\{[^}]*\}|\$\w+")
_IDENTIFIER = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "by", "without", "on", "ignoring",
                       "group_left", "group_right", "offset", "inf", "nan", "Inf", "NaN"})


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions (a
    name followed by ``(``), keywords, label names (in matchers and grouping clauses),
    strings, durations or Grafana variables."""
    text = _STRINGS.sub(" ", expr)
    for pattern in (_MATCHERS, _RANGES, _GROUPING, _OFFSET, _VARIABLES):
        text = pattern.sub(" ", text)
    return {m for m in _IDENTIFIER.findall(text) if m not in _KEYWORDS}


def test_metric_names_are_read_out_of_promql() -> None:
    expr = ('histogram_quantile(0.99, sum by (le) (rate(toolwire_x_seconds_bucket'
            '{instance=~"$instance", le!="+Inf"}[$__rate_interval]))) / ignoring (reason) '
            'group_left sum without (provider) (up{job="a"} offset 5m) or on() vector(1) '
            '> bool 1e3 and label_replace(toolwire_y_total, "reason", "z", "", "") '
            'unless a:b:rate5m')
    assert metric_names(expr) == {"toolwire_x_seconds_bucket", "up", "toolwire_y_total",
                                  "a:b:rate5m"}
    assert metric_names("sum(rate(toolwire_a_total[1m])) by (reason)") == {"toolwire_a_total"}


def test_the_exported_names_are_the_ones_a_worker_serves() -> None:
    names = exported_metrics()
    assert names["toolwire_dead_letters_total"] == "counter"
    assert names["toolwire_consumed_bytes_total"] == "counter"
    assert names["toolwire_last_chunk_to_publish_seconds_bucket"] == "histogram"
    assert names["toolwire_consumer_lag_seconds"] == "gauge"
    assert names["toolwire_chunks_applied_total"] == "counter"  # from the stats collector
    assert names["toolwire_oldest_open_response_timestamp_seconds"] == "gauge"
    for counter in ("toolwire_publish_retries_total", "toolwire_publish_failures_total",
                    "toolwire_records_refit_total", "toolwire_agent_failures_total"):
        assert names[counter] == "counter", counter
    for gauge in ("toolwire_worker_live", "toolwire_worker_ready",
                  "toolwire_seconds_since_progress", "toolwire_worker_start_time_seconds"):
        assert names[gauge] == "gauge", gauge
    assert not PROPOSED_METRICS & set(names), "the runbook's gap section is out of date"


# -- Prometheus -----------------------------------------------------------------------------

def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def recording_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "record" in rule]


def test_promtool_checks_the_configuration() -> None:
    result = run([tool("promtool"), "check", "config", str(CONFIG)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout + result.stderr


def test_promtool_checks_the_rules() -> None:
    result = run([tool("promtool"), "check", "rules", str(ALERTS)])
    assert result.returncode == 0, result.stdout + result.stderr
    rules = len(alert_rules()) + len(recording_rules())
    assert f"{rules} rules found" in result.stdout + result.stderr


def test_promtool_runs_the_rule_unit_tests() -> None:
    result = run([tool("promtool"), "test", "rules", str(ALERTS_TEST)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_silent_unit_test() -> None:
    tests = yaml.safe_load(ALERTS_TEST.read_text())
    assert tests["rule_files"] == [ALERTS.name]
    fires: set[str] = set()
    silent: set[str] = set()
    for case in tests["tests"]:
        for check in case.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else silent).add(check["alertname"])
            # A firing case also keeps a series silent when its group has more input series
            # than alerts it expects; a silent case checks everything stays quiet.
    names = {rule["alert"] for rule in alert_rules()}
    assert names, "no alerts"
    assert names - fires == set(), "alerts without a case that fires them"
    assert names - silent == set(), "alerts without a case where they stay silent"
    assert fires | silent <= names, "tests of alerts that do not exist"


def runbook_anchors() -> set[str]:
    """GitHub's anchors of the runbook's headings."""
    anchors: set[str] = set()
    in_code = False
    for line in RUNBOOK.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def test_alerts_have_a_severity_a_summary_and_a_runbook_section() -> None:
    anchors = runbook_anchors()
    for rule in alert_rules():
        name = rule["alert"]
        assert rule.get("labels", {}).get("severity") in ("warning", "critical"), name
        annotations = rule.get("annotations", {})
        assert annotations.get("summary", "").strip(), f"{name}: no summary"
        url = annotations.get("runbook_url", "")
        match = re.fullmatch(r"ops/RUNBOOK\.md#([\w-]+)", url)
        assert match, f"{name}: runbook_url {url!r} is not a section of ops/RUNBOOK.md"
        assert match.group(1) in anchors, f"{name}: ops/RUNBOOK.md has no section #{match[1]}"
        assert match.group(1) == name.lower(), f"{name}: link its own section"


def test_rules_use_only_exported_metrics_and_the_scrape_job() -> None:
    exported = set(exported_metrics())
    recorded: set[str] = set()
    for rule in recording_rules():
        assert metric_names(rule["expr"]) <= exported | recorded, rule["record"]
        recorded.add(rule["record"])
    jobs = {job["job_name"] for job in yaml.safe_load(CONFIG.read_text())["scrape_configs"]}
    for rule in alert_rules():
        unknown = metric_names(rule["expr"]) - exported - recorded - {"up"}
        assert not unknown, f"{rule['alert']}: {unknown} are not exported by metrics.py"
        for job in re.findall(r'job="([^"]*)"', rule["expr"]):
            assert job in jobs, f"{rule['alert']}: no scrape job {job!r}"


def test_compose_runs_the_prometheus_major_version_the_rules_are_tested_with() -> None:
    image = yaml.safe_load(COMPOSE.read_text())["services"]["prometheus"]["image"]
    tested = run([tool("promtool"), "--version"]).stdout
    version = re.search(r"version (\d+)\.(\d+)\.(\d+)", tested)
    assert version, tested
    pinned = re.fullmatch(r"prom/prometheus:v(\d+)\.(\d+)\.(\d+)", image)
    assert pinned, image
    assert pinned.group(1) == version.group(1), (
        f"compose runs {image}, the rules are tested with promtool {version.group(0)}")


# -- Grafana --------------------------------------------------------------------------------

def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def panels(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows' nested ones included (rows themselves have no queries)."""
    for panel in data["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def queries(data: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for panel in panels(data):
        for target in panel["targets"]:
            yield panel, target


def variables(data: dict[str, Any]) -> dict[str, str]:
    """What each dashboard variable becomes with everything selected (Grafana's "All")."""
    values = {"__rate_interval": RATE_INTERVAL, "__interval": RATE_INTERVAL}
    for variable in data.get("templating", {}).get("list", []):
        assert variable.get("includeAll") and variable.get("allValue"), variable["name"]
        values[variable["name"]] = variable["allValue"]
    return values


def interpolate(expr: str, values: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in values, f"unknown variable ${name} in {expr}"
        return values[name]

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", value, expr)


def label_values(variable: dict[str, Any]) -> tuple[str, str]:
    """(metric, label) of a ``label_values(metric, label)`` variable."""
    query = variable["query"]
    text = query["query"] if isinstance(query, dict) else query
    match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", text)
    assert match, f"variable {variable['name']}: {text}"
    return match[1], match[2]


def datasource_uid() -> str:
    files = sorted((GRAFANA_DIR / "provisioning" / "datasources").glob("*.yml"))
    sources = [d for f in files for d in yaml.safe_load(f.read_text())["datasources"]]
    assert len(sources) == 1 and sources[0]["type"] == "prometheus", sources
    uid: str = sources[0]["uid"]
    return uid


def test_the_dashboard_is_valid_and_queries_the_provisioned_datasource() -> None:
    data = dashboard()
    assert data["uid"] and data["title"] and isinstance(data["schemaVersion"], int)
    uid = datasource_uid()
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    cells: dict[tuple[int, int], str] = {}
    for panel in data["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[x, y]}"
                cells[x, y] = panel["title"]
    for panel in panels(data):
        assert panel["datasource"]["uid"] == uid, panel["title"]
        assert panel["targets"], f"{panel['title']}: no query"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    for panel, target in queries(data):
        assert target["datasource"]["uid"] == uid, panel["title"]
        assert target["expr"].strip(), panel["title"]
    for variable in data["templating"]["list"]:
        assert variable["datasource"]["uid"] == uid


def test_every_dashboard_query_uses_only_exported_metrics() -> None:
    data = dashboard()
    exported = set(exported_metrics())
    used: set[str] = set()
    for panel, target in queries(data):
        names = metric_names(target["expr"])
        assert names, f"{panel['title']}: {target['expr']} selects no metric"
        assert names <= exported, (
            f"{panel['title']}: {names - exported} are not exported by metrics.py")
        used |= names
    for variable in data["templating"]["list"]:
        metric, _ = label_values(variable)
        assert metric in exported, variable["name"]
    # Every family the worker exports is on the dashboard (but prometheus-client's standard
    # process_* metrics, there only where /proc is read: restarts are shown with Toolwire's own
    # toolwire_worker_start_time_seconds).
    families = {re.sub(r"_(total|bucket|sum|count)$", "", n) for n in exported
                if not n.startswith("process_")}
    shown = {re.sub(r"_(total|bucket|sum|count)$", "", n) for n in used}
    assert families - shown == set(), "exported metrics the dashboard does not show"


def test_the_dashboard_has_the_panels_operators_need() -> None:
    exprs = [re.sub(r"\s+", " ", t["expr"]) for _, t in queries(dashboard())]

    def some(*parts: str) -> bool:
        return any(all(part in e for part in parts) for e in exprs)

    assert some("rate(toolwire_messages_consumed_total"), "throughput"
    assert some("by (reason)", "rate(toolwire_dead_letters_total"), "dead letters by reason"
    assert some("by (provider)", "rate(toolwire_identity_repairs_total"), "repairs by provider"
    assert some("by (partition)", "toolwire_consumer_lag_seconds"), "lag per partition"
    assert some("toolwire_open_responses"), "open responses"
    assert some("toolwire_quarantined_sessions"), "quarantined sessions"
    assert some("toolwire_worker_live") and some("toolwire_worker_ready"), "live and ready"
    assert some("changes(toolwire_worker_start_time_seconds"), "restarts"
    for counter in ("toolwire_publish_retries_total", "toolwire_publish_failures_total"):
        # Rare events: increase per interval, and 0 (not "no data") when there were none.
        assert some(f"increase({counter}", "or on() vector(0)"), counter
    histograms = [n.removesuffix("_bucket") for n, kind in exported_metrics().items()
                  if kind == "histogram" and n.endswith("_seconds_bucket")]
    assert len(histograms) == 2
    for histogram in histograms:
        for q in ("0.5", "0.9", "0.99"):
            assert some(f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket"), (
                f"p{q} of {histogram}")


def test_grafana_provisioning_matches_prometheus_and_the_dashboard() -> None:
    files = sorted((GRAFANA_DIR / "provisioning" / "datasources").glob("*.yml"))
    source = yaml.safe_load(files[0].read_text())["datasources"][0]
    scrape = yaml.safe_load(CONFIG.read_text())["global"]["scrape_interval"]
    assert source["jsonData"]["timeInterval"] == scrape, (
        "$__rate_interval is computed from the datasource's scrape interval")
    providers = [p for f in sorted((GRAFANA_DIR / "provisioning" / "dashboards").glob("*.yml"))
                 for p in yaml.safe_load(f.read_text())["providers"]]
    assert [p["type"] for p in providers] == ["file"]
    assert providers[0]["options"]["path"].startswith("/")
    assert dashboard()["uid"] == "toolwire"


# -- runbook --------------------------------------------------------------------------------

def runbook_code() -> tuple[list[str], list[str]]:
    """(fenced blocks, inline code spans) of the runbook."""
    text = RUNBOOK.read_text()
    blocks = re.findall(r"^```\w*\n(.*?)^```", text, flags=re.S | re.M)
    prose = re.sub(r"^```\w*\n.*?^```", "", text, flags=re.S | re.M)
    spans = [s.replace("\n", " ") for s in re.findall(r"`([^`]+)`", prose)]
    return blocks, spans


def test_the_runbook_has_a_section_for_every_reason_and_alert() -> None:
    anchors = runbook_anchors()
    for reason in REASONS:
        assert reason in anchors, f"ops/RUNBOOK.md has no section for the reason {reason}"
    for rule in alert_rules():
        assert rule["alert"].lower() in anchors, rule["alert"]
    links = re.findall(r"\]\(#([\w-]+)\)", RUNBOOK.read_text())
    assert links
    assert set(links) <= anchors, f"links to missing sections: {set(links) - anchors}"


def test_every_toolwire_command_in_the_runbook_parses() -> None:
    blocks, spans = runbook_code()
    lines = [line for block in blocks for line in block.splitlines()] + spans
    commands = []
    for line in lines:
        match = re.search(r"(?:^|\s)(toolwire\s+[a-z].*)$", line.strip())
        if match:
            command = re.split(r"\s(?:\||>|<|;|&&|#)", match.group(1))[0]
            commands.append(command)
    assert len(commands) >= 10, commands
    parser = build_parser()
    for command in commands:
        args = shlex.split(command)[1:]
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                namespace = parser.parse_args(args)
        except SystemExit as exc:
            if exc.code == 0 and "--help" in args:
                continue
            # A command only named in prose (`toolwire assemble`) must be one: --help works.
            assert not any(arg.startswith("-") for arg in args), f"`{command}` does not parse"
            with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as named:
                parser.parse_args([*args, "--help"])
            assert named.value.code == 0, f"`{command}` is not a command"
            continue
        assert getattr(namespace, "handler", None) is not None, f"`{command}` is incomplete"


def test_the_runbook_names_only_panels_of_the_dashboard() -> None:
    prose = re.sub(r"^```\w*\n.*?^```", "", RUNBOOK.read_text(), flags=re.S | re.M)
    prose = re.sub(r"`[^`]*`", "", prose)
    quoted = {re.sub(r"\s+", " ", q) for q in re.findall(r'"([^"]+)"', prose)}
    titles = {p["title"] for p in dashboard()["panels"]}
    assert quoted, "the runbook points at no panel"
    assert quoted - titles == set(), "quoted names that are no panel of the dashboard"


def test_the_runbook_names_only_exported_metrics() -> None:
    exported = set(exported_metrics())
    recorded = {rule["record"] for rule in recording_rules()}
    text = RUNBOOK.read_text()
    for name in set(re.findall(r"\btoolwire_\w+", text)):
        assert name in exported | recorded | PROPOSED_METRICS, name


def test_the_runbook_recipes_reproduce_a_dead_letter(tmp_path: Path) -> None:
    """The runbook's scripts, as written, on records as `toolwire consume` prints them."""
    world = World()
    good = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
                chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
    nameless = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))
    outputs = world.publish("other", nameless, session="s0", **{H_PROVIDER: "vllm"})
    outputs += world.publish("REQUEST_ID", nameless, session="s1", **{H_PROVIDER: "vllm"})
    outputs += world.publish("later", good, session="s1", **{H_PROVIDER: "deepseek"})
    lines = []
    for offset, output in enumerate(outputs):
        value = record(output)
        value["_kafka"] = {"topic": "llm.toolcalls.deadletter", "partition": 0,
                           "offset": offset, "key": output.key.decode() if output.key else None,
                           "headers": {k: v.decode() for k, v in output.headers.items()}}
        lines.append(json.dumps(value))
    (tmp_path / "deadletters.jsonl").write_text("\n".join(lines) + "\n")
    blocks, _ = runbook_code()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    counting = next(b for b in blocks if "collections.Counter" in b)
    counted = run(["bash", "-c", counting], cwd=tmp_path, env=env)
    assert counted.returncode == 0, counted.stderr
    assert "('missing_identity', 'vllm'), 2" in counted.stdout
    assert "('session_quarantined', 'deepseek'), 1" in counted.stdout

    extracting = next(b for b in blocks if "value_b64" in b)
    extracted = run(["bash", "-c", extracting], cwd=tmp_path, env=env)
    assert extracted.returncode == 0, extracted.stderr
    assert extracted.stdout.startswith("missing_identity - call 0 of choice 0 has no id or name")
    assert (tmp_path / "capture.sse").read_bytes() == nameless
    assembled = run([sys.executable, "-m", "toolwire.cli", "assemble", "capture.sse",
                     "--compact"], cwd=tmp_path, env=env)
    assert assembled.returncode == 1, assembled.stderr
    assert json.loads(assembled.stdout)["reason"] == "missing_identity"


# -- a real worker, scraped by a real Prometheus --------------------------------------------



class Prometheus:
    """``prometheus`` as a child process on 127.0.0.1, scraping one target every second with
    the repository's rules; stopped by its PID."""

    def __init__(self, binary: str, directory: Path, target: str, job: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = directory / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ALERTS)],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [target]}]}],
        }))
        self.log = directory / "prometheus.log"
        self._log_file = self.log.open("wb")
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)

    def get(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as response:
            data = json.loads(response.read())
        assert data["status"] == "success", data
        return data["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.get("/api/v1/query", query=expr)
        assert data["resultType"] == "vector", (expr, data)
        result: list[dict[str, Any]] = data["result"]
        return result

    def wait_until(self, what: str, done: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self._try(done):
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited {self.process.returncode}:\n"
                                     f"{self.log.read_text(errors='replace')[-3000:]}")
            assert time.monotonic() < deadline, f"prometheus: not {what} in {timeout} s"
            time.sleep(0.25)

    @staticmethod
    def _try(done: Callable[[], bool]) -> bool:
        try:
            return done()
        except OSError:  # not listening yet (URLError is an OSError)
            return False

    def ready(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as r:
            return r.status == 200

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)
        self._log_file.close()



def traffic(wave: int) -> tuple[list[Chunk], int]:
    """Known traffic: (messages, records it gives). Two providers with repairs, a truncated
    call, a provider error, a dead letter, a malformed message and a response left open."""
    deepseek = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
                    chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
    vllm = body(chunk(call(0, "call_2", "search", '{"q":')),
                chunk(call(0, None, None, '"x"}'), finish="tool_calls"))
    truncated = body(chunk(call(0, "call_3", "write_file", '{"path":')), chunk(finish="length"))
    filtered = body(chunk(content="I can"), chunk(finish="content_filter"))
    nameless = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))
    w = f"w{wave}"
    streams = [
        with_provider(request_chunks(f"{w}-d", f"{w}-d", [deepseek[:70], deepseek[70:]]),
                      "deepseek"),
        with_provider(request_chunks(f"{w}-v", f"{w}-v", [vllm]), "vllm"),
        with_provider(request_chunks(f"{w}-t", f"{w}-t", [truncated]), "deepseek"),
        with_provider(request_chunks(f"{w}-f", f"{w}-f", [filtered]), "vllm"),
        with_provider(request_chunks(f"{w}-n", f"{w}-n", [nameless]), "vllm"),
        [Chunk(f"{w}-m", f"{w}-m", None, b"data: {}\n\n", extra_headers=((H_CHUNK_SEQ, b"x"),))],
    ]
    # And one response that stays open (no end marker): the oldest open response's age.
    still_open = with_provider(request_chunks(f"{w}-o", f"{w}-o", [deepseek[:70]], end=None),
                          "deepseek")
    return interleave(*streams, still_open), len(streams)


@pytest.mark.broker
def test_every_dashboard_query_returns_series_from_a_real_worker(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    binary = tool("prometheus")
    data = dashboard()
    values = variables(data)
    job = yaml.safe_load(CONFIG.read_text())["scrape_configs"][0]["job_name"]
    dep = WithMetrics(kafka_bootstrap, tmp_path / "worker", metrics_port=free_port())
    asyncio.run(dep.create_topics())
    worker = Worker(dep)
    server: Prometheus | None = None
    try:
        worker.wait_ready()
        server = Prometheus(binary, tmp_path / "prometheus", f"127.0.0.1:{dep.metrics_port}",
                            job)
        prom = server
        prom.wait_until("ready", prom.ready)
        prom.wait_until("scraping the worker", lambda: [
            s["value"][1] for s in prom.query(f'up{{job="{job}"}}')] == ["1"])
        messages = records = 0
        # Two waves, each after a scrape: every counter then grows within the rate window,
        # including the labelled ones that appear with the first wave.
        for wave in (1, 2):
            chunks, outputs = traffic(wave)
            asyncio.run(produce(kafka_bootstrap, dep.chunks, chunks))
            messages += len(chunks)
            records += outputs
            got = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=records, idle=0.2, timeout=60))
            assert len(got) == records, [r.get("reason") for r in got]
            settled = 5 * wave  # every response but the malformed message
            # Scraped: the counts of the wave, and the group's offsets committed past it. (A
            # rebalance under load may make the worker read some messages twice: at least.)
            expected = {"sum(toolwire_messages_consumed_total)": messages,
                        "sum(toolwire_last_chunk_to_publish_seconds_count)": settled,
                        "sum(toolwire_consumer_committed_offset)": messages}
            seen: dict[str, float | None] = {}

            def scraped(expected: dict[str, int] = expected,
                        seen: dict[str, float | None] = seen) -> bool:
                seen.update({expr: _scalar(prom, expr) for expr in expected})
                return all((seen[e] or 0) >= n for e, n in expected.items())

            try:
                prom.wait_until(f"seeing wave {wave}", scraped, timeout=45)
            except AssertionError as exc:
                raise AssertionError(f"{exc}: {seen}\n{worker.tail()}") from None

        # The worker's probes, beside /metrics: live and ready once it handled the traffic.
        for path in ("/healthz", "/readyz"):
            url = f"http://127.0.0.1:{dep.metrics_port}{path}"
            with urllib.request.urlopen(url, timeout=5) as response:
                assert (response.status, response.read()) == (200, b"ok\n"), path
        results: dict[str, list[dict[str, Any]]] = {}
        for panel, target in queries(data):
            expr = interpolate(target["expr"], values)
            result = prom.query(expr)
            assert result, f"{panel['title']} ({target['refId']}): no series for {expr}"
            results[f"{panel['title']}/{target['refId']}"] = result
        for variable in data["templating"]["list"]:
            metric, label = label_values(variable)
            labels = prom.get(f"/api/v1/label/{label}/values", **{"match[]": metric})
            assert labels == [f"127.0.0.1:{dep.metrics_port}"], labels
        rules = [r for g in prom.get("/api/v1/rules")["groups"] for r in g["rules"]]
        assert len(rules) == len(alert_rules()) + len(recording_rules())
        assert [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"] == []
    finally:
        if server is not None:
            server.stop()
        worker.stop()

    def by(key: str, label: str) -> dict[str, float]:
        return {s["metric"].get(label, ""): float(s["value"][1]) for s in results[key]}

    reasons = by("Dead letters by reason/A", "reason")
    assert reasons["missing_identity"] > 0 and reasons["malformed_message"] > 0, reasons
    repairs = by("Identity repairs by provider/A", "provider")
    assert repairs["deepseek"] > 0 and repairs["vllm"] > 0, repairs
    for ref in "ABC":
        assert float(results[f"Throughput/{ref}"][0]["value"][1]) > 0, ref
    errors = by("Truncations and provider errors/B", "code")
    assert errors["CONTENT_FILTER"] > 0, errors
    for title in ("Last chunk to record published", "First chunk to record published"):
        for ref in "ABCD":
            value = float(results[f"{title}/{ref}"][0]["value"][1])
            assert math.isfinite(value) and value >= 0, (title, ref, value)
    lag = by("Consumer lag per partition (seconds)/A", "partition")
    assert lag == {"0": 0, "1": 0, "2": 0}, lag
    assert max(by("Committed offsets per partition/A", "partition").values()) > 0
    instance = f"127.0.0.1:{dep.metrics_port}"
    assert by("Worker live and ready/A", "instance") == {instance: 1.0}
    assert by("Worker live and ready/B", "instance") == {instance: 1.0}
    assert by("Worker restarts and fence holds/A", "instance") == {instance: 0.0}
    assert by("Worker restarts and fence holds/B", "instance") == {instance: 0.0}
    assert 0 <= by("Seconds since progress/A", "instance")[instance] < 60
    assert by("Quarantined sessions/A", "instance") == {
        f"127.0.0.1:{dep.metrics_port}": 4.0}  # per wave: the dead letter's, the malformed


def _scalar(prom: Prometheus, expr: str) -> float | None:
    result = prom.query(expr)
    return float(result[0]["value"][1]) if result else None
