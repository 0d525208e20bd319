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

from typing import TypedDict, cast

import orjson

from toolwire.core.errors import MalformedChunk, excerpt


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
    function = call.get("function")
    if function is None:
        return None
    if type(function) is not dict:
        return "'function' is not an object"
    arguments = function.get("arguments")
    if arguments is not None and type(arguments) is not str:
        return "'function.arguments' is not a string"
    return None
