"""Assembly of one streamed response: body slices in, calls with trustworthy identity out.

This module is wire-neutral: it holds what every provider API shares (choices and their text,
calls keyed by (choice, index), the identity rule, repairs, bounds, the split of a reused
index) and knows no field of any API. A wire (:mod:`toolwire.core.wires`) reads its events and
offers what they say through :meth:`Assembler.apply_call` and the state below; so the rules
that make a call trustworthy are written once, whichever API carried it.

The assembler is pure (no Kafka, no Faust, no I/O) so it can be tested, profiled and replayed
offline; the pipeline carries an open response across a worker crash by keeping its raw slices
and feeding them to a new assembler. The cost of a chunk is proportional to the chunk: argument
fragments are kept as a list and joined once, at the end, never per chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from typing import Final, Literal

import orjson

from toolwire.core.completeness import Completeness
from toolwire.core.errors import DeadLetter, InternalError, Oversize, malformed
from toolwire.core.framing import EventFramer, FramingDamage, LineOversize
from toolwire.core.identity import ABSENT, Repair, accept_identity, settle_identity
from toolwire.core.limits import Limits
from toolwire.core.records import ServerCall
from toolwire.core.wires import FinishPolicy, ProviderError, Wire

log = logging.getLogger("toolwire.assembly")

INDEX_REUSE_SPLITS: Final = int(Repair.INDEX_REUSE_SPLITS)
ENDED_WITHOUT_DONE: Final = int(Repair.ENDED_WITHOUT_DONE)

#: What fed a call: a function (JSON arguments) or a custom (freeform) tool; the record's
#: ``type``.
CallType = Literal["function", "custom"]


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _carried_size(value: object) -> int | None:
    """The compact JSON size of a value the record carries verbatim, or ``None`` if it cannot
    be written back out: orjson reads nesting deeper than it writes. Two levels of margin: a
    held record nests it inside a dead letter."""
    try:
        return len(orjson.dumps([[value]])) - 4
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


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
        self.kind: CallType = "function"
        #: Call-level fields the wire does not define (``extra_content``...): last non-null.
        self.provider_fields: dict[str, object] | None = None
        #: Compact JSON size of each provider field, to bound them all together.
        self.provider_bytes: dict[str, int] | None = None
        #: Built when first asked (see :meth:`arguments_complete`).
        self.completeness: Completeness | None = None

    @property
    def arguments(self) -> str:
        if len(self.fragments) > 1:
            self.fragments = ["".join(self.fragments)]
        return self.fragments[0] if self.fragments else ""

    @property
    def type(self) -> CallType:
        return self.kind

    def arguments_complete(self) -> bool:
        """Whether the arguments so far are one complete JSON value (asked off the hot path)."""
        if self.completeness is None:
            self.completeness = Completeness()
        return self.completeness.complete(self.arguments)


#: What a blank field (``null`` or ``""``) of a reasoning entry is counted as, its name aside.
BLANK_BYTES: Final = 8
#: The place of a reasoning entry's text field among its fields (its pieces are kept apart).
_TEXT: Final = object()
#: A field a reasoning entry has not had yet.
_UNSEEN: Final = object()


class Details:
    """Entries a provider streams about a choice's reasoning, in pieces, that the next turn
    must send back verbatim (OpenRouter's ``reasoning_details``: summaries, text with its
    signature, encrypted reasoning tied to a call).

    The wire names each piece's entry by a key (OpenRouter: its ``type`` and ``index``) and
    at most one text field that concatenates; every other field is the first value that says
    something (neither ``null`` nor ``""``: OpenRouter opens a Claude entry with ``signature:
    ""`` and sends the signature in a later piece), so a piece that repeats a field, or blanks
    it, never erases what came first.
    Text pieces are kept as lists and joined once, when the record is made. The other fields
    are bounded together (their compact JSON, as for a call's provider fields); the text is
    bounded by the response's size, like the reasoning text it mirrors.
    """

    __slots__ = ("bytes", "entries", "texts")

    def __init__(self) -> None:
        #: Key → the entry's fields in the order they first came (a text field holds
        #: :data:`_TEXT` here until it is rendered).
        self.entries: dict[Hashable, dict[str, object]] = {}
        #: Key → the pieces of its text field.
        self.texts: dict[Hashable, list[str]] = {}
        #: Compact JSON size of the fields other than text, all entries together.
        self.bytes = 0

    def render(self) -> list[dict[str, object]]:
        """The merged entries, as the record carries them."""
        out = []
        for key, fields in self.entries.items():
            pieces = self.texts.get(key)
            if pieces is not None:
                text = "".join(pieces)
                out.append({name: text if value is _TEXT else value
                            for name, value in fields.items()})
            else:  # a copy: the record is the caller's to change
                out.append(dict(fields))
        return out


class Choice:
    """Per-choice text, finish reason and the map from wire index to call index."""

    __slots__ = ("content", "details", "finish_reason", "highest_index", "reasoning",
                 "refusal", "wire_index")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        #: The model's refusal (OpenAI structured outputs): it declined; not an empty answer.
        self.refusal: list[str] = []
        #: The last non-empty finish reason, verbatim.
        self.finish_reason: str | None = None
        #: Wire ``index`` → the call it currently feeds (another call than the index names after
        #: an index-reuse split, where a provider reuses ``index: 0`` for a new parallel call).
        self.wire_index: dict[int, Call] = {}
        self.highest_index = -1
        #: Reasoning entries carried verbatim for the next turn, when the provider sends any.
        self.details: Details | None = None


class Assembler:
    """Feed it the body of one response, slice by slice; then ask :mod:`toolwire.core.decide`.

    ``wire`` is a registered wire's name (see :mod:`toolwire.core.wires`) or a wire itself.
    """

    __slots__ = (
        "_after_end",
        "_end_event",
        "_head",
        "_openings",
        "_probe",
        "_settled",
        "body_bytes",
        "calls",
        "choices",
        "end_without_done",
        "ended",
        "error",
        "events",
        "failure",
        "framer",
        "limits",
        "model",
        "policy",
        "repairs",
        "response_id",
        "server_calls",
        "synthesize_ids",
        "usage",
        "wire",
    )

    def __init__(self, wire: Wire, limits: Limits | None = None, synthesize_ids: bool = False,
                 end_without_done: bool = False) -> None:
        self.limits = Limits() if limits is None else limits
        #: Synthesis of missing ids is on (``Options.synthesize_ids``): a call without an id is
        #: then also split when its name comes again with new arguments after complete ones.
        self.synthesize_ids = synthesize_ids
        #: The provider never sends its wire's explicit end (``Options.end_without_done``): a
        #: body that ends after every choice finished is complete (see :meth:`end`).
        self.end_without_done = end_without_done
        #: Read on every slice, so that a wire may hand over to another (``auto``).
        self.wire: Wire = wire
        self.framer: EventFramer = self.wire.new_framer(self.limits)
        #: The finish policy the decision reads (:meth:`Wire.finish_policy`): per response,
        #: since a wire may replace it as it reads (Gemini's blocked prompt) and a hand-over
        #: (:meth:`hand_over`) brings the new wire's.
        self.policy: FinishPolicy = self.wire.finish_policy()
        self.choices: dict[int, Choice] = {}
        self.calls: dict[tuple[int, int], Call] = {}
        #: Calls the provider ran itself (Anthropic ``server_tool_use``, Responses
        #: ``web_search_call`` and ``mcp_call``...), in the order they started: informational,
        #: never executed downstream, never withheld.
        self.server_calls: list[ServerCall] = []
        self.repairs: list[int] = [0] * len(Repair)
        self.usage: dict[str, object] | None = None
        self.model: str | None = None
        self.response_id: str | None = None
        #: Provider events read (SSE events, NDJSON lines, event-stream messages, JSON-array
        #: elements): the record's ``chunks``. Not the Kafka messages the body came in, which
        #: the ``chunk-seq`` header numbers.
        self.events = 0
        self.body_bytes = 0
        #: Set when the response is already known to be a dead letter; later input is ignored.
        self.failure: DeadLetter | None = None
        #: The provider reported an error inside the stream (it ended the response there).
        self.error: ProviderError | None = None
        #: The wire ended the body explicitly (:meth:`end_body`): the framer is closed.
        self.ended = False
        #: The event the wire ended the body on (:meth:`ended_on`), until its slice's events
        #: after it are counted.
        self._end_event: bytes | None = None
        #: Events of the slice that ended the body, after the event that ended it.
        self._after_end = 0
        #: The wire has settled what it ties together at the end (:meth:`end`).
        self._settled = False
        #: Framings the body may be in besides the wire's own (:meth:`Wire.openings`); while
        #: they are, the body's bytes are held in :attr:`_head` until its opening tells
        #: (:meth:`_open`), and, where the opening alone cannot name the wire (``auto``),
        #: framed in :attr:`_probe` until its first event does.
        self._openings = wire.openings()
        self._head: bytearray | None = bytearray() if self._openings else None
        self._probe: tuple[EventFramer, Sequence[type[Wire]]] | None = None

    def feed(self, data: bytes) -> None:
        """Apply one slice of the body (any size, cut anywhere)."""
        self.body_bytes += len(data)
        if self.failure is not None:
            return
        try:
            if self.body_bytes > self.limits.max_response_bytes:
                raise Oversize(
                    f"the response is larger than {self.limits.max_response_bytes} bytes")
            if self._head is not None:
                self._open(data)
                return
            self._frame(data)
        except DeadLetter as failure:
            self.failure = failure
        except Exception as exc:
            # Whatever raised, this response can no longer be trusted as a whole: it fails
            # here, once, rather than lose a chunk and publish the rest. Never the payload in
            # the log: it may hold secrets.
            log.error("internal error applying event %d: %s", self.events,
                      type(exc).__name__, exc_info=True)
            self.failure = InternalError(
                f"{type(exc).__name__} while applying event {self.events} "
                "(a Toolwire fault or input no rule names; see the worker log)")

    def _frame(self, data: bytes) -> None:
        """Frame one slice with the wire's framer and apply its events."""
        try:
            events = self.framer.feed(data)
        except LineOversize as overlong:
            # The wire may end the body before the overlong line, which is then not read.
            events, overlong.events = overlong.events, []
            if events:
                self._apply(events)
            if not self.ended:
                raise
            self.framer.close(count=False)  # nothing after the line is counted either
            return
        except FramingDamage as damaged:
            # The events of this slice before the damage (a bad event-stream CRC, a JSON
            # array's missing comma) are applied first, as they would be had the slice been
            # cut before it, and damage after the wire's end is not read.
            before, damaged.events = damaged.events, []
            if before:
                self._apply(before)
                if self.ended:
                    self.framer.close(count=False)
                    return
            raise
        if events:
            self._apply(events)

    def _open(self, data: bytes, ended: bool = False) -> None:
        """Hold the body's bytes until its opening tells its framing (:attr:`_openings`),
        then frame them all, from the first byte, with that framing, or with the wire's own.

        A framing whose opening proves it (an event-stream prelude with its CRC, a JSON
        array's ``[``) decides alone when one wire reads it, or when the wire is named; an
        opening that proves little (NDJSON's ``{``: any JSON body opens so) is decided by the
        first event, which a wire framed so must recognize (:meth:`Wire.recognizes`; Ollama's
        lines name ``created_at`` and ``done``). Otherwise (no such wire, the bound or the
        body's end reached first) the body is read by the wire's own framer, which says what
        is wrong with it. Decided on the opening and the first event only, and the held bytes
        are framed again from the start, so the record does not depend on the slicing."""
        head = self._head
        assert head is not None
        head += data
        if self._probe is not None:
            self._recognize(data, ended)
            return
        waiting = False
        for framing in self._openings:
            says = framing.opens(bytes(head))
            if says:
                break
            waiting = waiting or says is None
        else:
            if waiting and not ended and len(head) <= self.limits.max_line_bytes:
                return  # the opening is still arriving
            self._head = None
            self._frame(bytes(head))
            return
        readers = self.wire.readers(framing)
        chooses = self.wire.lets_body_choose
        if not chooses or (framing.proves and len(readers) == 1):
            reader = readers[0]() if chooses else self.wire
            self._take(reader, framing)
            return
        self._probe = (framing(self.limits.max_line_bytes), readers)
        self._recognize(bytes(head), ended)

    def _recognize(self, data: bytes, ended: bool) -> None:
        """``auto``, a framing chosen by the opening: the first event names the wire."""
        assert self._probe is not None and self._head is not None
        probe, readers = self._probe
        try:
            events = probe.feed(data)
        except (FramingDamage, LineOversize) as damaged:  # what came before still tells
            events, ended = damaged.events, True
        except DeadLetter:
            events, ended = [], True
        if not events and not ended and len(self._head) <= self.limits.max_line_bytes:
            return  # the first event is still arriving
        framing = type(probe)
        reader = next((w for w in readers if events and w.recognizes(events[0])), None)
        if reader is None and framing.proves:
            reader = readers[0]
        self._probe = None
        if reader is None:  # no wire reads it: the wire's own framer says what it is
            head, self._head = self._head, None
            self._frame(bytes(head))
            return
        self._take(reader(), framing)

    def _take(self, wire: Wire, framing: type[EventFramer]) -> None:
        """``wire`` reads the body through ``framing``, from its first byte."""
        assert self._head is not None
        head, self._head = self._head, None
        self.hand_over(wire, wire.new_framer(self.limits, framing))
        self._frame(bytes(head))

    def hand_over(self, wire: Wire, framer: EventFramer | None = None) -> None:
        """``wire`` reads the body from here on, under its own finish policy (``auto``): with
        ``framer``, from the first byte; without, the current framer goes on, keeping the
        event names if the new wire reads them."""
        self.wire = wire
        self.policy = wire.finish_policy()
        if framer is not None:
            self.framer = framer
        else:
            self.framer.names = wire.reads_event_names

    def _apply(self, events: list[bytes]) -> None:
        """Hand the events of one slice to the wire (the one call per slice into it)."""
        self.wire.apply(self, events)
        if self._end_event is not None:
            end, self._end_event = self._end_event, None
            for position in range(len(events) - 1, -1, -1):
                if events[position] is end:
                    self._after_end = len(events) - 1 - position
                    break

    @property
    def frames_after_end(self) -> int:
        """SSE events the body held after its wire's end, never read (a gateway's trailers,
        such as OpenRouter's ``[DONE]`` after ``response.completed``): counted, never a
        fault."""
        return self._after_end + self.framer.after_close

    def skip(self, size: int) -> None:
        """Count a slice that arrived after the failure without holding its bytes."""
        if self.failure is None:
            raise ValueError("only a failed response may skip input")
        self.body_bytes += size

    def end(self) -> bool:
        """The body ended; whether it ended explicitly (:attr:`ended`), or (for a provider
        that never sends the wire's end) after every choice had finished.

        Taken as complete without the wire's end only on a whole event: a body that stops
        inside one was cut, whatever came before. Then the wire settles what it ties together
        across the body (:meth:`Wire.settle`), once. Asking again gives the same answer.
        """
        if self._head is not None and self.failure is None:
            try:
                self._open(b"", ended=True)
            except DeadLetter as failure:
                self.failure = failure
        if not self.ended and self.failure is None:
            last = self.framer.finish()
            try:
                ended = self.wire.ends(last)
            except DeadLetter as failure:  # what the wire closes at the end may fail
                self.failure = failure
                ended = False
            if ended:
                self.end_body()
            elif (self.failure is None and self.end_without_done and last is None
                  and self.wire.finished(self)):
                self.repairs[ENDED_WITHOUT_DONE] += 1
                self.end_body()
        if not self._settled and self.failure is None:
            self._settled = True
            try:
                self.wire.settle(self)
            except DeadLetter as failure:
                self.failure = failure
        return self.ended

    # -- what a wire calls -------------------------------------------------------------------

    def end_body(self, error: ProviderError | None = None) -> None:
        """The wire saw the end of the body (with the provider's error, if it ended on one):
        nothing after this is read."""
        if error is not None and self.error is None:
            self.error = error
        self.framer.close()
        self.ended = True

    def ended_on(self, event: bytes) -> None:
        """The event of this slice (the object the wire was given) that ended the body: the
        events after it are counted (:attr:`frames_after_end`)."""
        self._end_event = event

    def name_response(self, response_id: object, model: object) -> None:
        """What an event says the response's id and model are: the first of each that is a
        non-empty string names it (the identity rule, as for a call's); later ones, blank
        ones and other types change nothing."""
        if self.response_id is None and accept_identity(response_id):
            self.response_id = response_id
        if self.model is None and accept_identity(model):
            self.model = model

    def new_choice(self, index: int) -> Choice:
        """The first mention of choice ``index`` (the wire looks in :attr:`choices` first)."""
        if len(self.choices) >= self.limits.max_choices:
            raise Oversize(f"more than {self.limits.max_choices} choices")
        choice = self.choices[index] = Choice()
        return choice

    def merge_detail(self, source: object, choice_index: int, choice: Choice, key: Hashable,
                     entry: dict[str, object], text_field: str | None) -> None:
        """Merge one piece of a reasoning entry into the choice's :class:`Details` (the wire
        has checked that ``entry`` is an object and made its ``key``)."""
        details = choice.details
        if details is None:
            details = choice.details = Details()
        merged = details.entries.get(key)
        if merged is None:
            merged = details.entries[key] = {}
        added = 0
        for name, value in entry.items():
            old = merged.get(name, _UNSEEN)
            if old is _TEXT:
                if type(value) is str:
                    details.texts[key].append(value)
                continue  # a null (or non-string) piece of the text adds nothing
            if old is not _UNSEEN and old is not None and old != "":
                continue  # the first value that says something wins
            # A field new to the entry, or blank so far (its place counted): rarely here.
            if old is not _UNSEEN:
                added -= len(name) + BLANK_BYTES
            if name == text_field and type(value) is str:
                details.texts[key] = [value]
                merged[name] = _TEXT  # its place; the pieces are joined when rendered
                continue
            if value is None or value == "":  # it holds the field's place until a value comes
                merged[name] = value
                added += len(name) + BLANK_BYTES
                continue
            size = _carried_size(value)
            if size is None:
                raise malformed(source, f"reasoning_details field {name!r} is nested too "
                                        "deeply to carry")
            merged[name] = value
            added += size + len(name) + 4
        if added:
            details.bytes += added
            if details.bytes > self.limits.max_provider_fields_bytes:
                raise Oversize(f"choice {choice_index} has more than "
                               f"{self.limits.max_provider_fields_bytes} bytes of "
                               "reasoning_details (their text aside)")

    def keep_usage(self, source: object, usage: dict[str, object]) -> None:
        """The response's usage so far (the last object wins), carried verbatim.

        It must be writable back out (usually one small object per response). An object
        equal to the one kept last was checked already (equal JSON values have the same
        nesting). A wire may keep a usage read from JSON text shorter than
        :data:`~toolwire.core.limits.SHALLOW_JSON_BYTES` without calling this: it cannot
        nest too deeply (Gemini sends one on every chunk).
        """
        if usage and usage != self.usage and _carried_size(usage) is None:
            raise malformed(source, "'usage' is nested too deeply to carry")
        self.usage = usage

    def apply_call(self, source: object, choice_index: int, choice: Choice, wire_index: int,
                   offered_id: object, offered_name: object, arguments: str | None,
                   kind: CallType = "function",
                   extra: Sequence[tuple[str, object]] | None = None) -> None:
        """Apply what one delta offers to the call at ``wire_index`` of a choice.

        ``offered_id``/``offered_name`` are whatever the wire sent (:data:`ABSENT` when it
        sent no such field): the identity rule decides. ``arguments`` concatenate verbatim.
        ``extra`` are the fields the wire does not define, kept verbatim (last non-null wins).
        ``source`` is what a dead letter quotes (the chunk). A wire checks the types of what
        it offers first, so a delta that fails adds nothing.
        """
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
            self.repairs[INDEX_REUSE_SPLITS] += 1
            call = self._new_call(choice_index, choice, wire_index, choice.highest_index + 1)
        if kind == "custom":
            if call.kind != "custom":
                if call.fragments or call.name is not None:  # fed by ``function`` so far
                    raise malformed(source, f"call {call.index} of choice {choice_index} is "
                                            "fed both 'function' and 'custom'")
                call.kind = "custom"
        elif call.kind == "custom" and (arguments or accept_identity(offered_name)):
            raise malformed(source, f"call {call.index} of choice {choice_index} is fed both "
                                    "'custom' and 'function'")
        if offered_id is not ABSENT:
            call.id = settle_identity(call.id, offered_id, self.repairs)
        if offered_name is not ABSENT:
            call.name = settle_identity(call.name, offered_name, self.repairs)
        if arguments:
            size = len(arguments) if arguments.isascii() else _utf8_len(arguments)
            call.arguments_bytes += size
            if call.arguments_bytes > self.limits.max_arguments_bytes:
                raise Oversize(f"call {call.index} of choice {call.choice} has more than "
                               f"{self.limits.max_arguments_bytes} bytes of arguments")
            call.fragments.append(arguments)
        if extra:
            self.keep_provider_fields(source, call, extra)

    def start_call(self, choice_index: int, choice: Choice) -> Call:
        """A new call of ``choice`` at the next ordinal (``index`` 0, 1, ... in the order the
        calls started), for wires whose calls are told apart by something else than a dense
        index (Anthropic's block index, Responses' ``output_index``, Gemini's parts). The
        wire then feeds it with :meth:`apply_call` at ``wire_index=call.index``."""
        index = choice.highest_index + 1
        return self._new_call(choice_index, choice, index, index)

    def replace_arguments(self, call: Call, arguments: str) -> None:
        """The wire sent the call's whole arguments at once (Responses' ``.done`` event,
        Gemini's ``args``): they replace the fragments so far, within the same bound."""
        size = len(arguments) if arguments.isascii() else _utf8_len(arguments)
        if size > self.limits.max_arguments_bytes:
            raise Oversize(f"call {call.index} of choice {call.choice} has more than "
                           f"{self.limits.max_arguments_bytes} bytes of arguments")
        call.fragments = [arguments] if arguments else []
        call.arguments_bytes = size
        call.completeness = None

    def add_server_call(self, source: object, kind: str, call_id: object, name: object,
                        arguments: str = "", status: object = None) -> ServerCall:
        """A call the provider runs itself; the wire may update its ``arguments`` and
        ``status`` in place as later events arrive (:meth:`set_server_arguments`)."""
        if len(self.calls) + len(self.server_calls) >= self.limits.max_calls:
            raise Oversize(f"more than {self.limits.max_calls} tool calls")
        entry: ServerCall = {
            "index": len(self.server_calls), "type": kind,
            "id": call_id if accept_identity(call_id) else None,
            "name": name if accept_identity(name) else None,
            "arguments": "", "status": status if type(status) is str else None}
        self.set_server_arguments(entry, arguments)
        self.server_calls.append(entry)
        return entry

    def set_server_arguments(self, entry: ServerCall, arguments: str) -> None:
        size = len(arguments) if arguments.isascii() else _utf8_len(arguments)
        if size > self.limits.max_arguments_bytes:
            raise Oversize(f"server call {entry['index']} has more than "
                           f"{self.limits.max_arguments_bytes} bytes of arguments")
        entry["arguments"] = arguments

    # -- the neutral rules -------------------------------------------------------------------

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

    def keep_provider_fields(self, source: object, call: Call,
                             extra: Sequence[tuple[str, object]]) -> None:
        """Keep what the next turn needs (Gemini 3's thought signature, in ``extra_content``),
        verbatim, last non-null wins, all of a call's fields within one bound."""
        fields = call.provider_fields
        sizes = call.provider_bytes
        for key, value in extra:
            if value is None:  # a later null never erases a field
                continue
            size = _carried_size(value)
            if size is None:
                raise malformed(source, f"tool call field {key!r} is nested too deeply to "
                                        "carry")
            if fields is None or sizes is None:
                fields = call.provider_fields = {}
                sizes = call.provider_bytes = {}
            fields[key] = value
            sizes[key] = size + len(key) + 4
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
