"""The deployed product on a real broker: a ``toolwire worker`` process, raw chunks in, records
out, exactly once, however the bodies were sliced and interleaved."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
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
    running,
    topic_bytes,
    topic_records,
    with_header,
    with_provider,
    writers,
)
from tests.core.captures import CAPTURES
from tests.core.sse import body, call, chunk
from toolwire.core import Provenance, assemble
from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES
from toolwire.kafka.clients import open_client
from toolwire.kafka.topics import topic_configs
from toolwire.publish import split_events
from toolwire.stream.messages import H_CHUNK_SEQ, H_CONTROL, H_WIRE, idempotency_key
from toolwire.stream.state import DoneMarker, decode_response, segment_key
from toolwire.tools.captures import Capture
from toolwire.tools.captures import load as load_captures

pytestmark = pytest.mark.broker

GOOD = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
            chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
BROKEN = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))


def slices(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def events(data: bytes) -> list[bytes]:
    pieces = data.split(b"\n\n")
    out = [p + b"\n\n" for p in pieces[:-1]]
    return out + ([pieces[-1]] if pieces[-1] else [])


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """The record minus what only the pipeline knows (provenance, raw copies, Kafka)."""
    drop = {"provenance", "raw_chunks", "raw_chunks_truncated", "request_id", "session_id",
            "_topic", "_key", "_headers"}
    return {k: v for k, v in record.items() if k not in drop}


@pytest.fixture(scope="module")
def deployment(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[Deployment, Worker]]:
    """One worker with a short TTL and sweep interval, shared by the behaviour tests."""
    dep = Deployment(kafka_bootstrap, tmp_path_factory.mktemp("dep"), ttl=4, sweep_interval=1)
    with running(dep) as worker:
        yield dep, worker


def run(dep: Deployment, chunks: list[Chunk], until: int, idle: float = 3.0
        ) -> dict[str, list[dict[str, Any]]]:
    """Publish, then return every record so far on both topics, by request id."""
    asyncio.run(produce(dep.bootstrap, dep.chunks, chunks))
    requests = {c.request for c in chunks}
    records = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter], idle=idle,
                                  until=None, timeout=0.1))
    have = lambda rs: sum(1 for r in rs if r.get("request_id") in requests)  # noqa: E731
    deadline = 90.0
    while have(records) < until and deadline > 0:
        records = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter],
                                      until=None, idle=0.5, timeout=2))
        deadline -= 2
    records = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter],
                                  until=len(records), idle=idle))
    by_request: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("request_id") in requests:
            by_request.setdefault(r["request_id"], []).append(r)
    return by_request


def _through_a_worker(kafka_bootstrap: str, tmp_path: Path, captures: list[Capture],
                      ways: tuple[str, ...]) -> None:
    """Every capture, cut each of ``ways``, interleaved through one worker: each request's
    record exactly once, equal to what ``toolwire assemble`` makes of the whole body."""
    dep = Deployment(kafka_bootstrap, tmp_path, partitions=3)
    asyncio.run(dep.create_topics())
    cuts = {"s7": lambda b: slices(b, 7), "s64": lambda b: slices(b, 64)}
    streams: list[list[Chunk]] = []
    expected: dict[str, tuple[str, dict[str, Any]]] = {}
    for n, capture in enumerate(captures):
        if capture.options.strict:
            continue  # strict is a deployment setting: covered by the processor tests
        tools = (None if capture.options.declared_tools is None
                 else tuple(sorted(capture.options.declared_tools)))
        wire = capture.options.wire
        for way in ways:
            # Named by wire too: two corpora may hold a capture of the same name.
            request = (f"{capture.name}-{way}" if wire == DEFAULT_WIRE
                       else f"{wire}-{capture.name}-{way}")
            # Few sessions, so requests share partitions; each request its own session, so a
            # dead letter's quarantine holds no other capture.
            # One event a message where the wire's framing says its events end.
            pieces = (split_events(capture.body, wire) if way == "events"
                      else cuts[way](capture.body))
            stream = request_chunks(f"{request}-s{n}", request, pieces, tools=tools)
            if wire != DEFAULT_WIRE:
                stream = with_header(stream, H_WIRE, wire)
            # The worker synthesizes ids (seeded by the request id) and ends bodies without
            # [DONE] for the providers named in its settings only.
            provider = provider_for(capture.options)
            if provider is not None:
                stream = with_provider(stream, provider)
            record = assemble(capture.body, capture.options,
                              Provenance(request_id=request, provider=provider))
            topic = dep.assembled if record["outcome"] == "assembled" else dep.deadletter
            streams.append(stream)
            expected[request] = (topic, record)
    worker = Worker(dep)
    try:
        worker.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, interleave(*streams)))
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=len(expected), idle=4, timeout=240))
        assert worker.errors() == []
    finally:
        worker.stop()
    per_request = Counter(r["request_id"] for r in records)
    assert {r: n for r, n in per_request.items() if n != 1} == {}, "published more than once"
    assert set(per_request) == set(expected), "lost responses"
    for r in records:
        topic, want = expected[r["request_id"]]
        assert r["_topic"] == topic, r["request_id"]
        assert comparable(r) == comparable(want), r["request_id"]
        assert r["_headers"]["idempotency-key"] == idempotency_key(r["request_id"])


def test_every_capture_in_several_slicings_interleaved_yields_its_record_exactly_once(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    _through_a_worker(kafka_bootstrap, tmp_path, CAPTURES, ("events", "s7", "s64"))


#: The corpora of the other wires (tests/core/corpus_wires/WIRE), each capture naming its wire;
#: the default wire's (openai-chat) goes through the worker in the test above.
WIRE_CAPTURES = [c for folder in sorted((Path(__file__).parents[1] / "core" /
                                         "corpus_wires").iterdir())
                 if folder.is_dir() and folder.name != DEFAULT_WIRE
                 for c in load_captures(folder)]


def test_every_wire_corpus_through_a_worker_yields_what_assemble_does(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Anthropic Messages, OpenAI Responses, Gemini and Ollama (NDJSON) bodies with their wire
    header, cut per event and in 7-byte slices, interleaved with each other through one
    worker."""
    # Every wire of the registry but the default (its corpus is CAPTURES, above) has one.
    assert {c.options.wire for c in WIRE_CAPTURES} == set(SUPPORTED_WIRES) - {DEFAULT_WIRE}
    _through_a_worker(kafka_bootstrap, tmp_path, WIRE_CAPTURES, ("events", "s7"))


