"""Benchmark of the worker's state cost: changelog bytes ÷ input bytes, on a real broker.

One response whose single tool call has 64 KB of arguments streamed in 4-byte fragments, in the
DeepSeek shape (the first delta carries id, name and ``""`` arguments; every later delta repeats
the identity as ``""``), then a ``tool_calls`` finish chunk and ``data: [DONE]``: one SSE event
per Kafka message, plus the gateway's end marker. A real ``toolwire worker`` assembles it; the
record is checked on the assembled topic; then every changelog topic of the deployment is read
back and its key+value bytes summed (a tombstone counts its key). Goal: ratio ≤ 1.5.

Beside it, the same ratio for a naive design that writes the growing arguments string to a table
on every chunk, computed (not measured) from the same stream.

    python tests/bench/bench_changelog.py [--arguments-kb 64] [--fragment-bytes 4]

Uses ``KAFKA_BOOTSTRAP_SERVERS`` if set; otherwise starts a local broker in a temporary
directory and stops it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import orjson

# ``python tests/bench/bench_changelog.py`` puts tests/bench first on sys.path, not the root.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.app.support import (  # noqa: E402
    Chunk,
    Deployment,
    Worker,
    collect,
    produce,
    request_chunks,
    topic_bytes,
)
from toolwire.broker.local import configured_bootstrap, ensure_broker, stop  # noqa: E402

GOAL = 1.5
TABLES = ("chunks", "responses", "quarantine")
_T = TypeVar("_T")
_START = time.monotonic()


class BenchFailure(Exception):
    """The run did not produce what the benchmark needs to measure; says why."""


def progress(msg: str) -> None:
    print(f"bench [{time.monotonic() - _START:6.1f} s] {msg}", file=sys.stderr, flush=True)


def arguments_text(size: int) -> str:
    """A JSON object of exactly ``size`` ASCII bytes (nothing to escape inside the filler)."""
    head, tail = '{"path":"/srv/data/bench.txt","content":"', '"}'
    room = size - len(head) - len(tail)
    if room < 0:
        raise ValueError(f"{size} B is too small for the arguments object")
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
    filler = (alphabet * (room // len(alphabet) + 1))[:room]
    return head + filler + tail


def deepseek_events(arguments: str, fragment: int) -> list[bytes]:
    """The SSE events (``data: …\\n\\n``) of one DeepSeek response with one call."""
    head: dict[str, Any] = {
        "id": str(uuid.uuid4()), "object": "chat.completion.chunk", "created": int(time.time()),
        "model": "deepseek-chat", "system_fingerprint": "fp_8802369eaa_prod0820_fp8_kvcache"}

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        obj = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                    "finish_reason": finish}], **extra}
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    call_id = "call_00_" + uuid.uuid4().hex[:24]
    events = [event({"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": call_id, "type": "function",
         "function": {"name": "write_file", "arguments": ""}}]})]
    for pos in range(0, len(arguments), fragment):
        events.append(event({"tool_calls": [
            {"index": 0, "id": "", "function": {"name": "", "arguments":
                                                 arguments[pos:pos + fragment]}}]}))
    pieces = len(events) - 1
    events.append(event({"content": ""}, "tool_calls", usage={
        "prompt_tokens": 412, "completion_tokens": pieces, "total_tokens": 412 + pieces}))
    events.append(b"data: [DONE]\n\n")
    return events


def naive_baseline(chunks: list[Chunk], key: bytes) -> int:
    """Bytes a table would changelog if it stored the arguments so far on every chunk."""
    total = so_far = 0
    for chunk in chunks:
        if chunk.value.startswith(b"data: {"):
            obj = orjson.loads(chunk.value[len(b"data: "):])
            for choice in obj.get("choices", ()):
                for call in choice.get("delta", {}).get("tool_calls") or ():
                    so_far += len(call.get("function", {}).get("arguments", "").encode())
        total += len(key) + so_far
    return total


async def bounded(what: str, awaitable: Awaitable[_T], timeout: float) -> _T:
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise BenchFailure(f"{what} took more than {timeout:g} s") from None


def check_record(records: list[dict[str, Any]], dep: Deployment, request: str,
                 arguments: str) -> None:
    mine = [r for r in records if r.get("request_id") == request]
    if not mine:
        raise BenchFailure(f"no record for {request} on {dep.assembled} or {dep.deadletter}")
    if len(mine) != 1:
        raise BenchFailure(f"{len(mine)} records for {request}, expected exactly one")
    record = mine[0]
    if record["_topic"] != dep.assembled or record.get("outcome") != "assembled":
        raise BenchFailure(f"record on {record['_topic']}: outcome {record.get('outcome')}, "
                           f"reason {record.get('reason')!r}: {record.get('detail')}")
    calls = record.get("tool_calls") or []
    if len(calls) != 1:
        raise BenchFailure(f"assembled record has {len(calls)} tool calls, expected 1")
    got = calls[0].get("arguments")
    if got != arguments:
        size = len(got.encode()) if isinstance(got, str) else None
        raise BenchFailure(f"assembled arguments differ from the {len(arguments)} B sent "
                           f"(got {size} B)")


def run(args: argparse.Namespace, bootstrap: str, work: Path) -> int:
    size = args.arguments_kb * 1024
    arguments = arguments_text(size)
    events = deepseek_events(arguments, args.fragment_bytes)
    session, request = "sess_" + uuid.uuid4().hex[:16], "req_" + uuid.uuid4().hex[:24]
    chunks = request_chunks(session, request, events, tools=("write_file",))
    input_bytes = sum(len(c.session.encode()) + len(c.value) for c in chunks)
    baseline = naive_baseline(chunks, request.encode())

    dep = Deployment(bootstrap, work / "deployment")
    progress(f"deployment {dep.name}: creating topics ({dep.partitions} partitions)")
    asyncio.run(bounded("creating the topics", dep.create_topics(), 60))
    worker = Worker(dep)
    try:
        progress(f"worker pid {worker.process.pid} starting (log {worker.log})")
        worker.wait_ready(timeout=args.ready_timeout)
        progress(f"worker ready; producing {len(chunks)} messages ({input_bytes} B)")
        t0 = time.monotonic()
        asyncio.run(bounded("producing", produce(bootstrap, dep.chunks, chunks), 180))
        progress("produced; waiting for the record")
        records = asyncio.run(bounded(
            "waiting for the record",
            collect(bootstrap, [dep.assembled, dep.deadletter], until=1, idle=1.0,
                    timeout=args.timeout), args.timeout + 30))
        elapsed = time.monotonic() - t0 - 1.0  # minus collect's idle second
        check_record(records, dep, request, arguments)
        progress(f"assembled record received ({elapsed:.1f} s after the first send)")
        errors = worker.errors()
    except BaseException:
        print(f"bench: worker log tail:\n{worker.tail()}", file=sys.stderr)
        raise
    finally:
        progress(f"stopping worker pid {worker.process.pid}")
        worker.stop()

    measured: list[tuple[str, int, int]] = []
    for table in TABLES:
        topic = f"{dep.name}-{table}-changelog"
        progress(f"reading {topic}")
        total, count, _ = asyncio.run(bounded(f"reading {topic}",
                                              topic_bytes(bootstrap, topic), 120))
        measured.append((topic, total, count))
    changelog = sum(total for _, total, _ in measured)
    ratio = changelog / input_bytes
    naive_ratio = baseline / input_bytes

    fragments = len(events) - 3
    print(f"stream: 1 response, 1 tool call, {size} B of arguments in {args.fragment_bytes}-byte "
          f"fragments ({fragments} argument deltas), DeepSeek shape")
    print(f"messages: {len(chunks)} ({len(events)} SSE events, one per message, "
          f"+ 1 end marker)")
    print(f"input bytes (key+value as produced): {input_bytes} "
          f"({input_bytes / len(chunks):.1f} B/message)")
    print("changelog bytes, measured (key+value of every record; a tombstone counts its key):")
    width = max(len(topic) for topic, _, _ in measured)
    for topic, total, count in measured:
        print(f"  {topic:<{width}} {total:>10} B in {count:>6} records  "
              f"ratio {total / input_bytes:.3f}")
    print(f"  {'total':<{width}} {changelog:>10} B")
    print(f"ratio changelog/input: {ratio:.3f} (goal ≤ {GOAL}: "
          f"{'met' if ratio <= GOAL else 'NOT met'})")
    print(f"baseline, COMPUTED not measured (naive table: key = request id, value = the growing "
          f"arguments string, written on every chunk): {baseline} B, ratio {naive_ratio:.1f}")
    print(f"worker: record about {elapsed:.1f} s after the first send, "
          f"{len(errors)} error line(s) in its log")
    for line in errors[:5]:
        print(f"  {line}")
    return 0 if ratio <= GOAL else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="Exit status: 0 goal met, 1 goal not met, 2 the run failed.")
    parser.add_argument("--arguments-kb", type=int, default=64,
                        help="size of the call's arguments in KiB (default: 64)")
    parser.add_argument("--fragment-bytes", type=int, default=4,
                        help="bytes of arguments per delta (default: 4)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for the assembled record (default: 300)")
    parser.add_argument("--ready-timeout", type=float, default=90.0,
                        help="seconds to wait for the worker to be ready (default: 90)")
    args = parser.parse_args(argv)
    if args.arguments_kb < 1 or args.fragment_bytes < 1:
        parser.error("--arguments-kb and --fragment-bytes must be at least 1")

    work = Path(tempfile.mkdtemp(prefix="toolwire-bench-changelog-"))
    broker_dir = work / "broker"
    started = False
    try:
        external = configured_bootstrap()
        if external:
            progress(f"using KAFKA_BOOTSTRAP_SERVERS={external}")
        else:
            progress(f"starting a local broker in {broker_dir}")
        bootstrap, started = ensure_broker(broker_dir)
        progress(f"broker at {bootstrap}" + (" (started for this run)" if started else ""))
        print(f"broker: {bootstrap} ({'started for this run' if started else 'external'}), "
              f"python {sys.version.split()[0]}")
        return run(args, bootstrap, work)
    except (BenchFailure, AssertionError) as exc:  # AssertionError: Worker.wait_ready
        print(f"bench: FAILED: {exc}", file=sys.stderr)
        return 2
    finally:
        if started:
            progress(f"stopping the broker of {broker_dir}")
            stop(broker_dir)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
