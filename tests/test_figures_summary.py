"""The figures plugin (``tests/figures_summary.py``): a passed test's ``FIGURES`` line is
printed again in the run's summary, other output is not, and a run without figures prints no
section."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(tmp_path: Path, body: str) -> str:
    (tmp_path / "test_it.py").write_text(body)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tests.figures_summary", str(tmp_path / "test_it.py"), "--rootdir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_passed_tests_figures_are_in_the_summary(tmp_path: Path) -> None:
    out = run(tmp_path, 'def test_a():\n    print("noise")\n'
                        '    print("FIGURES {\\"test\\": \\"a\\"}")\n')
    summary = out.split(" figures =", 1)[1]
    assert 'test_it.py::test_a: FIGURES {"test": "a"}' in summary
    assert "noise" not in out


def test_no_figures_no_section(tmp_path: Path) -> None:
    out = run(tmp_path, "def test_a():\n    print('noise')\n")
    assert " figures =" not in out
    assert "FIGURES" not in out
