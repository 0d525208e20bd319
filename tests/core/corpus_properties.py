"""What the corpus tests share: the corpus as captures, the slicings, the rebuild, the generator.

Every corpus (``tests/core/corpus_wires/<wire>``, one per registered wire) is held to the same
properties by its own ``tests/core/test_corpus*.py``: the record may not depend on how
the body is sliced, nor on the assembler being rebuilt from the slices stored so far, and the
files on disk are what the corpus's generator writes.  How a body is sliced and how a crashed
worker rebuilds its assembler are the same for every wire, so they live here once: a slicing
added, or a rebuild made closer to the worker's, then holds for every corpus.

The assertions stay in the test modules (pytest explains a failed one only there); these
helpers compute what the tests compare.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from hypothesis import strategies as st

from tests.core.corpus_build import OMITTED
from toolwire.core import Decision, Options, assemble, decide, new_assembler
from toolwire.tools.captures import Capture, load

#: Every wire's corpus: ``corpus_wires/<the wire's registry name>``.
CORPORA = Path(__file__).parent / "corpus_wires"

# --------------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------------


def wire_captures(folder: Path) -> list[Capture]:
    """The corpus of a named wire, each capture under the wire its ``NAME.json`` names (read
    here: the test must not depend on the loader reading ``options.wire``)."""
    captures = []
    for capture in load(folder):
        wire = orjson.loads((folder / f"{capture.name}.json").read_bytes())["options"]["wire"]
        captures.append(replace(capture, options=replace(capture.options, wire=wire)))
    return captures


def unstated_reasons(capture: Capture) -> dict[str, str]:
    """The keys of the record ``capture``'s expectation leaves out beyond the allow-list
    (:data:`tests.core.corpus_build.OMITTED`), each with why: its ``NAME.json``'s
    ``"unstated"``, read from the corpus of the wire it runs under."""
    spec = orjson.loads((CORPORA / capture.options.wire / f"{capture.name}.json").read_bytes())
    reasons: dict[str, str] = spec.get("unstated", {})
    return reasons


def mismatches(capture: Capture, record: Decision) -> dict[str, tuple[Any, Any]]:
    """What the expectation says against ``record`` or leaves unsaid (empty: nothing), as
    ``{key: (expected, actual)}``: every expected key whose value differs
    (:meth:`Capture.mismatches`); every key of the record that the expectation leaves out with
    no reason, neither in the allow-list nor in the capture's ``unstated`` (expected
    ``"<unstated>"``); and every reason of ``unstated`` that is stale, for a key the expectation
    states or the record does not hold."""
    wrong = capture.mismatches(record)
    fields: Mapping[str, object] = record
    reasons = unstated_reasons(capture)
    for key, value in fields.items():
        if key not in capture.expect and key not in OMITTED and key not in reasons:
            wrong[key] = ("<unstated>", value)
    for key, why in reasons.items():
        if key in capture.expect or key not in fields or not why:
            wrong[key] = (f"<unstated: {why}>", fields.get(key, "<missing>"))
    return wrong


def expected_to_fail(captures: list[Capture], gaps: dict[str, str]) -> list[Any]:
    """The captures as parameters, those in ``gaps`` (name: what the code lacks) expected to
    fail, strictly: a gap that closes must be taken off the list."""
    return [pytest.param(c, id=c.name, marks=pytest.mark.xfail(reason=gaps[c.name], strict=True))
            if c.name in gaps else pytest.param(c, id=c.name) for c in captures]


@functools.cache
def generator(path: Path, module_name: str) -> ModuleType:
    """A corpus's ``_make.py``, loaded by path (a corpus folder is data, not a package), once
    a run: loading it builds nothing, so one module serves every test that asks."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def on_disk(folder: Path, name: str, suffix: str = ".sse") -> tuple[Any, bytes]:
    """A capture's files as stored: ``NAME.json`` parsed, ``NAME.sse`` (or ``NAME`` +
    ``suffix``) byte-exact."""
    expectation = orjson.loads((folder / f"{name}.json").read_bytes())
    return expectation, (folder / f"{name}{suffix}").read_bytes()


