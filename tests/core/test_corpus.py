"""Every capture of the corpus gives its hand-written expected record, however it is sliced.

The expectations were written from the specification, not from the implementation's output;
the properties then say the record cannot depend on how the body was cut into slices, nor on
the assembler being rebuilt from the slices stored so far at any point of the stream (what the
worker does after a crash).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.captures import CAPTURES, CORPUS, Capture
from toolwire.core import assemble, decide, new_assembler

IDS = [c.name for c in CAPTURES]


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 30, "the corpus must hold at least 30 captures"
    assert all(c.expect.get("outcome") in ("assembled", "dead_letter") for c in CAPTURES)


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert capture.mismatches(record) == {}, capture.description


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_one_byte_slices_give_the_same_record(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    body = capture.body
    assert assemble([body[i:i + 1] for i in range(len(body))], capture.options) == whole


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_splits_inside_crlf_and_multibyte_characters(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    body = capture.body
    # Cut right after every "\r" and inside every multi-byte UTF-8 sequence.
    cuts = [i + 1 for i, b in enumerate(body) if b == 0x0D or b >= 0xC0]
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert b"".join(pieces) == body
    assert assemble(pieces, capture.options) == whole


def _cuts(size: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(min_value=0, max_value=size), max_size=40).map(sorted)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_slicing_of_any_capture_gives_the_same_record(data: st.DataObject) -> None:
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    cuts = data.draw(_cuts(len(capture.body)), label="cuts")
    body = capture.body
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert assemble(pieces, capture.options) == assemble(body, capture.options)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rebuilding_from_the_stored_slices_anywhere_gives_the_same_record(
        data: st.DataObject) -> None:
    """After every slice the worker may crash: a fresh assembler is fed the slices stored so
    far and goes on with the rest. Nothing of one assembler may leak into another."""
    capture = data.draw(st.sampled_from(CAPTURES), label="capture")
    cuts = data.draw(_cuts(len(capture.body)), label="cuts")
    body = capture.body
    stored: list[bytes] = []
    asm = new_assembler(capture.options)
    for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True):
        asm.feed(body[a:b])
        stored.append(body[a:b])
        rebuilt = new_assembler(capture.options)
        for piece in stored:
            rebuilt.feed(piece)
        asm = rebuilt
    assert decide(asm, capture.options) == assemble(body, capture.options)


def _generator() -> Any:
    """``_make.py``, loaded by path (the corpus folder is data, not a package)."""
    path = Path(__file__).parent / "corpus" / "_make.py"
    spec = importlib.util.spec_from_file_location("corpus_make", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_every_expectation_says_the_calls_and_flags(capture: Capture) -> None:
    """A capture that checks only its outcome proves little: the files on disk (which can be
    edited by hand, or left stale) must say what the generator requires of every case."""
    assert _generator().incomplete(capture) == [], capture.name


def test_the_corpus_on_disk_is_what_the_generator_writes() -> None:
    make = _generator()
    for generated in make.build():
        on_disk = orjson.loads((CORPUS / f"{generated.name}.json").read_bytes())
        assert on_disk == orjson.loads(orjson.dumps(generated.expectation())), generated.name
        assert (CORPUS / f"{generated.name}.sse").read_bytes() == generated.body
