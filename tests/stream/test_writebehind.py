"""The write-behind cache: what reaches the tables (and so the changelogs) per commit, and that
a crash between two commits loses nothing the input cannot give again."""

from __future__ import annotations

import base64
import random

import pytest

from tests.core.captures import CAPTURES, Capture
from tests.stream.test_processor import GOOD, World, record
from toolwire.config.settings import Settings
from toolwire.core import Options, Provenance, assemble
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_REQUEST_ID,
    Output,
    Sink,
)
from toolwire.stream.state import (
    DoneMarker,
    OpenResponse,
    Segment,
    StateError,
    StoredChunk,
    chunk_key,
    decode_response,
    decode_segment,
    encode_chunk,
    encode_response,
    segment_key,
)
from toolwire.stream.writebehind import WriteBehind

PIECES = [GOOD[i:i + 30] for i in range(0, len(GOOD), 30)]


def send_piece(world: World, request: str, seq: int, session: str = "s1") -> list[Output]:
    return world.send(PIECES[seq], {H_REQUEST_ID: request, H_CHUNK_SEQ: str(seq)}, key=session)


def send_end(world: World, request: str, session: str = "s1") -> list[Output]:
    return world.send(b"", {H_REQUEST_ID: request, H_CHUNK_SEQ: str(len(PIECES)),
                            H_END: "eof"}, key=session)


#: Fields only the pipeline writes (a dead letter's Kafka provenance and raw input copy).
PIPELINE_ONLY = ("provenance", "raw_chunks", "raw_chunks_truncated")


def assert_the_record_assemble_gives(output: Output, body: bytes, request: str = "r1",
                                     session: str = "s1",
                                     options: Options | None = None) -> None:
    """The published record is the whole record ``toolwire assemble`` gives for the body (the
    pipeline seeds synthesized ids with the request id), with the request's own ids; a dead
    letter's raw chunks give the body back, byte for byte."""
    options = options or Options()
    got = record(output)
    expected = assemble(body, options, Provenance(request_id=request, session_id=session))
    sink = Sink.ASSEMBLED if expected["outcome"] == "assembled" else Sink.DEADLETTER
    assert output.sink is sink, request
    if sink is Sink.DEADLETTER:
        raw = got["raw_chunks"]
        assert [c["seq"] for c in raw] == list(range(len(raw))), request
        assert b"".join(base64.b64decode(c["value_b64"]) for c in raw) == body, request
        assert got["raw_chunks_truncated"] is False, request
    for key in PIPELINE_ONLY:
        got.pop(key, None)
    assert got == expected, request


# -- the cache itself -------------------------------------------------------------------------

def test_reads_see_held_writes_and_a_flush_applies_them() -> None:
    table: dict[str, bytes] = {"old": b"1"}
    cache = WriteBehind("t", table)
    cache.put(3, "new", b"2")
    cache.delete(3, "old")
    assert cache.get("new") == b"2" and cache.get("old") is None and "old" not in cache
    assert table == {"old": b"1"} and len(cache) == 1 and sorted(cache.keys()) == ["new"]
    writes = cache.flush()
    assert table == {"new": b"2"}
    assert {(w.partition, w.key, w.value) for w in writes} == {(3, "new", b"2"),
                                                               (3, "old", None)}
    assert cache.flush() == []


def test_a_key_written_and_deleted_between_two_flushes_costs_nothing() -> None:
    table: dict[str, bytes] = {}
    cache = WriteBehind("t", table)
    cache.put(0, "k", b"value")
    cache.put(0, "k", b"latest")
    assert cache.held_bytes == len(b"latest")
    cache.delete(0, "k")
    assert cache.flush() == [] and table == {} and cache.held_bytes == 0


def test_held_writes_of_revoked_partitions_are_dropped() -> None:
    table: dict[str, bytes] = {}
    cache = WriteBehind("t", table)
    cache.put(0, "a", b"x")
    cache.put(1, "b", b"y")
    cache.drop({1})
    cache.flush()
    assert table == {"a": b"x"}


# -- the processor through it -----------------------------------------------------------------

def test_a_response_decided_between_two_commits_writes_only_its_done_marker() -> None:
    world = World(drain=False)
    for seq in range(len(PIECES)):
        send_piece(world, "r1", seq)
    out = send_end(world, "r1")
    assert len(out) == 1
    # The done marker was written through at once; nothing else is left to write.
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)
    assert world.processor.flush() == [] and world.chunks == {}


def test_a_response_spanning_commits_writes_one_segment_per_commit() -> None:
    world = World(drain=False)
    for seq in range(9):  # past the first event, which names the call
        send_piece(world, "r1", seq)
    world.commit()
    state = decode_response(world.responses["r1"])
    assert isinstance(state, OpenResponse)
    assert (state.stored, state.segments) == (9, 1)
    assert list(world.chunks) == [segment_key("r1", 0)]
    assert decode_segment(world.chunks[segment_key("r1", 0)]) == Segment(
        0, tuple(StoredChunk.of(p) for p in PIECES[:9]))
    for seq in range(9, 11):
        send_piece(world, "r1", seq)
    world.commit()
    state = decode_response(world.responses["r1"])
    assert isinstance(state, OpenResponse) and (state.stored, state.segments) == (11, 2)
    assert decode_segment(world.chunks[segment_key("r1", 1)]).first == 9


