"""Kafka around the measured processes: topics, preloading, offsets, reading outputs, and the
live driver (a paced producer and a watcher in one event loop).

Times are wall-clock (``time.time()``) throughout: they are compared with the Kafka timestamps
that the measured processes' producers write on the same machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError
from workload import Message, Response, Timed, partition_of

from toolwire.publish import ChunkPublisher, RequestMeta
from toolwire.stream.messages import H_END, H_REQUEST_ID

# --------------------------------------------------------------------------- admin


async def create_topics(bootstrap: str, names: Sequence[str], partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(n, partitions, 1) for n in names])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            described = await admin.describe_topics(list(names))
            if all(t["error_code"] == 0 and len(t["partitions"]) == partitions
                   for t in described):
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"topics {', '.join(names)} not ready after 30 s")
    finally:
        await admin.close()


async def list_topics(bootstrap: str, pattern: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        names = await admin.list_topics()
    finally:
        await admin.close()
    regex = re.compile(pattern)
    return sorted(n for n in names if regex.fullmatch(n))


async def delete_topics(bootstrap: str, pattern: str) -> int:
    """Delete the topics matching ``pattern`` (the run's own, by their unique prefix)."""
    names = await list_topics(bootstrap, pattern)
    if not names:
        return 0
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics(names)
    finally:
        await admin.close()
    return len(names)


async def group_lag(bootstrap: str, group: str, topic: str) -> int:
    """Messages of ``topic`` the group has not committed (all of them before a commit)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await admin.start()
    await consumer.start()
    try:
        tps = await _partitions(consumer, [topic])
        ends = await consumer.end_offsets(tps)
        committed = await admin.list_consumer_group_offsets(group, partitions=tps)
    finally:
        await consumer.stop()
        await admin.close()
    lag = 0
    for tp in tps:
        meta = committed.get(tp)
        done = meta.offset if meta is not None and meta.offset >= 0 else 0
        lag += max(0, ends[tp] - done)
    return lag


async def _partitions(consumer: Any, topics: Sequence[str]) -> list[TopicPartition]:
    await consumer._client.force_metadata_update()
    tps = []
    for topic in topics:
        tps += [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic)
                                                         or ())]
    return tps


# --------------------------------------------------------------------------- producing


async def produce(bootstrap: str, topic: str, partitions: int,
                  messages: Sequence[Message]) -> float:
    """Send every message (acks=all, idempotent) and wait for all acknowledgements; seconds
    it took. Each key goes to :func:`workload.partition_of`."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                enable_idempotence=True, linger_ms=20,
                                max_batch_size=256 * 1024)
    await producer.start()
    start = time.monotonic()
    try:
        pending: list[asyncio.Future[Any]] = []
        for m in messages:
            pending.append(await producer.send(topic, m.value, key=m.key,
                                               headers=list(m.headers),
                                               partition=partition_of(m.key, partitions)))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending = []
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return time.monotonic() - start


# --------------------------------------------------------------------------- reading


async def counts(bootstrap: str, topics: Sequence[str]) -> int:
    """Records in ``topics`` (end minus start offsets; producers here write no transaction
    markers, so offsets are records)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = await _partitions(consumer, topics)
        ends = await consumer.end_offsets(tps)
        starts = await consumer.beginning_offsets(tps)
    finally:
        await consumer.stop()
    return sum(ends[tp] - starts[tp] for tp in tps)


async def edges(bootstrap: str, topics: Sequence[str]) -> tuple[float, float]:
    """Kafka timestamps (s) of the earliest first record and the latest last record over the
    partitions of ``topics``: the first and last output of a run."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=64 * 1024)
    await consumer.start()
    first, last = float("inf"), float("-inf")
    try:
        tps = await _partitions(consumer, topics)
        ends = await consumer.end_offsets(tps)
        starts = await consumer.beginning_offsets(tps)
        consumer.assign(tps)
        for tp in tps:
            if ends[tp] <= starts[tp]:
                continue
            for offset in {starts[tp], ends[tp] - 1}:
                consumer.seek(tp, offset)
                record = await asyncio.wait_for(consumer.getone(tp), 30)
                first = min(first, record.timestamp / 1000)
                last = max(last, record.timestamp / 1000)
    finally:
        await consumer.stop()
    return first, last


