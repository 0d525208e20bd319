"""Where a measured process spends its time: py-spy samples, summarised by package.

Issue 8 asks to profile before removing costs; a table of which layer (Toolwire's processor,
Faust, aiokafka, the event loop) takes what share of the worker's samples says where the
remaining time goes without reading a flame graph. py-spy attaches to a running process by PID
(it needs ptrace rights: root, or ``kernel.yama.ptrace_scope=0``).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

#: Path fragment → layer, first match wins (checked from the innermost frame outwards).
#: py-spy names a frame ``function (path:line)``, the path relative to its ``sys.path`` entry
#: (``asyncio/events.py``, ``toolwire/stream/processor.py``) or absolute.
LAYERS: tuple[tuple[str, str], ...] = (
    ("toolwire/core/", "toolwire core (framing, parsing, assembly, decision)"),
    ("toolwire/stream/", "toolwire processor (state, encoding)"),
    ("toolwire/app/", "toolwire Faust glue"),
    ("toolwire/", "toolwire other"),
    ("faust/", "faust"),
    ("mode/", "mode (faust's service framework)"),
    ("aiokafka/", "aiokafka"),
    ("asyncio/", "asyncio event loop"),
    ("uvloop/", "uvloop event loop"),
    ("selectors.py", "waiting for I/O (selectors)"),
    ("importlib", "importing modules (start-up)"),
)


@dataclass
class Profile:
    """Samples of one process: own time per layer and per function."""

    samples: int = 0
    layers: Counter[str] = field(default_factory=Counter)
    functions: Counter[str] = field(default_factory=Counter)
    #: Samples with a frame of Toolwire's processor or core anywhere in the stack: the time
    #: spent in (or below) what Toolwire adds to a bare Faust agent.
    under_processor: int = 0


def py_spy() -> str | None:
    """The py-spy executable (the bench extra installs it next to this Python)."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def start(pid: int, out: Path) -> subprocess.Popen[bytes]:
    exe = py_spy()
    if exe is None:
        raise RuntimeError("py-spy not found: pip install -e '.[bench]'")
    return subprocess.Popen([exe, "record", "--pid", str(pid), "--format", "raw",
                             "--output", str(out), "--rate", "200", "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def stop(recorder: subprocess.Popen[bytes], timeout: float = 30.0) -> str:
    """Stop recording (py-spy writes its output on SIGINT); its stderr, for errors."""
    if recorder.poll() is None:
        recorder.send_signal(signal.SIGINT)
    try:
        _, err = recorder.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        recorder.kill()
        _, err = recorder.communicate()
    return err.decode(errors="replace")


def summarise(raw: Path) -> Profile:
    """Collapsed stacks (``frame;frame;... count``, outermost first) → own time by layer."""
    profile = Profile()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        profile.samples += count
        profile.functions[frames[-1]] += count
        profile.layers[_layer(frames)] += count
        if any(_within(_path(f), "toolwire/stream/") or _within(_path(f), "toolwire/core/")
               for f in frames):
            profile.under_processor += count
    return profile


def _layer(frames: list[str]) -> str:
    for frame in reversed(frames):
        path = _path(frame)
        for fragment, name in LAYERS:
            if _within(path, fragment):
                return name
    return "other (libraries, interpreter)"


def _path(frame: str) -> str:
    """``function (path:line)`` → ``path``."""
    inside = frame.rpartition(" (")[2].rstrip(")")
    return inside.rpartition(":")[0] or inside


def _within(path: str, fragment: str) -> bool:
    return path.startswith(fragment) or f"/{fragment}" in path
