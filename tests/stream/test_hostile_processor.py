"""The defects hostile input found, each kept fixed: a chunk that makes anything raise fails
its whole response; every record fits the producer's limit; a record is settled only once
published; one bad response cannot stop the sweep; headers are read strictly."""

from __future__ import annotations

import subprocess
import sys
from typing import Any
from unittest.mock import patch

import orjson
import pytest

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import GOOD, World, record
from toolwire.config.settings import Settings
from toolwire.core import assemble
from toolwire.stream.encode import message_size
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_CONTROL,
    H_END,
    H_REQUEST_ID,
    InputMessage,
    Output,
    Sink,
)
from toolwire.stream.processor import Processor
from toolwire.stream.state import (
    DoneMarker,
    OpenResponse,
    decode_response,
    decode_segment,
    segment_key,
)

DEEP = "[" * 300 + "]" * 300
#: ``delete_files {"path":"/data","dry_run":true}`` with a hostile chunk in the middle.
HALVES = (
    body(chunk(call(0, "call_1", "delete_files", '{"path":"/data"')), done=False),
    f'data: {{"x":{DEEP},"choices":[{{"index":0,"delta":5}}]}}\n\n'.encode(),
    body(chunk(call(0, None, None, ',"dry_run":true}'), finish="tool_calls"), done=False),
)
POISONED = b"".join(HALVES) + b"data: [DONE]\n\n"


def test_a_chunk_that_cannot_be_quoted_fails_its_whole_response() -> None:
    world = World()
    outputs: list[Output] = []
    for seq, piece in enumerate(HALVES):
        outputs += world.send(piece, {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(seq)})
    outputs += world.send(b"data: [DONE]\n\n", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "3",
                                               H_END: "eof"})
    assert [o.sink for o in outputs] == [Sink.DEADLETTER]
    letter = record(outputs[0])
    assert letter["reason"] == "malformed_chunk"
    assert "'delta' is not an object" in letter["detail"]
    assert [c["seq"] for c in letter["raw_chunks"]] == [0, 1, 2, 3]
    assert "s1" in world.quarantine
    # Offline, the same record and no exception.
    assert assemble(POISONED)["reason"] == "malformed_chunk"


