"""Ollama's native ``/api/chat`` (``stream: true``): NDJSON lines, walk, end, finish.

The invariant: every entry of ``message.tool_calls`` is a whole call, a new one, never merged
into an earlier one, whatever its name. Why: Ollama's parsers emit only complete calls (one
line may carry several; the native llama-server path sends every call on the ``done: true``
line), and same-name parallel calls follow on separate lines; a client that keyed calls by
name or took ``index`` blindly merged them (LiteLLM put every parallel call on ``index: 0``,
PR #37792). A call's place is its ``function.index`` when that is a non-negative integer not
yet taken in the response (Ollama numbers its calls since 0.12.6; before, the first had no
``index``), else the next ordinal. Its identity is its ``function.name`` and its ``id`` when
non-empty (``call_`` plus 8 characters since Ollama 0.12.10); a call without one gets the
deterministic id decide synthesizes (:attr:`OllamaChat.synthesizes_ids`: older releases never
send one, so it must be the same on every replay, never random). Its arguments are the
``arguments`` object as compact JSON in the order its keys arrived (Ollama's own order may
vary between runs: a map's), ``{}`` without one; a JSON string is kept as the text it is.

``message.content`` goes to ``content``, ``message.thinking`` to ``reasoning``. The first
non-empty ``model`` names the model; Ollama sends no response id.

The end: the line with ``done: true`` ends the body, its ``done_reason`` kept verbatim as the
finish reason (``stop`` even with calls, which the policy reads by the calls; ``length`` is a
truncation; ``load``/``unload`` answer an empty request), its metrics kept as the usage. An
``{"error": "…"}`` line (sent mid-stream on HTTP 200 once output has started) ends the body as
a provider error, the calls withheld. What follows either is not read. A body that ends
otherwise, or on a line without its line end, is ``stream_closed``.

What is checked, as the walk goes: every line a JSON object, ``message`` an object,
``content``/``thinking`` strings, ``tool_calls`` a list of objects whose ``function`` is an
object. A line that fails is the dead letter ``malformed_chunk``; identity values go to the
neutral identity rule as offered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Final

import orjson
from orjson import JSONDecodeError, loads

from toolwire.core.errors import malformed
from toolwire.core.framing import EventFramer, NDJSONFramer
from toolwire.core.identity import ABSENT
from toolwire.core.wires._base import (
    BY_CALLS,
    ERROR_MESSAGE_CHARS,
    FinishPolicy,
    ProviderError,
    Wire,
    WireTarget,
)

if TYPE_CHECKING:
    from toolwire.core.assembly import Choice

#: The metrics of the ``done: true`` line, kept as the response's usage (those present).
USAGE_FIELDS: Final = ("total_duration", "load_duration", "prompt_eval_count",
                       "prompt_eval_duration", "eval_count", "eval_duration")
#: The error code of an ``{"error": …}`` line: Ollama sends a message, no code.
ERROR_CODE: Final = "OLLAMA_ERROR"


def _compact(value: object, source: object) -> str:
    """Compact JSON, keys in received order, non-ASCII raw."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError: nested deeper than orjson writes
        raise malformed(source, "the arguments are nested too deeply to carry") from None


class OllamaChat(Wire):
    """One ``/api/chat`` response (see the module docstring)."""

    __slots__ = ()

    name = "ollama-chat"
    framing: ClassVar[type[EventFramer]] = NDJSONFramer
    policy = FinishPolicy(
        finishes={"stop": BY_CALLS, "length": "length", "load": "other", "unload": "other"},
        missing_end="the body ended without a done: true line (connection dropped or cut)",
    )
    synthesizes_ids = True

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        """Every line Ollama streams names its time and whether it is the last."""
        try:
            line = loads(first)
        except JSONDecodeError:
            return False
        return type(line) is dict and "created_at" in line and "done" in line

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        for line in events:
            try:
                chunk = loads(line)
            except JSONDecodeError as exc:
                raise malformed(line, f"not JSON ({exc.args[0]})") from None
            if type(chunk) is not dict:
                raise malformed(line, "not a JSON object")
            asm.events += 1
            if asm.model is None:
                asm.name_response(None, chunk.get("model"))  # Ollama sends no response id
            choice = asm.choices.get(0) or asm.new_choice(0)
            error = chunk.get("error")
            if error is not None:
                self._error(asm, chunk, error)
                asm.ended_on(line)
                return
            message = chunk.get("message")
            if message is not None:
                if type(message) is not dict:
                    raise malformed(chunk, "'message' is not an object")
                self._message(asm, chunk, choice, message)
            done = chunk.get("done")
            if done is True:
                self._done(asm, chunk, choice)
                asm.ended_on(line)
                return
            if done is not None and type(done) is not bool:
                raise malformed(chunk, "'done' is not a boolean")

    def ends(self, last: bytes | None) -> bool:
        """Only the ``done: true`` line ends the body (it ends it where it is read)."""
        return False

    @staticmethod
    def _message(asm: WireTarget, chunk: dict[str, object], choice: Choice,
                 message: dict[str, object]) -> None:
        for key, into in (("content", choice.content), ("thinking", choice.reasoning)):
            text = message.get(key)
            if type(text) is str:
                if text:
                    into.append(text)
            elif text is not None:
                raise malformed(chunk, f"'message.{key}' is not a string")
        calls = message.get("tool_calls")
        if calls is None:
            return
        if type(calls) is not list:
            raise malformed(chunk, "'message.tool_calls' is not a list")
        for entry in calls:
            if type(entry) is not dict or type(entry.get("function")) is not dict:
                raise malformed(chunk, "a tool call is not an object with a 'function' "
                                       "object")
            function: dict[str, object] = entry["function"]
            arguments = function.get("arguments")
            if arguments is None:
                text = "{}"
            elif type(arguments) is dict:
                text = _compact(arguments, chunk)
            elif type(arguments) is str:
                text = arguments
            else:
                raise malformed(chunk, "'function.arguments' is not an object")
            index = function.get("index")
            if (type(index) is int and index >= 0 and index not in choice.wire_index
                    and (0, index) not in asm.calls):
                wire_index = index
            else:
                wire_index = asm.start_call(0, choice).index
            call_id = entry.get("id")
            asm.apply_call(chunk, 0, choice, wire_index, call_id if call_id else ABSENT,
                           function.get("name", ABSENT), None)
            asm.replace_arguments(choice.wire_index[wire_index], text)

    @staticmethod
    def _done(asm: WireTarget, chunk: dict[str, object], choice: Choice) -> None:
        reason = chunk.get("done_reason")
        if type(reason) is str and reason:
            choice.finish_reason = reason
        elif reason is not None and type(reason) is not str:
            raise malformed(chunk, "'done_reason' is not a string")
        usage: dict[str, object] = {key: chunk[key] for key in USAGE_FIELDS if key in chunk}
        if usage:
            asm.keep_usage(chunk, usage)
        asm.end_body()

    @staticmethod
    def _error(asm: WireTarget, chunk: dict[str, object], error: object) -> None:
        if type(error) is str:
            message: str | None = error[:ERROR_MESSAGE_CHARS]
        elif type(error) is dict and type(error.get("message")) is str:
            message = str(error["message"])[:ERROR_MESSAGE_CHARS]
        else:
            raise malformed(chunk, "'error' is neither a string nor an object with a message")
        asm.end_body(ProviderError(ERROR_CODE, message, retryable=False))
