"""Crash tests on a real broker: SIGKILL a worker mid-stream and after publishing; nothing is
lost and nothing is published twice."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.app.support import (
    Chunk,
    Deployment,
    Worker,
    collect,
    interleave,
    produce,
    provider_for,
    request_chunks,
    topic_bytes,
    with_provider,
)
from tests.app.test_pipeline_broker import comparable, slices
from tests.core.captures import CAPTURES
from tests.core.sse import body, call, chunk
from toolwire.core import Options, Provenance, assemble
from toolwire.stream.state import DoneMarker, decode_response

pytestmark = pytest.mark.broker


def plan(count: int) -> tuple[list[list[Chunk]], dict[str, dict[str, Any]]]:
    streams, expected = [], {}
    usable = [c for c in CAPTURES if not c.options.strict][:count]
    for n, capture in enumerate(usable):
        tools = (None if capture.options.declared_tools is None
                 else tuple(sorted(capture.options.declared_tools)))
        request = f"crash-{capture.name}"
        stream = request_chunks(f"cs{n}", request, slices(capture.body, 16), tools=tools)
        provider = provider_for(capture.options)
        if provider is not None:
            # Synthesized (or ended without [DONE]) for this provider only, seeded by the
            # request id: the same ids whatever the crash.
            stream = with_provider(stream, provider)
            expected[request] = assemble(capture.body, capture.options, Provenance(
                request_id=request, session_id=f"cs{n}", provider=provider))
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


def wait_committed(dep: Deployment, count: int, worker: Worker, timeout: float = 60.0) -> None:
    """Wait until the group has committed exactly ``count`` input messages (all partitions
    together), polled often: when this returns, a commit has just been made, and the next
    one is about a commit interval (2.8 s) away."""
    deadline = time.monotonic() + timeout
    while (done := asyncio.run(committed(dep))) < count:
        assert time.monotonic() < deadline, (
            f"{done} of {count} input messages committed in {timeout:g} s:\n{worker.tail()}")
        time.sleep(0.1)
    assert done == count, f"{done} input messages committed, {count} expected"


def done_markers(dep: Deployment) -> dict[str, str]:
    """Request id → outcome of each done marker in the responses changelog."""
    _, _, last = asyncio.run(topic_bytes(dep.bootstrap, f"{dep.name}-responses-changelog"))
    states = {k.decode(): decode_response(v) for k, v in last.items() if v is not None}
    return {r: state.outcome for r, state in states.items() if isinstance(state, DoneMarker)}


def test_kill_after_publishing_replays_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    """SIGKILL right after the records appear, before their input offsets are committed (and
    checked not to be): the restarted worker re-reads that input, finds the done markers
    and publishes nothing again."""
    dep = Deployment(kafka_bootstrap, tmp_path)
    asyncio.run(dep.create_topics())
    streams, expected = plan(24)
    topics = [dep.assembled, dep.deadletter]
    # Each response's last messages (its end marker among them) are held back until the rest
    # is committed: they then go in just after a commit, and the kill comes before the next.
    heads = [s[:-3] for s in streams]
    tails = [s[-3:] for s in streams]
    total = sum(map(len, streams))
    first = Worker(dep, "first")
    try:
        first.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*heads)))
        wait_committed(dep, total - sum(map(len, tails)), first, timeout=120)
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*tails)))
        records = asyncio.run(collect(kafka_bootstrap, topics, until=len(expected), idle=0.2,
                                      timeout=120))
    finally:
        first.kill()
    assert first.errors() == []
    exactly_once(records, expected)
    # What the restart starts from: every response decided and marked done, while the
    # offsets of their last messages were not committed (the commit after the one awaited
    # above did not come before the kill).
    assert done_markers(dep) == {r: e["outcome"] for r, e in expected.items()}
    at_kill = asyncio.run(committed(dep))
    assert at_kill == total - sum(map(len, tails)), (
        f"{at_kill} of {total} input messages committed at the kill: expected the tails "
        "uncommitted (the kill came after the next commit: too slow a machine?)")
    again = Worker(dep, "again")
    try:
        again.wait_ready()
        wait_committed(dep, total, again, timeout=120)  # it re-read and handled the tails
        records = asyncio.run(collect(kafka_bootstrap, topics, until=len(expected), idle=3,
                                      timeout=120))
    finally:
        again.stop()
    assert again.errors() == []
    exactly_once(records, expected)


#: The processor's log line for a response it rebuilt from the changelog.
REBUILT = re.compile(r"request (\S+): rebuilt from (\d+) stored chunks")


def test_kill_mid_stream_then_restart(kafka_bootstrap: str, tmp_path: Path) -> None:
    """SIGKILL with every response open: its first half committed (so in the changelog), one
    more chunk of most responses read but not committed. The restarted worker rebuilds each
    response from the changelog, re-reads the uncommitted chunks and publishes every record
    exactly once."""
    dep = Deployment(kafka_bootstrap, tmp_path)
    asyncio.run(dep.create_topics())
    streams, expected = plan(24)
    halves = [(s[: len(s) // 2], s[len(s) // 2:]) for s in streams]
    # The first chunk of a second half, unless it is the end marker (a response decided by
    # the killed worker is the other test's).
    middle = [b[:1] if len(b) > 1 else [] for _, b in halves]
    committed_first = sum(len(a) for a, _ in halves)
    topics = [dep.assembled, dep.deadletter]

    first = Worker(dep, "first")
    try:
        first.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*[a for a, _ in halves])))
        wait_committed(dep, committed_first, first, timeout=120)
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*middle)))
        time.sleep(0.5)  # read and applied, most likely; not committed before the kill
    finally:
        first.kill()
    assert first.errors() == []
    at_kill = asyncio.run(committed(dep))
    assert at_kill == committed_first, (
        f"{at_kill} input messages committed at the kill, expected {committed_first} (the "
        "middle chunks uncommitted: the kill came after the next commit, too slow a machine?)")

    rest = [b[len(m):] for (_, b), m in zip(halves, middle, strict=True)]
    asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*rest)))
    second = Worker(dep, "second")
    try:
        second.wait_ready()
        records = asyncio.run(collect(kafka_bootstrap, topics, until=len(expected), idle=3,
                                      timeout=180))
    finally:
        second.stop()
    assert second.errors() == []
    exactly_once(records, expected)
    # Every response came back from the changelog with at least its committed half (the
    # middle chunk too if a sweep-timer flush wrote it before the kill), not from the input.
    rebuilt = {m[1]: int(m[2]) for m in REBUILT.finditer(second.log.read_text(errors="replace"))}
    want = {a[0].request: (len(a), len(a) + len(m)) for (a, _), m in zip(halves, middle,
                                                                          strict=True)}
    assert set(rebuilt) == set(want), sorted(set(want) ^ set(rebuilt))
    assert {r: n for r, n in rebuilt.items() if n not in want[r]} == {}


def test_restored_open_stream_is_swept_after_a_restart(kafka_bootstrap: str,
                                                       tmp_path: Path) -> None:
    """An open response committed (so in the changelog) before a SIGKILL is swept as
    abandoned by the restarted worker, which never re-read its input: the record says so
    (no last offset, only the restored state knows the response)."""
    dep = Deployment(kafka_bootstrap, tmp_path, ttl=4, sweep_interval=1)
    asyncio.run(dep.create_topics())
    body = CAPTURES[0].body
    # The first worker never sweeps it (its TTL outlasts the test): only the restart can.
    worker = Worker(replace(dep, ttl=600), "before")
    open_half = request_chunks("idle-s", "idle-r", slices(body, 20)[:3], end=None)
    try:
        worker.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, open_half))
        wait_committed(dep, len(open_half), worker)  # flushed to the changelog, then committed
    finally:
        worker.kill()
    assert worker.errors() == []
    after = Worker(dep, "after")
    try:
        after.wait_ready()
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=1, idle=4, timeout=90))
    finally:
        after.stop()
    assert after.errors() == []
    assert [(r["request_id"], r["reason"]) for r in records] == [("idle-r", "stream_abandoned")]
    assert [c["seq"] for c in records[0]["raw_chunks"]] == [0, 1, 2]
    # Rebuilt from the changelog: a re-read of the input would know the last offset.
    assert records[0]["provenance"]["last_offset"] is None, records[0]["provenance"]
    assert "request idle-r: rebuilt from 3 stored chunks" in after.log.read_text(
        errors="replace")


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
        wait_committed(dep, half, first)  # flushed to the changelog, then committed
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
