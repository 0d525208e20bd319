#!/usr/bin/env python3
"""Toolwire's benchmarks (issue 8, "Fast where it counts"): one run, one table.

    python ops/bench/harness.py [--short] [--json FILE] [--only SECTION,...]
                                [--workload chat|mixed|chat,mixed]

Sections, all measured in the same run against baselines run in the same run (see
docs/benchmarks.md for the method of each): preloaded, state_writes, cpu_live, memory,
latency, scale_out, coalescing, libraries, wires. The table (stdout) gives each figure, its goal and
whether it was met, with the machine's core count and the settings of the worker under test;
progress goes to stderr.

Starts its own Kafka broker (toolwire.broker.local, in a private temporary state dir, on
127.0.0.1) unless KAFKA_BOOTSTRAP_SERVERS is set; every topic of a run has the run's unique
prefix; every process started is stopped by its PID at the end, also on Ctrl-C or failure.
``TOOLWIRE_*`` variables set when the harness starts (other than topic names, app id,
partitions and state dir, which the harness sets) are passed to the worker under test, and
listed in the table as its settings; ``--worker-env NAME=VALUE`` adds more.

--workload chooses the input. chat (the default): Chat Completions captures of the core
corpus, every section as always. mixed: responses of the four wires (openai-chat,
anthropic-messages, openai-responses, gemini) in turn, from their corpora, each published with
its ``wire`` header; it runs the preloaded, state_writes, cpu_live and latency sections (the
others are chat only), with the same goals, baselines included, and checks every record of
the Toolwire worker against ``toolwire.core.assemble(body, options)`` of its capture.
``chat,mixed`` runs both in one run (one broker, one live worker); the mixed workload's
sections appear as ``preloaded:mixed`` etc.

--short is a small version for CI: it checks that every section works (well under 3 minutes
on two cores), not the figures. Exit status: 0 every section produced its figures (goals met
or not; with --strict, also every goal met), 1 a section failed, 2 usage or set-up error,
130 interrupted (Ctrl-C or SIGTERM; everything started is stopped first).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import inspect
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafka_io
import procs
import psutil  # type: ignore[import-untyped]
import sampling as profiling
import workload
from checks import Check, check
from kafka_io import LiveRun
from procs import Proc

from toolwire.broker import local
from toolwire.kafka import group_members
from toolwire.publish import ChunkPublisher

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: In the issue's order (the table's).
SECTIONS = ("preloaded", "state_writes", "profile", "cpu_live", "latency", "scale_out",
            "memory", "coalescing", "libraries", "wires")
#: The order they run in: the live sections share one worker, stopped before the others.
RUN_ORDER = ("preloaded", "state_writes", "profile", "cpu_live", "latency", "coalescing",
             "memory", "scale_out", "libraries", "wires")
LIVE = frozenset({"cpu_live", "latency", "coalescing"})
#: The sections that run on the mixed-wire workload (``--workload mixed``).
MIXED_SECTIONS = frozenset({"preloaded", "state_writes", "cpu_live", "latency"})
#: Settings the harness sets itself for every worker (names, partitions, state dir).
CONTROLLED = frozenset({"TOOLWIRE_APP_ID", "TOOLWIRE_TOPIC_CHUNKS", "TOOLWIRE_TOPIC_ASSEMBLED",
                        "TOOLWIRE_TOPIC_DEADLETTER", "TOOLWIRE_PARTITIONS",
                        "TOOLWIRE_STATE_DIR"})
#: The p99 of last chunk → record above which a load is past the knee.
KNEE_MS = 100.0
#: The knee measured at the start of issue 8 (events/s); the goal is twice it, about 1900.
BASELINE_KNEE = 950.0

#: Notes longer than this are cut in the printed table (the JSON has them whole).
NOTE_WIDTH = 400

T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[bench +{time.monotonic() - T0:6.1f}s] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    responses: int = 400           # preloaded responses (sections 1, 2, 5)
    events: int = 144              # events per preloaded response
    partitions: int = 6
    live_rate: float = 480.0       # cpu_live: events/s
    live_seconds: float = 20.0
    loads: tuple[float, ...] = (250.0, 500.0, 1000.0, 2000.0)
    load_seconds: float = 15.0
    scale_partitions: int = 12
    memory_responses: int = 10_000
    settle_seconds: float = 5.0    # memory: after completion, before the last reading
    coalesce_gap: float = 0.005    # coalescing throughput: seconds between events
    coalesce_concurrent: int = 50  # streams open at once while publishing
    coalesce_live_gap: float = 0.010
    coalesce_live_seconds: float = 15.0
    wait: float = 60.0             # live runs: how long outputs may trail the last send
    timeout: float = 900.0         # a preloaded run's limit
    scripts_timeout: float = 1200.0


FULL = Sizes()
SHORT = Sizes(responses=12, live_seconds=2.0, load_seconds=1.5, memory_responses=300,
              settle_seconds=1.0, coalesce_concurrent=12, coalesce_live_seconds=2.0,
              wait=30.0, timeout=120.0, scripts_timeout=120.0)


# --------------------------------------------------------------------------- figures


@dataclass
class Figure:
    name: str
    value: Any
    unit: str = ""
    goal: str | None = None
    met: bool | None = None


@dataclass
class Section:
    name: str
    figures: list[Figure] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    @property
    def base(self) -> str:
        """The section's name without its workload (``preloaded:mixed`` -> ``preloaded``)."""
        return self.name.partition(":")[0]

    @property
    def workload(self) -> str:
        """``chat`` or ``mixed``: named after the colon (no colon: the chat workload)."""
        return self.name.partition(":")[2] or "chat"

    def report(self, name: str, value: Any, unit: str = "") -> None:
        self.figures.append(Figure(name, rounded(value), unit))

    def at_least(self, name: str, value: float | None, bound: float, unit: str = "",
                 goal: str | None = None) -> None:
        met = value is not None and not math.isnan(value) and value >= bound
        self.figures.append(Figure(name, rounded(value), unit, goal or f">= {bound:g}", met))

    def at_most(self, name: str, value: float | None, bound: float, unit: str = "",
                goal: str | None = None) -> None:
        met = value is not None and not math.isnan(value) and value <= bound
        self.figures.append(Figure(name, rounded(value), unit, goal or f"<= {bound:g}", met))


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        if value == 0:
            return 0.0
        digits = max(0, 3 - math.floor(math.log10(abs(value))))
        return round(value, digits)
    return value


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``nan`` of nothing; ``inf`` counts as the largest)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


