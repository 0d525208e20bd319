"""A real HTTP/2 server on 127.0.0.1 (hypercorn, cleartext with prior knowledge) that streams a
:class:`~tests.tap.server.Stream` as :mod:`tests.tap.server` does over HTTP/1.1: the tap's
HTTP/2 tests read through real sockets and real frames. It runs in a thread with its own
event loop and stops when the context manager exits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config

from tests.app.support import free_port
from tests.tap.server import Stream


@contextmanager
def serving_h2(stream: Stream) -> Iterator[str]:
    """The server's base URL while the block runs; ``stream.seen`` gets each request's path
    and headers, with its HTTP version under ``:version``."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        stream.seen.append((scope["path"], {**headers, ":version": scope["http_version"]}))
        out = [(b"content-type", stream.content_type.encode())]
        if stream.coding is not None:
            out.append((b"content-encoding", stream.coding.encode()))
        await send({"type": "http.response.start", "status": stream.status, "headers": out})
        data = stream.wire_bytes()
        for i in range(0, len(data), stream.piece):
            await send({"type": "http.response.body", "body": data[i:i + stream.piece],
                        "more_body": True})
            await asyncio.sleep(stream.pause)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    port = free_port()
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def main() -> None:
            ready.set()
            await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

        loop.run_until_complete(main())
        loop.close()

    thread = threading.Thread(target=run, name="tap-test-h2-server", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
