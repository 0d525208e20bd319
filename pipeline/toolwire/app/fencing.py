"""A worker that may have lost its group writes nothing: no record, no changelog write, no commit.

Kafka fences a consumer's offset commits by generation, but not its producer: a worker cut off
from its brokers for longer than the session timeout (a partition, not a crash) is expelled
from the group and its partitions go to another worker, while the worker itself goes on
believing it owns them. When the link comes back it sends what it had ready — records of
responses its successor decides too, and changelog writes into partitions the successor now
writes, which the next recovery would restore over the successor's (a response done there
coming back as open, then swept as incomplete: a record that differs). It learns it was
expelled only from its next heartbeat or join, and Faust's revocation then commits, which
flushes the held table writes first.

:class:`Fence` closes that window from the worker's side. Fix 5 of :mod:`toolwire.app.fixes`
notes, per consumer group, when the group coordinator last confirmed the member
(:data:`toolwire.app.fixes.CONTACT`: a successful heartbeat, or a join that completed) and
when it answered that the member is not in the group any more
(:data:`toolwire.app.fixes.EXPELLED`: a heartbeat answered ``UnknownMemberId`` or
``IllegalGeneration``). Once the last confirmation is older than the session timeout less one
heartbeat interval, the coordinator may have expired the member (it counts from when it
received the heartbeat, which is no later than when its answer arrived), and the session is
*in doubt*:

- every write that can wait **holds** (:meth:`Fence.hold`, awaited before every record the
  worker publishes, every flush of its table writes and every commit): nothing is written
  until the coordinator answers. Silence alone cannot tell "my group moved on without me"
  from "no broker answers anyone" — a whole-cluster outage, or a coordinator moving to
  another broker — and only the first is a zombie. In the second a restart buys nothing (the
  restarted worker meets the same silence), so the worker waits instead: a coordinator that
  loads the group again gives every member a fresh session, and its first answered
  heartbeat releases the hold with nothing lost and nothing to redo;
- a coordinator that answers that the member is gone **stops the worker** (status 75,
  writing nothing, committing nothing): its partitions belong to another worker now, and the
  restarted worker joins as a new member and decides its responses again from the committed
  input;
- a write that cannot wait (a table write made outside those points) stops the worker while
  in doubt, as it must not reach a broker that may have given its partition away;
- a hold that gets no answer for ``max_hold`` seconds (``TOOLWIRE_FENCE_HOLD_TIMEOUT``) stops
  the worker too: a member whose heartbeats ended without an answer (aiokafka stops them once
  it left the group, e.g. after its poll interval) would otherwise wait for ever.

Before the first join the fence is open: a worker with no generation owns no partition yet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import NoReturn

from toolwire.app.fixes import lapse_limit
from toolwire.app.publishing import PublishFault

__all__ = ["Expelled", "Fence", "SessionExpired"]

log = logging.getLogger("toolwire.app")

#: Seconds between two looks at the coordinator's answers while a hold lasts.
HOLD_POLL = 0.25
#: Seconds between two log lines of a hold that lasts.
HOLD_LOG_EVERY = 30.0


class SessionExpired(Exception):
    """The group coordinator has not confirmed this worker for longer than it may wait."""


class Expelled(Exception):
    """The group coordinator answered that this worker is no longer a member of its group."""


class Fence:
    """Holds the worker's writes while its group session is in doubt, and stops the worker
    (``fail``) once the coordinator says the session ended.

    ``on_hold`` is told when a hold starts (``True``) and ends (``False``): the worker's
    probes and metrics (a held worker is live but not ready).
    """

    def __init__(self, group: str, session_timeout: float, heartbeat_interval: float,
                 contact: Mapping[str, float], expelled: Mapping[str, float],
                 fail: Callable[[BaseException], NoReturn], max_hold: float = 600.0,
                 on_hold: Callable[[bool], None] = lambda held: None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.group = group
        #: Seconds without a confirmation after which the member may have been expired.
        self.limit = lapse_limit(session_timeout, heartbeat_interval)
        self.contact = contact
        self.expelled = expelled
        self.fail = fail
        self.max_hold = max_hold
        self.on_hold = on_hold
        self.clock = clock
        self.sleep = sleep
        #: Expulsions noted before this fence was made are another worker's (tests).
        self.since = clock()
        #: Holds so far, and the seconds they lasted (for the operator's log and tests): one
        #: per episode, however many writes (publish, flush, commit) wait in it.
        self.holds = 0
        self.held_seconds = 0.0
        #: Writes waiting in the current hold, and when its first began.
        self._waiting = 0
        self._hold_started = 0.0

    def silence(self) -> float | None:
        """Seconds since the coordinator last confirmed the member (``None``: never yet)."""
        last = self.contact.get(self.group)
        return None if last is None else self.clock() - last

    def in_doubt(self) -> bool:
        """Whether the coordinator may have expired the member (no confirmation for longer
        than the limit)."""
        silence = self.silence()
        return silence is not None and silence > self.limit

    def _was_expelled(self) -> bool:
        """Whether the coordinator said the member is gone. For good: a worker expelled once
        holds writes (its cache, its open responses) for partitions it may not own any more,
        even after it joined again."""
        when = self.expelled.get(self.group)
        return when is not None and when >= self.since

    def check(self) -> None:
        """For a write that cannot wait: return if the session is current; otherwise stop the
        worker, writing nothing."""
        if self._was_expelled():
            self._stop_expelled()
        silence = self.silence()
        if silence is None or silence <= self.limit:
            return
        self.fail(PublishFault(
            SessionExpired(f"no word from the group coordinator for {silence:.0f} s"),
            f"the group session may have expired: no heartbeat of group {self.group!r} was "
            f"answered for {silence:.0f} s (limit {self.limit:.0f} s) when a write that "
            "cannot wait was due, so its partitions may belong to another worker now and "
            "nothing may be written for them",
            "nothing is published, written to a changelog or committed: the restarted "
            "worker joins the group again; if it repeats, check the network between the "
            "worker and the brokers"))

    async def hold(self) -> None:
        """Return once writing is safe: at once while the session is current, after the
        coordinator's next confirmation while it is in doubt. A coordinator that answers that
        the member is gone stops the worker instead."""
        if self._was_expelled():
            self._stop_expelled()
        if not self.in_doubt():
            return
        started = logged = self.clock()
        first = self._waiting == 0
        self._waiting += 1
        if first:
            self.holds += 1
            self._hold_started = started
            self.on_hold(True)
            log.warning("fence: no heartbeat of group %r answered for %.0f s (limit %.0f s): "
                        "holding every write and commit until the coordinator answers (a "
                        "cluster or network outage; the worker stops if the group moved on)",
                        self.group, self.silence() or 0.0, self.limit)
        try:
            while self.in_doubt():
                if self._was_expelled():
                    self._stop_expelled()
                await self.sleep(HOLD_POLL)
                now = self.clock()
                if now - started > self.max_hold and self.in_doubt():
                    self._stop_unanswered(now - started)
                if first and now - logged >= HOLD_LOG_EVERY:
                    logged = now
                    log.warning("fence: still holding after %.0f s: no heartbeat of group "
                                "%r answered for %.0f s", now - started, self.group,
                                self.silence() or 0.0)
            if self._was_expelled():
                self._stop_expelled()
        finally:
            self._waiting -= 1
            last = self._waiting == 0
            if last:
                waited = self.clock() - self._hold_started
                self.held_seconds += waited
                self.on_hold(False)
        if last:
            log.warning("fence: released after %.1f s: the coordinator confirmed the member; "
                        "nothing was written meanwhile", waited)

    def _stop_unanswered(self, held: float) -> NoReturn:
        self.fail(PublishFault(
            SessionExpired(f"no word from the group coordinator for {held:.0f} s of a hold"),
            f"writes were held for {held:.0f} s (TOOLWIRE_FENCE_HOLD_TIMEOUT="
            f"{self.max_hold:g} s) and no heartbeat of group {self.group!r} was answered",
            "nothing is published, written to a changelog or committed: the restarted "
            "worker joins the group again; check the network between the worker and the "
            "brokers, and the brokers"))

    def _stop_expelled(self) -> NoReturn:
        self.fail(PublishFault(
            Expelled(f"the coordinator of group {self.group!r} no longer knows this member"),
            f"the group session ended: the coordinator of group {self.group!r} answered that "
            "this worker is no longer a member (its session expired or a rebalance went on "
            "without it), so its partitions belong to another worker now",
            "nothing is published, written to a changelog or committed: the restarted "
            "worker joins the group again; if it repeats, check the network between the "
            "worker and the brokers, and TOOLWIRE_SESSION_TIMEOUT"))
