"""Table values: every type round-trips through its codec, older formats are still read, and a
newer format is refused with a message instead of being misread."""

from __future__ import annotations

import tracemalloc
import zlib
from dataclasses import replace

import orjson
import pytest

from tests.stream.test_processor import GOOD, World
from toolwire.core.wires import SUPPORTED_WIRES
from toolwire.core.wires.chat_completions import ChatCompletions
from toolwire.stream.state import (
    VERSION,
    DoneMarker,
    OpenResponse,
    QuarantineEntry,
    Segment,
    StateError,
    StoredChunk,
    decode_chunk,
    decode_quarantine,
    decode_response,
    decode_segment,
    encode_chunk,
    encode_quarantine,
    encode_response,
    encode_segment,
)

OPEN = OpenResponse(session="s1", partition=3, provider="deepseek", model=None,
                    tools=("a", "b"), first_offset=17, opened=1700000000.5)
DONE = DoneMarker(done=1700000001.25, partition=3, outcome="dead_letter")


@pytest.mark.parametrize("state", [OPEN, DONE, OpenResponse("s", 0, None, None, None, 0, 0.0)])
def test_response_states_round_trip(state: OpenResponse | DoneMarker) -> None:
    assert decode_response(encode_response(state)) == state


@pytest.mark.parametrize("chunk", [StoredChunk.of(b""), StoredChunk.of(b"\x00\x02data"),
                                   StoredChunk.skipped(0), StoredChunk.skipped(123456)])
def test_stored_chunks_round_trip(chunk: StoredChunk) -> None:
    assert decode_chunk(encode_chunk(chunk)) == chunk


@pytest.mark.parametrize("segment", [
    Segment(0, ()), Segment(7, (StoredChunk.of(b""), StoredChunk.of(b"\x03data\n\n"))),
    Segment(2, (StoredChunk.of(b"ab"), StoredChunk.skipped(0), StoredChunk.skipped(99999)))])
def test_segments_round_trip(segment: Segment) -> None:
    assert decode_segment(encode_segment(segment)) == segment


@pytest.mark.parametrize("raw", [b"", b"\x01body", b"\x03\x00\x00\x00\x05[1,2]",
                                 b"\x03\x00\x00\x00\x07[0,5,1]ab",
                                 b"\x03\x00\x00\x00\x08[0,-1,0]", b"\x03\x00\x00\x00\x02{}"])
def test_unreadable_segments_raise_a_state_error(raw: bytes) -> None:
    with pytest.raises(StateError):
        decode_segment(raw)


def test_large_segments_are_compressed_and_round_trip() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hello"}}]}\n\n' * 40
    segment = Segment(3, (StoredChunk.of(body), StoredChunk.skipped(7), StoredChunk.of(b"x")))
    raw = encode_segment(segment)
    assert raw[:1] == b"\x04" and len(raw) < len(body) // 4
    assert decode_segment(raw) == segment


@pytest.mark.parametrize("raw", [b"\x04not zlib", b"\x04" + zlib.compress(b"\x00" * 64)[:-3],
                                 b"\x04" + zlib.compress(b"\x00\x00\x00\x03[0]junk")])
def test_unreadable_compressed_segments_raise_a_state_error(raw: bytes) -> None:
    with pytest.raises(StateError):
        decode_segment(raw)


