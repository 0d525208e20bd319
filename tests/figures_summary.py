"""A pytest plugin: the ``FIGURES {json}`` line of every test that printed one
(:class:`tests.reliability.Figures`) again at the end of the run, passed tests included, so
that a CI log carries each scenario's figures — pytest shows a passed test's output to no one.
Loaded by ``tests/conftest.py``."""

from __future__ import annotations

from typing import Any

PREFIX = "FIGURES "


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = [(report.nodeid, line)
             for outcome in ("passed", "failed", "error")
             for report in terminalreporter.stats.get(outcome, [])
             if getattr(report, "when", "call") == "call"
             for line in getattr(report, "capstdout", "").splitlines()
             if line.startswith(PREFIX)]
    if not lines:
        return
    terminalreporter.section("figures")
    for nodeid, line in lines:
        terminalreporter.write_line(f"{nodeid}: {line}")
