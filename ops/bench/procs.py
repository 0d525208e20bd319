"""The processes a benchmark measures: spawned with their own log, probed, stopped by PID.

Every process started here is recorded in :data:`RUNNING` until it is stopped, so that
:func:`stop_all` (called by the harness on exit, Ctrl-C or failure) leaves nothing behind. A
process is only ever signalled by the PID it was started with, never by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
#: The line a Faust worker (Toolwire's or a bare baseline) logs once it consumes.
FAUST_READY = "[^Worker]: Ready"
#: The line the raw aiokafka baseline prints once partitions are assigned.
RAW_READY = "BENCH-READY"

RUNNING: dict[int, Proc] = {}


class ProcError(RuntimeError):
    """A process exited early or did not become ready; carries the tail of its log."""


class Proc:
    """One child process with its log file (stdout and stderr)."""

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], log: Path,
                 ready: str | None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.ready_marker = ready
        log.parent.mkdir(parents=True, exist_ok=True)
        self._out = log.open("wb")
        self.spawned_at = time.time()
        self.popen = subprocess.Popen(self.argv, env=dict(env), cwd=ROOT,
                                      stdin=subprocess.DEVNULL, stdout=self._out,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.popen.pid
        self.ps = psutil.Process(self.pid)
        RUNNING[self.pid] = self
        self._last_cpu = 0.0
        self._last_rss = 0
        self._terminated = False

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds from spawn until the ready line appears in the log."""
        if self.ready_marker is None:
            return 0.0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if self.ready_marker in self.log.read_text(errors="replace"):
                    return time.time() - self.spawned_at
            if not self.alive():
                raise ProcError(f"{self.name} (pid {self.pid}) exited with "
                                f"{self.popen.returncode} before it was ready; {self.log}:\n"
                                f"{self.tail()}")
            time.sleep(0.1)
        raise ProcError(f"{self.name} (pid {self.pid}) not ready after {timeout:.0f} s; "
                        f"{self.log}:\n{self.tail()}")

    def check(self) -> None:
        """Raise if the process has exited (it should run until stopped)."""
        if not self.alive():
            raise ProcError(f"{self.name} (pid {self.pid}) exited with "
                            f"{self.popen.returncode}; {self.log}:\n{self.tail()}")

    def cpu(self) -> float:
        """CPU seconds (user + system) of the process so far; the last value once it ended."""
        with contextlib.suppress(psutil.Error):
            times = self.ps.cpu_times()
            self._last_cpu = float(times.user + times.system)
        return self._last_cpu

    def rss(self) -> int:
        """Resident memory in bytes."""
        with contextlib.suppress(psutil.Error):
            self._last_rss = int(self.ps.memory_info().rss)
        return self._last_rss

    def terminate(self) -> None:
        """SIGTERM without waiting (it stays recorded: :func:`stop_all` waits for it)."""
        if self.alive() and not self._terminated:
            self.cpu()
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; by PID only. Returns the exit code."""
        if self.alive():
            self.cpu()
            if not self._terminated:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=10)
        RUNNING.pop(self.pid, None)
        with contextlib.suppress(OSError):
            self._out.close()
        return self.popen.returncode


def stop_all() -> list[str]:
    """Stop every process still recorded; the names of those stopped."""
    names = []
    for proc in list(RUNNING.values()):
        names.append(f"{proc.name} (pid {proc.pid})")
        proc.stop(timeout=15.0)
    return names


def python() -> str:
    return sys.executable


def clean_env() -> dict[str, str]:
    """The harness's environment without Kafka and Toolwire settings (each process gets
    exactly the ones it is given)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("TOOLWIRE_") and k != "KAFKA_BOOTSTRAP_SERVERS"}


def worker_env_error(items: Sequence[str], controlled: frozenset[str]) -> str | None:
    """What is wrong with the first ``--worker-env`` item that is not ``TOOLWIRE_NAME=VALUE``
    or names a setting the bench sets itself (``None``: all are good)."""
    for item in items:
        name, sep, _ = item.partition("=")
        if not sep or not name.startswith("TOOLWIRE_") or name in controlled:
            return (f"--worker-env {item!r}: expected TOOLWIRE_NAME=VALUE (not one of "
                    f"{', '.join(sorted(controlled))})")
    return None


def worker_settings(items: Sequence[str], controlled: frozenset[str]) -> dict[str, str]:
    """The settings of every worker the bench starts: the caller's ``TOOLWIRE_*`` variables
    but the ones it sets itself, then the ``--worker-env`` items."""
    settings = {k: v for k, v in os.environ.items()
                if k.startswith("TOOLWIRE_") and k not in controlled}
    settings.update(dict(item.split("=", 1) for item in items))
    return settings
