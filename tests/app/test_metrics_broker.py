"""A real worker serves Prometheus metrics on 127.0.0.1: known traffic from two providers, a
scrape parsed with prometheus-client's parser, every count equal to the traffic."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.app.support import (
    Deployment,
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

pytestmark = pytest.mark.broker

DEEPSEEK = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
                chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
VLLM = body(chunk(call(0, "call_2", "search", '{"q":')),
            chunk(call(0, None, None, '"x"}'), finish="tool_calls"))
NAMELESS = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))





def status(dep: Deployment) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "toolwire.cli", "status"]
    json_run = subprocess.run([*args, "--json"], env=dep.env(), capture_output=True, text=True,
                              timeout=60, check=False)
    if json_run.returncode == 1 and not json_run.stdout:
        return json_run
    text_run = subprocess.run(args, env=dep.env(), capture_output=True, text=True, timeout=60,
                              check=False)
    assert text_run.returncode == json_run.returncode
    return json_run if json_run.returncode == 0 else text_run


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_scrape_counts_exactly_the_traffic(kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = WithMetrics(kafka_bootstrap, tmp_path, metrics_port=free_port(), log_format="json")
    asyncio.run(dep.create_topics())
    streams = [with_provider(request_chunks(f"s{n}", f"d{n}", [DEEPSEEK[:60], DEEPSEEK[60:]]),
                        "deepseek") for n in range(3)]
    streams += [with_provider(request_chunks(f"v{n}", f"v{n}", [VLLM]), "vllm") for n in range(2)]
    streams += [with_provider(request_chunks("bad", "bad", [NAMELESS]), "vllm")]
    worker = Worker(dep)
    try:
        worker.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*streams)))
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=6, idle=0.5, timeout=90))
        assert len(records) == 6
        deadline = time.monotonic() + 10
        while True:  # the record is consumed a moment before the worker counts it settled
            got = scrape(dep.metrics_port)
            ends = sum(v for (name, labels), v in got.items()
                       if name == "toolwire_topic_end_offset"
                       and ("topic", dep.chunks) in labels)
            if (got.get(("toolwire_responses_assembled_total", (("provider", "vllm"),))) == 2
                    and ends == sum(len(s) for s in streams)):
                break
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
        deadline = time.monotonic() + 20
        while True:  # table changelogs are written at the next commit
            live = status(dep)
            if live.returncode or orjson.loads(live.stdout)["quarantined_sessions"]:
                break
            assert time.monotonic() < deadline, live.stdout
            time.sleep(1)
    finally:
        worker.stop()
    assert live.returncode == 0, live.stderr
    report = orjson.loads(live.stdout)
    assert report["members"] == 1
    assert report["open_responses"] == 0
    assert report["quarantined_sessions"] == ["bad"]
    assert report["dead_letters_last_hour"] == {"missing_identity": 1}
    chunks = [p for p in report["partitions"] if p["topic"] == dep.chunks]
    assert sum(p["end_offset"] for p in chunks) == sum(len(s) for s in streams)
    events = [orjson.loads(line) for line in worker.log.read_text().splitlines() if line]
    assert {"time", "level", "logger", "message"} <= set(events[0])
    assert not [e for e in events if e["level"] in ("error", "critical")
               and "CoordinatorNotAvailable" not in e["message"]]
    dead = [e for e in events if e["message"].startswith("request bad: dead letter")]
    assert [(e["request_id"], e["session_id"]) for e in dead] == [("bad", "bad")]
    stopped = status(dep)
    assert stopped.returncode == 1, stopped.stderr  # no live member any more
    assert "0 live member(s)" in stopped.stdout
    assert got[("toolwire_responses_assembled_total", (("provider", "deepseek"),))] == 3
    assert got[("toolwire_dead_letters_total",
                (("provider", "vllm"), ("reason", "missing_identity")))] == 1
    assert got[("toolwire_identity_repairs_total",
                (("kind", "empty_identity_ignored"), ("provider", "deepseek")))] == 6
    assert got[("toolwire_identity_repairs_total",
                (("kind", "null_identity_ignored"), ("provider", "vllm")))] == 4
    messages = sum(len(s) for s in streams)
    assert got[("toolwire_messages_consumed_total", ())] == messages
    assert got[("toolwire_consumed_bytes_total", ())] == sum(len(c.value) for s in streams
                                                           for c in s)
    assert got[("toolwire_last_chunk_to_publish_seconds_count", ())] == 6
    assert got[("toolwire_open_responses", ())] == 0
    assert got[("toolwire_group_members", ())] == 1
    assert {dict(labels)["partition"] for name, labels in got
            if name == "toolwire_consumer_lag_messages"} == {"0", "1", "2"}
    assert got[("toolwire_quarantined_sessions", ())] == 1
    assert all(name.startswith("toolwire_") or name.startswith(("python_", "process_"))
               for name, _ in got)
