"""OpenAI Responses (``POST /v1/responses``, ``stream: true``): its events, walk, end and finish.

The invariant: **a call is joined to its item by ``output_index`` alone, and only the item's
``call_id`` and ``name`` identify it.** Item ids (``fc_…``, ``ctc_…``) may rotate on every event
(compatible providers) and deltas carry no ``call_id`` (mcp-use #2550 keyed by it and lost every
call), so ``output_index`` is the one key every event of an item shares; the item id never
stands in for ``call_id``, since the next turn's ``function_call_output`` must name the
``call_id`` (swapping the two is a 400).

Every event is dispatched on its JSON ``type``, never on the ``event:`` name (proxies strip
``event:`` lines); unknown types are ignored. An event whose ``sequence_number`` was seen is
dropped, whatever it carries (a resumed relay re-sends a window: applied twice, text doubles and
a second call opens). What each event does:

- ``response.output_item.added`` (or ``.done`` for an item never added) with a ``function_call``
  or ``custom_tool_call`` item starts a client call at the next ordinal; ``web_search_call``,
  ``file_search_call``, ``code_interpreter_call``, ``image_generation_call``, ``mcp_call``,
  ``mcp_list_tools`` and ``mcp_approval_request`` items go to ``server_tool_calls`` (the
  provider runs them: informational, never withheld). Other items (messages, reasoning) only
  carry text.
- ``*.function_call_arguments.delta``, ``*.custom_tool_call_input.delta`` and
  ``*.mcp_call_arguments.delta`` append to the item at their ``output_index``; a delta that
  arrives before its item is kept and joined to it when it is added, and one whose item never
  arrives by the terminal event makes the response a ``malformed_chunk``. The ``.done`` event's
  and the ``output_item.done`` item's whole value, when present, replace the fragments.
- ``output_text``, ``reasoning_summary_text`` and ``refusal`` deltas go to content, reasoning
  and refusal, in order, without separator (their ``.done`` events are not read).
- An ``error`` event is kept as the response's error and does not end it; only
  ``response.completed``, ``response.incomplete`` and ``response.failed`` do. They set the
  verbatim finish reason (``completed``, the incomplete reason, ``failed``) and the usage, and
  ``response.failed`` carries its ``error``. Nothing after them is read (OpenRouter's trailing
  ``data: [DONE]`` included); a ``[DONE]`` before them is ignored.

What is checked: JSON objects where the wire has objects, strings where text is concatenated,
non-negative integers where items are keyed; anything else is ``malformed_chunk``. Each event is
small and the checks are inline, so there is no separate diagnosis pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, TypedDict, cast

import orjson

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
from toolwire.core.wires._shared import DONE, first_object

if TYPE_CHECKING:
    from toolwire.core.assembly import Call, Choice
    from toolwire.core.records import ServerCall

__all__ = ["OpenAIResponses", "provider_error"]

#: Items the provider runs itself: they go to ``server_tool_calls`` with this ``type``.
SERVER_ITEMS: Final = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
    "mcp_call", "mcp_list_tools", "mcp_approval_request"})
#: Client-call items and the record ``type`` of their call.
CLIENT_ITEMS: Final[dict[str, Literal["function", "custom"]]] = {
    "function_call": "function", "custom_tool_call": "custom"}
#: Item fields kept verbatim per call for the next turn (``provider_fields``).
PROVIDER_FIELDS: Final = ("namespace", "caller", "async")
#: Error codes the provider marks as transient: worth a retry.
RETRYABLE_CODES: Final = frozenset({"server_error", "rate_limit_exceeded"})
#: The events that end a response, and the finish reason each gives (``incomplete``: its
#: ``incomplete_details.reason`` when it has one).
TERMINAL: Final = {"response.completed": "completed", "response.incomplete": "incomplete",
                   "response.failed": "failed"}


class WireItem(TypedDict, total=False):
    """An output item (``output_item.added``/``.done``): only the fields the walk reads."""

    type: str | None
    id: str | None
    call_id: str | None
    name: str | None
    #: A function call's or MCP item's arguments (JSON text).
    arguments: str | None
    #: A custom tool call's freeform input.
    input: str | None
    status: str | None
    #: A web search's action (``{"type": "search", "query": ...}``).
    action: dict[str, object] | None
    #: Provider fields (with ``async``, not a Python name): kept verbatim per call.
    namespace: object
    caller: object


class WireError(TypedDict, total=False):
    code: str | None
    message: str | None


class WireResponse(TypedDict, total=False):
    """The response object of ``response.created`` and the terminal events."""

    id: str | None
    model: str | None
    status: str | None
    error: WireError | None
    incomplete_details: dict[str, object] | None
    usage: dict[str, object] | None


class WireEvent(TypedDict, total=False):
    type: str
    sequence_number: int | None
    output_index: int | None
    item: WireItem | None
    #: A delta event's text (arguments, input or output text).
    delta: str | None
    #: ``*.function_call_arguments.done`` / ``*.mcp_call_arguments.done``.
    arguments: str | None
    #: ``*.custom_tool_call_input.done``.
    input: str | None
    response: WireResponse | None
    #: An ``error`` event: ``code``/``message`` at the top, or an ``error`` object.
    code: str | None
    message: str | None
    error: WireError | None


def provider_error(error: object, fallback: str) -> ProviderError:
    """An ``error`` event's or a failed response's error: its ``code`` upper-cased (``fallback``
    without one), its message, retryable for ``server_error`` and ``rate_limit_exceeded``."""
    fields = error if type(error) is dict else {}
    code, message = fields.get("code"), fields.get("message")
    if type(code) is not str or not code:
        code = None
    return ProviderError(
        code=fallback if code is None else code.upper(),
        message=message[:ERROR_MESSAGE_CHARS] if type(message) is str else None,
        retryable=code in RETRYABLE_CODES)


def _index(event: WireEvent, payload: bytes) -> int:
    index = event.get("output_index")
    if type(index) is not int or index < 0:
        raise malformed(payload, "'output_index' is not a non-negative integer")
    return index


def _text(event: WireEvent, key: Literal["delta", "arguments", "input"], payload: bytes
          ) -> str | None:
    value = event.get(key)
    if value is not None and type(value) is not str:
        raise malformed(payload, f"'{key}' is not a string")
    return value


class _Server:
    """A server call being streamed: its record entry, and its argument deltas until joined."""

    __slots__ = ("entry", "fragments")

    def __init__(self, entry: ServerCall) -> None:
        self.entry = entry
        self.fragments: list[str] = []


#: The delta kinds that feed an item; a delta before its item waits under its kind.
_Feed = Literal["arguments", "input", "mcp"]
_FEEDS: Final[dict[str, _Feed]] = {
    "response.function_call_arguments.delta": "arguments",
    "response.custom_tool_call_input.delta": "input",
    "response.mcp_call_arguments.delta": "mcp",
}
#: The delta event type that feeds each client-call item type.
_DELTA_OF: Final = {"function_call": "response.function_call_arguments.delta",
                    "custom_tool_call": "response.custom_tool_call_input.delta"}
#: Which delta kind each item type takes.
_FED_BY: Final[dict[str, _Feed]] = {
    "function_call": "arguments", "custom_tool_call": "input", "mcp_call": "mcp"}
_TEXT: Final = {"response.output_text.delta": "content",
                "response.reasoning_summary_text.delta": "reasoning",
                "response.refusal.delta": "refusal"}
#: ``.done`` events carrying an item's whole value, and the field it is in.
_WHOLE: Final[dict[str, Literal["arguments", "input"]]] = {
    "response.function_call_arguments.done": "arguments",
    "response.custom_tool_call_input.done": "input",
    "response.mcp_call_arguments.done": "arguments",
}


class OpenAIResponses(Wire):
    """``POST /v1/responses`` with ``stream: true``, as OpenAI, OpenRouter and the compatible
    servers stream it."""

    __slots__ = ("_choice", "_early", "_fed", "_items", "_seen", "_texts")

    name = "openai-responses"
    policy = FinishPolicy(
        finishes={"completed": BY_CALLS, "max_output_tokens": "length",
                  "content_filter": "content_filter", "failed": "error"},
        missing_end="the body ended without response.completed, response.incomplete or "
                    "response.failed (connection dropped or cut)",
    )

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        """Every Responses event's ``type`` begins ``response.``."""
        payload = first_object(first)
        kind = None if payload is None else payload.get("type")
        return type(kind) is str and kind.startswith("response.")

    def __init__(self) -> None:
        self._choice: Choice | None = None
        #: ``output_index`` → what its item is: a client call, a server call, or another item
        #: (its type: a message, reasoning).
        self._items: dict[int, Call | _Server | str] = {}
        #: Deltas that came before their item, by ``output_index``.
        self._early: dict[int, list[tuple[_Feed, str]]] = {}
        #: ``sequence_number``s applied so far.
        self._seen: set[int] = set()
        #: The hot path's shortcuts: ``output_index`` → (the delta type that feeds it, the
        #: client call), and text delta type → the list it appends to (once choice 0 exists).
        self._fed: dict[int, tuple[str, Call]] = {}
        self._texts: dict[str, list[str]] = {}

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        seen, fed_by, texts, choice = self._seen, self._fed, self._texts, self._choice
        for payload in events:
            if payload == DONE:  # a trailer some gateways send; only the terminal event ends
                continue
            try:
                # A named event is a ``bytes`` subclass, which orjson does not read: a view of
                # it costs less than a copy.
                event = orjson.loads(payload if type(payload) is bytes else memoryview(payload))
            except orjson.JSONDecodeError as exc:
                raise malformed(payload, f"not JSON ({exc.args[0]})") from None
            if type(event) is not dict:
                raise malformed(payload, "not a JSON object")
            seq = event.get("sequence_number")
            if seq is not None:
                if type(seq) is not int:
                    raise malformed(payload, "'sequence_number' is not an integer")
                if seq in seen:
                    continue
                seen.add(seq)
            asm.events += 1
            kind = event.get("type")
            if type(kind) is not str:
                if kind is None:
                    continue
                raise malformed(payload, "'type' is not a string")
            # Argument and text deltas are most of a stream: applied here when their item (or
            # choice 0) is known and their fields are sound; anything else in full below.
            delta = event.get("delta")
            if type(delta) is str:
                text = texts.get(kind)
                if text is not None:
                    if delta:
                        text.append(delta)
                    continue
                index = event.get("output_index")
                fed = fed_by.get(index) if type(index) is int else None
                if fed is not None and fed[0] == kind and choice is not None:
                    call = fed[1]
                    if delta:
                        asm.apply_call(payload, 0, choice, call.index, ABSENT, ABSENT, delta,
                                       call.kind)
                    continue
            self._event(asm, cast(WireEvent, event), kind, payload)
            choice = self._choice
            if asm.ended:  # the terminal event: nothing after it is read
                asm.ended_on(payload)
                return

    def _event(self, asm: WireTarget, event: WireEvent, kind: str, payload: bytes) -> None:
        feed = _FEEDS.get(kind)
        if feed is not None:
            delta = _text(event, "delta", payload)
            if delta:
                self._feed(asm, _index(event, payload), feed, delta, payload)
            return
        text = _TEXT.get(kind)
        if text is not None:
            delta = _text(event, "delta", payload)
            if delta:
                getattr(self._choice_of(asm), text).append(delta)
            return
        whole = _WHOLE.get(kind)
        if whole is not None:
            value = _text(event, whole, payload)
            if value:
                self._replace(asm, _index(event, payload), value, payload)
            return
        if kind == "response.output_item.added" or kind == "response.output_item.done":
            item = event.get("item")
            if type(item) is not dict:
                raise malformed(payload, "'item' is not an object")
            self._item(asm, _index(event, payload), item, kind.endswith("done"), payload)
        elif kind in TERMINAL:
            self._end(asm, event, TERMINAL[kind], payload)
        elif kind == "error":
            if asm.error is None:  # kept as the response's error; it does not end it
                error = event.get("error")
                asm.error = provider_error(error if type(error) is dict else event, "ERROR")
        elif kind == "response.created" or kind == "response.in_progress":
            self._identify(asm, event, payload)

    # -- items -------------------------------------------------------------------------------

    def _choice_of(self, asm: WireTarget) -> Choice:
        choice = self._choice
        if choice is None:
            choice = self._choice = asm.choices.get(0) or asm.new_choice(0)
            self._texts.update({kind: getattr(choice, field) for kind, field in _TEXT.items()})
        return choice

    def _item(self, asm: WireTarget, index: int, item: WireItem, done: bool,
              payload: bytes) -> None:
        """An item added (or done): start what it is at ``index``, or update what it was."""
        kind = item.get("type")
        slot = self._items.get(index)
        if slot is None:
            if kind in CLIENT_ITEMS:
                choice = self._choice_of(asm)
                slot = asm.start_call(0, choice)
                asm.apply_call(payload, 0, choice, slot.index, item.get("call_id", ABSENT),
                               item.get("name", ABSENT), None, CLIENT_ITEMS[kind],
                               self._provider_fields(item))
                self._fed[index] = (_DELTA_OF[kind], slot)
            elif kind in SERVER_ITEMS:
                slot = _Server(asm.add_server_call(payload, kind, item.get("id"),
                                                   item.get("name"), status=item.get("status")))
            else:
                slot = kind if type(kind) is str else ""
            self._items[index] = slot
            early = self._early.pop(index, None)
            if early is not None:
                for feed, delta in early:
                    self._feed(asm, index, feed, delta, payload)
        elif type(slot) is _Server:
            entry = slot.entry
            if type(item.get("name")) is str and item["name"]:
                entry["name"] = item["name"]
            status = item.get("status")
            entry["status"] = status if type(status) is str else None
        elif type(slot) is not str:
            call = cast("Call", slot)
            # Fill in what the call still lacks; a value it has is never re-offered here (a
            # different call_id would read as the head of a new call on the same index).
            extra = self._provider_fields(item)
            if call.id is None or call.name is None or extra:
                asm.apply_call(payload, 0, self._choice_of(asm), call.index,
                               item.get("call_id", ABSENT) if call.id is None else ABSENT,
                               item.get("name", ABSENT) if call.name is None else ABSENT,
                               None, call.kind, extra)
        if done or type(slot) is _Server:
            whole = self._whole_of(slot, item, payload)
            if whole:
                self._replace(asm, index, whole, payload)

    @staticmethod
    def _provider_fields(item: WireItem) -> list[tuple[str, object]] | None:
        fields = cast("dict[str, object]", item)
        kept = [(key, fields[key]) for key in PROVIDER_FIELDS if fields.get(key) is not None]
        return kept or None

    @staticmethod
    def _whole_of(slot: Call | _Server | str, item: WireItem, payload: bytes) -> str | None:
        """An item's whole arguments (or a custom call's input, a web search's action)."""
        if type(slot) is str:
            return None
        if type(slot) is not _Server and cast("Call", slot).kind == "custom":
            key: Literal["arguments", "input"] = "input"
        else:
            key = "arguments"
        value = item.get(key)
        if value is not None and type(value) is not str:
            raise malformed(payload, f"item '{key}' is not a string")
        if value is None and type(slot) is _Server:
            action = item.get("action")
            if type(action) is dict:
                return orjson.dumps(action).decode()
        return value

    def _feed(self, asm: WireTarget, index: int, feed: _Feed, delta: str, payload: bytes) -> None:
        slot = self._items.get(index)
        if slot is None:  # before its item: kept until the item is added
            self._early.setdefault(index, []).append((feed, delta))
            return
        if type(slot) is _Server:
            if feed == "mcp":
                slot.fragments.append(delta)
                return
        elif type(slot) is not str:
            call = cast("Call", slot)
            if feed == _FED_BY["custom_tool_call" if call.kind == "custom" else "function_call"]:
                asm.apply_call(payload, 0, self._choice_of(asm), call.index, ABSENT, ABSENT,
                               delta, call.kind)
                return
        raise malformed(payload, f"a {feed} delta for output_index {index}, whose item does "
                                 "not take it")

    def _replace(self, asm: WireTarget, index: int, whole: str, payload: bytes) -> None:
        """An item's whole value arrived: it is final."""
        slot = self._items.get(index)
        if slot is None:
            raise malformed(payload, f"a done event for output_index {index}, which never "
                                     "started")
        if type(slot) is _Server:
            slot.fragments = []
            asm.set_server_arguments(slot.entry, whole)
        elif type(slot) is not str:
            asm.replace_arguments(cast("Call", slot), whole)

    # -- the response ------------------------------------------------------------------------

    @staticmethod
    def _identify(asm: WireTarget, event: WireEvent, payload: bytes) -> WireResponse | None:
        response = event.get("response")
        if response is None:
            return None
        if type(response) is not dict:
            raise malformed(payload, "'response' is not an object")
        asm.name_response(response.get("id"), response.get("model"))
        return response

    def _end(self, asm: WireTarget, event: WireEvent, reason: str, payload: bytes) -> None:
        """The terminal event: the finish reason, the usage, the failure; the body ends."""
        if self._early:
            index = min(self._early)
            raise malformed(payload, f"a delta for output_index {index}, whose item never "
                                     "started")
        response = self._identify(asm, event, payload) or {}
        for slot in self._items.values():  # server calls' streamed arguments, joined once
            if type(slot) is _Server and slot.fragments:
                asm.set_server_arguments(slot.entry, "".join(slot.fragments))
                slot.fragments = []
        if reason == "incomplete":
            details = response.get("incomplete_details")
            if details is not None and type(details) is not dict:
                raise malformed(payload, "'incomplete_details' is not an object")
            said = details.get("reason") if details else None
            if type(said) is str and said:
                reason = said
        usage = response.get("usage")
        if usage is not None:
            if type(usage) is not dict:
                raise malformed(payload, "'usage' is not an object")
            asm.keep_usage(payload, usage)
        self._choice_of(asm).finish_reason = reason
        error = None
        if reason == "failed":
            failure = response.get("error")
            if failure is not None and type(failure) is not dict:
                raise malformed(payload, "'error' is not an object")
            error = provider_error(failure, "FAILED")
        asm.end_body(error)

    def ends(self, last: bytes | None) -> bool:
        """A body that stops before its terminal event was cut (an ``error`` event does not
        end it either): never an explicit end."""
        return False
