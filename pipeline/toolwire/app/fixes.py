"""At-least-once holes in faust-streaming 0.15.x, closed for this app: the project's patches
to Faust, all of them and nothing else.

The first four were found by our crash tests (``tests/app/test_crash_broker.py``: SIGKILL a
worker mid-stream, restart, every response exactly once) and each loses input silently, so
they are patched here, narrowly, until fixed upstream (another fault, a table recovery left
with its flow stopped, is not patched but watched for: :mod:`toolwire.app.watchdog`); the
fifth, by the network-fault tests (``tests/net``: a worker partitioned from its brokers); the
last three, by the benchmark, the broker-isolation scenario and CI:

1. **Commit ahead of the changelog.** Faust commits an offset once the messages *attached* to
   it are sent, but table changelog writes are buffered with ``send_soon`` and not attached. A
   crash right after a commit lost the changelog of chunks whose offsets were committed: the
   response came back with a hole (``sequence_gap``). Fix: before committing the offsets it
   chose, the consumer runs the app's commit (:func:`before_offsets`;
   :meth:`toolwire.app.commit.Checkpoint.commit`), which drains the producer — Faust's buffer,
   then aiokafka's — so everything produced for those events is acknowledged first; a write
   the producer gave up on (Faust only logs it: ``FutureMessage exception was never
   retrieved``, seen as ``OutOfOrderSequenceNumber`` when a broker of a 3-node cluster was
   killed) is sent again with the key's current value, and the commit waits until none failed.
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
5. **A zombie writes.** aiokafka keeps the time of its last answered heartbeat to itself (a
   local of its heartbeat loop), and nothing of Faust stops producing when the group session
   ends: a worker cut off for longer than the session timeout, then healed, published and
   wrote changelogs for partitions another worker owned by then. Fix: every answered
   heartbeat and every completed join note the time in :data:`CONTACT` (per group), every
   heartbeat the coordinator answered with "not a member" (``UnknownMemberId``,
   ``IllegalGeneration``: aiokafka then resets the member's generation) in :data:`EXPELLED`,
   and the worker's :class:`toolwire.app.fencing.Fence` holds its writes while the last
   confirmation is too old and stops the worker once it was expelled. And a heartbeat
   waits for its answer a third of the session timeout at most (:func:`heartbeat_wait`),
   not aiokafka's request timeout: a coordinator cut off from the cluster drops the request
   silently, and the member, rediscovering the coordinator only after that wait, reached
   the new one after it had expired the member (the new coordinator gives every member of
   a group it loads one session timeout from the load); the broker-isolation test lost both
   workers of its group that way. For the same reason the coordinator's lookup (sent to a
   random broker, which may be the cut-off one) waits a third of the client's request
   timeout, then counts as a timed-out request, which aiokafka retries elsewhere.
6. **The livelock detector crashes the consumer.** Faust's ``verify_event_path`` (its
   ``_commit_livelock_detector``, every few seconds) reads aiokafka's ``position`` of each
   assigned partition, which asserts that it is known; right after a rebalance it may not be
   yet, and the ``AssertionError`` crashed the consumer service (seen once in the
   benchmark's scale-out section). Fix: a partition whose position is not known yet has no
   event path to verify; the check returns nothing for it.
7. **A topic declared while a broker is cut off.** At start Faust declares its topics (the
   changelogs, its leader topic): it asks the *first* broker of its metadata for the
   controller's id and sends CreateTopics there, once; a broker that does not answer raised
   ``RequestTimedOutError`` out of the worker's start, and the worker exited 1 (seen in the
   broker-isolation scenario: a worker restarted while broker 1 was cut off). Fix: every
   broker is asked for the controller at once, the first answer wins; and a declaration that
   fails with an error about reaching the cluster (a retriable Kafka error, no controller, a
   time-out) is tried again, with backoff and fresh metadata, for the publish retry timeout
   (:func:`install`'s ``declare_timeout``) before the error is raised.
8. **A topic just created is not led yet.** CreateTopics is answered once the controller
   has written the topic; each broker takes up its partitions a moment later, and the
   metadata may name a leader before that leader serves the partition. A worker's first
   start went straight on to read the changelogs it had just declared, and aiokafka's
   fetcher logged ``[ERROR] Failed fetch offsets from 1: NotLeaderForPartitionError`` for a
   changelog (and retried; seen in CI under load) — an error line on every healthy first
   deploy, which an operator alerting on errors would be paged for. Fix: a declaration that
   created a topic returns once the leader of each of its partitions answers ListOffsets
   for it (:func:`_until_served`), for the declare timeout at most; after that it warns and
   goes on (reads and writes of the topic are retried by aiokafka anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any
from weakref import WeakKeyDictionary

from aiokafka import TopicPartition
from aiokafka import client as _client
from aiokafka import errors as _errors
from aiokafka.consumer import group_coordinator as _group_coordinator
from aiokafka.protocol import offset as _offset_protocol
from faust import exceptions as _faust_exceptions
from faust.tables import recovery as _recovery
from faust.transport import consumer as _consumer
from faust.transport.drivers import aiokafka as _aiokafka_driver

_log = logging.getLogger("toolwire.app")
_MARK = "_toolwire_patched"
#: The generation aiokafka gives a member that is not in a group (``reset_generation``).
_NO_GENERATION: int = _group_coordinator.OffsetCommitRequest.DEFAULT_GENERATION_ID
#: The commit to run before each offset commit, per app (see :func:`before_offsets`).
COMMITS: WeakKeyDictionary[Any, Callable[[], Awaitable[object]]] = WeakKeyDictionary()
#: Faust's own method, kept for the test that shows the race it has (read, not patched, here).
UPSTREAM_ON_RECOVERY_COMPLETED: Any = _recovery.Recovery.on_recovery_completed
#: When the coordinator of each consumer group last confirmed this process's member
#: (``time.monotonic()``; fix 5). Written in Faust's consumer thread, read in the worker's.
CONTACT: dict[str, float] = {}
#: When the coordinator of each consumer group last answered a heartbeat of this process's
#: member with "not a member (of this generation)" (``time.monotonic()``; fix 5).
EXPELLED: dict[str, float] = {}
#: Seconds a topic declaration that cannot reach the cluster is tried again (fix 7).
DECLARE_TIMEOUT: float = 60.0


def before_offsets(app: Any, commit: Callable[[], Awaitable[object]]) -> None:
    """Await ``commit`` each time ``app``'s consumer is about to commit input offsets, after
    Faust sent the messages attached to them (fix 1): it makes the table writes those offsets
    cover durable first (:meth:`toolwire.app.commit.Checkpoint.commit`)."""
    COMMITS[app] = commit


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


def install(input_topic: str, *, declare_timeout: float = 60.0) -> None:
    """Patch Faust's consumer and recovery classes (idempotent); ``declare_timeout``: how long
    a topic declaration is tried again (fix 7; the last call's value counts)."""
    global DECLARE_TIMEOUT
    DECLARE_TIMEOUT = declare_timeout
    consumer_class: Any = _consumer.Consumer
    if getattr(consumer_class, _MARK, False):
        return
    handle_attached = consumer_class._handle_attached
    perform_seek = consumer_class.perform_seek
    init = consumer_class.__init__

    async def handle_attached_then_commit(self: Any, commit_offsets: Any) -> None:
        await handle_attached(self, commit_offsets)
        commit = COMMITS.get(self.app)
        if commit is not None:
            await commit()

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

    consumer_class._handle_attached = handle_attached_then_commit
    consumer_class.perform_seek = perform_seek_then_rewind_uncommitted
    consumer_class.__init__ = init_with_guarded_read_offsets
    recovery_class: Any = _recovery.Recovery
    recovery_class.on_recovery_completed = on_recovery_completed_in_order
    _note_group_contact()
    _bound_coordinator_lookup()
    _verify_known_positions_only()
    _declare_topics_through_faults()
    setattr(consumer_class, _MARK, True)


def lapse_limit(session_timeout: float, heartbeat_interval: float) -> float:
    """Seconds without a confirmation after which the coordinator may have expired the member:
    the session timeout less one heartbeat interval (the coordinator counts from when it
    received the heartbeat, no later than when its answer arrived)."""
    return max(session_timeout - heartbeat_interval, heartbeat_interval)


def heartbeat_wait(session_timeout: float) -> float:
    """Seconds a heartbeat waits for its answer (fix 5): a third of the session timeout, so
    that two waits and a rediscovery fit in the session a new coordinator gives."""
    return max(session_timeout / 3, 1.0)


def _verify_known_positions_only() -> None:
    """Fix 6: Faust's livelock check skips a partition whose position is not known yet."""
    thread: Any = _aiokafka_driver.AIOKafkaConsumerThread
    verify = thread.verify_event_path

    def verify_event_path_of_known_positions(self: Any, now: float, tp: Any) -> Any:
        try:
            return verify(self, now, tp)
        except AssertionError:  # aiokafka's position of a partition not reset yet
            return None

    thread.verify_event_path = verify_event_path_of_known_positions


#: Errors of a topic declaration that say the cluster was not reached, not that it refused.
_UNREACHED: tuple[type[BaseException], ...] = (TimeoutError, _faust_exceptions.NotReady,
                                               RuntimeError, OSError)


def _reached_nothing(exc: BaseException) -> bool:
    if isinstance(exc, _errors.KafkaError):
        return bool(getattr(exc, "retriable", False)) or isinstance(exc, _errors.NotControllerError)
    # Faust raises RuntimeError for NotController, Exception when no broker answered.
    return isinstance(exc, _UNREACHED) or str(exc).startswith("Controller node")


def _declare_topics_through_faults() -> None:
    """Fix 7: the controller from the first broker that answers; a declaration that cannot
    reach the cluster is tried again for :data:`DECLARE_TIMEOUT` seconds."""
    transport: Any = _aiokafka_driver.Transport
    create = transport._really_create_topic

    async def controller_from_first_answer(self: Any, owner: Any, client: Any,
                                           timeout: int = 30000) -> int | None:
        nodes = [broker.nodeId for broker in client.cluster.brokers()]
        if not nodes or None in nodes:
            raise _faust_exceptions.NotReady("Not connected to Kafka Broker")
        driver: Any = _aiokafka_driver  # its request types, as the aiokafka version has them
        request: Any = (driver.MetadataRequest_v1([]) if driver._AIOKAFKA_HAS_API_VERSION
                        else driver.MetadataRequest([]))
        asks = [asyncio.ensure_future(client.send(node, request)) for node in nodes]
        failure: BaseException | None = None
        try:
            for answer in asyncio.as_completed(asks, timeout=timeout / 1000):
                if owner.should_stop:
                    return None
                try:
                    response = await answer
                except (_errors.KafkaError, OSError) as exc:
                    failure = exc
                    continue
                return int(response.controller_id)
        except TimeoutError as exc:
            failure = exc
        finally:
            for ask in asks:
                ask.cancel()
        raise _errors.RequestTimedOutError(
            f"no broker of {nodes} told the controller: {failure!r}")

    async def create_topic_through_faults(self: Any, owner: Any, client: Any, topic: str,
                                          *args: Any, **kwargs: Any) -> None:
        deadline = time.monotonic() + DECLARE_TIMEOUT
        backoff = 0.5
        known = topic in client.cluster.topics()
        while True:
            try:
                await create(self, owner, client, topic, *args, **kwargs)
                if not known and not await _until_served(owner, client, topic,
                                                         time.monotonic() + DECLARE_TIMEOUT):
                    _log.warning("topic %s: declared, but not every partition's leader serves "
                                 "it after %.0f s; going on (aiokafka retries its reads and "
                                 "writes)", topic, DECLARE_TIMEOUT)
                return
            except Exception as exc:
                if (not _reached_nothing(exc) or owner.should_stop
                        or time.monotonic() + backoff > deadline):
                    raise
                _log.warning("declaring topic %s: %s: %s; trying again in %.1f s (for %.0f s "
                             "more)", topic, type(exc).__name__, exc, backoff,
                             deadline - time.monotonic())
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)
            # The next try says what is wrong if this fails too.
            with contextlib.suppress(TimeoutError, _errors.KafkaError, OSError):
                await asyncio.wait_for(client.force_metadata_update(), backoff)

    transport._get_controller_node = controller_from_first_answer
    transport._really_create_topic = create_topic_through_faults


