"""Framing: a body's bytes, in arbitrary slices, into its wire's events.

Each framing is one module behind one interface (:class:`EventFramer`, in :mod:`._base`), and a
wire names the one it reads through (:attr:`toolwire.core.wires.Wire.framing`):

- :mod:`.sse`: Server-Sent Events (Chat Completions, Anthropic Messages, OpenAI Responses,
  Gemini with ``?alt=sse``): :class:`Framer`;
- :mod:`.ndjson`: one JSON object per line (Ollama's ``/api/chat``): :class:`NDJSONFramer`;
- :mod:`.eventstream`: AWS event-stream, binary messages with two CRCs (Bedrock's
  ConverseStream and InvokeModelWithResponseStream): :class:`EventStreamFramer`;
- :mod:`.json_array`: one JSON array streamed element by element (Gemini's
  ``streamGenerateContent`` without ``?alt=sse``): :class:`JSONArrayFramer`.

Nothing happens at import.
"""

from typing import Final

from toolwire.core.framing._base import EventFramer, FramingDamage, LineOversize
from toolwire.core.framing.eventstream import EventMessage, EventStreamFramer
from toolwire.core.framing.json_array import JSONArrayFramer
from toolwire.core.framing.ndjson import NDJSONFramer
from toolwire.core.framing.sse import BOM, Framer, NamedEvent, event_name, split_events

#: Every framing by its name.
SUPPORTED_FRAMINGS: Final[dict[str, type[EventFramer]]] = {
    Framer.name: Framer,
    NDJSONFramer.name: NDJSONFramer,
    EventStreamFramer.name: EventStreamFramer,
    JSONArrayFramer.name: JSONArrayFramer,
}

__all__ = ["BOM", "SUPPORTED_FRAMINGS", "EventFramer", "EventMessage", "EventStreamFramer",
           "Framer", "FramingDamage", "JSONArrayFramer", "LineOversize", "NDJSONFramer",
           "NamedEvent", "event_name", "split_events"]