# --------------------------------------------------------------------------- the run


class Bench:
    """One run: the broker, the run's unique names, the processes, the sections."""

    def __init__(self, args: argparse.Namespace, bootstrap: str, workdir: Path,
                 worker_settings: dict[str, str]) -> None:
        self.args = args
        self.sizes = SHORT if args.short else FULL
        self.bootstrap = bootstrap
        self.workdir = workdir
        self.worker_settings = worker_settings
        self.prefix = f"bench{uuid.uuid4().hex[:6]}-"
        self._preloaded: dict[tuple[int, str], tuple[str, list[workload.Response], int]] = {}
        self._toolwire_preloaded: dict[str, dict[str, Any]] = {}
        self._live: tuple[Proc, str, list[str]] | None = None
        self._live_ready = False
        self._serial = 0

    # ----------------------------------------------------------------- helpers

    def name(self, tag: str) -> str:
        self._serial += 1
        return f"{self.prefix}{tag}{self._serial}"

    def topics(self, names: Sequence[str], partitions: int) -> None:
        asyncio.run(kafka_io.create_topics(self.bootstrap, names, partitions))

    def worker_env(self, app: str, chunks: str, outputs: Sequence[str],
                   partitions: int) -> dict[str, str]:
        env = procs.clean_env()
        env.update({
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "TOOLWIRE_APP_ID": app,
            "TOOLWIRE_TOPIC_CHUNKS": chunks,
            "TOOLWIRE_TOPIC_ASSEMBLED": outputs[0],
            "TOOLWIRE_TOPIC_DEADLETTER": outputs[1],
            "TOOLWIRE_PARTITIONS": str(partitions),
            "TOOLWIRE_STATE_DIR": str(self.workdir / app),
        })
        env.update(self.worker_settings)
        return env

    def worker(self, app: str, chunks: str, outputs: Sequence[str], partitions: int,
               tag: str = "") -> Proc:
        env = self.worker_env(app, chunks, outputs, partitions)
        log = self.workdir / "logs" / f"{app}{tag}.log"
        return Proc(f"toolwire worker {app}{tag}",
                    [procs.python(), "-m", "toolwire.cli", "worker", "--loglevel", "info"],
                    env, log, procs.FAUST_READY)

    def baseline(self, kind: str, group: str, source: str, sink: str, partitions: int
                 ) -> Proc:
        """``kind``: raw, faust or faust-table."""
        argv = [procs.python(), str(HERE / "baselines.py"),
                "raw" if kind == "raw" else "faust", "--bootstrap", self.bootstrap,
                "--input", source, "--output", sink, "--group", group,
                "--partitions", str(partitions), "--state-dir", str(self.workdir / group)]
        if kind == "faust-table":
            argv.append("--table")
        env = procs.clean_env()
        return Proc(f"{kind} baseline {group}", argv, env,
                    self.workdir / "logs" / f"{group}.log",
                    procs.RAW_READY if kind == "raw" else procs.FAUST_READY)

    def release(self, proc: Proc) -> None:
        """Stop a measured process; in --short without waiting for it to exit (the figures
        of --short are not the point, its time is)."""
        if self.args.short:
            proc.terminate()
        else:
            proc.stop()

    def preloaded_input(self, partitions: int, wl: str = "chat"
                        ) -> tuple[str, list[workload.Response], int]:
        """The preloaded input topic of workload ``wl`` with ``partitions`` partitions (made
        once per count and workload): (topic, responses, key+value bytes)."""
        if (partitions, wl) not in self._preloaded:
            s = self.sizes
            mixed = wl == "mixed"
            topic = self.name(f"pre{partitions}{'mix' if mixed else ''}.chunks")
            self.topics([topic], partitions)
            make = workload.mixed_responses if mixed else workload.responses
            rs = make(s.responses, s.events, self.name("pm" if mixed else "p"))
            messages = workload.flat(rs)
            say(f"preloading {len(messages)} messages ({len(rs)} {'mixed-wire ' * mixed}"
                f"responses of {s.events} events and an end marker) into {topic}")
            took = asyncio.run(kafka_io.produce(self.bootstrap, topic, partitions, messages))
            say(f"preloaded in {took:.1f} s")
            self._preloaded[partitions, wl] = (topic, rs, sum(m.size() for m in messages))
        return self._preloaded[partitions, wl]

    def measure_preloaded(self, label: str, spawn: Callable[[], list[Proc]],
                          outputs: Sequence[str], want: int, flush: bool = False
                          ) -> dict[str, Any]:
        """Start the consumer process(es) on the preloaded input and wait for ``want``
        output records; the run's figures."""
        say(f"{label}: starting")
        running = spawn()

        def alive() -> None:
            for p in running:
                p.check()

        try:
            done = kafka_io.wait_for_count(
                self.bootstrap, outputs, want, self.sizes.timeout, alive,
                lambda n: say(f"{label}: {n} of {want} outputs"))
            cpu = [p.cpu() for p in running]
            first, last = asyncio.run(kafka_io.edges(self.bootstrap, outputs))
        finally:
            for p in running:
                if flush:
                    p.stop()
                else:
                    self.release(p)
        spawned = min(p.spawned_at for p in running)
        say(f"{label}: {want} outputs in {last - first:.1f} s after the first")
        return {"first": first, "last": last, "spawned": spawned, "seen": done, "cpu": cpu,
                "procs": running}

    def live_worker(self) -> tuple[Proc, str, list[str]]:
        """One Toolwire worker kept running for the live sections: (proc, chunks topic,
        output topics)."""
        if self._live is None or not self._live[0].alive():
            self.spawn_live()
        assert self._live is not None
        proc = self._live[0]
        if not self._live_ready:
            took = proc.wait_ready()
            say(f"live toolwire worker ready in {took:.1f} s")
            time.sleep(1.0)
            self._live_ready = True
        return self._live

    def spawn_live(self) -> None:
        app = self.name("live")
        chunks, outputs = f"{app}.chunks", [f"{app}.assembled", f"{app}.deadletter"]
        self.topics([chunks, *outputs], self.sizes.partitions)
        self._live = (self.worker(app, chunks, outputs, self.sizes.partitions), chunks,
                      outputs)
        self._live_ready = False

    def stop_live(self) -> None:
        if self._live is not None:
            self._live[0].stop()
            self._live = None

    # ----------------------------------------------------------------- sections

    def preloaded(self, sec: Section) -> None:
        s = self.sizes
        topic, rs, in_bytes = self.preloaded_input(s.partitions, sec.workload)
        n_in = sum(len(r.messages) for r in rs)
        per_response = len(rs[0].messages)
        rates: dict[str, dict[str, float]] = {}
        for kind in ("raw", "faust", "faust-table"):
            group = self.name(kind.replace("-", ""))
            sink = f"{group}.out"
            self.topics([sink], s.partitions)
            run = self.measure_preloaded(
                f"preloaded {kind}",
                lambda kind=kind, group=group, sink=sink: [  # type: ignore[misc]
                    self.baseline(kind, group, topic, sink, s.partitions)],
                [sink], n_in)
            rates[kind] = self._rates(run, n_in, n_in - 1)
        tw = self.toolwire_preloaded(sec.workload)
        rates["toolwire"] = self._rates(tw, n_in, (len(rs) - 1) * per_response)
        labels = {"raw": "raw aiokafka loop", "faust": "bare Faust forwarder",
                  "faust-table": "bare Faust + table write", "toolwire": "toolwire worker"}
        for kind, r in rates.items():
            sec.report(f"{labels[kind]}: msgs/s first->last output", r["window"], "msg/s")
        for kind, r in rates.items():
            sec.report(f"{labels[kind]}: msgs/s incl. start", r["with_start"], "msg/s")
        for kind, r in rates.items():
            sec.report(f"{labels[kind]}: CPU per 1000 msgs", r["cpu_per_1k"], "s")
        sec.at_least("toolwire / bare Faust forwarder (first->last)",
                     ratio(rates["toolwire"]["window"], rates["faust"]["window"]), 0.9,
                     goal=">= 0.90")
        sec.report("toolwire / bare Faust forwarder (incl. start)",
                   ratio(rates["toolwire"]["with_start"], rates["faust"]["with_start"]))
        sec.notes.update({
            "input": f"{len(rs)} responses x ({s.events} events + end marker) = {n_in} "
                     f"messages, {in_bytes} key+value bytes, {s.partitions} partitions, all "
                     "produced before each consumer starts; responses one after another",
            "method": "first->last: input messages covered between the first and the last "
                      "output's Kafka timestamp (toolwire: responses after the first x "
                      f"{per_response}) / that time; incl. start: all input messages / "
                      "(last output - process spawn); CPU: the process's user+sys seconds",
        })
        if sec.workload == "mixed":
            sec.notes["input"] += "; " + mixed_input(rs)
            checked(sec, tw["check"])

    def _rates(self, run: dict[str, Any], n_in: int, covered: int) -> dict[str, float]:
        window = run["last"] - run["first"]
        return {"window": covered / window if window > 0 else float("nan"),
                "with_start": n_in / (run["last"] - run["spawned"]),
                "cpu_per_1k": sum(run["cpu"]) / n_in * 1000}

    def toolwire_preloaded(self, wl: str = "chat") -> dict[str, Any]:
        """The Toolwire worker's run on the preloaded input of workload ``wl`` (sections 1 and
        2 share it); on the mixed workload, with its records checked."""
        if wl not in self._toolwire_preloaded:
            s = self.sizes
            topic, rs, _ = self.preloaded_input(s.partitions, wl)
            app = self.name("tw")
            outputs = [f"{app}.assembled", f"{app}.deadletter"]
            self.topics(outputs, s.partitions)
            run = self.measure_preloaded(
                "preloaded toolwire",
                lambda: [self.worker(app, topic, outputs, s.partitions)], outputs, len(rs),
                flush=True)
            run["app"] = app
            run["outputs"] = outputs
            if wl == "mixed":
                run["check"] = check(self.bootstrap, outputs, rs)
            self._toolwire_preloaded[wl] = run
        return self._toolwire_preloaded[wl]

    def state_writes(self, sec: Section) -> None:
        s = self.sizes
        _, rs, in_bytes = self.preloaded_input(s.partitions, sec.workload)
        # The worker was stopped: its writes are flushed.
        run = self.toolwire_preloaded(sec.workload)
        n_in = sum(len(r.messages) for r in rs)
        app = run["app"]
        changelogs = asyncio.run(kafka_io.list_topics(self.bootstrap,
                                                      re.escape(app) + r"-.+-changelog"))
        say(f"state writes: reading {len(changelogs)} changelog topics of {app}")
        stats = asyncio.run(kafka_io.read_all(self.bootstrap, changelogs))
        records = sum(st.records for st in stats.values())
        nbytes = sum(st.bytes for st in stats.values())
        sec.at_most("changelog messages / input messages", ratio(records, n_in), 0.05)
        sec.at_most("changelog bytes / input bytes", ratio(nbytes, in_bytes), 1.1)
        sec.report("changelog messages", records)
        sec.report("changelog key+value bytes", nbytes, "B")
        sec.notes.update({
            "per_changelog": {t.removeprefix(app + "-"): {"records": st.records,
                                                          "key_bytes": st.key_bytes,
                                                          "value_bytes": st.value_bytes}
                              for t, st in stats.items()},
            "input": f"{n_in} messages, {in_bytes} key+value bytes (the preloaded run)",
            "method": "every record of the worker's changelog topics (<app id>-*-changelog), "
                      "read after the worker stopped, tombstones included; bytes are key + "
                      "value sizes",
        })

    def profile(self, sec: Section) -> None:
        """The preloaded input once more, through a worker sampled by py-spy: which layer
        takes what share of its time."""
        s = self.sizes
        topic, rs, _ = self.preloaded_input(s.partitions)
        app = self.name("prof")
        outputs = [f"{app}.assembled", f"{app}.deadletter"]
        self.topics(outputs, s.partitions)
        raw = self.workdir / "profile.txt"
        recorders: list[subprocess.Popen[bytes]] = []

        def spawn() -> list[Proc]:
            worker = self.worker(app, topic, outputs, s.partitions)
            recorders.append(profiling.start(worker.pid, raw))
            return [worker]

        try:
            self.measure_preloaded("profiled toolwire", spawn, outputs, len(rs), flush=True)
        finally:
            errors = [profiling.stop(r) for r in recorders]
        if not raw.exists():
            raise RuntimeError(f"py-spy wrote no profile: {' '.join(errors).strip()[-400:]}")
        found = profiling.summarise(raw)
        if not found.samples:
            raise RuntimeError("py-spy recorded no sample of the worker")
        sec.report("samples (200/s, while the worker was not idle)", found.samples)
        for layer, n in found.layers.most_common():
            sec.report(f"own time: {layer}", 100 * n / found.samples, "%")
        sec.report("time in or under toolwire's processor and core (inclusive)",
                   100 * found.under_processor / found.samples, "%")
        sec.notes.update({
            "top_functions_own_time": [f"{100 * n / found.samples:.1f}% {f}"
                                       for f, n in found.functions.most_common(15)],
            "method": "py-spy record --rate 200 --nonblocking on the worker from its spawn to "
                      "its stop (start-up and recovery included), over the preloaded input; "
                      "own time = the innermost Python frame's layer; a worker of its own, "
                      "so the figures of the preloaded section are not slowed by sampling",
        })

    def cpu_live(self, sec: Section) -> None:
        s = self.sizes
        results: dict[str, tuple[float, LiveRun]] = {}
        baselines: dict[str, tuple[Proc, str, list[str]]] = {}

        def spawn(kind: str) -> tuple[Proc, str, list[str]]:
            group = self.name(f"live{kind}")
            chunks, outputs = f"{group}.chunks", [f"{group}.out"]
            self.topics([chunks, *outputs], s.partitions)
            return self.baseline(kind, group, chunks, outputs[0], s.partitions), chunks, outputs

        if self.args.short:  # start all three at once: --short is about time, not figures
            baselines = {kind: spawn(kind) for kind in ("raw", "faust")}
            if self._live is None:
                self.spawn_live()
        mixed = sec.workload == "mixed"
        verdict = Check()
        for kind in ("raw", "faust", "toolwire"):
            made: list[workload.Response] = []
            schedule, streams = workload.live_schedule(s.live_rate, s.live_seconds,
                                                       self.name("lm" if mixed else "l"),
                                                       wire_mix=mixed, made=made)
            if kind == "toolwire":
                proc, chunks, outputs = self.live_worker()
                forwarded = False
            else:
                proc, chunks, outputs = baselines.get(kind) or spawn(kind)
                proc.wait_ready()
                time.sleep(1.0)
                forwarded = True
            say(f"cpu_live {kind}: {len(schedule)} messages, {streams} streams over "
                f"{s.live_seconds:g} s")
            try:
                cpu0 = proc.cpu()
                run = asyncio.run(kafka_io.drive(self.bootstrap, chunks, s.partitions,
                                                 schedule, outputs, forwarded=forwarded,
                                                 wait=s.wait))
                cpu = proc.cpu() - cpu0
                proc.check()
            finally:
                if kind != "toolwire":
                    self.release(proc)
            results[kind] = (cpu, run)
            if mixed and kind == "toolwire":
                verdict = check(self.bootstrap, outputs, made)
        labels = {"raw": "raw aiokafka loop", "faust": "bare Faust forwarder",
                  "toolwire": "toolwire worker"}
        per_event = {k: cpu / max(1, run.events) for k, (cpu, run) in results.items()}
        for kind, value in per_event.items():
            sec.report(f"{labels[kind]}: CPU per event", value * 1e6, "us")
        sec.at_most("toolwire CPU/event / bare Faust forwarder's",
                    ratio(per_event["toolwire"], per_event["faust"]), 1.0)
        for kind, (_, run) in results.items():
            p99 = p99_ms(run)
            sec.report(f"{labels[kind]}: p99 last chunk -> output", p99, "ms")
        sec.notes.update({
            "load": f"streams of 40 events lasting 1 s, started steadily for "
                    f"{s.live_rate:g} events/s over {s.live_seconds:g} s, {s.partitions} "
                    "partitions",
            "method": "CPU: the consuming process's user+sys seconds from the first send to "
                      "the last output read, / body events; latency: the end marker (sent "
                      "with the last event) handed to the producer -> the record (baselines: "
                      "the forwarded end marker) read by a consumer",
            "missing": {k: run.missing for k, (_, run) in results.items()},
            "producer_behind_s": {k: round(run.behind, 3) for k, (_, run) in results.items()},
        })
        if mixed:
            sec.notes["load"] += "; " + mixed_input(made)
            checked(sec, verdict)

    def latency(self, sec: Section) -> None:
        s = self.sizes
        proc, chunks, outputs = self.live_worker()
        knee: float | None = None
        cpu_notes, missing = {}, {}
        mixed = sec.workload == "mixed"
        verdict = Check()
        made: list[workload.Response] = []
        for rate in s.loads:
            made.clear()
            schedule, streams = workload.live_schedule(rate, s.load_seconds,
                                                       self.name("rm" if mixed else "r"),
                                                       wire_mix=mixed, made=made)
            say(f"latency at {rate:g} events/s: {streams} streams over {s.load_seconds:g} s")
            cpu0 = proc.cpu()
            run = asyncio.run(kafka_io.drive(self.bootstrap, chunks, s.partitions, schedule,
                                             outputs, forwarded=False, wait=s.wait))
            proc.check()
            if mixed:
                verdict.add(check(self.bootstrap, outputs, made))
            cpu_notes[f"{rate:g}"] = round((proc.cpu() - cpu0) / max(1, run.events) * 1e6, 1)
            missing[f"{rate:g}"] = run.missing
            p50 = percentile(all_latencies(run), 50) * 1000
            p99 = percentile(all_latencies(run), 99) * 1000
            sec.report(f"p50 at {rate:g} events/s", shown_ms(p50, s.wait), "ms")
            sec.report(f"p99 at {rate:g} events/s", shown_ms(p99, s.wait), "ms")
            if knee is None and not p99 <= KNEE_MS:
                knee = rate
            time.sleep(1.0)
        top = max(s.loads)
        value: Any = knee if knee is not None else f">{top:g}"
        met = (knee is None and top >= 2 * BASELINE_KNEE) or (knee is not None
                                                            and knee >= 2 * BASELINE_KNEE)
        sec.figures.append(Figure("knee (lowest load with p99 > 100 ms)", value, "events/s",
                                  f">= {2 * BASELINE_KNEE:g} (2 x the ~{BASELINE_KNEE:g} at "
                                  "the issue's start)", met))
        sec.notes.update({
            "load": "streams of 40 events lasting 1 s started steadily; one toolwire worker; "
                    f"{s.load_seconds:g} s per load, {s.partitions} partitions",
            "worker_cpu_us_per_event": cpu_notes,
            "missing_outputs": missing,
            "method": "end marker (with the last event) handed to the producer -> record read "
                      f"by a consumer; a missing record counts as > {s.wait:g} s",
        })
        if mixed:
            sec.notes["load"] += "; " + mixed_input(made)
            checked(sec, verdict)

    def scale_out(self, sec: Section) -> None:
        s = self.sizes
        parts = s.scale_partitions
        topic, rs, _ = self.preloaded_input(parts)
        per_response = len(rs[0].messages)
        results = {}
        for n in (1, 2):
            app = self.name(f"scale{n}x")
            outputs = [f"{app}.assembled", f"{app}.deadletter"]
            self.topics(outputs, parts)
            results[n] = self._scale_run(app, topic, outputs, parts, n, len(rs),
                                         per_response)
        one, two = results[1], results[2]
        sec.report("1 worker: msgs/s (group stable -> last output)", one["rate"], "msg/s")
        sec.report("2 workers: msgs/s (group stable -> last output)", two["rate"], "msg/s")
        sec.report("throughput ratio 2 workers / 1", ratio(two["rate"], one["rate"]))
        sec.report("1 worker: msgs/s first->last output", one["window"], "msg/s")
        sec.report("2 workers: msgs/s first->last output", two["window"], "msg/s")
        sec.report("ratio 2 / 1, first->last", ratio(two["window"], one["window"]))
        sec.report("1 worker: CPU seconds", one["cpu"][0], "s")
        for i, cpu in enumerate(two["cpu"]):
            sec.report(f"2 workers: CPU seconds of worker {i + 1}", cpu, "s")
        sec.notes.update({
            "input": f"the preloaded input ({len(rs)} responses x {per_response} messages) "
                     f"on {parts} partitions; both workers of a run started at once, same "
                     "group",
            "method": "rate: input messages of the responses output after the consumer group "
                      "became stable with every member owning partitions / (last output - "
                      "that moment); first->last includes the rebalance when the second "
                      "worker joins; CPU: each process's total user+sys seconds",
            "stable_after_spawn_s": {n: r["stable_after"] for n, r in results.items()},
            "assignment": {n: r["assignment"] for n, r in results.items()},
            "machine": f"{os.cpu_count()} cores shared with the broker and the harness",
        })

    def _scale_run(self, app: str, topic: str, outputs: list[str], parts: int, n: int,
                   want: int, per_response: int) -> dict[str, Any]:
        say(f"scale_out: {n} worker(s) of {app}")
        running = [self.worker(app, topic, outputs, parts, tag=f"-{i}") for i in range(n)]
        stable_at: float | None = None
        assignment: list[list[int]] = []
        deadline = time.monotonic() + self.sizes.timeout
        try:
            while True:
                for p in running:
                    p.check()
                if stable_at is None:
                    with contextlib.suppress(Exception):
                        state, members = asyncio.run(
                            group_members(self.bootstrap, app, topic))
                        owned = sorted(p for ps in members.values() for p in ps)
                        if (state == "Stable" and len(members) == n
                                and all(members.values()) and owned == list(range(parts))):
                            stable_at = time.time()
                            assignment = [sorted(ps) for ps in members.values()]
                have = asyncio.run(kafka_io.counts(self.bootstrap, outputs))
                if have >= want:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{have} of {want} outputs after "
                                       f"{self.sizes.timeout:.0f} s")
                time.sleep(0.5)
            cpu = [p.cpu() for p in running]
        finally:
            for p in running:
                self.release(p)
        stats = asyncio.run(kafka_io.read_all(self.bootstrap, outputs, keep_times=True))
        times = sorted(t for st in stats.values() for t in st.timestamps)
        first, last = times[0], times[-1]
        start = max(stable_at or last, first)
        after = sum(1 for t in times if t > start)
        spawned = min(p.spawned_at for p in running)
        return {"rate": after * per_response / (last - start) if last > start
                else float("nan"),
                "window": (len(times) - 1) * per_response / (last - first)
                if last > first else float("nan"),
                "cpu": cpu, "assignment": assignment,
                "stable_after": None if stable_at is None else round(stable_at - spawned, 2)}

    def memory(self, sec: Section) -> None:
        s = self.sizes
        n = s.memory_responses
        app = self.name("mem")
        chunks, outputs = f"{app}.chunks", [f"{app}.assembled", f"{app}.deadletter"]
        self.topics([chunks, *outputs], s.partitions)
        rs = workload.small_responses(n, self.name("m"))
        opening = [m for r in rs for m in r.messages[:2]]
        closing = [m for r in rs for m in r.messages[2:]]
        proc = self.worker(app, chunks, outputs, s.partitions)
        try:
            proc.wait_ready()
            time.sleep(3.0)
            idle = proc.rss()
            say(f"memory: idle {idle / 2**20:.1f} MiB; opening {n} responses "
                f"({len(opening)} messages)")
            asyncio.run(kafka_io.produce(self.bootstrap, chunks, s.partitions, opening))
            self._wait_lag(app, chunks, proc)
            time.sleep(2.0)
            opened = proc.rss()
            say(f"memory: {n} open: {opened / 2**20:.1f} MiB; completing them")
            asyncio.run(kafka_io.produce(self.bootstrap, chunks, s.partitions, closing))
            kafka_io.wait_for_count(self.bootstrap, outputs, n, s.timeout, proc.check)
            time.sleep(s.settle_seconds)
            after = proc.rss()
            proc.check()
        finally:
            self.release(proc)
        per_open = (opened - idle) / n / 1024
        sec.report("RSS idle", idle / 2**20, "MiB")
        sec.report(f"RSS with {n} responses open", opened / 2**20, "MiB")
        sec.at_most("RSS per open response above idle", per_open, 4.0, "KiB", "< 4")
        sec.report("RSS after completion - idle", (after - idle) / 2**20, "MiB")
        sec.at_most("(after - idle) / (open peak - idle)", ratio(after - idle, opened - idle),
                    0.25, goal="<= 0.25 (back near the start)")
        open_bytes = sum(m.size() for m in opening) / n
        sec.notes.update({
            "input": f"{n} responses of 3 body messages (a whole capture grouped in 3) + end "
                     f"marker; 2 of 3 sent first ({open_bytes:.0f} key+value bytes per open "
                     "response), then the rest",
            "method": "psutil RSS of the worker: idle 3 s after ready; open once the group's "
                      "committed offsets reach the end (lag 0) + 2 s; after once all records "
                      f"are out + {s.settle_seconds:g} s",
        })

    def _wait_lag(self, app: str, topic: str, proc: Proc) -> None:
        deadline = time.monotonic() + self.sizes.timeout
        while True:
            proc.check()
            lag = asyncio.run(kafka_io.group_lag(self.bootstrap, app, topic))
            if lag == 0:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumer lag still {lag} after {self.sizes.timeout} s")
            time.sleep(1.0)

    def coalescing(self, sec: Section) -> None:
        s = self.sizes
        params = inspect.signature(ChunkPublisher.__init__).parameters
        if "coalesce_ms" not in params:
            raise RuntimeError("toolwire.publish.ChunkPublisher has no coalesce_ms parameter "
                               "yet: the coalescing section cannot run")
        variants = {"without": {}, "coalesce_ms=20": {"coalesce_ms": 20}}
        through: dict[str, dict[str, float]] = {}
        for label, options in variants.items():
            through[label] = self._coalesce_throughput(label, options)
        sec.report("without: events/s first->last output", through["without"]["rate"],
                   "events/s")
        sec.report("coalesce_ms=20: events/s first->last output",
                   through["coalesce_ms=20"]["rate"], "events/s")
        sec.report("events/s ratio coalesced / without",
                   ratio(through["coalesce_ms=20"]["rate"], through["without"]["rate"]))
        sec.report("coalesce_ms=20: events per input message",
                   through["coalesce_ms=20"]["per_message"])
        proc, chunks, outputs = self.live_worker()
        lat: dict[str, LiveRun] = {}
        count = max(1, round(s.live_rate * s.coalesce_live_seconds / 40))
        every = 40 / s.live_rate
        for label, options in variants.items():
            streams = workload.responses(count, 40, self.name("c"))
            say(f"coalescing latency {label}: {count} streams")
            lat[label] = asyncio.run(kafka_io.drive_publisher(
                self.bootstrap, chunks, streams, [i * every for i in range(count)],
                s.coalesce_live_gap, dict(options), outputs=outputs, wait=s.wait))
            proc.check()
            time.sleep(1.0)
        for label, run in lat.items():
            sec.report(f"{label}: p50 last event -> output",
                       percentile(all_latencies(run), 50) * 1000, "ms")
            sec.report(f"{label}: p99 last event -> output",
                       percentile(all_latencies(run), 99) * 1000, "ms")
        for q in (50, 99):
            sec.report(f"latency added at p{q}",
                       (percentile(all_latencies(lat["coalesce_ms=20"]), q)
                        - percentile(all_latencies(lat["without"]), q)) * 1000, "ms")
        sec.notes.update({
            "throughput_input": f"{s.responses} responses of {s.events} events, each "
                                "published by ChunkPublisher as a live body (an event every "
                                f"{s.coalesce_gap * 1000:g} ms, {s.coalesce_concurrent} "
                                "streams at once), before the worker starts",
            "messages": {k: v["messages"] for k, v in through.items()},
            "latency_load": f"{s.live_rate:g} events/s: streams of 40 events, an event every "
                            f"{s.coalesce_live_gap * 1000:g} ms, for "
                            f"{s.coalesce_live_seconds:g} s; latency from the last event's "
                            "arrival at the publisher to the record read by a consumer",
            "missing": {k: run.missing for k, run in lat.items()},
        })

    def _coalesce_throughput(self, label: str, options: dict[str, Any]) -> dict[str, float]:
        s = self.sizes
        app = self.name("co")
        chunks, outputs = f"{app}.chunks", [f"{app}.assembled", f"{app}.deadletter"]
        self.topics([chunks, *outputs], s.partitions)
        streams = workload.responses(s.responses, s.events, self.name("q"))
        length = (s.events - 1) * s.coalesce_gap
        starts = [i * length / s.coalesce_concurrent for i in range(len(streams))]
        say(f"coalescing {label}: publishing {len(streams)} streams through ChunkPublisher")
        published = asyncio.run(kafka_io.drive_publisher(
            self.bootstrap, chunks, streams, starts, s.coalesce_gap, dict(options)))
        messages = asyncio.run(kafka_io.counts(self.bootstrap, [chunks]))
        run = self.measure_preloaded(
            f"coalescing {label}",
            lambda: [self.worker(app, chunks, outputs, s.partitions)], outputs, len(streams))
        window = run["last"] - run["first"]
        return {"rate": (len(streams) - 1) * s.events / window if window > 0
                else float("nan"),
                "messages": messages, "per_message": published.events / max(1, messages)}

    def libraries(self, sec: Section) -> None:
        self._script(sec, "libraries.py")

    def wires(self, sec: Section) -> None:
        self._script(sec, "wires.py")

    def _script(self, sec: Section, name: str) -> None:
        """A benchmark script of its own (``ops/bench/NAME --json``), run as a subprocess:
        its last ``BENCH {json}`` line's figures and notes are the section's, as they are."""
        script = HERE / name
        if not script.is_file():
            raise RuntimeError(f"{script.relative_to(ROOT)} is not there (yet)")
        argv = [procs.python(), str(script), *(["--short"] if self.args.short else []),
                "--json"]
        say(f"{sec.base}: {' '.join(argv[1:])}")
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                              timeout=self.sizes.scripts_timeout, check=False,
                              env=procs.clean_env(), start_new_session=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("BENCH ")]
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"{name} exited {done.returncode} without a BENCH line:\n"
                               + "\n".join((done.stdout + done.stderr).splitlines()[-20:]))
        data = json.loads(lines[-1].removeprefix("BENCH "))
        for f in data.get("figures", []):
            sec.figures.append(Figure(str(f.get("name")), rounded(f.get("value")),
                                      str(f.get("unit") or ""), f.get("goal"), f.get("met")))
        if data.get("notes"):
            sec.notes.update(data["notes"] if isinstance(data["notes"], dict)
                             else {"notes": data["notes"]})


