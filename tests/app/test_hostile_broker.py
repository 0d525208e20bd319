"""Hostile input on a real broker: one ``toolwire worker`` takes everything a broken or
malicious gateway can send, interleaved with sound traffic, and stays up.

The requests come from :mod:`tests.hostile` (seeded): random bytes, truncated JSON, the wrong
JSON type at every wire field, lines, arguments, responses, calls and choices over the limits,
thousands of tiny argument fragments, JSON nested ~300 levels deep, invalid UTF-8 and NUL bytes,
every kind of bad ``chunk-seq``, missing, empty, over-long, non-UTF-8 and null headers and keys,
unknown end markers, control messages a gateway should not send; and corpus captures as the
sound traffic around them. The worker runs with small limits (:func:`tests.hostile.worker_env`).

Asserted: the worker is alive at the end and logged no error or traceback; every hostile
request produced exactly the records its kind must produce (one dead letter with the expected
reason, as a rule; found by request id, or by the raw value of a malformed message without
one), every sound request exactly its ``assemble()`` record; every record validates against its
topic's JSON Schema and carries the contract's headers; raw chunks replay what was sent; no
output message reaches 1,000,000 bytes; the worker's peak RSS stays under a bound.

``TOOLWIRE_HOSTILE_N`` sets the number of input messages (default 1000, at least the whole
catalogue of kinds); ``TOOLWIRE_HOSTILE_SEED`` the seed (default 20240601).
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from jsonschema import (  # type: ignore[import-untyped, unused-ignore]  # no stubs in [dev]
    Draft202012Validator,
)

from tests.app.support import Deployment, Worker
from tests.hostile import (
    ASSEMBLED,
    LIMITS,
    Message,
    Outcome,
    Request,
    disagreements,
    partition_of,
    plan,
    worker_env,
)
from toolwire.config.settings import Settings
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_IDEMPOTENCY_KEY,
    H_OUTCOME,
    H_REQUEST_ID,
    InputMessage,
    Output,
    Sink,
    idempotency_key,
)
from toolwire.stream.processor import Processor
from toolwire.tools.topics import Contract, load_contracts

TOPICS_DIR = Path(__file__).resolve().parents[2] / "topics"
MESSAGES = int(os.environ.get("TOOLWIRE_HOSTILE_N", "1000"))
SEED = int(os.environ.get("TOOLWIRE_HOSTILE_SEED", "20240601"))
PARTITIONS = 3
#: Every output message (value, key and headers) stays under this.
OUTPUT_BOUND = 1_000_000
#: The worker's peak resident set (VmHWM): 66-69 MiB measured at 1,000 messages (2.5 MB),
#: 79 MiB at 5,000 (4.8 MB); each open response is bounded by the limits.
RSS_BOUND_MIB = 200
#: How long the worker may take to account for every request once all are produced, beyond
#: the stream TTL (after which the requests that never end are swept).
DRAIN_TIMEOUT = float(os.environ.get("TOOLWIRE_HOSTILE_TIMEOUT", "20"))
#: Requests that never end are swept this long after their last chunk. It must exceed the
#: time the worker takes over the whole input (a sound request's chunks may lie far apart):
#: ~2 s per 1,000 messages on 2 cores.
STREAM_TTL = float(os.environ.get("TOOLWIRE_HOSTILE_TTL", max(8.0, MESSAGES * 0.004)))


# --------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class Out:
    """One output message, as raw as Kafka gave it."""

    sink: Sink
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]

    def size(self) -> int:
        return (len(self.key or b"") + len(self.value)
                + sum(len(k) + len(v) for k, v in self.headers))


@dataclass
class Ledger:
    """Which output answers which expected outcome."""

    requests: Sequence[Request]
    by_id: dict[str, tuple[Request, Outcome]] = field(default_factory=dict)
    by_raw: dict[bytes, tuple[Request, Outcome]] = field(default_factory=dict)
    #: Request ids of requests that must publish nothing (control messages).
    silent: set[str] = field(default_factory=set)
    got: dict[int, list[tuple[Out, dict[str, Any]]]] = field(default_factory=dict)
    #: Monotonic time of the last output seen.
    last_at: float = 0.0
    unexpected: list[tuple[Out, dict[str, Any] | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for request in self.requests:
            for outcome in request.outcomes:
                if outcome.request_id is not None:
                    assert outcome.request_id not in self.by_id, outcome.request_id
                    self.by_id[outcome.request_id] = (request, outcome)
                else:
                    assert outcome.raw is not None and outcome.raw not in self.by_raw
                    self.by_raw[outcome.raw] = (request, outcome)
            if not request.outcomes:
                self.silent |= {v.decode() for m in request.messages for k, v in m.headers
                                if k == H_REQUEST_ID and v is not None}

    def expected(self) -> list[tuple[Request, Outcome]]:
        return [(r, o) for r in self.requests for o in r.outcomes]

    def add(self, out: Out) -> None:
        self.last_at = time.monotonic()
        try:
            record: dict[str, Any] = orjson.loads(out.value)
        except orjson.JSONDecodeError:
            self.unexpected.append((out, None))
            return
        match = self._match(record)
        if match is None:
            self.unexpected.append((out, record))
        else:
            self.got.setdefault(id(match[1]), []).append((out, record))

    def _match(self, record: dict[str, Any]) -> tuple[Request, Outcome] | None:
        request_id = record.get("request_id")
        if request_id:
            return self.by_id.get(request_id)
        raw = record.get("raw_chunks") or []
        if record.get("reason") == "malformed_message" and [r["seq"] for r in raw] == [-1]:
            return self.by_raw.get(base64.b64decode(raw[0]["value_b64"]))
        return None

    def accounted(self) -> bool:
        return all(id(o) in self.got for _, o in self.expected())

    def missing(self) -> list[tuple[Request, Outcome]]:
        return [(r, o) for r, o in self.expected() if id(o) not in self.got]


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """The record minus what only the pipeline knows (provenance and raw copies)."""
    drop = {"provenance", "raw_chunks", "raw_chunks_truncated"}
    return {k: v for k, v in record.items() if k not in drop}


def errors(validator: Draft202012Validator, record: Any) -> list[str]:
    """Schema violations, as tests/test_topics.py reports them."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(record)]


