"""The Bedrock ConverseStream corpus: every capture gives its hand-written record, however read.

``tests/core/corpus_wires/bedrock-converse`` holds raw ``converse-stream`` event-stream bodies
and the records the bedrock-converse wire's rules give them, worked out by hand. Each capture
must give its expected keys; then the record may not depend on the slicing (every cut into two,
one byte at a time, seeded random slicings), nor on the assembler being rebuilt from the slices
stored so far (the worker after a crash); a flipped byte in any message read, in its payload or
either CRC, is a ``malformed_chunk`` dead letter; and ``auto`` reads every body as this wire.
A few hand-made bodies beside the corpus pin what no capture shows: the shapes that are
``malformed_chunk``, identities that are not strings, the exception types and the cut of their
message, the key order of ``reasoning_details``, bodies cut before any message.
(No CRLF test: the body is binary.)
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core import corpus_properties as properties
from tests.core.corpus_properties import one_byte_slices, slicings
from toolwire.core import Options, assemble
from toolwire.core.framing.eventstream import encode_message, error, event, exception
from toolwire.tools.captures import Capture

WIRE = "bedrock-converse"
FOLDER = Path(__file__).parent / "corpus_wires" / WIRE
#: The detail every ``stream_closed`` record of this wire contains.
NO_STOP = "the body ended before messageStop"

CAPTURES = properties.wire_captures(FOLDER)
NAMES = [c.name for c in CAPTURES]


def _auto(capture: Capture) -> Options:
    return replace(capture.options, wire="auto")


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 20, "at least 20 captures for this wire"
    # Every capture is read as this wire and its record says so.
    assert {(c.options.wire, c.expect.get("wire")) for c in CAPTURES} == {(WIRE, WIRE)}
    bodies = {p.suffix for p in FOLDER.iterdir() if p.is_file() and p.suffix != ".json"
              and p.name not in ("_make.py", "README.md")}
    assert bodies == {".eventstream"}


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_each_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert properties.mismatches(capture, record) == {}, capture.description


@pytest.mark.parametrize("capture", [c for c in CAPTURES
                                     if c.expect.get("reason") == "stream_closed"],
                         ids=lambda c: c.name)
def test_a_body_without_its_message_stop_says_so(capture: Capture) -> None:
    assert NO_STOP in assemble(capture.body, capture.options)["detail"]


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_the_record_does_not_depend_on_the_slicing(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    for slicing, pieces in slicings(capture.body, capture.name):
        assert assemble(pieces, capture.options) == whole, slicing


# ``auto`` tells an event-stream body by its framing; a body whose first message is an
# exception carries nothing that tells ConverseStream from InvokeModelWithResponseStream, and
# the rule is that auto reads it as bedrock-converse: every capture, the same record.
@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_auto_reads_the_body_as_bedrock_converse(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    assert assemble(capture.body, _auto(capture)) == whole
    assert assemble(one_byte_slices(capture.body), _auto(capture)) == whole


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_rebuild_from_the_stored_slices_gives_the_same_record(data: st.DataObject) -> None:
    """The worker may crash after any slice: a fresh assembler (and wire) is fed the slices
    stored so far, then the rest. Nothing of the old one may be needed."""
    rebuilt, whole = properties.drawn_rebuild(data, CAPTURES,
                                              lambda c: [c.options, _auto(c)])
    assert rebuilt == whole


def test_the_files_are_what_the_generator_writes() -> None:
    assert properties.off_the_generator(FOLDER, "bedrock_converse_corpus_make",
                                        ".eventstream") == []


# -- a flipped byte ----------------------------------------------------------------------------


def _messages(body: bytes) -> Iterator[tuple[int, int, int]]:
    """Each whole message of ``body``: its offset, total length and headers length (read from
    the preludes; a message the body ends inside is not whole)."""
    offset = 0
    while len(body) - offset >= 12:
        total, headers = struct.unpack_from(">II", body, offset)
        if total < 16 or offset + total > len(body):
            return
        yield offset, total, headers
        offset += total


def _read_messages(capture: Capture) -> list[tuple[int, int, int]]:
    """The messages the wire reads: up to the end (``chunks``) of an assembled record; every
    whole message of a dead letter's body (what follows a fault stays unread after it)."""
    messages = list(_messages(capture.body))
    record = assemble(capture.body, capture.options)
    if record["outcome"] == "assembled":
        return messages[:record["chunks"]]
    return messages