def test_assemble_prints_a_dead_letter_not_a_traceback() -> None:
    run = subprocess.run([sys.executable, "-m", "toolwire.cli", "assemble", "-", "--compact"],
                         input=POISONED, capture_output=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert b"Traceback" not in run.stderr
    assert orjson.loads(run.stdout)["reason"] == "malformed_chunk"


def test_any_fault_while_applying_a_chunk_fails_the_whole_response() -> None:
    world = World()
    first = world.send(HALVES[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    with patch("toolwire.core.assembly.Assembler._apply", side_effect=RecursionError("deep")):
        second = world.send(HALVES[2], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "1"})
    third = world.send(b"data: [DONE]\n\n", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "2",
                                            H_END: "eof"})
    outputs = first + second + third
    assert [o.sink for o in outputs] == [Sink.DEADLETTER]
    letter = record(outputs[0])
    assert letter["reason"] == "internal_error"
    assert letter["calls"][0]["arguments"] == '{"path":"/data"'  # never published as a call
    assert [c["seq"] for c in letter["raw_chunks"]] == [0, 1, 2]
    assert "s1" in world.quarantine


def test_a_fault_in_the_processor_itself_fails_the_response_and_its_later_chunks() -> None:
    world = World()
    world.send(HALVES[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    with patch.object(Processor, "decide", side_effect=KeyError("bug")):
        out = world.send(HALVES[2] + b"data: [DONE]\n\n",
                         {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "1", H_END: "eof"})
    assert [record(o)["reason"] for o in out] == ["internal_error"]
    assert [c["seq"] for c in record(out[0])["raw_chunks"]] == [0, 1]
    # A replay of the same chunks publishes nothing more.
    assert world.send(HALVES[2], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "1"}) == []


def test_an_oversize_dead_letter_fits_the_producer_limit_with_default_settings() -> None:
    world = World(settings=Settings())
    piece = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 60_000 + b'"}}]}\n\n'
    outputs: list[Output] = []
    for seq in range(300):  # 18 MB: over the 16 MiB response limit
        outputs += world.send(piece, {H_REQUEST_ID: "big", H_CHUNK_SEQ: str(seq)})
    outputs += world.send(b"", {H_REQUEST_ID: "big", H_CHUNK_SEQ: "300", H_END: "eof"})
    assert len(outputs) == 1
    out = outputs[0]
    assert message_size(out.value, out.key, out.headers) <= Settings().max_record_bytes
    letter = record(out)
    assert letter["reason"] == "oversize"
    assert letter["raw_chunks_truncated"] is True
    assert 0 < len(letter["raw_chunks"]) < 300


def test_an_assembled_record_over_the_limit_is_an_oversize_dead_letter_that_fits() -> None:
    world = World(settings=Settings(max_record_bytes=20_000))
    big = body(chunk(call(0, "call_1", "write", '{"text":"' + "y" * 30_000 + '"}'),
                     finish="tool_calls"))
    out = world.publish("r1", big, slice_size=4096)
    assert len(out) == 1 and out[0].sink is Sink.DEADLETTER
    letter = record(out[0])
    assert letter["reason"] == "oversize" and "over TOOLWIRE_MAX_RECORD_BYTES" in letter["detail"]
    assert letter["fields_truncated"] is True and letter["raw_chunks_truncated"] is True
    assert message_size(out[0].value, out[0].key, out[0].headers) <= 20_000


def test_a_record_that_failed_to_publish_is_decided_again_after_a_restart() -> None:
    world = World()
    pieces = [GOOD[i:i + 40] for i in range(0, len(GOOD), 40)]
    for seq, piece in enumerate(pieces):
        world.send(piece, {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(seq)})
    end = InputMessage("llm.sse.chunks", 0, 99, b"s1", b"",
                       {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: str(len(pieces)).encode(),
                        H_END: b"eof"})
    lost = world.processor.handle(end)  # publication fails: never settled
    assert [o.sink for o in lost] == [Sink.ASSEMBLED]
    assert isinstance(decode_response(world.responses["r1"]), OpenResponse)
    world.restart()  # the worker stops without committing; the input is read again
    again = world.publish("r1", GOOD)
    assert [o.sink for o in again] == [Sink.ASSEMBLED]
    assert record(again[0]) == {**record(lost[0])}
    assert world.chunks == {}
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)


def test_one_response_that_fails_its_sweep_does_not_stop_the_others() -> None:
    world = World()
    world.publish("bad", GOOD, end=None, session="s-bad")
    world.publish("good", GOOD, end=None, session="s-good")
    world.clock.now += 61
    real = Processor.decide

    def decide(self: Processor, live: Any) -> Any:
        if live.request_id == "bad":
            raise RecursionError("too deep")
        return real(self, live)

    with patch.object(Processor, "decide", decide):
        out = world.sweep()
    assert sorted((o.sink.value, record(o).get("reason")) for o in out) == [
        ("assembled", None), ("deadletter", "internal_error")]
    assert world.processor.live == {} and world.chunks == {}
    world.clock.now += 61
    assert world.sweep() == []  # nothing left to fail again


@pytest.mark.parametrize("value", [
    "²", "⁰", "1" * 5000, str(10**30), "2147483648", "-1", "+1", " 1", "1 ", "0x1", "", "1.0",
    "\u0661",  # ARABIC-INDIC DIGIT ONE
])
def test_chunk_seq_is_ascii_decimal_within_its_range(value: str) -> None:
    world = World()
    out = world.send(b"data: {}\n\n", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: value})
    assert [(o.sink, record(o)["reason"]) for o in out] == [(Sink.DEADLETTER,
                                                              "malformed_message")]
    assert "chunk-seq" in record(out[0])["detail"]


def test_the_highest_chunk_seq_is_accepted() -> None:
    world = World()
    out = world.send(b"data: {}\n\n", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "2147483647"})
    assert [record(o)["reason"] for o in out] == ["sequence_gap"]


