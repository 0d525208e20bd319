#!/usr/bin/env python3
"""Toolwire's soak (issue 23, "A long run"): one worker under steady mixed-wire traffic for an
hour, killed and its broker restarted along the way; does anything grow, and does anything get
lost?

    python ops/bench/soak.py [--minutes 60] [--kill-every 10] [--restart-broker-every 15]
                             [--sample-every 60] [--rate EVENTS/S] [--warmup 5]
                             [--json FILE] [--worker-env NAME=VALUE ...] [--strict]

Method. A private single-node Kafka broker is started (toolwire.broker.local, its state dir in
a temporary directory, on 127.0.0.1) unless KAFKA_BOOTSTRAP_SERVERS is set (then that cluster
is used, the run's topics are deleted at the end, and the broker is never restarted). One
worker (python -m toolwire.cli worker) runs under a small supervisor loop: a worker that exits
75 (it asks to be restarted) is started again; every --kill-every minutes the soak sends it
SIGKILL, by its PID, and starts a new one; every --restart-broker-every minutes the producer is
paused (what is in flight acknowledged), the broker is stopped and started again on the same
address, and the producer goes on (open responses span the restart). 0 turns a fault off.

The input is the mixed-wire workload of ops/bench/workload.py, every wire (openai-chat,
anthropic-messages, openai-responses, gemini in turn), responses of 40 events spread over 1 s,
paced at --rate body events per second; captures that need end_without_done are left out.
Without --rate, the worker's capacity is measured first on a short preloaded burst (400
responses produced before a worker of its own starts; events/s from its first to its last
output, as harness.py's preloaded section) and half of it is used; both are printed.

Every --sample-every seconds: the worker's RSS (/proc/PID/status VmRSS), CPU seconds per body
event over the interval (/proc/PID/stat utime+stime over the output records x 40), open
responses (its toolwire_open_responses gauge, /metrics), the dedupe markers
(toolwire_state_entries{table="responses"}), the consumer group's lag on the input, the
changelog topics' size (records: end - beginning offsets, summed; and their bytes on the local
broker's disk), and its open file descriptors (/proc/PID/fd). A progress line goes to stderr.

At the end: a table of each metric's least-squares slope per hour, over the samples after the
warm-up and outside each fault (from its start until its lag was back to zero, and at least 1
minute after it ended: a restarted worker's catch-up is its warm-up), both over all of
them and within each worker process (one slope, an intercept per process: a restarted worker
starts from nothing); the time from each fault until the lag was back to zero (every
partition's committed offset at or past the end offset read at least 5 s earlier, after the
fault ended: under steady input the committed offset always trails by the commit interval);
the time until the lag is exactly 0 once the input stops; and every record checked against
toolwire.core.assemble of its capture (harness.py's mixed check): 0 lost, 0 wrong (a duplicate
after a kill is allowed by at-least-once and counted). Goals: RSS slope within a worker <= 1
MiB/h, CPU per event of the last third within 10 % of the first third, lag back to zero after
every fault, 0 lost, 0 wrong.

Exit status: 0 the figures were produced (goals met or not; with --strict every goal met too),
1 a check failed (a response lost or wrong, a process died unexpectedly, the input could not
be published), 2 usage or set-up error, 130 interrupted (Ctrl-C or SIGTERM). On every path
everything started (workers, broker) is stopped by its PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import kafka_io
import procs
import soak_io
import soak_stats
from procs import Proc, ProcError
from soak_io import EVENTS, Pacer
from soak_stats import Fault

from toolwire.broker import local

PARTITIONS = 6
#: Settings the soak sets itself for every worker.
CONTROLLED = frozenset({"TOOLWIRE_APP_ID", "TOOLWIRE_TOPIC_CHUNKS", "TOOLWIRE_TOPIC_ASSEMBLED",
                        "TOOLWIRE_TOPIC_DEADLETTER", "TOOLWIRE_PARTITIONS",
                        "TOOLWIRE_STATE_DIR", "TOOLWIRE_METRICS_PORT"})
#: The capacity burst: responses preloaded before its worker starts.
BURST = 400
#: Recovery probes while a fault's lag is not back to zero (s), and how old the end offsets
#: the committed ones must reach are.
PROBE_EVERY = 2.0
CAUGHT_UP_AGE = 5.0
#: Once the input stopped, how long the lag may take to reach 0.
DRAIN_TIMEOUT = 300.0
#: Two faults closer than this are spread apart (the second moved later).
FAULT_SPACING = 60.0

T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[soak +{time.monotonic() - T0:7.1f}s] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Recovery:
    fault: int
    history: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    last_probe: float = 0.0


class Soak:
    def __init__(self, args: argparse.Namespace, bootstrap: str, workdir: Path,
                 broker_state: Path | None, settings: dict[str, str]) -> None:
        self.args = args
        self.bootstrap = bootstrap
        self.workdir = workdir
        self.broker_state = broker_state
        self.settings = settings
        self.prefix = f"soak{uuid.uuid4().hex[:6]}-"
        self.app = f"{self.prefix}app"
        self.chunks = f"{self.app}.chunks"
        self.outputs = [f"{self.app}.assembled", f"{self.app}.deadletter"]
        self.worker: Proc | None = None
        self.port = 0
        self.workers: list[dict[str, Any]] = []
        self.faults: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.unexpected: list[str] = []
        self.t0 = 0.0
        self.killing: int | None = None
        self.recovery: Recovery | None = None
        self.pacer: Pacer | None = None
        self.notes: dict[str, Any] = {}

    # ----------------------------------------------------------------- processes

    def now(self) -> float:
        return time.monotonic() - self.t0

    def env(self, app: str, chunks: str, outputs: Sequence[str], port: int) -> dict[str, str]:
        env = procs.clean_env()
        env.update({"KAFKA_BOOTSTRAP_SERVERS": self.bootstrap, "TOOLWIRE_APP_ID": app,
                    "TOOLWIRE_TOPIC_CHUNKS": chunks, "TOOLWIRE_TOPIC_ASSEMBLED": outputs[0],
                    "TOOLWIRE_TOPIC_DEADLETTER": outputs[1],
                    "TOOLWIRE_PARTITIONS": str(PARTITIONS),
                    "TOOLWIRE_STATE_DIR": str(self.workdir / app),
                    "TOOLWIRE_METRICS_PORT": str(port)})
        env.update(self.settings)
        return env

    def spawn(self, app: str, chunks: str, outputs: Sequence[str], tag: str) -> Proc:
        port = free_port()
        proc = Proc(f"toolwire worker {app}{tag}",
                    [procs.python(), "-m", "toolwire.cli", "worker", "--loglevel", "info"],
                    self.env(app, chunks, outputs, port),
                    self.workdir / "logs" / f"{app}{tag}.log", procs.FAUST_READY)
        if app == self.app:
            self.worker, self.port = proc, port
            self.workers.append({"pid": proc.pid, "started_s": round(self.now(), 1),
                                 "log": str(proc.log), "ended_s": None, "exit": None,
                                 "reason": None})
        return proc

    def supervise(self) -> None:
        """Restart the worker when it is gone: exit 75 asks for it, a SIGKILL was ours;
        anything else is an unexpected death (recorded, and the worker started again)."""
        proc = self.worker
        assert proc is not None
        if proc.alive():
            return
        code = proc.popen.returncode
        entry = self.workers[-1]
        entry.update(ended_s=round(self.now(), 1), exit=code)
        if self.killing == proc.pid:
            entry["reason"] = "SIGKILL by the soak"
        elif code == 75:
            entry["reason"] = "exit 75: restart asked"
            say(f"worker pid {proc.pid} exited 75 (restart asked): restarting it")
        else:
            entry["reason"] = f"died unexpectedly (exit {code})"
            self.unexpected.append(f"worker pid {proc.pid} exited {code}; {proc.log}:\n"
                                   f"{proc.tail(15)}")
            say(f"worker pid {proc.pid} DIED UNEXPECTEDLY (exit {code}): restarting it")
        proc.stop()
        self.spawn(self.app, self.chunks, self.outputs, f"-{len(self.workers)}")

    # ----------------------------------------------------------------- set-up

    def measure_capacity(self) -> float:
        """Body events/s of a worker of its own on a preloaded burst, first → last output."""
        app = f"{self.prefix}cap"
        chunks, outputs = f"{app}.chunks", [f"{app}.assembled", f"{app}.deadletter"]
        asyncio.run(kafka_io.create_topics(self.bootstrap, [chunks, *outputs], PARTITIONS))
        rs = [soak_io.response(i, f"{self.prefix}c") for i in range(BURST)]
        messages = [m for r in rs for m in r.messages]
        say(f"capacity: preloading {len(messages)} messages ({BURST} mixed-wire responses of "
            f"{EVENTS} events + end marker)")
        asyncio.run(kafka_io.produce(self.bootstrap, chunks, PARTITIONS, messages))
        proc = self.spawn(app, chunks, outputs, "")
        try:
            kafka_io.wait_for_count(self.bootstrap, outputs, BURST, 300.0, proc.check)
            first, last = asyncio.run(kafka_io.edges(self.bootstrap, outputs))
        finally:
            proc.stop()
        capacity = (BURST - 1) * EVENTS / (last - first) if last > first else float("nan")
        self.notes["capacity"] = {"events_per_s": round(capacity, 1), "responses": BURST,
                                  "first_to_last_s": round(last - first, 3)}
        return capacity

    def schedule(self) -> list[tuple[float, str]]:
        """(seconds, kind) of every fault, spread at least :data:`FAULT_SPACING` apart."""
        end = self.args.minutes * 60
        wanted: list[tuple[float, str]] = []
        for every, kind in ((self.args.kill_every, "kill"),
                            (self.args.restart_broker_every, "broker")):
            if every > 0:
                k = 1
                while k * every * 60 < end:
                    wanted.append((k * every * 60, kind))
                    k += 1
        wanted.sort()
        out: list[tuple[float, str]] = []
        for at, kind in wanted:
            if out and at < out[-1][0] + FAULT_SPACING:
                at = out[-1][0] + FAULT_SPACING
            if at < end:
                out.append((at, kind))
        return out

    # ----------------------------------------------------------------- faults

    def kill(self) -> None:
        proc = self.worker
        assert proc is not None
        started = self.now()
        say(f"fault: SIGKILL worker pid {proc.pid}")
        self.killing = proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.popen.wait(timeout=30)
        self.supervise()
        assert self.worker is not None
        self.begin_fault({"kind": "kill", "started_s": started, "pid_killed": proc.pid,
                          "pid_after": self.worker.pid})

    def restart_broker(self) -> None:
        assert self.broker_state is not None and self.pacer is not None
        before = local.read_info(self.broker_state)
        started = self.now()
        say(f"fault: pausing the input, stopping the broker (pid {before and before.pid})")
        self.pacer.pause()
        local.stop(self.broker_state)
        info = local.start(self.broker_state, heap="512m")
        if info.bootstrap != self.bootstrap:
            raise RuntimeError(f"the broker came back on {info.bootstrap}, not "
                               f"{self.bootstrap}: its port was taken")
        self.pacer.resume()
        say(f"broker back (pid {info.pid}) after {self.now() - started:.1f} s; input resumed")
        self.begin_fault({"kind": "broker", "started_s": started,
                          "broker_pid_before": before.pid if before else None,
                          "broker_pid_after": info.pid})

    def begin_fault(self, fault: dict[str, Any]) -> None:
        if self.recovery is not None:
            self.faults[self.recovery.fault]["note"] = "the next fault came before the lag " \
                                                       "was back to zero"
        fault.update(ended_s=round(self.now(), 1), recovered_after_s=None,
                     lag_when_recovered=None)
        fault["started_s"] = round(fault["started_s"], 1)
        self.faults.append(fault)
        self.recovery = Recovery(len(self.faults) - 1)

    def watch_recovery(self) -> None:
        rec = self.recovery
        if rec is None or self.now() - rec.last_probe < PROBE_EVERY:
            return
        rec.last_probe = self.now()
        found = soak_io.probe(soak_io.offsets(self.bootstrap, self.app, self.chunks))
        if found is None:
            return
        ends, committed = found
        t = self.now()
        old = [e for at, e in rec.history if at <= t - CAUGHT_UP_AGE]
        rec.history.append((t, ends))
        if old and all(committed.get(p, 0) >= e for p, e in old[-1].items()):
            fault = self.faults[rec.fault]
            fault["recovered_after_s"] = round(t - fault["started_s"], 1)
            fault["lag_when_recovered"] = sum(max(0, ends[p] - committed.get(p, 0))
                                              for p in ends)
            say(f"lag back to zero {fault['recovered_after_s']} s after the {fault['kind']} "
                f"fault (lag now {fault['lag_when_recovered']}, steady-state trailing)")
            self.recovery = None

    # ----------------------------------------------------------------- samples

    def sample(self) -> None:
        proc = self.worker
        assert proc is not None and self.pacer is not None
        pid = proc.pid
        metrics = soak_io.scrape(self.port)
        outputs = soak_io.probe(kafka_io.counts(self.bootstrap, self.outputs))
        lag = soak_io.probe(kafka_io.group_lag(self.bootstrap, self.app, self.chunks))
        logs = soak_io.probe(soak_io.changelogs(self.bootstrap, self.app))
        data_dir = self.broker_state / "data" if self.broker_state else None
        s: dict[str, Any] = {
            "t_s": round(self.now(), 1), "pid": pid, "rss_bytes": soak_io.rss_bytes(pid),
            "cpu_s": soak_io.cpu_seconds(pid), "fds": soak_io.fd_count(pid),
            "open_responses": metrics.get("toolwire_open_responses"),
            "dedupe_markers": metrics.get('toolwire_state_entries{table="responses"}'),
            "lag": lag, "outputs": outputs,
            "changelog_records": logs[1] if logs else None,
            "changelog_bytes": soak_io.bytes_on_disk(data_dir, logs[0]) if logs else None,
            "published": len(self.pacer.published), "cpu_us_per_event": None,
        }
        prev = self.samples[-1] if self.samples else None
        if (prev is not None and prev["pid"] == pid and None not in
                (s["cpu_s"], prev["cpu_s"], outputs, prev["outputs"])
                and outputs > prev["outputs"]):
            s["cpu_us_per_event"] = round((s["cpu_s"] - prev["cpu_s"])
                                          / ((outputs - prev["outputs"]) * EVENTS) * 1e6, 1)
            s["interval_from_s"] = prev["t_s"]
        self.samples.append(s)
        say(f"t={s['t_s'] / 60:5.1f} min pid {pid} rss {mib(s['rss_bytes'])} cpu/event "
            f"{s['cpu_us_per_event']} us open {s['open_responses']} markers "
            f"{s['dedupe_markers']} lag {lag} changelog {s['changelog_records']} records / "
            f"{mib(s['changelog_bytes'])} fds {s['fds']} | published "
            f"{s['published']} responses, outputs {outputs}")

    # ----------------------------------------------------------------- the run

    def run(self) -> dict[str, Any]:
        a = self.args
        if a.rate is None:
            capacity = self.measure_capacity()
            rate = capacity / 2
            say(f"capacity: {capacity:,.0f} events/s on the preloaded burst: pacing at half, "
                f"{rate:,.0f} events/s")
        else:
            rate = a.rate
            say(f"pacing at {rate:,.0f} events/s (--rate)")
        self.notes["rate_events_per_s"] = round(rate, 1)
        asyncio.run(kafka_io.create_topics(self.bootstrap, [self.chunks, *self.outputs],
                                           PARTITIONS))
        self.t0 = time.monotonic()
        proc = self.spawn(self.app, self.chunks, self.outputs, "-0")
        took = proc.wait_ready()
        say(f"worker pid {proc.pid} ready in {took:.1f} s; soak of {a.minutes:g} min starts")
        self.t0 = time.monotonic()
        self.workers[-1]["started_s"] = 0.0
        faults = self.schedule()
        if self.broker_state is None and any(k == "broker" for _, k in faults):
            faults = [f for f in faults if f[1] != "broker"]
            self.notes["broker_restarts"] = "skipped: KAFKA_BOOTSTRAP_SERVERS is not our broker"
            say("broker restarts skipped: the cluster of KAFKA_BOOTSTRAP_SERVERS is not ours")
        say("faults: " + (", ".join(f"{k} at {t / 60:.1f} min" for t, k in faults) or "none"))
        self.pacer = Pacer(self.bootstrap, self.chunks, PARTITIONS, rate, self.prefix)
        self.pacer.start()
        end = a.minutes * 60
        next_sample = 0.0
        while self.now() < end:
            self.supervise()
            if faults and self.now() >= faults[0][0]:
                _, kind = faults.pop(0)
                self.kill() if kind == "kill" else self.restart_broker()
            self.watch_recovery()
            if self.now() >= next_sample:
                self.sample()
                next_sample += a.sample_every
            if (err := self.pacer.error()) is not None:
                raise RuntimeError(f"the input's producer failed: {err!r}")
            time.sleep(0.25)
        return self.finish(rate)

    def finish(self, rate: float) -> dict[str, Any]:
        assert self.pacer is not None
        say("input stops: the open responses finish")
        self.pacer.stop()
        ended = self.now()
        drained: float | None = None
        while self.now() - ended < DRAIN_TIMEOUT:
            self.supervise()
            self.watch_recovery()
            lag = soak_io.probe(kafka_io.group_lag(self.bootstrap, self.app, self.chunks))
            if lag == 0:
                drained = self.now() - ended
                break
            time.sleep(PROBE_EVERY)
        if self.recovery is not None and drained is not None:  # lag 0 is back to zero
            fault = self.faults[self.recovery.fault]
            fault["recovered_after_s"] = round(ended + drained - fault["started_s"], 1)
            fault["lag_when_recovered"] = 0
            self.recovery = None
        say("lag 0 " + (f"{drained:.1f} s after the input ended" if drained is not None
                        else f"NOT reached in {DRAIN_TIMEOUT:.0f} s"))
        self.sample()
        assert self.worker is not None
        code = self.worker.stop()
        self.workers[-1].update(ended_s=round(self.now(), 1), exit=code,
                                reason="SIGTERM at the end")
        say(f"checking {len(self.pacer.published)} responses' records against assemble")
        verdict = soak_io.check(self.bootstrap, self.outputs, self.pacer.published,
                                self.prefix)
        return self.summary(rate, drained, verdict)

    # ----------------------------------------------------------------- figures

    def summary(self, rate: float, drained: float | None, verdict: soak_io.Verdict
                ) -> dict[str, Any]:
        assert self.pacer is not None
        warmup = self.args.warmup * 60
        faults = [Fault(f["kind"], f["started_s"], f["ended_s"], f["recovered_after_s"])
                  for f in self.faults]
        for s in self.samples:
            s["excluded"] = soak_stats.excluded(s["t_s"], warmup, faults)
            if s["cpu_us_per_event"] is not None and s["excluded"] is None:
                why = soak_stats.excluded(s.get("interval_from_s", 0.0), warmup, faults)
                if why is not None:
                    s["excluded_cpu"] = "interval began: " + why
        metrics = {"rss_mib": ("rss_bytes", 2**-20), "cpu_us_per_event": ("cpu_us_per_event", 1),
                   "open_responses": ("open_responses", 1),
                   "dedupe_markers": ("dedupe_markers", 1), "lag_messages": ("lag", 1),
                   "changelog_records": ("changelog_records", 1),
                   "changelog_mib_on_disk": ("changelog_bytes", 2**-20), "fds": ("fds", 1)}
        table: dict[str, dict[str, Any]] = {}
        for name, (key, scale) in metrics.items():
            kept = [s for s in self.samples if s["excluded"] is None and s[key] is not None
                    and not (key == "cpu_us_per_event" and s.get("excluded_cpu"))]
            points = [(s["t_s"], s[key] * scale) for s in kept]
            groups: dict[object, list[tuple[float, float]]] = {}
            for s, p in zip(kept, points, strict=True):
                groups.setdefault(s["pid"], []).append(p)
            pair = soak_stats.thirds([v for _, v in points])
            table[name] = {"samples": len(points),
                           "slope_per_hour": _r(soak_stats.slope_per_hour(points)),
                           "within_worker_slope_per_hour":
                               _r(soak_stats.within_slope_per_hour(groups)),
                           "first_third_mean": _r(pair[0]) if pair else None,
                           "last_third_mean": _r(pair[1]) if pair else None}
        # The first soaks' window (a minute after each fault, caught up or not), beside.
        minute = [s for s in self.samples if s["rss_bytes"] is not None and
                  soak_stats.excluded(s["t_s"], warmup, faults, caught_up=False) is None]
        minute_groups: dict[object, list[tuple[float, float]]] = {}
        for s in minute:
            minute_groups.setdefault(s["pid"], []).append((s["t_s"], s["rss_bytes"] * 2**-20))
        table["rss_mib"]["within_worker_slope_per_hour_minute_window"] = _r(
            soak_stats.within_slope_per_hour(minute_groups))
        cpu = [s["cpu_us_per_event"] for s in self.samples if s["excluded"] is None
               and s["cpu_us_per_event"] is not None and not s.get("excluded_cpu")]
        cpu_change = soak_stats.change(soak_stats.thirds(cpu))
        goals = soak_stats.goals(
            rss_slope=table["rss_mib"]["within_worker_slope_per_hour"], cpu_change=cpu_change,
            recovered=[f["recovered_after_s"] for f in self.faults], drained=drained,
            lost=len(verdict.lost), wrong=len(verdict.wrong))
        kills = [f for f in self.faults if f["kind"] == "kill"]
        restarts = [f for f in self.faults if f["kind"] == "broker"]
        return {
            "rate_events_per_s": round(rate, 1),
            "published_responses": len(self.pacer.published),
            "published_messages": self.pacer.messages,
            "not_published": len(self.pacer.failed),
            "not_published_first": dict(list(self.pacer.failed.items())[:5]),
            "producer_behind_s": round(self.pacer.behind, 3),
            "samples": self.samples, "faults": self.faults, "workers": self.workers,
            "kills": len(kills), "broker_restarts": len(restarts),
            "worker_pids": [w["pid"] for w in self.workers],
            "exits_75": sum(1 for w in self.workers if w["exit"] == 75),
            "unexpected_deaths": self.unexpected,
            "drained_after_s": None if drained is None else round(drained, 1),
            "check": verdict.notes(), "lost": len(verdict.lost), "wrong": len(verdict.wrong),
            "duplicated": len(verdict.duplicated), "slopes": table,
            "cpu_change_last_vs_first_third": _r(cpu_change),
            "goals": [asdict(g) for g in goals], "notes": self.notes,
            "exclusion": "samples before the warm-up's end, and from each fault's start until "
                         "its lag was back to zero and at least "
                         f"{soak_stats.AFTER_FAULT:.0f} s after it ended, are left out of the "
                         "slopes (CPU per event also when its interval began in such a window); "
                         "rss_mib's within_worker_slope_per_hour_minute_window: the window "
                         f"ending {soak_stats.AFTER_FAULT:.0f} s after each fault, lag or not",
        }


def mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.1f} MiB"


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.4g}"
    return str(value)


def report(result: dict[str, Any], header: dict[str, Any]) -> str:
    lines = [f"{k}: {v}" for k, v in header.items()]
    lines.append("")
    rows: list[tuple[str, ...]] = [("metric", "samples", "slope/h", "slope/h within a worker",
                                    "first third", "last third")]
    for name, row in result["slopes"].items():
        rows.append((name, str(row["samples"]), fmt(row["slope_per_hour"]),
                     fmt(row["within_worker_slope_per_hour"]), fmt(row["first_third_mean"]),
                     fmt(row["last_third_mean"])))
    lines += _columns(rows)
    lines.append("")
    lines.append(result["exclusion"])
    lines.append("RSS slope within a worker, the window ending a minute after each fault: "
                 f"{fmt(result['slopes']['rss_mib'].get('within_worker_slope_per_hour_minute_window'))}"
                 " MiB/h")
    lines.append("")
    rows = [("fault", "at min", "ended min", "pids", "lag back to zero after s")]
    for f in result["faults"]:
        pids = (f"worker {f['pid_killed']} -> {f['pid_after']}" if f["kind"] == "kill"
                else f"broker {f['broker_pid_before']} -> {f['broker_pid_after']}")
        rows.append((f["kind"], f"{f['started_s'] / 60:.2f}", f"{f['ended_s'] / 60:.2f}", pids,
                     fmt(f["recovered_after_s"])))
    lines += _columns(rows)
    lines.append(f"lag exactly 0 after the input ended: {fmt(result['drained_after_s'])} s")
    lines.append(f"worker processes: {len(result['workers'])} (exits 75: "
                 f"{result['exits_75']}, unexpected deaths: "
                 f"{len(result['unexpected_deaths'])})")
    c = result["check"]
    lines.append(f"records: {c['expected']} responses published and checked, {c['equal']} "
                 f"equal to assemble; lost {result['lost']}, wrong {result['wrong']}, "
                 f"duplicated {result['duplicated']} (at least once: allowed, each compared)")
    if result["not_published"]:
        lines.append(f"NOT PUBLISHED by the soak's producer: {result['not_published']} "
                     f"responses (left out of the check): {result['not_published_first']}")
    lines.append("")
    rows = [("goal", "value", "wanted", "met")]
    for g in result["goals"]:
        rows.append((g["name"], fmt(g["value"]), g["goal"], "yes" if g["met"] else "NO"))
    lines += _columns(rows)
    return "\n".join(lines)


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for i, row in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ops/bench/soak.py", description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0,
                        help="how long the input runs (default 60)")
    parser.add_argument("--kill-every", type=float, default=10.0, metavar="MINUTES",
                        help="SIGKILL the worker every MINUTES (default 10; 0: never)")
    parser.add_argument("--restart-broker-every", type=float, default=15.0, metavar="MINUTES",
                        help="stop and start the broker every MINUTES (default 15; 0: never)")
    parser.add_argument("--sample-every", type=float, default=60.0, metavar="SECONDS",
                        help="seconds between samples (default 60)")
    parser.add_argument("--rate", type=float, metavar="EVENTS/S",
                        help="body events per second (default: half the capacity measured "
                             "at the start on a preloaded burst)")
    parser.add_argument("--warmup", type=float, default=5.0, metavar="MINUTES",
                        help="minutes left out of the slopes at the start (default 5)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every figure here")
    parser.add_argument("--worker-env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the worker under test (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 unless every goal is met")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.sample_every <= 0:
        parser.error("--minutes and --sample-every must be positive")
    if args.rate is not None and args.rate <= 0:
        parser.error("--rate must be positive")
    if min(args.kill_every, args.restart_broker_every, args.warmup) < 0:
        parser.error("--kill-every, --restart-broker-every and --warmup cannot be negative")
    if args.warmup >= args.minutes:
        parser.error(f"--warmup {args.warmup:g} leaves nothing of --minutes {args.minutes:g}")
    error = procs.worker_env_error(args.worker_env, CONTROLLED)
    if error is not None:
        parser.error(error)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = procs.worker_settings(args.worker_env, CONTROLLED)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-soak-"))
    started = datetime.datetime.now(datetime.UTC)
    load = os.getloadavg()
    configured = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    state: Path | None = None
    soak: Soak | None = None
    result: dict[str, Any] | None = None
    status = 0
    try:
        if configured:
            bootstrap, source = configured, "KAFKA_BOOTSTRAP_SERVERS"
        else:
            state = workdir / "broker"
            say(f"starting a local Kafka broker in {state}")
            info = local.start(state, heap="512m")
            bootstrap = info.bootstrap
            source = f"local broker, Kafka {info.kafka_version}, first pid {info.pid}"
            say(f"broker {bootstrap} (pid {info.pid})")
        soak = Soak(args, bootstrap, workdir, state, settings)
        result = soak.run()
    except KeyboardInterrupt:
        say("interrupted: stopping everything started")
        status = 130
    except (local.BrokerError, ProcError) as exc:
        say(f"set-up failed: {exc}")
        status = 2
    except Exception as exc:
        say(f"FAILED: {type(exc).__name__}: {exc}")
        status = 1
    finally:
        if soak is not None and soak.pacer is not None:
            with contextlib.suppress(Exception):
                soak.pacer.stop(timeout=30)
        for name in procs.stop_all():
            say(f"stopped {name}")
        if configured and soak is not None:
            with contextlib.suppress(Exception):
                gone = asyncio.run(kafka_io.delete_topics(configured,
                                                          re.escape(soak.prefix) + ".*"))
                say(f"deleted the run's {gone} topics")
        if state is not None:
            with contextlib.suppress(Exception):
                say(f"stopping the broker ({state})")
                local.stop(state)
        if args.keep or status or (result is not None and (result["lost"] or result["wrong"])):
            say(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if result is None:
        return status or 1
    header = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python "
                   f"{platform.python_version()}",
        "load average at start": " ".join(f"{x:.2f}" for x in load),
        "kafka": source,
        "minutes": args.minutes, "warm-up minutes": args.warmup,
        "kill every (min)": args.kill_every or "never",
        "broker restart every (min)": args.restart_broker_every or "never",
        "sample every (s)": args.sample_every,
        "rate (body events/s)": result["rate_events_per_s"],
        "capacity (preloaded burst)": result["notes"].get("capacity", "not measured (--rate)"),
        "worker settings": " ".join(f"{k}={v}" for k, v in sorted(settings.items()))
                           or "defaults",
        "input": f"{result['published_responses']} mixed-wire responses "
                 f"({result['published_messages']} messages), {PARTITIONS} partitions",
    }
    print(report(result, header), flush=True)
    failed = bool(result["lost"] or result["wrong"] or result["unexpected_deaths"]
                  or result["not_published"])
    if args.json is not None:
        args.json.write_text(json.dumps({**header, **result, "failed": failed}, indent=2,
                                        default=str) + "\n")
        say(f"wrote {args.json}")
    if failed:
        return 1
    missed = [g for g in result["goals"] if not g["met"]]
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
