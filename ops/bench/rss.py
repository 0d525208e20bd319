#!/usr/bin/env python3
"""Why does the worker's RSS not come back after 10,000 responses complete? (issue 23)

    python ops/bench/rss.py [--responses 10000] [--variants a,b,c] [--no-trace] [--json FILE]

Method. One worker per run, on a private local Kafka broker (toolwire.broker.local, or
KAFKA_BOOTSTRAP_SERVERS), as harness.py's memory section: RSS idle (3 s after ready); N
responses of three body messages each (a whole chat capture grouped in three) opened at once,
two of three messages sent, and RSS once the group's committed offsets reach the end (lag 0)
+ 2 s (the open peak; VmHWM, the process's high-water mark, beside it); then the rest and the
end markers, every record out, and RSS after three more sweeps (TOOLWIRE_SWEEP_INTERVAL=5 for
the study: the sweeps carry out the decided responses' deletions). RSS and VmHWM are read from
/proc/PID/status. Ratio = (after - idle) / (open peak - idle): 1 means nothing came back.

Variants: (a) the default allocator (pymalloc over glibc malloc); (b) PYTHONMALLOC=malloc (every
object from glibc malloc); (c) PYTHONMALLOC=malloc and TOOLWIRE_TRIM_AFTER_SWEEP=true
(malloc_trim(0) after each sweep, toolwire.app.memory). Then, unless --no-trace, variant (a)
once more with PYTHONTRACEMALLOC=1: the worker logs tracemalloc's traced current and peak bytes
after each sweep (toolwire.app.memory), i.e. what Python objects hold at idle, at the peak and
after completion (this run's RSS is tracemalloc's own too, so only its traced figures are
used).

Exit status: 0 every run produced its figures, 1 a run failed, 2 set-up error (broker), 130
interrupted; every process started is stopped by its PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import kafka_io
import procs
import workload
from procs import Proc

from toolwire.broker import local

PARTITIONS = 6
SWEEP = 5.0
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "a": ("default allocator", {}),
    "b": ("PYTHONMALLOC=malloc", {"PYTHONMALLOC": "malloc"}),
    "c": ("PYTHONMALLOC=malloc + malloc_trim(0) after each sweep",
          {"PYTHONMALLOC": "malloc", "TOOLWIRE_TRIM_AFTER_SWEEP": "true"}),
    "a+trace": ("default allocator, PYTHONTRACEMALLOC=1 (traced figures only)",
                {"PYTHONTRACEMALLOC": "1"}),
}
TRACED = re.compile(r"tracemalloc current ([\d.]+) MiB, peak ([\d.]+) MiB")
T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[rss +{time.monotonic() - T0:6.1f}s] {message}", file=sys.stderr, flush=True)


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def traced(log: Path) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in TRACED.findall(log.read_text(errors="replace"))]


@contextlib.contextmanager
def broker(workdir: Path) -> Iterator[str]:
    configured = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if configured:
        yield configured
        return
    state = workdir / "broker"
    info = local.start(state, heap="512m")
    say(f"broker {info.bootstrap} (pid {info.pid})")
    try:
        yield info.bootstrap
    finally:
        local.stop(state)


def wait_lag(bootstrap: str, group: str, topic: str, proc: Proc, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while asyncio.run(kafka_io.group_lag(bootstrap, group, topic)) != 0:
        proc.check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"lag not 0 after {timeout:.0f} s")
        time.sleep(1.0)


def one(bootstrap: str, workdir: Path, variant: str, n: int) -> dict[str, Any]:
    label, extra = VARIANTS[variant]
    app = f"rss{uuid.uuid4().hex[:6]}"
    chunks, outputs = f"{app}.chunks", [f"{app}.assembled", f"{app}.deadletter"]
    asyncio.run(kafka_io.create_topics(bootstrap, [chunks, *outputs], PARTITIONS))
    rs = workload.small_responses(n, f"{app}-")
    opening = [m for r in rs for m in r.messages[:2]]
    closing = [m for r in rs for m in r.messages[2:]]
    env = procs.clean_env()
    env.update({"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "TOOLWIRE_APP_ID": app,
                "TOOLWIRE_TOPIC_CHUNKS": chunks, "TOOLWIRE_TOPIC_ASSEMBLED": outputs[0],
                "TOOLWIRE_TOPIC_DEADLETTER": outputs[1], "TOOLWIRE_PARTITIONS": str(PARTITIONS),
                "TOOLWIRE_STATE_DIR": str(workdir / app),
                "TOOLWIRE_SWEEP_INTERVAL": str(SWEEP), **extra})
    proc = Proc(f"toolwire worker ({variant})",
                [procs.python(), "-m", "toolwire.cli", "worker", "--loglevel", "info"], env,
                workdir / "logs" / f"{app}.log", procs.FAUST_READY)
    try:
        proc.wait_ready(180)
        time.sleep(3.0 + SWEEP)
        idle = status_kib(proc.pid, "VmRSS")
        traced_idle = traced(proc.log)
        say(f"({variant}) idle {idle / 1024:.1f} MiB; opening {n} responses")
        asyncio.run(kafka_io.produce(bootstrap, chunks, PARTITIONS, opening))
        wait_lag(bootstrap, app, chunks, proc, 600)
        time.sleep(2.0)
        opened = status_kib(proc.pid, "VmRSS")
        say(f"({variant}) {n} open: {opened / 1024:.1f} MiB; completing them")
        asyncio.run(kafka_io.produce(bootstrap, chunks, PARTITIONS, closing))
        kafka_io.wait_for_count(bootstrap, outputs, n, 600, proc.check)
        done = status_kib(proc.pid, "VmRSS")
        time.sleep(3 * SWEEP + 2)
        after = status_kib(proc.pid, "VmRSS")
        hwm = status_kib(proc.pid, "VmHWM")
        proc.check()
        heap = traced(proc.log)
    finally:
        proc.stop()
    result: dict[str, Any] = {
        "variant": variant, "label": label, "env": extra, "responses": n,
        "rss_idle_mib": round(idle / 1024, 1), "rss_open_peak_mib": round(opened / 1024, 1),
        "vm_hwm_mib": round(hwm / 1024, 1),
        "rss_all_out_mib": round(done / 1024, 1),
        "rss_after_sweeps_mib": round(after / 1024, 1),
        "ratio": round((after - idle) / (opened - idle), 3) if opened > idle else None,
    }
    if heap:
        result["traced_idle_mib"] = traced_idle[-1][0] if traced_idle else None
        result["traced_peak_mib"] = heap[-1][1]
        result["traced_after_sweeps_mib"] = heap[-1][0]
    say(f"({variant}) {json.dumps(result)}")
    return result


def table(results: Sequence[dict[str, Any]]) -> str:
    rows = [("variant", "idle MiB", "open peak MiB", "VmHWM MiB", "all out MiB",
             "after sweeps MiB", "ratio", "traced idle/peak/after MiB")]
    for r in results:
        heap = (f"{r['traced_idle_mib']} / {r['traced_peak_mib']} / "
                f"{r['traced_after_sweeps_mib']}" if "traced_peak_mib" in r else "-")
        rows.append((f"({r['variant']}) {r['label']}", str(r["rss_idle_mib"]),
                     str(r["rss_open_peak_mib"]), str(r["vm_hwm_mib"]),
                     str(r["rss_all_out_mib"]), str(r["rss_after_sweeps_mib"]),
                     str(r["ratio"]), heap))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ops/bench/rss.py", description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[2:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--responses", type=int, default=10_000)
    parser.add_argument("--variants", default="a,b,c", help="of a, b, c (default all)")
    parser.add_argument("--no-trace", action="store_true",
                        help="skip the tracemalloc run of variant (a)")
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not chosen or any(v not in ("a", "b", "c") for v in chosen) or args.responses < 1:
        parser.error("--variants: a comma-separated subset of a,b,c; --responses >= 1")
    if not args.no_trace:
        chosen.append("a+trace")
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-rss-"))
    results: list[dict[str, Any]] = []
    status = 0
    try:
        with broker(workdir) as bootstrap:
            for variant in chosen:
                try:
                    results.append(one(bootstrap, workdir, variant, args.responses))
                except Exception as exc:
                    say(f"({variant}) FAILED: {type(exc).__name__}: {exc}")
                    status = 1
                finally:
                    procs.stop_all()
    except KeyboardInterrupt:
        status = 130
    except local.BrokerError as exc:
        say(f"the broker could not be started: {exc}")
        status = 2
    finally:
        procs.stop_all()
        if status:
            say(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if results:
        print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}; "
              f"{args.responses} responses, sweep every {SWEEP:g} s")
        print(table(results))
        if args.json is not None:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
