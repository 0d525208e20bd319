"""A consumer group's status: per topic and partition, end offsets, the group's committed
offsets and the lag, in messages and in seconds; whether the group has a live member; and
which partitions are not progressing although workers are live
(:attr:`GroupStatus.not_progressing`).

Read from Kafka alone (an admin client and a consumer without a group), so ``toolwire status``
works with no worker running, and a worker exports the same numbers as metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError

from toolwire.config.settings import Settings
from toolwire.kafka.clients import open_client
from toolwire.stream.state import OpenResponse, StateError, decode_response


@dataclass(frozen=True, slots=True)
class PartitionPosition:
    topic: str
    partition: int
    end_offset: int
    #: The worker group's committed offset (input topic only); ``None`` when none.
    committed: int | None = None
    #: Messages not yet processed (input topic only).
    lag_messages: int | None = None
    #: Age of the oldest message not yet processed, seconds (0 when nothing is behind).
    lag_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Stall:
    """A partition of the input topic whose oldest unprocessed message waits longer than the
    stall timeout while the group has live members: a worker is up but not progressing (or the
    group is that far behind)."""

    partition: int
    lag_messages: int
    lag_seconds: float
    members: int

    def describe(self) -> str:
        workers = f"{self.members} worker{'' if self.members == 1 else 's'}"
        return (f"partition {self.partition}: {self.lag_messages} message"
                f"{'' if self.lag_messages == 1 else 's'} waiting for {self.lag_seconds:.0f} s "
                f"with {workers} live: a worker is up but not progressing (or the group is that "
                "far behind); check /healthz of the workers (see ops/RUNBOOK.md)")

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.describe()}


@dataclass(frozen=True, slots=True)
class GroupStatus:
    group: str
    state: str
    members: int
    positions: tuple[PartitionPosition, ...]
    #: From the tables' changelogs: responses open, sessions in quarantine.
    open_responses: int = 0
    quarantined_sessions: tuple[str, ...] = ()
    #: Dead letters published in the last ``window`` seconds, by reason.
    dead_letters: Mapping[str, int] = field(default_factory=dict)
    window: float = 3600.0
    #: ``TOOLWIRE_STALL_TIMEOUT``: a partition whose oldest unprocessed message is older, with
    #: workers live, is not progressing; ``None`` looks for none.
    stall_seconds: float | None = None

    @property
    def not_progressing(self) -> tuple[Stall, ...]:
        """Input partitions with messages waiting longer than ``stall_seconds`` although the
        group has a live member (none when it has none: then no worker is up at all)."""
        if self.stall_seconds is None or self.members < 1:
            return ()
        return tuple(
            Stall(p.partition, p.lag_messages, p.lag_seconds, self.members)
            for p in self.positions
            if p.lag_messages is not None and p.lag_messages > 0
            and p.lag_seconds is not None and p.lag_seconds > self.stall_seconds)

    def as_json(self) -> dict[str, Any]:
        return {"group": self.group, "state": self.state, "members": self.members,
                "partitions": [asdict(p) for p in self.positions],
                "open_responses": self.open_responses,
                "quarantined_sessions": list(self.quarantined_sessions),
                "dead_letters_last_hour": dict(self.dead_letters),
                "stall_timeout_seconds": self.stall_seconds,
                "not_progressing": [s.as_json() for s in self.not_progressing]}


async def group_status(bootstrap: str, settings: Settings,
                       security: Mapping[str, Any] | None = None,
                       timeout: float = 15.0, *, tables: bool = True) -> GroupStatus:
    """End offsets of the three topics; committed offsets, lag and members of the group; with
    ``tables``, also what the changelogs and the dead-letter topic of the last hour hold."""
    options = dict(security or {})
    ms = int(timeout * 1000)
    async with contextlib.AsyncExitStack() as clients:
        admin = await clients.enter_async_context(open_client(
            AIOKafkaAdminClient, bootstrap, start_timeout=timeout, client_id="toolwire-status",
            request_timeout_ms=ms, **options))
        consumer = await clients.enter_async_context(open_client(
            AIOKafkaConsumer, bootstrap, start_timeout=timeout, enable_auto_commit=False,
            client_id="toolwire-status", request_timeout_ms=ms, **options))
        group = settings.app_id
        described, offsets = await _coordinated(admin, group, timeout)
        state, members = _group(described)
        committed = {tp.partition: meta.offset for tp, meta in offsets.items()
                     if tp.topic == settings.topic_chunks and meta.offset >= 0}
        positions = await _positions(consumer, settings, committed)
        stall = settings.stall_timeout_seconds
        if not tables:
            return GroupStatus(group, state, members, positions, stall_seconds=stall)
        responses = await _table(consumer, f"{group}-responses-changelog", timeout)
        quarantine = await _table(consumer, f"{group}-quarantine-changelog", timeout)
        open_responses = 0
        for value in responses.values():
            try:
                open_responses += isinstance(decode_response(value), OpenResponse)
            except StateError:
                continue
        reasons = await _reasons_since(consumer, settings.topic_deadletter, 3600.0, timeout)
        return GroupStatus(group, state, members, positions, open_responses,
                           tuple(sorted(k.decode("utf-8", "replace") for k in quarantine)),
                           reasons, stall_seconds=stall)


async def group_members(bootstrap: str, group: str, topic: str,
                        **client: Any) -> tuple[str, dict[str, set[int]]]:
    """(group state, member id → its partitions of ``topic``), as the broker describes the
    consumer group: who owns what right now, for tests and benchmarks that wait for a
    rebalance to settle."""
    async with open_client(AIOKafkaAdminClient, bootstrap, request_timeout_ms=10_000,
                           **client) as admin:
        responses = await admin.describe_consumer_groups([group])
    state, members = "?", {}
    for response in responses:
        for described in response.groups:
            state = described[2]
            for member in described[5]:
                parts: set[int] = set()
                if member[4]:
                    decoded = ConsumerProtocolMemberAssignment.decode(member[4])
                    parts = {p for t, ps in decoded.assignment if t == topic for p in ps}
                members[member[0]] = parts
    return state, members


async def _positions(consumer: AIOKafkaConsumer, settings: Settings,
                     committed: Mapping[int, int]) -> tuple[PartitionPosition, ...]:
    topics = (settings.topic_chunks, settings.topic_assembled, settings.topic_deadletter)
    tps = await _partitions(consumer, topics)
    ends = await consumer.end_offsets(tps) if tps else {}
    positions = []
    for tp in tps:
        end = ends[tp]
        if tp.topic != settings.topic_chunks:
            positions.append(PartitionPosition(tp.topic, tp.partition, end))
            continue
        done = committed.get(tp.partition)
        behind = end - (done or 0)
        age = await _age(consumer, tp, done or 0) if behind > 0 else 0.0
        positions.append(PartitionPosition(tp.topic, tp.partition, end, done, behind, age))
    return tuple(positions)


async def _coordinated(admin: AIOKafkaAdminClient, group: str,
                       timeout: float) -> tuple[Any, Any]:
    """The group's description and offsets; a coordinator still being elected (a fresh
    cluster) is waited for, up to ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return (await admin.describe_consumer_groups([group]),
                    await admin.list_consumer_group_offsets(group))
        except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def _group(described: Any) -> tuple[str, int]:
    """(state, live members) from aiokafka's DescribeGroups response."""
    groups = described[0].to_object()["groups"] if described else []
    if not groups:
        return "Dead", 0
    group = groups[0]
    state = group.get("state") or group.get("group_state") or "Unknown"
    return str(state), len(group.get("members") or [])


