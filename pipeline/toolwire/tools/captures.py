"""Captures: a raw response body (``NAME.sse``; ``NAME.ndjson``, ``NAME.eventstream`` or
``NAME.json-array`` for a wire framed so; byte-exact) beside ``NAME.json``, the options to
assemble it with and the keys of the record it must give.

A folder of captures is a corpus: the tests hold each wire to
``tests/core/corpus_wires/<wire>``, and the benchmarks (``ops/bench``) run on the same files.
Both read them through this module, so that neither imports the other; reading happens only
when :func:`load` is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from toolwire.core import Decision, Options
from toolwire.core.wires import DEFAULT_WIRE

__all__ = ["SUFFIXES", "Capture", "load"]

#: The suffix of a capture's body, by its framing.
SUFFIXES = (".sse", ".ndjson", ".eventstream", ".json-array")


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


def load(folder: Path) -> list[Capture]:
    """Every capture of ``folder``, by name; a body without its ``.json`` is an error."""
    captures = []
    for sse in sorted(body for suffix in SUFFIXES for body in folder.glob(f"*{suffix}")):
        spec = orjson.loads(sse.with_suffix(".json").read_bytes())
        opts = spec.get("options") or {}
        tools = opts.get("declared_tools")
        captures.append(Capture(
            name=sse.stem,
            body=sse.read_bytes(),
            options=Options(declared_tools=None if tools is None else frozenset(tools),
                            strict=bool(opts.get("strict", False)),
                            synthesize_ids=bool(opts.get("synthesize_ids", False)),
                            end_without_done=bool(opts.get("end_without_done", False)),
                            wire=str(opts.get("wire", DEFAULT_WIRE))),
            expect=spec["expect"],
            description=spec.get("description", ""),
        ))
    return captures
