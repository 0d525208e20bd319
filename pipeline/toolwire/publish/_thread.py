"""A publisher on an event loop of its own, for callers that have none: sync clients.

A tee inside a sync HTTP client (``httpx2.Client``, ``openai.OpenAI``) runs in the client's
thread, where no event loop runs, and must still never wait on Kafka. The publisher's loop
therefore runs in a daemon thread of its own: :meth:`PublisherThread.open_stream` and the
pushed streams' ``feed`` / ``close`` hand their work to it thread-safely
(:class:`~toolwire.publish.PushStream`), and nothing the client's thread does waits for the
broker. Async clients on other loops (or in other threads) may share the same thread.

Starting waits for the connection and the topic check, so that a wrong address fails at once
with the publisher's own error; stopping ends the streams still open (``cancelled``) and
flushes, within the connect timeout, as :meth:`ChunkPublisher.stop` does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from types import TracebackType
from typing import Any, Self

from toolwire.publish._publisher import ChunkPublisher, PublishError
from toolwire.publish._push import PushStats, PushStream
from toolwire.stream.messages import RequestMeta


class PublisherThread:
    """A :class:`ChunkPublisher` (built from the same arguments) running in a daemon thread.

    ::

        with PublisherThread("127.0.0.1:9092", "llm.sse.chunks") as publisher:
            client = openai.OpenAI(http_client=httpx2.Client(
                transport=Httpx2TeeTransport(httpx2.HTTPTransport(), publisher)))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.publisher = ChunkPublisher(*args, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def push_stats(self) -> PushStats:
        return self.publisher.push_stats

    def start(self) -> None:
        """Start the thread and the publisher in it; raise what starting raised
        (:class:`~toolwire.publish.BrokerUnreachable`, :class:`~toolwire.publish.TopicNotFound`)."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("the publisher thread is already started")
            ready: concurrent.futures.Future[asyncio.AbstractEventLoop] = (
                concurrent.futures.Future())
            thread = threading.Thread(target=self._run, args=(ready,), daemon=True,
                                      name="toolwire-publisher")
            thread.start()
            try:
                self._loop = ready.result()
            except BaseException:
                thread.join()
                raise
            self._thread = thread

    def _run(self, ready: concurrent.futures.Future[asyncio.AbstractEventLoop]) -> None:
        loop = asyncio.new_event_loop()
        try:
            try:
                loop.run_until_complete(self.publisher.start())
            except BaseException as exc:
                ready.set_exception(exc)
                return
            ready.set_result(loop)
            loop.run_forever()
        finally:
            loop.close()

    def open_stream(self, meta: RequestMeta) -> PushStream:
        """:meth:`ChunkPublisher.open_stream`, from any thread."""
        if self._loop is None:
            raise PublishError(f"request {meta.request_id}: the publisher thread is not "
                               "started, so its body cannot be published")
        return self.publisher.open_stream(meta)

    def stop(self) -> None:
        """End the open streams, flush and close the producer, and end the thread (waits at
        most about twice the connect timeout)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        timeout = 2 * self.publisher.connect_timeout + 5
        try:
            asyncio.run_coroutine_threadsafe(self.publisher.stop(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
