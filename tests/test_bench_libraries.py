"""``ops/bench/libraries.py --short --json`` still runs and still says what the harness reads.

The benchmark is a script a harness calls, so it is run the way the harness runs it (a
subprocess, its last stdout line parsed) rather than imported: what must not break is the
interface, and a library upgrade that changes a public API must fail here, not in a report.
The figures themselves are not judged (a shared CI machine cannot hold a µs goal); only that
they exist, are measured, and that every library was compared with Toolwire and agreed somewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[1] / "ops" / "bench" / "libraries.py"
LIBRARIES = ("openai", "litellm", "langchain")


def test_short_json_run_prints_a_bench_line() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--short", "--json"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) > 1, "a human-readable table comes before the BENCH line"
    assert lines[-1].startswith("BENCH "), lines[-1][:200]
    bench: dict[str, Any] = json.loads(lines[-1][len("BENCH "):])
    assert bench["section"] == "libraries"
    assert isinstance(bench["notes"], dict)
    figures = {f["name"]: f for f in bench["figures"]}
    for figure in bench["figures"]:
        assert set(figure) == {"name", "value", "unit", "goal", "met"}, figure

    for name in ("toolwire_us_per_event_max", "toolwire_flatness"):
        figure = figures[name]
        assert isinstance(figure["value"], int | float) and figure["value"] > 0, figure
        assert figure["goal"] and isinstance(figure["met"], bool), figure
    largest = bench["notes"]["sizes"][-1]["target"]
    for key in ("toolwire", *LIBRARIES, "orjson_floor"):
        value = figures[f"{key}_us_per_event_{largest}"]["value"]
        assert isinstance(value, int | float) and value > 0, key

    for library in LIBRARIES:  # each library ran and matched Toolwire's calls somewhere
        agreed = figures[f"{library}_agrees_all"]["value"]
        assert isinstance(agreed, int) and agreed >= 1, (library, figures[f"{library}_agrees_all"])
        assert bench["notes"]["agreement"][library]["agree"] == agreed
        well = figures[f"{library}_agrees_well_behaved"]
        assert isinstance(well["value"], int) and well["value"] >= 1, well
        assert isinstance(well["met"], bool), well
    assert figures["timed_captures"]["value"] >= 1
    # One stream growing: every contender timed on it, Toolwire's flatness reported.
    streamed = [n for n in figures if n.startswith("toolwire_us_per_event_one_stream_")]
    assert len(streamed) == 1 and figures[streamed[0]]["value"] > 0
    assert figures["langchain_stream_flatness"]["value"] > 0
