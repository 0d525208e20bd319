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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final

from toolwire.core.framing import EventFramer, Framer
from toolwire.core.limits import Limits
from toolwire.core.records import Finish

if TYPE_CHECKING:
    from toolwire.core.assembly import Assembler


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
    #: The first character of the JSON a body of this API is when it is not SSE at all (a
    #: client that forgot ``?alt=sse``): ``auto`` names such a body's wire by it, though the
    #: body is still a ``malformed_chunk`` (see :mod:`toolwire.core.framing`).
    json_framing: ClassVar[str | None] = None
    #: How the wire's API cuts a body into events (SSE for the four wires of 2025; NDJSON for
    #: Ollama's): the assembler frames the body through a new one of these per response.
    framing: ClassVar[type[EventFramer]] = Framer
    #: Whether the wire reads an event's ``event:`` name. Why not always: the wires that
    #: dispatch on the JSON's own ``type`` (the names are optional behind proxies) would pay
    #: for a named object per event, a third of their framing; without names the framer
    #: gives their events as plain data.
    reads_event_names: ClassVar[bool] = False

    @classmethod
    def recognizes(cls, first: object) -> bool:
        """Whether ``first``, the parsed first event of a body framed as this wire frames it,
        is this wire's: how ``auto`` tells a body that is not SSE (an NDJSON body's first
        line). The SSE wires are told apart by :func:`toolwire.core.wires._auto.detect`."""
        return False

    @classmethod
    def new_framer(cls, limits: Limits) -> EventFramer:
        """The framer one response of this wire is read through."""
        return cls.framing(limits.max_line_bytes, names=cls.reads_event_names)

    @abstractmethod
    def apply(self, asm: Assembler, events: list[bytes]) -> None:
        """Apply the events one slice completed (see :mod:`toolwire.core.framing`)."""

    @abstractmethod
    def ends(self, last: bytes | None) -> bool:
        """The body is over and no event ended it: whether it still ended explicitly.

        ``last`` is the data of an event left unterminated at the end (``None``: none was).
        """

    def finished(self, asm: Assembler) -> bool:
        """The body is over without the wire's explicit end: whether what it said shows it
        finished anyway (Chat Completions: every choice that began sent its finish reason).

        Only asked for a provider known never to send the end
        (``Options.end_without_done``), and for the dead letter's hint otherwise: a wire that
        cannot tell says no.
        """
        return False

    def settle(self, asm: Assembler) -> None:
        """The body is over: tie together what the body sent apart, in whatever order (a
        reasoning entry and the call it names). Called once, before the decision; a
        :class:`toolwire.core.errors.DeadLetter` it raises is the response's. Most wires tie
        nothing: they say nothing here."""
        return None
