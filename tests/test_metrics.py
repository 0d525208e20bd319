"""Worker metrics over the processor (no Kafka): names, labels and counts equal the traffic,
parsed with prometheus-client's own parser."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import GOOD, World
from toolwire.metrics import MAX_PROVIDERS, WorkerMetrics
from toolwire.stream.messages import H_CHUNK_SEQ, H_PROVIDER, H_REQUEST_ID

BROKEN = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))
DEEPSEEK = body(chunk(call(0, "call_1", "f", "{")), chunk(call(0, "", "", "}"),
                                                          finish="tool_calls"))
TRUNCATED = body(chunk(call(0, "call_1", "f", "{")), chunk(finish="length"))


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
    for name, _ in got:
        assert name.startswith("toolwire_")


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
