"""``auto``: the body says which wire it is, by its first event.

Used offline (``toolwire assemble --wire auto``), where a capture comes without the ``wire``
header a gateway sets. The first event decides, once, by what only one wire sends: a
``chat.completion.chunk`` (or ``choices``) is Chat Completions, ``type`` ``message_start`` or
``ping`` is Anthropic Messages, a ``type`` beginning ``response.`` is OpenAI Responses, and
``candidates``, ``promptFeedback`` or ``usageMetadata`` is Gemini. The chosen wire replaces
this one in ``asm.wire`` and gets every event from the first on, so it reads the body exactly
as if it had been named. A first event no rule recognizes goes to the default wire, whose own
checks then say what is wrong with it (a body is never read under a guessed wire's laxer
rules).

A body that is not SSE is told before any of this, by the assembler, from its opening bytes
(:meth:`toolwire.core.framing.EventFramer.opens`): an AWS event-stream prelude is Bedrock's
(the first message's ``:event-type`` tells ConverseStream from InvokeModel: ``chunk``), a JSON
array is Gemini's without ``?alt=sse``, and a body opening with ``{`` is NDJSON when a wire
framed so recognizes its first whole line (``Wire.recognizes``: Ollama's lines name
``created_at`` and ``done``); that wire then reads the body with its own framer.
"""

from __future__ import annotations

from typing import Final

import orjson

from toolwire.core.wires._base import FinishPolicy, Wire, WireTarget

__all__ = ["Auto", "detect"]

#: ``type`` values that open an Anthropic Messages stream.
_ANTHROPIC_FIRST: Final = frozenset({"message_start", "ping"})
#: Top-level keys only a Gemini chunk has.
_GEMINI_KEYS: Final = ("candidates", "promptFeedback", "usageMetadata")


def detect(event: bytes) -> str | None:
    """The name of the wire whose first event ``event`` is, or ``None`` when no rule says."""
    try:
        payload = orjson.loads(bytes(event))
    except orjson.JSONDecodeError:
        return None
    if type(payload) is not dict:
        return None
    kind = payload.get("type")
    if type(kind) is str:
        if kind in _ANTHROPIC_FIRST:
            return "anthropic-messages"
        if kind.startswith("response."):
            return "openai-responses"
    if payload.get("object") == "chat.completion.chunk" or "choices" in payload:
        return "openai-chat"
    if any(key in payload for key in _GEMINI_KEYS):
        return "gemini"
    return None


class Auto(Wire):
    """Reads no event itself: hands the body to the wire its first event names."""

    __slots__ = ()

    name = "auto"
    reads_event_names = True  # the first slice may be the chat wire's
    policy = FinishPolicy(finishes={}, missing_end="the body ended before any event said "
                                                   "which wire it is")

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES

        named = detect(events[0]) if events else None
        wire = SUPPORTED_WIRES.get(named or DEFAULT_WIRE) or SUPPORTED_WIRES[DEFAULT_WIRE]
        reader = wire()
        asm.hand_over(reader)  # event names are kept from the next slice on
        reader.apply(asm, events)

    def ends(self, last: bytes | None) -> bool:
        return False
