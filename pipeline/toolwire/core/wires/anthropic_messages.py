"""Anthropic Messages (``POST /v1/messages`` with ``stream: true``): its events, walk, end, finish.

The invariant: after any prefix of the body, the assembler's state is already what that prefix
says, so nothing is fixed up at the end and the record cannot depend on how the body was sliced,
nor on the assembler being rebuilt from the slices stored so far. In particular a ``tool_use``
block becomes a call when its ``content_block_start`` arrives (the next ordinal among client
calls, identity from the block's ``id`` and ``name``, arguments its start ``input`` as compact
JSON); its first non-empty ``input_json_delta`` replaces that provisional value and later ones
concatenate (issue 13: the deltas, "when that is empty, the start block's input"). Why: the
start ``input`` of a streamed block is ``{}`` while a programmatic call carries its whole input
there with no delta, and a call with no argument has only the ``{}``; either way the call is
never lost nor ``""`` (anthropic-sdk-go #164, langchain #23911).

Every event is dispatched on its JSON ``type``, never on the ``event:`` name (proxies send
data-only frames, some relabel them); unknown types are ignored (the API adds new ones).
Blocks are keyed by their ``index`` (a key, not a list position: proxies leave gaps, SDK #1192).
A delta for a block that has not started yet is held and applied when the block starts; one
still held at ``message_stop`` belongs to a block that never started: ``malformed_chunk``.

The body ends on ``message_stop``, or on an ``error`` event (overloaded on HTTP 200), which
ends it as a provider error; what follows is not read. ``data: [DONE]`` (OpenRouter) is
accepted and is not this wire's end.

The types are ``TypedDict``s over the dicts orjson returns. What is checked, in one pass as the
walk goes (the events are small, so there is no second, diagnosing walk as for Chat
Completions): objects where the wire has objects, strings where text is read, non-negative
integers where blocks are keyed. A payload that fails is the dead letter ``malformed_chunk``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, TypedDict, cast

from toolwire.core.errors import malformed
from toolwire.core.identity import ABSENT
from toolwire.core.wires._base import (
    BY_CALLS,
    ERROR_MESSAGE_CHARS,
    FinishPolicy,
    ProviderError,
    Wire,
    WireTarget,
)
from toolwire.core.wires._shared import first_object, parse_object

if TYPE_CHECKING:
    from toolwire.core.assembly import Call, Choice
    from toolwire.core.records import ServerCall

#: A trailer some gateways (OpenRouter) send after ``message_stop``: accepted, not the end.
DONE: Final = b"[DONE]"
#: Block types the provider runs itself: reported in ``server_tool_calls``, never executed.
SERVER_BLOCKS: Final = frozenset({"server_tool_use", "mcp_tool_use"})
#: Block fields kept verbatim per client call for the next turn (a toolset tool's full
#: identity is the pair ``toolset_name`` + bare ``name``).
PROVIDER_FIELDS: Final = ("caller", "toolset_name")
#: Error types the provider marks as transient.
RETRYABLE_ERRORS: Final = frozenset({"overloaded_error", "api_error"})


#: ``type`` values that open a Messages stream.
_FIRST: Final = frozenset({"message_start", "ping"})

class WireBlock(TypedDict, total=False):
    """``content_block``: ``tool_use``, ``server_tool_use``, ``text``, ``thinking``..."""

    type: str
    id: str | None
    name: str | None
    input: dict[str, object] | None
    caller: object
    toolset_name: str | None
    text: str | None
    thinking: str | None


class WireDelta(TypedDict, total=False):
    """``content_block_delta.delta``: ``input_json_delta``, ``text_delta``, ``thinking_delta``
    (``signature_delta`` and ``citations_delta`` add nothing to the record)."""

    type: str
    partial_json: str | None
    text: str | None
    thinking: str | None


class WireMessage(TypedDict, total=False):
    id: str | None
    model: str | None
    usage: dict[str, object] | None


class WireStop(TypedDict, total=False):
    """``message_delta.delta``; ``stop_details`` (a refusal's category) is not recorded."""

    stop_reason: str | None
    stop_sequence: str | None
    stop_details: object


class WireError(TypedDict, total=False):
    type: str | None
    message: str | None


class WireEvent(TypedDict, total=False):
    """Any event; only the fields of its ``type`` are present."""

    type: str
    index: int
    message: WireMessage
    content_block: WireBlock
    delta: WireDelta
    usage: dict[str, object] | None
    error: WireError


class _Block:
    """A started content block: the client call or server call it feeds, if any."""

    __slots__ = ("call", "fragments", "provisional", "server", "size")

    def __init__(self, call: Call | None = None, server: ServerCall | None = None) -> None:
        self.call = call
        self.server = server
        #: The call's arguments are still its start input (no non-empty delta yet).
        self.provisional = True
        #: A server call's ``partial_json`` fragments, joined when its block (or body) ends.
        self.fragments: list[str] = []
        #: Their length so far (characters: a lower bound of their UTF-8 size).
        self.size = 0


def start_arguments(block: WireBlock) -> str:
    """A block's start ``input`` as compact JSON, keys in received order (``""``: none sent)."""
    value = block.get("input")
    if value is None:
        return ""
    if type(value) is not dict:
        raise malformed(block, "'input' is not an object")
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        raise malformed(block, "'input' cannot be written back out") from None


def provider_error(event: WireEvent) -> tuple[ProviderError, str | None]:
    """An ``error`` event's error (its ``type`` upper-cased; only transient types retry), and
    that type verbatim (``None``: it sent none)."""
    error = event.get("error")
    if type(error) is not dict:
        raise malformed(event, "'error' is not an object")
    kind, message = error.get("type"), error.get("message")
    if kind is not None and type(kind) is not str:
        raise malformed(event, "'error.type' is not a string")
    if message is not None and type(message) is not str:
        raise malformed(event, "'error.message' is not a string")
    return ProviderError(code=kind.upper() if kind else "PROVIDER_ERROR",
                         message=None if message is None else message[:ERROR_MESSAGE_CHARS],
                         retryable=kind in RETRYABLE_ERRORS), kind or None


def _text(source: object, fields: WireDelta | WireBlock, key: str) -> str | None:
    """A text field (``None`` when absent or null); anything but a string is malformed."""
    value = fields.get(key)
    if value is None or type(value) is str:
        return value
    raise malformed(source, f"'{key}' is not a string")


def _block_index(event: WireEvent) -> int:
    index = event.get("index")
    if type(index) is not int or index < 0:
        raise malformed(event, "a block 'index' is not a non-negative integer")
    return index


class AnthropicMessages(Wire):
    """``POST /v1/messages`` with ``stream: true``, as Anthropic and the proxies relaying it
    stream it. One instance per response: it keeps the blocks of that response."""

    __slots__ = ("_blocks", "_choice", "_pending")

    name = "anthropic-messages"
    policy = FinishPolicy(
        finishes={"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
                  "max_tokens": "length", "model_context_window_exceeded": "length",
                  "refusal": "content_filter", "pause_turn": "other"},
        missing_end="the body ended without message_stop (connection dropped or cut)",
        no_reason=BY_CALLS,
    )

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        """A Messages stream opens with ``message_start`` (or a ``ping`` before it)."""
        payload = first_object(first)
        return payload is not None and payload.get("type") in _FIRST

    def __init__(self) -> None:
        #: Started blocks by their ``index``.
        self._blocks: dict[int, _Block] = {}
        #: Deltas of blocks that have not started (yet), by block index, in arrival order.
        self._pending: dict[int, list[WireEvent]] = {}
        self._choice: Choice | None = None

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        for payload in events:
            if payload == DONE:
                continue
            frame = payload
            if type(payload) is not bytes:  # a named event: orjson reads only ``bytes``
                payload = bytes(payload)
            event = cast(WireEvent, parse_object(payload))  # a JSON object, or malformed
            asm.events += 1
            kind = event.get("type")
            if kind == "content_block_delta":  # most of a stream: first
                self._delta(asm, event)
            elif kind == "content_block_start":
                self._start(asm, event)
            elif kind == "content_block_stop":
                block = self._blocks.get(_block_index(event))
                if block is not None and block.fragments:
                    self._close_server(asm, block)
            elif kind == "message_delta":
                self._message_delta(asm, event)
            elif kind == "message_start":
                self._message_start(asm, event)
            elif kind == "message_stop":
                self._end(asm, event, None)
                asm.ended_on(frame)
                return
            elif kind == "error":
                error, verbatim = provider_error(event)
                choice = self._choice_of(asm)
                if choice.finish_reason is None:  # no stop reason arrived: the error's
                    choice.finish_reason = verbatim  # verbatim type stands for it
                self._end(asm, event, error)
                asm.ended_on(frame)
                return
            elif kind is not None and type(kind) is not str:
                raise malformed(payload, "'type' is not a string")
            # ``ping`` and event types this wire does not know change nothing.

    def ends(self, last: bytes | None) -> bool:
        """Only a complete ``message_stop`` or ``error`` event ends this wire (the API always
        sends the blank line after it): a body that stops short of one was cut."""
        return False

    # -- the walk -----------------------------------------------------------------------------

    def _choice_of(self, asm: WireTarget) -> Choice:
        """Choice 0, the only one of this wire (made by the first event that needs it)."""
        choice = self._choice
        if choice is None:
            choice = self._choice = asm.choices.get(0) or asm.new_choice(0)
        return choice

    def _message_start(self, asm: WireTarget, event: WireEvent) -> None:
        message = event.get("message")
        if type(message) is not dict:
            raise malformed(event, "'message' is not an object")
        self._choice_of(asm)
        asm.name_response(message.get("id"), message.get("model"))
        self._usage(asm, event, message.get("usage"))

    def _message_delta(self, asm: WireTarget, event: WireEvent) -> None:
        stop = cast("WireStop | None", event.get("delta"))
        if stop is not None:
            if type(stop) is not dict:
                raise malformed(event, "'delta' is not an object")
            reason = stop.get("stop_reason")
            if reason is not None and type(reason) is not str:
                raise malformed(event, "'stop_reason' is not a string")
            if reason:
                self._choice_of(asm).finish_reason = reason
        self._usage(asm, event, event.get("usage"))

    @staticmethod
    def _usage(asm: WireTarget, event: WireEvent, usage: object) -> None:
        """The last usage object wins, verbatim (``message_start``'s, then ``message_delta``'s,
        which is cumulative)."""
        if usage is None:
            return
        if type(usage) is not dict:
            raise malformed(event, "'usage' is not an object")
        asm.keep_usage(event, usage)

    def _start(self, asm: WireTarget, event: WireEvent) -> None:
        index = _block_index(event)
        block = event.get("content_block")
        if type(block) is not dict:
            raise malformed(event, "'content_block' is not an object")
        kind = block.get("type")
        if type(kind) is not str:
            raise malformed(event, "'content_block.type' is not a string")
        choice = self._choice_of(asm)
        if kind == "tool_use":
            arguments = start_arguments(block)
            fields = cast("dict[str, object]", block)
            extra = [(k, fields[k]) for k in PROVIDER_FIELDS if fields.get(k) is not None]
            call = asm.start_call(0, choice)
            asm.apply_call(event, 0, choice, call.index, block.get("id", ABSENT),
                           block.get("name", ABSENT), None, "function", extra or None)
            asm.replace_arguments(call, arguments)
            started = _Block(call=call)
        elif kind in SERVER_BLOCKS:
            started = _Block(server=asm.add_server_call(
                event, kind, block.get("id"), block.get("name"), start_arguments(block)))
        else:
            started = _Block()
            field = "thinking" if kind == "thinking" else "text" if kind == "text" else None
            if field is not None:  # the start text is "" as the API sends it; a relay's whole
                text = _text(event, block, field)  # block keeps its text
                if text:
                    (choice.reasoning if field == "thinking" else choice.content).append(text)
        self._blocks[index] = started
        early = self._pending.pop(index, None)
        if early is not None:
            for delta in early:
                self._delta(asm, delta)

    def _delta(self, asm: WireTarget, event: WireEvent) -> None:
        index = event.get("index")
        if type(index) is not int or index < 0:
            raise malformed(event, "a block 'index' is not a non-negative integer")
        delta = event.get("delta")
        if type(delta) is not dict:
            raise malformed(event, "'delta' is not an object")
        block = self._blocks.get(index)
        if block is None:  # its block has not started: held until it does
            self._pending.setdefault(index, []).append(event)
            return
        kind = delta.get("type")
        if kind == "input_json_delta":
            partial = delta.get("partial_json")  # read here, not by _text: most of a stream
            if not partial:
                if partial is not None and type(partial) is not str:
                    raise malformed(event, "'partial_json' is not a string")
                return
            if type(partial) is not str:
                raise malformed(event, "'partial_json' is not a string")
            call = block.call
            if call is not None:
                if block.provisional:  # the first fragment replaces the start input
                    block.provisional = False
                    asm.replace_arguments(call, partial)
                else:
                    asm.apply_call(event, 0, self._choice or self._choice_of(asm), call.index,
                                   ABSENT, ABSENT, partial)
            elif block.server is not None:
                block.fragments.append(partial)
                block.size += len(partial)
                if block.size > asm.limits.max_arguments_bytes:
                    self._close_server(asm, block)  # raises Oversize
        elif kind == "text_delta":
            text = _text(event, delta, "text")
            if text:
                self._choice_of(asm).content.append(text)
        elif kind == "thinking_delta":
            text = _text(event, delta, "thinking")
            if text:
                self._choice_of(asm).reasoning.append(text)
        elif kind is not None and type(kind) is not str:
            raise malformed(event, "'delta.type' is not a string")

    @staticmethod
    def _close_server(asm: WireTarget, block: _Block) -> None:
        """A server call's streamed arguments, joined, replace its start input."""
        if block.server is not None:
            joined = "".join(block.fragments)
            block.fragments = [joined]
            asm.set_server_arguments(block.server, joined)

    def _end(self, asm: WireTarget, event: WireEvent, error: ProviderError | None) -> None:
        """``message_stop`` or an ``error`` event: the response is over."""
        if self._pending and error is None:
            index = next(iter(self._pending))
            raise malformed(self._pending[index][0],
                            f"a delta for block {index}, which never started")
        for block in self._blocks.values():
            if block.fragments:
                self._close_server(asm, block)
        asm.end_body(error)
