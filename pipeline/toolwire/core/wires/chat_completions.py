"""OpenAI Chat Completions (``chat.completion.chunk``): its objects, its walk, its end and finish.

The types are ``TypedDict``s over the dicts orjson returns (no copy per chunk). Every field that
a provider may send as ``null`` is typed ``X | None`` and may be absent (``total=False``), so
mypy makes every reader of the wire check for both. Identity fields are typed as the wire
promises, but they are still treated as untrusted ``object`` (a gateway may send a number): see
:func:`toolwire.core.identity.accept_identity`.

What is checked (by :func:`parse_chunk` at the top level, by the walk inside): objects and
lists where the wire has objects and lists, strings where text is concatenated, non-negative
integers where calls are keyed. A payload that fails is the dead letter ``malformed_chunk``;
nothing else is rejected (a non-string ``content`` or ``finish_reason`` is simply not text).

The body ends explicitly on ``data: [DONE]`` (even without its blank line), on a
``chat.completion.done`` object (Perplexity), on an ``event: error`` frame (Groq) or on a chunk
with an ``error`` object (OpenRouter); what follows is not read. Some providers send none of
these (Writer, Perplexity's older ``chat.completion`` chunks): for them, and only when named
(``Options.end_without_done``), a body that ends on a whole event after every choice that began
sent its finish reason is complete (:meth:`ChatCompletions.finished`).

Reasoning text is ``delta.reasoning_content`` (DeepSeek, vLLM) or, where a delta has no
``reasoning_content`` string, ``delta.reasoning`` (OpenRouter, the Vercel AI Gateway): one of
the two per delta, never both, so a gateway that sends the text under both names is not counted
twice. OpenRouter's ``delta.reasoning_details`` entries are merged by ``type`` and ``index``
(the text of ``reasoning.text`` and ``reasoning.summary`` concatenated, every other field the
first value that is neither ``null`` nor ``""``) and carried on the choice, verbatim, for the
next turn; an entry whose ``id`` is a call's id (Gemini 3's ``reasoning.encrypted`` thought
signature) goes into that call's ``provider_fields`` too, whichever of the two came first
(:meth:`ChatCompletions.settle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypedDict, cast

import orjson

from toolwire.core.errors import MalformedChunk, malformed
from toolwire.core.framing import event_name
from toolwire.core.identity import ABSENT, Repair, accept_identity
from toolwire.core.wires._base import (
    ERROR_MESSAGE_CHARS,
    FinishPolicy,
    ProviderError,
    Wire,
    WireTarget,
)
from toolwire.core.wires._shared import DONE, first_object, parse_object

if TYPE_CHECKING:
    from toolwire.core.assembly import Choice

#: The payload of the last event: ``data: [DONE]``.
#: The ``object`` of Perplexity's last chunk: an explicit end, as ``data: [DONE]`` is.
DONE_OBJECT: Final = "chat.completion.done"
#: The fields of a tool-call entry the walk reads; any other is a provider field, kept
#: verbatim for the next turn (Gemini 3's ``extra_content.google.thought_signature``).
CALL_FIELDS: Final = frozenset({"index", "id", "type", "function", "custom"})

#: The text field of each ``reasoning_details`` type whose text arrives in pieces.
DETAIL_TEXT: Final[dict[str | None, str]] = {"reasoning.text": "text",
                                            "reasoning.summary": "summary"}
#: The key of the entries a call carries in its ``provider_fields`` (as the message has them).
DETAILS_FIELD: Final = "reasoning_details"

INDEX_FALLBACKS: Final = int(Repair.INDEX_FALLBACKS)


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
    #: Reasoning text under OpenRouter's name, read where ``reasoning_content`` is not a string.
    reasoning: str | None
    #: OpenRouter: reasoning entries for the next turn (``reasoning.text``, ``.summary``,
    #: ``.encrypted``), in pieces by ``type`` and ``index``.
    reasoning_details: list[dict[str, object]] | None
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
    data = bytes(data)  # orjson reads ``bytes`` itself, not a subclass (a named event)
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return provider_error(data.decode("utf-8", "replace"))
    if type(body) is dict and type(body.get("error")) is dict:
        return provider_error(body["error"])
    return provider_error(body)


def parse_chunk(payload: bytes) -> WireChunk:
    """Decode one event payload into a chunk object, or raise :class:`MalformedChunk`
    (:func:`~toolwire.core.wires._shared.parse_object`: the top level only; the walk,
    :func:`apply_chunk`, checks the inside as it goes)."""
    return cast(WireChunk, parse_object(payload))


def _is_index(value: object) -> bool:
    return type(value) is int and value >= 0


def diagnose(chunk: object) -> str | None:
    """Name what is malformed in a decoded chunk, or ``None`` if its shape is sound.

    The slow, exact counterpart of the trusting walk: it runs only after that walk failed, so
    the dead letter says which field was wrong rather than a Python error.
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


