"""The Faust application of one worker, built on demand from settings.

:func:`create_app` builds everything a worker runs — the Faust app, its three topics, its
three tables, the agent and the sweep timer — from a :class:`~toolwire.config.settings.Settings`, so
that nothing is read from the environment, written to disk or patched at import time. All logic
lives in :class:`toolwire.stream.processor.Processor`; this glue decodes nothing (values and
keys are consumed as raw bytes, so a bad message becomes a dead letter instead of being acked
and lost by a failed Faust decode), hands the processor Faust tables, and publishes what it
returns.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn

import faust

from toolwire.app import fixes, memory
from toolwire.app.commit import Checkpoint, drain_producer
from toolwire.app.crash import CrashWatch
from toolwire.app.faust_app import build_faust_app, heartbeat_interval
from toolwire.app.fencing import Fence
from toolwire.app.health import Health, serve
from toolwire.app.metrics import WorkerMetrics
from toolwire.app.publishing import EXIT_FAULT, Publisher, PublishFault, publish_fitted
from toolwire.app.tables import TextKeys
from toolwire.app.watchdog import RecoveryStalled, RecoveryWatchdog, Verdict
from toolwire.config.logs import logging_config
from toolwire.config.security import client_options
from toolwire.config.settings import Settings
from toolwire.kafka import changelog_configs, group_status, topic_max_message_bytes
from toolwire.stream.messages import InputMessage, Output, Sink
from toolwire.stream.observe import Event
from toolwire.stream.processor import Processor

log = logging.getLogger("toolwire.app")


class Toolwire:
    """One worker's Faust app with its topics, tables, processor, agent and timer."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        fixes.install(settings.topic_chunks,
                      declare_timeout=settings.publish_retry_timeout_seconds)
        app = self.app = build_faust_app(settings)
        raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes,
                               "key_serializer": "raw", "value_serializer": "raw"}
        self.chunks_topic = app.topic(settings.topic_chunks, partitions=settings.partitions,
                                      **raw)
        self.sinks = {
            Sink.ASSEMBLED: app.topic(settings.topic_assembled, **raw),
            Sink.DEADLETTER: app.topic(settings.topic_deadletter, **raw),
            Sink.INPUT: self.chunks_topic,
        }
        self.health = Health(settings.stall_timeout_seconds)
        #: The worker's event counts (the processor's, and the watchdog's restarts).
        self.stats: Counter[str] = Counter()
        #: Awaited before every write: a worker whose group session may have ended writes
        #: nothing until its coordinator answers (a zombie after a partition; fix 5 of
        #: :mod:`toolwire.app.fixes`).
        self.fence = Fence(app.conf.id, settings.session_timeout_seconds,
                           heartbeat_interval(settings), fixes.CONTACT, fixes.EXPELLED,
                           self.fail, max_hold=settings.fence_hold_timeout_seconds,
                           on_hold=self._on_hold)
        self.tables = (
            self._table("chunks", "raw chunks of open responses, deleted when decided"),
            self._table("responses", "open responses' metadata, then dedupe markers"),
            self._table("quarantine", "quarantined sessions until an operator releases them"))
        #: How a fatal fault ends the process (a test replaces it).
        self.exit: Callable[[int], NoReturn] = os._exit
        #: The last input offset the agent handled, per partition (for the stall probe).
        self.handled: dict[int, int] = {}
        self.metrics: WorkerMetrics | None = None
        if settings.metrics_port is not None:
            self.metrics = WorkerMetrics(self.stats, self._gauges, health=self.health)
            app.task(self._serve_metrics)
            app.timer(interval=settings.topic_metrics_interval_seconds,
                      on_leader=False)(self._topic_metrics)
        self.processor = Processor(settings, *self.tables, observer=self.metrics,
                                   stats=self.stats)
        self.publisher = Publisher(self.send_once,
                                   retry_timeout=settings.publish_retry_timeout_seconds,
                                   learn_limit=self._learn_limit, observer=self.metrics)
        # Held table writes go out and are acknowledged before every commit of offsets; a
        # commit that cannot make its changelog writes durable stops the worker.
        self.checkpoint = Checkpoint(self.processor, lambda: drain_producer(app),
                                     self._resend_failed, fatal=self._commit_failed,
                                     gate=self.fence.hold,
                                     retry_timeout=settings.publish_retry_timeout_seconds)
        fixes.before_offsets(app, self.checkpoint.commit)
        #: ``checkpoint.counted`` at the end of the last sweep (see :meth:`_sweep`).
        self._counted_at_sweep = 0
        # Writes tables: one message at a time (faust-streaming #606).
        self.agent = app.agent(self.chunks_topic, name=f"{settings.app_id}.assemble",
                               concurrency=1)(self._assemble)
        app.timer(interval=settings.sweep_interval_seconds)(self._sweep)
        self.watchdog = RecoveryWatchdog(app)
        app.timer(interval=5.0, on_leader=False)(self._watch_recovery)
        app.task(self._started)
        app.on_partitions_revoked.connect(self._on_revoked)  # type: ignore[arg-type]
        app.on_partitions_assigned.connect(self._on_assigned)  # type: ignore[arg-type]

    def _table(self, name: str, help: str) -> TextKeys:
        # Same partition count as the input topic: a table's changelog partition is the
        # partition of the event that writes it, and restoring relies on the two lining up.
        table = self.app.Table(name, key_type=bytes, value_type=bytes,
                               partitions=self.settings.partitions, help=help,
                               extra_topic_configs=changelog_configs(self.settings))
        return TextKeys(table, guard=self.fence.check, writer=self.settings.worker_name)

    def _on_hold(self, held: bool) -> None:
        """The fence holds every write (not ready), or released them."""
        if held:
            self.stats[Event.FENCE_HOLDS] += 1
        self.health.held(held)

    def _gauges(self) -> dict[str, float]:
        return self.processor.gauges()

    def _resend_failed(self) -> int:
        """Send again the changelog writes the producer gave up on; how many there were."""
        return sum(table.resend_failed() for table in self.tables)

    async def _watch_recovery(self) -> None:
        verdict = self.watchdog.check()
        if verdict is Verdict.RESTARTED:
            self.stats[Event.RECOVERY_FLOW_RESUMED] += 1
            try:
                await self.app.consumer.seek_wait(self.watchdog.restart_offsets())
            except Exception as exc:  # the resume is done; the seek is a second chance
                log.warning("table recovery: the seek of its restarted reading failed: %s",
                            exc)
        elif verdict is Verdict.STUCK:
            stalled = 2 * self.watchdog.stalled_after
            self.fail(PublishFault(
                RecoveryStalled(), f"table recovery received no changelog record for "
                f"{stalled:.0f} s, also after its reading was restarted (faust-streaming "
                "#176, #629)", "the restarted worker rejoins the group, and its rebalance "
                "starts the recovery again (nothing was committed past what is durable)"))
        await self._probe_progress()

    async def _probe_progress(self) -> None:
        """Tell the health probes whether assigned input is waiting to be handled."""
        app = self.app
        busy = bool(app.rebalancing or app.in_recovery)
        self.health.recovering(busy)
        if busy:
            self.health.backlog(False)  # nothing is read during recovery: not a stall
            return
        try:
            assigned = [tp for tp in app.assignor.assigned_actives()
                        if tp.topic == self.settings.topic_chunks]
            ends = await app.consumer.highwaters(*assigned) if assigned else {}
        except Exception as exc:  # a probe must never stop the worker
            log.debug("progress probe skipped: %s", type(exc).__name__)
            return
        committed = getattr(app.consumer, "_committed_offset", {})
        waiting = False
        for tp, end in ends.items():
            handled = self.handled.get(tp.partition)
            start = handled + 1 if handled is not None else committed.get(tp) or 0
            if end is not None and end > start:
                waiting = True
                break
        self.health.backlog(waiting)

    async def _started(self) -> None:
        loop = asyncio.get_running_loop()
        log.info("worker %s started: event loop %s.%s, input %s (%d partitions), state cache "
                 "%d bytes", self.settings.worker_name, type(loop).__module__,
                 type(loop).__name__, self.settings.topic_chunks, self.settings.partitions,
                 self.settings.state_cache_bytes)
        for sink in (Sink.ASSEMBLED, Sink.DEADLETTER):
            await self._learn_limit(sink)
        self.health.started()

    async def _learn_limit(self, sink: Sink) -> int | None:
        """Read an output topic's ``max.message.bytes`` and build its records within it: a
        topic whose limit is below TOOLWIRE_MAX_RECORD_BYTES would refuse them otherwise."""
        topic = self.settings.topic_assembled if sink is Sink.ASSEMBLED \
            else self.settings.topic_deadletter
        try:
            limit = await topic_max_message_bytes(self.settings, topic)
        except Exception as exc:  # reading a config must never stop the worker
            log.warning("could not read max.message.bytes of %s (%s: %s): records are built "
                        "within TOOLWIRE_MAX_RECORD_BYTES=%d", topic, type(exc).__name__, exc,
                        self.settings.max_record_bytes)
            return None
        if limit is None:
            return None
        applied = self.processor.learn_limit(sink, limit)
        if applied < self.settings.max_record_bytes:
            log.warning("topic %s accepts messages of at most %d bytes (max.message.bytes), "
                        "less than TOOLWIRE_MAX_RECORD_BYTES=%d: its records are built to fit "
                        "%d bytes (dead letters cut, larger assembled records dead-lettered "
                        "as oversize)", topic, limit, self.settings.max_record_bytes, applied)
        return applied

    async def _serve_metrics(self) -> None:
        """Serve ``/metrics``, ``/healthz`` and ``/readyz`` from a thread, once the worker
        starts."""
        assert self.metrics is not None and self.settings.metrics_port is not None
        serve(self.health, self.metrics.registry, self.settings.metrics_bind,
              self.settings.metrics_port)
        log.info("metrics at http://%s:%d/metrics, probes at /healthz and /readyz",
                 self.settings.metrics_bind, self.settings.metrics_port)

    async def _topic_metrics(self) -> None:
        """Offsets and lag of the group, read like ``toolwire status`` does."""
        assert self.metrics is not None
        try:
            status = await group_status(self.settings.bootstrap, self.settings,
                                        client_options(self.settings), tables=False)
        except Exception as exc:  # metrics must never stop the worker
            log.warning("topic metrics not refreshed: %s: %s", type(exc).__name__, exc)
            return
        self.metrics.positions(status.members, status.positions)

    async def publish(self, output: Output) -> None:
        """Publish one output (retried, or cut to fit, see :mod:`toolwire.app.publishing`);
        a record that decides a response is settled (its done marker written) only once the
        broker has it. One that cannot be published raises :class:`PublishFault`: the worker
        then stops without committing, and the restarted worker decides the response again
        instead of finding it done."""
        published = await publish_fitted(self.publisher, self.processor, output)
        if published.settles is not None:
            self.processor.settle(published)

    async def send_once(self, output: Output) -> None:
        """One attempt at sending ``output``; a record that decides a response, and every
        dead letter, is awaited until the broker acknowledges it (a control message is
        not: a lost sweep request is sent again at the next sweep)."""
        await self.fence.hold()
        sent = await self.sinks[output.sink].send(
            key=output.key, value=output.value, headers=output.headers,
            partition=output.partition)
        if output.settles is not None or output.sink is Sink.DEADLETTER:
            await sent

    def _commit_failed(self, exc: BaseException) -> NoReturn:
        self.fail(PublishFault(
            exc, f"{exc} (the producer gave up on them: it is in a fatal state)",
            "nothing past them is committed: the restarted worker replays its input from the "
            "last commit; if it repeats, check the brokers (leadership, in-sync replicas)"))

    def fail(self, exc: BaseException) -> NoReturn:
        """Stop the worker process for a fault it cannot get past (a publish that cannot
        succeed here, or any crash of the agent): with a non-zero status and a log line
        naming the cause and the fix, so that the process supervisor restarts it. Nothing is
        committed first: the restarted worker decides the pending responses again. (Faust
        would restart the agent inside this process instead, on the same broken producer:
        alive, and idle for ever.)"""
        fault = exc if isinstance(exc, PublishFault) else PublishFault(
            exc, f"the agent failed with {type(exc).__name__}",
            "a fault no rule names: see the traceback; the restarted worker decides the "
            "pending responses again")
        self.health.failed(fault.cause)
        if self.metrics is not None:
            self.metrics.agent_failed(fault.error_name)
        log.critical("fatal: %s — %s. Exiting with status %d: the process supervisor "
                     "(systemd, Kubernetes, compose restart:) restarts the worker, which "
                     "decides the pending responses again", fault.cause, fault.fix, EXIT_FAULT,
                     # A fault with a name needs no traceback; a crash no rule names does.
                     exc_info=None if isinstance(exc, PublishFault) else exc)
        for handler in logging.getLogger().handlers:
            handler.flush()
        self.exit(EXIT_FAULT)

    async def _assemble(self, stream: faust.StreamT[bytes]) -> AsyncIterator[None]:
        try:
            async for event in stream.events():
                message = event.message
                msg = InputMessage(topic=message.topic, partition=message.partition,
                                   offset=message.offset, key=message.key,
                                   value=event.value or b"", headers=_headers(event.headers),
                                   timestamp=message.timestamp)
                try:
                    outputs = self.processor.handle(msg)
                except Exception as exc:  # the processor fails responses itself: last resort
                    log.error("internal error on %s[%d]@%d: %s", msg.topic, msg.partition,
                              msg.offset, type(exc).__name__, exc_info=True)
                    outputs = [self.processor.message_failed(msg, exc)]
                try:
                    for output in outputs:
                        await self.publish(output)
                except BaseException:
                    self.processor.unsettled()
                    raise
                if self.processor.cache_full:
                    await self.fence.hold()
                    self.processor.flush()  # a burst: write now rather than hold more
                self.handled[msg.partition] = msg.offset
                self.health.progressed()
                yield None
        except (asyncio.CancelledError, GeneratorExit):
            raise  # the worker is stopping
        except Exception as exc:
            self.fail(exc)

    async def _sweep(self) -> None:
        """Ask the owner of each partition to sweep idle responses and expired markers."""
        app = self.app
        if app.rebalancing or app.in_recovery:
            return  # restored state is not complete yet
        assigned = {tp.partition for tp in app.assignor.assigned_actives()
                    if tp.topic == self.settings.topic_chunks}
        try:
            for output in self.processor.sweep(assigned):
                await self.publish(output)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.processor.unsettled()
            self.fail(exc)
        # An idle partition commits nothing, so its held writes (and the deletions that wait
        # for a durable done marker) would wait for its next message: write them now. The
        # deletions wait for producer drains, which come only with commits: the commit's
        # steps run here too, without offsets (a step that fails leaves the rest to the next
        # commit), so that a few sweeps of an idle worker carry out its decided responses'
        # deletions. A worker that committed since the last sweep has done all of this (the
        # commit flushes every partition's writes): its sweep adds no flush and no drain,
        # whose cost (the drain waits for every record in flight) fell on the valid traffic.
        if self.checkpoint.counted == self._counted_at_sweep:
            await self.checkpoint.commit(offsets=False)
        self._counted_at_sweep = self.checkpoint.counted
        memory.after_sweep(self.settings)

    async def _on_revoked(self, sender: Any, revoked: set[Any], **kwargs: Any) -> None:
        partitions = {tp.partition for tp in revoked if tp.topic == self.settings.topic_chunks}
        self.processor.on_revoked(partitions)
        for partition in partitions:
            self.handled.pop(partition, None)

    async def _on_assigned(self, sender: Any, assigned: set[Any], **kwargs: Any) -> None:
        self.processor.on_assigned()

    def run(self, loglevel: str = "info") -> int:
        """Run the worker in this process until it is stopped (SIGINT or SIGTERM)."""
        from faust.worker import Worker

        if self.settings.event_loop == "uvloop":
            _use_uvloop()
        app = self.app
        app.finalize()
        app.conf.web_enabled = False
        app.worker_init()
        worker = Worker(app, loglevel=loglevel, quiet=True,
                        logging_config=logging_config(self.settings.log_format, loglevel))
        watch = CrashWatch(worker, self.fail).start()
        try:
            worker.execute_from_commandline()  # exits the process when the worker stops
        except SystemExit:
            watch.check()  # a crash that mode turned into status 1 exits 75 instead
            raise
        finally:
            watch.stop()
        return 0


def _use_uvloop() -> None:
    """Every event loop made from now on (the worker's and its consumer thread's) is uvloop's."""
    try:
        import uvloop
    except ImportError:
        raise SystemExit("TOOLWIRE_EVENT_LOOP=uvloop needs the uvloop package: "
                         "pip install uvloop (or set TOOLWIRE_EVENT_LOOP=asyncio)") from None
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def create_app(settings: Settings) -> Toolwire:
    """Build a worker's app from settings (nothing happens until it runs)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return Toolwire(settings)


def _headers(raw: Any) -> dict[str, bytes]:
    """Kafka headers as the processor reads them; a header sent with a null value reads as
    empty (never as the text ``None``), which the input contract treats as a missing value."""
    items = raw.items() if isinstance(raw, dict) else (raw or [])
    return {str(k): (v if isinstance(v, bytes) else b"" if v is None else str(v).encode())
            for k, v in items}