def test_duplicate_chunks_are_skipped(deployment: tuple[Deployment, Worker]) -> None:
    dep, _ = deployment
    chunks = request_chunks("dup-s", "dup-r", slices(GOOD, 30))
    doubled = [c for c in chunks for _ in range(2)]
    got = run(dep, doubled, until=1)
    assert len(got["dup-r"]) == 1
    assert got["dup-r"][0]["tool_calls"][0]["arguments"] == '{"city":"Paris"}'


def test_sequence_gap_is_dead_lettered(deployment: tuple[Deployment, Worker]) -> None:
    dep, _ = deployment
    chunks = request_chunks("gap-s", "gap-r", slices(GOOD, 30))
    del chunks[2]
    got = run(dep, chunks, until=1)
    assert [r["reason"] for r in got["gap-r"]] == ["sequence_gap"]
    assert got["gap-r"][0]["_topic"] == dep.deadletter


def test_end_marker_without_done_is_stream_closed(deployment: tuple[Deployment, Worker]) -> None:
    dep, _ = deployment
    cut = GOOD[: GOOD.index(b"data: [DONE]")]
    got = run(dep, request_chunks("cut-s", "cut-r", slices(cut, 40)), until=1)
    assert [r["reason"] for r in got["cut-r"]] == ["stream_closed"]