def _diagnosed(chunk: WireChunk, payload: bytes) -> MalformedChunk | None:
    """The dead letter for a chunk whose walk failed, or ``None`` if its shape is sound.

    It quotes the payload as received rather than the chunk written back out.
    """
    why = diagnose(chunk)
    return None if why is None else malformed(payload, why)


def apply_chunk(asm: WireTarget, chunk: WireChunk) -> None:
    """Apply one parsed chunk.

    The walk trusts the shape and lets a wrong type fail on its own (a ``.get`` on a list,
    iterating a number); only then does :func:`diagnose` walk the chunk again to name the
    fault (see :meth:`ChatCompletions.apply`). Checking every type up front would cost the hot
    path as much as the walk itself.
    """
    asm.events += 1
    if asm.model is None or asm.response_id is None:
        asm.name_response(chunk.get("id"), chunk.get("model"))
    usage = chunk.get("usage")
    if usage is not None:
        if type(usage) is not dict:
            raise malformed(chunk, "'usage' is not an object")
        asm.keep_usage(chunk, usage)
    error = chunk.get("error")
    if error is not None:
        # OpenRouter puts an error object into an ordinary chunk, even after a finish
        # reason; the chunk's own choices still count, then the response ends.
        asm.end_body(provider_error(error))
    elif chunk.get("object") == DONE_OBJECT:
        # Perplexity ends with a ``chat.completion.done`` chunk and never sends [DONE].
        asm.end_body()
    choices = chunk.get("choices")
    if not choices:
        if choices is not None and type(choices) is not list:
            raise malformed(chunk, "'choices' is not a list")
        return
    known = asm.choices
    for position, wire_choice in enumerate(choices):
        index = wire_choice.get("index")
        if index is None:
            index = position
        elif type(index) is not int or index < 0:
            raise malformed(chunk, "a choice 'index' is not a non-negative integer")
        choice = known.get(index)
        if choice is None:
            choice = asm.new_choice(index)
        finish = wire_choice.get("finish_reason")
        if finish and type(finish) is str:
            choice.finish_reason = finish
        delta = wire_choice.get("delta")
        if not delta:
            if delta is not None and type(delta) is not dict:
                raise malformed(chunk, "'delta' is not an object")
            continue
        tool_calls = delta.get("tool_calls")
        if tool_calls is None or len(delta) > 1:  # an argument fragment has nothing else
            content = delta.get("content")
            if content and type(content) is str:
                choice.content.append(content)
            reasoning = delta.get("reasoning_content")
            if type(reasoning) is not str:
                reasoning = delta.get("reasoning")
            if reasoning and type(reasoning) is str:
                choice.reasoning.append(reasoning)
            refusal = delta.get("refusal")
            if refusal and type(refusal) is str:
                choice.refusal.append(refusal)
            details = delta.get("reasoning_details")
            if details:
                _merge_details(asm, chunk, index, choice, details)
        if tool_calls:
            for call_position, entry in enumerate(tool_calls):
                wire_index = entry.get("index")
                function = entry.get("function")
                # An argument fragment ({index, function}, maybe with an id) is most of a
                # stream: read here, one call per entry; any other entry in full below.
                if (type(wire_index) is int and wire_index >= 0 and type(function) is dict
                        and function and len(entry) == (3 if "id" in entry else 2)):
                    arguments = function.get("arguments")
                    if arguments is not None and type(arguments) is not str:
                        raise malformed(chunk, "'function.arguments' is not a string")
                    asm.apply_call(chunk, index, choice, wire_index, entry.get("id", ABSENT),
                                   function.get("name", ABSENT), arguments)
                else:
                    _apply_call(asm, chunk, index, choice, call_position, entry)
        elif tool_calls is not None and type(tool_calls) is not list:
            raise malformed(chunk, "'tool_calls' is not a list")


def _merge_details(asm: WireTarget, chunk: WireChunk, choice_index: int, choice: Choice,
                   details: object) -> None:
    """Merge a delta's ``reasoning_details`` pieces into the choice's entries."""
    if type(details) is not list:
        raise malformed(chunk, "'reasoning_details' is not a list")
    for entry in details:
        if type(entry) is not dict:
            raise malformed(chunk, "a 'reasoning_details' entry is not an object")
        kind, position = entry.get("type"), entry.get("index")
        if type(kind) is not str:
            kind = None
        if type(position) is not int:
            position = None
        asm.merge_detail(chunk, choice_index, choice, (kind, position), entry,
                         DETAIL_TEXT.get(kind))


