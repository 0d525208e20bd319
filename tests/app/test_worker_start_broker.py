"""A worker starts while one of its bootstrap servers drops everything silently (a broker
cut off by a partition: the connection opens, no answer ever comes). aiokafka asks the
servers one after the other, so the start check (``toolwire.cli.worker.check_reachable``)
asks them all at once and takes the first answer; before, a silent first server used up the
whole check and a worker restarted during the partition exited 75 again and again although
the other brokers answered (seen in ``tests/net``'s broker isolation)."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from toolwire.cli.worker import Unreachable, check_reachable
from toolwire.config.settings import Settings

pytestmark = pytest.mark.broker


@pytest.fixture
def silent() -> Iterator[str]:
    """An address that accepts connections and never answers: the kernel completes the
    handshake, nothing reads."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        server.close()


def test_a_silent_first_server_does_not_stop_the_start(
        kafka_bootstrap: str, silent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # aiokafka shuffles the bootstrap servers: keep them in order, the silent one first.
    monkeypatch.setattr(random, "shuffle", lambda items, *args: None)
    settings = Settings(bootstrap=kafka_bootstrap)
    started = time.monotonic()
    check_reachable(f"{silent},{kafka_bootstrap}", settings, {}, timeout=4.0)
    assert time.monotonic() - started < 4.0


def test_every_silent_server_is_named(silent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(random, "shuffle", lambda items, *args: None)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{sock.getsockname()[1]}"
    both = f"{silent},{closed}"
    settings: Any = Settings(bootstrap=both)
    with pytest.raises(Unreachable) as raised:
        check_reachable(both, settings, {}, timeout=2.0)
    text = str(raised.value)
    assert silent in text and closed in text and "connection refused" in text, text
