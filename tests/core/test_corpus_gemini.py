"""The Gemini corpus: every capture gives its hand-written record, however the body is read.

``tests/core/corpus_wires/gemini`` holds raw ``streamGenerateContent?alt=sse`` bodies and the
records issue 13's rules give them, worked out by hand. Each capture must give its expected
keys; then the record may not depend on the slicing (every cut into two, one byte at a time,
seeded random slicings), on CRLF framing, on the assembler being rebuilt from the slices stored
so far (the worker after a crash), nor on naming the wire rather than letting ``auto`` detect
it from the first chunk. A few hand-made bodies beside the corpus pin what no capture shows:
frames after the end, and the shapes that are ``malformed_chunk``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core import corpus_properties as properties
from tests.core.corpus_properties import cuts, one_byte_slices, slices, slicings, without_bytes
from toolwire.core import Options, assemble
from toolwire.tools.captures import Capture

WIRE = "gemini"
FOLDER = Path(__file__).parent / "corpus_wires" / WIRE
#: Captures the wire cannot meet without the neutral core, and what the core lacks.
BLOCKED: dict[str, str] = {}

CAPTURES = properties.wire_captures(FOLDER)
NAMES = [c.name for c in CAPTURES]


def _auto(capture: Capture) -> Options:
    return replace(capture.options, wire="auto")


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 15, "issue 13 asks for at least 15 captures per wire"
    assert {c.options.wire for c in CAPTURES} == {WIRE}
    assert all(c.expect.get("wire") == WIRE for c in CAPTURES)
    assert set(BLOCKED) <= set(NAMES)


#: The corpus, the captures the core blocks expected to fail (strict: one that passes fails).
UNBLOCKED = properties.expected_to_fail(CAPTURES, BLOCKED)


@pytest.mark.parametrize("capture", UNBLOCKED)
def test_each_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert properties.mismatches(capture, record) == {}, capture.description


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_the_record_does_not_depend_on_the_slicing(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    for slicing, pieces in slicings(capture.body, capture.name):
        assert assemble(pieces, capture.options) == whole, slicing


@pytest.mark.parametrize("capture", CAPTURES, ids=NAMES)
def test_crlf_framing_gives_the_same_record(capture: Capture) -> None:
    """LF line ends turned into CRLF (no payload holds a raw line end), also cut between each
    ``\\r`` and its ``\\n``: the same record but for its byte count. The Gemini API frames
    with CRLF already: its captures are read with LF line ends first."""
    lf = capture.body.replace(b"\r\n", b"\n")
    whole = without_bytes(assemble(capture.body, capture.options))
    assert without_bytes(assemble(lf, capture.options)) == whole
    crlf = lf.replace(b"\n", b"\r\n")
    assert without_bytes(assemble(crlf, capture.options)) == whole
    assert without_bytes(assemble(properties.between_cr_and_lf(crlf), capture.options)) == whole


@pytest.mark.parametrize("capture", UNBLOCKED)
def test_auto_reads_the_body_as_gemini(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    assert assemble(capture.body, _auto(capture)) == whole
    assert assemble(one_byte_slices(capture.body), _auto(capture)) == whole


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_rebuild_from_the_stored_slices_gives_the_same_record(data: st.DataObject) -> None:
    """The worker may crash after any slice: a fresh assembler (and wire) is fed the slices
    stored so far, then the rest. Nothing of the old one may be needed."""
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    options = data.draw(st.sampled_from([capture.options, _auto(capture)]), label="options")
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert properties.rebuilt_after_every_slice(pieces, options) == assemble(capture.body, options)


def test_the_files_are_what_the_generator_writes() -> None:
    make = properties.generator(FOLDER / "_make.py", "gemini_corpus_make")
    for generated in make.build():
        assert make.incomplete(generated) == [], generated.name
        assert (properties.on_disk(FOLDER, generated.name)
                == properties.as_generated(generated)), generated.name


# -- bodies beside the corpus ----------------------------------------------------------------

GEMINI = Options(wire=WIRE)
TEXT = b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}],"responseId":"r1"}\n\n'
STOP = b'data: {"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP"}]}\n\n'
ERROR = b'data: {"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}\n\n'


def test_frames_after_an_error_chunk_are_ignored() -> None:
    record = assemble(TEXT + ERROR + b"data: not json\n\n" + STOP, GEMINI)
    assert record["outcome"] == "assembled"
    assert (record["finish"], record["error_code"], record["retryable"]) == (
        "error", "UNAVAILABLE", True)
    assert record["content"] == "Hi"


def test_frames_after_a_blocked_prompt_are_ignored() -> None:
    blocked = b'data: {"promptFeedback":{"blockReason":"OTHER"}}\n\n'
    record = assemble(blocked + b"data: [1, 2]\n\n", GEMINI)
    assert record["outcome"] == "assembled"
    # Every block reason is a content filter, even one named like the finish reason OTHER.
    assert (record["finish"], record["finish_reason"], record["error_code"]) == (
        "content_filter", "OTHER", "OTHER")


def test_done_ends_the_body_after_a_finish_reason_only() -> None:
    assert assemble(TEXT + STOP + b"data: [DONE]\n\ndata: junk\n\n", GEMINI)["finish"] == "stop"
    assert assemble(TEXT + STOP + b"data: [DONE]", GEMINI)["finish"] == "stop"
    cut = assemble(TEXT + b"data: [DONE]\n\n", GEMINI)
    assert (cut["outcome"], cut["reason"]) == ("dead_letter", "stream_closed")


def test_a_body_cut_inside_its_last_frame_is_stream_closed() -> None:
    record = assemble(TEXT + STOP + TEXT[:-2], GEMINI)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "stream_closed")


def _parts(*parts: object) -> bytes:
    return b"data: " + orjson.dumps({"candidates": [{"content": {"parts": parts}}]}) + b"\n\n"


def test_a_whole_call_is_never_continued_by_a_nameless_part() -> None:
    whole = _parts({"functionCall": {"name": "f", "args": {}}})
    nameless = _parts({"functionCall": {"args": {"a": 1}}})
    record = assemble(whole + nameless + STOP, GEMINI)
    assert record["outcome"] == "dead_letter" and record["reason"] == "missing_identity"
    assert [(c["index"], c["name"], c["arguments"]) for c in record["calls"]] == [
        (0, "f", "{}"), (1, None, '{"a":1}')]


@pytest.mark.parametrize("frame", [
    b"data: {oops\n\n",
    b"data: [1]\n\n",
    b'data: {"candidates":{}}\n\n',
    b'data: {"candidates":[1]}\n\n',
    b'data: {"candidates":[{"index":-1}]}\n\n',
    b'data: {"candidates":[{"content":[]}]}\n\n',
    b'data: {"candidates":[{"content":{"parts":{}}}]}\n\n',
    b'data: {"candidates":[{"content":{"parts":[{"text":1}]}}]}\n\n',
    b'data: {"candidates":[{"content":{"parts":[{"functionCall":[]}]}}]}\n\n',
    b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[]}}]}}]}\n\n',
    b'data: {"candidates":[{"finishReason":1}]}\n\n',
    b'data: {"usageMetadata":[]}\n\n',
    b'data: {"promptFeedback":{"blockReason":3}}\n\n',
    b'data: {"error":"busy"}\n\n',
    b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true,'
    b'"partialArgs":[{"jsonPath":"location","stringValue":"x"}]}}]}}]}\n\n',
    b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true,'
    b'"partialArgs":[{"jsonPath":"$.a[3]","stringValue":"x"}]}}]}}]}\n\n',
], ids=lambda frame: frame[6:40].decode())
def test_a_wrong_shape_is_malformed_chunk(frame: bytes) -> None:
    record = assemble(TEXT + frame + STOP, GEMINI)
    assert (record["outcome"], record["reason"]) == ("dead_letter", "malformed_chunk")
