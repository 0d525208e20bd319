"""Gemini without ``?alt=sse``: the same chunks as one JSON array give the same record.

``streamGenerateContent`` without ``?alt=sse`` (the REST default, what llm-gemini reads)
streams its chunks as the elements of one JSON array, pretty-printed and separated by
``,\\r\\n``. Every capture of the Gemini corpus whose SSE body is a clean sequence of JSON
chunks is rewritten so, and must give the record its SSE body gives, named and under ``auto``,
however the array is sliced; only ``bytes`` (the body's size) and ``frames_after_end`` (a
gateway's ``[DONE]`` trailer, which an array has no place for) may differ.

A capture is rewritten when its SSE framing is clean: every event is a JSON object or a bare
``[DONE]``, and the body ends on an event boundary. The others (a body cut inside an event,
a malformed payload, an overlong line, the JSON-array capture itself) are about SSE or about
a broken chunk, and have no faithful JSON-array twin.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from tests.core import corpus_properties as properties
from tests.core.corpus_properties import one_byte_slices, slicings
from toolwire.core import Options, assemble
from toolwire.core.framing import Framer
from toolwire.tools.captures import Capture

FOLDER = Path(__file__).parent / "corpus_wires" / "gemini"
#: Keys of the record that may differ between the two framings (see the module docstring).
FRAMING_KEYS = ("bytes", "frames_after_end")


def _chunks(body: bytes) -> list[dict[str, object]] | None:
    """The JSON chunks of an SSE body, or ``None`` when its framing is not clean."""
    framer = Framer(1 << 22, names=False)
    try:
        events = framer.feed(body)
    except Exception:
        return None
    if framer.finish() is not None:
        return None
    chunks = []
    for event in events:
        if bytes(event) == b"[DONE]":
            continue
        try:
            value = orjson.loads(bytes(event))
        except orjson.JSONDecodeError:
            return None
        if type(value) is not dict:
            return None
        chunks.append(value)
    return chunks


def as_json_array(chunks: list[dict[str, object]]) -> bytes:
    """The chunks as the REST endpoint streams them: ``[{…}\\n,\\r\\n{…}\\n]``."""
    elements = [json.dumps(chunk, indent=2, ensure_ascii=False) for chunk in chunks]
    return ("[" + "\n,\r\n".join(elements) + "\n]").encode()


TWINS = [(capture, as_json_array(chunks)) for capture in properties.wire_captures(FOLDER)
         if (chunks := _chunks(capture.body)) is not None]


def _framing_free(record: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in record.items() if k not in FRAMING_KEYS}


def test_most_of_the_corpus_has_a_twin() -> None:
    assert len(TWINS) >= 25


@pytest.mark.parametrize(("capture", "array"), TWINS, ids=[c.name for c, _ in TWINS])
def test_the_json_array_gives_the_record_of_the_sse_body(capture: Capture,
                                                         array: bytes) -> None:
    sse = _framing_free(dict(assemble(capture.body, capture.options)))
    named = dict(assemble(array, capture.options))
    assert _framing_free(named) == sse
    assert named["frames_after_end"] == 0
    assert _framing_free(dict(assemble(array, replace(capture.options, wire="auto")))) == sse


@pytest.mark.parametrize(("capture", "array"), TWINS[::4], ids=[c.name for c, _ in TWINS[::4]])
def test_the_record_does_not_depend_on_how_the_array_is_sliced(capture: Capture,
                                                               array: bytes) -> None:
    whole = assemble(array, capture.options)
    for slicing, pieces in slicings(array, capture.name):
        assert assemble(pieces, capture.options) == whole, slicing
    assert assemble(one_byte_slices(array), replace(capture.options, wire="auto")) == whole


GEMINI = Options(wire="gemini")
CALL = {"candidates": [{"content": {"role": "model", "parts": [
    {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]}, "index": 0}],
    "responseId": "r1", "modelVersion": "gemini-2.5-flash"}
STOP = {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                        "finishReason": "STOP", "index": 0}],
        "responseId": "r1", "modelVersion": "gemini-2.5-flash"}


def test_an_array_cut_before_its_end_is_stream_closed() -> None:
    """Over SSE a body may end after the finish reason; an array has its own end, ``]``:
    one cut before it was cut, whatever the chunks said."""
    whole = as_json_array([CALL, STOP])
    assert assemble(whole, GEMINI)["outcome"] == "assembled"
    for cut in (whole[:-1], whole[:-2], whole[:len(whole) // 2]):
        record = assemble(cut, GEMINI)
        assert (record["outcome"], record["reason"]) == ("dead_letter", "stream_closed")


@pytest.mark.parametrize("body", [
    b"[1, 2]",
    b'[{"candidates": []} {"candidates": []}]',
    b'[{"candidates": []}] trailing',
])
def test_an_array_that_is_no_stream_of_chunks_is_malformed_chunk(body: bytes) -> None:
    for options in (GEMINI, Options(wire="auto")):
        record = assemble(body, options)
        assert (record["outcome"], record["reason"]) == ("dead_letter", "malformed_chunk")


@pytest.mark.parametrize("damage", [b" ", b", 7", b"] trailing"], ids=repr)
def test_the_elements_before_damage_are_read_however_the_array_is_sliced(
        damage: bytes) -> None:
    """A missing comma, an element that is no object, content after the ``]``: the call of
    the element before it is in the dead letter whether the damage shares its slice or not."""
    body = b"[" + json.dumps(CALL).encode() + damage + b" " + json.dumps(STOP).encode() + b"]"
    for options in (GEMINI, Options(wire="auto")):
        whole = assemble(body, options)
        assert (whole["outcome"], whole["reason"]) == ("dead_letter", "malformed_chunk")
        assert [c["name"] for c in whole["calls"]] == ["get_weather"]
        assert assemble(one_byte_slices(body), options) == whole
