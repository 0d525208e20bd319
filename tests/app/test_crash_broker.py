"""Crash tests on a real broker: SIGKILL a worker mid-stream and after publishing; nothing is
lost and nothing is published twice."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.app.support import (
    Chunk,
    Deployment,
    Worker,
    collect,
    interleave,
    produce,
    request_chunks,
)
from tests.app.test_pipeline_broker import comparable, slices
from tests.core.captures import CAPTURES
from toolwire.core import assemble

pytestmark = pytest.mark.broker


def plan(count: int) -> tuple[list[list[Chunk]], dict[str, dict[str, Any]]]:
    streams, expected = [], {}
    usable = [c for c in CAPTURES if not c.options.strict][:count]
    for n, capture in enumerate(usable):
        tools = (None if capture.options.declared_tools is None
                 else tuple(sorted(capture.options.declared_tools)))
        request = f"crash-{capture.name}"
        streams.append(request_chunks(f"cs{n}", request, slices(capture.body, 16), tools=tools))
        expected[request] = assemble(capture.body, capture.options)
    return streams, expected


def exactly_once(records: list[dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    counts = Counter(r["request_id"] for r in records)
    assert {r: n for r, n in counts.items() if n != 1} == {}, "published more than once"
    assert set(counts) == set(expected), f"lost: {sorted(set(expected) - set(counts))}"
    for r in records:
        assert comparable(r) == comparable(expected[r["request_id"]]), r["request_id"]


def test_kill_after_publishing_replays_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    """SIGKILL right after the records appear (offsets most likely not committed): the
    restarted worker re-reads the chunks and publishes nothing again."""
    dep = Deployment(kafka_bootstrap, tmp_path)
    asyncio.run(dep.create_topics())
    streams, expected = plan(24)
    topics = [dep.assembled, dep.deadletter]
    first = Worker(dep, "first")
    try:
        first.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*streams)))
        records = asyncio.run(collect(kafka_bootstrap, topics, until=len(expected), idle=0.2,
                                      timeout=180))
    finally:
        first.kill()
    assert first.errors() == []
    exactly_once(records, expected)
    again = Worker(dep, "again")
    try:
        again.wait_ready()
        records = asyncio.run(collect(kafka_bootstrap, topics, until=len(expected), idle=8,
                                      timeout=120))
    finally:
        again.stop()
    assert again.errors() == []
    exactly_once(records, expected)


def test_kill_mid_stream_then_restart(kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Deployment(kafka_bootstrap, tmp_path)
    asyncio.run(dep.create_topics())
    streams, expected = plan(24)
    halves = [(s[: len(s) // 2], s[len(s) // 2:]) for s in streams]
    topics = [dep.assembled, dep.deadletter]

    first = Worker(dep, "first")
    first.wait_ready()
    asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*[a for a, _ in halves])))
    time.sleep(3)  # some chunks applied and changelogged, some offsets maybe not committed
    first.kill()

    asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*[b for _, b in halves])))
    second = Worker(dep, "second")
    try:
        second.wait_ready()
        records = asyncio.run(collect(kafka_bootstrap, topics, until=len(expected), idle=3,
                                      timeout=180))
    finally:
        second.stop()
    assert second.errors() == []
    exactly_once(records, expected)


def test_restored_open_stream_is_swept_after_a_restart(kafka_bootstrap: str,
                                                       tmp_path: Path) -> None:
    dep = Deployment(kafka_bootstrap, tmp_path, ttl=4, sweep_interval=1)
    asyncio.run(dep.create_topics())
    body = CAPTURES[0].body
    worker = Worker(dep, "before")
    worker.wait_ready()
    open_half = request_chunks("idle-s", "idle-r", slices(body, 20)[:3], end=None)
    asyncio.run(produce(kafka_bootstrap, dep.chunks, open_half))
    time.sleep(2)  # applied, well within the TTL
    worker.kill()
    after = Worker(dep, "after")
    try:
        after.wait_ready()
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=1, idle=4, timeout=90))
    finally:
        after.stop()
    assert [(r["request_id"], r["reason"]) for r in records] == [("idle-r", "stream_abandoned")]
    assert [c["seq"] for c in records[0]["raw_chunks"]] == [0, 1, 2]
