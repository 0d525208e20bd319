#!/usr/bin/env python3
"""What the tap costs a client (issue 21), measured in one run against the same client without it.

    .venv/bin/python ops/bench/tap.py [--short] [--levels 1,100,1000] [--no-proxy] [--json]

Figures, each at 1, 100 and 1,000 concurrent streams: the latency each chunk gains as the
client sees it (goal: <= 50 us at p99 for the tee transport, <= 1 ms for the tee proxy), the
CPU each chunk costs, and the memory each open stream holds; and, at overflow and with the
broker down, the client's own latency (goal: never slowed).

What runs, all on 127.0.0.1:

- **The server**: this script with ``--serve``, a process of its own (so that this process's
  CPU is the client's alone), on uvloop. It answers each ``POST`` with a 200
  ``text/event-stream`` body, chunked, one Chat Completions event per HTTP chunk (the stream of
  ``ops/bench/wire_chat.py``: text deltas, four parallel tool calls in fragments, finish,
  usage, ``[DONE]``), ``bench_gap_ms`` apart on average (each gap drawn from 0.5-1.5 times
  it: a provider's pace is not a clock). Each event is preceded by an SSE comment
  ``: t=<time.monotonic_ns()>`` taken just before the write (CLOCK_MONOTONIC is one clock for
  every process of a machine).
- **The client**: this process, one asyncio event loop (the default loop, as openai's async
  client runs). Clients ``httpx2.AsyncClient``, each on its own ``httpx2.AsyncHTTPTransport``
  (no pool limit, connections kept alive; ten streams per client, see :data:`PER_CLIENT`):
  *without* the tap, and *with* it, the same transport wrapped in
  ``toolwire.tap.Httpx2TeeTransport`` over a ``toolwire.publish.ChunkPublisher`` started in
  this loop (its Kafka producer's work is the client process's work, and is counted). A
  stream is a ``POST /v1/chat/completions`` (model, messages, two declared tools) read with
  ``aiter_raw()``; a chunk's latency is the time from the server's write to the moment the
  client holds the whole event (the tee hands a slice on only after it pushed it).
- **Kafka**: a private broker (``toolwire.broker.local``), stopped by its PID at the end,
  unless ``KAFKA_BOOTSTRAP_SERVERS`` is set; the run's topic has a unique prefix.

Method: for each number of streams K, the K streams of a round start 5 ms apart (starting one
costs the client about a millisecond here: K at once would measure a start-up burst); one
warm-up round per side opens the connections (kept alive); then R rounds of each side
alternately (without, with, with, without, ...), so that the machine's drift hits both alike;
the figures pool the rounds. A case whose warm-up loses more than a tenth of its streams is
not measured (the table says so).

- latency: p50 and p99 of every chunk of every round, without and with, and the difference;
  "noise" is the same difference between the two halves of the *without* rounds (an A/A
  comparison: a difference smaller than it is not a measurement);
- CPU per chunk: ``time.process_time_ns()`` of this process over each round (with the tap:
  until every pushed stream of the round is settled, its end marker acknowledged) / chunks;
- memory per open stream: one more round per side with ``tracemalloc`` on (started after the
  warm-up, so that it sees what the round allocates), read once every stream has read three
  events (all K are open then, mid-body; after ``gc.collect()``), / K; Python's heap only;
- the longest garbage collection of this process in each side's measured rounds is printed
  below the table (a tail of milliseconds is often one);
- overflow: a publisher with ``push_stream_bytes=64``, less than one event, so every stream
  overflows on its first slice (ended with ``error``, the rest of its slices ignored);
- broker down: a publisher started on a broker that is then stopped by its PID before the
  first measured round (the run's own broker, as the last case; with
  ``KAFKA_BOOTSTRAP_SERVERS`` set, a private second broker), ``connect_timeout=3`` so that a
  stream is given up 3 s after its end;
- proxy: ``python -m toolwire.cli tap serve --listen 127.0.0.1:P --upstream
  http://127.0.0.1:S`` as a subprocess (``KAFKA_BOOTSTRAP_SERVERS``, ``TOOLWIRE_TOPIC_CHUNKS``
  set), ready once it prints ``toolwire tap: listening on http://127.0.0.1:P``; the client
  without the tap through it, against the same client to the server directly. CPU: the
  client's plus the proxy process's (psutil) per chunk; memory: the proxy's RSS once every
  stream has read three events, minus before the round, / K. Without that command the table
  says ``proxy: not available (toolwire tap serve missing)``.

"met" is ``yes``, ``NO``, or ``noise`` when the run cannot tell: its A/A noise is above the
goal and the added p99 within goal + noise.

``--short`` is a quick check that everything works, not the figures; the full run takes about
seven minutes on two cores. The table goes
to stdout, progress to stderr; the publishers' and aiokafka's warnings (every overflowed or
dropped stream is logged) go to a log file in the run's temporary directory, kept with
``--keep``. ``--json`` ends the output with one ``BENCH {json}`` line (figures with their goals,
and notes). Exit 0 whatever the figures (reported, not judged here), 1 when a client read
failed, 2 on a set-up error, 130 interrupted (everything started is stopped first).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import gc
import itertools
import json
import logging
import math
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx2
import kafka_io
import orjson
import procs
import psutil  # type: ignore[import-untyped]
import wire_chat
from harness import broker, percentile, rounded
from procs import Proc

from toolwire.broker import local
from toolwire.publish import ChunkPublisher
from toolwire.tap import Httpx2TeeTransport

HERE: Final = Path(__file__).resolve().parent
GOAL_TRANSPORT_US: Final = 50.0
GOAL_PROXY_US: Final = 1000.0
#: The SSE comment that carries a chunk's send time, then 19 digits and a newline.
MARK: Final = b": t="
MARKED: Final = len(MARK) + 19
#: One event is more than this: every stream of the overflow case overflows on its first slice.
OVERFLOW_BYTES: Final = 64
#: A client's timeout (a stream that waits longer than this for a byte fails: bounds a run).
TIMEOUT: Final = 30.0
#: The broker-down publisher gives a stream up this long after its end.
DOWN_TIMEOUT: Final = 3.0
#: Each gap is the mean gap times 1 +- this (uniformly): a provider's pace is not a clock, and
#: a fixed period could keep every chunk clear of (or always on) the publisher's linger timer.
JITTER: Final = 0.5
READY: Final = "BENCH-READY"
PROXY_READY: Final = "toolwire tap: listening on http://127.0.0.1:"
PATH: Final = "/v1/chat/completions"
T0: Final = time.monotonic()


def say(message: str) -> None:
    print(f"[tap +{time.monotonic() - T0:6.1f}s] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Level:
    """K streams of ``events`` events, ``gap`` seconds apart; ``rounds`` rounds per client."""

    streams: int
    events: int
    gap: float
    rounds: int

    @property
    def rate(self) -> float:
        """Chunks per second over all streams."""
        return self.streams / self.gap


#: Aggregate rates of at most 2,000 chunks/s (1,333 at 1,000 streams): a 2-core machine runs
#: the server, the client, the broker (and the proxy) at once, and the client without the tap
#: must not be near saturation itself.
FULL: Final = {1: Level(1, 300, 0.01, 3), 100: Level(100, 60, 0.05, 3),
               1000: Level(1000, 20, 0.75, 2)}
SHORT: Final = {1: Level(1, 60, 0.01, 1), 100: Level(100, 20, 0.05, 1),
                1000: Level(1000, 20, 0.75, 1)}
#: Seconds between the starts of a round's streams: starting one costs the client about a
#: millisecond here, and 100 starts within one 50 ms gap would measure the start-up burst.
RAMP: Final = 0.005
#: A memory round is read once every stream has read this many events (all are open then).
OPENED_EVENTS: Final = 3
#: The overflow and broker-down cases run at this level.
FAULT_LEVEL: Final = 100
#: Streams per client (each its own pool): httpcore2's pool probes the socket of every idle
#: connection on every request and every close, so 1,000 streams in one pool saturate the
#: client without the tap (2.6 ms of CPU per chunk here), which would hide the tap's cost.
PER_CLIENT: Final = 10
#: Events of a warm-up round and of a memory round (wire_chat's shortest stream is 19).
WARM_EVENTS: Final = 20
MEMORY_EVENTS: Final = 20


# --------------------------------------------------------------------------- the server


def frames(events: int) -> list[bytes]:
    """One Chat Completions response of ``events`` events, one event each."""
    return [frame + b"\n\n" for frame in wire_chat.stream(events).split(b"\n\n") if frame]


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", ""):
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return body
            body += (await reader.readexactly(size + 2))[:-2]
    return await reader.readexactly(int(headers.get("content-length") or 0))


_HEAD: Final = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache"
                b"\r\ntransfer-encoding: chunked\r\n\r\n")


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                  bodies: dict[int, list[bytes]], seeds: Iterator[int]) -> None:
    loop = asyncio.get_running_loop()
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            request = orjson.loads(await _read_body(reader, headers) or b"{}")
            events = int(request.get("bench_events", 20))
            gap = float(request.get("bench_gap_ms", 10)) / 1000
            pieces = bodies.get(events) or bodies.setdefault(events, frames(events))
            writer.write(_HEAD)
            rng = random.Random(next(seeds))
            at = loop.time()
            for j, piece in enumerate(pieces):
                if j:
                    at += gap * rng.uniform(1 - JITTER, 1 + JITTER)
                delay = at - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                payload = b"%s%019d\n%s" % (MARK, time.monotonic_ns(), piece)
                writer.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except ConnectionError:
        return
    finally:
        writer.close()


async def serve() -> None:
    """The streaming server (``--serve``): prints its URL after the ready word, runs until
    SIGTERM."""
    bodies: dict[int, list[bytes]] = {}
    seeds = itertools.count()
    server = await asyncio.start_server(lambda r, w: _answer(r, w, bodies, seeds), "127.0.0.1",
                                        0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"{READY} http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def run_server() -> int:
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve())
    else:
        uvloop.run(serve())
    return 0


# --------------------------------------------------------------------------- the client


REQUEST: Final = {
    "model": "gpt-4.1", "stream": True, "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "Write the rows, then look them up."}],
    "tools": [{"type": "function", "function": {
        "name": name, "parameters": {"type": "object", "properties": {}}}}
        for name in ("write_rows", "lookup")]}


@dataclass
class Tally:
    """What one client read in the rounds of one case."""

    #: Every chunk's latency (ns), round by round.
    rounds: list[list[int]] = field(default_factory=list)
    chunks: int = 0
    cpu_ns: int = 0
    #: CPU of another process (the proxy) over the same rounds.
    other_cpu_ns: int = 0
    failures: list[str] = field(default_factory=list)
    #: Bytes per open stream, one reading per memory round.
    memory: list[float] = field(default_factory=list)
    #: This process's longest garbage collection in the measured rounds (ns).
    gc_pause: int = 0

    @property
    def latencies(self) -> list[int]:
        return [x for r in self.rounds for x in r]

    def cpu_us(self) -> float:
        return (self.cpu_ns + self.other_cpu_ns) / 1000 / self.chunks if self.chunks else 0.0


@dataclass
class Round:
    """One round's readings."""

    latencies: list[int] = field(default_factory=list)
    chunks: int = 0
    failures: list[str] = field(default_factory=list)
    memory: float | None = None


