"""A real worker process on the real broker, and raw Kafka I/O around it, for broker tests."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from toolwire.core import Options
from toolwire.stream.messages import H_CHUNK_SEQ, H_DECLARED_TOOLS, H_END, H_REQUEST_ID

READY_LINE = "[^Worker]: Ready"



#: The ``provider`` header for which every test worker synthesizes missing call ids
#: (``TOOLWIRE_SYNTHESIZE_IDS``): corpus captures that expect synthesis are sent with it.
SYNTHESIZING_PROVIDER: Final = "synthesizing-provider"
#: The ``provider`` header whose bodies every test worker takes as complete without
#: ``data: [DONE]`` once every choice finished (``TOOLWIRE_END_WITHOUT_DONE``).
ENDING_PROVIDER: Final = "ending-provider"
#: A provider named in both settings.
SYNTHESIZING_ENDING_PROVIDER: Final = "synthesizing-ending-provider"


def provider_for(options: Options) -> str | None:
    """The ``provider`` header under which a test worker reads a capture as ``assemble``
    does under ``options`` (id synthesis and the end without ``[DONE]`` are per provider)."""
    if options.synthesize_ids and options.end_without_done:
        return SYNTHESIZING_ENDING_PROVIDER
    if options.synthesize_ids:
        return SYNTHESIZING_PROVIDER
    if options.end_without_done:
        return ENDING_PROVIDER
    return None


@dataclass
class Deployment:
    """One isolated deployment: its own app id and topic names on the shared broker."""

    bootstrap: str
    state_dir: Path
    partitions: int = 3
    ttl: float = 600.0
    sweep_interval: float = 30.0
    name: str = field(default_factory=lambda: "t" + uuid.uuid4().hex[:8])

    @property
    def chunks(self) -> str:
        return f"{self.name}.chunks"

    @property
    def assembled(self) -> str:
        return f"{self.name}.assembled"

    @property
    def deadletter(self) -> str:
        return f"{self.name}.deadletter"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
        env.update({
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "TOOLWIRE_APP_ID": self.name,
            "TOOLWIRE_TOPIC_CHUNKS": self.chunks,
            "TOOLWIRE_TOPIC_ASSEMBLED": self.assembled,
            "TOOLWIRE_TOPIC_DEADLETTER": self.deadletter,
            "TOOLWIRE_PARTITIONS": str(self.partitions),
            "TOOLWIRE_STREAM_TTL": str(self.ttl),
            "TOOLWIRE_SWEEP_INTERVAL": str(self.sweep_interval),
            "TOOLWIRE_STATE_DIR": str(self.state_dir),
            # A SIGKILLed worker's partitions come back after this long (Kafka's minimum).
            "TOOLWIRE_SESSION_TIMEOUT": "6",
            # Responses whose provider header names them get synthesized ids, or end without
            # [DONE] (see provider_for); no other does.
            "TOOLWIRE_SYNTHESIZE_IDS": f"{SYNTHESIZING_PROVIDER},{SYNTHESIZING_ENDING_PROVIDER}",
            "TOOLWIRE_END_WITHOUT_DONE": f"{ENDING_PROVIDER},{SYNTHESIZING_ENDING_PROVIDER}",
        })
        return env

    async def create_topics(self) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(t, self.partitions, 1) for t in
                                       (self.chunks, self.assembled, self.deadletter)])
        finally:
            await admin.close()


@contextmanager
def running(deployment: Deployment) -> Iterator[Worker]:
    """The deployment's topics made and one worker ready, stopped (by its PID) at the end."""
    asyncio.run(deployment.create_topics())
    worker = Worker(deployment)
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class WithMetrics(Deployment):
    """A deployment whose workers serve ``/metrics`` and read topic metrics every second."""

    metrics_port: int = field(default_factory=free_port)
    log_format: str = "text"

    def env(self) -> dict[str, str]:
        return {**super().env(), "TOOLWIRE_METRICS_PORT": str(self.metrics_port),
                "TOOLWIRE_TOPIC_METRICS_INTERVAL": "1", "TOOLWIRE_LOG_FORMAT": self.log_format}


