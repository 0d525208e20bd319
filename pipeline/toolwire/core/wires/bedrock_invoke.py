"""Bedrock InvokeModelWithResponseStream for Anthropic models (``POST
/model/{id}/invoke-with-response-stream``, what ``anthropic.AnthropicBedrock`` reads).

The body is AWS event-stream (:mod:`toolwire.core.framing.eventstream`); each ``chunk``
event's payload is ``{"bytes": "<base64>", "p": "<padding>"}``, and the decoded bytes are
exactly one Anthropic Messages streaming event, compact JSON.

The invariant: one framer, one inner wire, no copy of the Anthropic rules. The decoded
events go, one by one and in order, to a new ``anthropic-messages`` wire (:attr:`carries`,
taken from the registry by name, so that no wire module imports another), which reads them
into the assembler exactly as it reads the same events over SSE: the same calls, identity,
finish reasons, end and policy (:meth:`finish_policy`). What is Bedrock's is read here: the
framing, an ``exception`` or ``error`` message (:func:`toolwire.core.wires._shared.bedrock_error`,
the calls withheld), and ``message_stop``'s ``amazon-bedrock-invocationMetrics``, added to the
usage under its own key.

A chunk whose bytes are not base64, not a JSON object, or an object without a string
``type`` is ``malformed_chunk``: the same route serves Nova, Llama and Titan, whose events
(``{"generation": …}``) the Anthropic wire would otherwise skip as unknown types and then call
the body cut, which would hide the real mistake (a wire header naming the wrong model family).
"""

from __future__ import annotations

import binascii
from typing import ClassVar, Final

import orjson

from toolwire.core.errors import malformed
from toolwire.core.framing import EventFramer
from toolwire.core.framing.eventstream import EventMessage, EventStreamFramer
from toolwire.core.wires._base import FinishPolicy, Wire, WireTarget
from toolwire.core.wires._shared import bedrock_error, parse_object

__all__ = ["BedrockInvoke"]

#: Where ``message_stop`` carries Bedrock's own metrics; kept verbatim in the usage.
METRICS: Final = "amazon-bedrock-invocationMetrics"
#: How every Anthropic event Bedrock sends begins (compact JSON, ``type`` first): anything
#: else is parsed once here to tell whether it is an Anthropic event at all.
_ANTHROPIC_HEAD: Final = b'{"type":"'


class BedrockInvoke(Wire):
    """One InvokeModelWithResponseStream response of an Anthropic model."""

    __slots__ = ("_inner",)

    name = "bedrock-invoke"
    framing: ClassVar[type[EventFramer]] = EventStreamFramer
    #: The registry name of the wire whose events the chunks carry.
    carries: ClassVar[str] = "anthropic-messages"
    #: Only read before the inner wire exists; the response's is the inner wire's.
    policy = FinishPolicy(finishes={}, missing_end="the body ended without message_stop "
                                                   "(connection dropped or cut)")

    def __init__(self) -> None:
        from toolwire.core.wires import wire_named  # the registry, which imports this module

        self._inner = wire_named(self.carries)

    def finish_policy(self) -> FinishPolicy:
        return self._inner.finish_policy()

    @classmethod
    def recognizes(cls, first: object) -> bool:
        """An invoke body's events are all ``chunk`` messages."""
        return type(first) is EventMessage and first.header(":event-type") == "chunk"

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        inner = self._inner
        for message in events:
            if type(message) is not EventMessage:  # the framer gives nothing else
                raise malformed(message, "not an event-stream message")
            if message.header(":message-type") != "event":
                asm.events += 1
                asm.end_body(bedrock_error(message))
                asm.ended_on(message)
                return
            if message.header(":event-type") != "chunk":
                continue  # no other member carries a model event
            event = self._event(bytes(message))
            inner.apply(asm, [event])
            if asm.ended:
                if asm.error is None:
                    self._metrics(asm, event)
                asm.ended_on(message)  # the inner wire named its own event
                return

    def ends(self, last: bytes | None) -> bool:
        return last is None and self._inner.ends(None)

    def finished(self, asm: WireTarget) -> bool:
        return self._inner.finished(asm)

    def settle(self, asm: WireTarget) -> None:
        self._inner.settle(asm)

    @staticmethod
    def _event(payload: bytes) -> bytes:
        """The Anthropic event one ``chunk`` carries."""
        chunk = parse_object(payload)
        data = chunk.get("bytes")
        if type(data) is not str:
            raise malformed(payload, "a chunk without a base64 'bytes' string")
        try:
            event = binascii.a2b_base64(data, strict_mode=True)  # b64decode's cost, less
        except (binascii.Error, ValueError):
            raise malformed(payload, "a chunk whose 'bytes' are not base64") from None
        if not event.startswith(_ANTHROPIC_HEAD):
            try:
                value = orjson.loads(event)
            except orjson.JSONDecodeError:
                value = None
            if type(value) is not dict or type(value.get("type")) is not str:
                raise malformed(event, "a chunk whose bytes are not an Anthropic Messages "
                                       "event (bedrock-invoke reads Anthropic models; Nova, "
                                       "Llama and Titan send other JSON)")
        return event

    @staticmethod
    def _metrics(asm: WireTarget, event: bytes) -> None:
        """``message_stop``'s invocation metrics, added to the usage (read once per body)."""
        if METRICS.encode() not in event:
            return
        metrics = orjson.loads(event).get(METRICS)
        if metrics is not None:
            asm.keep_usage(event, {**(asm.usage or {}), METRICS: metrics})