async def _until_served(owner: Any, client: Any, topic: str, deadline: float) -> bool:
    """Fix 8: wait until the leader of every partition of ``topic`` serves it (True), the
    owner stops or ``deadline`` (``time.monotonic()``) passes (False)."""
    backoff = 0.05
    while not owner.should_stop:
        with contextlib.suppress(_errors.KafkaError, OSError, TimeoutError):
            if await asyncio.wait_for(_served(client, topic),
                                      max(0.1, min(5.0, deadline - time.monotonic()))):
                return True
        if time.monotonic() + backoff > deadline:
            return False
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, 1.0)
    return False


async def _served(client: Any, topic: str) -> bool:
    """Whether fresh metadata names a leader for every partition of ``topic`` and each leader
    answers a ListOffsets (latest) for its partitions without an error."""
    cluster = await client.fetch_all_metadata()
    partitions = cluster.partitions_for_topic(topic)
    if not partitions:
        return False
    by_leader: defaultdict[int, list[int]] = defaultdict(list)
    for partition in partitions:
        leader = cluster.leader_for_partition(TopicPartition(topic, partition))
        if leader is None or leader < 0:
            return False
        by_leader[leader].append(partition)
    answers = await asyncio.gather(*(client.send(node, _latest_offsets(topic, owned))
                                     for node, owned in by_leader.items()))
    return all(code == 0 for answer in answers for _, parts in answer.topics
               for _, code, *_ in parts)


