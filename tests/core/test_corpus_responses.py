"""Every OpenAI Responses capture gives its hand-written expected record, however it is read.

The expectations (``tests/core/corpus_wires/openai-responses``) were written from issue 13's
rules, not from the wire's output. The properties then say the record depends neither on how
the body was cut into slices (every cut into two, one byte at a time, random slicings), nor on
CRLF framing, nor on the assembler being rebuilt from the slices stored so far (what the worker
does after a crash), nor on naming the wire rather than letting ``auto`` detect it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core import corpus_properties as properties
from tests.core.corpus_properties import cuts, slices, slicings, without_bytes
from toolwire.core import assemble
from toolwire.tools.captures import Capture

WIRE = "openai-responses"
CORPUS = Path(__file__).parent / "corpus_wires" / WIRE
#: Captures whose expectation the neutral core does not meet yet, and what it lacks.
NOT_YET: dict[str, str] = {}

CAPTURES = properties.wire_captures(CORPUS)
IDS = [c.name for c in CAPTURES]


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 15, "issue 13: at least 15 captures per wire"
    assert {c.options.wire for c in CAPTURES} == {WIRE}
    assert all(c.expect.get("outcome") in ("assembled", "dead_letter") for c in CAPTURES)
    assert all(c.expect.get("wire") == WIRE for c in CAPTURES)
    assert set(NOT_YET) <= set(IDS)


@pytest.mark.parametrize("capture", properties.expected_to_fail(CAPTURES, NOT_YET))
def test_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert properties.mismatches(capture, record) == {}, capture.description


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_every_slicing_gives_the_same_record(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    for slicing, pieces in slicings(capture.body, capture.name):
        assert assemble(pieces, capture.options) == whole, slicing


#: The captures framed with LF: each is checked again with every line end as CRLF (one framed
#: with CRLF already is its own check).
LF_FRAMED = [c for c in CAPTURES if b"\r\n" not in c.body]


@pytest.mark.parametrize("capture", LF_FRAMED, ids=[c.name for c in LF_FRAMED])
def test_crlf_framing_gives_the_same_record(capture: Capture) -> None:
    """Every line end as CRLF (JSON payloads hold no raw line end): the same record, but for
    the byte count."""
    whole = assemble(capture.body, capture.options)
    crlf = capture.body.replace(b"\n", b"\r\n")
    assert without_bytes(assemble(crlf, capture.options)) == without_bytes(whole)
    between = properties.between_cr_and_lf(crlf)
    assert without_bytes(assemble(between, capture.options)) == without_bytes(whole)


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_auto_detects_the_wire_from_the_first_event(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    auto = replace(capture.options, wire="auto")
    assert assemble(capture.body, auto) == whole
    for slicing, pieces in slicings(capture.body, capture.name):
        if not slicing.startswith("cut at "):  # every cut into two: named-wire test only
            assert assemble(pieces, auto) == whole, slicing


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rebuilding_from_the_stored_slices_anywhere_gives_the_same_record(
        data: st.DataObject) -> None:
    """After every slice the worker may crash: a fresh assembler is fed the slices stored so
    far and goes on with the rest. Nothing of one assembler (or its wire) may leak into
    another."""
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    options = (data.draw(st.sampled_from([capture.options, replace(capture.options, wire="auto")]),
                         label="options"))
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert (properties.rebuilt_after_every_slice(pieces, options)
            == assemble(capture.body, capture.options))


def test_the_corpus_on_disk_is_what_the_generator_writes() -> None:
    """The files on disk (which can be edited by hand, or left stale) are the generator's, and
    each says what the generator requires of every case."""
    make = properties.generator(CORPUS / "_make.py", "responses_corpus_make")
    for generated in make.build():
        assert make.incomplete(generated) == [], generated.name
        assert (properties.on_disk(CORPUS, generated.name)
                == properties.as_generated(generated)), generated.name
