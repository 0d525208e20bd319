"""The assembly core: raw SSE bytes of one response → one assembled record or one dead letter.

Pure Python (orjson only): no Kafka and no Faust, so it is tested and profiled on its own and the
pipeline carries its state in tables. The data flows frame (:mod:`.framing`, SSE events from any
slices) → read by the response's wire (:mod:`.wires`: one module per provider API, named in a
registry) → assemble (:mod:`.assembly`, wire-neutral, with the identity rule in :mod:`.identity`)
→ decide (:mod:`.decide`, under the wire's finish policy).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolwire.core.assembly import Assembler
from toolwire.core.decide import Options, Provenance, decide
from toolwire.core.identity import accept_identity
from toolwire.core.limits import Limits
from toolwire.core.records import Decision
from toolwire.core.wires import resolve_wire

__all__ = ["Assembler", "Decision", "Limits", "Options", "Provenance", "accept_identity",
           "assemble", "decide", "new_assembler"]


def new_assembler(options: Options | None = None) -> Assembler:
    """The assembler for one response read under ``options`` (its bounds, id synthesis, end
    rule and wire): the one place an assembler should be built, so that every path agrees."""
    options = options or Options()
    return Assembler(resolve_wire(options.wire), options.limits,
                     synthesize_ids=options.synthesize_ids,
                     end_without_done=options.end_without_done)


def assemble(body: bytes | Iterable[bytes], options: Options | None = None,
             provenance: Provenance | None = None) -> Decision:
    """Assemble a whole body (or its slices, in order) and decide its record."""
    options = options or Options()
    asm = new_assembler(options)
    for piece in [body] if isinstance(body, bytes) else body:
        asm.feed(piece)
    return decide(asm, options, provenance)
