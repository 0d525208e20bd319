"""The benchmark harness (``ops/bench``, issue 8) runs end to end.

``ops/bench/harness.py --short`` is run as CI would run it: it starts its own Kafka broker
(or uses ``KAFKA_BOOTSTRAP_SERVERS``), its own workers and baselines, and stops them. This
checks that every section works and produces numeric figures — not that the goals are met:
the figures of a short run on a shared CI machine say little (``bash ops/bench/run`` is the
real measurement, see docs/benchmarks.md).

The same run also covers the mixed-wire workload (``--workload chat,mixed``): the preloaded,
state_writes, cpu_live and latency sections once more on the four wires interleaved, each
section named ``SECTION:mixed``, where every record of the Toolwire worker must equal
``toolwire.core.assemble(body, options)`` of its capture (that check is a correctness one, so
it is held even in a short run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "ops" / "bench" / "harness.py"
SECTIONS = {"preloaded", "state_writes", "profile", "cpu_live", "latency", "scale_out", "memory",
            "coalescing", "libraries", "wires"}
MIXED = {"preloaded", "state_writes", "cpu_live", "latency"}
WIRES = {"openai-chat", "anthropic-messages", "openai-responses", "gemini"}
#: The mixed sections whose Toolwire records are checked against assemble.
CHECKED = {"preloaded", "cpu_live", "latency"}


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@pytest.mark.broker  # starts its own broker (Java and Maven), like the broker tests
@pytest.mark.timeout(400)
def test_short_run_produces_every_section(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(HARNESS), "--short", "--workload", "chat,mixed",
                           "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=380, check=False)
    assert done.returncode == 0, (f"harness exited {done.returncode}\nstdout:\n"
                                  f"{done.stdout[-3000:]}\nstderr:\n{done.stderr[-6000:]}")
    data = json.loads(out.read_text())
    assert data["short"] is True
    assert "cores" in data
    sections = {s["name"]: s for s in data["sections"]}
    assert set(sections) == SECTIONS | {f"{name}:mixed" for name in MIXED}
    for name, section in sections.items():
        assert section["error"] is None, f"{name}: {section['error']}"
        numbers = [f for f in section["figures"] if _numeric(f["value"])]
        assert numbers, f"{name}: no numeric figure in {section['figures']}"
        if name not in ("libraries", "wires"):  # those scripts' figures are their own
            for f in section["figures"]:
                assert f["goal"] is None or f["met"] in (True, False), f"{name}: {f}"
    # The table went to stdout, with a row per figure.
    for name in sections:
        assert name in done.stdout
    for name in CHECKED:
        section = sections[f"{name}:mixed"]
        figures = {f["name"]: f for f in section["figures"]}
        assert figures["toolwire records checked against assemble(body, options)"]["value"] > 0
        wrong = figures["toolwire records not equal to assemble(body, options)"]
        assert (wrong["value"], wrong["met"]) == (0, True), section["notes"]["records_check"]
        assert set(section["notes"]["records_check"]["per_wire_equal_of"]) == WIRES
