"""A table recovery left with its consumer flow stopped, noticed and restarted.

In about one rebalance test in eight on a loaded machine, a worker taking over partitions
logged "Resuming flow..." for its table recovery and then received no changelog record at all
("No event received for active tp ... since recovery start", for ever): its partitions were
never processed again. A dump of its tasks (SIGUSR1) showed Faust's fetch loop waiting for
``can_resume_flow``, i.e. the consumer flow stopped again after the recovery resumed it, with
no rebalance in progress; which path stops it was not found, so nothing of Faust is patched
for it (the patches are in :mod:`toolwire.app.fixes`). :class:`RecoveryWatchdog` notices a
recovery that is behind and has received no changelog record for ``stalled_after`` seconds (no
rebalance signalled) and does again what the recovery does before it reads — resume the
changelog partitions, the flow control and the consumer flow — which during recovery lets only
the changelog partitions through (the input partitions stay paused until recovery completes,
so no input is read out of order); it logs the consumer's flow state, to find the cause.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("toolwire.app")


class RecoveryWatchdog:
    """Restarts the reading of a table recovery that receives nothing; call :meth:`check`
    every few seconds."""

    def __init__(self, app: Any, stalled_after: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.stalled_after = stalled_after
        self.clock = clock
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

    def check(self) -> bool:
        """Whether the reading was restarted now."""
        if not self.stalled():
            self.since = None
            return False
        now = self.clock()
        if self.since is not None and now - self.since < self.stalled_after:
            return False  # restarted less than a period ago: give it time
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
        return True
