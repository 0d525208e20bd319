"""Assembly of one streamed response: body slices in, calls with trustworthy identity out.

The assembler is pure (no Kafka, no Faust, no I/O) so it can be tested, profiled and replayed
offline, and its state serializes to compact bytes so the pipeline can carry an open response
across a worker crash. The cost of a chunk is proportional to the chunk: argument fragments are
kept as a list and joined once, at the end or at a snapshot, never per chunk.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

import orjson

from toolwire.core.completeness import Completeness
from toolwire.core.errors import DeadLetter, InternalError, MalformedChunk, Oversize
from toolwire.core.framing import Framer
from toolwire.core.identity import ABSENT, Repair, accept_identity, settle_identity
from toolwire.core.limits import Limits
from toolwire.core.records import REASONS
from toolwire.core.wire import (
    CALL_FIELDS,
    DONE_OBJECT,
    ProviderError,
    WireChunk,
    WireToolCall,
    diagnose,
    malformed,
    parse_chunk,
    provider_error,
    provider_error_event,
)

#: 2: calls keep their kind and provider fields, choices their refusal, the response its
#: provider error. Version 1 is still read.
SNAPSHOT_VERSION = 2

log = logging.getLogger("toolwire.assembly")


INDEX_FALLBACKS: Final = int(Repair.INDEX_FALLBACKS)
INDEX_REUSE_SPLITS: Final = int(Repair.INDEX_REUSE_SPLITS)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _diagnosed(chunk: WireChunk, payload: bytes) -> MalformedChunk | None:
    """The dead letter for a chunk whose walk failed, or ``None`` if its shape is sound.

    It quotes the payload as received rather than the chunk written back out.
    """
    why = diagnose(chunk)
    return None if why is None else malformed(payload, why)


#: What fed a call: ``function.*`` (or nothing that says), or ``custom.*`` (freeform tools).
FUNCTION, CUSTOM = 1, 2


class Call:
    """One tool call: (choice, index) plus identity and the argument fragments so far."""

    __slots__ = ("arguments_bytes", "choice", "completeness", "fragments", "id", "index", "kind",
                 "name", "provider_bytes", "provider_fields")

    def __init__(self, choice: int, index: int) -> None:
        self.choice = choice
        self.index = index
        self.id: str | None = None
        self.name: str | None = None
        self.fragments: list[str] = []
        self.arguments_bytes = 0
        self.kind = FUNCTION
        #: Call-level fields the wire does not define (``extra_content``...): last non-null.
        self.provider_fields: dict[str, object] | None = None
        #: Compact JSON size of each provider field, to bound them all together.
        self.provider_bytes: dict[str, int] | None = None
        #: Built when first asked (see :meth:`arguments_complete`); never serialized.
        self.completeness: Completeness | None = None

    @property
    def arguments(self) -> str:
        if len(self.fragments) > 1:
            self.fragments = ["".join(self.fragments)]
        return self.fragments[0] if self.fragments else ""

    @property
    def type(self) -> str:
        return "custom" if self.kind == CUSTOM else "function"

    def arguments_complete(self) -> bool:
        """Whether the arguments so far are one complete JSON value (asked off the hot path)."""
        if self.completeness is None:
            self.completeness = Completeness()
        return self.completeness.complete(self.arguments)


class Choice:
    """Per-choice text, finish reason and the map from wire index to call index."""

    __slots__ = ("content", "finish_reason", "highest_index", "reasoning", "refusal",
                 "wire_index")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        #: ``delta.refusal`` (OpenAI structured outputs): the model declined; not an empty answer.
        self.refusal: list[str] = []
        self.finish_reason: str | None = None
        #: Wire ``index`` → the call it currently feeds (another call than the index names after
        #: an index-reuse split, where a provider reuses ``index: 0`` for a new parallel call).
        self.wire_index: dict[int, Call] = {}
        self.highest_index = -1


@dataclass(slots=True)
class Assembler:
    """Feed it the body of one response, slice by slice; then ask :mod:`toolwire.core.decide`."""

    limits: Limits = field(default_factory=Limits)
    #: Synthesis of missing ids is on (``Options.synthesize_ids``): a call without an id is
    #: then also split when its name comes again with new arguments after complete ones.
    synthesize_ids: bool = False
    framer: Framer = field(init=False)
    choices: dict[int, Choice] = field(default_factory=dict)
    calls: dict[tuple[int, int], Call] = field(default_factory=dict)
    repairs: list[int] = field(default_factory=lambda: [0] * len(Repair))
    usage: dict[str, object] | None = None
    model: str | None = None
    response_id: str | None = None
    chunks: int = 0
    body_bytes: int = 0
    #: Set when the response is already known to be a dead letter; later input is ignored.
    failure: DeadLetter | None = None
    #: The provider reported an error inside the stream (it ended the response there).
    error: ProviderError | None = None
    #: A chunk ended the body (``chat.completion.done``, an error): the framer is closed.
    ended: bool = False

    def __post_init__(self) -> None:
        self.framer = Framer(self.limits.max_line_bytes)

    @property
    def done(self) -> bool:
        """The body ended explicitly: ``data: [DONE]``, a ``chat.completion.done`` chunk or a
        provider error."""
        return self.framer.done

    def feed(self, data: bytes) -> None:
        """Apply one slice of the body (any size, cut anywhere)."""
        self.body_bytes += len(data)
        if self.failure is not None:
            return
        try:
            if self.body_bytes > self.limits.max_response_bytes:
                raise Oversize(
                    f"the response is larger than {self.limits.max_response_bytes} bytes")
            framer = self.framer
            for payload in framer.feed(data):
                if type(payload) is not bytes:  # ``event: error``: it ends the response
                    self._end_with(provider_error_event(payload))
                    break
                chunk = parse_chunk(payload)
                try:
                    self._apply(chunk)  # the hot path: no wrapper call per chunk
                except (AttributeError, TypeError) as exc:
                    if (failure := _diagnosed(chunk, payload)) is None:
                        raise  # not a shape fault: handled as an internal error below
                    raise failure from exc
                if self.ended:  # the chunk itself ended the body: the rest is not read
                    break
        except DeadLetter as failure:
            self.failure = failure
        except Exception as exc:
            # Whatever raised, this response can no longer be trusted as a whole: it fails
            # here, once, rather than lose a chunk and publish the rest. Never the payload in
            # the log: it may hold secrets.
            log.error("internal error applying chunk %d: %s", self.chunks,
                      type(exc).__name__, exc_info=True)
            self.failure = InternalError(
                f"{type(exc).__name__} while applying chunk {self.chunks} "
                "(a Toolwire fault or input no rule names; see the worker log)")

    def skip(self, size: int) -> None:
        """Count a slice that arrived after the failure without holding its bytes."""
        if self.failure is None:
            raise ValueError("only a failed response may skip input")
        self.body_bytes += size

    def _end_with(self, error: ProviderError | None) -> None:
        """The wire ended the response inside the body: nothing after this is read."""
        if error is not None and self.error is None:
            self.error = error
        self.framer.close()
        self.ended = True

    def end(self) -> bool:
        """The body ended; whether it ended explicitly (see :attr:`done`)."""
        if self.failure is not None:
            return self.framer.done
        return self.framer.finish()

    def _apply(self, chunk: WireChunk) -> None:
        """Apply one parsed chunk.

        The walk trusts the shape and lets a wrong type fail on its own (a ``.get`` on a list,
        iterating a number); only then does :func:`diagnose` walk the chunk again to name the
        fault (see :meth:`feed`). Checking every type up front would cost the hot path as much
        as the walk itself.
        """
        self.chunks += 1
        if self.model is None:
            model = chunk.get("model")
            if accept_identity(model):
                self.model = model
        if self.response_id is None:
            rid = chunk.get("id")
            if accept_identity(rid):
                self.response_id = rid
        usage = chunk.get("usage")
        if usage is not None:
            if type(usage) is not dict:
                raise malformed(chunk, "'usage' is not an object")
            if usage:
                # The record carries usage verbatim, so it must be writable back out: orjson
                # reads nesting deeper than it writes (usually one small object per response).
                # Two levels of margin: a held record nests it inside a dead letter.
                try:
                    orjson.dumps([[usage]])
                except TypeError:
                    raise malformed(chunk, "'usage' is nested too deeply to carry") from None
            self.usage = usage
        error = chunk.get("error")
        if error is not None:
            # OpenRouter puts an error object into an ordinary chunk, even after a finish
            # reason; the chunk's own choices still count, then the response ends.
            self.error = self.error or provider_error(error)
        if chunk.get("object") == DONE_OBJECT or error is not None:
            # Perplexity ends with a ``chat.completion.done`` chunk and never sends [DONE].
            self.framer.close()
            self.ended = True
        choices = chunk.get("choices")
        if not choices:
            if choices is not None and type(choices) is not list:
                raise malformed(chunk, "'choices' is not a list")
            return
        for position, wire_choice in enumerate(choices):
            index = wire_choice.get("index")
            if index is None:
                index = position
            elif type(index) is not int or index < 0:
                raise malformed(chunk, "a choice 'index' is not a non-negative integer")
            choice = self.choices.get(index)
            if choice is None:
                if len(self.choices) >= self.limits.max_choices:
                    raise Oversize(f"more than {self.limits.max_choices} choices")
                choice = self.choices[index] = Choice()
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
                if reasoning and type(reasoning) is str:
                    choice.reasoning.append(reasoning)
                refusal = delta.get("refusal")
                if refusal and type(refusal) is str:
                    choice.refusal.append(refusal)
            if tool_calls:
                for call_position, entry in enumerate(tool_calls):
                    self._apply_call(chunk, index, choice, call_position, entry)
            elif tool_calls is not None and type(tool_calls) is not list:
                raise malformed(chunk, "'tool_calls' is not a list")

    def _apply_call(self, chunk: WireChunk, choice_index: int, choice: Choice, position: int,
                    entry: WireToolCall) -> None:
        repairs = self.repairs
        wire_index = sent_index = entry.get("index")
        if wire_index is None:
            wire_index = position
            repairs[INDEX_FALLBACKS] += 1
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
        # Argument fragments ({index, function}, maybe with an id) are most of a stream: only
        # other entries can mention a custom tool or carry provider fields.
        plain = (len(entry) == (2 if offered_id is ABSENT else 3) and function is not None
                 and sent_index is not None)
        fed_custom = False
        if not plain:
            custom = entry.get("custom")
            if custom is not None or entry.get("type") == "custom":
                fed_custom = self._feeds_custom(chunk, custom, entry, offered_name, arguments)
                if fed_custom and custom is not None:
                    offered_name = custom.get("name", ABSENT)
                    arguments = custom.get("input")
        if arguments is not None and type(arguments) is not str:
            # Before anything of this entry is applied: a chunk that fails adds nothing.
            raise malformed(chunk, "'custom.input' is not a string" if fed_custom
                            else "'function.arguments' is not a string")
        call = choice.wire_index.get(wire_index)
        if call is None:
            call_index = wire_index
            if (choice_index, call_index) in self.calls:  # taken by an index-reuse split
                call_index = choice.highest_index + 1
            call = self._new_call(choice_index, choice, wire_index, call_index)
        elif (((offered_id is not ABSENT and offered_id and offered_id != call.id
                and call.id is not None and accept_identity(offered_id))
               or (call.id is None and self.synthesize_ids and arguments
                   and offered_name == call.name and call.name is not None))
              and self._starts_new_call(call, offered_name, arguments)):
            # Off the hot path: only a different id, or (synthesis on) an id-less call's name
            # again with new arguments, can start another call on this index.
            repairs[INDEX_REUSE_SPLITS] += 1
            call = self._new_call(choice_index, choice, wire_index, choice.highest_index + 1)
        if fed_custom:
            if call.kind != CUSTOM:
                if call.fragments or call.name is not None:  # fed by ``function`` so far
                    raise malformed(chunk, f"call {call.index} of choice {choice_index} is fed "
                                           "both 'function' and 'custom'")
                call.kind = CUSTOM
        elif call.kind == CUSTOM and (arguments or accept_identity(offered_name)):
            raise malformed(chunk, f"call {call.index} of choice {choice_index} is fed both "
                                   "'custom' and 'function'")
        if offered_id is not ABSENT:
            call.id = settle_identity(call.id, offered_id, repairs)
        if offered_name is not ABSENT:
            call.name = settle_identity(call.name, offered_name, repairs)
        if arguments:
            size = len(arguments) if arguments.isascii() else _utf8_len(arguments)
            call.arguments_bytes += size
            if call.arguments_bytes > self.limits.max_arguments_bytes:
                raise Oversize(f"call {call.index} of choice {call.choice} has more than "
                               f"{self.limits.max_arguments_bytes} bytes of arguments")
            call.fragments.append(arguments)
        if not plain and not CALL_FIELDS.issuperset(entry):
            self._keep_provider_fields(chunk, call, entry)

    def _feeds_custom(self, chunk: WireChunk, custom: object, entry: WireToolCall,
                      offered_name: object, arguments: object) -> bool:
        """Whether an entry that mentions ``custom`` feeds a custom (freeform) tool call.

        Gateways echo an empty ``custom: {}`` on ordinary function deltas: that changes
        nothing. Only ``type: "custom"`` or a string ``custom.name``/``custom.input`` does.
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

    def _starts_new_call(self, call: Call, offered_name: object, arguments: object) -> bool:
        """Whether a delta on an index already in use is the head of another call.

        Providers reuse ``index: 0`` for every parallel call (LiteLLM's ollama_chat, several
        OpenRouter engines), with the same name or another: merged, two calls would run as
        one with both calls' arguments. A call whose arguments are one complete JSON value
        is over, so a different id that brings a name or arguments starts the next one;
        until then a different id is a conflict (LM Studio sends a new id on every delta of
        one call). A whole new identity (id and name) after arguments began splits too.
        """
        brings = accept_identity(offered_name) or bool(arguments)
        if call.id is None:  # synthesis on: the same name with new arguments
            return call.arguments_complete()
        if not brings:
            return False
        if (call.fragments and call.name is not None and accept_identity(offered_name)
                and offered_name != call.name):
            return True
        return call.arguments_complete()

    def _keep_provider_fields(self, chunk: WireChunk, call: Call, entry: WireToolCall) -> None:
        """Keep what the next turn needs (Gemini 3's thought signature, in ``extra_content``)."""
        fields = call.provider_fields
        sizes = call.provider_bytes
        for key, value in entry.items():
            if key in CALL_FIELDS or value is None:
                continue
            try:
                # Written back out later, so it must be writable: orjson reads nesting deeper
                # than it writes (two levels of margin, as for usage).
                size = len(orjson.dumps([[value]])) - 4 + len(key) + 4
            except TypeError:
                raise malformed(chunk, f"tool call field {key!r} is nested too deeply to "
                                       "carry") from None
            if fields is None or sizes is None:
                fields = call.provider_fields = {}
                sizes = call.provider_bytes = {}
            fields[key] = value
            sizes[key] = size
            if sum(sizes.values()) > self.limits.max_provider_fields_bytes:
                raise Oversize(f"call {call.index} of choice {call.choice} has more than "
                               f"{self.limits.max_provider_fields_bytes} bytes of provider "
                               "fields")

    def _new_call(self, choice_index: int, choice: Choice, wire_index: int, index: int) -> Call:
        if len(self.calls) >= self.limits.max_calls:
            raise Oversize(f"more than {self.limits.max_calls} tool calls")
        call = Call(choice_index, index)
        self.calls[(choice_index, index)] = call
        choice.wire_index[wire_index] = call
        choice.highest_index = max(choice.highest_index, index, wire_index)
        return call

    # -- state -------------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The whole state as compact bytes; :meth:`restore` gives back an equal assembler."""
        state = {
            "v": SNAPSHOT_VERSION,
            "framer": self.framer.snapshot(),
            "choices": [
                [i, "".join(c.content), "".join(c.reasoning), c.finish_reason,
                 [[w, call.index] for w, call in c.wire_index.items()], c.highest_index,
                 "".join(c.refusal)]
                for i, c in self.choices.items()
            ],
            "calls": [[c.choice, c.index, c.id, c.name, c.arguments, c.arguments_bytes, c.kind,
                       c.provider_fields]
                      for c in self.calls.values()],
            "error": None if self.error is None
            else [self.error.code, self.error.message, self.error.retryable],
            "synthesize_ids": self.synthesize_ids,
            "repairs": self.repairs,
            "usage": self.usage,
            "model": self.model,
            "response_id": self.response_id,
            "chunks": self.chunks,
            "bytes": self.body_bytes,
            "failure": None if self.failure is None
            else [self.failure.reason, self.failure.detail],
        }
        return orjson.dumps(state)

    @classmethod
    def restore(cls, snapshot: bytes, limits: Limits | None = None) -> Assembler:
        state = orjson.loads(snapshot)
        if state.get("v") not in (1, SNAPSHOT_VERSION):
            raise ValueError(f"unknown assembler snapshot version {state.get('v')!r}")
        asm = cls(limits or Limits(), synthesize_ids=bool(state.get("synthesize_ids")))
        asm.framer = Framer.restore(state["framer"], asm.limits.max_line_bytes)
        wire_indexes: dict[int, list[list[int]]] = {}
        for i, content, reasoning, finish, wire_index, highest, *more in state["choices"]:
            choice = asm.choices[i] = Choice()
            choice.content = [content] if content else []
            choice.reasoning = [reasoning] if reasoning else []
            choice.refusal = [more[0]] if more and more[0] else []
            choice.finish_reason = finish
            choice.highest_index = highest
            wire_indexes[i] = wire_index
        for choice_index, index, call_id, name, arguments, arguments_bytes, *more in \
                state["calls"]:
            call = Call(choice_index, index)
            call.id, call.name = call_id, name
            call.fragments = [arguments] if arguments else []
            call.arguments_bytes = arguments_bytes
            if more:
                call.kind, fields = more
                if fields:
                    call.provider_fields = fields
                    call.provider_bytes = {k: len(orjson.dumps(v)) + len(k) + 4
                                           for k, v in fields.items()}
            asm.calls[(choice_index, index)] = call
        for i, pairs in wire_indexes.items():
            asm.choices[i].wire_index = {w: asm.calls[(i, c)] for w, c in pairs}
        # Version 1 counted fewer repairs: the ones added since start at zero.
        asm.repairs = [*state["repairs"], 0, 0, 0][:len(Repair)]
        if state.get("error") is not None:
            code, message, retryable = state["error"]
            asm.error = ProviderError(code, message, retryable)
        asm.usage = state["usage"]
        asm.model = state["model"]
        asm.response_id = state["response_id"]
        asm.chunks = state["chunks"]
        asm.body_bytes = state["bytes"]
        if state["failure"] is not None:
            reason, detail = state["failure"]
            if reason not in REASONS:
                raise ValueError(f"unknown dead-letter reason {reason!r} in a snapshot")
            failure = DeadLetter(detail)
            failure.reason = reason
            asm.failure = failure
        return asm
