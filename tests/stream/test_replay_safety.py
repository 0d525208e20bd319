"""What a dead letter must keep so that its replay is judged as the original was, and what a
malformed message does to the response it names (spec §4, §5).

- Every dead letter records the request's declared tools: a replay that lacked them would skip
  the declared-tools check and publish an undeclared call as executable.
- A malformed message whose request id names an open response fails that response at once
  (one ``malformed_message`` dead letter with its raw chunks), instead of leaving it open for
  the TTL and then dead-lettering it a second time as ``stream_abandoned``.
- Id synthesis (``TOOLWIRE_SYNTHESIZE_IDS``) is seeded by the request id, so a response rebuilt
  after a crash gets the ids it would have got without the crash.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from unittest.mock import patch

from jsonschema import Draft202012Validator

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import GOOD, World, record
from toolwire.config.settings import Settings
from toolwire.core import Options, Provenance, assemble
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_PROVIDER,
    H_REQUEST_ID,
    MAX_TOOLS_BYTES,
    InputMessage,
    Sink,
)
from toolwire.stream.processor import Processor
from toolwire.stream.state import DoneMarker, OpenResponse, decode_response
from toolwire.tools.topics import load_contracts

#: A call whose chunks never carry an id (Ollama, some vLLM and LM Studio builds).
NO_ID = body(chunk(call(0, name="get_weather", arguments='{"city":')),
             chunk(call(0, arguments='"Paris"}'), finish="tool_calls"))
#: Two calls of one name at one wire index, neither with an id: split only under synthesis.
SAME_NAME_TWICE = body(chunk(call(0, name="read_file", arguments='{"path":"a"}')),
                       chunk(call(0, name="read_file", arguments='{"path":"b"}')),
                       chunk(finish="tool_calls"))


def pieces(data: bytes, size: int = 40) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def raw_of(letter: dict[str, object]) -> list[tuple[int, bytes]]:
    chunks = letter["raw_chunks"]
    assert isinstance(chunks, list)
    return [(c["seq"], base64.b64decode(c["value_b64"])) for c in chunks]


def synthesized(request_id: str, choice: int = 0, index: int = 0) -> str:
    """The id the spec gives a call without one (§4), computed here independently."""
    seed = f"toolwire/call-id/{request_id}/{choice}/{index}".encode()
    return "call_tw_" + hashlib.sha256(seed).hexdigest()[:24]


# -- declared tools in every dead letter -----------------------------------------------------

def test_an_unknown_tool_dead_letter_keeps_the_declared_tools_sorted() -> None:
    world = World()
    out = world.publish("r1", GOOD, **{H_DECLARED_TOOLS: "search, read_file"})
    letter = record(out[0])
    assert (out[0].sink, letter["reason"]) == (Sink.DEADLETTER, "unknown_tool")
    assert letter["declared_tools"] == ["read_file", "search"]


def test_every_response_dead_letter_keeps_them_and_null_means_none_declared() -> None:
    world = World()
    out = world.send(GOOD[:40], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0",
                                 H_DECLARED_TOOLS: "get_weather"})
    out += world.send(GOOD[80:], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "2",
                                  H_DECLARED_TOOLS: "get_weather"})
    letter = record(out[0])
    assert (letter["reason"], letter["declared_tools"]) == ("sequence_gap", ["get_weather"])
    undeclared = record(World().publish("r2", GOOD[:60], end="cancelled")[0])
    assert (undeclared["reason"], undeclared["declared_tools"]) == ("stream_closed", None)


def test_a_response_rebuilt_after_a_crash_keeps_its_declared_tools() -> None:
    world = World()
    parts = pieces(GOOD)
    world.send(parts[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0", H_DECLARED_TOOLS: "search"})
    world.restart()
    out = world.publish("r1", b"".join(parts[1:]), start=1)  # later messages without header
    letter = record(out[0])
    assert (letter["reason"], letter["declared_tools"]) == ("unknown_tool", ["search"])
    assert world.processor.stats["responses_rebuilt"] == 1


def test_a_malformed_message_keeps_its_readable_declared_tools() -> None:
    def letter_of(tools: bytes | None) -> dict[str, object]:
        headers = {H_REQUEST_ID: b"r1"}  # no chunk-seq: malformed
        if tools is not None:
            headers[H_DECLARED_TOOLS] = tools
        out = World().processor.handle(InputMessage("llm.sse.chunks", 0, 1, b"s1",
                                                    b"data: {}\n\n", headers))
        assert [o.sink for o in out] == [Sink.DEADLETTER]
        letter = record(out[0])
        assert letter["reason"] == "malformed_message"
        assert [seq for seq, _ in raw_of(letter)] == [-1]  # the message alone
        return letter

    assert letter_of(b"search, read_file")["declared_tools"] == ["read_file", "search"]
    assert letter_of(None)["declared_tools"] is None
    assert letter_of(b"search,\xff")["declared_tools"] is None  # not UTF-8: unreadable
    too_long = letter_of(b"t," * (MAX_TOOLS_BYTES // 2 + 1))
    assert too_long["declared_tools"] is None
    assert "header declared-tools is" in str(too_long["detail"])


def test_an_empty_declared_tools_header_is_kept_as_an_empty_list_not_as_none() -> None:
    """An empty header declares no tools (every call is unknown); ``null`` would make a
    replay skip the check."""
    out = World().processor.handle(InputMessage(
        "llm.sse.chunks", 0, 1, b"s1", b"data: {}\n\n",
        {H_REQUEST_ID: b"r1", H_DECLARED_TOOLS: b""}))
    assert record(out[0])["declared_tools"] == []


def test_an_internal_error_before_the_response_opened_keeps_the_message_metadata() -> None:
    world = World()
    with patch.object(Processor, "_open", side_effect=KeyError("bug")):
        out = world.send(GOOD[:40], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0",
                                     H_DECLARED_TOOLS: "search", H_PROVIDER: "vllm"})
    letter = record(out[0])
    assert letter["reason"] == "internal_error"
    assert (letter["declared_tools"], letter["provider"]) == (["search"], "vllm")
    assert raw_of(letter) == [(0, GOOD[:40])]


# -- a malformed message of an open response -------------------------------------------------

def test_a_malformed_message_of_an_open_response_fails_it_at_once() -> None:
    world = World()
    first_event = GOOD.index(b"\n\n") + 2  # the call's name is known after the first message
    parts = [GOOD[:first_event], *pieces(GOOD[first_event:])]
    first = world.send(parts[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0",
                                  H_DECLARED_TOOLS: "get_weather"})
    bad = world.send(parts[1], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(10**30)})
    assert first == [] and [o.sink for o in bad] == [Sink.DEADLETTER]
    letter = record(bad[0])
    assert (letter["reason"], letter["request_id"]) == ("malformed_message", "r1")
    assert "chunk-seq" in letter["detail"] and "open response" in letter["detail"]
    assert letter["declared_tools"] == ["get_weather"]
    assert letter["calls"][0]["name"] == "get_weather"  # a response dead letter, not a message's
    assert raw_of(letter) == [(0, parts[0]), (1, parts[1])]  # replayable as the whole body
    assert letter["provenance"]["first_offset"] == 1
    assert letter["provenance"]["last_offset"] == 2
    assert "s1" in world.quarantine
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)
    assert world.chunks == {}
    # The rest of the request comes after the decision: ignored and counted.
    rest = [o for seq, part in enumerate(parts[2:], 2)
            for o in world.send(part, {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(seq)})]
    rest += world.send(b"", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(len(parts)), H_END: "eof"})
    assert rest == []
    assert world.processor.stats["late_after_decision"] == len(parts) - 2
    assert world.processor.stats["end_after_decision"] == 1
    # Nothing is left open for the sweep: no stream_abandoned one TTL later.
    world.clock.now += 3600
    assert world.sweep() == []


def test_a_malformed_message_of_a_response_open_in_the_tables_fails_it_too() -> None:
    world = World()
    parts = pieces(GOOD)
    world.send(parts[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    world.send(parts[1], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "1"})
    world.restart()  # memory lost: the response is open only in the tables
    bad = world.send(parts[2], {H_REQUEST_ID: "r1"}, key="s1")  # no chunk-seq
    assert [record(o)["reason"] for o in bad] == ["malformed_message"]
    assert raw_of(record(bad[0])) == [(0, parts[0]), (1, parts[1]), (2, parts[2])]
    assert world.processor.stats["responses_rebuilt"] == 1
    assert world.processor.stats["malformed_messages"] == 1
    world.clock.now += 3600
    assert world.sweep() == []


def test_a_malformed_message_of_a_decided_response_is_dead_lettered_alone() -> None:
    world = World()
    assert [o.sink for o in world.publish("r1", GOOD)] == [Sink.ASSEMBLED]
    bad = world.send(b"data: late\n\n", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "x"})
    letter = record(bad[0])
    assert letter["reason"] == "malformed_message"
    assert raw_of(letter) == [(-1, b"data: late\n\n")]
    assert "calls" in letter and letter["calls"] == []
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)


def test_a_malformed_message_of_a_pending_response_is_dead_lettered_alone() -> None:
    world = World()
    parts = pieces(GOOD)
    for seq, part in enumerate(parts):
        world.send(part, {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(seq)})
    end = InputMessage("llm.sse.chunks", 0, 99, b"s1", b"",
                       {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: str(len(parts)).encode(),
                        H_END: b"eof"})
    decided = world.processor.handle(end)  # not yet published: pending
    assert [o.sink for o in decided] == [Sink.ASSEMBLED]
    bad = world.processor.handle(InputMessage("llm.sse.chunks", 0, 100, b"s1", b"x",
                                              {H_REQUEST_ID: b"r1"}))
    assert [(o.sink, raw_of(record(o))) for o in bad] == [(Sink.DEADLETTER, [(-1, b"x")])]
    world.deliver(decided)  # the record still settles the response
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)


def test_an_unreadable_table_state_still_gives_one_dead_letter_for_the_message() -> None:
    world = World()
    world.send(GOOD[:40], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    world.restart()
    assert isinstance(decode_response(world.responses["r1"]), OpenResponse)
    world.responses["r1"] = b"\xffnot a state"
    bad = world.send(b"x", {H_REQUEST_ID: "r1"})
    assert [(record(o)["reason"], raw_of(record(o))) for o in bad] == [
        ("malformed_message", [(-1, b"x")])]
    assert world.processor.stats["internal_errors"] == 1


def test_a_malformed_message_with_an_unreadable_request_id_touches_no_response() -> None:
    world = World()
    world.send(GOOD[:40], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    out = world.processor.handle(InputMessage("llm.sse.chunks", 0, 9, b"s1", b"x",
                                              {H_REQUEST_ID: b"r1\xff", H_CHUNK_SEQ: b"1"}))
    assert [record(o)["request_id"] for o in out] == [None]
    assert "r1" in world.processor.live  # still open, still assembling
    assert "s1" in world.processor.store.quarantine  # its session (the key) is held, as before


# -- id synthesis -------------------------------------------------------------------------

def test_synthesized_ids_are_seeded_by_the_request_id() -> None:
    world = World(settings=Settings(synthesize_ids="*"))
    out = world.publish("r1", NO_ID)
    got = record(out[0])
    assert out[0].sink is Sink.ASSEMBLED, got
    [only] = got["tool_calls"]
    assert only["id"] == synthesized("r1") and only["id_synthesized"] is True
    assert got["repairs"]["ids_synthesized"] == 1
    offline = assemble(NO_ID, Options(synthesize_ids=True), Provenance(request_id="r1"))
    assert offline["outcome"] == "assembled"
    assert got["tool_calls"] == offline["tool_calls"]


def test_synthesized_ids_are_the_same_after_a_crash_mid_stream() -> None:
    settings = Settings(synthesize_ids="*")
    steady = World(settings=settings)
    expected = record(steady.publish("r1", NO_ID)[0])
    world = World(settings=settings)
    parts = pieces(NO_ID)
    world.send(parts[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    world.restart()
    got = record(world.publish("r1", b"".join(parts[1:]), start=1)[0])
    assert world.processor.stats["responses_rebuilt"] == 1
    assert got["tool_calls"] == expected["tool_calls"]
    assert got["tool_calls"][0]["id"] == synthesized("r1")


def test_the_split_rule_of_synthesis_holds_after_a_rebuild_too() -> None:
    """The rebuilt assembler must be built with synthesis on, or it assembles other calls."""
    settings = Settings(synthesize_ids="*")
    for crash in (False, True):
        world = World(settings=settings)
        parts = pieces(SAME_NAME_TWICE, 30)
        world.send(parts[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
        if crash:
            world.restart()
        got = record(world.publish("r1", b"".join(parts[1:]), slice_size=30, start=1)[0])
        assert [c["arguments"] for c in got["tool_calls"]] == ['{"path":"a"}',
                                                               '{"path":"b"}'], crash
        assert [c["id"] for c in got["tool_calls"]] == [synthesized("r1", 0, 0),
                                                        synthesized("r1", 0, 1)], crash
        assert got["repairs"]["index_reuse_splits"] == 1


def test_synthesis_applies_only_to_the_named_providers() -> None:
    world = World(settings=Settings(synthesize_ids="vllm, ollama"))
    chosen = world.publish("r1", NO_ID, session="a", **{H_PROVIDER: "ollama"})
    other = world.publish("r2", NO_ID, session="b", **{H_PROVIDER: "openai"})
    unnamed = world.publish("r3", NO_ID, session="c")
    assert record(chosen[0])["tool_calls"][0]["id"] == synthesized("r1")
    assert [record(o)["reason"] for o in other + unnamed] == ["missing_identity"] * 2
    assert record(other[0])["calls"][0]["missing"] == ["id"]
    assert "id_synthesized" not in record(other[0])["calls"][0]


def test_the_new_dead_letters_match_the_topic_contract() -> None:
    """The dead letters this module makes (a response failed by a malformed message, a
    message's own with its declared tools, an internal error with the message's metadata)
    are what ``topics/llm.toolcalls.deadletter.json`` promises consumers."""
    topics = Path(__file__).resolve().parents[2] / "topics"
    [contract] = [c for c in load_contracts(topics, Settings()) if c.role is Sink.DEADLETTER]
    assert contract.schema is not None
    validator = Draft202012Validator(contract.schema)
    world = World()
    parts = pieces(GOOD)
    world.send(parts[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0", H_DECLARED_TOOLS: "a"})
    letters = world.send(parts[1], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "-1"})
    letters += world.send(b"x", {H_REQUEST_ID: "r2", H_DECLARED_TOOLS: "b, a"}, key="s2")
    with patch.object(Processor, "_open", side_effect=KeyError("bug")):
        letters += world.send(b"y", {H_REQUEST_ID: "r3", H_CHUNK_SEQ: "0",
                                     H_DECLARED_TOOLS: ""}, key="s3")
    letters.append(world.processor.message_failed(InputMessage(
        "llm.sse.chunks", 0, 50, b"s4", b"z", {H_DECLARED_TOOLS: b"c"}), KeyError("bug")))
    got = [record(o) for o in letters]
    assert [(r["reason"], r["declared_tools"]) for r in got] == [
        ("malformed_message", ["a"]), ("malformed_message", ["a", "b"]),
        ("internal_error", []), ("internal_error", ["c"])]
    for letter in got:
        assert [e.message for e in validator.iter_errors(letter)] == [], letter["reason"]
