"""The ``wire`` header of the input contract, end to end without a broker.

Absent, a body is Chat Completions (every body was before the header existed, and the bytes
the publisher and ``dlq replay`` send for it are unchanged); a value this worker does not read
is a ``malformed_message`` saying which header, which value and which names are valid. A named
wire is kept with the open response, so a rebuild reads its stored chunks under it, and in its
dead letter, so a replay sends it again.

With one wire registered, a second one is registered here for the test (``test-wire``: Chat
Completions under a policy where ``length`` may run), so that a body decides differently under
the two wires and losing the wire anywhere on the way changes the outcome.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from tests.app.test_dlq_replay import show
from tests.core.sse import body, call, chunk
from tests.stream.test_processor import BROKEN, GOOD, World, record
from toolwire.core import Options, Provenance, assemble
from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES, UnknownWire
from toolwire.core.wires.chat_completions import ChatCompletions
from toolwire.stream.messages import (
    END_EOF,
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REPLAY_OF,
    H_REQUEST_ID,
    H_WIRE,
    InputMessage,
    RequestMeta,
    Sink,
    read_envelope,
)
from toolwire.stream.state import OpenResponse, decode_response
from toolwire.tools.dlq import NotReplayable, StoredDeadLetter, replay_messages, replay_meta

TEST_WIRE = "test-wire"
TOPIC = "llm.toolcalls.deadletter"
#: One call, ended by ``length``: truncated (the call withheld) under Chat Completions, an
#: executable call under the test wire.
CUT = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
           chunk(call(0, "", "", '"Paris"}'), finish="length"))

#: The registered wires as an error message lists them.
VALID = ", ".join(repr(name) for name in SUPPORTED_WIRES)


class LengthMayRun(ChatCompletions):
    """Chat Completions where a ``length`` finish may run: another decision on one body."""

    __slots__ = ()

    name = TEST_WIRE
    policy = replace(ChatCompletions.policy,
                     finishes={**ChatCompletions.policy.finishes, "length": "tool_calls"})


@pytest.fixture
def test_wire(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(SUPPORTED_WIRES, TEST_WIRE, LengthMayRun)
    return TEST_WIRE


def message(headers: dict[str, bytes], value: bytes = b"", offset: int = 1) -> InputMessage:
    return InputMessage("llm.sse.chunks", 0, offset, b"s1", value,
                        {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: b"0", **headers})


def stored(letter: dict[str, Any]) -> StoredDeadLetter:
    return StoredDeadLetter(partition=0, offset=7, timestamp=0.0,
                            key=letter.get("session_id"), headers={}, record=letter)


def replayed(letter: dict[str, Any], world: World | None = None) -> list[dict[str, Any]]:
    """The records a worker publishes for the replay of ``letter``."""
    key, messages = replay_messages(stored(letter), TOPIC)
    world = world or World()
    outputs = []
    for value, headers in messages:
        world.offset += 1
        outputs += world.deliver(world.processor.handle(InputMessage(
            "llm.sse.chunks", 0, world.offset, key, value, dict(headers))))
    return [record(o) for o in outputs]


# -- the header, read and written -------------------------------------------------------------

def test_without_the_header_a_body_is_openai_chat() -> None:
    assert DEFAULT_WIRE == "openai-chat"
    envelope = read_envelope(message({}))
    assert envelope.fault is None and envelope.wire == "openai-chat"
    world = World()
    half = len(GOOD) // 2
    world.publish("r1", GOOD[:half], end=None, slice_size=half)
    state = decode_response(world.responses["r1"])
    assert isinstance(state, OpenResponse) and state.wire == "openai-chat"
    assert orjson.loads(world.responses["r1"])["wire"] == "openai-chat"  # written, version 3
    out = world.publish("r1", GOOD[half:], start=1, slice_size=len(GOOD))
    assert record(out[0]) == assemble(GOOD, Options(), Provenance(request_id="r1", session_id="s1"))


def test_the_header_naming_the_default_is_the_default() -> None:
    envelope = read_envelope(message({H_WIRE: b"openai-chat"}))
    assert envelope.fault is None and envelope.wire == DEFAULT_WIRE
    plain, named = World(), World()
    assert (record(plain.publish("r1", GOOD)[0])
            == record(named.publish("r1", GOOD, **{H_WIRE: "openai-chat"})[0]))


@pytest.mark.parametrize("value", [b"openai-realtime", b"OPENAI-CHAT", b"", b"\xff\xfe",
                                   b"x" * 5000])
def test_a_wire_this_worker_does_not_read_is_a_malformed_message(value: bytes) -> None:
    fault = read_envelope(message({H_WIRE: value})).fault
    assert fault is not None
    assert fault.startswith("header wire: unknown wire ")
    assert fault.endswith(f"expected one of {VALID}")
    assert len(fault) < 120 + len(VALID)  # the value is quoted bounded, not whole
    if len(value) < 64 and value.isascii():
        assert repr(value.decode()) in fault
    world = World()
    out = world.deliver(world.processor.handle(message({H_WIRE: value}, GOOD)))
    assert [o.sink for o in out] == [Sink.DEADLETTER]
    letter = record(out[0])
    assert letter["reason"] == "malformed_message" and letter["detail"] == fault
    assert letter["raw_chunks"][0]["seq"] == -1
    # The value is kept as sent, and a release that does not read it refuses to replay it
    # rather than replay the body as Chat Completions.
    assert letter["wire"] == (value.decode("utf-8", "replace") if len(value) <= 64
                              else "x" * 64 + "…")
    with pytest.raises(NotReplayable, match="wire"):
        replay_messages(stored(letter), TOPIC)


def test_auto_is_no_wire_for_a_worker() -> None:
    fault = read_envelope(message({H_WIRE: b"auto"})).fault
    assert fault == (f"header wire: unknown wire 'auto': expected one of {VALID} "
                     "(auto is for toolwire assemble: a gateway names the wire it read)")
    with pytest.raises(UnknownWire):
        RequestMeta("r1", wire="auto")


def test_an_unknown_wire_on_a_later_message_fails_the_open_response() -> None:
    world = World()
    half = len(GOOD) // 2
    assert world.publish("r1", GOOD[:half], end=None, slice_size=half) == []
    out = world.send(GOOD[half:], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "1", H_WIRE: "nope"})
    letter = record(out[0])
    assert letter["reason"] == "malformed_message"
    assert letter["detail"].startswith("header wire: unknown wire 'nope'")
    assert [c["seq"] for c in letter["raw_chunks"]] == [0, 1]  # the response, whole
    assert letter["wire"] == "openai-chat"  # the response was read as openai-chat


def test_request_meta_sends_the_header_only_for_another_wire(test_wire: str) -> None:
    chat = RequestMeta("r1", "s1", "deepseek", "m", ["a"])
    assert chat.wire == DEFAULT_WIRE
    assert chat.message_headers(0) == [
        (H_REQUEST_ID, b"r1"), (H_PROVIDER, b"deepseek"), (H_MODEL, b"m"),
        (H_DECLARED_TOOLS, b"a"), (H_CHUNK_SEQ, b"0")]
    other = RequestMeta("r1", "s1", "deepseek", "m", ["a"], wire=test_wire)
    assert other.message_headers(3, END_EOF) == [
        (H_REQUEST_ID, b"r1"), (H_PROVIDER, b"deepseek"), (H_MODEL, b"m"),
        (H_DECLARED_TOOLS, b"a"), (H_WIRE, b"test-wire"), (H_CHUNK_SEQ, b"3"),
        (H_END, b"eof")]
    with pytest.raises(UnknownWire, match=f"expected one of {VALID}, 'test-wire'"):
        RequestMeta("r1", wire="openai-realtime")


# -- kept with the open response --------------------------------------------------------------

def test_the_named_wire_decides(test_wire: str) -> None:
    chat = record(World().publish("r1", CUT)[0])
    assert (chat["outcome"], chat["truncated"], chat["tool_calls"]) == ("assembled", True, [])
    other = record(World().publish("r1", CUT, **{H_WIRE: test_wire})[0])
    assert (other["outcome"], other["truncated"]) == ("assembled", False)
    assert [c["name"] for c in other["tool_calls"]] == ["get_weather"]
    assert other == assemble(CUT, Options(wire=test_wire),
                             Provenance(request_id="r1", session_id="s1"))


def test_a_response_open_across_a_rebuild_keeps_its_wire(test_wire: str) -> None:
    """Only the first message names the wire (the contract reads it from there); after a
    restart the first message is not read again, so the wire comes from the table."""
    world = World()
    half = len(CUT) // 2
    world.publish("r1", CUT[:half], end=None, slice_size=half, **{H_WIRE: test_wire})
    state = decode_response(world.responses["r1"])
    assert isinstance(state, OpenResponse) and state.wire == test_wire
    world.restart()  # only the tables' bytes survive
    out = world.publish("r1", CUT[half:], start=1, slice_size=len(CUT))  # no wire header
    assert world.processor.stats["responses_rebuilt"] == 1
    rebuilt = record(out[0])
    assert (rebuilt["truncated"], len(rebuilt["tool_calls"])) == (False, 1)
    assert rebuilt == record(World().publish("r1", CUT, **{H_WIRE: test_wire})[0])


def test_a_response_stored_by_the_previous_release_is_rebuilt_as_openai_chat(
        test_wire: str) -> None:
    """An open response of state version 2 (no wire field) is Chat Completions: even when
    a later message names another wire, the response goes on as it began."""
    world = World()
    half = len(CUT) // 2
    world.publish("r1", CUT[:half], end=None, slice_size=half)
    value = orjson.loads(world.responses["r1"])
    assert value.pop("wire") == DEFAULT_WIRE
    world.responses["r1"] = orjson.dumps({**value, "v": 2})
    world.restart()
    out = world.publish("r1", CUT[half:], start=1, slice_size=len(CUT), **{H_WIRE: test_wire})
    assert world.processor.stats["responses_rebuilt"] == 1
    assert record(out[0]) == record(World().publish("r1", CUT)[0])  # truncated, as chat


# -- kept in dead letters, and sent back by replays -------------------------------------------

def test_a_chat_dead_letter_names_its_wire_and_its_replay_sends_no_header() -> None:
    letter = record(World().publish("r1", BROKEN)[0])
    assert letter["reason"] == "missing_identity" and letter["wire"] == DEFAULT_WIRE
    _, messages = replay_messages(stored(letter), TOPIC)
    assert all(H_WIRE not in dict(headers) for _, headers in messages)
    assert stored(letter).wire == DEFAULT_WIRE


def test_a_dead_letter_keeps_its_wire_and_the_replay_sends_it_back(test_wire: str) -> None:
    letter = record(World().publish("r1", CUT, **{H_WIRE: test_wire, H_DECLARED_TOOLS: "x"})[0])
    # Under the test wire the cut call may run, so it is checked, and it is not declared.
    assert letter["reason"] == "unknown_tool" and letter["wire"] == test_wire
    assert list(letter).index("wire") == 1  # the decision names it, right after the outcome
    meta = replay_meta(stored(letter), TOPIC)
    assert meta.wire == test_wire
    _, messages = replay_messages(stored(letter), TOPIC)
    assert all(dict(headers)[H_WIRE] == b"test-wire" for _, headers in messages)
    assert messages[0][1] == [(H_REQUEST_ID, meta.request_id.encode()), (H_REPLAY_OF, b"r1"),
                              (H_MODEL, b"test-model"), (H_DECLARED_TOOLS, b"x"),
                              (H_WIRE, b"test-wire"), (H_CHUNK_SEQ, b"0")]
    again = replayed(letter)
    assert [r["reason"] for r in again] == ["unknown_tool"] and again[0]["wire"] == test_wire
    # Replayed without its wire, the same body would come out otherwise (truncated, nothing
    # to check): the wire is what makes the replay the same request.
    lost = {k: v for k, v in letter.items() if k != "wire"}
    assert [(r["outcome"], r.get("truncated")) for r in replayed(lost)] == [("assembled", True)]


def test_a_message_dead_lettered_on_its_own_keeps_its_wire(test_wire: str) -> None:
    world = World()
    bad_seq = InputMessage("llm.sse.chunks", 0, 1, b"s1", CUT,
                           {H_REQUEST_ID: b"r1", H_CHUNK_SEQ: b"one", H_WIRE: b"test-wire"})
    letter = record(world.deliver(world.processor.handle(bad_seq))[0])
    assert letter["reason"] == "malformed_message" and letter["wire"] == test_wire
    last = record(world.processor.message_failed(bad_seq, RuntimeError("simulated")))
    assert last["reason"] == "internal_error" and last["wire"] == test_wire
    _, messages = replay_messages(stored(letter), TOPIC)
    assert {dict(headers).get(H_WIRE) for _, headers in messages} == {b"test-wire"}


def test_a_dead_letter_of_a_wire_this_release_does_not_read_is_not_replayed() -> None:
    letter = {**record(World().publish("r1", BROKEN)[0]), "wire": "openai-realtime"}
    with pytest.raises(NotReplayable, match="'openai-realtime', which this release"):
        replay_messages(stored(letter), TOPIC)
    with pytest.raises(NotReplayable):
        replay_meta(stored({**letter, "wire": 7}), TOPIC)


# -- toolwire dlq show: today's record under the dead letter's wire ---------------------------

def test_show_assembles_under_the_dead_letters_wire(
        test_wire: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    letter = record(World().publish("r1", CUT, **{H_WIRE: test_wire, H_DECLARED_TOOLS: "x"})[0])
    report, err = show(stored(letter), monkeypatch, capsys)
    assert err == "" and report["record_today"]["reason"] == "unknown_tool"
    assert report["replay_would_differ"] is False
    lost, _ = show(stored({k: v for k, v in letter.items() if k != "wire"}), monkeypatch, capsys)
    assert lost["record_today"]["truncated"] is True and lost["replay_would_differ"] is True


def test_show_of_an_unreadable_wire_says_so(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    letter = {**record(World().publish("r1", BROKEN)[0]), "wire": "openai-realtime"}
    report, err = show(stored(letter), monkeypatch, capsys)
    assert report["record_today"] is None and report["replay_would_differ"] is True
    assert "'openai-realtime', which this release does not read" in report["notes"][0]
    assert "a replay is refused" in err
