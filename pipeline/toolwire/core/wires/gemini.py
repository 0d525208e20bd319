"""Gemini ``streamGenerateContent?alt=sse`` (Gemini API and Vertex AI): chunks, walk, end, finish.

The invariant: every ``functionCall`` part that names a tool is a new call at the next ordinal
(``index`` 0, 1, ... in part order), never merged into an earlier one, whatever its name. Why:
Gemini sends each call whole, and same-name parallel calls arrive as ``parts[0]`` of separate
chunks; clients that keyed calls by name or part position merged them into ``{…}{…}`` or kept
only the first (hermes-agent #101536, gemini-cli #26646, LiteLLM #11558, langchainjs #10196).
Its identity is its ``name`` and its ``id`` when non-empty; a call without one gets the
deterministic id decide synthesizes (:attr:`Gemini.synthesizes_ids`: Gemini before 3 never sends
one, so the id must be the same on every replay, never random). Its arguments are its ``args``
object as compact JSON in received key order (``{}`` without ``args``), and the part's
``thoughtSignature`` is kept verbatim as its provider field (only the first part of a batch of
parallel calls carries one; the next turn must send it back).

Vertex's streamed arguments (``streamFunctionCallArguments``): a part ``{name, willContinue}``
opens a call; nameless parts ``{partialArgs: [{jsonPath, stringValue|numberValue|boolValue|
nullValue, willContinue}]}`` continue the open call, and the arguments are rebuilt from their
JSON paths (string pieces at one path join while the previous piece said ``willContinue``); an
empty ``functionCall: {}`` closes the open call and is otherwise ignored; the open call also
closes at the next call and at the end of the body (the terminal ``{}`` is sometimes missing,
vercel/ai #14358). A nameless part with no open call is a call without a name
(``missing_identity``), never a continuation of a closed or whole call.

Text parts go to ``content``, ``thought: true`` parts to ``reasoning``; an ``executableCode``
part (code execution, run by Google) is a server call (``server_tool_calls``), its
``codeExecutionResult`` goes nowhere.

The end: Gemini sends no end event. The body ends explicitly when it ends after a chunk with a
``finishReason``; an ``{"error": …}`` chunk (mid-stream on HTTP 200) or a
``promptFeedback.blockReason`` chunk without candidates ends it where it stands, and what
follows is not read. A gateway's ``data: [DONE]`` is accepted (the end, after a finish reason).
A body that ends otherwise is ``stream_closed``. The wire names no event type and dispatches on
the chunk's own keys; an ``event:`` name, if a proxy adds one, is ignored.

The types are ``TypedDict``s over the dicts orjson returns. What is checked, in one pass as the
walk goes (chunks are small): objects where the wire has objects, lists where it has lists,
strings where text or a reason is read, non-negative integers where candidates are keyed. A
payload that fails is the dead letter ``malformed_chunk``; identity values go to the neutral
identity rule as offered (:func:`toolwire.core.identity.accept_identity`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypedDict, cast

import orjson
from orjson import JSONDecodeError, loads

from toolwire.core.errors import Oversize, malformed
from toolwire.core.framing import EventFramer
from toolwire.core.framing.json_array import JSONArrayFramer, ReadElement
from toolwire.core.identity import ABSENT
from toolwire.core.limits import SHALLOW_JSON_BYTES
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

#: Finish reasons that withhold the calls as an error of the model's call (never ``stop``:
#: LiteLLM maps them to stop, #21744).
ERROR_FINISHES: Final = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL",
                                   "TOO_MANY_TOOL_CALLS"})
#: Finish reasons that are a content filter (every block reason is one too: see
#: :data:`BLOCKED_PROMPT`).
FILTER_FINISHES: Final = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT",
                                    "SPII"})
#: Error statuses Google marks as transient.
RETRYABLE_STATUSES: Final = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED"})
#: The canonical status of an HTTP code, for an error object that carries no ``status``.
HTTP_STATUSES: Final = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                        404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                        503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
#: The type of a provider-run tool part, kept verbatim as the server call's ``type``.
SERVER_PART: Final = "executableCode"
#: One step of a ``partialArgs`` JSON path: ``.key``, ``[N]``, ``['key']`` or ``["key"]``; any
#: other character is the last group (a path that is not one). The steps cannot overlap (a key
#: stops at ``.`` or ``[``, a bracket is followed by a digit or by one quote), so one
#: ``findall`` reads a path exactly as matching step after step would.
_PATH_STEPS: Final = re.compile(
    r"""\.([^.\[\]'"]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]|(.)""", re.DOTALL)


#: Top-level keys only a Gemini chunk has (what ``auto`` recognizes it by).
_FIRST_KEYS: Final = ("candidates", "promptFeedback", "usageMetadata")

class WirePartialArg(TypedDict, total=False):
    """One piece of a Vertex streamed call's arguments: a value at a JSON path."""

    jsonPath: str | None
    stringValue: str | None
    numberValue: float | None
    boolValue: bool | None
    #: Present means JSON null, whatever it holds (``null`` or ``"NULL_VALUE"``).
    nullValue: object
    willContinue: bool | None


class WireFunctionCall(TypedDict, total=False):
    id: str | None
    name: str | None
    args: dict[str, object] | None
    partialArgs: list[WirePartialArg] | None
    willContinue: bool | None


class WirePart(TypedDict, total=False):
    text: str | None
    thought: bool | None
    #: Opaque, verbatim; on a call's part it is the call's provider field.
    thoughtSignature: str | None
    functionCall: WireFunctionCall | None
    executableCode: dict[str, object] | None
    codeExecutionResult: dict[str, object] | None


class WireContent(TypedDict, total=False):
    role: str | None
    parts: list[WirePart] | None


class WireCandidate(TypedDict, total=False):
    index: int | None
    content: WireContent | None
    finishReason: str | None
    finishMessage: str | None


class WirePromptFeedback(TypedDict, total=False):
    blockReason: str | None


class WireError(TypedDict, total=False):
    code: int | None
    message: str | None
    status: str | None


class WireChunk(TypedDict, total=False):
    candidates: list[WireCandidate] | None
    promptFeedback: WirePromptFeedback | None
    usageMetadata: dict[str, object] | None
    modelVersion: str | None
    responseId: str | None
    error: WireError | None


class _Text:
    """A string value still arriving in pieces (joined once, when the arguments are written)."""

    __slots__ = ("pieces",)

    def __init__(self, first: str) -> None:
        self.pieces = [first]


def _joined(value: object) -> str:
    """orjson's ``default`` for the arguments tree: a :class:`_Text` is its joined pieces."""
    if type(value) is _Text:
        return "".join(value.pieces)
    raise TypeError  # nothing else the tree holds needs it


class _Streamed:
    """The open call of a choice whose arguments arrive as ``partialArgs`` (Vertex)."""

    __slots__ = ("call", "continuing", "root", "size")

    def __init__(self, call: Call, root: dict[str, object]) -> None:
        self.call = call
        #: The arguments so far, keys in the order their paths first arrived.
        self.root = root
        #: The paths whose last string piece said ``willContinue``: the next piece appends.
        self.continuing: dict[str, _Text] = {}
        #: Bytes of the pieces so far: the arguments bound applies while they stream.
        self.size = 0


def _string(source: object, fields: Mapping[str, object], key: str, where: str = ""
            ) -> str | None:
    """An optional string field: its value, ``None`` when absent or null; another type is a
    malformed chunk."""
    value = fields.get(key)
    if value is None or type(value) is str:
        return value
    raise malformed(source, f"'{where}{key}' is not a string")


def compact(value: object, source: object) -> str:
    """Compact JSON, keys in received order, non-ASCII raw (orjson's only form)."""
    try:
        return orjson.dumps(value, default=_joined).decode()
    except TypeError:  # orjson.JSONEncodeError: nested deeper than orjson writes
        raise malformed(source, "the arguments are nested too deeply to carry") from None


def provider_error(error: object, source: object) -> ProviderError:
    """An ``{"error": {code, message, status}}`` chunk's error: its ``status`` is the code
    (``UNAVAILABLE``), else the canonical status of its HTTP ``code``; only the statuses
    Google marks as transient are worth a retry."""
    if type(error) is not dict:
        raise malformed(source, "'error' is not an object")
    fields = cast(WireError, error)
    status = _string(source, fields, "status", "error.")
    message = _string(source, fields, "message", "error.")
    number = fields.get("code")
    code = (status.upper() if status
            else HTTP_STATUSES.get(number, "PROVIDER_ERROR") if type(number) is int
            else "PROVIDER_ERROR")
    return ProviderError(code=code, message=None if message is None
                         else message[:ERROR_MESSAGE_CHARS], retryable=code in RETRYABLE_STATUSES)


def _path(source: object, path: object, cache: dict[str, tuple[str | int, ...]]
          ) -> tuple[str | int, ...]:
    """The steps of a ``partialArgs`` JSON path (``$.a.b[0]``), parsed once per path."""
    if type(path) is not str:
        raise malformed(source, "'partialArgs.jsonPath' is not a string")
    steps = cache.get(path)
    if steps is not None:
        return steps
    found: list[str | int] = []
    if path[:1] == "$":
        for key, number, single, double, other in _PATH_STEPS.findall(path, 1):
            if other:
                found.clear()
                break
            # A key group that took part is never empty but a quoted one: "" is ['']
            found.append(int(number) if number else key or single or double)
    if not found or type(found[0]) is not str:
        raise malformed(source, f"'partialArgs.jsonPath' {path!r} is not a path into the "
                                "arguments object")
    steps = cache[path] = tuple(found)
    return steps


def _place(source: object, root: dict[str, object], steps: tuple[str | int, ...],
           value: object) -> None:
    """Set ``value`` at ``steps`` in the arguments tree, building objects and arrays."""
    # Any, not casts: a cast is a call, and this runs for every piece that is not appended.
    node: Any = root  # a dict[str, object] or a list[object]
    step = steps[0]
    for after in steps[1:]:
        if type(node) is dict:
            child = node.get(step)
        else:
            child = node[step] if type(step) is int and step < len(node) else None
        if child is None:
            child = [] if type(after) is int else {}
            _assign(source, node, step, child)
        elif type(child) is not (list if type(after) is int else dict):
            raise malformed(source, "'partialArgs' paths disagree on the shape of the arguments")
        node = child
        step = after
    if type(node) is dict and type(step) is str:
        node[step] = value
    else:
        _assign(source, node, step, value)


def _assign(source: object, node: dict[str, object] | list[object], step: str | int,
            value: object) -> None:
    if type(node) is dict:
        if type(step) is not str:
            raise malformed(source, "'partialArgs' paths index an object as an array")
        node[step] = value
        return
    items = cast("list[object]", node)
    if type(step) is not int:
        raise malformed(source, "'partialArgs' paths key an array as an object")
    if step < len(items):
        items[step] = value
    elif step == len(items):
        items.append(value)
    else:  # a gap would be filled with nulls the model never sent
        raise malformed(source, f"'partialArgs' skips to array index {step}")


class Gemini(Wire):
    """``POST …:streamGenerateContent?alt=sse``, as the Gemini API and Vertex AI stream it."""

    __slots__ = ("_asm", "_finished", "_open", "_paths", "_stated")

    name = "gemini"
    policy = FinishPolicy(
        finishes={"STOP": BY_CALLS, "MAX_TOKENS": "length",
                  **dict.fromkeys(FILTER_FINISHES, "content_filter"),
                  **dict.fromkeys(ERROR_FINISHES, "error")},
        missing_end="the body ended before any chunk with a finishReason (connection dropped "
                    "or cut)",
        # A candidate that never finished while another did: its calls never run.
        no_reason="other",
    )
    synthesizes_ids = True
    #: Without ``?alt=sse`` (the REST default) the endpoint streams its chunks as one JSON
    #: array, told by its ``[``: the same chunks, the same record.
    other_framings: ClassVar[tuple[type[EventFramer], ...]] = (JSONArrayFramer,)

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        """Only a Gemini chunk has these top-level keys."""
        payload = first_object(first)
        return payload is not None and any(key in payload for key in _FIRST_KEYS)

    def __init__(self) -> None:
        #: The assembler this wire reads into (known from the first slice on).
        self._asm: WireTarget | None = None
        #: A chunk with a finishReason arrived: the end of the body is then its end.
        self._finished = False
        #: Per choice, its open streamed call (Vertex ``partialArgs``).
        self._open: dict[int, _Streamed] = {}
        self._paths: dict[str, tuple[str | int, ...]] = {}
        #: The error this wire made of an error-class finish reason's ``finishMessage``
        #: (an error chunk replaces it).
        self._stated: ProviderError | None = None

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        """The hot path: a chunk of one candidate with text parts is read here, in one
        function; anything else (calls, finish reasons, other parts) in the methods below."""
        self._asm = asm
        choices = asm.choices
        named = asm.response_id is not None and asm.model is not None
        for frame in events:
            chunk: WireChunk
            payload: bytes
            if type(frame) is ReadElement:  # the JSON array's framer read it already
                payload = frame
                chunk = frame.value  # type: ignore[assignment]  # checked below, as read
            else:
                payload = frame if type(frame) is bytes else bytes(frame)  # a proxy named it
                if payload == DONE:  # a gateway's trailer: the end once a finish reason came
                    if self._finished:
                        self._end(asm)
                        asm.ended_on(frame)
                        return
                    continue
                try:
                    chunk = loads(payload)  # no cast: a call, on the hot path
                except JSONDecodeError as exc:
                    raise malformed(payload, f"not JSON ({exc.args[0]})") from None
            if type(chunk) is not dict:
                raise malformed(payload, "not a JSON object")
            asm.events += 1
            if not named:
                self._envelope(asm, chunk)
                named = asm.response_id is not None and asm.model is not None
            usage = chunk.get("usageMetadata")
            if usage is not None:
                if type(usage) is not dict:
                    raise malformed(chunk, "'usageMetadata' is not an object")
                if len(payload) < SHALLOW_JSON_BYTES:  # it writes out: see keep_usage
                    asm.usage = usage
                else:
                    asm.keep_usage(chunk, usage)
            candidates = chunk.get("candidates")
            if type(candidates) is list and candidates:
                position = -1
                for candidate in candidates:
                    position += 1
                    if type(candidate) is not dict:
                        raise malformed(chunk, "a candidate is not an object")
                    wire_index = candidate.get("index", position)
                    if type(wire_index) is int and (known := choices.get(wire_index)):
                        index, choice = wire_index, known
                    else:
                        index, choice = self._choice(asm, chunk, wire_index, position)
                    content = candidate.get("content")
                    parts = content.get("parts") if type(content) is dict else None
                    if type(parts) is list:
                        for part in parts:
                            text = part.get("text") if type(part) is dict else None
                            if type(text) is str:
                                if text:
                                    (choice.reasoning if part.get("thought") is True
                                     else choice.content).append(text)
                            elif (text is None and type(part) is dict
                                  and type(call := part.get("functionCall")) is dict):
                                self._apply_function_call(asm, chunk, index, choice, part,
                                                          call)
                            else:
                                self._apply_part(asm, chunk, index, choice, part)
                    elif content is not None:
                        self._check_content(chunk, content)
                    if "finishReason" in candidate:
                        self._finish(asm, chunk, index, choice, candidate)
            elif candidates is not None and type(candidates) is not list:
                raise malformed(chunk, "'candidates' is not a list")
            elif "promptFeedback" in chunk:
                self._apply_feedback(asm, chunk)
                if asm.ended:  # a blocked prompt: the rest is not read
                    asm.ended_on(frame)
                    return
            if "error" in chunk and chunk["error"] is not None:
                # Mid-stream on HTTP 200, even after a finish reason: it ends the response,
                # and the rest is not read.
                error = chunk["error"]
                self._end(asm, provider_error(error, chunk), error.get("status"))
                asm.ended_on(frame)
                return

    def ends(self, last: bytes | None) -> bool:
        """The end of the body is the end after a chunk with a ``finishReason``; an event
        left unterminated is a body cut short (half a JSON object is a dropped connection),
        except a bare ``[DONE]``. The open call closes here either way."""
        if self._asm is not None:
            self._close_all(self._asm)  # a DeadLetter here is the response's
        return self._finished and (last is None or bytes(last) == DONE)

    # -- the walk ----------------------------------------------------------------------------

    @staticmethod
    def _envelope(asm: WireTarget, chunk: WireChunk) -> None:
        """The response's id and model, from the first chunk that names them."""
        asm.name_response(chunk.get("responseId"), chunk.get("modelVersion"))

    @staticmethod
    def _choice(asm: WireTarget, chunk: WireChunk, index: object, position: int
                ) -> tuple[int, Choice]:
        """A candidate not seen yet, or whose ``index`` is null (its position then)."""
        if index is None:
            index = position
        elif type(index) is not int or index < 0:
            raise malformed(chunk, "a candidate 'index' is not a non-negative integer")
        choice = asm.choices.get(index)
        return index, asm.new_choice(index) if choice is None else choice

    @staticmethod
    def _check_content(chunk: WireChunk, content: object) -> None:
        """A candidate's ``content`` without a list of parts: ``{}`` is sound (a finish
        without output), a wrong type is not."""
        if type(content) is not dict:
            raise malformed(chunk, "'content' is not an object")
        parts = content.get("parts")
        if parts is not None and type(parts) is not list:
            raise malformed(chunk, "'parts' is not a list")

    def _apply_feedback(self, asm: WireTarget, chunk: WireChunk) -> None:
        """A chunk without candidates: a ``blockReason`` (the prompt was blocked) ends it."""
        feedback = chunk.get("promptFeedback")
        if feedback is None:
            return
        if type(feedback) is not dict:
            raise malformed(chunk, "'promptFeedback' is not an object")
        reason = _string(chunk, feedback, "blockReason", "promptFeedback.")
        if reason:
            choice = asm.choices.get(0) or asm.new_choice(0)
            choice.finish_reason = reason
            self._end(asm)
            # Every block reason is a content filter, OTHER and IMAGE_SAFETY included, which
            # as finish reasons mean other: the decision reads the blocked prompt's policy.
            asm.policy = BLOCKED_PROMPT

    def _finish(self, asm: WireTarget, chunk: WireChunk, index: int, choice: Choice,
                candidate: WireCandidate) -> None:
        finish = _string(chunk, candidate, "finishReason")
        if finish:
            choice.finish_reason = finish
            self._finished = True
            if index == 0:
                self._state_finish(asm, finish, _string(chunk, candidate, "finishMessage"))

    def _state_finish(self, asm: WireTarget, finish: str, message: str | None) -> None:
        """An error-class finish reason keeps its ``finishMessage`` as the record's
        ``error_message`` (req_llm #935 dropped it): as an error of its own code, which is
        what the policy makes of that reason anyway (finish error, calls withheld)."""
        if asm.error is not None and asm.error is self._stated:
            asm.error = self._stated = None  # a later finish reason replaces the earlier one
        if finish in ERROR_FINISHES and message and asm.error is None:
            asm.error = self._stated = ProviderError(finish, message[:ERROR_MESSAGE_CHARS],
                                                     retryable=False)

    def _apply_part(self, asm: WireTarget, chunk: WireChunk, index: int, choice: Choice,
                    part: WirePart) -> None:
        if type(part) is not dict:
            raise malformed(chunk, "a part is not an object")
        if part.get("text") is not None:  # text that is a string is read on the hot path
            raise malformed(chunk, "'text' is not a string")
        function_call = part.get("functionCall")
        if function_call is not None:
            if type(function_call) is not dict:
                raise malformed(chunk, "'functionCall' is not an object")
            self._apply_function_call(asm, chunk, index, choice, part, function_call)
            return
        code = part.get(SERVER_PART)
        if code is not None:
            if type(code) is not dict:
                raise malformed(chunk, f"'{SERVER_PART}' is not an object")
            asm.add_server_call(chunk, SERVER_PART, code.get("id"), None, compact(code, chunk))
        # codeExecutionResult (a server call's result), inlineData, fileData...: not read.

    def _apply_function_call(self, asm: WireTarget, chunk: WireChunk, index: int,
                             choice: Choice, part: WirePart,
                             function_call: WireFunctionCall) -> None:
        if not function_call:  # {}: closes the open call, and only that
            self._close(asm, index)
            return
        name = function_call.get("name")
        args = function_call.get("args")
        if args is not None and type(args) is not dict:
            raise malformed(chunk, "'functionCall.args' is not an object")
        pieces = function_call.get("partialArgs")
        streamed = self._open.get(index)
        if name is None or name == "":
            if streamed is not None:  # a continuation of the open call
                call_id = function_call.get("id")
                if call_id:
                    asm.apply_call(chunk, index, choice, streamed.call.index, call_id, ABSENT,
                                   None)
                if args:
                    for key, value in args.items():
                        _place(chunk, streamed.root, (key,), value)
                if pieces is not None:
                    self._apply_pieces(asm, chunk, streamed, pieces)
                return
            offered_name: object = ABSENT  # no open call: a call without a name
        else:
            self._close(asm, index)  # the open call closes at the next call
            offered_name = name
        call = asm.start_call(index, choice)
        call_id = function_call.get("id")
        signature = part.get("thoughtSignature")
        asm.apply_call(chunk, index, choice, call.index, call_id if call_id else ABSENT,
                       offered_name, None, "function",
                       None if signature is None else (("thoughtSignature", signature),))
        if pieces is None and function_call.get("willContinue") is not True:
            # Whole: the arguments are the args object ({} without one).
            asm.replace_arguments(call, "{}" if args is None else compact(args, chunk))
            return
        streamed = self._open[index] = _Streamed(call, {} if args is None else args)
        if pieces is not None:
            self._apply_pieces(asm, chunk, streamed, pieces)

    def _apply_pieces(self, asm: WireTarget, chunk: WireChunk, streamed: _Streamed,
                      pieces: object) -> None:
        """Apply one part's ``partialArgs`` to the open call's arguments tree, in order."""
        if type(pieces) is not list:
            raise malformed(chunk, "'partialArgs' is not a list")
        limit = asm.limits.max_arguments_bytes
        paths = self._paths
        continuing = streamed.continuing
        piece: WirePartialArg
        for piece in pieces:
            if type(piece) is not dict:
                raise malformed(chunk, "a 'partialArgs' entry is not an object")
            key = piece.get("jsonPath")
            if type(key) is not str:
                raise malformed(chunk, "'partialArgs.jsonPath' is not a string")
            if "stringValue" in piece:
                text = piece["stringValue"]
                if type(text) is not str:
                    raise malformed(chunk, "'partialArgs.stringValue' is not a string")
                streamed.size += len(key) + len(text)
                pending = continuing.pop(key, None)
                if pending is not None:  # its path was read when its first piece came
                    pending.pieces.append(text)
                else:
                    pending = _Text(text)
                    _place(chunk, streamed.root, paths.get(key) or _path(chunk, key, paths),
                           pending)
                if piece.get("willContinue") is True:
                    continuing[key] = pending
                if streamed.size > limit:
                    call = streamed.call
                    raise Oversize(f"call {call.index} of choice {call.choice} has more than "
                                   f"{limit} bytes of arguments")
                continue
            streamed.size += len(key)
            steps = paths.get(key) or _path(chunk, key, paths)
            if "numberValue" in piece:
                number = piece["numberValue"]
                if type(number) not in (int, float):
                    raise malformed(chunk, "'partialArgs.numberValue' is not a number")
                _place(chunk, streamed.root, steps, number)
            elif "boolValue" in piece:
                flag = piece["boolValue"]
                if type(flag) is not bool:
                    raise malformed(chunk, "'partialArgs.boolValue' is not a boolean")
                _place(chunk, streamed.root, steps, flag)
            elif "nullValue" in piece:
                _place(chunk, streamed.root, steps, None)
            if streamed.size > limit:
                call = streamed.call
                raise Oversize(f"call {call.index} of choice {call.choice} has more than "
                               f"{limit} bytes of arguments")

    # -- closing -----------------------------------------------------------------------------

    def _close(self, asm: WireTarget, index: int) -> None:
        """The open call of a choice is over: its arguments are written out, once."""
        streamed = self._open.pop(index, None)
        if streamed is not None:
            asm.replace_arguments(streamed.call, compact(streamed.root, streamed.root))

    def _close_all(self, asm: WireTarget) -> None:
        for index in list(self._open):
            self._close(asm, index)

    def _end(self, asm: WireTarget, error: ProviderError | None = None,
             status: object = None) -> None:
        """An explicit end (an error chunk, a block reason, ``[DONE]``): nothing after it is
        read. An error replaces the one a ``finishMessage`` stated; before any finish reason,
        its verbatim ``status`` is the finish reason."""
        self._close_all(asm)
        if error is not None:
            first = asm.choices.get(0) or asm.new_choice(0)
            if first.finish_reason is None and type(status) is str and status:
                first.finish_reason = status
            if asm.error is self._stated:
                asm.error = None
        asm.end_body(error)


#: The policy of a response that ended on ``promptFeedback.blockReason``: every reason is a
#: content filter with its own code.
BLOCKED_PROMPT: Final = replace(Gemini.policy, finishes={}, unlisted="content_filter")