def sent_values(request: Request, request_id: str | None) -> dict[int, bytes]:
    """seq → the first value sent with it for ``request_id`` (the one the processor
    applies)."""
    out: dict[int, bytes] = {}
    for m in request.messages:
        headers = dict(m.headers)
        if request_id is not None and headers.get(H_REQUEST_ID) != request_id.encode():
            continue
        seq = headers.get(H_CHUNK_SEQ)
        if seq is not None and seq.isdigit() and seq.isascii() and len(seq) <= 10:
            out.setdefault(int(seq), m.value or b"")
    return out


@dataclass
class Checker:
    contracts: dict[Sink, Contract]
    validators: dict[Sink, Draft202012Validator]
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls) -> Checker:
        contracts = {c.role: c for c in load_contracts(TOPICS_DIR, Settings())}
        validators = {}
        for role in (Sink.ASSEMBLED, Sink.DEADLETTER):
            schema = contracts[role].schema
            assert schema is not None
            validators[role] = Draft202012Validator(schema)
        return cls(contracts, validators)

    def fail(self, what: str) -> None:
        self.problems.append(what)

    def output(self, out: Out, record: dict[str, Any] | None, label: str) -> None:
        """What holds for every output: size, schema, headers."""
        if out.size() >= OUTPUT_BOUND:
            self.fail(f"{label}: output message of {out.size()} bytes")
        if record is None:
            self.fail(f"{label}: value is not JSON: {out.value[:80]!r}")
            return
        for e in errors(self.validators[out.sink], record)[:3]:
            self.fail(f"{label}: schema: {e}")
        contract = self.contracts[out.sink]
        names = [k for k, _ in out.headers]
        if len(names) != len(set(names)):
            self.fail(f"{label}: repeated headers {names}")
        headers = dict(out.headers)
        if not set(headers) <= set(contract.header_names()):
            self.fail(f"{label}: headers outside the contract: "
                      f"{sorted(set(headers) - set(contract.header_names()))}")
        required = {h.name for h in contract.headers if h.required}
        if not required <= set(headers):
            self.fail(f"{label}: required headers missing: {sorted(required - set(headers))}")
        if headers.get(H_OUTCOME, b"").decode() != record.get("outcome"):
            self.fail(f"{label}: {H_OUTCOME} header {headers.get(H_OUTCOME)!r} "
                      f"≠ outcome {record.get('outcome')!r}")
        if out.sink is Sink.DEADLETTER and \
                headers.get("toolwire.errors.reason", b"").decode() != record.get("reason"):
            self.fail(f"{label}: reason header ≠ reason {record.get('reason')!r}")
        request_id = record.get("request_id")
        if request_id:
            if headers.get(H_REQUEST_ID) != request_id.encode():
                self.fail(f"{label}: request-id header {headers.get(H_REQUEST_ID)!r}")
            if headers.get(H_IDEMPOTENCY_KEY) != idempotency_key(request_id).encode():
                self.fail(f"{label}: idempotency-key header")
        elif H_REQUEST_ID in headers:
            self.fail(f"{label}: a request-id header without a request id")

    def outcome(self, request: Request, outcome: Outcome, out: Out,
                record: dict[str, Any]) -> None:
        """What holds for the record an expected outcome got."""
        label = f"{request.kind} {outcome.request_id or outcome.raw!r:.60}"
        want_sink = Sink.ASSEMBLED if outcome.reason == ASSEMBLED else Sink.DEADLETTER
        got_reason = record.get("reason", ASSEMBLED) if out.sink is Sink.DEADLETTER \
            else ASSEMBLED
        if (out.sink, got_reason) != (want_sink, outcome.reason):
            self.fail(f"{label}: expected {outcome.reason}, got {got_reason} "
                      f"({str(record.get('detail', ''))[:160]})")
            return
        want_key = None if outcome.session is None else outcome.session.encode()
        if out.key != want_key:
            self.fail(f"{label}: key {out.key!r:.80} ≠ {want_key!r:.80}")
        if outcome.record is not None and comparable(record) != comparable(outcome.record):
            diff = sorted(k for k in set(record) | set(outcome.record)
                          if k not in ("provenance", "raw_chunks", "raw_chunks_truncated")
                          and record.get(k) != outcome.record.get(k))
            self.fail(f"{label}: record differs from assemble() in {diff}")
        if outcome.held is not None and \
                comparable(record.get("held_record") or {}) != comparable(outcome.held):
            self.fail(f"{label}: held record differs from assemble()")
        if out.sink is Sink.DEADLETTER:
            self.raw_chunks(request, outcome, record, label)

    def raw_chunks(self, request: Request, outcome: Outcome, record: dict[str, Any],
                   label: str) -> None:
        """The raw chunks replay what was sent: in order, each the value sent with its seq."""
        sent = sent_values(request, outcome.request_id)
        values = {m.value or b"" for m in request.messages}
        seqs = [r["seq"] for r in record.get("raw_chunks", [])]
        if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
            self.fail(f"{label}: raw chunk seqs out of order: {seqs[:20]}")
        for item in record.get("raw_chunks", []):
            value = base64.b64decode(item["value_b64"])
            if item["seq"] == -1:
                if value not in values:
                    self.fail(f"{label}: raw chunk -1 is no value of the request")
            elif sent.get(item["seq"]) != value:
                self.fail(f"{label}: raw chunk {item['seq']} is not the value sent")

    def ledger(self, ledger: Ledger) -> Counter[str]:
        """Check everything; the count of records by reason."""
        figures: Counter[str] = Counter()
        for request, outcome in ledger.expected():
            got = ledger.got.get(id(outcome), [])
            label = f"{request.kind} {outcome.request_id or outcome.raw!r:.60}"
            if len(got) != 1:
                self.fail(f"{label}: {len(got)} records, expected one {outcome.reason}")
            for out, record in got:
                self.output(out, record, label)
                self.outcome(request, outcome, out, record)
                figures[record.get("reason", ASSEMBLED)] += 1
        for out, stray in ledger.unexpected:
            self.output(out, stray, "unexpected")
            silent = stray is not None and stray.get("request_id") in ledger.silent
            self.fail(f"{'a control message published' if silent else 'unexpected output'}: "
                      f"{out.sink.value} key={out.key!r:.60} "
                      f"{out.value[:300].decode('utf-8', 'replace')}")
        return figures


