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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from toolwire.core.assembly import Assembler


@dataclass(frozen=True, slots=True)
class ProviderError:
    """An error the provider reported inside the stream; it ends the response."""

    code: str
    message: str | None
    retryable: bool


def _upper(finish: str) -> str:
    return finish.upper()


@dataclass(frozen=True, slots=True)
class FinishPolicy:
    """What a wire's finish reasons mean to the decision (:func:`toolwire.core.decide`).

    A finish reason is never rewritten in the record; the policy only says what it implies:
    the calls of its choice may run, the choice was cut short, or it ended on an error.
    """

    #: Finish reasons after which the calls of a choice may be executed.
    executable: frozenset[str]
    #: Finish reasons that say the output was cut at a limit: reported as ``truncated``, never
    #: as a failure or a retry.
    truncation: frozenset[str]
    #: Finish reasons of a normal answer: with nothing assembled, that is ``EMPTY_RESPONSE``.
    answered: frozenset[str]
    #: The dead-letter detail of a body that ended without the wire's explicit end.
    missing_end: str
    #: The ``error_code`` of a choice that ends on any other finish reason.
    error_code: Callable[[str], str] = _upper
    #: The ``error_code`` of a choice whose model refused (its calls are withheld).
    refusal_code: str = "REFUSAL"


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

    @abstractmethod
    def apply(self, asm: Assembler, events: list[bytes]) -> None:
        """Apply the events one slice completed (see :mod:`toolwire.core.framing`)."""

    @abstractmethod
    def ends(self, last: bytes | None) -> bool:
        """The body is over and no event ended it: whether it still ended explicitly.

        ``last`` is the data of an event left unterminated at the end (``None``: none was).
        """
