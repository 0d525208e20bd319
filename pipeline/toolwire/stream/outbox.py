"""What a decided response becomes on its way out: held, cut to fit, published, settled.

A decision (an assembled record or a dead letter) leaves the processor through
:meth:`Outbox.release`, in four steps, each the only place it happens:

1. **Held.** An assembled record of a quarantined session becomes a ``session_quarantined``
   dead letter that holds it (``held_record``): a session stays stopped after a dead letter
   until an operator releases it.
2. **Encoded to fit.** The record's message is built within its topic's limit
   (:class:`~toolwire.stream.encode.Encoder`); an assembled record that does not fit becomes an
   ``oversize`` dead letter, never a skipped response.
3. **Quarantined.** A dead letter of a session quarantines it.
4. **Pending.** The response waits here until its message is published; only then does
   :meth:`Outbox.settle` write its done marker and count its outcome. A message that fails to
   publish leaves the response open in the tables (:meth:`Outbox.unsettled`), so the worker
   that replays the input decides it again instead of finding it done and publishing nothing.

A refit is a step of its own (:meth:`Outbox.refit`): when the broker refuses a message as too
large for its topic, the publisher reports the limit it learned, and the worker asks for the
message built again within it (see :func:`toolwire.app.publishing.publish_fitted`). Everything a
refit needs is data — the pending response of an assembled record, the draft of a dead letter
(:class:`~toolwire.stream.messages.Output.draft`) — so no output carries a closure back into the
processor.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from toolwire.config.settings import Settings
from toolwire.core.decide import dead_letter
from toolwire.core.records import AssembledRecord, DeadLetterDecision, Decision
from toolwire.stream.control import Control
from toolwire.stream.encode import Encoder, dumps
from toolwire.stream.messages import Output, Sink
from toolwire.stream.observe import Event, Observer, Settled
from toolwire.stream.state import QuarantineEntry
from toolwire.stream.store import Live, Store

__all__ = ["Outbox", "Pending"]

log = logging.getLogger("toolwire.processor")


@dataclass(frozen=True, slots=True)
class Pending:
    """A decided response whose message is not yet published."""

    live: Live
    decision: Decision
    #: Input messages the dead letter carries beyond the stored chunks (the message that
    #: failed the response, when it was not stored).
    extra_raw: tuple[tuple[int, bytes], ...] = ()


class Outbox:
    """The decided responses of one worker until each is published (see the module)."""

    def __init__(self, settings: Settings, store: Store, control: Control, encoder: Encoder,
                 stats: Counter[str], observer: Observer, wall: Callable[[], float]) -> None:
        self.settings = settings
        self.store = store
        self.control = control
        self.encoder = encoder
        self.stats = stats
        self.observer = observer
        self.wall = wall
        #: Request id → its decided response, until its message is published.
        self.pending: dict[str, Pending] = {}

    def release(self, live: Live, decision: Decision,
                extra_raw: tuple[tuple[int, bytes], ...] = ()) -> Output:
        """The message that publishes ``decision`` (steps 1 to 4 of the module)."""
        session = live.session_id
        output: Output | None = None
        if decision["outcome"] == "assembled":
            if session in self.store.quarantine:  # 1. held
                held = decision
                decision = dead_letter(live.assembler, live.provenance, "session_quarantined",
                                       "an earlier response of this session was "
                                       "dead-lettered; release it with: toolwire dlq release "
                                       f"{session}")
                decision["held_record"] = held
            else:  # 2. encoded to fit
                output = self.encoder.assembled(decision, session, live.request_id)
                if output is None:
                    decision = self._oversize(live, decision)
        if decision["outcome"] == "dead_letter":
            output = self._dead_letter(live, decision, extra_raw)
        assert output is not None
        self.pending[live.request_id] = Pending(live, decision, extra_raw)  # 4. pending
        return output

    def refit(self, output: Output, limit: int) -> Output:
        """``output`` built again within ``limit`` bytes, the broker having refused it as too
        large: a dead letter cut to fit; an assembled record within the limit, or else an
        ``oversize`` dead letter (its session quarantined, as any dead letter's is). Raises
        :class:`ValueError` when it cannot be (a dead letter too large even with its fields
        cut, or a message that is no decision's)."""
        pending = None if output.settles is None else self.pending.get(output.settles)
        if output.sink is Sink.ASSEMBLED and pending is not None:
            live, record = pending.live, pending.decision
            assert record["outcome"] == "assembled"
            fitted = self.encoder.assembled(record, live.session_id, live.request_id, limit)
            if fitted is not None:
                return fitted
            letter = self._oversize(live, record, limit)
            self.pending[live.request_id] = Pending(live, letter, pending.extra_raw)
            # Within the smaller of the two topics' limits: a refusal means this cluster's
            # limits are small, and one more refusal of the dead letter would cost a round trip.
            return self._dead_letter(live, letter, pending.extra_raw,
                                     limit=min(limit, self.encoder.limits[Sink.DEADLETTER]))
        draft = output.draft
        if output.sink is Sink.DEADLETTER and draft is not None:
            return self.encoder.dead_letter(draft.decision, draft.origin, draft.raw,
                                            settles=output.settles, limit=limit)
        raise ValueError(f"a {output.sink.value} message that no decision can build again")

    def settle(self, output: Output) -> None:
        """``output`` is published: forget the response it decided, keep its done marker.

        Runs in the same event as the message it decided (the table writes need its
        partition).
        """
        if output.settles is None:
            return
        pending = self.pending.pop(output.settles)
        live, record = pending.live, pending.decision
        outcome = record["outcome"]
        done = self.wall()
        self.store.done(live, outcome, done)
        self.control.decided(live.request_id, done, live.partition)
        self.stats[Event.settled(outcome)] += 1
        self.stats[Event.FRAMES_AFTER_END] += record.get("frames_after_end", 0)
        if record["outcome"] == "assembled":
            reason, repairs = None, record["repairs"]
            truncated, error_code = record["truncated"], record["error_code"]
        else:
            log.info("request %s: dead letter %s", live.request_id, record["reason"],
                     extra={"request_id": live.request_id, "session_id": live.session_id})
            reason, repairs = record["reason"], record.get("repairs", {})
            truncated, error_code = False, None
        self.observer.settled(Settled(
            outcome=outcome, reason=reason, provider=live.provider, repairs=repairs,
            truncated=truncated, error_code=error_code, first_timestamp=live.first_timestamp,
            last_timestamp=live.last_timestamp, published=done))

    def unsettled(self) -> None:
        """Publication failed: forget what was decided; the tables still hold it as open."""
        self.pending.clear()

    def quarantine(self, partition: int, session: str | None,
                   record: DeadLetterDecision) -> None:
        """A dead letter of ``session``: hold the session's later responses (step 3)."""
        if session and session not in self.store.quarantine:
            self.store.quarantine.put(partition, session, QuarantineEntry(
                reason=record["reason"], request_id=record["request_id"], since=self.wall()))
            self.stats[Event.SESSIONS_QUARANTINED] += 1

    def _dead_letter(self, live: Live, letter: DeadLetterDecision,
                     extra_raw: tuple[tuple[int, bytes], ...],
                     limit: int | None = None) -> Output:
        """The dead letter of a response, with its raw chunks; its session quarantined."""
        output = self.encoder.dead_letter(letter, live.origin,
                                          (*self.store.raw(live), *extra_raw),
                                          settles=live.request_id, limit=limit)
        self.quarantine(live.partition, live.session_id, letter)
        return output

    def _oversize(self, live: Live, record: AssembledRecord,
                  limit: int | None = None) -> DeadLetterDecision:
        size = len(dumps(record) or b"")
        limit = limit or self.encoder.limits[Sink.ASSEMBLED]
        where = (f"TOOLWIRE_MAX_RECORD_BYTES={limit}" if limit == self.settings.max_record_bytes
                 else f"the assembled topic's max.message.bytes ({limit})")
        detail = (f"the assembled record is {size} bytes, over {where}" if size else
                  "the assembled record cannot be written as JSON")
        self.stats[Event.RECORDS_TOO_LARGE] += 1
        return dead_letter(live.assembler, live.provenance, "oversize", detail)