def test_a_crash_between_commits_loses_nothing_the_input_gives_again() -> None:
    """The offsets after the last commit are read again: chunks held then are re-applied,
    chunks flushed before are skipped as duplicates."""
    world = World(drain=False)
    for seq in range(3):
        send_piece(world, "r1", seq)
    world.commit()  # offsets of chunks 0-2 committed
    for seq in range(3, len(PIECES)):
        send_piece(world, "r1", seq)
    world.restart()  # chunks 3.. were only held: lost with the process
    for seq in range(3, len(PIECES)):  # re-read from the committed offset
        send_piece(world, "r1", seq)
    out = send_end(world, "r1")
    assert len(out) == 1 and world.processor.stats["responses_rebuilt"] == 1
    assert_the_record_assemble_gives(out[0], GOOD)


def test_a_crash_after_a_flush_ahead_of_the_commit_skips_what_was_stored() -> None:
    """A flush may store chunks whose offsets are not committed yet (a timer flush, or the
    cache bound): re-read after a crash, they are skipped by sequence number."""
    world = World(drain=False)
    for seq in range(4):
        send_piece(world, "r1", seq)
    world.processor.flush()
    world.restart()
    for seq in range(len(PIECES)):
        send_piece(world, "r1", seq)
    out = send_end(world, "r1")
    assert world.processor.stats["duplicates_skipped"] == 4
    assert len(out) == 1
    assert_the_record_assemble_gives(out[0], GOOD)


def test_open_responses_of_the_per_chunk_release_are_rebuilt_and_rewritten() -> None:
    """Values of the release that stored one key per chunk (still in changelogs after an
    upgrade) are read, rewritten as a segment, and their keys deleted once that is durable."""
    world = World(drain=False)
    for seq in range(3):
        world.chunks[chunk_key("r1", seq)] = encode_chunk(StoredChunk.of(PIECES[seq]))
    world.responses["r1"] = encode_response(OpenResponse(
        session="s1", partition=0, provider=None, model=None, tools=None, first_offset=1,
        opened=1.0))
    world.restart()
    send_piece(world, "r1", 3)
    world.commit()
    assert segment_key("r1", 0) in world.chunks and chunk_key("r1", 0) in world.chunks
    world.commit()
    assert list(world.chunks) == [segment_key("r1", 0)]
    for seq in range(4, len(PIECES)):
        send_piece(world, "r1", seq)
    out = send_end(world, "r1")
    assert len(out) == 1
    assert_the_record_assemble_gives(out[0], GOOD)
    world.commit()
    world.commit()
    world.commit()
    assert world.chunks == {}  # a drain that began after the done marker has completed


def test_a_segment_lost_with_its_uncommitted_flush_is_read_again_from_the_input() -> None:
    """A flush writes a response's new segment and its metadata to two changelogs; a worker
    that stopped before the commit after it (a crash, a publish fault, the zombie fence) can
    leave the metadata durable and the segment not. Its chunks came from input never
    committed: the restarted worker rebuilds the response from the segments before it and
    takes those chunks from the input again (was: a ``StateError``, and the response an
    ``internal_error`` dead letter)."""
    world = World(drain=False)
    for seq in range(3):
        send_piece(world, "r1", seq)
    world.commit()  # offsets of chunks 0-2 committed, segment 0
    for seq in range(3, 6):
        send_piece(world, "r1", seq)
    world.processor.flush()  # segment 1 and metadata (2 segments) written, never committed
    del world.chunks[segment_key("r1", 1)]  # the segment's write was lost, the metadata's not
    state = decode_response(world.responses["r1"])
    assert isinstance(state, OpenResponse) and state.segments == 2
    world.restart()
    for seq in range(3, len(PIECES)):  # re-read from the committed offset
        send_piece(world, "r1", seq)
    out = send_end(world, "r1")
    assert world.processor.stats["state_segments_reread"] == 1
    assert world.processor.stats["duplicates_skipped"] == 0
    assert len(out) == 1
    assert_the_record_assemble_gives(out[0], GOOD)


def test_a_missing_segment_whose_chunks_do_not_come_again_is_a_sequence_gap() -> None:
    """A segment missing with its input committed (which the commit's order rules out) is
    not a silent gap either: the next chunk finds the hole, and the response is a
    ``sequence_gap`` dead letter that names it."""
    world = World(drain=False)
    for seq in range(3):
        send_piece(world, "r1", seq)
    world.commit()
    del world.chunks[segment_key("r1", 0)]
    world.restart()
    out = send_piece(world, "r1", 3)
    assert len(out) == 1 and out[0].sink is Sink.DEADLETTER
    letter = record(out[0])
    assert letter["reason"] == "sequence_gap", letter
    assert "expected chunk 0, got chunk 3" in letter["detail"]


