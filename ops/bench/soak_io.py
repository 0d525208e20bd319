"""What the soak (``ops/bench/soak.py``) reads and writes: the endless mixed-wire input and its
pacer, the worker's ``/proc`` figures and metrics, per-partition offsets, changelog sizes, and
the final check of every record against ``toolwire.core.assemble``.

The input is the mixed-wire workload of :mod:`workload` (the four wires in turn, response *i*
of wire *i* mod 4, each wire cycling through its captures, stretched to 40 events), made one
response at a time so that an hour of it never sits in memory: response *i* is rebuilt from
its index for the check. Captures whose options need ``end_without_done`` are left out (the
worker of a mixed workload is not configured for one provider).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import re
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import kafka_io
import orjson
import workload
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from checks import comparable, read_records
from workload import Response, WireCapture, partition_of

from toolwire.stream.messages import RequestMeta

#: Events per response of the soak (one of :data:`workload.MIXED_SIZES`) and how long a
#: response's events take to arrive.
EVENTS = 40
STREAM_SECONDS = 1.0
#: A probe of Kafka (offsets, lag, topic list) that takes longer gives no value.
PROBE_TIMEOUT = 15.0

# --------------------------------------------------------------------------- the input


@cache
def soak_captures() -> dict[str, tuple[WireCapture, ...]]:
    """The mixed workload's captures, without those that need ``end_without_done``."""
    out = {}
    for wire, captures in workload.mixed_captures().items():
        kept = tuple(c for c in captures if not c.options.end_without_done)
        if not kept:
            raise RuntimeError(f"no {wire} capture without end_without_done")
        out[wire] = kept
    return out