def test_table_values_kept_in_memory_are_their_own_size() -> None:
    """``orjson.dumps`` returns bytes that keep its whole 4 KiB write buffer: stored as they
    are, an hour of done markers would cost 4 KiB each."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [encode_response(DoneMarker(float(i), 1, "assembled")) for i in range(1000)]
        per_value = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_value < 512, per_value


def test_open_response_round_trips_and_an_earlier_releases_identity_is_ignored() -> None:
    state = OpenResponse("s", 1, None, None, None, 0, 0.0, stored=4, segments=2,
                         wire="anthropic-messages")
    written = encode_response(state)
    assert decode_response(written) == state
    assert b"identity" not in written  # read by no code: no longer written at every flush
    earlier = orjson.loads(written)
    earlier["identity"] = {"0:0": ["call_1", None], "0:1": [None, "f"]}
    assert decode_response(orjson.dumps(earlier)) == state


def test_quarantine_entries_round_trip() -> None:
    entry = QuarantineEntry(reason="sequence_gap", request_id=None, since=5.5)
    assert decode_quarantine(encode_quarantine(entry)) == entry


def test_the_kind_does_not_depend_on_key_order() -> None:
    reordered = orjson.dumps({"outcome": "assembled", "partition": 1, "k": "done",
                              "done": 2.0, "v": VERSION})
    assert decode_response(reordered) == DoneMarker(2.0, 1, "assembled")


def test_values_of_the_unversioned_release_are_read() -> None:
    """What the release before versioned formats wrote (still in changelogs) reads the same."""
    assert decode_response(orjson.dumps({
        "session": "s1", "partition": 3, "provider": "deepseek", "model": None,
        "tools": ["a", "b"], "first_offset": 17, "opened": 1700000000.5})) == OPEN
    assert decode_response(orjson.dumps({"done": 1700000001.25, "partition": 3,
                                         "outcome": "dead_letter"})) == DONE
    assert decode_quarantine(orjson.dumps({"reason": "oversize", "request_id": "r",
                                           "since": 1.0})).reason == "oversize"
    assert decode_chunk(b"\x01body") == StoredChunk.of(b"body")
    assert decode_chunk(b"\x0242") == StoredChunk.skipped(42)


@pytest.mark.parametrize("raw", [
    orjson.dumps({"v": VERSION + 1, "k": "done", "done": 1.0, "partition": 0, "outcome": "x"}),
    orjson.dumps({"v": VERSION, "k": "mystery"}),
    b"not json", b"[]",
])
def test_unreadable_response_values_raise_a_state_error(raw: bytes) -> None:
    with pytest.raises(StateError):
        decode_response(raw)


@pytest.mark.parametrize("raw", [b"", b"\x07abc", b"\x02notanumber"])
def test_unreadable_chunks_raise_a_state_error(raw: bytes) -> None:
    with pytest.raises(StateError):
        decode_chunk(raw)


def test_what_this_release_writes_is_read_back_after_a_restart() -> None:
    world = World()
    half = len(GOOD) // 2
    world.publish("r1", GOOD[:half], end=None, slice_size=half)
    assert isinstance(decode_response(world.responses["r1"]), OpenResponse)
    stored = [c for v in world.chunks.values() for c in decode_segment(v).chunks]
    assert [c.body for c in stored] == [GOOD[:half]]
    world.restart()  # only the tables' bytes survive
    out = world.publish("r1", GOOD[half:], start=1, slice_size=len(GOOD))
    assert len(out) == 1 and world.processor.stats["responses_rebuilt"] == 1
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)
    assert world.chunks == {}


def test_open_responses_are_written_with_their_wire_at_version_3(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert VERSION == 3
    value = orjson.loads(encode_response(OPEN))
    assert (value["v"], value["wire"]) == (3, "openai-chat")
    monkeypatch.setitem(SUPPORTED_WIRES, "test-wire", ChatCompletions)
    other = replace(OPEN, wire="test-wire")
    assert orjson.loads(encode_response(other))["wire"] == "test-wire"
    assert decode_response(encode_response(other)) == other


@pytest.mark.parametrize("version", [0, 1, 2])
def test_an_open_response_of_an_earlier_version_is_read_as_openai_chat(version: int) -> None:
    """Written before wires were named: every body was Chat Completions."""
    value = {"session": "s1", "partition": 3, "provider": "deepseek", "model": None,
             "tools": ["a", "b"], "first_offset": 17, "opened": 1700000000.5}
    if version:
        value.update({"v": version, "k": "open", "stored": 2, "segments": 1})
    state = decode_response(orjson.dumps(value))
    assert isinstance(state, OpenResponse) and state.wire == "openai-chat"
    assert replace(state, stored=None, segments=None) == OPEN


@pytest.mark.parametrize("wire", ["openai-realtime", "auto", "", 7, None])
def test_an_open_response_of_a_wire_this_release_does_not_read_is_refused(wire: object) -> None:
    """A newer release may read more wires without a new format: its open responses are
    refused here, not read as Chat Completions."""
    raw = orjson.dumps({**orjson.loads(encode_response(OPEN)), "wire": wire})
    with pytest.raises(StateError, match="this release does not read"):
        decode_response(raw)
