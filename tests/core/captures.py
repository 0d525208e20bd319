"""The Chat Completions corpus of the tests: ``tests/core/corpus_wires/openai-chat``, the
folder of its wire beside every other wire's, read by :mod:`toolwire.tools.captures` (which
``ops/bench`` reads it with too)."""

from __future__ import annotations

from pathlib import Path

from toolwire.core.wires.chat_completions import ChatCompletions
from toolwire.tools.captures import Capture, load

__all__ = ["CAPTURES", "CORPUS", "Capture", "load_corpus"]

#: Every wire's corpus is ``corpus_wires/<its registry name>``; this one is Chat Completions'.
CORPUS = Path(__file__).parent / "corpus_wires" / ChatCompletions.name


def load_corpus() -> list[Capture]:
    return load(CORPUS)


CAPTURES = load_corpus()
