"""The Ollama chat corpus: every capture gives its hand-written record, however the body is read.

``tests/core/corpus_wires/ollama-chat`` holds raw ``/api/chat`` NDJSON bodies and the records
the ollama-chat wire's rules give them, worked out by hand. Each capture must give its
expected keys; then the record may not depend on the slicing (every cut into two, one byte at
a time, seeded random slicings), on CRLF line ends, nor on the assembler being rebuilt from the
slices stored so far (the worker after a crash). A few hand-made bodies beside the corpus pin
what no capture shows: lines after an error line, a done line without its line end, and the
shapes that are ``malformed_chunk``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core import corpus_properties as properties
from tests.core.corpus_properties import one_byte_slices, slicings, without_bytes
from toolwire.core import Options, assemble
from toolwire.tools.captures import Capture

WIRE = "ollama-chat"
FOLDER = Path(__file__).parent / "corpus_wires" / WIRE
#: The detail every ``stream_closed`` record of this wire starts from.
NO_DONE = "the body ended without a done: true line"

CAPTURES = properties.wire_captures(FOLDER)
NAMES = [c.name for c in CAPTURES]


def _auto(capture: Capture) -> Options:
    return replace(capture.options, wire="auto")


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 15, "at least 15 captures per wire"
    # Every capture is read as this wire and its record says so.
    assert {(c.options.wire, c.expect.get("wire")) for c in CAPTURES} == {(WIRE, WIRE)}


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_each_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert properties.mismatches(capture, record) == {}, capture.description


@pytest.mark.parametrize("capture", [c for c in CAPTURES
                                     if c.expect.get("reason") == "stream_closed"],
                         ids=lambda c: c.name)
def test_a_body_without_its_done_line_says_so(capture: Capture) -> None:
    assert NO_DONE in assemble(capture.body, capture.options)["detail"]


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_the_record_does_not_depend_on_the_slicing(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    for slicing, pieces in slicings(capture.body, capture.name):
        assert assemble(pieces, capture.options) == whole, slicing


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_crlf_line_ends_give_the_same_record(capture: Capture) -> None:
    """Every LF turned into CRLF (no JSON line holds a raw line end), also cut between each
    ``\\r`` and its ``\\n``: the same record but for its byte count."""
    whole = without_bytes(assemble(capture.body, capture.options))
    crlf = capture.body.replace(b"\n", b"\r\n")
    assert without_bytes(assemble(crlf, capture.options)) == whole
    assert without_bytes(assemble(properties.between_cr_and_lf(crlf), capture.options)) == whole


# ``auto`` tells an NDJSON body by its first whole line (Ollama's names ``created_at`` and
# ``done``): the same record as the wire named, however the first line is sliced.
@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_auto_reads_the_body_as_ollama(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    assert assemble(capture.body, _auto(capture)) == whole
    assert assemble(one_byte_slices(capture.body), _auto(capture)) == whole


@pytest.mark.parametrize("body", [
    b'{"error": {"message": "bad key"}}',           # an error body: no line end
    b'{"error": "bad key"}\n',                      # a line no NDJSON wire recognizes
    b'  {"choices": []}\n{"choices": []}\n',         # JSON lines of no wire
    b'{"created_at": "x", "done": tr',               # cut inside the first line
])
def test_auto_keeps_a_json_body_no_ndjson_wire_reads_a_malformed_chunk(body: bytes) -> None:
    for pieces in (body, one_byte_slices(body)):
        record = assemble(pieces, Options(wire="auto"))
        assert (record["outcome"], record["reason"]) == ("dead_letter", "malformed_chunk")
        assert "the body is not SSE (a JSON object" in record["detail"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_rebuild_from_the_stored_slices_gives_the_same_record(data: st.DataObject) -> None:
    """The worker may crash after any slice: a fresh assembler (and wire) is fed the slices
    stored so far, then the rest. Nothing of the old one may be needed."""
    rebuilt, whole = properties.drawn_rebuild(data, CAPTURES,
                                              lambda c: [c.options, _auto(c)])
    assert rebuilt == whole


def test_the_files_are_what_the_generator_writes() -> None:
    assert properties.off_the_generator(FOLDER, "ollama_corpus_make", ".ndjson") == []


# -- bodies beside the corpus ----------------------------------------------------------------

OLLAMA = Options(wire=WIRE)


def _line(message: dict[str, object] | None = None, **fields: object) -> bytes:
    head: dict[str, object] = {"model": "m"}
    if message is not None:
        head["message"] = {"role": "assistant", **message}
    return orjson.dumps({**head, **fields}) + b"\n"


TEXT = _line({"content": "Hi"}, done=False)
DONE = _line({"content": ""}, done=True, done_reason="stop", eval_count=2)
ERROR = b'{"error":"an error was encountered while running the model"}\n'


def _calls(*calls: object) -> bytes:
    return _line({"content": "", "tool_calls": list(calls)}, done=False)


def test_lines_after_an_error_line_are_not_read() -> None:
    record = assemble(TEXT + ERROR + b"not json\n" + DONE, OLLAMA)
    assert record["outcome"] == "assembled"
    assert (record["finish"], record["error_code"], record["retryable"]) == (
        "error", "OLLAMA_ERROR", False)
    assert record["content"] == "Hi"


def test_an_error_that_is_null_is_no_error() -> None:
    record = assemble(TEXT + _line({"content": "!"}, done=False, error=None) + DONE, OLLAMA)
    assert (record["outcome"], record["finish"], record["content"]) == ("assembled", "stop", "Hi!")


def test_blank_lines_are_nothing() -> None:
    record = assemble(b"\n" + TEXT + b"\n \n" + DONE + b"\n", OLLAMA)
    assert (record["finish"], record["content"], record["frames_after_end"]) == ("stop", "Hi", 0)


def test_the_done_line_ends_the_body() -> None:
    assert assemble(TEXT + DONE + b"junk\n" + TEXT, OLLAMA)["frames_after_end"] == 2
    assert assemble(TEXT + DONE + b"junk", OLLAMA)["finish"] == "stop"


def test_a_done_line_without_its_line_end_is_stream_closed() -> None:
    record = assemble(TEXT + DONE.rstrip(b"\n"), OLLAMA)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "stream_closed")
    assert NO_DONE in record["detail"]


def test_null_arguments_are_the_empty_object() -> None:
    record = assemble(_calls({"id": "call_a", "function": {"name": "f", "arguments": None}})
                      + DONE, OLLAMA)
    assert [(c["id"], c["arguments"]) for c in record["tool_calls"]] == [("call_a", "{}")]


@pytest.mark.parametrize("line", [
    b"{oops\n",
    b"[1]\n",
    b'"text"\n',
    b"1\n",
    b"null\n",
    _calls({"id": "call_a", "function": {"name": "f", "arguments": []}}),
    _calls({"id": "call_a", "function": {"name": "f", "arguments": 1}}),
    _calls({"id": "call_a", "function": {"name": "f", "arguments": True}}),
], ids=lambda line: line[:40].decode())
def test_a_wrong_shape_is_malformed_chunk(line: bytes) -> None:
    record = assemble(TEXT + line + DONE, OLLAMA)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "malformed_chunk")


@pytest.mark.parametrize("index", [True, -1, "1", None], ids=repr)
def test_an_index_that_is_no_ordinal_takes_the_next(index: object) -> None:
    line = _calls({"id": "call_a", "function": {"index": index, "name": "f"}},
                  {"id": 7, "function": {"name": "g", "arguments": {}}})
    calls = assemble(line + DONE, OLLAMA)["tool_calls"]
    # An id that is no non-empty string is no id: the wire synthesizes one (seed "").
    assert [(c["index"], c["id"][:8], c.get("id_synthesized", False)) for c in calls] == [
        (0, "call_a", False), (1, "call_tw_", True)]