def test_a_segment_that_does_not_follow_the_one_before_is_a_state_error() -> None:
    world = World(drain=False)
    for seq in range(3):
        send_piece(world, "r1", seq)
    world.commit()
    for seq in range(3, 5):
        send_piece(world, "r1", seq)
    world.commit()
    world.chunks[segment_key("r1", 1)] = world.chunks[segment_key("r1", 0)]  # starts at 0
    world.restart()
    with pytest.raises(StateError, match="segment 1 of 2"):
        world.processor.rebuild("r1", decode_response(world.responses["r1"]))  # type: ignore[arg-type]


def test_the_cache_bound_is_reported() -> None:
    world = World(settings=Settings(state_cache_bytes=64), drain=False)
    send_piece(world, "r1", 0)
    assert not world.processor.cache_full
    send_piece(world, "r1", 1)
    send_piece(world, "r1", 2)
    assert world.processor.cache_full
    world.processor.flush()
    assert not world.processor.cache_full and world.processor.store.unflushed_bytes == 0


#: The corpus by the worker setting it needs: strict mode, id synthesis and the end without
#: [DONE] are a worker's settings; declared tools travel in a header of each request.
WORKERS: dict[str, tuple[Settings, list[Capture]]] = {
    "lenient": (Settings(stream_ttl_seconds=60, dedupe_window_seconds=600),
                [c for c in CAPTURES if not c.options.strict and not c.options.synthesize_ids
                 and not c.options.end_without_done]),
    "strict": (Settings(strict=True, stream_ttl_seconds=60, dedupe_window_seconds=600),
               [c for c in CAPTURES if c.options.strict]),
    "synthesizing": (Settings(synthesize_ids="*", stream_ttl_seconds=60,
                              dedupe_window_seconds=600),
                     [c for c in CAPTURES if c.options.synthesize_ids]),
    "ending": (Settings(end_without_done="*", stream_ttl_seconds=60,
                        dedupe_window_seconds=600),
               [c for c in CAPTURES if c.options.end_without_done]),
}


def test_every_capture_runs_under_one_of_the_workers() -> None:
    assert sorted(c.name for _, captures in WORKERS.values() for c in captures) == sorted(
        c.name for c in CAPTURES)
    assert all(captures for _, captures in WORKERS.values())


@pytest.mark.parametrize("worker", sorted(WORKERS))
def test_changelog_writes_per_input_message_at_interleaved_traffic(worker: str) -> None:
    """Many responses interleaved, a commit every 200 messages (Faust commits every 2.8 s):
    table writes per input message stay far under one, and every record is right: the whole
    record ``toolwire assemble`` gives for its body."""
    settings, usable = WORKERS[worker]
    rng = random.Random(7)
    world = World(settings=settings, drain=False)
    streams = []
    for n in range(max(60, 2 * len(usable))):  # every capture, at least twice
        capture = usable[n % len(usable)]
        pieces = [capture.body[i:i + 24] for i in range(0, len(capture.body), 24)]
        streams.append((f"r{n}", f"s{n}", pieces, capture))
    cursor = {name: 0 for name, *_ in streams}
    open_ = list(streams[:8])
    waiting = list(streams[8:])
    messages = 0
    outputs: dict[str, list[Output]] = {}
    while open_:
        i = rng.randrange(len(open_))
        name, session, pieces, capture = open_[i]
        seq = cursor[name]
        headers = {H_REQUEST_ID: name, H_CHUNK_SEQ: str(seq)}
        tools = capture.options.declared_tools
        if tools is not None:
            headers[H_DECLARED_TOOLS] = ",".join(sorted(tools))
        if seq == len(pieces):
            headers[H_END] = "eof"
        outputs.setdefault(name, []).extend(world.send(
            pieces[seq] if seq < len(pieces) else b"", headers, key=session))
        messages += 1
        cursor[name] += 1
        if seq == len(pieces):
            open_[i] = open_[-1]
            open_.pop()
            if waiting:
                open_.append(waiting.pop(0))
        if messages % 200 == 0:
            world.commit()
    world.processor.flush()
    writes = world.processor.stats["state_writes"]  # what the flushes wrote, all together
    assert sorted(outputs) == sorted(name for name, *_ in streams)
    for name, session, _, capture in streams:
        assert len(outputs[name]) == 1, name
        assert_the_record_assemble_gives(outputs[name][0], capture.body, name, session,
                                         capture.options)
    assert writes / messages < 0.2, (writes, messages)


def test_a_crash_right_after_publishing_publishes_nothing_again() -> None:
    """The done marker is not held to the next commit: a crash right after the record is
    published (offsets not committed) finds it, and the replayed chunks publish nothing."""
    world = World(drain=False)
    for seq in range(len(PIECES)):
        send_piece(world, "r1", seq)
    assert len(send_end(world, "r1")) == 1
    world.restart()  # no commit since the response opened
    for seq in range(len(PIECES)):
        assert send_piece(world, "r1", seq) == []
    assert send_end(world, "r1") == []
    assert world.processor.stats["late_after_decision"] == len(PIECES)