def mixed_input(rs: Sequence[workload.Response]) -> str:
    """What a mixed-wire input holds, for the notes."""
    per_wire: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for r in rs:
        per_wire.setdefault(r.wire, set()).add(r.capture)
        counts[r.wire] = counts.get(r.wire, 0) + 1
    return ("mixed wires in turn (response i of wire i mod 4), each with its wire header: "
            + ", ".join(f"{w} {counts[w]} responses of {len(per_wire[w])} captures"
                        for w in workload.MIXED_WIRES if w in counts))


def checked(sec: Section, verdict: Check) -> None:
    """The mixed workload's correctness figures: every record of the Toolwire worker compared
    with ``toolwire.core.assemble(body, options)`` of its response."""
    sec.report("toolwire records checked against assemble(body, options)", verdict.expected,
               "records")
    sec.at_most("toolwire records not equal to assemble(body, options)", verdict.wrong, 0,
                "records (differ, missing or duplicated)",
                goal="0 (every record as toolwire.core.assemble makes it)")
    sec.notes["records_check"] = verdict.notes()


def all_latencies(run: LiveRun) -> list[float]:
    """Latencies, a missing record counting as infinitely late."""
    return run.latencies() + [float("inf")] * run.missing


def p99_ms(run: LiveRun) -> float:
    return percentile(all_latencies(run), 99) * 1000