# --------------------------------------------------------------------------- offline


def test_the_core_gives_every_hostile_kind_the_reason_its_contract_names() -> None:
    """No Kafka: the generator's expectations (computed with the core under the worker's
    limits) agree with the reasons the contract names for each kind."""
    requests, _ = plan(SEED, MESSAGES)
    assert disagreements(requests) == []
    kinds = {r.kind.split(".")[0] for r in requests if r.hostile}
    assert len(kinds) >= 40, sorted(kinds)
    assert len({partition_of(r.route, PARTITIONS) for r in requests}) == PARTITIONS
    again, _ = plan(SEED, MESSAGES)
    assert [r.messages for r in again] == [r.messages for r in requests], "not seeded"


def test_the_processor_over_dicts_accounts_for_every_hostile_request() -> None:
    """No Kafka: the same messages through the processor over plain dicts, as the agent
    hands them over. Requests with a null header value (which Kafka allows) are left to the
    broker test: turning Kafka headers into bytes is the Faust glue's job. Requests that
    never end are swept one TTL later, on a fake clock."""
    requests, order = plan(SEED, MESSAGES)
    keep = {id(r) for r in requests
            if all(v is not None for m in r.messages for _, v in m.headers)}
    requests = [r for r in requests if id(r) in keep]
    now = [1000.0]
    settings = Settings(limits=LIMITS, partitions=PARTITIONS, worker_name="offline:1",
                        stream_ttl_seconds=STREAM_TTL)
    processor = Processor(settings, {}, {}, {}, clock=lambda: now[0], wall=lambda: now[0])
    ledger = Ledger(requests)
    offsets = [0] * PARTITIONS

    def handle(partition: int, key: bytes | None, value: bytes,
               headers: dict[str, bytes]) -> list[Output]:
        offsets[partition] += 1
        outputs = processor.handle(InputMessage(settings.topic_chunks, partition,
                                                offsets[partition], key, value, headers))
        for output in outputs:
            processor.settle(output)
            if output.sink is not Sink.INPUT:
                ledger.add(Out(output.sink, output.key, output.value,
                               tuple(output.headers.items())))
        return outputs

    for request, message in order:
        if id(request) in keep:
            now[0] += 0.001
            handle(partition_of(request.route, PARTITIONS), message.key,
                   message.value or b"", {k: v for k, v in message.headers if v is not None})
    now[0] += STREAM_TTL + 1
    for control in processor.sweep():
        assert control.partition is not None
        handle(control.partition, control.key, control.value, control.headers)
    checker = Checker.load()
    checker.ledger(ledger)
    assert checker.problems == [], "\n".join(checker.problems[:40])


