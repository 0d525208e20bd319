"""What the processor tells an observer (metrics) about its work, without knowing who listens.

The processor stays free of any metrics library: it calls an :class:`Observer` at the two
moments that carry labels and times — a message consumed, a response settled (its record
published) — and keeps plain event counts in ``Processor.stats`` for everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Settled:
    """One response whose record was published."""

    outcome: str
    reason: str | None
    provider: str | None
    repairs: Mapping[str, int]
    truncated: bool
    error_code: str | None
    #: Produce times (Kafka timestamps, seconds) of the response's first and last messages.
    first_timestamp: float | None
    last_timestamp: float | None
    #: Wall time at which the record was acknowledged by the broker.
    published: float


class Observer(Protocol):
    def consumed(self, size: int) -> None:
        """An input message of ``size`` value bytes was read."""

    def settled(self, response: Settled) -> None:
        """A response's record was published."""


class NoObserver:
    """The default: nobody listens."""

    def consumed(self, size: int) -> None:
        return None

    def settled(self, response: Settled) -> None:
        return None
