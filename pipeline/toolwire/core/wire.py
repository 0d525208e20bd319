"""Typed wire objects of a ``chat.completion.chunk`` and their structural check.

The types are ``TypedDict``s over the dicts orjson returns (no copy per chunk). Every field that
a provider may send as ``null`` is typed ``X | None`` and may be absent (``total=False``), so
mypy makes every reader of the wire check for both. Identity fields are typed as the wire
promises, but the assembler still treats them as untrusted ``object`` (a gateway may send a
number): see :func:`toolwire.core.identity.accept_identity`.

What is checked (by :func:`parse_chunk` at the top level, by the assembler inside): objects and
lists where the wire has objects and lists, strings where text is concatenated, non-negative
integers where calls are keyed. A payload that fails is the dead letter ``malformed_chunk``;
nothing else is rejected (a non-string ``content`` or ``finish_reason`` is simply not text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypedDict, cast

import orjson

from toolwire.core.errors import MalformedChunk, excerpt

#: The ``object`` of Perplexity's last chunk: an explicit end, as ``data: [DONE]`` is.
DONE_OBJECT: Final = "chat.completion.done"
#: The fields of a tool-call entry the assembler reads; any other is a provider field, kept
#: verbatim for the next turn (Gemini 3's ``extra_content.google.thought_signature``).
CALL_FIELDS: Final = frozenset({"index", "id", "type", "function", "custom"})
#: A provider error message is cut to this many characters in the record.
ERROR_MESSAGE_CHARS: Final = 1000


class WireFunction(TypedDict, total=False):
    name: str | None
    arguments: str | None


class WireCustom(TypedDict, total=False):
    """A custom (freeform) tool's delta: GPT-5's ``apply_patch`` and grammar tools."""

    name: str | None
    input: str | None


class WireToolCall(TypedDict, total=False):
    index: int | None
    id: str | None
    type: str | None
    function: WireFunction | None
    custom: WireCustom | None


class WireDelta(TypedDict, total=False):
    role: str | None
    content: str | None
    reasoning_content: str | None
    #: OpenAI structured outputs: the model's refusal (``content`` stays null).
    refusal: str | None
    tool_calls: list[WireToolCall] | None
    #: Legacy single-call field; a stub of it rides along on some terminal chunks. Ignored.
    function_call: object


class WireChoice(TypedDict, total=False):
    index: int | None
    delta: WireDelta | None
    finish_reason: str | None
    logprobs: object


class WireChunk(TypedDict, total=False):
    id: str | None
    object: str | None
    created: int | None
    model: str | None
    choices: list[WireChoice] | None
    usage: dict[str, object] | None
    #: A provider error inside the stream (OpenRouter: ``{"code": 400, "message": ...}``).
    error: object


@dataclass(frozen=True, slots=True)
class ProviderError:
    """An error the provider reported inside the stream; it ends the response."""

    code: str
    message: str | None
    retryable: bool


#: Words of an error code or type that mean "try again later": rate limits, overload, 5xx.
_RETRYABLE_WORDS: Final = ("rate_limit", "overload", "server_error", "unavailable")


def provider_error(error: object) -> ProviderError:
    """Read an error object (or whatever the provider put under ``error``) into its code.

    The code is the error's ``code``, else its ``type``, when a non-empty string (Groq:
    ``tool_use_failed`` → ``TOOL_USE_FAILED``); anything else is ``PROVIDER_ERROR``. Only rate
    limits, overload and 5xx are worth a retry.
    """
    fields = error if type(error) is dict else {"message": error}
    code, kind, status = fields.get("code"), fields.get("type"), fields.get("status")
    text = next((v for v in (code, kind) if type(v) is str and v), None)
    message = fields.get("message")
    numbers = [v for v in (code, status) if type(v) is int]
    words = " ".join(v.lower() for v in (code, kind, status) if type(v) is str)
    retryable = (any(n == 429 or 500 <= n <= 599 for n in numbers)
                 or any(w in words for w in _RETRYABLE_WORDS))
    return ProviderError(
        code=text.upper() if text is not None else "PROVIDER_ERROR",
        message=message[:ERROR_MESSAGE_CHARS] if type(message) is str else None,
        retryable=retryable)


def provider_error_event(data: bytes) -> ProviderError:
    """The error of an ``event: error`` frame: its ``error`` object, or the data itself."""
    data = bytes(data)  # orjson reads ``bytes`` itself, not a subclass (the framer's mark)
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return provider_error(data.decode("utf-8", "replace"))
    if type(body) is dict and type(body.get("error")) is dict:
        return provider_error(body["error"])
    return provider_error(body)


def malformed(payload: bytes | WireChunk, why: str) -> MalformedChunk:
    """The dead letter for a payload, quoting its first bytes so an operator can find it.

    A decoded chunk is written back out to be quoted; orjson refuses some values it read
    (nesting deeper than it writes), and building the reason must never raise itself.
    """
    if isinstance(payload, bytes):
        return MalformedChunk(f"{why}: {excerpt(payload)}")
    try:
        raw = orjson.dumps(payload)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return MalformedChunk(f"{why} (the chunk is nested too deeply to quote)")
    return MalformedChunk(f"{why}: {excerpt(raw)}")


def parse_chunk(payload: bytes) -> WireChunk:
    """Decode one event payload into a chunk object, or raise :class:`MalformedChunk`.

    Only the top level is checked here; the assembler checks the inside on its single walk
    over the chunk (see :meth:`toolwire.core.assembly.Assembler.feed`), since a second pass
    would cost as much again as the walk itself.
    """
    try:
        chunk = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise malformed(payload, f"not JSON ({exc.args[0]})") from None
    if type(chunk) is not dict:
        raise malformed(payload, "not a JSON object")
    return cast(WireChunk, chunk)


def _is_index(value: object) -> bool:
    return type(value) is int and value >= 0


def diagnose(chunk: object) -> str | None:
    """Name what is malformed in a decoded chunk, or ``None`` if its shape is sound.

    The slow, exact counterpart of the assembler's trusting walk: it runs only after that walk
    failed, so the dead letter says which field was wrong rather than a Python error.
    """
    if type(chunk) is not dict:
        return "not a JSON object"
    usage = chunk.get("usage")
    if usage is not None and type(usage) is not dict:
        return "'usage' is not an object"
    choices = chunk.get("choices")
    if choices is None:
        return None
    if type(choices) is not list:
        return "'choices' is not a list"
    for choice in choices:
        if type(choice) is not dict:
            return "a choice is not an object"
        index = choice.get("index")
        if index is not None and not _is_index(index):
            return "a choice 'index' is not a non-negative integer"
        delta = choice.get("delta")
        if delta is None:
            continue
        if type(delta) is not dict:
            return "'delta' is not an object"
        calls = delta.get("tool_calls")
        if calls is None:
            continue
        if type(calls) is not list:
            return "'tool_calls' is not a list"
        for call in calls:
            why = _diagnose_call(call)
            if why is not None:
                return why
    return None


def _diagnose_call(call: object) -> str | None:
    if type(call) is not dict:
        return "a tool call is not an object"
    index = call.get("index")
    if index is not None and not _is_index(index):
        return "a tool call 'index' is not a non-negative integer"
    for kind, text in (("function", "arguments"), ("custom", "input")):
        fields = call.get(kind)
        if fields is None:
            continue
        if type(fields) is not dict:
            return f"'{kind}' is not an object"
        value = fields.get(text)
        if value is not None and type(value) is not str:
            return f"'{kind}.{text}' is not a string"
    return None
