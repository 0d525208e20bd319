"""Loads the capture corpus: raw bodies (``NAME.sse``) with hand-written expectations."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from toolwire.core import Decision, Options

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Capture:
    name: str
    body: bytes
    options: Options
    expect: dict[str, Any]
    description: str

    def mismatches(self, record: Decision) -> dict[str, tuple[Any, Any]]:
        """Expected keys whose value differs: ``{key: (expected, actual)}``."""
        return {k: (v, record.get(k, "<missing>")) for k, v in self.expect.items()
                if record.get(k, "<missing>") != v}


def load() -> list[Capture]:
    captures = []
    for sse in sorted(CORPUS.glob("*.sse")):
        spec = orjson.loads(sse.with_suffix(".json").read_bytes())
        opts = spec.get("options") or {}
        tools = opts.get("declared_tools")
        captures.append(Capture(
            name=sse.stem,
            body=sse.read_bytes(),
            options=Options(declared_tools=None if tools is None else frozenset(tools),
                            strict=bool(opts.get("strict", False)),
                            synthesize_ids=bool(opts.get("synthesize_ids", False))),
            expect=spec["expect"],
            description=spec.get("description", ""),
        ))
    return captures


CAPTURES = load()