class WorkerExited(AssertionError):
    """A worker process that exited by itself when the test did not expect it to: its exit
    status, its name and the tail of its log."""

    def __init__(self, worker: Worker, status: int, when: str) -> None:
        super().__init__(f"worker {worker.label} ({worker.name}) had exited by itself with "
                         f"status {status} {when}:\n{worker.tail()}")
        self.status = status


#: The log line a worker writes once started, naming itself as its records' provenance does
#: (``worker <hostname:pid> started: ...``, :mod:`toolwire.app.service`).
_STARTED = re.compile(r"\] worker (\S+) started: ")


class Worker:
    """``toolwire worker`` as a child process, stopped by its PID (never by name).

    A worker that exits by itself fails the test: :meth:`kill`, :meth:`stop` and
    :meth:`check` raise :class:`WorkerExited` (with its status and log tail) for a process
    that ended without the test or its supervisor ending it, unless told it may have
    (``expect_exited=True``, or :meth:`accept_exit` by a supervisor that restarts it)."""

    def __init__(self, deployment: Deployment, tag: str = "worker",
                 launcher: Sequence[str] = ("-m", "toolwire.cli"),
                 prefix: Sequence[str] = ()) -> None:
        """``launcher``: what runs ``worker`` (another module that wraps the command line, e.g.
        ``tests.app.faulty_worker PLAN``). ``prefix``: what the interpreter is run under, which
        must exec it so that the pid is the worker's (``ip netns exec NS``: a worker in a
        network namespace of :mod:`tests.net.netns`)."""
        self.deployment = deployment
        self.tag = tag
        self.log = deployment.state_dir / f"{tag}-{uuid.uuid4().hex[:6]}.log"
        deployment.state_dir.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log.open("wb")
        #: Wall time the process was started, and when it ended (as the test saw it: the
        #: kill or stop, or the moment its exit was noticed), for the tie of each output
        #: record to the process that published it (:class:`tests.reliability.Process`).
        self.started_at = time.time()
        self.ended_at: float | None = None
        #: How it ended: ``"killed"``, ``"stopped"``, ``"exited"`` (by itself, accepted:
        #: ``expect_exited`` or a supervisor), ``None`` while running or not yet noticed.
        self.ended: str | None = None
        #: Why an exit was accepted (:meth:`accept_exit`).
        self.exit_reason: str | None = None
        self._reported = False
        self._lock = threading.RLock()  # the test's thread and a supervisor's
        self.process = subprocess.Popen(
            [*prefix, sys.executable, *launcher, "worker", "--loglevel", "info"],
            env=deployment.env(), stdout=self._log_file, stderr=subprocess.STDOUT,
            start_new_session=True)
        self._name: str | None = None

    @property
    def name(self) -> str:
        """The worker's name in its records' provenance (``hostname:pid``): as its log says
        once it started, else what the product gives it (``Settings.worker_name``)."""
        if self._name is None:
            found = _STARTED.search(self.log.read_text(errors="replace"))
            if found is None:
                return f"{socket.gethostname()}:{self.process.pid}"
            self._name = found.group(1)
        return self._name

    @property
    def label(self) -> str:
        """The log file's name, which the test's notes use for the worker."""
        return self.log.name

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def exited_by_itself(self) -> int | None:
        """The exit status of a process that ended without the test (or a supervisor that
        accepted it) ending it; ``None`` while it runs or when its end was expected."""
        with self._lock:
            code = self.process.poll()
            if code is None or self.ended is not None:
                return None
            if self.ended_at is None:
                self.ended_at = time.time()
            return code

    def check(self, when: str = "at a checkpoint") -> None:
        """Raise :class:`WorkerExited` if the process exited by itself, unexpectedly."""
        code = self.exited_by_itself()
        if code is not None:
            self._reported = True
            raise WorkerExited(self, code, when)

    def accept_exit(self, why: str = "expected") -> int:
        """The process has exited and that was expected (e.g. status 75, restarted by its
        supervisor): it no longer fails the test. Returns its status."""
        with self._lock:
            code = self.process.wait(timeout=30)
            if self.ended is None:
                self.ended = "exited"
                if self.ended_at is None:
                    self.ended_at = time.time()
            self.exit_reason = why
            self._log_file.close()
            return code

    def _already_exited(self, expect_exited: bool, doing: str) -> bool:
        """Whether the process had ended before ``doing``; raise if it ended by itself and
        the caller did not say it might have."""
        code = self.exited_by_itself()
        if code is None:
            return self.ended is not None
        self.accept_exit("accepted by the caller" if expect_exited else "unexpected")
        if not expect_exited and not self._reported:
            self._reported = True
            raise WorkerExited(self, code, f"before the test's {doing}")
        return True

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY_LINE in self.log.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                raise AssertionError(f"worker exited {self.process.returncode}:\n{self.tail()}")
            time.sleep(0.25)
        raise AssertionError(f"worker not ready in {timeout} s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def kill(self, *, expect_exited: bool = False) -> None:
        """A crash: SIGKILL, no flush, no commit. Raises :class:`WorkerExited` if the process
        had already exited by itself, unless ``expect_exited``; a no-op once it ended."""
        with self._lock:
            if self._already_exited(expect_exited, "SIGKILL"):
                return
            self.ended, self.ended_at = "killed", time.time()
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log_file.close()

    def stop(self, timeout: float = 30.0, *, expect_exited: bool = False) -> None:
        """SIGTERM (SIGKILL after ``timeout``). Raises :class:`WorkerExited` if the process had
        already exited by itself, unless ``expect_exited``; a no-op once it ended."""
        with self._lock:
            if self._already_exited(expect_exited, "stop"):
                return
            self.ended, self.ended_at = "stopped", time.time()
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self._log_file.close()

    def errors(self) -> list[str]:
        """The worker's error lines, less transient ones of a broker still settling: its
        group coordinator, and (aiokafka, on a first start) a changelog topic just created
        but not yet in the broker's metadata, which the producer waits for and retries."""
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if "[ERROR]" in line and "GroupCoordinatorNotAvailable" not in line
                and "NotCoordinatorForGroup" not in line
                and not _CHANGELOG_NOT_YET.search(line)]