def as_generated(capture: Any) -> tuple[Any, bytes]:
    """What the generator writes for one of its captures, in the shape of :func:`on_disk`
    (through JSON, so that a tuple the generator writes compares as the list it becomes)."""
    return orjson.loads(orjson.dumps(capture.expectation())), capture.body


def off_the_generator(folder: Path, module_name: str, suffix: str = ".sse") -> list[str]:
    """What of a corpus folder is not what its ``_make.py`` writes (empty: nothing): each
    capture whose expectation the generator's ``incomplete`` refuses, or whose files differ."""
    make = generator(folder / "_make.py", module_name)
    wrong = []
    for generated in make.build():
        if lacking := make.incomplete(generated):
            wrong.append(f"{generated.name}: lacks {', '.join(lacking)}")
        if on_disk(folder, generated.name, suffix) != as_generated(generated):
            wrong.append(f"{generated.name}: its files are not the generator's")
    return wrong


# --------------------------------------------------------------------------------------------
# Slicings
# --------------------------------------------------------------------------------------------


def slices(body: bytes, cuts: list[int]) -> list[bytes]:
    """The body cut at every offset of ``cuts`` (sorted; a repeated cut gives an empty slice,
    which the assembler must take too)."""
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def one_byte_slices(body: bytes) -> list[bytes]:
    """Every byte its own slice: each frame, line end and UTF-8 sequence cut everywhere."""
    return [body[i:i + 1] for i in range(len(body))]


def between_cr_and_lf(body: bytes) -> list[bytes]:
    """The body cut right after every ``\\r``: a CRLF line end split across two slices."""
    return slices(body, [i + 1 for i, b in enumerate(body) if b == 0x0D])


def cuts_into_two(body: bytes) -> Iterator[tuple[str, list[bytes]]]:
    """Every cut into two, each named by its offset."""
    for cut in range(len(body) + 1):
        yield f"cut at {cut}", [body[:cut], body[cut:]]


def slicings(body: bytes, seed: str) -> Iterator[tuple[str, list[bytes]]]:
    """Every cut into two, one byte at a time, and 20 random slicings (the same on every run:
    seeded, so that a failure names a slicing that can be run again)."""
    yield from cuts_into_two(body)
    yield "one byte at a time", one_byte_slices(body)
    rng = random.Random(seed)
    for _ in range(20):
        cuts = sorted(rng.randrange(len(body) + 1) for _ in range(rng.randrange(1, 40)))
        yield f"cuts at {cuts}", slices(body, cuts)


def cuts(size: int) -> st.SearchStrategy[list[int]]:
    """Up to 40 sorted offsets into a body of ``size`` bytes, repeats and both ends included."""
    return st.lists(st.integers(min_value=0, max_value=size), max_size=40).map(sorted)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


def rebuilt_after_every_slice(pieces: list[bytes], options: Options) -> Decision:
    """The record of an assembler that crashed after every slice: each time a fresh one is fed
    the slices stored so far, then goes on with the rest (what the worker does after a crash),
    so nothing of one assembler (nor of its wire) may be needed by the next."""
    stored: list[bytes] = []
    asm = new_assembler(options)
    for piece in pieces:
        asm.feed(piece)
        stored.append(piece)
        asm = new_assembler(options)
        for kept in stored:
            asm.feed(kept)
    return decide(asm, options)


def drawn_rebuild(data: st.DataObject, captures: list[Capture],
                  variants: Callable[[Capture], list[Options]]) -> tuple[Decision, Decision]:
    """A capture, one of its ``variants`` of options and a slicing drawn by hypothesis: the
    record rebuilt after every slice (:func:`rebuilt_after_every_slice`) and the whole body's."""
    capture = data.draw(st.sampled_from(captures), label="capture")
    options = data.draw(st.sampled_from(variants(capture)), label="options")
    pieces = slices(capture.body, data.draw(cuts(len(capture.body)), label="cuts"))
    return rebuilt_after_every_slice(pieces, options), assemble(capture.body, options)


def without_bytes(record: Decision) -> dict[str, Any]:
    """The record but its byte count: what reframing a body (LF to CRLF) may change."""
    return {key: value for key, value in record.items() if key != "bytes"}
