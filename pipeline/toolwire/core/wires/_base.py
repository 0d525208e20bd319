"""What a wire is: the strategy that reads one provider API's events into wire-neutral state.

The assembler (:mod:`toolwire.core.assembly`) owns what every wire shares: calls and choices,
the identity rule, repairs and bounds. A wire owns everything its API defines: how an event
payload is parsed and diagnosed, how a parsed object is walked into that state, where the body
ends, what an error inside the stream looks like, and which finish reasons may run, mean
truncation or name an error (its :class:`FinishPolicy`, which :func:`toolwire.core.decide`
applies). So adding an API adds one module under ``core/wires/`` and touches nothing neutral.

The interface is small on purpose: one call per slice (:meth:`Wire.apply`, the hot path, with
the events the framer completed) and one at the end (:meth:`Wire.ends`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Protocol

from toolwire.core.framing import EventFramer, Framer
from toolwire.core.limits import Limits
from toolwire.core.records import Finish

if TYPE_CHECKING:
    from toolwire.core.assembly import Call, Choice
    from toolwire.core.records import ServerCall


@dataclass(frozen=True, slots=True)
class ProviderError:
    """An error the provider reported inside the stream; it ends the response."""

    code: str
    message: str | None
    retryable: bool


#: A provider error message is cut to this many characters in the record (every wire).
ERROR_MESSAGE_CHARS: Final = 1000


def _upper(finish: str) -> str:
    return finish.upper()


#: The unified finish of a response, the same for every wire (the record's ``finish``, beside
#: the verbatim ``finish_reason``): ``stop`` and ``tool_calls`` may run, ``length`` is a
#: truncation, the others name an error code and withhold the calls.
FINISHES: Final[tuple[Finish, ...]] = ("stop", "tool_calls", "length", "content_filter",
                                       "error", "other")
#: A finish reason that means "the answer is complete": ``tool_calls`` when the choice has
#: calls, else ``stop`` (Responses' ``completed``, Gemini's ``STOP``, no reason at all).
BY_CALLS: Final = None


@dataclass(frozen=True, slots=True)
class FinishPolicy:
    """What a wire's finish reasons mean to the decision (:func:`toolwire.core.decide`).

    A finish reason is never rewritten in the record; the policy only says which unified
    :data:`Finish` it is, and so whether the calls of its choice may run, the choice was cut
    short, or it ended on an error (and with which code).
    """

    #: Each known finish reason's unified finish (:data:`BY_CALLS`: stop or tool_calls, by
    #: whether the choice has calls).
    finishes: Mapping[str, Finish | None]
    #: The dead-letter detail of a body that ended without the wire's explicit end.
    missing_end: str
    #: The finish of a reason the wire does not list.
    unlisted: Finish = "other"
    #: The finish of a choice that ended with no reason at all (``None``: by its calls).
    no_reason: Finish | None = BY_CALLS
    #: The ``error_code`` of a choice that ends on a content_filter, error or other reason.
    error_code: Callable[[str], str] = _upper
    #: The ``error_code`` of a choice whose model refused (its calls are withheld).
    refusal_code: str = "REFUSAL"
    #: What :attr:`missing_end` adds when every choice had finished all the same
    #: (:meth:`Wire.finished`): the provider may be one that never sends the end, and the
    #: setting that takes such a body as complete.
    finished_hint: str | None = None

    def finish(self, reason: str | None, has_calls: bool) -> Finish:
        """The unified finish of a choice that ended on ``reason``."""
        kind = self.no_reason if reason is None else self.finishes.get(reason, self.unlisted)
        if kind is None:
            return "tool_calls" if has_calls else "stop"
        return kind


class WireTarget(Protocol):
    """What a wire may read and do to the assembler: the declared seam, which mypy holds every
    wire to (a wire's methods take a ``WireTarget``, never the assembler itself).

    A wire reads its API's events into this wire-neutral state and through these methods, so
    that the rules every wire shares (identity, bounds, index reuse, the response's name) are
    the assembler's and written once. What is not here (the framer, the repairs of other
    rules, the body's bytes, the settle and end bookkeeping) a wire may not touch.
    """

    # -- read only -------------------------------------------------------------------------
    @property
    def limits(self) -> Limits: ...
    @property
    def choices(self) -> Mapping[int, Choice]: ...
    @property
    def calls(self) -> Mapping[tuple[int, int], Call]: ...
    @property
    def ended(self) -> bool: ...
    @property
    def model(self) -> str | None: ...
    @property
    def response_id(self) -> str | None: ...

    # -- the slots a wire writes -----------------------------------------------------------
    #: Events read (a wire counts each it parses): the record's ``chunks``.
    events: int
    #: The provider's error inside the stream (set by :meth:`end_body`; a wire whose API
    #: states an error without ending the body sets it here).
    error: ProviderError | None
    #: The response's usage, verbatim (:meth:`keep_usage` checks it can be carried).
    usage: dict[str, object] | None
    #: The finish policy the decision applies (a wire may replace it: Gemini's blocked
    #: prompt), instead of replacing itself.
    policy: FinishPolicy
    #: Counts of the repairs the assembler reports (:class:`toolwire.core.identity.Repair`).
    repairs: list[int]

    # -- what a wire calls -----------------------------------------------------------------
    def name_response(self, response_id: object, model: object) -> None: ...
    def new_choice(self, index: int) -> Choice: ...
    def start_call(self, choice_index: int, choice: Choice) -> Call: ...
    def apply_call(self, source: object, choice_index: int, choice: Choice, wire_index: int,
                   offered_id: object, offered_name: object, arguments: str | None,
                   kind: Literal["function", "custom"] = "function",
                   extra: Sequence[tuple[str, object]] | None = None) -> None: ...
    def replace_arguments(self, call: Call, arguments: str) -> None: ...
    def keep_provider_fields(self, source: object, call: Call,
                             extra: Sequence[tuple[str, object]]) -> None: ...
    def add_server_call(self, source: object, kind: str, call_id: object, name: object,
                        arguments: str = "", status: object = None) -> ServerCall: ...
    def set_server_arguments(self, entry: ServerCall, arguments: str) -> None: ...
    def merge_detail(self, source: object, choice_index: int, choice: Choice, key: Hashable,
                     entry: dict[str, object], text_field: str | None) -> None: ...
    def keep_usage(self, source: object, usage: dict[str, object]) -> None: ...
    def end_body(self, error: ProviderError | None = None) -> None: ...
    def ended_on(self, event: bytes) -> None: ...
    def hand_over(self, wire: Wire, framer: EventFramer | None = None) -> None: ...


class Wire(ABC):
    """One provider API's event format. A new instance reads one response.

    :meth:`apply` gets the events of each slice in order, and applies them to the assembler
    through its wire-neutral state and methods (:meth:`Assembler.new_choice`,
    :meth:`Assembler.apply_call`, :meth:`Assembler.keep_usage`); when an event ends the body it
    calls :meth:`Assembler.end_body` and reads no further. Anything that proves the response
    untrustworthy is raised as a :class:`toolwire.core.errors.DeadLetter`.
    """

    __slots__ = ()

    #: The registry name (``Options.wire``).
    name: ClassVar[str]
    policy: ClassVar[FinishPolicy]
    #: Calls of this wire that end without an id always get a deterministic one, whatever
    #: ``Options.synthesize_ids`` says (Gemini before 3 never sends one: the wire defines no
    #: id to wait for, so a missing one is not a fault of the stream).
    synthesizes_ids: ClassVar[bool] = False
    #: How the wire's API cuts a body into events (SSE for the four wires of 2025; NDJSON for
    #: Ollama's; AWS event-stream for Bedrock's): the assembler frames the body through a new
    #: one of these per response.
    framing: ClassVar[type[EventFramer]] = Framer
    #: Other framings the same API may send, told by the body's opening bytes
    #: (:meth:`EventFramer.opens`): Gemini without ``?alt=sse`` streams a JSON array.
    other_framings: ClassVar[tuple[type[EventFramer], ...]] = ()
    #: Whether the wire reads an event's ``event:`` name. Why not always: the wires that
    #: dispatch on the JSON's own ``type`` (the names are optional behind proxies) would pay
    #: for a named object per event, a third of their framing; without names the framer
    #: gives their events as plain data.
    reads_event_names: ClassVar[bool] = False

    #: Whether the body chooses the wire that reads it (``auto``): the assembler then asks
    #: this wire which framings and wires a body may be in (:meth:`openings`,
    #: :meth:`readers`) instead of reading the registry itself.
    lets_body_choose: ClassVar[bool] = False

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        """Whether ``first``, the first event of a body framed as this wire frames it, is
        this wire's: how ``auto`` tells the wire (a Chat Completions chunk, an Anthropic
        ``message_start``, an NDJSON line of Ollama's, an event-stream message of
        ConverseStream's or InvokeModel's). Each wire says so by what only it sends; a wire
        that says nothing is never chosen by ``auto``."""
        return False

    def openings(self) -> tuple[type[EventFramer], ...]:
        """The framings a body of this wire may be in besides its own, told by the body's
        opening bytes (:meth:`EventFramer.opens`): its :attr:`other_framings`."""
        return type(self).other_framings

    def readers(self, framing: type[EventFramer]) -> Sequence[type[Wire]]:
        """The wires that may read a body framed as ``framing`` (a named wire: itself)."""
        return (type(self),)

    def finish_policy(self) -> FinishPolicy:
        """The policy a response of this wire starts with (the assembler's
        :attr:`~toolwire.core.assembly.Assembler.policy`, which the decision reads): its
        class's, or, for a wire that carries another's events (``bedrock-invoke``), the
        carried wire's. A wire may replace the response's policy as it reads (Gemini's
        blocked prompt) instead of replacing itself."""
        return self.policy

    @classmethod
    def new_framer(cls, limits: Limits,
                   framing: type[EventFramer] | None = None) -> EventFramer:
        """The framer one response of this wire is read through (its own framing, or one of
        its :attr:`other_framings`)."""
        return (framing or cls.framing)(limits.max_line_bytes, names=cls.reads_event_names)

    @abstractmethod
    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        """Apply the events one slice completed (see :mod:`toolwire.core.framing`)."""

    @abstractmethod
    def ends(self, last: bytes | None) -> bool:
        """The body is over and no event ended it: whether it still ended explicitly.

        ``last`` is the data of an event left unterminated at the end (``None``: none was).
        A :class:`~toolwire.core.errors.DeadLetter` raised here (what the wire closes at the
        end proves the response untrustworthy) is the response's.
        """

    def finished(self, asm: WireTarget) -> bool:
        """The body is over without the wire's explicit end: whether what it said shows it
        finished anyway (Chat Completions: every choice that began sent its finish reason).

        Only asked for a provider known never to send the end
        (``Options.end_without_done``), and for the dead letter's hint otherwise: a wire that
        cannot tell says no.
        """
        return False

    def settle(self, asm: WireTarget) -> None:
        """The body is over: tie together what the body sent apart, in whatever order (a
        reasoning entry and the call it names). Called once, before the decision; a
        :class:`toolwire.core.errors.DeadLetter` it raises is the response's. Most wires tie
        nothing: they say nothing here."""
        return None