def _latest_offsets(topic: str, partitions: list[int]) -> Any:
    """A ListOffsets request for the latest offset of ``partitions`` of ``topic``, as the
    installed aiokafka spells it (before 0.13: a list of request types by version)."""
    entries = [(topic, [(partition, -1) for partition in partitions])]
    if _aiokafka_driver._AIOKAFKA_HAS_API_VERSION:
        return _offset_protocol.OffsetRequest[1](-1, entries)
    return _offset_protocol.OffsetRequest(-1, 0, entries)


def _bound_coordinator_lookup() -> None:
    """Fix 5: a coordinator lookup waits a third of the client's request timeout at most;
    then it raises aiokafka's ``RequestTimedOutError``, which its lookup loop retries (with a
    metadata update) instead of waiting for the whole request timeout on a silent broker."""
    client: Any = _client.AIOKafkaClient
    lookup = client.coordinator_lookup

    async def coordinator_lookup_bounded(self: Any, coordinator_type: Any,
                                         coordinator_key: Any) -> Any:
        wait = max(self._request_timeout_ms / 3000, 1.0)
        try:
            return await asyncio.wait_for(lookup(self, coordinator_type, coordinator_key),
                                          wait)
        except TimeoutError:
            raise _errors.RequestTimedOutError(
                f"FindCoordinator for {coordinator_key!r} not answered in {wait:.1f} s"
            ) from None

    client.coordinator_lookup = coordinator_lookup_bounded