async def read_stream(client: httpx2.AsyncClient, url: str, body: bytes, delay: float,
                      reading: Round, opened: Callable[[], None], events: int) -> None:
    """One stream: every event's latency into ``reading``; ``opened`` once it has read
    :data:`OPENED_EVENTS` events."""
    await asyncio.sleep(delay)
    sink = reading.latencies
    seen = 0
    tail = b""
    try:
        async with client.stream("POST", url, content=body,
                                 headers={"content-type": "application/json"}) as response:
            if response.status_code != 200:
                raise RuntimeError(f"status {response.status_code}")
            async for piece in response.aiter_raw():
                now = time.monotonic_ns()
                data = tail + piece if tail else piece
                at = data.find(MARK)
                end = 0
                while at >= 0 and at + MARKED <= len(data):
                    sink.append(now - int(data[at + len(MARK):at + MARKED]))
                    seen += 1
                    if seen == OPENED_EVENTS:
                        opened()
                    end = at + MARKED
                    at = data.find(MARK, end)
                tail = data[max(end, len(data) - MARKED + 1):]
        if seen != events:
            raise RuntimeError(f"{seen} events of {events}")
    except Exception as exc:
        reading.failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        reading.chunks += seen


async def one_round(side: Contender, level: Level, events: int, gap: float,
                    *, memory: Callable[[], float] | None = None) -> Round:
    """K streams started :data:`RAMP` apart; ``memory`` is read (once) when every stream has
    read :data:`OPENED_EVENTS` events: all K are open then, mid-body."""
    reading = Round()
    body = orjson.dumps({**REQUEST, "bench_events": events, "bench_gap_ms": gap * 1000})
    count = 0

    def opened() -> None:
        nonlocal count
        count += 1
        if count == level.streams and memory is not None:
            reading.memory = memory()

    await asyncio.gather(*(read_stream(side.client(i), side.url, body, i * RAMP,
                                       reading, opened, events) for i in range(level.streams)))
    return reading