def response(i: int, prefix: str) -> Response:
    """Response ``i`` of the soak's input (the same every time it is asked for)."""
    per_wire = soak_captures()
    wire = workload.MIXED_WIRES[i % len(workload.MIXED_WIRES)]
    wc = per_wire[wire][(i // len(workload.MIXED_WIRES)) % len(per_wire[wire])]
    request, session = f"{prefix}r{i:07d}", f"{prefix}s{i:07d}"
    tools = (None if wc.options.declared_tools is None
             else tuple(sorted(wc.options.declared_tools)))
    meta = RequestMeta(request_id=request, session_id=session, declared_tools=tools, wire=wire)
    messages = workload.messages_of(request, session, workload.stretch(wc.events, EVENTS),
                                    tuple(meta.headers()))
    return Response(request, session, messages, f"{wire}/{wc.name}", wc.options)


class Pacer:
    """Publishes the soak's input at ``rate`` body events per second from a thread of its own
    (its own event loop and producer, ``acks=all``, idempotent, linger 5 ms as
    ``ChunkPublisher``): a new response every ``EVENTS / rate`` seconds, its events spread
    over ``STREAM_SECONDS``, the end marker with the last one.

    :meth:`pause` holds every send, waits for what is in flight and stops the producer (before
    the broker is stopped); :meth:`resume` starts a new producer and goes on, the schedule
    shifted by the pause (no burst). A response counts as published once every one of its
    messages was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float,
                 prefix: str) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.rate, self.prefix = rate, prefix
        self.published: list[int] = []
        self.failed: dict[int, str] = {}
        self.started = 0
        self.messages = 0
        self.events = 0
        self.behind = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="soak-pacer",
                                        daemon=True)
        self._producer: AIOKafkaProducer | None = None
        self._go: asyncio.Event | None = None
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: set[asyncio.Future[Any]] = set()
        self._sending = 0
        self._paused_total = 0.0
        self._paused_at: float | None = None
        self._main: concurrent.futures.Future[None] | None = None

    # ------------------------------------------------------------ called from the main thread

    def start(self) -> None:
        self._thread.start()
        self._call(self._open())
        self._main = asyncio.run_coroutine_threadsafe(self._run(), self._loop)

    def pause(self, timeout: float = 120.0) -> None:
        self._call(self._pause(), timeout)

    def resume(self, timeout: float = 60.0) -> None:
        self._call(self._resume(), timeout)

    def stop(self, timeout: float = 120.0) -> None:
        """No new response; the open ones finish; every acknowledgement awaited."""
        if not self._thread.is_alive():
            return
        try:
            self._call(self._stop(), timeout)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def error(self) -> BaseException | None:
        """The pacer's own failure, if its loop ended with one."""
        main = self._main
        if main is not None and main.done() and not main.cancelled():
            return main.exception()
        return None

    def _call(self, coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------ in the pacer's loop

    def _now(self) -> float:
        return time.monotonic() - self._paused_total

    async def _open(self) -> None:
        self._go = asyncio.Event()
        self._go.set()
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                          enable_idempotence=True, linger_ms=5)
        await self._producer.start()

    async def _run(self) -> None:
        every = EVENTS / self.rate
        base = self._now()
        i = 0
        while not self._stopping:
            assert self._go is not None
            await self._go.wait()
            delay = base + i * every - self._now()
            if delay > 0.001:
                await asyncio.sleep(min(delay, 0.5))
                continue  # stopping or paused meanwhile: looked at again
            self.behind = max(self.behind, -delay)
            task = asyncio.create_task(self._one(i, base + i * every))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            self.started = i = i + 1

    async def _one(self, i: int, start: float) -> None:
        r = response(i, self.prefix)
        gap = STREAM_SECONDS / (EVENTS - 1)
        futures: list[asyncio.Future[Any]] = []
        try:
            for j, m in enumerate(r.messages):
                delay = start + min(j, EVENTS - 1) * gap - self._now()
                if delay > 0.001:
                    await asyncio.sleep(delay)
                assert self._go is not None
                await self._go.wait()
                assert self._producer is not None
                self._sending += 1
                try:
                    future = await self._producer.send(
                        self.topic, m.value, key=m.key, headers=list(m.headers),
                        partition=partition_of(m.key, self.partitions))
                finally:
                    self._sending -= 1
                self._pending.add(future)
                future.add_done_callback(self._pending.discard)
                futures.append(future)
                self.messages += 1
                self.events += not m.end
            await asyncio.gather(*futures)
            self.published.append(i)
        except Exception as exc:
            self.failed[i] = f"{type(exc).__name__}: {exc}"

    async def _drained(self) -> None:
        while self._sending or self._pending:
            if self._pending:
                await asyncio.wait(list(self._pending), timeout=1.0)
            else:
                await asyncio.sleep(0.01)

    async def _pause(self) -> None:
        assert self._go is not None and self._producer is not None
        self._go.clear()
        self._paused_at = time.monotonic()
        await self._drained()
        await self._producer.stop()

    async def _resume(self) -> None:
        assert self._go is not None
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                          enable_idempotence=True, linger_ms=5)
        await self._producer.start()
        if self._paused_at is not None:
            self._paused_total += time.monotonic() - self._paused_at
            self._paused_at = None
        self._go.set()

    async def _stop(self) -> None:
        self._stopping = True
        if self._go is not None and not self._go.is_set():
            await self._resume()
        if self._main is not None:
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(self._main)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=60)
        await self._drained()
        if self._producer is not None:
            await self._producer.stop()


# --------------------------------------------------------------------------- the worker


def rss_bytes(pid: int) -> int | None:
    """VmRSS of ``/proc/PID/status``, in bytes."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``/proc/PID/stat``, in seconds."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text.rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS  # fields 14 and 15 of stat(5)
    return None


def fd_count(pid: int) -> int | None:
    """Entries of ``/proc/PID/fd``: the worker's open file descriptors."""
    with contextlib.suppress(OSError):
        return len(os.listdir(f"/proc/{pid}/fd"))
    return None


def scrape(port: int, timeout: float = 5.0) -> dict[str, float]:
    """The worker's ``/metrics`` as {``name`` or ``name{labels}``: value}; ``{}`` if it does
    not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=timeout) as reply:
            text = reply.read().decode()
    except (OSError, ValueError):
        return {}
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        with contextlib.suppress(ValueError):
            out[name] = float(value)
    return out


# --------------------------------------------------------------------------- Kafka


def probe(coro: Any) -> Any:
    """Run one Kafka probe with :data:`PROBE_TIMEOUT`; ``None`` if it failed or timed out."""
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, PROBE_TIMEOUT)
    try:
        return asyncio.run(bounded())
    except Exception:
        return None


async def offsets(bootstrap: str, group: str, topic: str
                  ) -> tuple[dict[int, int], dict[int, int]]:
    """(end offset, committed offset) of each partition of ``topic`` for ``group`` (0 where
    nothing is committed)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                request_timeout_ms=10_000)
    await admin.start()
    try:
        await consumer.start()
        try:
            tps = await kafka_io._partitions(consumer, [topic])
            ends = await consumer.end_offsets(tps)
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
        finally:
            await consumer.stop()
    finally:
        await admin.close()
    done = {}
    for tp in tps:
        meta = committed.get(tp)
        done[tp.partition] = meta.offset if meta is not None and meta.offset >= 0 else 0
    return {tp.partition: ends[tp] for tp in tps}, done


