"""What the processor tells an observer (metrics) about its work, without knowing who listens.

The processor stays free of any metrics library: it calls an :class:`Observer` at the two
moments that carry labels and times — a message consumed, a response settled (its record
published) — and keeps plain event counts in ``Processor.stats`` for everything else, under
the keys of one enumeration, :class:`Event` (the metrics' ``EVENT_COUNTERS`` are keyed by it
too, so a counted event and its exported counter cannot drift apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Event(StrEnum):
    """Every event a worker counts in ``Processor.stats``: its key is the member's value.

    Which of them are exported as Prometheus counters is :mod:`toolwire.app.metrics`'
    choice (``EVENT_COUNTERS``); the others are read by tests and in a debugger.
    """

    #: Input messages handled (exported by the observer: ``toolwire_messages_consumed``).
    MESSAGES = "messages"
    CHUNKS_APPLIED = "chunks_applied"
    DUPLICATES_SKIPPED = "duplicates_skipped"
    LATE_AFTER_DECISION = "late_after_decision"
    END_AFTER_DECISION = "end_after_decision"
    #: An end marker read again after its record never published: decided again at once.
    END_REPLAYED = "end_replayed"
    MALFORMED_MESSAGES = "malformed_messages"
    RESPONSES_FAILED_BY_MALFORMED_MESSAGE = "responses_failed_by_malformed_message"
    INTERNAL_ERRORS = "internal_errors"
    STREAMS_ABANDONED = "streams_abandoned"
    RESPONSES_OPENED = "responses_opened"
    RESPONSES_REBUILT = "responses_rebuilt"
    #: Records settled, by outcome (exported by the observer, with labels).
    RECORDS_ASSEMBLED = "records_assembled"
    RECORDS_DEAD_LETTER = "records_dead_letter"
    RECORDS_TOO_LARGE = "records_too_large"
    SESSIONS_QUARANTINED = "sessions_quarantined"
    SESSIONS_RELEASED = "sessions_released"
    CONTROL_MESSAGES = "control_messages"
    CONTROL_MALFORMED = "control_malformed"
    DEDUPE_MARKERS_EXPIRED = "dedupe_markers_expired"
    #: SSE events after a wire's end in published responses (trailers), not read.
    FRAMES_AFTER_END = "frames_after_end"
    STATE_FLUSHES = "state_flushes"
    STATE_WRITES = "state_writes"
    #: Segments an open response's metadata counted but its changelog lacked when it was
    #: rebuilt (a flush whose commit never completed): read again from the input instead.
    STATE_SEGMENTS_REREAD = "state_segments_reread"
    #: Counted by the worker, not the processor (see :mod:`toolwire.app.watchdog`).
    RECOVERY_FLOW_RESUMED = "recovery_flow_resumed"
    #: Counted by the worker: its writes held while its group session was in doubt (see
    #: :mod:`toolwire.app.fencing`).
    FENCE_HOLDS = "fence_holds"

    @classmethod
    def settled(cls, outcome: str) -> Event:
        """The count of records settled with ``outcome`` (``assembled``, ``dead_letter``)."""
        return cls(f"records_{outcome}")


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