async def settled(publisher: ChunkPublisher, timeout: float) -> None:
    """Until every pushed stream of the publisher has its outcome."""
    stats = publisher.push_stats
    deadline = time.monotonic() + timeout
    while (stats["completed"] + stats["ended_with_error"] + stats["dropped"] < stats["opened"]
           and time.monotonic() < deadline):
        await asyncio.sleep(0.005)


@dataclass
class Contender:
    """One side of a comparison: its clients, where they send, and what closes a round.

    Stream i of a round goes through client ``i // PER_CLIENT`` (made on first use, kept
    for the run, its connections kept alive).
    """

    label: str
    make: Callable[[], httpx2.AsyncClient]
    url: str
    publisher: ChunkPublisher | None = None
    settle: float = 30.0
    #: Another process whose CPU and RSS are this side's too (the proxy).
    process: Any = None
    clients: list[httpx2.AsyncClient] = field(default_factory=list)

    def client(self, stream: int) -> httpx2.AsyncClient:
        while len(self.clients) <= stream // PER_CLIENT:
            self.clients.append(self.make())
        return self.clients[stream // PER_CLIENT]

    async def finish(self) -> None:
        if self.publisher is not None:
            await settled(self.publisher, self.settle)
        elif self.process is not None:
            await asyncio.sleep(0.5)  # the proxy's own sends: their acknowledgements

    def other_cpu(self) -> int:
        if self.process is None:
            return 0
        times = self.process.cpu_times()
        return int((times.user + times.system) * 1e9)

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


@contextlib.contextmanager
def gc_pauses() -> Iterator[list[int]]:
    """The longest garbage collection while the block runs (ns), in a one-item list."""
    longest = [0]
    began = [0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter_ns()
        else:
            longest[0] = max(longest[0], time.perf_counter_ns() - began[0])

    gc.callbacks.append(callback)
    try:
        yield longest
    finally:
        gc.callbacks.remove(callback)


async def measured(side: Contender, level: Level, tally: Tally) -> None:
    """One measured round of one side."""
    other = side.other_cpu()
    with gc_pauses() as longest:
        cpu = time.process_time_ns()
        reading = await one_round(side, level, level.events, level.gap)
        await side.finish()
        tally.cpu_ns += time.process_time_ns() - cpu
    tally.gc_pause = max(tally.gc_pause, longest[0])
    tally.other_cpu_ns += side.other_cpu() - other
    tally.rounds.append(reading.latencies)
    tally.chunks += reading.chunks
    tally.failures += reading.failures


async def memory_round(side: Contender, level: Level, tally: Tally) -> None:
    """A round read for memory alone: this process's traced heap (or the other process's
    RSS) once every stream is open and mid-body, less before, per stream."""
    if side.process is not None:
        before = float(side.process.memory_info().rss)

        def now() -> float:
            return (float(side.process.memory_info().rss) - before) / level.streams
    else:
        gc.collect()
        tracemalloc.start()

        def now() -> float:
            gc.collect()
            return tracemalloc.get_traced_memory()[0] / level.streams
    try:
        reading = await one_round(side, level, MEMORY_EVENTS, level.gap, memory=now)
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
    await side.finish()
    tally.failures += reading.failures
    if reading.memory is not None:
        tally.memory.append(reading.memory)


@dataclass
class Case:
    """One comparison: a side without the tap, one with it, at one level."""

    name: str
    level: Level
    goal_us: float
    without: Tally = field(default_factory=Tally)
    with_: Tally = field(default_factory=Tally)
    push: dict[str, int] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


def failing(case: Case, rounds: str) -> bool:
    """Whether more than a tenth of the streams so far failed: then the case stops here,
    not measured (a run stays bounded when a side cannot keep up)."""
    failed = len(case.without.failures) + len(case.with_.failures)
    if failed <= case.level.streams // 10:
        return False
    case.with_.rounds.clear()
    case.notes["not measured"] = f"{failed} streams failed by the end of the {rounds} rounds"
    say(f"{case.name}: {case.notes['not measured']}; not measured")
    return True


async def compare(name: str, level: Level, without: Contender, with_: Contender, goal_us: float,
                  *, between: Callable[[], Awaitable[None]] | None = None,
                  memory: bool = True) -> Case:
    """Warm-up, memory rounds, then the measured rounds alternately; ``between`` runs after
    the warm-up (the broker-down case stops the broker there)."""
    case = Case(name, level, goal_us)
    publisher = with_.publisher
    stats_before = Counter(publisher.push_stats) if publisher is not None else Counter()
    say(f"{name}: {level.streams} streams x {level.events} events, {level.gap * 1000:g} ms "
        f"apart ({level.rate:,.0f} chunks/s), {level.rounds} rounds each")
    warm = Level(level.streams, WARM_EVENTS, level.gap / 4, 1)
    for side in (without, with_):
        reading = await one_round(side, warm, WARM_EVENTS, warm.gap)
        await side.finish()
        (case.without if side is without else case.with_).failures += reading.failures
    if failing(case, "warm-up"):
        return case
    if between is not None:
        await between()
    if memory:
        for side, tally in ((without, case.without), (with_, case.with_)):
            await memory_round(side, level, tally)
        if failing(case, "memory"):
            return case
    for n in range(level.rounds):
        order = ((without, case.without), (with_, case.with_))
        for side, tally in order if n % 2 == 0 else order[::-1]:
            await measured(side, level, tally)
        if failing(case, "measured"):
            return case
    if publisher is not None:
        after = Counter(publisher.push_stats)
        after.subtract(stats_before)
        case.push = {k: v for k, v in after.items() if v}
    return case


#: One TLS context for every client (httpx2 builds one per transport otherwise, 37 ms each
#: here; the streams are plain HTTP on 127.0.0.1 and never use it).
_TLS: list[ssl.SSLContext] = []


def plain() -> httpx2.AsyncClient:
    """A client without the tap: its own pool (no limit; kept alive between rounds)."""
    return _client(None)


def tapped(publisher: ChunkPublisher) -> Callable[[], httpx2.AsyncClient]:
    """Clients with the tap: the same, its transport wrapped in the tee."""
    return lambda: _client(publisher)


def _client(publisher: ChunkPublisher | None) -> httpx2.AsyncClient:
    if not _TLS:
        _TLS.append(ssl.create_default_context())
    inner = httpx2.AsyncHTTPTransport(verify=_TLS[0], trust_env=False, limits=httpx2.Limits(
        max_connections=None, max_keepalive_connections=None, keepalive_expiry=3600.0))
    outer: httpx2.AsyncBaseTransport = (
        inner if publisher is None else Httpx2TeeTransport(inner, publisher))
    return httpx2.AsyncClient(transport=outer, timeout=httpx2.Timeout(TIMEOUT), trust_env=False)


# --------------------------------------------------------------------------- cases


@dataclass
class Run:
    """What the measuring part needs."""

    args: argparse.Namespace
    plan: dict[int, Level]
    bootstrap: str
    topic: str
    server: str
    workdir: Path
    #: The state dir of the broker the broker-down case may stop (None: start one).
    own_broker: Path | None
    cases: list[Case] = field(default_factory=list)
    proxy_note: str | None = None


async def transport_cases(run: Run, without: Contender) -> None:
    async with ChunkPublisher(run.bootstrap, run.topic,
                              coalesce_ms=run.args.coalesce_ms) as healthy, \
            ChunkPublisher(run.bootstrap, run.topic,
                           push_stream_bytes=OVERFLOW_BYTES) as tiny:
        tee = Contender("with", tapped(healthy), without.url, healthy)
        overflowing = Contender("with", tapped(tiny), without.url, tiny)
        try:
            for k in run.args.levels:
                run.cases.append(await compare(f"transport {k}", run.plan[k], without, tee,
                                               GOAL_TRANSPORT_US))
            run.cases.append(await compare(
                f"transport {FAULT_LEVEL}, overflow", run.plan[FAULT_LEVEL], without,
                overflowing, GOAL_TRANSPORT_US, memory=False))
        finally:
            await tee.aclose()
            await overflowing.aclose()


async def down_case(run: Run, without: Contender) -> None:
    state = run.own_broker
    if state is None:
        state = run.workdir / "down-broker"
        say("broker down: starting a private broker to stop")
        info = await asyncio.to_thread(local.start, state, "512m")
        bootstrap = info.bootstrap
        await kafka_io.create_topics(bootstrap, [run.topic], 6)
    else:
        bootstrap = run.bootstrap
    publisher = ChunkPublisher(bootstrap, run.topic, connect_timeout=DOWN_TIMEOUT)
    await publisher.start()
    down = Contender("with", tapped(publisher), without.url, publisher,
                     settle=DOWN_TIMEOUT + 5)
    stopped = state

    async def stop_broker() -> None:
        say(f"broker down: stopping the broker of {stopped} by its PID")
        await asyncio.to_thread(local.stop, stopped)

    try:
        case = await compare(f"transport {FAULT_LEVEL}, broker down", run.plan[FAULT_LEVEL],
                             without, down, GOAL_TRANSPORT_US, between=stop_broker,
                             memory=False)
        case.notes["broker"] = "stopped after the warm-up rounds, before the measured ones"
        run.cases.append(case)
    finally:
        await down.aclose()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(publisher.stop(), 10)


def proxy_command() -> list[str]:
    return [procs.python(), "-m", "toolwire.cli", "tap", "serve"]


def proxy_available() -> bool:
    try:
        done = subprocess.run([*proxy_command(), "--help"], capture_output=True, timeout=120,
                              check=False, cwd=procs.ROOT, env=procs.clean_env())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def proxy_cases(run: Run, direct: Contender) -> None:
    if not await asyncio.to_thread(proxy_available):
        run.proxy_note = "proxy: not available (toolwire tap serve missing)"
        say(run.proxy_note)
        return
    port = free_port()
    env = {**procs.clean_env(), "KAFKA_BOOTSTRAP_SERVERS": run.bootstrap,
           "TOOLWIRE_TOPIC_CHUNKS": run.topic}
    proxy = Proc("tee proxy", [*proxy_command(), "--listen", f"127.0.0.1:{port}",
                               "--upstream", run.server],
                 env, run.workdir / "proxy.log", PROXY_READY)
    through = Contender("proxy", plain, f"http://127.0.0.1:{port}{PATH}", process=proxy.ps)
    try:
        await asyncio.to_thread(proxy.wait_ready, 120.0)
        say(f"proxy: pid {proxy.pid} on 127.0.0.1:{port}")
        records = await kafka_io.counts(run.bootstrap, [run.topic])
        for k in run.args.levels:
            case = await compare(f"proxy {k}", run.plan[k], direct, through, GOAL_PROXY_US)
            proxy.check()
            run.cases.append(case)
        published = await kafka_io.counts(run.bootstrap, [run.topic]) - records
        run.cases[-1].notes["records the proxy published (all its cases)"] = published
    finally:
        await through.aclose()
        proxy.stop()


async def measure(run: Run) -> None:
    without = Contender("without", plain, run.server + PATH)
    try:
        await transport_cases(run, without)
        if not run.args.no_proxy:
            await proxy_cases(run, without)
        await down_case(run, without)
    finally:
        await without.aclose()


# --------------------------------------------------------------------------- the table


def us(ns: float) -> float:
    return ns / 1000


def cell(without: float, with_: float, digits: int = 0) -> str:
    return (f"{without:,.{digits}f} -> {with_:,.{digits}f} "
            f"({with_ - without:+,.{digits}f})")


def noise(tally: Tally, p: float) -> float:
    """The p-th percentile's difference between the two halves of one side's rounds (A/A)."""
    if len(tally.rounds) < 2:
        return float("nan")
    odd = [x for r in tally.rounds[1::2] for x in r]
    even = [x for r in tally.rounds[0::2] for x in r]
    return abs(us(percentile(odd, p) - percentile(even, p)))


@dataclass
class Row:
    case: Case
    p50: tuple[float, float]
    p99: tuple[float, float]
    cpu: tuple[float, float]
    memory: tuple[float, float] | None

    @property
    def added_p99(self) -> float:
        return self.p99[1] - self.p99[0]

    @property
    def met(self) -> bool | None:
        """Whether the goal was met; ``None`` when the run cannot tell (its own A/A noise is
        above the goal and the added p99 is within goal + noise)."""
        c = self.case
        if c.without.failures or c.with_.failures or not c.with_.rounds:
            return False
        spread = noise(c.without, 99)
        if self.added_p99 > c.goal_us + (0.0 if math.isnan(spread) else spread):
            return False
        return None if spread > c.goal_us else self.added_p99 <= c.goal_us


def row(case: Case) -> Row:
    a, b = case.without.latencies, case.with_.latencies
    memory = None
    if case.without.memory and case.with_.memory:
        memory = (statistics.median(case.without.memory) / 1024,
                  statistics.median(case.with_.memory) / 1024)
    if case.name.startswith("proxy") and case.with_.memory:
        memory = (0.0, statistics.median(case.with_.memory) / 1024)
    return Row(case, (us(percentile(a, 50)), us(percentile(b, 50))),
               (us(percentile(a, 99)), us(percentile(b, 99))),
               (case.without.cpu_us(), case.with_.cpu_us()), memory)


def table(rows: Sequence[Row], header: dict[str, str], proxy_note: str | None) -> str:
    head = ("case", "streams", "chunks/s", "chunks", "p50 us without -> with (added)",
            "p99 us without -> with (added)", "A/A p99", "goal", "met",
            "CPU us/chunk without -> with (added)", "memory KiB/stream without -> with (added)")
    lines = [f"{k}: {v}" for k, v in header.items()]
    cells = [head]
    for r in rows:
        c = r.case
        if not c.with_.rounds:
            cells.append((c.name, f"{c.level.streams:,}", f"{c.level.rate:,.0f}", "-",
                          "not measured", "-", "-", f"added p99 <= {c.goal_us:,.0f}", "NO",
                          "-", "-"))
            continue
        memory = "-" if r.memory is None else (
            f"proxy RSS +{r.memory[1]:,.1f}" if c.name.startswith("proxy")
            else cell(*r.memory, digits=1))
        cells.append((c.name, f"{c.level.streams:,}", f"{c.level.rate:,.0f}",
                      f"{c.without.chunks:,} / {c.with_.chunks:,}", cell(*r.p50),
                      cell(*r.p99), f"{noise(c.without, 99):,.0f}",
                      f"added p99 <= {c.goal_us:,.0f}",
                      {True: "yes", False: "NO", None: "noise"}[r.met],
                      cell(*r.cpu, digits=1), memory))
    widths = [max(len(line[i]) for line in cells) for i in range(len(head))]
    lines.append("")
    for i, line in enumerate(cells):
        lines.append("  ".join(text.ljust(w) for text, w in zip(line, widths, strict=True))
                     .rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    if proxy_note:
        lines += ["", proxy_note]
    lines.append("")
    for r in rows:
        c = r.case
        extra: dict[str, Any] = {"push_stats": c.push} if c.push else {}
        failures = c.without.failures + c.with_.failures
        if failures:
            extra["failed reads"] = f"{len(failures)}, first: {failures[0]}"
        if c.with_.rounds:
            extra["longest GC pause ms, without / with"] = (
                f"{c.without.gc_pause / 1e6:.1f} / {c.with_.gc_pause / 1e6:.1f}")
        extra.update(c.notes)
        if extra:
            lines.append(f"{c.name}: " + "; ".join(f"{k} {v}" for k, v in extra.items()))
    return "\n".join(lines)


def bench_json(rows: Sequence[Row], header: dict[str, str]) -> dict[str, Any]:
    figures: list[dict[str, Any]] = []
    notes: dict[str, Any] = {**header}
    for r in rows:
        c = r.case
        figures.append({"name": f"{c.name}: added p99 latency per chunk",
                        "value": rounded(r.added_p99), "unit": "us",
                        "goal": f"<= {c.goal_us:g}", "met": r.met})
        figures.append({"name": f"{c.name}: added CPU per chunk",
                        "value": rounded(r.cpu[1] - r.cpu[0]), "unit": "us"})
        if r.memory is not None:
            figures.append({"name": f"{c.name}: added memory per open stream",
                            "value": rounded(r.memory[1] - r.memory[0]), "unit": "KiB"})
        notes[c.name] = {"level": dataclasses.asdict(c.level), "p50_us": r.p50,
                         "p99_us": r.p99, "cpu_us": r.cpu, "memory_kib": r.memory,
                         "push_stats": c.push, "failures": c.without.failures[:3]
                         + c.with_.failures[:3], **c.notes}
    return {"figures": figures, "notes": notes}


# --------------------------------------------------------------------------- main


def raise_fd_limit(want: int) -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        target = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return str(soft)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ops/bench/tap.py", description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join((__doc__ or "").split("\n\n")[2:]))
    parser.add_argument("--short", action="store_true",
                        help="a quick check that everything works, not the figures")
    parser.add_argument("--levels", default="1,100,1000", metavar="K,...",
                        help="concurrent streams to measure at, of 1, 100 and 1000 "
                             "(default: all three)")
    parser.add_argument("--no-proxy", action="store_true", help="leave out the proxy rows")
    parser.add_argument("--coalesce-ms", type=float, default=0.0, metavar="MS",
                        help="the tee transport's publisher joins each stream's slices within "
                             "MS milliseconds into one message (ChunkPublisher(coalesce_ms=)); "
                             "0, the default, sends one message per slice")
    parser.add_argument("--json", action="store_true",
                        help="end with one BENCH {json} line (figures, goals, notes)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (logs, broker data)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.levels = sorted({int(k) for k in args.levels.split(",") if k.strip()})
    except ValueError:
        parser.error(f"--levels {args.levels!r}: expected numbers, comma-separated")
    if not args.levels or set(args.levels) - set(FULL):
        parser.error(f"--levels: each of {', '.join(map(str, FULL))}")
    return args


def start_server(workdir: Path) -> str:
    proc = Proc("sse server", [procs.python(), str(Path(__file__).resolve()), "--serve"],
                procs.clean_env(), workdir / "server.log", READY)
    proc.wait_ready(60.0)
    found = re.search(rf"{READY} (http://127\.0\.0\.1:\d+)", proc.log.read_text())
    if found is None:
        raise procs.ProcError(f"the server's log has no URL:\n{proc.tail()}")
    say(f"server: pid {proc.pid} at {found.group(1)}")
    return found.group(1)


@contextlib.contextmanager
def quiet_logs(path: Path) -> Iterator[None]:
    """The publishers' and aiokafka's warnings to a file, not the progress on stderr."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        return run_server()
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    plan = SHORT if args.short else FULL
    limit = raise_fd_limit(8192)
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-tap-bench-"))
    started = datetime.datetime.now(datetime.UTC)
    load = os.getloadavg()
    prefix = f"bench{uuid.uuid4().hex[:6]}-"
    failed = False
    began = time.monotonic()
    try:
        with broker(workdir) as (bootstrap, source), quiet_logs(workdir / "client.log"):
            topic = f"{prefix}tap.chunks"
            asyncio.run(kafka_io.create_topics(bootstrap, [topic], 6))
            own = None if source == "KAFKA_BOOTSTRAP_SERVERS" else workdir / "broker"
            run = Run(args, plan, bootstrap, topic, start_server(workdir), workdir, own)
            try:
                asyncio.run(measure(run))
            finally:
                for name in procs.stop_all():
                    say(f"stopped {name}")
                if own is None:
                    with contextlib.suppress(Exception):
                        asyncio.run(kafka_io.delete_topics(bootstrap, re.escape(prefix) + ".*"))
    except KeyboardInterrupt:
        say("interrupted: everything started was stopped")
        return 130
    except (local.BrokerError, procs.ProcError) as exc:
        say(f"set-up failed: {exc}")
        failed = True
        return 2
    except BaseException:
        failed = True
        raise
    finally:
        for name in procs.stop_all():
            say(f"stopped {name}")
        with contextlib.suppress(Exception):
            local.stop(workdir / "down-broker")
        if args.keep or failed:
            say(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    header = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "short (a quick check, not the figures)" if args.short else "full",
        "cores": f"{os.cpu_count()} logical, {psutil.cpu_count(logical=False)} physical",
        "load average at start": " ".join(f"{x:.2f}" for x in load),
        "python": f"{platform.python_version()}, client on the default asyncio loop",
        "httpx2": httpx2.__version__,
        "kafka": source,
        "open files limit": limit,
        "seconds": f"{time.monotonic() - began:.0f}",
    }
    rows = [row(c) for c in run.cases]
    print(table(rows, header, run.proxy_note), flush=True)
    if args.json:
        print("BENCH " + json.dumps(bench_json(rows, header), default=str))
    return 1 if any(c.without.failures or c.with_.failures for c in run.cases) else 0


if __name__ == "__main__":
    sys.exit(main())
