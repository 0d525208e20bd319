"""A real HTTP/1.1 server on 127.0.0.1 that streams a body in chunks, as a provider does: the
tap's tests read through real sockets, never a mock transport.

Each ``POST``/``GET`` is answered with the body it was set up with, compressed with the coding
it was given (``Content-Encoding``), sent with ``Transfer-Encoding: chunked`` in pieces of
``piece`` bytes (or in the pieces ``split`` cuts the sent bytes into: e.g. one SSE event a
write, as a server flushing event by event sends), flushed one by one, optionally ``pause``
seconds apart. It serves one request at a time per connection, binds 127.0.0.1 only, and
stops (by its own thread) when the context manager exits.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import brotli
import zstandard

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    # mtime 0: the same bytes on every call (gzip stamps the time of day in its header).
    "gzip": lambda data: gzip.compress(data, mtime=0),
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
}


@dataclass
class Stream:
    """What the server answers with."""

    body: bytes
    coding: str | None = None
    piece: int = 64
    pause: float = 0.0
    status: int = 200
    content_type: str = "text/event-stream"
    #: Request paths and headers seen, in order.
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    #: Cuts the sent bytes into the pieces to write (in place of ``piece``-byte pieces); the
    #: pieces must join to the bytes given.
    split: Callable[[bytes], list[bytes]] | None = None

    def wire_bytes(self) -> bytes:
        return self.body if self.coding is None else COMPRESSORS[self.coding](self.body)

    def pieces(self) -> list[bytes]:
        data = self.wire_bytes()
        if self.split is not None:
            pieces = self.split(data)
            assert b"".join(pieces) == data, "split must keep every byte, in order"
            return [p for p in pieces if p]
        return [data[i:i + self.piece] for i in range(0, len(data), self.piece)]


@contextmanager
def serving(stream: Stream) -> Iterator[str]:
    """The server's base URL while the block runs."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: the tests say what matters

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            stream.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            pieces = stream.pieces()
            self.send_response(stream.status)
            self.send_header("content-type", stream.content_type)
            self.send_header("transfer-encoding", "chunked")
            if stream.coding is not None:
                self.send_header("content-encoding", stream.coding)
            self.end_headers()
            for piece in pieces:
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
                if stream.pause:
                    time.sleep(stream.pause)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        do_GET = _answer
        do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="tap-test-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