def _flips(capture: Capture) -> Iterator[tuple[str, bytes]]:
    """The body with one byte flipped (xor 0xFF): in each message read, the first, middle and
    last byte of its payload, a byte of its prelude CRC and of its message CRC."""
    for n, (offset, total, headers) in enumerate(_read_messages(capture)):
        start, end = offset + 12 + headers, offset + total - 4
        places = {"prelude CRC": offset + 9, "message CRC": offset + total - 2}
        if end > start:
            places |= {"payload start": start, "payload middle": (start + end) // 2,
                       "payload end": end - 1}
        for where, at in places.items():
            flipped = bytearray(capture.body)
            flipped[at] ^= 0xFF
            yield f"message {n + 1}, {where} (byte {at})", bytes(flipped)


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_a_flipped_byte_in_a_message_read_is_malformed_chunk(capture: Capture) -> None:
    flips = list(_flips(capture))
    assert flips
    for where, body in flips:
        record = assemble(body, capture.options)
        assert (record["outcome"], record.get("reason")) == ("dead_letter", "malformed_chunk"), \
            where


# -- bodies beside the corpus ----------------------------------------------------------------

CONVERSE = Options(wire=WIRE)


def _payload(members: Any) -> bytes:
    return json.dumps(members, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def _event(event_type: str, **members: Any) -> bytes:
    return event(event_type, _payload({**members, "p": "abcd"}))


START = _event("messageStart", role="assistant")
END_TURN = _event("messageStop", stopReason="end_turn")
TOOL_USE = _event("messageStop", stopReason="tool_use")
META = _event("metadata", usage={"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
              metrics={"latencyMs": 10})


def _text(index: int, text: object) -> bytes:
    return _event("contentBlockDelta", contentBlockIndex=index, delta={"text": text})


def _tool_start(index: int, tool_use_id: object, name: object, **extra: object) -> bytes:
    return _event("contentBlockStart", contentBlockIndex=index,
                  start={"toolUse": {"toolUseId": tool_use_id, "name": name, **extra}})


def _input(index: int, fragment: object) -> bytes:
    return _event("contentBlockDelta", contentBlockIndex=index,
                  delta={"toolUse": {"input": fragment}})


def _reasoning(index: int, **member: object) -> bytes:
    return _event("contentBlockDelta", contentBlockIndex=index,
                  delta={"reasoningContent": member})


def _stop(index: int) -> bytes:
    return _event("contentBlockStop", contentBlockIndex=index)


def _raw(event_type: str, payload: bytes) -> bytes:
    return event(event_type, payload)


TEXT = _text(0, "Hi")


def _shown(message: bytes) -> str:
    """A test id: the last message's event type and payload."""
    *_, (offset, total, headers) = _messages(message)
    payload = message[offset + 12 + headers:offset + total - 4]
    return payload.decode(errors="replace")[:70]


@pytest.mark.parametrize("message", [
    _raw("contentBlockDelta", b"{oops"),
    _raw("contentBlockDelta", b"[1]"),
    _raw("contentBlockDelta", b'"text"'),
    _raw("contentBlockDelta", b"1"),
    _raw("contentBlockDelta", b"null"),
    _raw("messageStart", b""),
    _event("contentBlockDelta", contentBlockIndex=-1, delta={"text": "x"}),
    _event("contentBlockDelta", contentBlockIndex=True, delta={"text": "x"}),
    _event("contentBlockDelta", contentBlockIndex="0", delta={"text": "x"}),
    _event("contentBlockDelta", contentBlockIndex=0.0, delta={"text": "x"}),
    _event("contentBlockDelta", delta={"text": "x"}),
    _event("contentBlockStart", contentBlockIndex=None, start={}),
    _event("contentBlockStop", contentBlockIndex=-2),
    _event("contentBlockDelta", contentBlockIndex=0, delta="x"),
    _event("contentBlockDelta", contentBlockIndex=0, delta=["text"]),
    _event("contentBlockStart", contentBlockIndex=1, start="toolUse"),
    _event("contentBlockStart", contentBlockIndex=1, start={"toolUse": "call"}),
    _event("contentBlockStart", contentBlockIndex=1, start={"toolUse": []}),
    _text(0, 7),
    _text(0, None),
    _tool_start(1, "tooluse_a", "f") + _event("contentBlockDelta", contentBlockIndex=1,
                                               delta={"toolUse": "{}"}),
    _tool_start(1, "tooluse_a", "f") + _input(1, 7),
    _tool_start(1, "tooluse_a", "f") + _input(1, None),
    _tool_start(1, "tooluse_a", "f") + _input(1, {"a": 1}),
    # a toolUse delta on a text block (it never had a toolUse start)
    _input(0, '{"a": 1}'),
], ids=lambda message: _shown(message))
def test_a_wrong_shape_is_malformed_chunk(message: bytes) -> None:
    body = START + TEXT + message + END_TURN + META
    for pieces in (body, one_byte_slices(body)):
        record = assemble(pieces, CONVERSE)
        assert (record["outcome"], record.get("reason")) == ("dead_letter", "malformed_chunk")


def test_the_padding_is_ignored() -> None:
    bare = [event("messageStart", _payload({"role": "assistant"})),
            event("contentBlockDelta", _payload({"contentBlockIndex": 0,
                                                 "delta": {"text": "Hi"}})),
            event("messageStop", _payload({"stopReason": "end_turn"}))]
    padded = [START, TEXT, END_TURN]
    without = assemble(b"".join(bare), CONVERSE)
    with_p = assemble(b"".join(padded), CONVERSE)
    assert (without["finish"], without["content"], without["chunks"]) == ("stop", "Hi", 3)
    assert {k: v for k, v in without.items() if k != "bytes"} == {
        k: v for k, v in with_p.items() if k != "bytes"}


@pytest.mark.parametrize(("tool_use_id", "name", "missing"), [
    (7, "f", ["id"]),
    (None, "f", ["id"]),
    ("tooluse_a", 1, ["name"]),
    ("tooluse_a", None, ["name"]),
    ("", "", ["id", "name"]),
], ids=repr)
def test_an_identity_that_is_no_non_empty_string_is_missing(tool_use_id: object, name: object,
                                                            missing: list[str]) -> None:
    body = START + _tool_start(0, tool_use_id, name) + _input(0, "{}") + _stop(0) + TOOL_USE
    record = assemble(body + META, CONVERSE)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "missing_identity")
    assert [c["missing"] for c in record["calls"]] == [missing]


def test_an_absent_identity_is_missing() -> None:
    start = _event("contentBlockStart", contentBlockIndex=0, start={"toolUse": {"name": "f"}})
    record = assemble(START + start + _input(0, "{}") + _stop(0) + TOOL_USE + META, CONVERSE)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "missing_identity")
    assert [(c["id"], c["missing"]) for c in record["calls"]] == [(None, ["id"])]


