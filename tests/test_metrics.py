"""Worker metrics over the processor (no Kafka): names, labels and counts equal the traffic,
parsed with prometheus-client's own parser."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import GOOD, World
from toolwire.app.health import Health
from toolwire.metrics import MAX_ERRORS, MAX_PROVIDERS, MAX_TOPICS, WorkerMetrics
from toolwire.stream.messages import H_CHUNK_SEQ, H_PROVIDER, H_REQUEST_ID

BROKEN = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))
DEEPSEEK = body(chunk(call(0, "call_1", "f", "{")), chunk(call(0, "", "", "}"),
                                                          finish="tool_calls"))
TRUNCATED = body(chunk(call(0, "call_1", "f", "{")), chunk(finish="length"))
#: What prometheus-client's ProcessCollector exports (where it reads /proc).
PROCESS_METRICS = frozenset({
    "process_virtual_memory_bytes", "process_resident_memory_bytes",
    "process_start_time_seconds", "process_cpu_seconds_total", "process_open_fds",
    "process_max_fds"})


@pytest.fixture
def world() -> Iterator[tuple[World, WorkerMetrics]]:
    world = World()
    metrics = WorkerMetrics(world.processor.stats, lambda: {
        "open_responses": len(world.processor.live),
        "quarantined_sessions": len(world.quarantine),
        "entries.chunks": len(world.chunks), "entries.responses": len(world.responses),
        "entries.quarantine": len(world.quarantine),
        **({} if world.processor.oldest_open() is None
           else {"oldest_open": world.processor.oldest_open() or 0.0})})
    world.processor.observer = metrics
    yield world, metrics


def scrape(metrics: WorkerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_counts_equal_the_traffic(world: tuple[World, WorkerMetrics]) -> None:
    w, metrics = world
    w.publish("r1", DEEPSEEK, session="s1", **{H_PROVIDER: "deepseek"})
    w.publish("r2", GOOD, session="s2", **{H_PROVIDER: "deepseek"})
    w.publish("r3", BROKEN, session="s3", **{H_PROVIDER: "ollama"})
    w.publish("r4", TRUNCATED, session="s4", **{H_PROVIDER: "vllm"})
    w.publish("r5", GOOD[:50], session="s5", end=None, **{H_PROVIDER: "vllm"})
    w.send(b"data: {}\n\n", {H_REQUEST_ID: "r6", H_CHUNK_SEQ: "x"}, key="s6")
    got = scrape(metrics)
    assert got[("toolwire_responses_assembled_total", (("provider", "deepseek"),))] == 2
    assert got[("toolwire_responses_assembled_total", (("provider", "vllm"),))] == 1
    assert got[("toolwire_truncated_responses_total", (("provider", "vllm"),))] == 1
    assert got[("toolwire_dead_letters_total",
                (("provider", "ollama"), ("reason", "missing_identity")))] == 1
    # The deepseek-style continuations: "" id and name ignored twice per call.
    assert got[("toolwire_identity_repairs_total",
                (("kind", "empty_identity_ignored"), ("provider", "deepseek")))] == 4
    messages = w.processor.stats["messages"]
    assert got[("toolwire_messages_consumed_total", ())] == messages
    assert got[("toolwire_malformed_messages_total", ())] == 1
    assert got[("toolwire_dead_letters_total",
                (("provider", "unknown"), ("reason", "malformed_message")))] == 1
    # r5 is open since the clock's time when it was opened.
    assert got[("toolwire_oldest_open_response_timestamp_seconds", ())] == w.clock.now
    assert got[("toolwire_open_responses", ())] == 1
    assert got[("toolwire_quarantined_sessions", ())] == 2
    assert got[("toolwire_state_entries", (("table", "chunks"),))] == len(w.chunks) > 0
    assert got[("toolwire_last_chunk_to_publish_seconds_count", ())] == 0  # no timestamps
    for name, _ in got:  # ours, and prometheus-client's standard process metrics
        assert name.startswith(("toolwire_", "process_")), name
    assert {name for name, _ in got if name.startswith("process_")} <= PROCESS_METRICS


def test_no_oldest_open_response_sample_when_none_is_open(
        world: tuple[World, WorkerMetrics]) -> None:
    w, metrics = world
    w.publish("r1", GOOD)
    assert not [name for name, _ in scrape(metrics)
                if name == "toolwire_oldest_open_response_timestamp_seconds"]


def test_provider_labels_are_bounded(world: tuple[World, WorkerMetrics]) -> None:
    w, metrics = world
    for n in range(MAX_PROVIDERS + 5):
        w.publish(f"r{n}", GOOD, session=f"s{n}", **{H_PROVIDER: f"p{n}"})
    providers = {dict(labels).get("provider") for name, labels in scrape(metrics)
                 if name == "toolwire_responses_assembled_total"}
    assert len(providers) == MAX_PROVIDERS + 1 and "other" in providers


def test_publish_and_agent_faults_are_counted_by_bounded_labels() -> None:
    metrics = WorkerMetrics({}, dict)
    metrics.publish_retried("KafkaTimeoutError")
    metrics.publish_retried("KafkaTimeoutError")
    metrics.publish_retried("NotLeaderForPartitionError")
    metrics.publish_failed("MessageSizeTooLargeError")
    metrics.record_refit("deadletter")
    metrics.agent_failed("ProducerFenced")
    got = scrape(metrics)
    assert got[("toolwire_publish_retries_total", (("error", "KafkaTimeoutError"),))] == 2
    assert got[("toolwire_publish_retries_total",
                (("error", "NotLeaderForPartitionError"),))] == 1
    assert got[("toolwire_publish_failures_total",
                (("error", "MessageSizeTooLargeError"),))] == 1
    assert got[("toolwire_records_refit_total", (("topic", "deadletter"),))] == 1
    assert got[("toolwire_agent_failures_total", (("cause", "ProducerFenced"),))] == 1
    for n in range(MAX_ERRORS + 5):
        metrics.publish_failed(f"Error{n}")
        metrics.agent_failed(f"Cause{n}")
    for n in range(MAX_TOPICS + 5):
        metrics.record_refit(f"topic{n}")
    got = scrape(metrics)
    # Retries and failures share one set of error names: an error retried, then failed, has
    # the same label in both.
    errors = {dict(labels)["error"] for n, labels in got
              if n in ("toolwire_publish_retries_total", "toolwire_publish_failures_total")}
    assert len(errors) == MAX_ERRORS + 1 and "other" in errors
    for name, label, limit in (("toolwire_agent_failures_total", "cause", MAX_ERRORS),
                               ("toolwire_records_refit_total", "topic", MAX_TOPICS)):
        values = {dict(labels)[label] for n, labels in got if n == name}
        assert len(values) == limit + 1 and "other" in values, name
    assert ("toolwire_publish_retries_total", (("error", "other"),)) not in got


def test_health_gauges_are_read_at_scrape_time() -> None:
    clock = [100.0]
    health = Health(30, clock=lambda: clock[0])
    metrics = WorkerMetrics({}, dict, health=health)
    got = scrape(metrics)
    # Not started yet: live, not ready; no progress yet, so no sample of the time since.
    assert got[("toolwire_worker_live", ())] == 1
    assert got[("toolwire_worker_ready", ())] == 0
    assert ("toolwire_seconds_since_progress", ()) not in got
    health.started()
    health.progressed()
    health.backlog(True)
    clock[0] += 31
    got = scrape(metrics)
    assert got[("toolwire_worker_live", ())] == 0  # stalled
    assert got[("toolwire_worker_ready", ())] == 1
    assert got[("toolwire_seconds_since_progress", ())] == 31
    health.progressed()
    got = scrape(metrics)
    assert got[("toolwire_worker_live", ())] == 1
    assert got[("toolwire_seconds_since_progress", ())] == 0


def test_without_health_the_gauges_have_no_sample() -> None:
    got = scrape(WorkerMetrics({}, dict))
    for name in ("toolwire_worker_live", "toolwire_worker_ready",
                 "toolwire_seconds_since_progress"):
        assert (name, ()) not in got, name


def test_restarts_show_as_a_new_start_time() -> None:
    """No counter survives a restart: the start time of the process is what changes."""
    got = scrape(WorkerMetrics({}, dict))
    started = got[("toolwire_worker_start_time_seconds", ())]
    assert 0 < started <= time.time()
    process = got.get(("process_start_time_seconds", ()))
    if process is not None:  # where ProcessCollector reads /proc: the same value
        assert started == process
    restarted = subprocess.run(
        [sys.executable, "-c", "from prometheus_client import generate_latest; "
         "from toolwire.metrics import WorkerMetrics; "
         "print(generate_latest(WorkerMetrics({}, dict).registry).decode())"],
        capture_output=True, text=True, timeout=60, check=True)
    later = {s.name: s.value for f in text_string_to_metric_families(restarted.stdout)
             for s in f.samples}
    assert later["toolwire_worker_start_time_seconds"] > started
