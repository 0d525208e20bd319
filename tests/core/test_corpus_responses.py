"""Every OpenAI Responses capture gives its hand-written expected record, however it is read.

The expectations (``tests/core/corpus_wires/openai-responses``) were written from issue 13's
rules, not from the wire's output. The properties then say the record depends neither on how
the body was cut into slices (every cut into two, one byte at a time, random slicings), nor on
CRLF framing, nor on the assembler being rebuilt from the slices stored so far (what the worker
does after a crash), nor on naming the wire rather than letting ``auto`` detect it.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core import Decision, assemble, decide, new_assembler
from toolwire.tools.captures import Capture, load

WIRE = "openai-responses"
CORPUS = Path(__file__).parent / "corpus_wires" / WIRE
#: Captures whose expectation the neutral core does not meet yet, and what it lacks.
NOT_YET: dict[str, str] = {}


def _load() -> list[Capture]:
    """The corpus, each capture under the wire its ``NAME.json`` names (read here: the loader
    may not read ``options.wire``)."""
    captures = []
    for capture in load(CORPUS):
        spec = orjson.loads((CORPUS / f"{capture.name}.json").read_bytes())
        wire = spec["options"]["wire"]
        captures.append(replace(capture, options=replace(capture.options, wire=wire)))
    return captures


CAPTURES = _load()
IDS = [c.name for c in CAPTURES]


def _expected(capture: Capture) -> Any:
    reason = NOT_YET.get(capture.name)
    if reason is None:
        return capture
    return pytest.param(capture, marks=pytest.mark.xfail(reason=reason, strict=True))


def _pieces(body: bytes, cuts: list[int]) -> list[bytes]:
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def _without_bytes(record: Decision) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "bytes"}


def test_the_corpus_is_there() -> None:
    assert len(CAPTURES) >= 15, "issue 13: at least 15 captures per wire"
    assert {c.options.wire for c in CAPTURES} == {WIRE}
    assert all(c.expect.get("outcome") in ("assembled", "dead_letter") for c in CAPTURES)
    assert all(c.expect.get("wire") == WIRE for c in CAPTURES)
    assert set(NOT_YET) <= set(IDS)


@pytest.mark.parametrize("capture", [_expected(c) for c in CAPTURES], ids=IDS)
def test_capture_gives_its_expected_record(capture: Capture) -> None:
    record = assemble(capture.body, capture.options)
    assert capture.mismatches(record) == {}, capture.description


def _slicings(body: bytes, seed: str) -> Iterator[tuple[str, list[bytes]]]:
    """Every cut into two, one byte at a time, and 20 random slicings (the same on every run)."""
    for cut in range(len(body) + 1):
        yield f"cut at {cut}", [body[:cut], body[cut:]]
    yield "one byte at a time", [body[i:i + 1] for i in range(len(body))]
    rng = random.Random(seed)
    for _ in range(20):
        cuts = sorted(rng.randrange(len(body) + 1) for _ in range(rng.randrange(1, 40)))
        yield f"cuts at {cuts}", _pieces(body, cuts)


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_every_slicing_gives_the_same_record(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    for slicing, pieces in _slicings(capture.body, capture.name):
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
    assert _without_bytes(assemble(crlf, capture.options)) == _without_bytes(whole)
    cuts = [i + 1 for i, b in enumerate(crlf) if b == 0x0D]  # between every \r and its \n
    assert _without_bytes(assemble(_pieces(crlf, cuts), capture.options)) == _without_bytes(whole)


@pytest.mark.parametrize("capture", CAPTURES, ids=IDS)
def test_auto_detects_the_wire_from_the_first_event(capture: Capture) -> None:
    whole = assemble(capture.body, capture.options)
    auto = replace(capture.options, wire="auto")
    assert assemble(capture.body, auto) == whole
    for slicing, pieces in _slicings(capture.body, capture.name):
        if not slicing.startswith("cut at "):  # every cut into two: named-wire test only
            assert assemble(pieces, auto) == whole, slicing


def _cuts(size: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(min_value=0, max_value=size), max_size=40).map(sorted)


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
    body = capture.body
    stored: list[bytes] = []
    asm = new_assembler(options)
    for piece in _pieces(body, data.draw(_cuts(len(body)), label="cuts")):
        asm.feed(piece)
        stored.append(piece)
        rebuilt = new_assembler(options)
        for kept in stored:
            rebuilt.feed(kept)
        asm = rebuilt
    assert decide(asm, options) == assemble(body, capture.options)


def _generator() -> Any:
    """``_make.py``, loaded by path (the corpus folder is data, not a package)."""
    spec = importlib.util.spec_from_file_location("responses_corpus_make", CORPUS / "_make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_the_corpus_on_disk_is_what_the_generator_writes() -> None:
    """The files on disk (which can be edited by hand, or left stale) are the generator's, and
    each says what the generator requires of every case."""
    make = _generator()
    for generated in make.build():
        assert make.incomplete(generated) == [], generated.name
        on_disk = orjson.loads((CORPUS / f"{generated.name}.json").read_bytes())
        assert on_disk == orjson.loads(orjson.dumps(generated.expectation())), generated.name
        assert (CORPUS / f"{generated.name}.sse").read_bytes() == generated.body