def shown_ms(value: float, wait: float) -> Any:
    return f">{wait * 1000:.0f}" if math.isinf(value) else value


# --------------------------------------------------------------------------- output


def fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(sections: Sequence[Section], header: dict[str, Any]) -> str:
    rows = [("section", "figure", "value", "unit", "goal", "met")]
    for sec in sections:
        if sec.error is not None:
            rows.append((sec.name, "FAILED: " + sec.error.splitlines()[0][:90], "", "", "", ""))
            continue
        for f in sec.figures:
            met = "-" if f.met is None else ("yes" if f.met else "NO")
            rows.append((sec.name, f.name, fmt(f.value), f.unit, f.goal or "-", met))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = [f"{k}: {v}" for k, v in header.items()]
    lines.append("")
    for i, row in enumerate(rows):
        lines.append("  ".join(c.rjust(w) if j == 2 and i else c.ljust(w)
                               for j, (c, w) in enumerate(zip(row, widths, strict=True)))
                     .rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    for sec in sections:
        if sec.notes:
            lines.append("")
            lines.append(f"[{sec.name}] ({sec.seconds:.0f} s)")
            for k, v in sec.notes.items():
                text = v if isinstance(v, str) else json.dumps(v, separators=(", ", ": "))
                if len(text) > NOTE_WIDTH:
                    text = text[:NOTE_WIDTH] + " … (all of it in --json)"
                lines.append(f"  {k}: {text}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


@contextlib.contextmanager
def broker(workdir: Path) -> Iterator[tuple[str, str]]:
    """(bootstrap, where it came from): the configured cluster, else a private local broker
    stopped by its PID at the end."""
    configured = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if configured:
        yield configured, "KAFKA_BOOTSTRAP_SERVERS"
        return
    state = workdir / "broker"
    say(f"starting a local Kafka broker in {state}")
    info = local.start(state, heap="512m")
    say(f"broker {info.bootstrap} (pid {info.pid}, Kafka {info.kafka_version})")
    try:
        yield info.bootstrap, f"local broker, Kafka {info.kafka_version}, pid {info.pid}"
    finally:
        say(f"stopping the broker (pid {info.pid})")
        local.stop(state)


#: Settings fields that are names, paths or connection details, not behaviour under test.
_NOT_BEHAVIOUR = frozenset({"bootstrap", "app_id", "topic_chunks", "topic_assembled",
                            "topic_deadletter", "state_dir", "worker_name", "metrics_bind",
                            "security_protocol", "sasl_mechanism", "sasl_username",
                            "sasl_password", "sasl_password_file", "ssl_ca_file",
                            "ssl_cert_file", "ssl_key_file", "ssl_check_hostname",
                            "log_format"})


def effective_settings(overrides: dict[str, str]) -> str:
    """The worker's behaviour settings as it will read them (defaults and overrides)."""
    from toolwire.config.settings import Settings

    try:
        settings = Settings.from_env({**overrides, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    except ValueError as exc:
        return f"invalid: {exc}"
    parts = []
    for f in dataclasses.fields(settings):
        if f.name in _NOT_BEHAVIOUR:
            continue
        value = getattr(settings, f.name)
        if f.name == "partitions":
            value = "6 (12 in scale_out)"
        elif f.name == "limits":
            value = ",".join(f"{k}={v}" for k, v in dataclasses.asdict(value).items())
        parts.append(f"{f.name}={value}")
    return " ".join(parts)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ops/bench/harness.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="sections: " + ", ".join(SECTIONS))
    parser.add_argument("--short", action="store_true", help="small sizes, for CI")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the table as JSON")
    parser.add_argument("--only", metavar="SECTION,...", help="run only these sections")
    parser.add_argument("--worker-env", metavar="NAME=VALUE", action="append", default=[],
                        help="a setting of the worker under test (repeatable)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (logs, broker data)")
    parser.add_argument(
        "--workload", metavar="NAME[,NAME]", default="chat",
        help="the input: chat (default: Chat Completions captures, every section), mixed "
             "(the four wires interleaved, each message with its wire header, from the four "
             "corpora; runs " + ", ".join(s for s in SECTIONS if s in MIXED_SECTIONS)
             + " with the same goals and checks every record against "
             "toolwire.core.assemble(body, options)), or chat,mixed (both in one run; the "
             "mixed sections are named SECTION:mixed)")
    args = parser.parse_args(argv)
    args.workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    bad = [w for w in args.workloads if w not in workload.WORKLOADS]
    if bad or not args.workloads:
        parser.error(f"--workload {args.workload!r}: expected one or more of "
                     f"{', '.join(workload.WORKLOADS)}, comma-separated")
    chosen = list(SECTIONS)
    if args.only:
        chosen = [s.strip() for s in args.only.split(",") if s.strip()]
        unknown = [s for s in chosen if s not in SECTIONS]
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)}; known: "
                         f"{', '.join(SECTIONS)}")
        if "chat" not in args.workloads:
            chat_only = [s for s in chosen if s not in MIXED_SECTIONS]
            if chat_only:
                parser.error(f"section(s) {', '.join(chat_only)} run on the chat workload "
                             f"only; the mixed workload runs "
                             f"{', '.join(s for s in SECTIONS if s in MIXED_SECTIONS)}")
    args.sections = [s if wl == "chat" else f"{s}:{wl}"
                     for s in RUN_ORDER if s in chosen
                     for wl in workload.WORKLOADS if wl in args.workloads
                     and (wl == "chat" or s in MIXED_SECTIONS)]
    error = procs.worker_env_error(args.worker_env, CONTROLLED)
    if error is not None:
        parser.error(error)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = procs.worker_settings(args.worker_env, CONTROLLED)
    # SIGTERM unwinds like Ctrl-C (KeyboardInterrupt, which asyncio lets through), so that
    # everything started is stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-bench-"))
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    sections: list[Section] = []
    failed = False
    try:
        with broker(workdir) as (bootstrap, source):
            bench = Bench(args, bootstrap, workdir, settings)
            try:
                for name in args.sections:
                    sec = Section(name)
                    if sec.base not in LIVE:
                        bench.stop_live()
                    began = time.monotonic()
                    say(f"== {name}")
                    try:
                        getattr(bench, sec.base)(sec)
                    except Exception as exc:
                        sec.error = f"{type(exc).__name__}: {exc}"
                        failed = True
                        say(f"{name} FAILED:\n{traceback.format_exc()}")
                        for p in procs.stop_all():
                            say(f"stopped {p}")
                        bench._live = None
                    sec.seconds = time.monotonic() - began
                    sections.append(sec)
            finally:
                bench.stop_live()
                for p in procs.stop_all():
                    say(f"stopped {p}")
                if source == "KAFKA_BOOTSTRAP_SERVERS":
                    with contextlib.suppress(Exception):
                        gone = asyncio.run(kafka_io.delete_topics(
                            bootstrap, re.escape(bench.prefix) + ".*"))
                        say(f"deleted the run's {gone} topics")
    except KeyboardInterrupt:
        say("interrupted: everything started was stopped")
        return 130
    except local.BrokerError as exc:
        say(f"the Kafka broker could not be started: {exc}")
        failed = True
        return 2
    finally:
        for p in procs.stop_all():
            say(f"stopped {p}")
        if args.keep or failed:
            say(f"logs and data kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    header = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "short (CI: checks the harness, not the figures)" if args.short else "full",
        **({} if args.workloads == ["chat"] else {"workloads": ",".join(args.workloads)}),
        "cores": f"{os.cpu_count()} logical, {psutil.cpu_count(logical=False)} physical",
        "load average at start": " ".join(f"{x:.2f}" for x in load_before),
        "python": platform.python_version(),
        "kafka": source,
        "worker settings under test": (" ".join(f"{k}={v}" for k, v in sorted(settings.items()))
                                       or "defaults (no TOOLWIRE_* overrides)"),
        "worker settings, effective": effective_settings(settings),
        "worker env set by the harness": "KAFKA_BOOTSTRAP_SERVERS, TOOLWIRE_APP_ID, "
                                         "TOOLWIRE_TOPIC_*, TOOLWIRE_PARTITIONS, "
                                         "TOOLWIRE_STATE_DIR (unique per run)",
    }
    sections.sort(key=lambda sec: (SECTIONS.index(sec.base),
                                   workload.WORKLOADS.index(sec.workload)))
    print(table(sections, header), flush=True)
    if args.json is not None:
        data = {**header, "short": args.short, "sections": [dataclasses.asdict(s)
                                                             for s in sections]}
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n")
        say(f"wrote {args.json}")
    missed = [f.name for s in sections for f in s.figures if f.met is False]
    if failed:
        return 1
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
