"""Worker metrics over the processor (no Kafka): names, labels and counts equal the traffic,
parsed with prometheus-client's own parser.

The traffic is counted here, as it is sent (messages, bytes, responses and how each must end),
never read back from the processor's stats or tables that feed the metrics; the state gauges
come from the worker's own gauge function (:meth:`toolwire.app.service.Toolwire._gauges`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import cast

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import GOOD, World
from toolwire.app.health import Health
from toolwire.app.metrics import MAX_ERRORS, MAX_PROVIDERS, MAX_TOPICS, WorkerMetrics
from toolwire.app.service import Toolwire
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_PROVIDER, H_REQUEST_ID, InputMessage

BROKEN = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))
DEEPSEEK = body(chunk(call(0, "call_1", "f", "{")), chunk(call(0, "", "", "}"),
                                                          finish="tool_calls"))
VLLM = body(chunk(call(0, "call_2", "search", '{"q":')),
            chunk(call(0, None, None, '"x"}'), finish="tool_calls"))
TRUNCATED = body(chunk(call(0, "call_1", "f", "{")), chunk(finish="length"))
FILTERED = body(chunk(content="I can"), chunk(finish="content_filter"))
ODD_FINISH = body(chunk(content="Hm"), chunk(finish="weird_stop"))
#: What prometheus-client's ProcessCollector exports (where it reads /proc).
PROCESS_METRICS = frozenset({
    "process_virtual_memory_bytes", "process_resident_memory_bytes",
    "process_start_time_seconds", "process_cpu_seconds_total", "process_open_fds",
    "process_max_fds"})


@pytest.fixture
def world() -> Iterator[tuple[World, WorkerMetrics]]:
    world = World()
    # The worker's own gauge function, over this world's processor (no Faust app needed).
    worker = cast(Toolwire, SimpleNamespace(processor=world.processor))
    metrics = WorkerMetrics(world.processor.stats, lambda: Toolwire._gauges(worker))
    world.processor.observer = metrics
    yield world, metrics


def scrape(metrics: WorkerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@dataclass(frozen=True)
class Message:
    request: str
    session: str
    value: bytes
    headers: dict[str, str]
    #: What the processor must make of it: applied to its response, skipped as a duplicate,
    #: late (its response was decided) or malformed (it breaks the input contract).
    kind: str = "applied"


def response(request: str, session: str, data: bytes, provider: str, *,
             end: bool = True) -> list[Message]:
    """A response's messages as a gateway sends them: 40-byte slices, then the end marker."""
    pieces = [data[i:i + 40] for i in range(0, len(data), 40)]
    if end:
        pieces.append(b"")
    return [Message(request, session, piece,
                    {H_REQUEST_ID: request, H_CHUNK_SEQ: str(seq), H_PROVIDER: provider,
                     **({H_END: "eof"} if end and seq == len(pieces) - 1 else {})})
            for seq, piece in enumerate(pieces)]