def check_workers(workers: Iterable[Worker], when: str = "at a checkpoint") -> None:
    """Every worker of a scenario, not just the last: each one still running, or ended by
    the test (killed, stopped) or by an exit that was expected; raise :class:`WorkerExited`
    naming every one that exited by itself."""
    exited = [(w, code) for w in workers if (code := w.exited_by_itself()) is not None]
    if not exited:
        return
    for w, _ in exited:
        w._reported = True
    first, code = exited[0]
    error = WorkerExited(first, code, when)
    if len(exited) > 1:
        error.args = (f"{len(exited)} workers exited by themselves {when}: "
                      + ", ".join(f"{w.label} ({w.name}) status {c}" for w, c in exited)
                      + f"; the first:\n{error.args[0]}",)
    raise error


def stop_workers(workers: Iterable[Worker]) -> None:
    """Stop (SIGTERM, by pid) every worker still running, then raise for any that had
    exited by itself (all are stopped first, so that none is left behind)."""
    workers = list(workers)
    unexpected = [(w, code) for w in workers if (code := w.exited_by_itself()) is not None
                  and not w._reported]
    for worker in workers:
        worker.stop(expect_exited=True)
    if unexpected:
        first, code = unexpected[0]
        first._reported = True
        raise WorkerExited(first, code, "before the test stopped it"
                           + (f" (and {len(unexpected) - 1} more: "
                              + ", ".join(w.label for w, _ in unexpected[1:]) + ")"
                              if len(unexpected) > 1 else ""))


#: aiokafka's log line while a just-created changelog topic is not yet in the metadata.
_CHANGELOG_NOT_YET = re.compile(r"\[ERROR\] Topic \S+-changelog not found in cluster metadata")


@dataclass(frozen=True)
class Chunk:
    """One input message, fully specified (so tests can duplicate, skip or reorder)."""

    session: str
    request: str
    seq: int | None
    value: bytes
    end: str | None = None
    tools: tuple[str, ...] | None = None
    extra_headers: tuple[tuple[str, bytes], ...] = ()

    def headers(self) -> list[tuple[str, bytes]]:
        headers = [(H_REQUEST_ID, self.request.encode())]
        if self.seq is not None:
            headers.append((H_CHUNK_SEQ, str(self.seq).encode()))
        if self.tools is not None:
            headers.append((H_DECLARED_TOOLS, ",".join(self.tools).encode()))
        if self.end is not None:
            headers.append((H_END, self.end.encode()))
        return headers + list(self.extra_headers)


