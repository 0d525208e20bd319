"""At-least-once holes in faust-streaming 0.15.x, closed for this app.

All four were found by our crash tests (``tests/app/test_crash_broker.py``: SIGKILL a worker
mid-stream, restart, every response exactly once) and each loses input silently, so they are
patched here, narrowly, until fixed upstream:

1. **Commit ahead of the changelog.** Faust commits an offset once the messages *attached* to
   it are sent, but table changelog writes are buffered with ``send_soon`` and not attached. A
   crash right after a commit lost the changelog of chunks whose offsets were committed: the
   response came back with a hole (``sequence_gap``). Fix: before committing the offsets it
   chose, the consumer drains the producer — Faust's buffer, then aiokafka's — so everything
   produced for those events is acknowledged first; a write the producer gave up on (Faust
   only logs it: ``FutureMessage exception was never retrieved``, seen as
   ``OutOfOrderSequenceNumber`` when a broker of a 3-node cluster was killed) is sent again
   with the key's current value, and the commit waits until none failed.
2. **No committed offset, no re-read.** While a restarted worker recovers its tables, Faust
   drops the records its fetcher already delivered and relies on "seek to committed" to read
   them again; aiokafka's ``seek_to_committed`` does not move a partition that has no committed
   offset (or offset 0), so those records were never processed (a whole restart's worth of
   responses vanished). Fix: after that seek, input partitions without a committed offset are
   sought to the beginning — what ``auto_offset_reset=earliest`` promises.
3. **Dropped records marked read.** See :class:`_ReadOffsets`: a stale batch dropped during a
   rebalance could raise the "read" mark above the records re-fetched after the seek, which
   were then dropped too (a restarted worker lost the first chunk of some responses).
4. **Input resumed before its seek.** ``Recovery.on_recovery_completed`` resumes the input
   partitions, then awaits the seek to the committed offsets, then clears every agent queue
   (``flow_control.resume()``). During table recovery the consumer's flow is *active* (it reads
   the changelogs), so while the seek is awaited the fetch loop can deliver input records from
   the pre-seek position into the agent queues and, as it goes on with that stale batch, move
   the read mark past the offsets the seek had just reset it to. The clear then drops the
   queued records, and their re-fetched copies fall below the read mark and are dropped as
   already read: the records at the committed offset are lost (about 2 restarts in 47 lost
   one; ``sequence_gap``). Upstream PR #241 made this order; #216/#217 fixed the same order
   elsewhere. Fix: :func:`on_recovery_completed_in_order` stops the consumer's flow before it
   resumes and seeks the input partitions, so the fetch loop delivers nothing and moves no
   read mark until the queues are cleared and the flow resumed — upstream's order otherwise.
   (Seeking while the partitions were still paused, then clearing and resuming, was tried
   first: it left restarted workers idle in some runs, so it was dropped.)
5. **Table recovery left with its flow stopped.** In about one rebalance test in eight on a
   loaded machine, a worker taking over partitions logged "Resuming flow..." for its table
   recovery and then received no changelog record at all ("No event received for active tp
   ... since recovery start", for ever): its partitions were never processed again. A dump of
   its tasks (SIGUSR1) showed Faust's fetch loop waiting for ``can_resume_flow``, i.e. the
   consumer flow stopped again after the recovery resumed it, with no rebalance in progress;
   which path stops it was not found. :class:`RecoveryWatchdog` notices a recovery that is
   behind and has received no changelog record for ``stalled_after`` seconds (no rebalance
   signalled) and does again what the recovery does before it reads — resume the changelog
   partitions, the flow control and the consumer flow — which during recovery lets only the
   changelog partitions through (the input partitions stay paused until recovery completes);
   it logs the consumer's flow state, to find the cause.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from aiokafka import TopicPartition
from faust.tables import recovery as _recovery
from faust.transport import consumer as _consumer

_MARK = "_toolwire_patched"
#: Called after each producer drain, per app (see :func:`on_drained`).
DRAINED: WeakKeyDictionary[Any, list[Callable[[], None]]] = WeakKeyDictionary()
#: Called before each commit's drain, per app (see :func:`before_commit`).
COMMITTING: WeakKeyDictionary[Any, list[Callable[[], object]]] = WeakKeyDictionary()
#: Called after a drain to send failed writes again, per app (see :func:`resend_failed`).
RESENDING: WeakKeyDictionary[Any, list[Callable[[], int]]] = WeakKeyDictionary()
#: Drains (each followed by a re-send of what failed) before a commit gives up, and the
#: pause before each re-send: a broker that lost leadership takes seconds to hand it over,
#: and an idempotent producer that saw ``OutOfOrderSequenceNumber`` needs its in-flight
#: batches to fail first (about 11 s in all).
RESEND_ATTEMPTS = 8
RESEND_BACKOFF = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0)
#: Called when a commit gives up (the worker must stop rather than commit past lost
#: writes, or go on without committing), per app (see :func:`on_fatal`).
FATAL: WeakKeyDictionary[Any, Callable[[BaseException], object]] = WeakKeyDictionary()


def on_drained(app: Any, callback: Callable[[], None]) -> None:
    """Call ``callback`` after each drain of ``app``'s producer (before its offsets commit):
    everything produced before the drain began is then acknowledged."""
    DRAINED.setdefault(app, []).append(callback)


def resend_failed(app: Any, callback: Callable[[], int]) -> None:
    """After each drain before a commit, call ``callback``: it sends again the writes the
    producer gave up on and returns how many; the commit waits until none failed."""
    RESENDING.setdefault(app, []).append(callback)


def on_fatal(app: Any, callback: Callable[[BaseException], object]) -> None:
    """Call ``callback`` with the error when a commit of ``app`` gives up on its changelog
    writes: it stops the worker (see ``Toolwire.fail``), whose restart replays the input
    from the last commit; without one, the commit raises."""
    FATAL[app] = callback


def before_commit(app: Any, callback: Callable[[], object]) -> None:
    """Call ``callback`` when ``app`` is about to commit input offsets, before the producer is
    drained: what it produces (held table writes) is acknowledged before the commit."""
    COMMITTING.setdefault(app, []).append(callback)
#: Faust's own method, kept for the test that shows the race it has (read, not patched, here).
UPSTREAM_ON_RECOVERY_COMPLETED: Any = _recovery.Recovery.on_recovery_completed


async def drain_producer(app: Any, timeout: float = 60.0) -> None:
    """Every message produced so far is acknowledged by the broker, or this raises.

    ``Producer.flush()`` alone is not enough: Faust's buffer (where table writes wait) gives
    up after 0.1 s without progress and returns with messages still queued.
    """
    producer = app.producer
    buffer = producer.buffer
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    for _ in range(2):  # the second round catches a message dequeued but not yet handed over
        while buffer.size:
            if loop.time() > deadline:
                raise RuntimeError(f"{buffer.size} produced messages not sent in {timeout} s; "
                                   "not committing offsets past them")
            await buffer.flush_atmost(buffer.size)
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        await producer.flush()


class _ReadOffsets(defaultdict[Any, int | None]):
    """Faust's per-partition "last offset read", which may not advance over dropped records.

    Faust's fetch loop marks a record read even when it dropped it because the flow was
    suspended (a rebalance or recovery in progress); when the seek to the committed offset
    lands before that loop finishes its stale batch, the records it re-fetches fall below the
    advanced mark and are dropped for good. While the flow is suspended, the mark of an input
    partition does not advance: at worst a record is delivered twice, which the processor skips
    by its sequence number — never lost.
    """

    def __init__(self, consumer: Any, input_topic: str) -> None:
        super().__init__(lambda: None)
        self._consumer = consumer
        self._input_topic = input_topic

    def __setitem__(self, tp: Any, offset: int | None) -> None:
        if (offset is not None and tp.topic == self._input_topic
                and self._consumer.suspend_flow.is_set()):
            return
        super().__setitem__(tp, offset)


async def on_recovery_completed_in_order(self: Any, generation_id: int = 0) -> None:
    """faust-streaming 0.15.3's ``Recovery.on_recovery_completed`` in a safe order (fix 4).

    The same steps as upstream; only the order of seek, clear and resume differs.
    """
    app = self.app
    consumer = app.consumer
    self.log.info("Restore complete!")
    await app.on_rebalance_complete.send()
    self._set_recovery_ended()
    callback_coros = [
        asyncio.ensure_future(table.on_recovery_completed(
            self.actives_for_table[table], self.standbys_for_table[table]))
        for table in self.tables.values()
    ]
    if callback_coros:
        await asyncio.wait(callback_coros)
    assignment = consumer.assignment()
    if app.consumer_generation_id != generation_id:
        self.log.warning(f"Recovery rebalancing again app id {app.consumer_generation_id} "
                         f"param {generation_id}")
        return
    # Stop the flow first: while the input partitions are resumed and sought, the fetch loop
    # may deliver nothing (it breaks off a batch in progress, and the read marks cannot move,
    # see _ReadOffsets), so no record fetched before the seek reaches the queues or moves a
    # read mark past the committed offset. The rest is upstream's order.
    consumer.stop_flow()
    consumer.resume_partitions({tp for tp in assignment if not self._is_changelog_tp(tp)})
    if assignment:
        self.log.info("Seek stream partitions to committed offsets.")
        await self._wait(consumer.perform_seek(), timeout=app.conf.broker_request_timeout)
    self.completed.set()
    self.log.dev("Resume stream partitions")
    app.flow_control.resume()  # clears the agent queues
    consumer.resume_flow()
    await app._fetcher.maybe_start()
    self.tables.on_actives_ready()
    if not app.assignor.assigned_standbys():
        self.tables.on_standbys_ready()
    app.on_rebalance_end()
    self.log.info("Worker ready")


class RecoveryWatchdog:
    """Restarts the reading of a table recovery that receives nothing (fix 5); call
    :meth:`check` every few seconds."""

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
        _log.warning(
            "table recovery received no changelog record for %.0f s with %d still to read: "
            "restarting its reading (flow active %s, can resume %s, suspended %s; %d of %d "
            "changelog partitions active, %d partitions paused; a faust-streaming stall, see "
            "toolwire.app.fixes)", self.stalled_after,
            sum(recovery.active_remaining().values()), consumer.flow_active,
            consumer.can_resume_flow.is_set(), consumer.suspend_flow.is_set(),
            len(actives & active_now), len(actives), len(consumer._paused_partitions))
        # What the recovery itself does before it reads ("Resuming flow..."), again.
        consumer.resume_partitions(actives)
        app.flow_control.resume()
        consumer.resume_flow()
        self.resumed += 1
        return True


_log = logging.getLogger("toolwire.app")


def install(input_topic: str) -> None:
    """Patch Faust's consumer and recovery classes (idempotent)."""
    consumer_class: Any = _consumer.Consumer
    if getattr(consumer_class, _MARK, False):
        return
    handle_attached = consumer_class._handle_attached
    perform_seek = consumer_class.perform_seek
    init = consumer_class.__init__

    async def handle_attached_then_drain(self: Any, commit_offsets: Any) -> None:
        await handle_attached(self, commit_offsets)
        for callback in COMMITTING.get(self.app, ()):
            callback()
        await drain_producer(self.app)
        for attempt in range(RESEND_ATTEMPTS):
            failed = sum(resend() for resend in RESENDING.get(self.app, ()))
            if not failed:
                break
            _log.warning("%d changelog writes failed (attempt %d of %d): sent again before "
                         "committing offsets", failed, attempt + 1, RESEND_ATTEMPTS)
            await asyncio.sleep(RESEND_BACKOFF[attempt])
            await drain_producer(self.app)
        else:
            error = RuntimeError(f"changelog writes still fail after {RESEND_ATTEMPTS} "
                                 "attempts: not committing offsets past them")
            fatal = FATAL.get(self.app)
            if fatal is None:
                raise error
            fatal(error)
            return
        for callback in DRAINED.get(self.app, ()):
            callback()

    async def perform_seek_then_rewind_uncommitted(self: Any) -> None:
        await perform_seek(self)
        uncommitted = [tp for tp in self.assignment()
                       if tp.topic == input_topic and not self._committed_offset.get(tp)]
        if uncommitted:
            # The aiokafka consumer lives in Faust's consumer thread, and wants its own
            # TopicPartition type rather than Faust's TP.
            await self._thread.seek_to_beginning(*(TopicPartition(tp.topic, tp.partition)
                                                   for tp in uncommitted))
            for tp in uncommitted:
                self._read_offset[tp] = None

    def init_with_guarded_read_offsets(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._read_offset = _ReadOffsets(self, input_topic)

    consumer_class._handle_attached = handle_attached_then_drain
    consumer_class.perform_seek = perform_seek_then_rewind_uncommitted
    consumer_class.__init__ = init_with_guarded_read_offsets
    recovery_class: Any = _recovery.Recovery
    recovery_class.on_recovery_completed = on_recovery_completed_in_order
    setattr(consumer_class, _MARK, True)