def _apply_call(asm: WireTarget, chunk: WireChunk, choice_index: int, choice: Choice,
                position: int, entry: WireToolCall) -> None:
    """Read one tool-call entry into what it offers, then hand that to the assembler."""
    wire_index = entry.get("index")
    if wire_index is None:
        wire_index = position
        asm.repairs[INDEX_FALLBACKS] += 1
    elif type(wire_index) is not int or wire_index < 0:
        raise malformed(chunk, "a tool call 'index' is not a non-negative integer")
    function = entry.get("function")
    if function:
        offered_name: object = function.get("name", ABSENT)
        arguments = function.get("arguments")
    elif function is None or type(function) is dict:
        offered_name = ABSENT
        arguments = None
    else:
        raise malformed(chunk, "'function' is not an object")
    offered_id = entry.get("id", ABSENT)
    fed_custom = False
    custom = entry.get("custom")
    if custom is not None or entry.get("type") == "custom":
        fed_custom = _feeds_custom(chunk, custom, entry, offered_name, arguments)
        if fed_custom and custom is not None:
            offered_name = custom.get("name", ABSENT)
            arguments = custom.get("input")
    if arguments is not None and type(arguments) is not str:
        # Before anything of this entry is applied: a chunk that fails adds nothing.
        raise malformed(chunk, "'custom.input' is not a string" if fed_custom
                        else "'function.arguments' is not a string")
    extra = (None if CALL_FIELDS.issuperset(entry)
             else [(k, v) for k, v in entry.items() if k not in CALL_FIELDS])
    asm.apply_call(chunk, choice_index, choice, wire_index, offered_id, offered_name, arguments,
                   "custom" if fed_custom else "function", extra)


def _feeds_custom(chunk: WireChunk, custom: object, entry: WireToolCall, offered_name: object,
                  arguments: object) -> bool:
    """Whether an entry that mentions ``custom`` feeds a custom (freeform) tool call.

    Gateways echo an empty ``custom: {}`` on ordinary function deltas: that changes nothing.
    Only ``type: "custom"`` or a string ``custom.name``/``custom.input`` does.
    """
    if custom is not None and type(custom) is not dict:
        raise malformed(chunk, "'custom' is not an object")
    if not (entry.get("type") == "custom" or (
            custom is not None and (type(custom.get("name")) is str
                                    or type(custom.get("input")) is str))):
        return False
    if arguments or accept_identity(offered_name):
        raise malformed(chunk, "a tool call is fed both 'function' and 'custom'")
    return True


class ChatCompletions(Wire):
    """``POST /v1/chat/completions`` with ``stream: true``, as OpenAI and the compatible APIs
    stream it."""

    __slots__ = ()

    name = "openai-chat"
    reads_event_names = True  # Groq's ``event: error``

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        """A chunk names its object, or (behind a proxy that drops it) has ``choices``."""
        payload = first_object(first)
        return payload is not None and (payload.get("object") == "chat.completion.chunk"
                                        or "choices" in payload)
    policy = FinishPolicy(
        finishes={"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                  "content_filter": "content_filter"},
        missing_end="the body ended without data: [DONE] (connection dropped or cut)",
        finished_hint=("every choice had sent its finish reason, so the provider may be one "
                       "that never sends data: [DONE] (Writer, Perplexity's older "
                       "chat.completion chunks): name it in TOOLWIRE_END_WITHOUT_DONE "
                       "(toolwire assemble --end-without-done) to take such a body as "
                       "complete"),
    )

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        for payload in events:
            if payload == DONE:
                asm.end_body()
                asm.ended_on(payload)
                return
            event = payload
            if type(payload) is not bytes:  # a named event
                if event_name(payload) == "error":  # Groq: it ends the response
                    asm.end_body(provider_error_event(payload))
                    asm.ended_on(event)
                    return
                payload = bytes(payload)  # orjson reads ``bytes`` itself, not a subclass
            chunk = parse_chunk(payload)
            try:
                apply_chunk(asm, chunk)
            except (AttributeError, TypeError) as exc:
                if (failure := _diagnosed(chunk, payload)) is None:
                    raise  # not a shape fault: the assembler fails it as an internal error
                raise failure from exc
            if asm.ended:  # the chunk itself ended the body: the rest is not read
                asm.ended_on(event)
                return

    def ends(self, last: bytes | None) -> bool:
        """``data: [DONE]`` as the last line, even without the blank line after it: many
        servers close the stream right after ``data: [DONE]\\n``. Any other unfinished event is
        a body cut short, which is not parsed (half a JSON object is a dropped connection,
        not a malformed chunk)."""
        return last == DONE

    def finished(self, asm: WireTarget) -> bool:
        """Every choice that began sent its finish reason (and one began at all)."""
        choices = asm.choices
        return bool(choices) and all(c.finish_reason is not None for c in choices.values())

    def settle(self, asm: WireTarget) -> None:
        """A ``reasoning_details`` entry whose ``id`` is a call's id goes into that call's
        ``provider_fields`` too (OpenRouter sends Gemini 3's signature one chunk before its
        call, or after it): the call's turn cannot be sent back without it."""
        for choice_index, choice in asm.choices.items():
            if choice.details is None:
                continue
            by_id: dict[str, list[dict[str, object]]] = {}
            for entry in choice.details.render():
                entry_id = entry.get("id")
                if accept_identity(entry_id):
                    by_id.setdefault(entry_id, []).append(entry)
            if not by_id:
                continue
            for call in asm.calls.values():
                if call.choice == choice_index and call.id is not None and call.id in by_id:
                    entries = by_id[call.id]
                    asm.keep_provider_fields(entries, call, [(DETAILS_FIELD, entries)])