def _note_group_contact() -> None:
    """Fix 5: note in :data:`CONTACT` each answer that confirms the member (a heartbeat
    answered without error, or with "rebalancing", which keeps the member; a join and sync
    that succeeded, after which aiokafka starts its heartbeat task), and in :data:`EXPELLED`
    each heartbeat answered with "not a member": aiokafka's ``_do_heartbeat`` resets the
    member's generation for exactly those answers (a request that failed, or a coordinator
    that moved, leaves it as it was)."""
    coordinator: Any = _group_coordinator.GroupCoordinator
    do_heartbeat = coordinator._do_heartbeat
    start_heartbeat_task = coordinator._start_heartbeat_task

    async def do_heartbeat_noting_contact(self: Any) -> bool:
        generation = self.generation
        wait = heartbeat_wait(self._session_timeout_ms / 1000)
        try:
            ok: bool = await asyncio.wait_for(do_heartbeat(self), wait)
        except TimeoutError:
            # What aiokafka does for a heartbeat it could not send, and for a coordinator
            # that says it is not the coordinator: look for the coordinator again.
            _log.warning("Heartbeat of group %s not answered in %.1f s: looking for the "
                         "group coordinator again", self.group_id, wait)
            self.coordinator_dead()
            return False
        if ok:
            CONTACT[self.group_id] = time.monotonic()
        elif generation != _NO_GENERATION and self.generation == _NO_GENERATION:
            EXPELLED[self.group_id] = time.monotonic()
        return ok

    def start_heartbeat_task_noting_contact(self: Any) -> None:
        CONTACT[self.group_id] = time.monotonic()
        start_heartbeat_task(self)

    do_rejoin_group = coordinator._do_rejoin_group

    async def do_rejoin_group_noting_lapse(self: Any, subscription: Any) -> Any:
        # A member that rejoins after a silence longer than its session may have been
        # expired meanwhile (the coordinator then answers the join "unknown member" and
        # aiokafka joins again as a new member, no heartbeat answer in between): for the
        # fence it was expelled, so the writes it held are never made.
        last = CONTACT.get(self.group_id)
        limit = lapse_limit(self._session_timeout_ms / 1000, self._heartbeat_interval_ms / 1000)
        # (The generation may be reset already: an offset commit answered "unknown member"
        # resets it before this rejoin — seen in the network-fault test.)
        if last is not None and time.monotonic() - last > limit:
            EXPELLED[self.group_id] = time.monotonic()
        return await do_rejoin_group(self, subscription)

    coordinator._do_heartbeat = do_heartbeat_noting_contact
    coordinator._do_rejoin_group = do_rejoin_group_noting_lapse
    coordinator._start_heartbeat_task = start_heartbeat_task_noting_contact
