"""µs per event of every wire's assembly on one long stream, growing from 150 to 9,600 events.

Why: issue 13 holds every wire to the Chat Completions goal, ≤ 3 µs per event with framing and
parsing, and flat as the stream grows (a cost per event that grows with the stream would be a
walk over what came before). One script measures the four wires the same way, so their figures
compare.

What is timed: ``toolwire.core.assemble(slices, Options(wire=W))`` on one response's raw body,
cut into slices of 64 KiB (``toolwire.publish``'s coalescing bound: no message a worker reads is
bigger), so framing, orjson, the wire's walk, the decision and its record are all inside it,
divided by the number of events. Beside it, in the same run and interleaved with it: the floor
(``orjson.loads`` of each event's payload alone, pre-framed) and, as a diagnostic, the whole
body in one slice (a 3.7 MB body at once costs more per event in memory traffic than the
worker ever pays). Best of ``--repeats`` (the run least disturbed by other work; the median
beside it), ``gc.collect()`` before each run, the import-time heap frozen.

The streams, one per wire, OpenRouter's reasoning shape of Chat Completions and two more shapes
of Gemini (``ops/bench/wire_*.py``): ``openai-chat``, ``openrouter-reasoning`` (a
``reasoning_details`` piece merged on most events), ``anthropic-messages``, ``openai-responses``,
``gemini-api``,
``vertex-streamed-text`` (Vertex's streamed arguments, pieces of one string) and
``vertex-partial-args`` (the worst case for JSON paths: a new path every other event).
Each stream's record is checked (assembled, with its calls) before it is timed.

    .venv/bin/python ops/bench/wires.py [--short] [--repeats N] [--stream NAME,...] [--json]

``--json`` ends the output with one ``BENCH {json}`` line (figures with their goals, notes),
which ``ops/bench/harness.py``'s ``wires`` section reads. Exit 0 whatever the figures: they
are reported, not judged here.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from base64 import b64decode
from collections.abc import Callable
from typing import Any, Final

import orjson
import wire_anthropic
import wire_bedrock
import wire_chat
import wire_gemini
import wire_ollama
import wire_responses

from toolwire.core import Options, assemble
from toolwire.publish import DEFAULT_COALESCE_BYTES
from toolwire.publish._slicing import framing_of

SIZES: Final = (150, 600, 2400, 9600)
SHORT_SIZES: Final = (150, 600)
GOAL_US: Final = 3.0
GOAL_FLATNESS: Final = 1.5
#: Each stream: its wire, how to build it, and how many client calls its record holds.
STREAMS: Final[dict[str, tuple[str, Callable[[int], bytes], Callable[[int], int]]]] = {
    name: (wire, make, calls)
    for wire, streams in (("openai-chat", wire_chat.STREAMS),
                          ("anthropic-messages", wire_anthropic.STREAMS),
                          ("openai-responses", wire_responses.STREAMS),
                          ("gemini", wire_gemini.STREAMS),
                          ("ollama-chat", wire_ollama.STREAMS),
                          ("bedrock-converse", wire_bedrock.CONVERSE_STREAMS),
                          ("bedrock-invoke", wire_bedrock.INVOKE_STREAMS))
    for name, (make, calls) in streams.items()}


def _slices(body: bytes) -> list[bytes]:
    return [body[i:i + DEFAULT_COALESCE_BYTES]
            for i in range(0, len(body), DEFAULT_COALESCE_BYTES)]


def _loads_each(payloads: list[bytes]) -> None:
    for payload in payloads:
        orjson.loads(payload)


def _loads_each_carried(payloads: list[bytes]) -> None:
    """The floor of a wire whose payload carries another event (``bedrock-invoke``: each
    chunk's ``bytes``, base64 of one Anthropic event): the payload, its base64 and the event
    inside, each read once."""
    for payload in payloads:
        orjson.loads(b64decode(orjson.loads(payload)["bytes"]))


#: The orjson floor of each wire whose events are not read by parsing their payload alone.
FLOORS: Final[dict[str, Callable[[list[bytes]], None]]] = {
    "bedrock-invoke": _loads_each_carried}


def _timed(run: Callable[[], object]) -> int:
    gc.collect()
    start = time.perf_counter_ns()
    run()
    return time.perf_counter_ns() - start


class Row:
    """One stream at one size: nanoseconds per run of each measurement."""

    def __init__(self, events: int, size: int) -> None:
        self.events = events
        self.bytes = size
        self.runs: dict[str, list[int]] = {"sliced": [], "whole": [], "floor": []}

    def best(self, kind: str) -> float:
        return min(self.runs[kind]) / self.events / 1000

    def median(self, kind: str) -> float:
        return statistics.median(self.runs[kind]) / self.events / 1000


def measure(name: str, size: int, repeats: int) -> Row:
    """Time one stream at one size, the three measurements interleaved."""
    wire, make, calls = STREAMS[name]
    options = Options(wire=wire)
    body = make(size)
    record = assemble(_slices(body), options)
    if (record["outcome"] != "assembled" or len(record["tool_calls"]) != calls(size)
            or record != assemble(body, options)):
        raise SystemExit(f"ops/bench/wires.py: the {name} stream of {size} events did not "
                         f"assemble as built: {str(record)[:400]}")
    # The events as the wire reads this body (SSE, NDJSON, a JSON array, event-stream
    # messages); the floor parses their JSON, as plain bytes (orjson reads no subclass, and an
    # event-stream message is an EventMessage).
    events = framing_of(wire, body)(1 << 40, names=False).feed(body)
    payloads = [bytes(event) for event in events if event != b"[DONE]"]
    floor = FLOORS.get(wire, _loads_each)
    slices = _slices(body)
    row = Row(len(events), len(body))
    runs: dict[str, Callable[[], object]] = {
        "sliced": lambda: assemble(slices, options),
        "whole": lambda: assemble(body, options),
        "floor": lambda: floor(payloads)}
    for run in runs.values():
        run()  # warm caches, untimed
    for _ in range(repeats):
        for kind, run in runs.items():
            row.runs[kind].append(_timed(run))
    return row


def report(name: str, rows: list[Row]) -> list[dict[str, Any]]:
    """Print one stream's table; return its figures."""
    print(f"\n{name} ({STREAMS[name][0]}): µs per event, best of "
          f"{len(rows[0].runs['sliced'])} [median]")
    print(f"{'events':>7} {'bytes':>9} {'64 KiB slices':>17} {'whole body':>17} "
          f"{'orjson floor':>17} {'ratio':>6}")
    for row in rows:
        sliced = row.best("sliced")
        print(f"{row.events:>7} {row.bytes:>9} "
              + "".join(f"{row.best(k):>8.2f} [{row.median(k):>6.2f}]" for k in
                        ("sliced", "whole", "floor"))
              + f" {sliced / row.best('floor'):>6.2f}"
              + ("" if sliced <= GOAL_US else f"  over {GOAL_US} µs"))
    worst = max(row.best("sliced") for row in rows)
    flatness = worst / min(row.best("sliced") for row in rows)
    return [
        {"name": f"{name}_us_per_event_max", "value": round(worst, 3), "unit": "µs/event",
         "goal": f"<= {GOAL_US}", "met": worst <= GOAL_US},
        {"name": f"{name}_flatness", "value": round(flatness, 3),
         "unit": f"max/min µs per event, {rows[0].events}..{rows[-1].events} events",
         "goal": f"<= {GOAL_FLATNESS}", "met": flatness <= GOAL_FLATNESS},
        {"name": f"{name}_whole_body_us_per_event_max",
         "value": round(max(row.best("whole") for row in rows), 3),
         "unit": "µs/event, the body in one slice (diagnostic)", "goal": None, "met": None},
        {"name": f"{name}_orjson_floor_us_per_event_max",
         "value": round(max(row.best("floor") for row in rows), 3),
         "unit": "µs/event, orjson.loads of each payload", "goal": None, "met": None},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description="µs per event of every wire's assembly on one long stream "
                    "(goal <= 3 µs and flat); see the module docstring for the method.")
    parser.add_argument("--short", action="store_true",
                        help=f"sizes {', '.join(map(str, SHORT_SIZES))} and 5 repeats "
                             "(what CI runs: the figures of a short run say little)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per measurement (default 15, 5 with --short)")
    parser.add_argument("--stream", default=",".join(STREAMS),
                        help=f"streams to run, comma-separated (default all: "
                             f"{', '.join(STREAMS)})")
    parser.add_argument("--json", action="store_true",
                        help="end with one BENCH {json} line of figures")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.stream.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in STREAMS]
    if unknown or not chosen:
        parser.error(f"unknown stream {', '.join(unknown) or '(none)'}; "
                     f"choose from {', '.join(STREAMS)}")
    repeats = args.repeats or (5 if args.short else 15)
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    sizes = SHORT_SIZES if args.short else SIZES
    gc.freeze()
    figures: list[dict[str, Any]] = []
    for name in chosen:
        figures += report(name, [measure(name, size, repeats) for size in sizes])
    if args.json:
        notes = {"method": "assemble(64 KiB slices of one body) per event; best of "
                           f"{repeats}, interleaved with the whole body and the orjson "
                           "floor; gc collected before each run",
                 "sizes": list(sizes), "python": sys.version.split()[0],
                 "load_average": round(os.getloadavg()[0], 2), "short": args.short}
        print("BENCH " + json.dumps({"section": "wires", "figures": figures,
                                     "notes": notes}))


if __name__ == "__main__":
    main()
