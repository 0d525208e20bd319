"""Crash tests on a real broker: SIGKILL a worker mid-stream and after publishing; nothing is
lost and nothing is published twice."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.app.support import (
    SYNTHESIZING_PROVIDER,
    Chunk,
    Deployment,
    Worker,
    collect,
    interleave,
    produce,
    request_chunks,
    with_provider,
)
from tests.app.test_pipeline_broker import comparable, slices
from tests.core.captures import CAPTURES
from tests.core.sse import body, call, chunk
from toolwire.core import Options, Provenance, assemble

pytestmark = pytest.mark.broker


def plan(count: int) -> tuple[list[list[Chunk]], dict[str, dict[str, Any]]]:
    streams, expected = [], {}
    usable = [c for c in CAPTURES if not c.options.strict][:count]
    for n, capture in enumerate(usable):
        tools = (None if capture.options.declared_tools is None
                 else tuple(sorted(capture.options.declared_tools)))
        request = f"crash-{capture.name}"
        stream = request_chunks(f"cs{n}", request, slices(capture.body, 16), tools=tools)
        if capture.options.synthesize_ids:
            # Synthesized for this provider only, seeded by the request id: the same ids
            # whatever the crash.
            stream = with_provider(stream, SYNTHESIZING_PROVIDER)
            expected[request] = assemble(capture.body, capture.options, Provenance(
                request_id=request, session_id=f"cs{n}", provider=SYNTHESIZING_PROVIDER))
        else:
            expected[request] = assemble(capture.body, capture.options)
        streams.append(stream)
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


#: Two parallel calls whose chunks never carry an id (as Ollama streams them).
NO_IDS = body(chunk(call(0, name="read_file", arguments='{"path":'),
                    call(1, name="search", arguments='{"q":')),
              chunk(call(0, arguments='"a"}'), call(1, arguments='"b"}')),
              chunk(finish="tool_calls"))


@dataclass
class Synthesizing(Deployment):
    """Workers that synthesize the ids a provider leaves out (``TOOLWIRE_SYNTHESIZE_IDS``)."""

    providers: str = "*"

    def env(self) -> dict[str, str]:
        return {**super().env(), "TOOLWIRE_SYNTHESIZE_IDS": self.providers}


async def committed(dep: Deployment) -> int:
    """Input messages the worker group has committed, all partitions together."""
    admin = AIOKafkaAdminClient(bootstrap_servers=dep.bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(dep.name)  # the app id
    finally:
        await admin.close()
    return sum(max(o.offset, 0) for tp, o in offsets.items() if tp.topic == dep.chunks)


def test_synthesized_ids_are_equal_across_a_worker_restart(kafka_bootstrap: str,
                                                           tmp_path: Path) -> None:
    """The first chunks are committed (so in the changelog) when the worker is killed; the
    next worker rebuilds the response from the changelog and gives the ids the request id
    gives offline: a crash cannot change the id a session store or executor keyed on."""
    dep = Synthesizing(kafka_bootstrap, tmp_path, providers="ollama")
    asyncio.run(dep.create_topics())
    request = "syn-r"
    messages = with_provider(request_chunks("syn-s", request, slices(NO_IDS, 30)), "ollama")
    half = len(messages) // 2
    first = Worker(dep, "first")
    try:
        first.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, messages[:half]))
        deadline = time.monotonic() + 60
        while asyncio.run(committed(dep)) < half:  # flushed to the changelog, then committed
            assert time.monotonic() < deadline, f"not committed in 60 s:\n{first.tail()}"
            time.sleep(0.5)
    finally:
        first.kill()
    assert first.errors() == []
    asyncio.run(produce(kafka_bootstrap, dep.chunks, messages[half:]))
    second = Worker(dep, "second")
    try:
        second.wait_ready()
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=1, idle=3, timeout=120))
    finally:
        second.stop()
    assert second.errors() == []
    assert f"request {request}: rebuilt from" in second.log.read_text(errors="replace")
    assert [r["_topic"] for r in records] == [dep.assembled], records
    calls = records[0]["tool_calls"]
    offline = assemble(NO_IDS, Options(synthesize_ids=True), Provenance(request_id=request))
    assert offline["outcome"] == "assembled"
    assert [c["id"] for c in calls] == [c["id"] for c in offline["tool_calls"]]
    assert all(c["id"].startswith("call_tw_") and c["id_synthesized"] is True for c in calls)
    assert len({c["id"] for c in calls}) == 2
    assert [c["arguments"] for c in calls] == ['{"path":"a"}', '{"q":"b"}']
    assert records[0]["repairs"]["ids_synthesized"] == 2