@pytest.mark.parametrize(("key", "headers", "fault"), [
    (b"\xff\xfe", {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: b"0"}, "key is not UTF-8"),
    (b"s1", {H_REQUEST_ID: b"r\xc3", H_CHUNK_SEQ: b"0"}, "request-id is not UTF-8"),
    (b"s1", {H_REQUEST_ID: b"r" * 2000, H_CHUNK_SEQ: b"0"}, "request-id is 2000 bytes"),
    (b"k" * 5000, {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: b"0"}, "key is 5000 bytes"),
    (b"s1", {H_REQUEST_ID: b"", H_CHUNK_SEQ: b"0"}, "empty header request-id"),
    (b"s1", {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: b"0", "model": b"m" * 5000}, "header model"),
])
def test_keys_and_headers_are_bounded_utf8(key: bytes, headers: dict[str, bytes],
                                          fault: str) -> None:
    world = World()
    out = world.processor.handle(InputMessage("llm.sse.chunks", 0, 1, key, b"data: {}\n\n",
                                              headers))
    letter = record(out[0])
    assert letter["reason"] == "malformed_message" and fault in letter["detail"]
    assert message_size(out[0].value, out[0].key, out[0].headers) < 1_000_000


@pytest.mark.parametrize("value", [
    b"", b"[]", b'{"requests": 5}', b'{"requests": [1, 2]}', b'{"requests": [[]]}',
    b'{"requests": ' + DEEP.encode() + b"}", b"\xff", b"null",
])
def test_a_malformed_sweep_message_is_ignored(value: bytes) -> None:
    world = World()
    world.publish("r1", GOOD, end=None)
    msg = InputMessage("llm.sse.chunks", 0, 5, None, value, {H_CONTROL: b"sweep"})
    assert world.processor.handle(msg) == []
    assert world.processor.stats["control_malformed"] == 1
    assert "r1" in world.processor.live


def test_usage_too_deep_to_write_back_is_a_malformed_chunk_not_a_crash() -> None:
    deep_usage = (b'data: {"choices":[],"usage":{"u":' + DEEP.encode() + b"}}\n\n")
    world = World()
    out = world.publish("r1", GOOD.replace(b"data: [DONE]", deep_usage + b"data: [DONE]"))
    letter = record(out[0])
    assert letter["reason"] == "malformed_chunk" and "usage" in letter["detail"]
    assert letter["usage"] is None


@pytest.mark.parametrize("depth", [250, 252, 253, 254, 255])
def test_usage_near_the_writers_depth_limit_gives_the_same_record_offline_and_in_the_cli(
        depth: int) -> None:
    usage = b'{"a":' + b"[" * depth + b"1" + b"]" * depth + b"}"
    data = (b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hi"},'
            b'"finish_reason":"stop"}],"usage":' + usage + b"}\n\ndata: [DONE]\n\n")
    offline = assemble(data)
    run = subprocess.run([sys.executable, "-m", "toolwire.cli", "assemble", "-"],
                         input=data, capture_output=True, timeout=60)
    assert b"Traceback" not in run.stderr
    assert orjson.loads(run.stdout) == offline
    assert run.returncode == (0 if offline["outcome"] == "assembled" else 1)
    world = World()
    out = world.publish("r1", data)
    assert record(out[0])["outcome"] == offline["outcome"]


def test_a_dead_letter_keeps_the_whole_body_for_replay_unless_it_is_too_large() -> None:
    from toolwire.core import Limits

    world = World(settings=Settings(limits=Limits(max_calls=1)))
    two = body(chunk(call(0, "a", "f", "{}")), chunk(call(1, "b", "f", "{}")),
               chunk(finish="tool_calls"))
    out = world.publish("r1", two, slice_size=20)
    letter = record(out[0])
    assert letter["reason"] == "oversize" and letter["raw_chunks_truncated"] is False
    import base64
    assert b"".join(base64.b64decode(c["value_b64"]) for c in letter["raw_chunks"]) == two
    # Past what a dead letter can carry only sizes are kept: the copy stops there, flagged.
    small = World(settings=Settings(deadletter_raw_bytes=100,
                                    limits=Limits(max_response_bytes=100)))
    letter = record(small.publish("r2", two, slice_size=20)[0])
    assert letter["reason"] == "oversize" and letter["raw_chunks_truncated"] is True
    kept = sum(len(base64.b64decode(c["value_b64"])) for c in letter["raw_chunks"])
    assert kept <= 100 + 20  # up to the slice that crossed the bound


