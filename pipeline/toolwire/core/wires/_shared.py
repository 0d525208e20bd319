"""What several wires read the same way, in one place: no wire imports another.

A wire module is its API's rules; what two APIs share by accident of history (a gateway's
``data: [DONE]`` trailer on Responses and Gemini bodies, an event payload that must be one
JSON object, the exceptions of Bedrock's event stream) lives here, so that changing one wire
never changes another by an import.
"""

from __future__ import annotations

from typing import Final

import orjson

from toolwire.core.errors import malformed
from toolwire.core.framing.eventstream import EventMessage
from toolwire.core.wires._base import ERROR_MESSAGE_CHARS, ProviderError

__all__ = ["BEDROCK_RETRYABLE", "DONE", "bedrock_error", "first_object", "parse_object"]

#: The end sentinel of Chat Completions, which gateways also append to other wires' bodies.
DONE: Final = b"[DONE]"


def parse_object(payload: bytes) -> dict[str, object]:
    """One event payload as a JSON object, or :class:`~toolwire.core.errors.MalformedChunk`.

    Only the top level is checked: each wire's walk checks the inside as it goes, since a
    second pass would cost as much again as the walk itself.
    """
    try:
        value = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise malformed(payload, f"not JSON ({exc.args[0]})") from None
    if type(value) is not dict:
        raise malformed(payload, "not a JSON object")
    return value


def first_object(event: bytes) -> dict[str, object] | None:
    """A body's first event as a JSON object, or ``None`` (for :meth:`Wire.recognizes`:
    telling a wire is no verdict on the event, which the chosen wire then reads)."""
    try:
        value = orjson.loads(bytes(event))
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


#: Bedrock exceptions AWS says to retry ("Retry your request"): throttling, an unavailable
#: service, an internal error, a model stream error, a model timeout (InvokeModel only).
BEDROCK_RETRYABLE: Final = frozenset({"throttlingException", "serviceUnavailableException",
                                      "internalServerException", "modelStreamErrorException",
                                      "modelTimeoutException"})


def bedrock_error(message: EventMessage) -> ProviderError:
    """What an event-stream message that is not an ``event`` says (both Bedrock wires read
    it alike): an ``exception`` names its type in ``:exception-type`` and its message in a
    JSON payload; an ``error`` carries both in headers (``:error-code``, ``:error-message``)
    with an empty payload. Any other ``:message-type`` is no message Bedrock sends."""
    kind = message.header(":message-type")
    if kind == "exception":
        code = message.header(":exception-type")
        if not code:
            raise malformed(bytes(message), "an exception message without :exception-type")
        text: str | None = None
        try:
            payload = orjson.loads(bytes(message))
        except orjson.JSONDecodeError:
            payload = None
        if type(payload) is dict and type(payload.get("message")) is str:
            text = payload["message"]
        elif bytes(message):
            text = bytes(message).decode("utf-8", "replace")
        return ProviderError(code, None if text is None else text[:ERROR_MESSAGE_CHARS],
                             retryable=code in BEDROCK_RETRYABLE)
    if kind == "error":
        code = message.header(":error-code") or "UNKNOWN_ERROR"
        text = message.header(":error-message")
        return ProviderError(code, None if text is None else text[:ERROR_MESSAGE_CHARS],
                             retryable=False)
    raise malformed(bytes(message), f"an event-stream message whose :message-type is "
                                    f"{kind!r}, neither event, exception nor error")
