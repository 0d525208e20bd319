"""Control messages and the sweep: what ends a response, or lifts a quarantine, without a chunk
of its own.

The invariant: every table write happens in an event of the partition that owns the entry
(a table write takes its changelog partition from the event, and the agent that writes
tables runs with concurrency 1). So the sweep timer, which runs outside any event, changes
nothing itself: :meth:`Control.requests` only *asks*, one control message per partition sent
to the input topic; the owning worker's agent reads it in order with that partition's chunks
and :meth:`Control.handle` ends the idle responses and expires the old dedupe markers there.
An operator's release of a quarantined session travels the same way. A sweep request lost in
a crash is simply sent again by the next sweep.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Protocol

import orjson

from toolwire.config.settings import Settings
from toolwire.core.decide import dead_letter
from toolwire.core.records import Decision
from toolwire.stream.messages import (
    CONTROL_RELEASE,
    CONTROL_SWEEP,
    H_CONTROL,
    InputMessage,
    Output,
    Sink,
)
from toolwire.stream.observe import Event
from toolwire.stream.state import DoneMarker, OpenResponse
from toolwire.stream.store import Live, Store

log = logging.getLogger("toolwire.processor")


class OpenResponses(Protocol):
    """What the sweep needs of the processor: its open and pending responses, and how one is
    rebuilt, decided and ended (:class:`toolwire.stream.processor.Processor`)."""

    live: dict[str, Live]

    @property
    def pending(self) -> Mapping[str, object]:
        """The decided responses not yet published, by request id."""

    def rebuild(self, request_id: str, state: OpenResponse) -> Live: ...

    def decide(self, live: Live) -> Decision: ...

    def release(self, live: Live, decision: Decision) -> list[Output]: ...

    def drop(self, request_id: str) -> None: ...


class Control:
    """The sweep's bookkeeping (when each response was last seen, when each was decided) and
    the handling of control messages."""

    def __init__(self, settings: Settings, store: Store, responses: OpenResponses,
                 stats: Counter[str], clock: Callable[[], float],
                 wall: Callable[[], float]) -> None:
        self.settings = settings
        self.store = store
        self.responses = responses
        self.stats = stats
        self.clock = clock
        self.wall = wall
        #: Monotonic time of the last message of each open response (restored ones: when first
        #: noticed after the restart, so they too are swept one TTL later).
        self.last_seen: dict[str, float] = {}
        #: Decided responses in decision order: request id → (wall time, partition).
        self.done_at: dict[str, tuple[float, int]] = {}
        #: Set when partitions are assigned: the next sweep scans the tables for restored state.
        self.rescan = True

    # -- what the processor reports ----------------------------------------------------------

    def seen(self, request_id: str) -> None:
        """A chunk of ``request_id`` was applied now."""
        self.last_seen[request_id] = self.clock()

    def noticed(self, request_id: str) -> None:
        """``request_id`` was rebuilt from the tables: swept one TTL from now unless it goes
        on."""
        self.last_seen.setdefault(request_id, self.clock())

    def ended(self, request_id: str) -> None:
        """``request_id`` is no longer open (decided, or dropped)."""
        self.last_seen.pop(request_id, None)

    def decided(self, request_id: str, done: float, partition: int) -> None:
        """``request_id``'s record was published at wall time ``done``."""
        self.done_at.pop(request_id, None)  # decided again (a replay): last in order
        self.done_at[request_id] = (done, partition)

    def assigned(self) -> None:
        """Partitions were assigned: the next sweep learns what was restored with them."""
        self.rescan = True

    def forget(self, partitions: set[int]) -> None:
        """Partitions were revoked: their state now belongs to another worker."""
        for request_id in [r for r, (_, p) in self.done_at.items() if p in partitions]:
            del self.done_at[request_id]
        stale = [r for r in self.last_seen if self.store.partition_of(r) in partitions]
        for request_id in stale:
            del self.last_seen[request_id]
        self.rescan = True

    # -- the timer's side: ask ---------------------------------------------------------------

    def requests(self, assigned: set[int] | None = None) -> list[Output]:
        """Control messages that ask the owning worker to sweep idle or expired state.

        Runs from a timer, outside any event: it changes nothing itself (a table write needs
        the partition of an event) but sends one message per partition to the input topic.
        """
        if self.rescan:
            self._scan_tables()
        now, wall = self.clock(), self.wall()
        due: dict[int, list[str]] = {}
        for request_id, seen in self.last_seen.items():
            if now - seen >= self.settings.stream_ttl_seconds:
                live = self.responses.live.get(request_id)
                partition = live.partition if live else self.store.partition_of(request_id)
                if partition is not None:
                    due.setdefault(partition, []).append(request_id)
        for request_id, (done, partition) in self.done_at.items():
            if wall - done < self.settings.dedupe_window_seconds:
                break  # decision order: the rest are younger
            due.setdefault(partition, []).append(request_id)
        return [Output(Sink.INPUT, None, orjson.dumps({"requests": ids}),
                       {H_CONTROL: CONTROL_SWEEP.encode()}, partition=p)
                for p, ids in sorted(due.items()) if assigned is None or p in assigned]

    def _scan_tables(self) -> None:
        """Learn the open responses and dedupe markers restored from the changelogs."""
        self.rescan = False
        now = self.clock()
        found = []
        for request_id, state in self.store.responses.items():
            if isinstance(state, DoneMarker):
                found.append((state.done, request_id, state.partition))
            elif request_id not in self.last_seen:
                self.last_seen[request_id] = now
        # Markers restored with the partitions are older than the ones decided since the
        # assignment, yet come later: merged in by their time, or the sweep's scan (which stops
        # at the first marker still in its window) leaves them behind the young ones, expired
        # up to a whole dedupe window late.
        merged = dict(self.done_at)
        for done, request_id, partition in found:
            merged.setdefault(request_id, (done, partition))
        self.done_at = dict(sorted(merged.items(), key=lambda item: item[1][0]))

    # -- the agent's side: act, in an event of the owning partition ----------------------------

    def handle(self, msg: InputMessage, control: str) -> list[Output]:
        self.stats[Event.CONTROL_MESSAGES] += 1
        if control == CONTROL_RELEASE:
            session = msg.key.decode("utf-8", "replace") if msg.key else ""
            if session in self.store.quarantine:
                self.store.quarantine.release(msg.partition, session)
                self.stats[Event.SESSIONS_RELEASED] += 1
                log.info("session %s released from quarantine", session,
                         extra={"session_id": session})
            else:
                log.info("release of session %s: it was not quarantined", session)
            return []
        if control == CONTROL_SWEEP:
            requests = _sweep_requests(msg.value)
            if requests is None:
                self.stats[Event.CONTROL_MALFORMED] += 1
                log.warning("ignored a sweep message with an unreadable value at %s[%d]@%d "
                            '(expected {"requests": [request ids]})', msg.topic,
                            msg.partition, msg.offset)
                return []
            outputs: list[Output] = []
            for request_id in requests:
                # Each response on its own: one that fails cannot stop the sweep of the others.
                try:
                    outputs.extend(self._sweep_one(request_id))
                except Exception as exc:
                    log.error("request %s: internal error while sweeping: %s", request_id,
                              type(exc).__name__, exc_info=True)
                    self.stats[Event.INTERNAL_ERRORS] += 1
                    outputs.extend(self._sweep_failed(request_id, exc))
            return outputs
        self.stats[Event.CONTROL_MALFORMED] += 1
        log.warning("ignored unknown control message %r at offset %d", control, msg.offset)
        return []

    def _sweep_one(self, request_id: str) -> list[Output]:
        live = self.responses.live.get(request_id)  # open in memory: metadata may be unflushed
        if live is None:
            return self._sweep_stored(request_id)
        return self._sweep_open(request_id, live)

    def _sweep_stored(self, request_id: str) -> list[Output]:
        state = self.store.responses.get(request_id)
        if state is None or request_id in self.responses.pending:
            return []
        if isinstance(state, DoneMarker):
            if self.wall() - state.done >= self.settings.dedupe_window_seconds:
                self.store.expire(request_id, state)
                self.done_at.pop(request_id, None)
                self.stats[Event.DEDUPE_MARKERS_EXPIRED] += 1
            return []
        return self._sweep_open(request_id, self.responses.rebuild(request_id, state))

    def _sweep_open(self, request_id: str, live: Live) -> list[Output]:
        idle = self.clock() - self.last_seen.get(request_id, self.clock())
        if idle < self.settings.stream_ttl_seconds:
            return []  # a chunk arrived after the sweeper looked
        if live.assembler.failure is not None or live.assembler.ended:
            # The body was complete (or already failed); only the end marker never came.
            return self.responses.release(live, self.responses.decide(live))
        self.stats[Event.STREAMS_ABANDONED] += 1
        return self.responses.release(live, dead_letter(
            live.assembler, live.provenance, "stream_abandoned",
            f"no chunk for {idle:.0f} s (TTL {self.settings.stream_ttl_seconds:g} s)"))

    def _sweep_failed(self, request_id: str, exc: Exception) -> list[Output]:
        """Dead-letter a response whose sweep raised; if even that fails, stop sweeping it."""
        live = self.responses.live.get(request_id)
        try:
            if live is not None:
                return self.responses.release(live, dead_letter(
                    live.assembler, live.provenance, "internal_error",
                    f"{type(exc).__name__} while sweeping (see the worker log)"))
        except Exception:
            log.error("request %s: its dead letter failed too", request_id, exc_info=True)
        self.responses.drop(request_id)
        return []


def _sweep_requests(value: bytes) -> list[str] | None:
    """The request ids of a sweep message, or ``None`` when its body is not the expected one."""
    try:
        body = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    requests = body.get("requests") if type(body) is dict else None
    if type(requests) is not list or not all(type(r) is str for r in requests):
        return None
    return requests
