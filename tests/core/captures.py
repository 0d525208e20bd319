"""The capture corpus of the tests: ``tests/core/corpus``, read by :mod:`toolwire.tools.captures`
(which ``ops/bench`` reads it with too)."""

from __future__ import annotations

from pathlib import Path

from toolwire.tools.captures import Capture, load

__all__ = ["CAPTURES", "CORPUS", "Capture", "load_corpus"]

CORPUS = Path(__file__).parent / "corpus"


def load_corpus() -> list[Capture]:
    return load(CORPUS)


CAPTURES = load_corpus()
