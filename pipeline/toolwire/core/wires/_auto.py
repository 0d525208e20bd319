"""``auto``: the body says which wire it is.

Used offline (``toolwire assemble --wire auto``), where a capture comes without the ``wire``
header a gateway sets. :class:`Auto` is made with the wires it may choose from (the registry
hands it its own, :func:`toolwire.core.wires.resolve_wire`), so that neither it nor the
assembler reads the registry. Two steps, each asked of the wires themselves:

1. **The framing**, by the body's opening bytes (:meth:`toolwire.core.framing.EventFramer.opens`):
   every framing a wire reads besides SSE is offered (:meth:`Auto.openings`). An AWS
   event-stream prelude is Bedrock's, a JSON array is Gemini's without ``?alt=sse``, and a
   body opening with ``{`` may be NDJSON; the wires framed so are its readers
   (:meth:`Auto.readers`), and the first of them that recognizes the first event reads it.
2. **The wire**, for an SSE body: the first event, by what only one wire sends
   (:meth:`Wire.recognizes`: a ``chat.completion.chunk`` or ``choices``, a ``message_start``,
   a ``type`` beginning ``response.``, a Gemini chunk's keys). The chosen wire replaces this
   one in ``asm.wire`` and gets every event from the first on, so it reads the body exactly
   as if it had been named. A first event no wire recognizes goes to the default wire, whose
   own checks then say what is wrong with it (a body is never read under a guessed wire's
   laxer rules).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolwire.core.framing import EventFramer, Framer
from toolwire.core.wires._base import FinishPolicy, Wire, WireTarget

__all__ = ["Auto"]

class Auto(Wire):
    """Reads no event itself: hands the body to the wire its opening or first event names."""

    __slots__ = ("_default", "_wires")

    name = "auto"
    reads_event_names = True  # the first slice may be the chat wire's
    lets_body_choose = True
    policy = FinishPolicy(finishes={}, missing_end="the body ended before any event said "
                                                   "which wire it is")

    def __init__(self, wires: Mapping[str, type[Wire]], default: str) -> None:
        #: The wires a body may be, in the order they are asked (the registry's).
        self._wires = tuple(wires.values())
        #: The wire of a body no wire recognizes.
        self._default = wires[default]

    def openings(self) -> tuple[type[EventFramer], ...]:
        """Every framing a wire reads that is not SSE."""
        framings: list[type[EventFramer]] = []
        for wire in self._wires:
            for framing in (wire.framing, *wire.other_framings):
                if framing is not Framer and framing not in framings:
                    framings.append(framing)
        return tuple(framings)

    def readers(self, framing: type[EventFramer]) -> Sequence[type[Wire]]:
        """The wires that read bodies framed as ``framing``, in the registry's order."""
        return [w for w in self._wires if w.framing is framing or framing in w.other_framings]

    def chosen(self, first: bytes | None) -> type[Wire]:
        """The SSE wire whose first event ``first`` is (the default when none says so)."""
        if first is not None:
            for wire in self.readers(Framer):
                if wire.recognizes(first):
                    return wire
        return self._default

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        reader = self.chosen(events[0] if events else None)()
        asm.hand_over(reader)  # event names are kept from the next slice on
        reader.apply(asm, events)

    def ends(self, last: bytes | None) -> bool:
        return False
