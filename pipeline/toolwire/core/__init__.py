"""The assembly core: raw SSE bytes of one response → one assembled record or one dead letter.

Pure Python (orjson only): no Kafka and no Faust, so it is tested and profiled on its own and the
pipeline carries its state in tables. The data flows frame (:mod:`.framing`) → parse
(:mod:`.wire`) → assemble (:mod:`.assembly`, with the identity rule in :mod:`.identity`) →
decide (:mod:`.decide`).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolwire.core.assembly import Assembler
from toolwire.core.decide import Options, Provenance, Record, decide
from toolwire.core.identity import accept_identity
from toolwire.core.limits import Limits

__all__ = ["Assembler", "Limits", "Options", "Provenance", "Record", "accept_identity",
           "assemble", "decide"]


def assemble(body: bytes | Iterable[bytes], options: Options | None = None,
             provenance: Provenance | None = None) -> Record:
    """Assemble a whole body (or its slices, in order) and decide its record."""
    options = options or Options()
    asm = Assembler(options.limits, synthesize_ids=options.synthesize_ids)
    for piece in [body] if isinstance(body, bytes) else body:
        asm.feed(piece)
    return decide(asm, options, provenance)
