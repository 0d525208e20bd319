"""Every Anthropic Messages capture gives its hand-written expected record, however it is read.

The expectations (``tests/core/corpus_wires/anthropic-messages``) were written from issue 13's
rules, not from the implementation's output. The properties then say the record cannot depend
on how the body was cut into slices (every cut into two, one byte at a time, random slicings),
on its line ends (CRLF for a capture framed with LF), on the assembler being rebuilt from the
slices stored so far (what the worker does after a crash), nor on the wire being named rather
than detected from the first event (``auto``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core import corpus_properties as properties
from tests.core.corpus_properties import cuts, one_byte_slices, slices, without_bytes
from toolwire.core import Options, assemble
from toolwire.tools.captures import Capture

WIRE = "anthropic-messages"
FOLDER = Path(__file__).parent / "corpus_wires" / WIRE

CAPTURES = properties.wire_captures(FOLDER)
IDS = [c.name for c in CAPTURES]
#: Expectations the code does not meet, each with why (see the corpus README's Decisions).
KNOWN_GAPS: dict[str, str] = {}
EXPECTED = properties.expected_to_fail(CAPTURES, KNOWN_GAPS)


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 15, "issue 13 asks for at least 15 captures per wire"
    assert all(c.options.wire == WIRE for c in CAPTURES)
    assert all(c.expect.get("outcome") in ("assembled", "dead_letter") for c in CAPTURES)


@pytest.mark.parametrize("capture", EXPECTED)
def test_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert properties.mismatches(capture, record) == {}, capture.description


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_every_cut_into_two_gives_the_same_record(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    for cut, pieces in properties.cuts_into_two(capture.body):
        assert assemble(pieces, capture.options) == whole, cut


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_one_byte_slices_give_the_same_record(capture: Capture) -> None:
    assert (assemble(one_byte_slices(capture.body), capture.options)
            == assemble(capture.body, capture.options))


@pytest.mark.parametrize("capture", [c for c in CAPTURES if b"\r" not in c.body],
                         ids=[c.name for c in CAPTURES if b"\r" not in c.body])
def test_crlf_framing_gives_the_same_record(capture: Capture) -> None:
    """The same frames with CRLF line ends (JSON never holds a raw newline): only the body's
    size differs, however the CRLF body is sliced (each "\\r" and "\\n" apart included)."""
    crlf = capture.body.replace(b"\n", b"\r\n")
    whole = without_bytes(assemble(capture.body, capture.options))
    assert without_bytes(assemble(crlf, capture.options)) == whole
    assert without_bytes(assemble(properties.between_cr_and_lf(crlf), capture.options)) == whole


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_auto_detects_the_wire_from_the_first_event(capture: Capture) -> None:
    auto = replace(capture.options, wire="auto")
    whole = assemble(capture.body, capture.options)
    assert assemble(capture.body, auto) == whole
    assert assemble(one_byte_slices(capture.body), auto) == whole


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_slicing_of_any_capture_gives_the_same_record(data: st.DataObject) -> None:
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert assemble(pieces, capture.options) == assemble(capture.body, capture.options)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rebuilding_from_the_stored_slices_anywhere_gives_the_same_record(
        data: st.DataObject) -> None:
    """After every slice the worker may crash: a fresh assembler is fed the slices stored so
    far and goes on with the rest. Nothing of one assembler (nor of its wire) may leak."""
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert (properties.rebuilt_after_every_slice(pieces, capture.options)
            == assemble(capture.body, capture.options))


def test_the_corpus_on_disk_is_what_the_generator_writes() -> None:
    make = properties.generator(FOLDER / "_make.py", "corpus_anthropic_make")
    generated = make.build()
    assert sorted(g.name for g in generated) == sorted(IDS)
    for capture in generated:
        assert make.incomplete(capture) == [], capture.name
        assert (properties.on_disk(FOLDER, capture.name)
                == properties.as_generated(capture)), capture.name
    assert (FOLDER / "README.md").read_text(encoding="utf-8") == make.readme(generated)


# -- shapes the corpus does not hold: wrong types are malformed, never a Python error -----------

ANTHROPIC = Options(wire=WIRE)


def _frames(*events: object) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else orjson.dumps(e)) + b"\n\n"
                    for e in events)


START = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
STOP = {"type": "message_stop"}


@pytest.mark.parametrize("event", [
    b"[1, 2]",
    {"type": 7},
    {"type": "message_start", "message": []},
    {"type": "content_block_start", "index": -1, "content_block": {"type": "text"}},
    {"type": "content_block_start", "index": 0, "content_block": "tool_use"},
    {"type": "content_block_start", "index": 0, "content_block": {"type": None}},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": []}},
    {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "x"}},
    {"type": "content_block_delta", "index": 0, "delta": []},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 1}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": 3}},
    {"type": "message_delta", "delta": {"stop_reason": 1}, "usage": {}},
    {"type": "message_delta", "delta": {}, "usage": [1]},
    {"type": "error", "error": "overloaded"},
])
def test_a_wrong_type_is_a_malformed_chunk(event: object) -> None:
    text = {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                         "text": ""}}
    head = [START, text] if isinstance(event, dict) and "delta" in event else [START]
    record = assemble(_frames(*head, event, STOP), ANTHROPIC)
    assert record["outcome"] == "dead_letter"
    assert record["reason"] == "malformed_chunk", record["detail"]


def test_an_error_event_ends_the_response_even_before_message_start() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    record = assemble(_frames({"type": "ping"}, error, b"not json"), ANTHROPIC)
    assert record["outcome"] == "assembled"
    assert (record["finish"], record["finish_reason"], record["error_code"],
            record["retryable"]) == ("error", "overloaded_error", "OVERLOADED_ERROR", True)


def test_a_server_call_without_deltas_keeps_its_start_input_and_mcp_is_a_server_call() -> None:
    mcp = {"type": "content_block_start", "index": 0, "content_block": {
        "type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search", "server_name": "docs",
        "input": {"q": "ü", "n": 2}}}
    delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}
    record = assemble(_frames(START, mcp, {"type": "content_block_stop", "index": 0}, delta,
                              STOP), ANTHROPIC)
    assert record["outcome"] == "assembled"
    assert record["tool_calls"] == []
    assert record["server_tool_calls"] == [{"index": 0, "type": "mcp_tool_use",
                                            "id": "mcptoolu_1", "name": "search",
                                            "arguments": '{"q":"ü","n":2}', "status": None}]
