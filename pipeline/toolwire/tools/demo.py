"""The whole pipeline on this machine with bundled samples (the library behind ``toolwire demo``).

It starts what it needs (the local broker unless one is configured, the topics, a worker),
publishes samples that show each identity shape, prints a table of what came out on the
assembled and dead-letter topics, and stops everything it started — also on Ctrl-C or error.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from toolwire.broker.local import BrokerError, stop
from toolwire.config.security import client_options
from toolwire.config.settings import Settings, child_environment
from toolwire.core.wires import AUTO
from toolwire.kafka import TopicError, open_client
from toolwire.publish import PublishError, publish_captures
from toolwire.tools.captures import SUFFIXES
from toolwire.tools.connect import resolve_bootstrap
from toolwire.tools.topics import ContractError, TopicMismatch, apply_topics, load_contracts

#: How long the demo's own consumers wait for the broker to answer when they start.
_START_TIMEOUT = 30.0


def say(message: str) -> None:
    print(f"toolwire demo: {message}", file=sys.stderr, flush=True)


def sample_paths() -> list[Path]:
    folder = resources.files("toolwire") / "samples"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(SUFFIXES))


class WorkerProcess:
    """A ``toolwire worker`` child, stopped by its PID."""

    def __init__(self, bootstrap: str, log: Path) -> None:
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._out = log.open("wb")
        env = child_environment(KAFKA_BOOTSTRAP_SERVERS=bootstrap)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolwire.cli", "worker", "--loglevel", "warning"],
            env=env, stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        if self.alive():
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._out.close()


async def end_offsets(bootstrap: str, topics: list[str],
                      security: Mapping[str, Any] | None = None) -> dict[TopicPartition, int]:
    async with open_client(AIOKafkaConsumer, bootstrap, start_timeout=_START_TIMEOUT,
                           enable_auto_commit=False, **(security or {})) as consumer:
        await consumer._client.force_metadata_update()
        tps = [TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t) or ()]
        offsets: dict[TopicPartition, int] = await consumer.end_offsets(tps)
        return offsets


async def wait_for(bootstrap: str, start: dict[TopicPartition, int], requests: set[str],
                   timeout: float, worker: WorkerProcess,
                   security: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Read from ``start`` until a record of every request arrived (or the time is up)."""
    found: dict[str, dict[str, Any]] = {}
    async with open_client(AIOKafkaConsumer, bootstrap, start_timeout=_START_TIMEOUT,
                           enable_auto_commit=False, **(security or {})) as consumer:
        consumer.assign(list(start))
        for tp, offset in start.items():
            consumer.seek(tp, offset)
        deadline = time.monotonic() + timeout
        next_note = time.monotonic() + 15
        while len(found) < len(requests) and time.monotonic() < deadline:
            if not worker.alive():
                raise RuntimeError(f"the worker exited; see {worker.log}")
            batch = await consumer.getmany(timeout_ms=500)
            for tp, messages in batch.items():
                for m in messages:
                    record = orjson.loads(m.value)
                    if record.get("request_id") in requests:
                        record["_topic"] = tp.topic
                        found[record["request_id"]] = record
            if time.monotonic() > next_note:
                say(f"{len(found)}/{len(requests)} records so far, waiting for the worker…")
                next_note += 15
    return list(found.values())


def table(rows: list[dict[str, Any]], order: list[str]) -> str:
    """A fixed-width table: sample, topic, outcome, finish reason, calls, why."""
    lines = [("sample", "wire", "topic", "outcome", "finish", "tool calls (name id)", "note")]
    for request in order:
        r = next((x for x in rows if x["request_id"] == request), None)
        sample = request.split("--", 1)[1]
        if r is None:
            lines.append((sample, "-", "-", "MISSING", "-", "-", "no record within the timeout"))
            continue
        calls = r.get("tool_calls") or r.get("withheld_tool_calls") or r.get("calls") or []
        shown = ", ".join(f"{c.get('name') or '∅'} {c.get('id') or '∅'}" for c in calls) or "-"
        if r["outcome"] == "dead_letter":
            note = f"{r['reason']}: {r['detail']}"
        elif r.get("truncated"):
            note = "truncated: calls withheld, not retried"
        elif r.get("error_code"):
            note = f"error_code {r['error_code']}"
        elif r.get("content"):
            note = "text: " + r["content"].replace("\n", " ")
        else:
            note = "ready for the tool executor"
            repaired = [f"{k.replace('_', ' ')}: {n}" for k, n in (r.get("repairs") or {}).items()
                        if n]
            if repaired:
                note += " (repaired: " + ", ".join(repaired) + ")"
        lines.append((sample, str(r.get("wire")), r["_topic"].rsplit(".", 1)[-1], r["outcome"],
                      str(r.get("finish_reason")), shown, note))
    widths = [max(len(line[i]) for line in lines) for i in range(6)]
    out = []
    for n, line in enumerate(lines):
        cells = [c.ljust(w) for c, w in zip(line[:6], widths, strict=True)]
        note = line[6] if len(line[6]) <= 90 else line[6][:89] + "…"
        out.append("  ".join([*cells, note]).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in [*widths, 4]))
    return "\n".join(out)


class DemoError(RuntimeError):
    """The demo could not run; says why (everything it started is stopped by then)."""


def run_demo(timeout: float, keep_broker: bool) -> int:
    """Run the demo; 0 when every sample's record came out, 1 otherwise."""
    try:
        return _run(timeout, keep_broker)
    except (BrokerError, PublishError, TopicMismatch, TopicError, ContractError,
            RuntimeError, ValueError) as exc:
        raise DemoError(str(exc)) from exc


def _run(timeout: float, keep_broker: bool) -> int:
    settings = Settings.from_env()
    security = client_options(settings)
    say("looking for a Kafka broker (KAFKA_BOOTSTRAP_SERVERS, else the local one)…")
    bootstrap, started = resolve_bootstrap(start=True)
    say(f"broker at {bootstrap}" + (" (started for the demo)" if started else ""))
    worker: WorkerProcess | None = None
    try:
        for line in asyncio.run(apply_topics(bootstrap, load_contracts(settings=settings),
                                             app_id=settings.app_id, security=security)):
            say(line)
        log = settings.state_dir / "demo-worker.log"
        worker = WorkerProcess(bootstrap, log)
        say(f"worker started (pid {worker.process.pid}, log {log})")
        outputs = [settings.topic_assembled, settings.topic_deadletter]
        start = asyncio.run(end_offsets(bootstrap, outputs, security))
        run_id = uuid.uuid4().hex[:6]
        order: list[str] = []
        for path in sample_paths():
            request = f"demo-{run_id}--{path.stem}"
            order.append(request)
            # The wire header each body's first event tells (as a gateway would name it).
            asyncio.run(publish_captures(bootstrap, settings.topic_chunks, [path],
                                         session=f"demo-{run_id}-{path.stem}", request=request,
                                         provider="demo", security=security, wire=AUTO))
        say(f"published {len(order)} sample responses; waiting for the worker's records…")
        rows = asyncio.run(wait_for(bootstrap, start, set(order), timeout, worker, security))
        print(table(rows, order))
        missing = len(order) - len(rows)
        if missing:
            say(f"{missing} record(s) missing after {timeout:g} s; see {log}")
            return 1
        say("done: 'toolwire consume assembled --from-beginning' shows the full records")
        return 0
    finally:
        if worker is not None:
            say(f"stopping the worker (pid {worker.process.pid})")
            worker.stop()
        if started and not keep_broker:
            say("stopping the broker it started")
            stop()
        elif started:
            say("broker left running: stop it with 'toolwire broker stop'")