async def _partitions(consumer: AIOKafkaConsumer, topics: Sequence[str]) -> list[TopicPartition]:
    # The metadata of every topic: once assigned, a consumer tracks only its own topics.
    cluster = await consumer._client.fetch_all_metadata()
    return [TopicPartition(topic, p) for topic in topics
            for p in sorted(cluster.partitions_for_topic(topic) or ())]


async def _age(consumer: AIOKafkaConsumer, tp: TopicPartition, offset: int) -> float | None:
    """Seconds since the message at ``offset`` was produced (the oldest one not processed)."""
    consumer.assign([tp])
    consumer.seek(tp, offset)
    batch = await consumer.getmany(tp, timeout_ms=2000, max_records=1)
    messages = batch.get(tp) or []
    if not messages:
        return None
    produced: float = messages[0].timestamp / 1000
    return max(0.0, time.time() - produced)


async def _read(consumer: AIOKafkaConsumer, starts: Mapping[TopicPartition, int],
                timeout: float) -> list[Any]:
    """Every message from ``starts`` to the end offsets as they are now."""
    tps = [tp for tp in starts]
    if not tps:
        return []
    ends = await consumer.end_offsets(tps)
    todo = {tp for tp in tps if ends[tp] > starts[tp]}
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, starts[tp])
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    while todo and time.monotonic() < deadline:
        batch = await consumer.getmany(*todo, timeout_ms=500, max_records=5000)
        for tp, records in batch.items():
            messages.extend(r for r in records if r.offset < ends[tp])
            if records and records[-1].offset >= ends[tp] - 1:
                todo.discard(tp)
    return messages


async def _table(consumer: AIOKafkaConsumer, topic: str, timeout: float) -> dict[bytes, bytes]:
    """A table as its changelog leaves it: the last value of each key, deletions applied."""
    tps = await _partitions(consumer, [topic])
    if not tps:
        return {}
    begins = await consumer.beginning_offsets(tps)
    table: dict[bytes, bytes] = {}
    for message in await _read(consumer, begins, timeout):
        if message.value is None:
            table.pop(message.key, None)
        else:
            table[message.key] = message.value
    return table


async def _reasons_since(consumer: AIOKafkaConsumer, topic: str, window: float,
                         timeout: float) -> dict[str, int]:
    tps = await _partitions(consumer, [topic])
    if not tps:
        return {}
    since = int((time.time() - window) * 1000)
    found = await consumer.offsets_for_times({tp: since for tp in tps})
    ends = await consumer.end_offsets(tps)
    starts = {tp: (found[tp].offset if found.get(tp) else ends[tp]) for tp in tps}
    counts: Counter[str] = Counter()
    for message in await _read(consumer, starts, timeout):
        reason = dict(message.headers or []).get("toolwire.errors.reason", b"unknown")
        counts[reason.decode("utf-8", "replace")] += 1
    return dict(sorted(counts.items()))