@pytest.mark.parametrize(("exception_type", "retryable"), [
    ("throttlingException", True),
    ("serviceUnavailableException", True),
    ("internalServerException", True),
    ("modelStreamErrorException", True),
    ("modelTimeoutException", True),
    ("validationException", False),
    ("accessDeniedException", False),
    ("ThrottlingException", False),
])
def test_an_exception_is_a_provider_error(exception_type: str, retryable: bool) -> None:
    body = START + TEXT + exception(exception_type, _payload({"message": "busy"}))
    record = assemble(body, CONVERSE)
    assert record["outcome"] == "assembled"
    assert (record["finish"], record["finish_reason"], record["error_code"],
            record["error_message"], record["retryable"]) == (
        "error", None, exception_type, "busy", retryable)
    assert (record["content"], record["chunks"], record["frames_after_end"]) == ("Hi", 3, 0)


def test_an_exception_message_is_cut_to_1000_characters() -> None:
    long = "é" * 999 + "xyz"
    body = START + exception("throttlingException", _payload({"message": long}))
    assert assemble(body, CONVERSE)["error_message"] == "é" * 999 + "x"


def test_an_exception_withholds_even_an_open_call() -> None:
    body = (START + _tool_start(0, "tooluse_a", "f") + _input(0, '{"a": ')
            + exception("internalServerException", _payload({"message": "boom"})))
    record = assemble(body, CONVERSE)
    assert record["tool_calls"] == []
    assert [(c["id"], c["arguments"], c["arguments_json"])
            for c in record["withheld_tool_calls"]] == [("tooluse_a", '{"a": ', False)]