@dataclass
class TopicStats:
    records: int = 0
    key_bytes: int = 0
    value_bytes: int = 0
    timestamps: list[float] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return self.key_bytes + self.value_bytes


async def records_to_end(bootstrap: str, topics: Sequence[str], timeout: float
                         ) -> AsyncIterator[Any]:
    """Every record of ``topics`` up to their end offsets now, from the beginning; a read
    that does not get there in ``timeout`` seconds raises :class:`TimeoutError`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=4 << 20, fetch_max_bytes=16 << 20)
    await consumer.start()
    try:
        tps = await _partitions(consumer, topics)
        ends = await consumer.end_offsets(tps)
        todo = {tp for tp in tps if ends[tp] > 0}
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            for tp in list(todo):
                if await consumer.position(tp) >= ends[tp]:
                    todo.discard(tp)
            if not todo:
                break
            batch = await consumer.getmany(*todo, timeout_ms=500)
            for tp, records in batch.items():
                for r in records:
                    if r.offset < ends[tp]:
                        yield r
        if todo:
            raise TimeoutError(f"reading {', '.join(topics)} did not finish in {timeout} s")
    finally:
        await consumer.stop()


async def read_all(bootstrap: str, topics: Sequence[str], *, keep_times: bool = False,
                   timeout: float = 300.0) -> dict[str, TopicStats]:
    """Every record of ``topics`` up to their end offsets now: counts, key and value bytes
    (and Kafka timestamps with ``keep_times``)."""
    stats = {t: TopicStats() for t in topics}
    async for r in records_to_end(bootstrap, topics, timeout):
        s = stats[r.topic]
        s.records += 1
        s.key_bytes += len(r.key or b"")
        s.value_bytes += len(r.value or b"")
        if keep_times:
            s.timestamps.append(r.timestamp / 1000)
    return stats


def wait_for_count(bootstrap: str, topics: Sequence[str], want: int, timeout: float,
                   alive: Callable[[], None], progress: Callable[[int], None] | None = None,
                   ) -> float:
    """Poll until ``topics`` hold ``want`` records; returns the wall time it was seen.
    ``alive`` raises if a measured process died; a timeout raises :class:`TimeoutError`."""
    deadline = time.monotonic() + timeout
    last_report = time.monotonic()
    while True:
        have = asyncio.run(counts(bootstrap, topics))
        if have >= want:
            return time.time()
        alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{have} of {want} records on {', '.join(topics)} after "
                               f"{timeout:.0f} s")
        if progress is not None and time.monotonic() - last_report > 10:
            progress(have)
            last_report = time.monotonic()
        time.sleep(0.5)


# --------------------------------------------------------------------------- live traffic


@dataclass
class LiveRun:
    """What a paced run sent and saw."""

    #: Request → wall time its last chunk (with the end marker) was handed to the producer.
    last_sent: dict[str, float] = field(default_factory=dict)
    #: Request → wall time the watcher read its output.
    seen: dict[str, float] = field(default_factory=dict)
    messages: int = 0
    events: int = 0
    started: float = 0.0
    sent: float = 0.0
    finished: float = 0.0
    #: The most the producer fell behind its schedule (s).
    behind: float = 0.0

    def latencies(self) -> list[float]:
        return [self.seen[r] - t for r, t in self.last_sent.items() if r in self.seen]

    @property
    def missing(self) -> int:
        return sum(1 for r in self.last_sent if r not in self.seen)


class _Watcher:
    """Reads the output topics from their current end; records when each request's output
    (a record, or a forwarded end marker) is first read."""

    def __init__(self, bootstrap: str, topics: Sequence[str], forwarded: bool,
                 run: LiveRun) -> None:
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                         fetch_max_wait_ms=100)
        self.topics = list(topics)
        self.forwarded = forwarded
        self.run = run
        self.stopping = asyncio.Event()

    async def start(self) -> None:
        await self.consumer.start()
        tps = await _partitions(self.consumer, self.topics)
        self.consumer.assign(tps)
        await self.consumer.seek_to_end(*tps)
        for tp in tps:  # resolve the positions now, before anything is produced
            await self.consumer.position(tp)

    async def loop(self) -> None:
        seen = self.run.seen
        try:
            while not self.stopping.is_set():
                try:
                    batch = await self.consumer.getmany(timeout_ms=100)
                except KafkaError:
                    await asyncio.sleep(0.1)
                    continue
                now = time.time()
                for records in batch.values():
                    for r in records:
                        headers = dict(r.headers)
                        if self.forwarded and H_END not in headers:
                            continue
                        request = headers.get(H_REQUEST_ID)
                        if request is not None:
                            seen.setdefault(request.decode(errors="replace"), now)
        finally:
            await self.consumer.stop()


async def _until_seen(run: LiveRun, wait: float) -> None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not set(run.last_sent) <= set(run.seen):
        await asyncio.sleep(0.05)


async def drive(bootstrap: str, topic: str, partitions: int, schedule: Sequence[Timed],
                outputs: Sequence[str], *, forwarded: bool, wait: float) -> LiveRun:
    """Send ``schedule`` on time (acks=all, idempotent, linger 5 ms like ChunkPublisher) while
    watching ``outputs``; return once every response's output was read or ``wait`` seconds
    after the last send. ``forwarded``: the outputs are forwarded input messages (baselines),
    and a response's output is its forwarded end marker."""
    run = LiveRun()
    watcher = _Watcher(bootstrap, outputs, forwarded, run)
    await watcher.start()
    watching = asyncio.create_task(watcher.loop())
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        futures: list[asyncio.Future[Any]] = []
        run.started = time.time()
        start = time.monotonic()
        for timed in schedule:
            delay = start + timed.at - time.monotonic()
            if delay > 0.001:
                await asyncio.sleep(delay)
            else:
                run.behind = max(run.behind, -delay)
            m = timed.message
            if m.end:
                run.last_sent[m.request] = time.time()
            else:
                run.events += 1
            futures.append(await producer.send(topic, m.value, key=m.key,
                                               headers=list(m.headers),
                                               partition=partition_of(m.key, partitions)))
            run.messages += 1
        await asyncio.gather(*futures)
        run.sent = time.time()
        await _until_seen(run, wait)
        run.finished = time.time()
    finally:
        watcher.stopping.set()
        with contextlib.suppress(Exception):
            await watching
        await producer.stop()
    return run


