"""Toolwire's pure core beside the libraries people use, on the same streams in the same run.

Why this exists: "≤ 3 µs per event, flat from 150 to 9,600 events" means little on its own. A
figure from another machine or another day cannot be compared with it, so every contender runs
here, in one process, on the same real provider captures (``tests/core/corpus``), interleaved
repeat by repeat so a noisy neighbour on a shared machine slows all of them alike, and each is
also given as a ratio to the floor of ``orjson.loads`` on each event's payload measured in the
same run.

Contenders, each through its public API:

* ``toolwire``: ``toolwire.core.assemble(body, options)``: raw SSE body bytes → framing → orjson
  → ``Assembler.feed`` → ``end`` → the record (``decide``). Framing and parsing are included.
* ``openai``: ``openai.lib.streaming.chat.ChatCompletionStreamState``. Per event: orjson, then
  ``ChatCompletionChunk.construct(**data)`` (what the client does by default, without strict
  validation; building the pydantic chunk *is* timed, since ``handle_chunk`` needs it), then
  ``handle_chunk``; the result is ``get_final_completion()``.
* ``litellm``: ``litellm.stream_chunk_builder(chunks)`` on the orjson dicts of one response (the
  cheapest input it accepts; its own stream wrapper would first build a ``ModelResponseStream``
  per chunk). It computes usage when the stream carries none, with its bundled tokenizers.
* ``langchain``: ``langchain_core.messages.AIMessageChunk`` built per event from the delta as
  langchain-openai does (content, ``tool_call_chunks`` of name/args/id/index), merged with ``+``
  one event at a time, one accumulator per choice.
* ``orjson_floor``: ``orjson.loads`` of each payload alone, the result dropped.
* ``toolwire_feed`` (a diagnostic, not a contender): ``Assembler.feed`` and ``end`` without the
  decision and its record, to show how much of Toolwire's cost per event on these short
  responses (about four events each) is the per-response decision rather than the event path.

The libraries get the payloads already framed (framing is free for them and not timed), so
their figures are lower bounds and every ratio to Toolwire understates Toolwire's advantage.

Streams: every capture of the corpus that every contender ingests without raising and that has
at least one event; the rest are listed with the exception each library raised. Sizes of 150,
600, 2,400 and 9,600 events are made of whole captures, cycled in name order as separate
responses (the first response boundary at or past the size; the actual count is printed).

Timing: ``time.perf_counter_ns`` around a whole workload, with ``process_time_ns`` beside it as
a diagnostic that time spent descheduled on a shared machine does not inflate. Best of N repeats
is the figure (the repeat least disturbed by other work); the median is in the notes. Contenders
take turns within each repeat, so a noisy neighbour slows all of them alike; each timed run is
preceded by ``gc.collect()`` and then an untimed pass of 150 events, so it starts with warm
caches and none of the previous contender's garbage (see ``time_once``). GC stays enabled while
timing: allocation-heavy libraries pay for their garbage in production too. ``gc.freeze()``
after the imports, and again after the first pass, moves the import-time heap (litellm's is
large) and what the libraries build lazily out of the collector's reach: otherwise each full
collection would walk it and charge whichever contender triggered it.

Agreement: for each capture each library ingests, its tool calls (choice, id, name, arguments;
in any order) are compared with Toolwire's (the executable, withheld and dead-lettered calls
alike). Captures that are well-behaved (Toolwire repaired nothing and every call has its id and
name) must agree; on the others a difference is a finding, printed in full: the library may
be wrong (an id doubled) or only different (a split name Toolwire refuses to concatenate).

    python ops/bench/libraries.py [--short] [--json]

``--short`` runs two small sizes with few repeats (a CI check that the script works, < 20 s).
``--json`` puts every timing and the per-capture agreement into the notes of the BENCH line.
The last line of stdout is always ``BENCH {...}``; the exit code is 0 even when a goal is not
met, non-zero only on a crash or a missing library.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import itertools
import json
import logging
import os
import platform
import statistics
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from time import perf_counter_ns, process_time_ns
from typing import Protocol, cast

import orjson

from toolwire.core import Assembler, Options, Record, assemble
from toolwire.core.framing import Framer

SIZES = (150, 600, 2400, 9600)
SHORT_SIZES = (150, 600)
REPEATS = 7
SHORT_REPEATS = 3
#: Events of the untimed pass each contender makes right before each of its timed runs.
WARM_EVENTS = 150
GOAL_US = 3.0
GOAL_FLATNESS = 1.5
LIBRARIES = ("openai", "litellm", "langchain")

#: One tool call as compared across contenders: (choice, id, name, arguments).
CallKey = tuple[object, object, object, str]


class CaptureLike(Protocol):
    """What this script reads of ``tests.core.captures.Capture``."""

    name: str
    body: bytes
    options: Options


@dataclass(frozen=True, slots=True)
class Response:
    """One capture: the raw body for Toolwire and its framed payloads for everyone else."""

    name: str
    body: bytes
    options: Options
    payloads: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Contender:
    """A way to turn one response into its result, and to read the tool calls of that result."""

    key: str
    label: str
    run: Callable[[Response], object]
    #: ``None`` for the floor and the diagnostic, whose results hold no calls to compare.
    calls: Callable[[object], list[CallKey]] | None


# -- the corpus ---------------------------------------------------------------------------------


def load_corpus() -> list[Response]:
    """The captures of ``tests/core/captures.py``, framed once by Toolwire's own framer.

    Imported by name (the repository root on ``sys.path``) rather than copied, so the benchmark
    always runs on the corpus the tests run on.
    """
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module("tests.core.captures")
    captures = cast(list[CaptureLike], module.CAPTURES)
    responses = []
    for capture in captures:
        framer = Framer(capture.options.limits.max_line_bytes)
        payloads = tuple(framer.feed(capture.body))
        responses.append(Response(capture.name, capture.body, capture.options, payloads))
    return responses


# -- contenders ---------------------------------------------------------------------------------


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _key(choice: object, call_id: object, name: object, arguments: object) -> CallKey:
    """Absent arguments count as ``""`` (Toolwire's empty arguments); ids are never normalized."""
    return (choice, call_id, name, "" if arguments is None else str(arguments))


def toolwire_calls(result: object) -> list[CallKey]:
    record = cast(Record, result)
    if record["outcome"] == "assembled":
        calls = [*record["tool_calls"], *record["withheld_tool_calls"]]
    else:
        calls = [*record["calls"]]
    return [_key(c["choice"], c["id"], c["name"], c["arguments"]) for c in calls]


def model_calls(result: object) -> list[CallKey]:
    """Tool calls of a chat-completion model object (openai's and litellm's share the shape)."""
    keys = []
    for choice in _items(getattr(result, "choices", None)):
        message = getattr(choice, "message", None)
        for call in _items(getattr(message, "tool_calls", None)):
            function = getattr(call, "function", None)
            keys.append(_key(getattr(choice, "index", None), getattr(call, "id", None),
                             getattr(function, "name", None),
                             getattr(function, "arguments", None)))
    return keys


def _toolwire(response: Response) -> object:
    return assemble(response.body, response.options)


def _toolwire_feed(response: Response) -> object:
    asm = Assembler(response.options.limits)
    asm.feed(response.body)
    asm.end()
    return asm


def _floor(response: Response) -> object:
    loads = orjson.loads
    for payload in response.payloads:
        loads(payload)
    return None


def load_contenders() -> list[Contender]:
    """Import the libraries and wrap each one's public API; exit with a hint if one is missing.

    The environment is set first: without it litellm fetches its model price map and Hugging
    Face tokenizers over the network at import and on first use, which a benchmark must not
    time (and a machine without network would wait on).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import litellm
        from langchain_core.messages import AIMessageChunk
        from langchain_core.messages.tool import tool_call_chunk
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError as exc:
        raise SystemExit(
            f"ops/bench/libraries.py: cannot import {exc.name or exc}: the libraries compared "
            "are not installed; run `pip install -e '.[bench]'`") from exc
    # litellm logs a warning per response on non-standard finish reasons, and an error with a
    # traceback for every chunk list it cannot build; the probe below reports those itself.
    litellm.suppress_debug_info = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).setLevel(logging.CRITICAL)

    loads = orjson.loads
    construct = ChatCompletionChunk.construct
    stream_chunk_builder = litellm.stream_chunk_builder

    def openai_run(response: Response) -> object:
        state: ChatCompletionStreamState[object] = ChatCompletionStreamState()
        for payload in response.payloads:
            state.handle_chunk(construct(**loads(payload)))
        return state.get_final_completion()

    def litellm_run(response: Response) -> object:
        return stream_chunk_builder([loads(payload) for payload in response.payloads])

    def langchain_run(response: Response) -> object:
        merged: dict[object, AIMessageChunk] = {}
        for payload in response.payloads:
            for position, choice in enumerate(loads(payload).get("choices") or ()):
                delta = choice.get("delta") or {}
                chunks = []
                for call in delta.get("tool_calls") or ():
                    function = call.get("function") or {}
                    chunks.append(tool_call_chunk(
                        name=function.get("name"), args=function.get("arguments"),
                        id=call.get("id"), index=call.get("index")))
                message = AIMessageChunk(content=delta.get("content") or "",
                                         tool_call_chunks=chunks)
                index = choice.get("index", position)
                previous = merged.get(index)
                merged[index] = message if previous is None else previous + message
        return merged

    def langchain_calls(result: object) -> list[CallKey]:
        assert isinstance(result, dict)
        return [_key(index, chunk.get("id"), chunk.get("name"), chunk.get("args"))
                for index, message in result.items()
                for chunk in message.tool_call_chunks]

    def version(dist: str) -> str:
        return metadata.version(dist)

    return [
        Contender("toolwire", f"toolwire {version('toolwire')} core.assemble (bytes in)",
                  _toolwire, toolwire_calls),
        Contender("toolwire_feed", "toolwire core Assembler.feed + end (no decision, no record)",
                  _toolwire_feed, None),
        Contender("openai", f"openai {version('openai')} ChatCompletionStreamState",
                  openai_run, model_calls),
        Contender("litellm", f"litellm {version('litellm')} stream_chunk_builder",
                  litellm_run, model_calls),
        Contender("langchain", f"langchain-core {version('langchain-core')} AIMessageChunk +",
                  langchain_run, langchain_calls),
        Contender("orjson_floor", f"orjson {version('orjson')} loads per payload",
                  _floor, None),
    ]


# -- ingestion and agreement --------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    """The exception in one line, with the one it wraps (litellm wraps all in APIError)."""
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:90] if str(exc) else ''}"
    inner = exc.__cause__ or exc.__context__
    if inner is not None and type(inner) is not type(exc):
        first = str(inner).strip().splitlines()[0][:90] if str(inner) else ""
        text += f" (from {type(inner).__name__}: {first})"
    return text


@dataclass(slots=True)
class Probe:
    """What one pass over the corpus showed: who refused what, and where calls differ."""

    #: capture → contender → the exception it raised.
    refused: dict[str, dict[str, str]]
    #: capture → library → "agree" | "differ" | "refused".
    verdicts: dict[str, dict[str, str]]
    well_behaved: set[str]
    mismatches: list[dict[str, object]]
    #: Captures without any event (only ``[DONE]``): nothing to time or compare.
    empty: list[str]


def _well_behaved(record: Record) -> bool:
    if record["outcome"] != "assembled" or any(record["repairs"].values()):
        return False
    calls = [*record["tool_calls"], *record["withheld_tool_calls"]]
    return all(c["id"] and c["name"] for c in calls)


def probe(corpus: Sequence[Response], contenders: Sequence[Contender]) -> Probe:
    """Run every contender once on every capture: the warm-up, and the ingestion check."""
    result = Probe({}, {}, set(), [], [])
    toolwire = contenders[0]
    assert toolwire.key == "toolwire" and toolwire.calls is not None
    for response in corpus:
        if not response.payloads:
            result.empty.append(response.name)
            continue
        record = cast(Record, toolwire.run(response))
        if _well_behaved(record):
            result.well_behaved.add(response.name)
        expected = sorted(toolwire.calls(record), key=repr)
        verdicts = result.verdicts[response.name] = {}
        for contender in contenders[1:]:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = contender.run(response)
                    calls = None if contender.calls is None else contender.calls(out)
            except Exception as exc:
                result.refused.setdefault(response.name, {})[contender.key] = _describe(exc)
                if contender.calls is not None:
                    verdicts[contender.key] = "refused"
                continue
            if calls is None:
                continue
            got = sorted(calls, key=repr)
            verdicts[contender.key] = "agree" if got == expected else "differ"
            if got != expected:
                result.mismatches.append({
                    "capture": response.name, "library": contender.key,
                    "well_behaved": response.name in result.well_behaved,
                    "toolwire": [list(k) for k in expected],
                    "library_calls": [list(k) for k in got],
                })
    return result


# -- timing -------------------------------------------------------------------------------------


def workload(timed: Sequence[Response], events: int) -> list[Response]:
    """Whole responses, cycled in name order, up to the first boundary at or past ``events``."""
    out: list[Response] = []
    count = 0
    for response in itertools.cycle(timed):
        if count >= events:
            break
        out.append(response)
        count += len(response.payloads)
    return out


def time_once(contender: Contender, responses: Sequence[Response],
              warm: Sequence[Response] = ()) -> tuple[int, int]:
    """Wall and CPU nanoseconds of one pass over ``responses``, after an untimed pass on ``warm``.

    The wall clock is the figure; the process CPU time beside it is what the run cost this
    process, without the time it spent descheduled while other work had the cores. The warm
    pass is there because contenders take turns: the first responses after another library ran
    would otherwise pay for caches and allocator arenas that library left cold, a fixed cost per
    run that makes small sizes look slower per event (Toolwire alone in a worker never pays it).
    """
    run = contender.run
    gc.collect()  # before the warm pass: a collection walks the heap and leaves caches cold
    for response in warm:
        run(response)
    cpu = process_time_ns()
    start = perf_counter_ns()
    for response in responses:
        run(response)
    wall = perf_counter_ns() - start
    return wall, process_time_ns() - cpu


def long_stream(found: Probe, corpus: Sequence[Response], events: int) -> Response:
    """One response of ``events`` events: a well-behaved capture with a tool call, its
    argument deltas repeated in the middle (every library concatenates them), its first event
    (the identity) and its last ones (the finish) kept. The goal's "flat from 150 to 9,600
    events" is about one stream growing, which a merge that copies what it has so far fails."""
    base = max((r for r in corpus if r.name in found.well_behaved and r.name not in found.refused
                and b'"arguments"' in r.body and len(r.payloads) >= 4),
               key=lambda r: (len(r.payloads), r.name))  # the longest: the most typical deltas
    head, middle, tail = base.payloads[:1], base.payloads[1:-1], base.payloads[-1:]
    body = [*head, *itertools.islice(itertools.cycle(middle), max(0, events - 2)), *tail]
    raw = b"".join(b"data: " + p + b"\n\n" for p in body) + b"data: [DONE]\n\n"
    return Response(f"{base.name} x{len(body)}", raw, base.options, tuple(body))


def measure_streams(streams: Sequence[Response], contenders: Sequence[Contender],
                    warm: Sequence[Response], repeats: int) -> list[Size]:
    """Each single long stream, each repeat, every contender once (rotated per repeat)."""
    results = []
    for stream in streams:
        runs: dict[str, list[int]] = {c.key: [] for c in contenders}
        cpu: dict[str, list[int]] = {c.key: [] for c in contenders}
        for rep in range(repeats):
            shift = rep % len(contenders)
            for contender in [*contenders[shift:], *contenders[:shift]]:
                wall, used = time_once(contender, [stream], warm)
                runs[contender.key].append(wall)
                cpu[contender.key].append(used)
        results.append(Size(len(stream.payloads), len(stream.payloads), 1, runs, cpu))
    return results


@dataclass(frozen=True, slots=True)
class Size:
    target: int
    events: int
    responses: int
    #: contender → wall-clock nanoseconds of each repeat.
    runs: dict[str, list[int]]
    #: contender → process CPU nanoseconds of each repeat.
    cpu: dict[str, list[int]]

    def best_us(self, key: str) -> float:
        return min(self.runs[key]) / self.events / 1000

    def median_us(self, key: str) -> float:
        return statistics.median(self.runs[key]) / self.events / 1000

    def best_cpu_us(self, key: str) -> float:
        return min(self.cpu[key]) / self.events / 1000


def measure(timed: Sequence[Response], contenders: Sequence[Contender], sizes: Sequence[int],
            repeats: int) -> list[Size]:
    """Each size, each repeat, every contender once, in an order rotated per repeat."""
    warm = workload(timed, WARM_EVENTS)
    results = []
    for target in sizes:
        responses = workload(timed, target)
        events = sum(len(r.payloads) for r in responses)
        runs: dict[str, list[int]] = {c.key: [] for c in contenders}
        cpu: dict[str, list[int]] = {c.key: [] for c in contenders}
        for rep in range(repeats):
            shift = rep % len(contenders)
            for contender in [*contenders[shift:], *contenders[:shift]]:
                wall, used = time_once(contender, responses, warm)
                runs[contender.key].append(wall)
                cpu[contender.key].append(used)
        results.append(Size(target, events, len(responses), runs, cpu))
    return results


# -- report -------------------------------------------------------------------------------------


def _fmt(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def report(args: argparse.Namespace, corpus: Sequence[Response], timed: Sequence[Response],
           contenders: Sequence[Contender], found: Probe, sizes: Sequence[Size],
           repeats: int, streams: Sequence[Size], stream_name: str) -> dict[str, object]:
    """Print the tables and return the BENCH object."""
    keys = [c.key for c in contenders]
    print(f"Toolwire core vs libraries: python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs (shared: other work runs concurrently), "
          f"load average {os.getloadavg()[0]:.2f}, best of {repeats}, perf_counter_ns")
    for contender in contenders:
        print(f"  {contender.key:<13} {contender.label}")
    print(f"streams: {len(timed)} of {len(corpus)} captures, cycled as separate responses; "
          "Toolwire from raw bytes, the libraries from pre-framed payloads (framing untimed)")
    print()
    print("µs per event (best of repeats)")
    head = f"{'events':>7} {'responses':>9} " + " ".join(f"{k:>13}" for k in keys)
    print(head)
    for size in sizes:
        print(f"{size.events:>7} {size.responses:>9} "
              + " ".join(f"{_fmt(size.best_us(k)):>13}" for k in keys))
    print()
    print("ratio to the orjson floor of the same run (and to Toolwire, at the largest size)")
    print(f"{'events':>7} {'':>9} " + " ".join(f"{k:>13}" for k in keys[:-1]))
    for size in sizes:
        floor = size.best_us("orjson_floor")
        print(f"{size.events:>7} {'':>9} "
              + " ".join(f"{_fmt(size.best_us(k) / floor) + 'x':>13}" for k in keys[:-1]))
    last = sizes[-1]
    tw = last.best_us("toolwire")
    print(f"{'vs toolwire':>17} "
          + " ".join(f"{_fmt(last.best_us(k) / tw) + 'x':>13}" for k in keys[:-1]))
    print()
    print("CPU µs per event (process time, best of repeats: without the time spent descheduled)")
    print(head)
    for size in sizes:
        print(f"{size.events:>7} {size.responses:>9} "
              + " ".join(f"{_fmt(size.best_cpu_us(k)):>13}" for k in keys))

    print()
    print(f"one stream growing ({stream_name.rsplit(' ', 1)[0]}, its argument deltas repeated):"
          " µs per event (best of repeats)")
    print(f"{'events':>7} {'':>9} " + " ".join(f"{k:>13}" for k in keys))
    for size in streams:
        print(f"{size.events:>7} {'':>9} "
              + " ".join(f"{_fmt(size.best_us(k)):>13}" for k in keys))
    corpus_us = [s.best_us("toolwire") for s in sizes]
    tw_us = [s.best_us("toolwire") for s in streams]
    tw_max = max(tw_us)
    flatness = max(tw_us) / min(tw_us)
    tw_cpu = [s.best_cpu_us("toolwire") for s in streams]
    print()
    print(f"toolwire, one stream: max {tw_max:.2f} µs/event (goal ≤ {GOAL_US:g}: "
          f"{'met' if tw_max <= GOAL_US else 'NOT met'}), flatness max/min {flatness:.2f} over "
          f"{streams[0].events}..{streams[-1].events} events (goal ≤ {GOAL_FLATNESS:g}: "
          f"{'met' if flatness <= GOAL_FLATNESS else 'NOT met'}); in CPU time: max "
          f"{max(tw_cpu):.2f} µs/event, flatness {max(tw_cpu) / min(tw_cpu):.2f}")
    print(f"toolwire, real captures as separate responses (about "
          f"{sizes[-1].events / sizes[-1].responses:.1f} events each, so the per-response "
          f"decision and record weigh in): max {max(corpus_us):.2f} µs/event")

    # -- agreement
    print()
    print("tool calls vs Toolwire's (agree / DIFFER / refused = raised; well-behaved = Toolwire "
          "repaired nothing and every call has id and name)")
    print(f"{'capture':<48} {'class':<12} " + " ".join(f"{k:<10}" for k in LIBRARIES))
    for response in corpus:
        if response.name in found.empty:
            continue
        verdicts = found.verdicts[response.name]
        cls = "well-behaved" if response.name in found.well_behaved else "quirky"
        cells = [verdicts.get(k, "-") for k in LIBRARIES]
        print(f"{response.name:<48} {cls:<12} "
              + " ".join(f"{c.upper() if c == 'differ' else c:<10}" for c in cells))
    agreement: dict[str, dict[str, int]] = {}
    for lib in LIBRARIES:
        counts = {"agree": 0, "differ": 0, "refused": 0, "agree_well_behaved": 0,
                  "differ_well_behaved": 0, "refused_well_behaved": 0}
        for name, verdicts in found.verdicts.items():
            verdict = verdicts[lib]
            counts[verdict] += 1
            if name in found.well_behaved:
                counts[f"{verdict}_well_behaved"] += 1
        agreement[lib] = counts
    print()
    print(f"{len(found.well_behaved)} well-behaved captures; per library: agree / differ / "
          "refused (well-behaved in brackets)")
    for lib, c in agreement.items():
        print(f"  {lib:<10} {c['agree']:>3} / {c['differ']:>3} / {c['refused']:>3}   "
              f"[{c['agree_well_behaved']} / {c['differ_well_behaved']} / "
              f"{c['refused_well_behaved']}]")
    if found.mismatches:
        print()
        print("differences, toolwire then library (a finding either way: read each one)")
        for m in found.mismatches:
            flag = "WELL-BEHAVED " if m["well_behaved"] else ""
            print(f"  {flag}{m['capture']} [{m['library']}]")
            print(f"    toolwire: {_short(m['toolwire'])}")
            print(f"    {m['library']:<8}: {_short(m['library_calls'])}")
    print()
    print("excluded from timing (some contender raised; or no event):")
    for name in found.empty:
        print(f"  {name}: no event (only [DONE])")
    for name, by in found.refused.items():
        print(f"  {name}: " + "; ".join(f"{k}: {v}" for k, v in by.items()))

    # -- BENCH object
    figures: list[dict[str, object]] = [
        {"name": "toolwire_us_per_event_max", "value": round(tw_max, 3), "unit": "µs/event",
         "goal": f"<= {GOAL_US:g}", "met": tw_max <= GOAL_US},
        {"name": "toolwire_flatness", "value": round(flatness, 3),
         "unit": f"max/min µs per event, one stream of {streams[0].events}.."
                 f"{streams[-1].events} events",
         "goal": f"<= {GOAL_FLATNESS:g}", "met": flatness <= GOAL_FLATNESS},
        {"name": "toolwire_corpus_us_per_event_max", "value": round(max(corpus_us), 3),
         "unit": f"µs/event, real captures as separate responses (about "
                 f"{sizes[-1].events / sizes[-1].responses:.1f} events each)",
         "goal": None, "met": None},
        {"name": "toolwire_feed_us_per_event_max",
         "value": round(max(s.best_us("toolwire_feed") for s in sizes), 3),
         "unit": "µs/event, feed + end without the decision (diagnostic)",
         "goal": None, "met": None},
        {"name": "toolwire_cpu_us_per_event_max", "value": round(max(tw_cpu), 3),
         "unit": "CPU µs/event, process time (diagnostic: not slowed by descheduling)",
         "goal": None, "met": None},
        {"name": "toolwire_cpu_flatness", "value": round(max(tw_cpu) / min(tw_cpu), 3),
         "unit": "max/min CPU µs per event (diagnostic)", "goal": None, "met": None},
    ]
    longest = streams[-1]
    for key in keys:
        figures.append({"name": f"{key}_us_per_event_one_stream_{longest.events}",
                        "value": round(longest.best_us(key), 3), "unit": "µs/event",
                        "goal": None, "met": None})
        figures.append({"name": f"{key}_stream_flatness",
                        "value": round(max(s.best_us(key) for s in streams)
                                       / min(s.best_us(key) for s in streams), 2),
                        "unit": f"max/min µs per event, {streams[0].events}.."
                                f"{streams[-1].events} events in one stream",
                        "goal": None, "met": None})
    for key in keys:
        figures.append({"name": f"{key}_us_per_event_{last.target}",
                        "value": round(last.best_us(key), 3), "unit": "µs/event",
                        "goal": None, "met": None})
    floor = last.best_us("orjson_floor")
    for key in keys[:-1]:
        figures.append({"name": f"{key}_ratio_to_floor_{last.target}",
                        "value": round(last.best_us(key) / floor, 2), "unit": "x orjson floor",
                        "goal": None, "met": None})
    for lib, c in agreement.items():
        wb = len(found.well_behaved)
        figures.append({
            "name": f"{lib}_agrees_well_behaved", "value": c["agree_well_behaved"],
            "unit": f"of {wb} well-behaved captures ({c['differ_well_behaved']} differ, "
                    f"{c['refused_well_behaved']} refused)",
            "goal": "no well-behaved capture differs", "met": c["differ_well_behaved"] == 0})
        figures.append({"name": f"{lib}_agrees_all", "value": c["agree"],
                        "unit": f"of {len(found.verdicts)} captures ({c['differ']} differ, "
                                f"{c['refused']} refused)", "goal": None, "met": None})
    figures.append({"name": "timed_captures", "value": len(timed), "unit": "captures",
                    "goal": None, "met": None})
    notes: dict[str, object] = {
        "machine": f"{os.cpu_count()} CPUs shared with concurrent work; load average "
                   f"{os.getloadavg()[0]:.2f}",
        "python": platform.python_version(),
        "contenders": {c.key: c.label for c in contenders},
        "method": "best of repeats (median in medians); perf_counter_ns around whole "
                  "workloads; warm-up pass first; gc enabled, collected before each run, "
                  "import-time heap frozen; contenders interleaved per repeat",
        "framing": "toolwire from raw body bytes (framing+parsing timed); libraries from "
                   "pre-framed payloads (orjson + their chunk construction + merge timed)",
        "short": bool(args.short),
        "sizes": [{"target": s.target, "events": s.events, "responses": s.responses}
                  for s in sizes],
        "load_average_end": round(os.getloadavg()[0], 2),
        "best_cpu_us_per_event": {str(s.events): {k: round(s.best_cpu_us(k), 3) for k in keys}
                                  for s in sizes},
        "medians_us_per_event": {str(s.events): {k: round(s.median_us(k), 3) for k in keys}
                                 for s in sizes},
        "excluded": {**{n: "no event" for n in found.empty},
                     **{n: "; ".join(f"{k}: {v}" for k, v in by.items())
                        for n, by in found.refused.items()}},
        "mismatches": [f"{m['capture']} [{m['library']}]"
                       + (" (well-behaved)" if m["well_behaved"] else "")
                       for m in found.mismatches],
        "agreement": agreement,
    }
    if args.json:
        notes["runs_ns"] = {str(s.events): s.runs for s in sizes}
        notes["cpu_ns"] = {str(s.events): s.cpu for s in sizes}
        notes["best_us_per_event"] = {str(s.events): {k: round(s.best_us(k), 3) for k in keys}
                                      for s in sizes}
        notes["verdicts"] = found.verdicts
        notes["mismatch_details"] = found.mismatches
    return {"section": "libraries", "figures": figures, "notes": notes}


def _short(calls: object, width: int = 160) -> str:
    text = repr(calls)
    return text if len(text) <= width else text[:width - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="The last line of stdout is BENCH followed by one JSON object.")
    parser.add_argument("--short", action="store_true",
                        help=f"sizes {SHORT_SIZES}, best of {SHORT_REPEATS} (a quick check)")
    parser.add_argument("--json", action="store_true",
                        help="every timing and verdict in the notes of the BENCH line")
    args = parser.parse_args(argv)
    sizes = SHORT_SIZES if args.short else SIZES
    repeats = SHORT_REPEATS if args.short else REPEATS

    corpus = load_corpus()
    contenders = load_contenders()
    gc.collect()
    gc.freeze()
    found = probe(corpus, contenders)
    timed = [r for r in corpus if r.payloads and r.name not in found.refused]
    if not timed:
        raise SystemExit("ops/bench/libraries.py: no capture is ingested by every contender")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for contender in contenders:  # warm-up: one untimed pass over the timed corpus each
            time_once(contender, timed)
        gc.collect()
        gc.freeze()  # and what the libraries built lazily on first use (caches, validators)
        results = measure(timed, contenders, sizes, repeats)
        streams = [long_stream(found, corpus, n) for n in sizes]
        grown = measure_streams(streams, contenders, workload(timed, WARM_EVENTS), repeats)
    bench = report(args, corpus, timed, contenders, found, results, repeats, grown,
                   streams[0].name)
    sys.stdout.flush()
    print("BENCH " + json.dumps(bench, ensure_ascii=False, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