def test_malformed_message_among_good_ones(deployment: tuple[Deployment, Worker]) -> None:
    dep, _ = deployment
    bad = [Chunk("bad-s", "bad-r", None, b"data: {}\n\n")]  # no chunk-seq header
    good = [request_chunks(f"ok-s{i}", f"ok-r{i}", slices(GOOD, 25)) for i in range(3)]
    got = run(dep, interleave(good[0], bad, good[1], good[2]), until=4)
    assert [r["reason"] for r in got["bad-r"]] == ["malformed_message"]
    assert all(got[f"ok-r{i}"][0]["outcome"] == "assembled" for i in range(3))


def test_a_malformed_message_of_an_open_response_fails_it_at_once(
        deployment: tuple[Deployment, Worker]) -> None:
    """One dead letter, with the response's raw chunks and the bad message's; not a dead
    letter of the message now and a ``stream_abandoned`` of the response one TTL later."""
    dep, _ = deployment
    parts = events(GOOD)  # the call's name is known after the first message
    opened = request_chunks("mo-s", "mo-r", parts[:2], end=None)
    bad = Chunk("mo-s", "mo-r", None, parts[2],
                extra_headers=((H_CHUNK_SEQ, str(10**30).encode()),))
    got = run(dep, [*opened, bad], until=1, idle=8)  # idle past the TTL (4 s) and a sweep
    assert [r["reason"] for r in got["mo-r"]] == ["malformed_message"]
    assert [c["seq"] for c in got["mo-r"][0]["raw_chunks"]] == [0, 1, 2]
    assert got["mo-r"][0]["calls"][0]["name"] == "get_weather"


def test_quarantine_and_release(deployment: tuple[Deployment, Worker]) -> None:
    dep, _ = deployment
    got = run(dep, request_chunks("q-s", "q-r1", slices(BROKEN, 40)), until=1)
    assert got["q-r1"][0]["reason"] == "missing_identity"
    got = run(dep, request_chunks("q-s", "q-r2", slices(GOOD, 40)), until=1)
    assert got["q-r2"][0]["reason"] == "session_quarantined"
    assert got["q-r2"][0]["held_record"]["tool_calls"][0]["name"] == "get_weather"
    release = Chunk("q-s", "-", None, b"", extra_headers=((H_CONTROL, b"release"),))
    got = run(dep, [release, *request_chunks("q-s", "q-r3", slices(GOOD, 40))], until=1)
    assert got["q-r3"][0]["_topic"] == dep.assembled


def test_idle_stream_is_swept_as_abandoned(deployment: tuple[Deployment, Worker]) -> None:
    dep, _ = deployment
    half = request_chunks("idle-s", "idle-r", slices(GOOD[:120], 40), end=None)
    got = run(dep, half, until=1, idle=1)
    assert [r["reason"] for r in got["idle-r"]] == ["stream_abandoned"]


def _changelog_of(dep: Deployment, table: str, prefix: bytes) -> dict[bytes, bytes | None]:
    """The last value of each key of ``table``'s changelog that starts with ``prefix``."""
    _, _, last = asyncio.run(topic_bytes(dep.bootstrap, f"{dep.name}-{table}-changelog"))
    return {k: v for k, v in last.items() if k.startswith(prefix)}