async def changelogs(bootstrap: str, app: str) -> tuple[list[str], int]:
    """The app's changelog topics and their records (end - beginning offsets, summed:
    everything written and not deleted; compaction does not move the beginning)."""
    names = await kafka_io.list_topics(bootstrap, re.escape(app) + r"-.+-changelog")
    return names, (await kafka_io.counts(bootstrap, names) if names else 0)


def bytes_on_disk(data_dir: Path | None, topics: Sequence[str]) -> int | None:
    """Bytes of the log segments (``*.log``; the preallocated index files left out) of the
    partitions of ``topics`` in a local broker's data dir (``None`` for a cluster not ours)."""
    if data_dir is None:
        return None
    total = 0
    for topic in topics:
        for part in data_dir.glob(f"{topic}-*"):
            if part.is_dir() and part.name.rpartition("-")[2].isdigit():
                total += sum(f.stat().st_size for f in part.glob("*.log"))
    return total


# --------------------------------------------------------------------------- the check


@dataclass
class Verdict:
    expected: int = 0
    equal: int = 0
    lost: list[str] = field(default_factory=list)
    wrong: dict[str, str] = field(default_factory=dict)
    #: Requests with more than one record, each equal to assemble (at least once allows it:
    #: a worker killed between a record's acknowledgement and its done marker).
    duplicated: dict[str, int] = field(default_factory=dict)
    per_wire: dict[str, list[int]] = field(default_factory=dict)

    def notes(self) -> dict[str, Any]:
        return {"expected": self.expected, "equal": self.equal, "lost": len(self.lost),
                "wrong": len(self.wrong), "duplicated": len(self.duplicated),
                "duplicate_records": sum(n - 1 for n in self.duplicated.values()),
                "per_wire_equal_of": {w: f"{eq} of {n}" for w, (eq, n) in
                                      sorted(self.per_wire.items())},
                "lost_first": self.lost[:10], "wrong_first": dict(list(self.wrong.items())[:10]),
                "duplicated_first": dict(list(self.duplicated.items())[:10])}


def check(bootstrap: str, outputs: Sequence[str], published: Sequence[int], prefix: str
          ) -> Verdict:
    """Every published response's records on ``outputs`` (assembled, dead-letter), each
    compared with ``assemble(body, options)`` of its response (the harness's mixed check,
    :mod:`checks`): none is lost, none differs; duplicates are counted (each compared too)."""
    by_request = {f"{prefix}r{i:07d}": i for i in published}
    found = asyncio.run(read_records(bootstrap, outputs, set(by_request), timeout=600.0))
    verdict = Verdict(expected=len(by_request))
    records: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for topic, request, record in found:
        records.setdefault(request, []).append((topic, record))
    counts = Counter({r: len(v) for r, v in records.items()})
    verdict.duplicated = {r: n for r, n in counts.items() if n > 1}
    verdict.lost = sorted(set(by_request) - set(records))
    for request, i in by_request.items():
        r = response(i, prefix)
        tally = verdict.per_wire.setdefault(r.wire, [0, 0])
        tally[1] += 1
        if request not in records:
            continue
        want = r.expected()
        want_topic = outputs[0] if want["outcome"] == "assembled" else outputs[1]
        exp = comparable(orjson.loads(orjson.dumps(want)))
        why = None
        for topic, record in records[request]:
            if topic != want_topic:
                why = f"{r.capture}: on {topic}, expected {want_topic}"
                break
            got = comparable(record)
            if got != exp:
                keys = sorted(k for k in got.keys() | exp.keys() if got.get(k) != exp.get(k))
                why = f"{r.capture}: {', '.join(keys[:6])}"
                break
        if why is None:
            verdict.equal += 1
            tally[0] += 1
        else:
            verdict.wrong[request] = why
    return verdict