def test_counts_equal_the_traffic(world: tuple[World, WorkerMetrics]) -> None:
    w, metrics = world
    vllm = response("r8", "s8", VLLM, "vllm")
    traffic = [
        *response("r1", "s1", DEEPSEEK, "deepseek"),            # assembled, "" id and name
        *response("r2", "s2", GOOD, "deepseek"),                # assembled, "" id and name
        *response("r3", "s3", BROKEN, "ollama"),                # dead letter: no id, no name
        *response("r4", "s4", TRUNCATED, "vllm"),               # assembled, truncated
        *response("r5", "s5", GOOD[:50], "vllm", end=False),    # still open
        Message("r6", "s6", b"data: {}\n\n", {H_REQUEST_ID: "r6", H_CHUNK_SEQ: "x"},
                "malformed"),                                   # dead letter on its own
        *response("r7", "s7", FILTERED, "deepseek"),            # assembled, CONTENT_FILTER
        vllm[0], replace(vllm[0], kind="duplicate"), *vllm[1:],
        *response("r9", "s9", ODD_FINISH, "groq"),              # assembled, WEIRD_STOP
    ]
    traffic.append(replace(traffic[0], kind="late"))  # r1 again, decided
    # Decided responses, and the seconds from their first and last message to the record.
    first_seen: dict[str, float] = {}
    first_latency: list[float] = []
    last_latency: list[float] = []
    lag = 0.25  # each message is produced (its Kafka timestamp) this long before it is read
    for offset, m in enumerate(traffic, 1):
        w.clock.now += 1.0
        first_seen.setdefault(m.request, w.clock.now)
        msg = InputMessage("llm.sse.chunks", 0, offset, m.session.encode(), m.value,
                           {k: v.encode() for k, v in m.headers.items()},
                           timestamp=w.clock.now - lag)
        outputs = w.deliver(w.processor.handle(msg))
        if m.kind == "applied" and H_END in m.headers:
            assert len(outputs) == 1, m.request
            first_latency.append(w.clock.now - (first_seen[m.request] - lag))
            last_latency.append(lag)
    kinds = [m.kind for m in traffic]
    got = scrape(metrics)

    def value(name: str, **labels: str) -> float:
        return got.get((name, tuple(sorted(labels.items()))), 0.0)

    # What was read: every message, whatever became of it.
    assert value("toolwire_messages_consumed_total") == len(traffic)
    assert value("toolwire_consumed_bytes_total") == sum(len(m.value) for m in traffic)
    assert value("toolwire_chunks_applied_total") == kinds.count("applied")
    assert value("toolwire_duplicate_chunks_total") == kinds.count("duplicate") == 1
    assert value("toolwire_late_chunks_total") == kinds.count("late") == 1
    assert value("toolwire_malformed_messages_total") == kinds.count("malformed") == 1
    assert value("toolwire_responses_opened_total") == 8  # r1-r5, r7-r9
    # How each response ended, by provider.
    assert value("toolwire_responses_assembled_total", provider="deepseek") == 3  # r1 r2 r7
    assert value("toolwire_responses_assembled_total", provider="vllm") == 2  # r4 r8
    assert value("toolwire_responses_assembled_total", provider="groq") == 1  # r9
    assert value("toolwire_truncated_responses_total", provider="vllm") == 1  # r4
    assert value("toolwire_provider_errors_total", provider="deepseek",
                 code="CONTENT_FILTER") == 1  # r7
    assert value("toolwire_provider_errors_total", provider="groq", code="OTHER") == 1  # r9
    assert value("toolwire_dead_letters_total", provider="ollama",
                 reason="missing_identity") == 1  # r3
    assert value("toolwire_dead_letters_total", provider="unknown",
                 reason="malformed_message") == 1  # r6
    assert sum(v for (name, _), v in got.items()
               if name in ("toolwire_responses_assembled_total",
                           "toolwire_dead_letters_total")) == 8  # all but r5, still open
    # The "" continuations of r1 and r2: id and name ignored once each; r8's null ones.
    assert value("toolwire_identity_repairs_total", provider="deepseek",
                 kind="empty_identity_ignored") == 4
    assert value("toolwire_identity_repairs_total", provider="vllm",
                 kind="null_identity_ignored") == 2
    assert sum(v for (name, _), v in got.items()
               if name == "toolwire_identity_repairs_total") == 6
    # Produce time to record acknowledged, from the messages' timestamps (not r6: a message
    # dead-lettered on its own has no response).
    assert len(last_latency) == 7
    assert value("toolwire_last_chunk_to_publish_seconds_count") == 7
    assert value("toolwire_last_chunk_to_publish_seconds_sum") == pytest.approx(
        sum(last_latency))
    assert value("toolwire_first_chunk_to_publish_seconds_count") == 7
    assert value("toolwire_first_chunk_to_publish_seconds_sum") == pytest.approx(
        sum(first_latency))
    # State: r5 open since its first message; the sessions of r3 and r6 quarantined.
    assert value("toolwire_open_responses") == 1
    assert value("toolwire_oldest_open_response_timestamp_seconds") == first_seen["r5"]
    assert value("toolwire_quarantined_sessions") == 2
    assert value("toolwire_sessions_quarantined_total") == 2
    # A done marker per decided response (7) and r5's open entry; r5's 2 messages, each
    # followed by a commit, are its 2 segments (decided responses' chunks are deleted); the
    # 2 quarantined sessions.
    assert value("toolwire_state_entries", table="responses") == 8
    assert value("toolwire_state_entries", table="chunks") == 2
    assert value("toolwire_state_entries", table="quarantine") == 2
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
         "from toolwire.app.metrics import WorkerMetrics; "
         "print(generate_latest(WorkerMetrics({}, dict).registry).decode())"],
        capture_output=True, text=True, timeout=60, check=True)
    later = {s.name: s.value for f in text_string_to_metric_families(restarted.stdout)
             for s in f.samples}
    assert later["toolwire_worker_start_time_seconds"] > started
