"""A userspace TCP relay that makes a slow link: fixed latency and a bandwidth cap.

Why: this kernel has no netem (``tc ... delay`` / ``rate`` are missing), yet a test of
timeouts, batching and backpressure needs a link that is slow in a known way. The relay
listens on one address and forwards every connection to a target, each direction through a
:class:`Link`: a byte read at time *t* is written no earlier than *t + delay*, and no
faster than ``rate`` bytes per second (a token bucket with ``burst`` bytes of depth, shared
by every connection of the relay, as on one physical link). Bytes keep their order; each
direction buffers at most ``buffer`` bytes, so a fast sender is slowed by TCP's own
backpressure rather than growing memory. When either side closes (or fails), what it sent
is still delivered (late, as the link says), then both sides are closed.

As an object in a test's own process: :class:`Relay` (asyncio) or :class:`RelayThread`
(its own event loop in a thread, for synchronous tests). Inside a namespace::

    python -m tests.net.relay --listen 198.18.7.2:9092 --target 198.18.7.6:9092 \\
        --delay-ms 50 --rate 1000000

prints one JSON line ``{"listening": "host:port"}`` once it accepts, and runs until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

DEFAULT_BURST = 16 * 1024
DEFAULT_BUFFER = 256 * 1024
CHUNK = 16 * 1024


class TokenBucket:
    """``rate`` bytes per second, ``burst`` at most at once; waiters take turns (FIFO)."""

    def __init__(self, rate: float, burst: int = DEFAULT_BURST) -> None:
        if rate <= 0 or burst <= 0:
            raise ValueError("rate and burst must be positive")
        self.rate = float(rate)
        self.burst = int(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._turn = asyncio.Lock()

    async def take(self, size: int) -> None:
        """Wait until ``size`` bytes may go (``size`` ≤ ``burst``), then spend them."""
        if size > self.burst:
            raise ValueError(f"{size} bytes is more than the burst of {self.burst}")
        async with self._turn:
            while True:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
                self._stamp = now
                if self._tokens >= size:
                    self._tokens -= size
                    return
                await asyncio.sleep((size - self._tokens) / self.rate)


@dataclass(frozen=True)
class Link:
    """How one direction of the relay behaves."""

    #: Seconds added to every byte's trip.
    delay: float = 0.0
    #: Bytes per second, or None for no cap.
    rate: float | None = None
    burst: int = DEFAULT_BURST
    #: Most bytes held for this direction of one connection (read but not yet written).
    buffer: int = DEFAULT_BUFFER


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: Link,
                bucket: TokenBucket | None) -> None:
    """Copy ``reader`` to ``writer`` through ``link`` until EOF; the queue bounds what is
    held, and a single writer keeps the order."""
    chunk = min(CHUNK, bucket.burst) if bucket is not None else CHUNK
    items: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(
        maxsize=max(1, link.buffer // chunk))

    async def read() -> None:
        with contextlib.suppress(OSError, ConnectionError):  # a reset ends it like an EOF
            while data := await reader.read(chunk):
                await items.put((time.monotonic() + link.delay, data))
        await items.put(None)

    async def write() -> None:
        while (item := await items.get()) is not None:
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if bucket is not None:
                for start in range(0, len(data), bucket.burst):
                    piece = data[start:start + bucket.burst]
                    await bucket.take(len(piece))
                    writer.write(piece)
                    await writer.drain()
            else:
                writer.write(data)
                await writer.drain()

    reading = asyncio.ensure_future(read())
    try:
        await write()
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError, ConnectionError):
            await reading


class Relay:
    """Forward every connection to ``listen`` to ``target`` through a slow link.

    ``delay`` (seconds) and ``rate`` (bytes/s, None for none) apply to each direction
    separately; ``port`` 0 in ``listen`` picks a free one (see :attr:`address`).
    """

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], *,
                 delay: float = 0.0, rate: float | None = None, burst: int = DEFAULT_BURST,
                 buffer: int = DEFAULT_BUFFER, connect_timeout: float = 5.0) -> None:
        self.listen = listen
        self.target = target
        self.link = Link(delay=delay, rate=rate, burst=burst, buffer=buffer)
        self.connect_timeout = connect_timeout
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._buckets: tuple[TokenBucket | None, TokenBucket | None] = (None, None)

    @property
    def address(self) -> tuple[str, int]:
        """Where the relay listens (the real port once started)."""
        if self._server is None or not self._server.sockets:
            return self.listen
        host, port = self._server.sockets[0].getsockname()[:2]
        return str(host), int(port)

    async def start(self) -> None:
        """Bind and start accepting."""
        if self.link.rate is not None:
            self._buckets = (TokenBucket(self.link.rate, self.link.burst),
                             TokenBucket(self.link.rate, self.link.burst))
        self._server = await asyncio.start_server(self._handle, *self.listen,
                                                  reuse_address=True)

    async def close(self) -> None:
        """Stop accepting and close every relayed connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._relay(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _relay(self, c_reader: asyncio.StreamReader,
                     c_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        t_writer: asyncio.StreamWriter | None = None
        try:
            t_reader, target = await asyncio.wait_for(
                asyncio.open_connection(*self.target), self.connect_timeout)
            t_writer = target
            up = asyncio.ensure_future(_pump(c_reader, target, self.link, self._buckets[0]))
            down = asyncio.ensure_future(_pump(t_reader, c_writer, self.link,
                                               self._buckets[1]))
            try:
                # Either side closing (its EOF delivered) or failing ends the connection.
                await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (up, down):
                    task.cancel()
                await asyncio.gather(up, down, return_exceptions=True)
        except (TimeoutError, OSError, ConnectionError):
            pass  # target unreachable, or a reset: the client is closed below
        finally:
            for w in (c_writer, t_writer):
                if w is not None:
                    w.close()
            for w in (c_writer, t_writer):
                if w is not None:
                    with contextlib.suppress(OSError, ConnectionError, asyncio.CancelledError):
                        await w.wait_closed()


class RelayThread:
    """A :class:`Relay` on its own event loop in a daemon thread, for synchronous code.

    Use as a context manager; :attr:`address` is valid inside it.
    """

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], *,
                 delay: float = 0.0, rate: float | None = None, burst: int = DEFAULT_BURST,
                 buffer: int = DEFAULT_BUFFER) -> None:
        self.relay = Relay(listen, target, delay=delay, rate=rate, burst=burst, buffer=buffer)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        """Where the relay listens."""
        return self.relay.address

    def __enter__(self) -> RelayThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.relay.start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.relay.close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


async def _serve(args: argparse.Namespace) -> None:
    relay = Relay(args.listen, args.target, delay=args.delay_ms / 1000.0, rate=args.rate,
                  burst=args.burst, buffer=args.buffer)
    await relay.start()
    host, port = relay.address
    print(json.dumps({"listening": f"{host}:{port}"}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await relay.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run one relay until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m tests.net.relay", description=__doc__
                                     .split("\n\n")[0])
    parser.add_argument("--listen", type=_address, required=True, help="HOST:PORT to accept on")
    parser.add_argument("--target", type=_address, required=True, help="HOST:PORT to forward to")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added each way")
    parser.add_argument("--rate", type=float, default=None, help="bytes/s each way")
    parser.add_argument("--burst", type=int, default=DEFAULT_BURST, help="token bucket depth")
    parser.add_argument("--buffer", type=int, default=DEFAULT_BUFFER,
                        help="bytes held per direction of a connection")
    args = parser.parse_args(argv)
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