def request_chunks(session: str, request: str, pieces: Iterable[bytes], *,
                   end: str | None = "eof",
                   tools: tuple[str, ...] | None = None) -> list[Chunk]:
    chunks = [Chunk(session, request, seq, piece, tools=tools)
              for seq, piece in enumerate(pieces)]
    if end is not None:
        chunks.append(Chunk(session, request, len(chunks), b"", end=end, tools=tools))
    return chunks


def with_header(chunks: list[Chunk], name: str, value: str) -> list[Chunk]:
    """The same messages with one more header."""
    return [Chunk(c.session, c.request, c.seq, c.value, c.end, c.tools,
                  (*c.extra_headers, (name, value.encode()))) for c in chunks]


def with_provider(chunks: list[Chunk], name: str) -> list[Chunk]:
    """The same messages with a ``provider`` header."""
    return with_header(chunks, "provider", name)


def interleave(*streams: list[Chunk]) -> list[Chunk]:
    """Round-robin, keeping each stream's own order."""
    out: list[Chunk] = []
    longest = max((len(s) for s in streams), default=0)
    for i in range(longest):
        out.extend(s[i] for s in streams if i < len(s))
    return out


async def produce(bootstrap: str, topic: str, chunks: Iterable[Chunk]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                enable_idempotence=True)
    await producer.start()
    try:
        futures = [await producer.send(topic, c.value, key=c.session.encode(),
                                       headers=c.headers()) for c in chunks]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def collect(bootstrap: str, topics: list[str], *, until: int | None = None,
                  idle: float = 5.0, timeout: float = 120.0) -> list[dict[str, Any]]:
    """Every record on ``topics`` from the beginning; waits for ``until`` records, then
    ``idle`` seconds more so that a duplicate arriving late is still seen."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    records: list[dict[str, Any]] = []
    try:
        tps = []
        for topic in topics:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                await consumer._client.force_metadata_update()
                parts = consumer.partitions_for_topic(topic) or set()
            tps += [TopicPartition(topic, p) for p in parts]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=250)
            for tp, messages in batch.items():
                for m in messages:
                    value = orjson.loads(m.value)
                    value["_topic"] = tp.topic
                    value["_key"] = None if m.key is None else m.key.decode()
                    value["_headers"] = {k: v.decode() for k, v in m.headers}
                    records.append(value)
                    last = time.monotonic()
            reached = until is None or len(records) >= until
            if reached and time.monotonic() - last >= idle:
                break
    finally:
        await consumer.stop()
    return records


async def topic_records(bootstrap: str, topic: str,
                        **options: Any) -> list[ConsumerRecord[bytes, bytes]]:
    """Every record of a whole topic, partition by partition in offset order (``options``:
    more of aiokafka's consumer options, e.g. a network namespace's client settings)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **options)
    await consumer.start()
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        await consumer._client.force_metadata_update()
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        async def behind() -> bool:
            return any([await consumer.position(tp) < ends[tp] for tp in tps])

        while await behind():
            batch = await consumer.getmany(timeout_ms=500)
            for messages in batch.values():
                records.extend(messages)
    finally:
        await consumer.stop()
    return sorted(records, key=lambda m: (m.partition, m.offset))


async def topic_bytes(bootstrap: str, topic: str) -> tuple[int, int, dict[bytes, bytes | None]]:
    """(key+value bytes, messages, last value per key) of a whole topic."""
    records = await topic_records(bootstrap, topic)
    last: dict[bytes, bytes | None] = {}
    for m in records:
        last[m.key or b""] = m.value
    return sum(len(m.key or b"") + len(m.value or b"") for m in records), len(records), last


def writers(records: list[ConsumerRecord[bytes, bytes]]) -> Counter[str | None]:
    """How many records each writer (the ``toolwire-worker`` header) wrote; ``None``: none."""
    found: Counter[str | None] = Counter()
    for m in records:
        named = [v.decode() for k, v in m.headers if k == "toolwire-worker"]
        found[named[0] if named else None] += 1
    return found