def test_state_is_deleted_after_completion(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A response whose chunks reached the changelog (a commit flushed them before its end
    marker came) ends there as tombstones once decided, its done marker kept: the state of a
    decided response does not outlive it. Its own deployment, so no other test's traffic
    writes or deletes anything in these changelogs."""
    dep = Deployment(kafka_bootstrap, tmp_path, sweep_interval=1)  # TTL: 600 s, never swept
    asyncio.run(dep.create_topics())
    request = "del-r"
    *opened, end = request_chunks("del-s", request, slices(GOOD, 20))
    prefix = segment_key(request, 0).removesuffix("s0").encode()  # its chunk keys, any kind
    worker = Worker(dep)
    try:
        worker.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, opened))
        # Held until a commit (about every 2.8 s) or the sweep flushes them: poll, bounded.
        deadline = time.monotonic() + 45
        while not (stored := _changelog_of(dep, "chunks", prefix)):
            assert time.monotonic() < deadline, f"no chunk key in 45 s:\n{worker.tail()}"
            time.sleep(0.5)
        assert all(v is not None for v in stored.values()), stored
        asyncio.run(produce(kafka_bootstrap, dep.chunks, [end]))
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=1, idle=0.5, timeout=60))
        assert [(r["request_id"], r["_topic"]) for r in records] == [(request, dep.assembled)]
        # Deleted once the done marker is durable: two producer drains after it. Nothing else
        # is sent: on an idle partition the sweep (every second here) drains and deletes.
        deadline = time.monotonic() + 45
        while True:
            chunks = _changelog_of(dep, "chunks", prefix)
            if set(stored) <= set(chunks) and all(v is None for v in chunks.values()):
                break
            alive = sorted(k for k, v in chunks.items() if v is not None)
            assert time.monotonic() < deadline, f"chunk keys never deleted: {alive}"
            time.sleep(1)
        assert worker.errors() == [], worker.tail()
    finally:
        worker.stop()
    # Every changelog record names its writer (the toolwire-worker header), this worker.
    for table in ("chunks", "responses"):
        written = writers(asyncio.run(topic_records(kafka_bootstrap,
                                                    f"{dep.name}-{table}-changelog")))
        assert written and set(written) == {worker.name}, (table, written)
    marker = _changelog_of(dep, "responses", request.encode()).get(request.encode())
    assert marker is not None, "no done marker in the responses changelog"
    done = decode_response(marker)
    assert isinstance(done, DoneMarker) and done.outcome == "assembled", done
    # One key per segment written (a later commit may have written more than the first).
    assert done.segments == len(chunks), (done, sorted(chunks))
    # The changelogs the worker created roll their segments and bound their tombstones, so
    # that the broker compacts them (Kafka's defaults never would in practice).
    wanted = {"cleanup.policy": "compact", "segment.ms": "600000", "segment.bytes": "67108864",
              "delete.retention.ms": "3600000"}
    changelogs = [f"{dep.name}-{t}-changelog" for t in ("chunks", "responses", "quarantine")]
    configs = asyncio.run(_configs_of(kafka_bootstrap, changelogs, list(wanted)))
    assert configs == dict.fromkeys(changelogs, wanted), configs


async def _configs_of(bootstrap: str, topics: list[str],
                      wanted: list[str]) -> dict[str, dict[str, str]]:
    async with open_client(AIOKafkaAdminClient, bootstrap, start_timeout=30) as admin:
        return await topic_configs(admin, topics, wanted)


def test_cli_release_and_consume(deployment: tuple[Deployment, Worker]) -> None:
    """``toolwire dlq release`` and ``toolwire consume`` as an operator runs them."""
    dep, _ = deployment
    got = run(dep, request_chunks("cli-s", "cli-r1", slices(BROKEN, 40)), until=1)
    assert got["cli-r1"][0]["reason"] == "missing_identity"
    released = subprocess.run([sys.executable, "-m", "toolwire.cli", "dlq", "release", "cli-s"],
                              env=dep.env(), capture_output=True, text=True, timeout=60,
                              check=False)
    assert released.returncode == 0, released.stderr
    assert "release of session cli-s sent" in released.stdout
    got = run(dep, request_chunks("cli-s", "cli-r2", slices(GOOD, 40)), until=1)
    assert got["cli-r2"][0]["_topic"] == dep.assembled  # the release was applied first
    consumed = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "consume", "assembled", "--from-beginning",
         "--idle-timeout", "3"], env=dep.env(), capture_output=True, text=True, timeout=60,
        check=False)
    assert consumed.returncode == 0, consumed.stderr
    lines = [json.loads(line) for line in consumed.stdout.splitlines()]
    mine = [r for r in lines if r.get("request_id") == "cli-r2"]
    assert len(mine) == 1
    assert mine[0]["_kafka"]["topic"] == dep.assembled
    assert mine[0]["_kafka"]["headers"]["idempotency-key"] == idempotency_key("cli-r2")
    assert "record(s) from" in consumed.stderr
