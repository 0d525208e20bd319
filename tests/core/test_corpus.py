"""Every capture of the corpus gives its hand-written expected record, however it is sliced.

The expectations were written from the specification, not from the implementation's output;
the properties then say the record cannot depend on how the body was cut into slices, nor on
the assembler being rebuilt from the slices stored so far at any point of the stream (what the
worker does after a crash).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core import corpus_properties as properties
from tests.core.captures import CAPTURES, CORPUS, Capture
from tests.core.corpus_properties import cuts, one_byte_slices, slices
from tests.hostile import LIMITS
from toolwire.core import assemble

IDS = [c.name for c in CAPTURES]


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 30, "the corpus must hold at least 30 captures"
    assert all(c.expect.get("outcome") in ("assembled", "dead_letter") for c in CAPTURES)


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert properties.mismatches(capture, record) == {}, capture.description


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_one_byte_slices_give_the_same_record(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    assert assemble(one_byte_slices(capture.body), capture.options) == whole


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_splits_inside_crlf_and_multibyte_characters(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    body = capture.body
    # Cut right after every "\r" and inside every multi-byte UTF-8 sequence.
    pieces = slices(body, [i + 1 for i, b in enumerate(body) if b == 0x0D or b >= 0xC0])
    assert b"".join(pieces) == body
    assert assemble(pieces, capture.options) == whole


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_slicing_of_any_capture_gives_the_same_record(data: st.DataObject) -> None:
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert assemble(pieces, capture.options) == assemble(capture.body, capture.options)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rebuilding_from_the_stored_slices_anywhere_gives_the_same_record(
        data: st.DataObject) -> None:
    """After every slice the worker may crash: a fresh assembler is fed the slices stored so
    far and goes on with the rest. Nothing of one assembler may leak into another."""
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert (properties.rebuilt_after_every_slice(pieces, capture.options)
            == assemble(capture.body, capture.options))


#: The generator of the corpus (``_make.py``; the corpus folder is data, not a package).
GENERATOR = CORPUS / "_make.py"


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_every_expectation_says_the_calls_and_flags(capture: Capture) -> None:
    """A capture that checks only its outcome proves little: the files on disk (which can be
    edited by hand, or left stale) must say what the generator requires of every case."""
    assert properties.generator(GENERATOR, "corpus_make").incomplete(capture) == [], capture.name


def test_the_corpus_on_disk_is_what_the_generator_writes() -> None:
    for generated in properties.generator(GENERATOR, "corpus_make").build():
        assert (properties.on_disk(CORPUS, generated.name)
                == properties.as_generated(generated)), generated.name


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_under_small_limits_too_any_slicing_gives_the_same_record(data: st.DataObject) -> None:
    """The bounds a worker may be given (:data:`tests.hostile.LIMITS`, which the reliability
    tests run with) cut some captures short: the record of the cut, its detail included, may
    not depend on the slicing either (a data line over the bound, whole or in pieces)."""
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    options = replace(capture.options, limits=LIMITS)
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    assert assemble(pieces, options) == assemble(capture.body, options)


def test_a_data_line_over_the_bound_is_named_the_same_whole_or_in_pieces() -> None:
    """Found by the reliability test's poison round: one line of 66 KB under a 64 KiB bound
    was "data lines" whole and "an SSE line" when it arrived in pieces."""
    (capture,) = [c for c in CAPTURES if c.name == "openrouter_reasoning_details_over_the_bound"]
    options = replace(capture.options, limits=LIMITS)
    whole = assemble(capture.body, options)
    assert whole.get("reason") == "oversize"
    assert whole.get("detail") == "an SSE line is longer than 65536 bytes"
    assert assemble(one_byte_slices(capture.body), options) == whole
