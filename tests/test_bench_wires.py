"""``ops/bench/wires.py`` (issue 13's per-wire assembly benchmark) runs and says what the
harness reads.

Run as the harness runs it (a subprocess, its last ``BENCH`` line parsed). The figures are not
judged here (a shared CI machine cannot hold a µs goal): only that every wire's streams are
built to their length, assemble as built (the script refuses to time a stream that does not),
and are measured with their goals.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from toolwire.core import Options, assemble
from toolwire.core.wires import SUPPORTED_WIRES
from toolwire.publish._slicing import framing_of

SCRIPT = Path(__file__).resolve().parents[1] / "ops" / "bench" / "wires.py"
WIRES = set(SUPPORTED_WIRES)  # every wire has its bench stream


def _script() -> ModuleType:
    """The script imported, its stream modules found beside it (as when it is run)."""
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_wires", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_json_run_measures_every_stream_of_every_wire() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--short", "--repeats", "1", "--json"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].startswith("BENCH ")
    data = json.loads(lines[-1].removeprefix("BENCH "))
    figures = {f["name"]: f for f in data["figures"]}
    streams = _script().STREAMS
    assert {wire for wire, _, _ in streams.values()} == WIRES
    for name in streams:
        assert name in proc.stdout  # its table
        worst = figures[f"{name}_us_per_event_max"]
        assert worst["value"] > 0 and worst["goal"] == "<= 3.0"
        assert worst["met"] is (worst["value"] <= 3.0)
        assert figures[f"{name}_flatness"]["value"] >= 1.0
        assert figures[f"{name}_orjson_floor_us_per_event_max"]["value"] > 0
    assert data["notes"]["sizes"] == [150, 600]


@pytest.mark.parametrize("events", [150, 2400])
def test_each_stream_has_the_events_it_was_asked_for_and_assembles(events: int) -> None:
    for name, (wire, make, calls) in _script().STREAMS.items():
        body = make(events)
        assert len(framing_of(wire, body)(1 << 30).feed(body)) == events, name
        record = assemble(body, Options(wire=wire))
        assert record["outcome"] == "assembled", (name, record)
        assert len(record["tool_calls"]) == calls(events), name


def test_an_unknown_stream_is_a_usage_error_naming_the_streams() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--stream", "nope"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "unknown stream nope" in proc.stderr and "vertex-partial-args" in proc.stderr