def _half_then_rest(world: World, request: str, session: str = "s1") -> list[Output]:
    """Publish ``GOOD`` in two commits: the first half is stored as a segment."""
    pieces = [GOOD[i:i + 40] for i in range(0, len(GOOD), 40)]
    half = len(pieces) // 2
    for seq, piece in enumerate(pieces[:half]):
        world.send(piece, {H_REQUEST_ID: request, H_CHUNK_SEQ: str(seq)}, key=session)
    world.commit()
    return world.publish(request, b"".join(pieces[half:]), start=half, session=session)


def test_stored_chunks_are_deleted_only_after_the_done_marker_is_durable() -> None:
    """The done marker is written at once (not held to the commit: until it is durable a
    crash publishes the response again); the segment goes only after a drain that began after
    the marker. A crash in between keeps both: the replay publishes nothing and finds no gap
    (deleting first and losing the marker made a sequence_gap)."""
    world = World(drain=False)
    out = _half_then_rest(world, "r1")
    assert [o.sink for o in out] == [Sink.ASSEMBLED]
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)  # written through
    world.commit()
    assert world.chunks  # not yet: that drain may have begun before the marker was written
    world.restart()  # a crash here: the input is read again from before the response
    assert world.publish("r1", GOOD) == []
    assert world.processor.stats["late_after_decision"] > 0
    _half_then_rest(world, "r2", session="s2")
    world.commit()
    world.commit()
    world.commit()
    # r2's segment is gone; r1's was forgotten with the crash and goes when its marker expires.
    prefix = segment_key("r1", 0).split(".")[0]
    assert world.chunks and all(key.startswith(prefix) for key in world.chunks)


def test_an_expired_marker_takes_any_leftover_chunks_with_it() -> None:
    world = World(drain=False)
    _half_then_rest(world, "r1")
    world.commit()
    world.restart()  # the deletions were lost with the crash
    assert world.chunks
    world.clock.now += 601
    world.sweep()
    world.commit()
    assert world.chunks == {} and "r1" not in world.responses


def test_an_input_message_too_large_to_store_fails_its_response_not_the_worker() -> None:
    world = World(settings=Settings(max_record_bytes=4096))
    big = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 5000 + b'"}}]}\n\n'
    world.send(GOOD[:40], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    world.send(big, {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "1"})
    stored = [c for v in world.chunks.values() for c in decode_segment(v).chunks]
    assert [c.body is None for c in stored] == [False, True]  # only the size of the big one
    world.restart()  # rebuilt from the tables: the same failure
    out = world.send(b"data: [DONE]\n\n", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "2", H_END: "eof"})
    letter = record(out[0])
    assert letter["reason"] == "oversize" and "smaller slices" in letter["detail"]
    assert letter["bytes"] == 40 + len(big) + len(b"data: [DONE]\n\n")
    assert letter["raw_chunks_truncated"] is True
    assert message_size(out[0].value, out[0].key, out[0].headers) <= 4096


def test_held_writes_of_an_idle_partition_are_flushed_without_a_commit() -> None:
    """The sweep timer flushes too: an idle partition commits nothing, and its stored chunks
    would otherwise wait for its next message to be deleted."""
    world = World(drain=False)
    _half_then_rest(world, "r1")
    world.commit()
    world.commit()
    assert world.chunks  # nothing else arrives on the partition
    world.commit(offsets=False)  # what the worker's sweep timer does
    assert world.chunks == {}
