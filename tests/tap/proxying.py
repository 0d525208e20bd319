"""``toolwire tap serve`` as a child process, for the tests and the benchmark: started on a free
port of 127.0.0.1, ready once it prints its listening line, stopped by its PID."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

READY = re.compile(r"listening on (http://\S+)")


@dataclass
class Proxy:
    url: str
    process: subprocess.Popen[str]
    #: Every line the proxy printed on stderr (it prints no body, header or query).
    lines: list[str] = field(default_factory=list)


@contextmanager
def proxying(bootstrap: str, topic: str, upstreams: Sequence[str], *extra: str,
             timeout: float = 60.0) -> Iterator[Proxy]:
    """A running proxy in front of ``upstreams`` (``URL`` or ``/PREFIX=URL``)."""
    args = [sys.executable, "-m", "toolwire.cli", "tap", "serve", "--listen", "127.0.0.1:0"]
    for upstream in upstreams:
        args += ["--upstream", upstream]
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "TOOLWIRE_TOPIC_CHUNKS": topic}
    process = subprocess.Popen([*args, *extra], env=env, stderr=subprocess.PIPE, text=True,
                               stdout=subprocess.DEVNULL)
    assert process.stderr is not None
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            match = READY.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True, name="proxy-stderr")
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while not ready.wait(0.1):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the proxy did not get ready in {timeout} s: {lines}")
        if not found:
            raise RuntimeError(f"the proxy exited ({process.poll()}) before it was ready: "
                               f"{lines}")
        yield Proxy(found[0], process, lines)
    finally:
        if process.poll() is None:
            process.terminate()  # by its PID
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        reader.join(10)