def test_messages_after_an_exception_or_an_error_are_not_read() -> None:
    junk = _raw("contentBlockDelta", b"not json")
    for end in (exception("throttlingException", _payload({"message": "slow"})),
                error("InternalFailure", "failed")):
        record = assemble(START + TEXT + end + junk + END_TURN + META, CONVERSE)
        assert (record["outcome"], record["finish"]) == ("assembled", "error")
        assert (record["chunks"], record["frames_after_end"]) == (3, 3)


def test_an_error_message_is_not_retryable() -> None:
    record = assemble(START + error("ThrottlingException", "Rate exceeded"), CONVERSE)
    assert (record["finish"], record["error_code"], record["error_message"],
            record["retryable"], record["usage"]) == (
        "error", "ThrottlingException", "Rate exceeded", False, None)


def test_with_metadata_first_the_message_stop_ends_the_body() -> None:
    record = assemble(START + TEXT + META + END_TURN + TEXT + META, CONVERSE)
    assert (record["finish"], record["content"], record["chunks"],
            record["frames_after_end"]) == ("stop", "Hi", 4, 2)
    assert record["usage"] == {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


@pytest.mark.parametrize("body", [
    b"",
    START[:7],
    START + TEXT[:11],
    START + TEXT[:12],
    START + TEXT + END_TURN[:-1],
], ids=["empty", "inside the first prelude", "inside a prelude", "after a prelude",
        "without the last CRC byte"])
def test_a_body_cut_short_is_stream_closed(body: bytes) -> None:
    record = assemble(body, CONVERSE)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "stream_closed")
    assert NO_STOP in record["detail"]


def test_reasoning_details_keep_the_blocks_and_fields_in_arrival_order() -> None:
    body = (START
            + _reasoning(2, signature="sig-b")
            + _reasoning(2, text="second ")
            + _stop(2)
            + _reasoning(0, text="first")
            + _reasoning(0, text=" block")
            + _reasoning(0, signature="sig-a")
            + _stop(0)
            + _reasoning(1, redactedContent="UkVEQUNURUQ=")
            + _stop(1)
            + END_TURN + META)
    record = assemble(body, CONVERSE)
    assert record["reasoning"] == "second first block"
    details = record["choices"][0]["reasoning_details"]
    assert details == [
        {"index": 2, "signature": "sig-b", "text": "second "},
        {"index": 0, "text": "first block", "signature": "sig-a"},
        {"index": 1, "redactedContent": "UkVEQUNURUQ="},
    ]
    assert [list(entry) for entry in details] == [
        ["index", "signature", "text"], ["index", "text", "signature"],
        ["index", "redactedContent"]]


def test_no_reasoning_block_gives_no_reasoning_details() -> None:
    record = assemble(START + TEXT + END_TURN + META, CONVERSE)
    assert "reasoning_details" not in record["choices"][0]
    assert record["reasoning"] is None


def test_a_server_call_without_input_has_empty_arguments() -> None:
    body = (START + _tool_start(0, "tooluse_s", "nova_grounding", type="server_tool_use")
            + _stop(0) + _text(1, "Hi") + END_TURN + META)
    record = assemble(body, CONVERSE)
    assert record["server_tool_calls"] == [{"index": 0, "type": "server_tool_use",
                                            "id": "tooluse_s", "name": "nova_grounding",
                                            "arguments": "", "status": None}]
    # A server call is no client call: end_turn without client calls is stop.
    assert (record["finish"], record["tool_calls"]) == ("stop", [])


def test_image_and_tool_result_deltas_are_ignored() -> None:
    image = _event("contentBlockDelta", contentBlockIndex=1,
                   delta={"image": {"source": {"bytes": "iVBORw0KGgo="}}})
    result = _event("contentBlockDelta", contentBlockIndex=2,
                    delta={"toolResult": [{"text": "42"}]})
    record = assemble(START + TEXT + _stop(0) + image + _stop(1) + result + _stop(2)
                      + END_TURN + META, CONVERSE)
    assert (record["outcome"], record["content"], record["chunks"]) == ("assembled", "Hi", 9)


def test_headers_in_another_order_are_the_same_event() -> None:
    reordered = encode_message({":message-type": "event", ":content-type": "application/json",
                                ":event-type": "contentBlockDelta"},
                               _payload({"contentBlockIndex": 0, "delta": {"text": "Hi"},
                                         "p": "ab"}))
    record = assemble(START + reordered + END_TURN + META, CONVERSE)
    assert (record["finish"], record["content"]) == ("stop", "Hi")