async def _paced_body(pieces: Sequence[bytes], start: float, gap: float, request: str,
                      last: dict[str, float]) -> AsyncIterator[bytes]:
    for j, piece in enumerate(pieces):
        delay = start + j * gap - time.monotonic()
        if delay > 0.001:
            await asyncio.sleep(delay)
        if j == len(pieces) - 1:
            last[request] = time.time()
        yield piece


async def drive_publisher(bootstrap: str, topic: str, streams: Sequence[Response],
                          starts: Sequence[float], gap: float,
                          publisher_options: dict[str, Any], *,
                          outputs: Sequence[str] = (), wait: float = 0.0) -> LiveRun:
    """Publish each response through one :class:`ChunkPublisher`, its events arriving
    ``gap`` seconds apart from ``starts[i]`` on, as a gateway relaying a live body does;
    watch ``outputs`` (if any) for the records. A response's latency runs from the moment its
    last event arrived at the gateway."""
    run = LiveRun()
    watcher = _Watcher(bootstrap, outputs, False, run) if outputs else None
    watching = None
    if watcher is not None:
        await watcher.start()
        watching = asyncio.create_task(watcher.loop())
    try:
        async with ChunkPublisher(bootstrap, topic, **publisher_options) as publisher:
            run.started = time.time()
            base = time.monotonic()

            async def one(response: Response, at: float) -> None:
                delay = base + at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                pieces = [m.value for m in response.messages if not m.end]
                meta = RequestMeta(request_id=response.request, session_id=response.session)
                body = _paced_body(pieces, time.monotonic(), gap, response.request,
                                   run.last_sent)
                report = await publisher.publish_stream(meta, body)
                run.messages += report.messages
                run.events += len(pieces)

            await asyncio.gather(*(one(r, at) for r, at in zip(streams, starts, strict=True)))
        run.sent = time.time()
        if watcher is not None:
            await _until_seen(run, wait)
        run.finished = time.time()
    finally:
        if watcher is not None and watching is not None:
            watcher.stopping.set()
            with contextlib.suppress(Exception):
                await watching
    return run
