"""Typed wire objects of a ``chat.completion.chunk`` and their structural check.

The types are ``TypedDict``s over the dicts orjson returns (no copy per chunk). Every field that
a provider may send as ``null`` is typed ``X | None`` and may be absent (``total=False``), so
mypy makes every reader of the wire check for both. Identity fields are typed as the wire
promises, but the assembler still treats them as untrusted ``object`` (a gateway may send a
number): see :func:`pipeline.core.identity.accept_identity`.

:func:`parse_chunk` checks only what the assembler walks into: objects and lists where the wire
has objects and lists, strings where text is concatenated, integers where calls are keyed. A
payload that fails is the dead letter ``malformed_chunk``; nothing else is rejected.
"""

from __future__ import annotations

from typing import TypedDict, cast

import orjson

from pipeline.core.errors import MalformedChunk, excerpt


class WireFunction(TypedDict, total=False):
    name: str | None
    arguments: str | None


class WireToolCall(TypedDict, total=False):
    index: int | None
    id: str | None
    type: str | None
    function: WireFunction | None


class WireDelta(TypedDict, total=False):
    role: str | None
    content: str | None
    reasoning_content: str | None
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


def _bad(payload: bytes, why: str) -> MalformedChunk:
    return MalformedChunk(f"{why}: {excerpt(payload)}")


def _is_index(value: object) -> bool:
    return type(value) is int and value >= 0


def parse_chunk(payload: bytes) -> WireChunk:
    """Decode one event payload; raise :class:`MalformedChunk` with the reason and an excerpt."""
    try:
        chunk = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise _bad(payload, f"not JSON ({exc.args[0]})") from None
    if type(chunk) is not dict:
        raise _bad(payload, "not a JSON object")
    choices = chunk.get("choices")
    if choices is not None:
        if type(choices) is not list:
            raise _bad(payload, "'choices' is not a list")
        for choice in choices:
            if type(choice) is not dict:
                raise _bad(payload, "a choice is not an object")
            index = choice.get("index")
            if index is not None and not _is_index(index):
                raise _bad(payload, "a choice 'index' is not a non-negative integer")
            delta = choice.get("delta")
            if delta is None:
                continue
            if type(delta) is not dict:
                raise _bad(payload, "'delta' is not an object")
            calls = delta.get("tool_calls")
            if calls is None:
                continue
            if type(calls) is not list:
                raise _bad(payload, "'tool_calls' is not a list")
            for call in calls:
                if type(call) is not dict:
                    raise _bad(payload, "a tool call is not an object")
                index = call.get("index")
                if index is not None and not _is_index(index):
                    raise _bad(payload, "a tool call 'index' is not a non-negative integer")
                function = call.get("function")
                if function is None:
                    continue
                if type(function) is not dict:
                    raise _bad(payload, "'function' is not an object")
                arguments = function.get("arguments")
                if arguments is not None and type(arguments) is not str:
                    raise _bad(payload, "'function.arguments' is not a string")
    usage = chunk.get("usage")
    if usage is not None and type(usage) is not dict:
        raise _bad(payload, "'usage' is not an object")
    return cast(WireChunk, chunk)