# --------------------------------------------------------------------------- on the broker


@dataclass
class HostileDeployment(Deployment):
    """A deployment whose worker runs with the small limits of :mod:`tests.hostile`."""

    extra_env: dict[str, str] = field(default_factory=worker_env)

    def env(self) -> dict[str, str]:
        return {**super().env(), **self.extra_env}


async def produce(bootstrap: str, topic: str, order: Iterable[tuple[Request, Message]]
                  ) -> None:
    """Each message to its request's partition, in order, acknowledged by the broker."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                enable_idempotence=True)
    await producer.start()
    try:
        futures = [await producer.send(topic, m.value, key=m.key,
                                       headers=list(m.headers),
                                       partition=partition_of(r.route, PARTITIONS))
                   for r, m in order]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def drain(dep: Deployment, ledger: Ledger, done: Callable[[], bool], *,
                timeout: float, idle: float) -> None:
    """Read both output topics into ``ledger`` until ``done()`` (or ``timeout``), then
    ``idle`` seconds more, so that a duplicate or a stray record is still seen."""
    consumer = AIOKafkaConsumer(bootstrap_servers=dep.bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=2 * OUTPUT_BOUND)
    await consumer.start()
    sinks = {dep.assembled: Sink.ASSEMBLED, dep.deadletter: Sink.DEADLETTER}
    try:
        await consumer._client.force_metadata_update()
        tps = [TopicPartition(t, p) for t in sinks for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for tp, messages in batch.items():
                for m in messages:
                    ledger.add(Out(sinks[tp.topic], m.key, m.value or b"",
                                   tuple((k, v or b"") for k, v in m.headers)))
            if batch:
                quiet_since = None
            elif done():
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= idle:
                    break
    finally:
        await consumer.stop()


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


@pytest.mark.broker
def test_hostile_input_interleaved_with_sound_traffic(kafka_bootstrap: str,
                                                      tmp_path: Path) -> None:
    requests, order = plan(SEED, MESSAGES)
    dep = HostileDeployment(kafka_bootstrap, tmp_path, partitions=PARTITIONS, ttl=STREAM_TTL,
                            sweep_interval=1.0)
    asyncio.run(dep.create_topics())
    ledger = Ledger(requests)
    worker = Worker(dep, "hostile")
    try:
        worker.wait_ready()
        started = time.monotonic()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, order))
        produced = time.monotonic() - started
        asyncio.run(drain(dep, ledger, ledger.accounted, timeout=STREAM_TTL + DRAIN_TIMEOUT,
                          idle=2.0))
        seconds = time.monotonic() - started
        alive = worker.process.poll() is None
        rss = peak_rss_mib(worker.process.pid) if alive else float("nan")
    finally:
        worker.stop()
    log = worker.log.read_text(errors="replace")

    checker = Checker.load()
    figures = checker.ledger(ledger)
    hostile = [r for r in requests if r.hostile]
    dead = {k: n for k, n in sorted(figures.items()) if k != ASSEMBLED}
    print(f"\nhostile broker run: {len(order)} messages "
          f"({sum(m.size() for _, m in order) / 1e6:.1f} MB; {len(hostile)} hostile and "
          f"{len(requests) - len(hostile)} sound requests, seed {SEED}) -> "
          f"dead letters {sum(dead.values())} {dead}, assembled {figures[ASSEMBLED]}, "
          f"unexpected {len(ledger.unexpected)}; produced in {produced:.1f} s, last record "
          f"after {ledger.last_at - started:.1f} s (stream TTL {STREAM_TTL:g} s), test "
          f"{seconds:.1f} s; worker peak RSS {rss:.0f} MiB")

    assert alive, f"the worker died:\n{worker.tail()}"
    assert "Traceback" not in log, log[max(0, log.index("Traceback") - 2000):][:6000]
    assert worker.errors() == []
    assert checker.problems == [], "\n".join(checker.problems[:40])
    assert rss < RSS_BOUND_MIB, f"worker peak RSS {rss:.0f} MiB ≥ {RSS_BOUND_MIB} MiB"
