"""A table recovery that receives nothing: its reading restarted, then the worker stopped.

In about one rebalance test in eight on a loaded machine, a worker taking over partitions
logged "Resuming flow..." for its table recovery and then received no changelog record at all
("No event received for active tp ... since recovery start", for ever): its partitions were
never processed again (faust-streaming #176, #629). Dumps of its tasks (SIGUSR1) showed the
recovery waiting for its end and the fetcher idle in ``getmany``, once with the consumer flow
stopped, once with the flow active, every changelog partition active and nothing fetched; which
path leaves it so was not found, so nothing of Faust is patched for it (the patches are in
:mod:`toolwire.app.fixes`). What cleared it every time was the next rebalance.

:class:`RecoveryWatchdog` notices a recovery that is behind and has received no changelog
record for ``stalled_after`` seconds (no rebalance signalled). The first time, it does again
what the recovery does before it reads — resume the changelog partitions, the flow control and
the consumer flow, and seek the changelog partitions to the offsets the recovery has reached
(:meth:`RecoveryWatchdog.restart_offsets`, which drops whatever fetch state was stuck) — which
during recovery lets only the changelog partitions through (the input partitions stay paused
until recovery completes, so no input is read out of order). If the recovery still receives
nothing one period later, the verdict is :attr:`Verdict.STUCK`: the worker stops with the
supervisor's restart status (:meth:`toolwire.app.service.Toolwire.fail`), and the rebalance
its restart causes starts the recovery again — a worker never sits alive and idle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

log = logging.getLogger("toolwire.app")


class RecoveryStalled(Exception):
    """A table recovery that stayed stalled after its reading was restarted."""


class Verdict(Enum):
    """What one :meth:`RecoveryWatchdog.check` found."""

    #: No recovery, one receiving records, or a restarted one given its period.
    QUIET = "quiet"
    #: Stalled: its reading was restarted now (seek to :meth:`~RecoveryWatchdog.restart_offsets`).
    RESTARTED = "restarted"
    #: Still stalled a period after its reading was restarted: stop the worker.
    STUCK = "stuck"


class RecoveryWatchdog:
    """Restarts the reading of a table recovery that receives nothing, and says when that did
    not help; call :meth:`check` every few seconds."""

    def __init__(self, app: Any, stalled_after: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.stalled_after = stalled_after
        self.clock = clock
        #: When the reading was restarted, while the recovery stays stalled.
        self.since: float | None = None
        self.resumed = 0

    def stalled(self) -> bool:
        """Recovering and behind the changelogs, no rebalance signalled, and no changelog
        record received (since the recovery started, or for ``stalled_after``)."""
        recovery = self.app.tables.recovery
        if not (recovery.in_recovery and not recovery.signal_recovery_start.is_set()
                and recovery.need_recovery()):
            return False
        now = self.clock()
        received = [t for t in recovery._active_events_received_at.values() if t is not None]
        started = recovery._recovery_started_at
        last = max(received, default=now if started is None else started)
        return now - last >= self.stalled_after

    def check(self) -> Verdict:
        """Restart a stalled recovery's reading, once; :attr:`Verdict.STUCK` when it is still
        stalled a period later."""
        if not self.stalled():
            self.since = None
            return Verdict.QUIET
        now = self.clock()
        if self.since is not None:
            if now - self.since < self.stalled_after:
                return Verdict.QUIET  # restarted less than a period ago: give it time
            log.error("table recovery still received no changelog record %.0f s after its "
                      "reading was restarted, with %d still to read: stopping the worker "
                      "(a faust-streaming stall, see toolwire.app.watchdog)", now - self.since,
                      sum(self.app.tables.recovery.active_remaining().values()))
            return Verdict.STUCK
        self.since = now
        app, consumer, recovery = self.app, self.app.consumer, self.app.tables.recovery
        actives = set(recovery.active_tps)
        active_now = consumer._active_partitions or set()
        log.warning(
            "table recovery received no changelog record for %.0f s with %d still to read: "
            "restarting its reading (flow active %s, can resume %s, suspended %s; %d of %d "
            "changelog partitions active, %d partitions paused; a faust-streaming stall, see "
            "toolwire.app.watchdog)", self.stalled_after,
            sum(recovery.active_remaining().values()), consumer.flow_active,
            consumer.can_resume_flow.is_set(), consumer.suspend_flow.is_set(),
            len(actives & active_now), len(actives), len(consumer._paused_partitions))
        # What the recovery itself does before it reads ("Resuming flow..."), again.
        consumer.resume_partitions(actives)
        app.flow_control.resume()
        consumer.resume_flow()
        self.resumed += 1
        return Verdict.RESTARTED

    def restart_offsets(self) -> dict[Any, int]:
        """Where a restarted reading seeks the changelog partitions: the offset each has
        reached, as the recovery seeks them before it reads (it reads that record again,
        which sets a table value to what it is already)."""
        recovery = self.app.tables.recovery
        return {tp: max(recovery.active_offsets.get(tp, 0), 0) for tp in recovery.active_tps}
