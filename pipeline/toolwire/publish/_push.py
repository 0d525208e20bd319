"""Pushed streams: a body fed slice by slice by a caller that must never wait on Kafka.

A tee inside an HTTP client (:mod:`toolwire.tap`) sees each slice of a response as the client
reads it, and must hand it on without slowing or failing the client. So :meth:`PushStream.feed`
is a plain function that only appends to a bounded in-memory queue (no I/O, no await, never
an exception), and a task of the publisher's event loop sends what was queued through the
very path :meth:`~toolwire.publish.ChunkPublisher.publish_stream` takes (sequence numbers,
headers, coalescing, end markers): the queue is that path's body.

What can go wrong is the stream's, never the caller's:

- **Overflow.** The queue holds at most ``push_stream_bytes`` of one stream, and all the
  publisher's pushed streams together at most ``push_total_bytes`` (the broker is slower than
  the client, or unreachable). A slice that does not fit ends the stream: what was queued
  goes out, then the ``error`` end marker, so the consumer dead-letters a short body as
  ``stream_closed`` at once rather than assembling a body with a hole; later slices are
  counted and ignored.
- **The broker.** A send that fails ends the stream with ``error`` when that marker can still
  be delivered; a stream nothing more of can be delivered is **dropped**. Sends that never
  answer (a broker gone silent) cannot hold a stream open for ever: once the stream is over
  (closed, or overflowed), its end must be acknowledged within ``deliver_timeout``, or the
  stream is given up as dropped.

Every stream that did not end as its caller said is counted in :attr:`PushStats` and logged
(warning) with its request id, never with its bytes, which may hold tool arguments.

Thread safety: :meth:`feed` and :meth:`close` may be called from any thread (a sync client's
tee runs in the client's thread): off the loop's thread they wake the sender with
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final

from toolwire.stream.messages import END_CANCELLED, END_EOF, END_ERROR, END_MARKERS, RequestMeta

if TYPE_CHECKING:
    from toolwire.publish._publisher import PublishReport, _Stream

log = logging.getLogger("toolwire.publish")

#: One pushed stream's queue at most, by default: far above what a client reads ahead of a
#: healthy broker, small enough that thousands of open streams stay within memory.
DEFAULT_PUSH_STREAM_BYTES: Final = 4 * 1024 * 1024
#: All of one publisher's pushed streams' queues together, by default.
DEFAULT_PUSH_TOTAL_BYTES: Final = 64 * 1024 * 1024

#: The outcomes of a pushed stream, counted in :class:`PushStats`.
COMPLETED: Final = "completed"  # the end marker its caller said, acknowledged
ENDED_WITH_ERROR: Final = "ended_with_error"  # overflow or a failed send: ended with error
DROPPED: Final = "dropped"  # no end marker could be delivered

Publish = Callable[["_Stream", AsyncIterator[bytes], Callable[[], str] | None],
                   Coroutine[Any, Any, "PublishReport"]]


class PushStats(Counter[str]):
    """Pushed streams by what became of them: ``opened``, ``completed``,
    ``ended_with_error`` (of which ``overflowed``), ``dropped``; and ``ignored_bytes``, the
    bytes fed after a stream had ended."""


class Budget:
    """The bytes queued by all of one publisher's pushed streams (a lock: feeds may come from
    several threads)."""

    __slots__ = ("_lock", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self._lock:
            if self.used + size > self.limit:
                return False
            self.used += size
            return True

    def give(self, size: int) -> None:
        with self._lock:
            self.used -= size


class PushStream:
    """One body pushed slice by slice; made by
    :meth:`~toolwire.publish.ChunkPublisher.open_stream`, in any thread.

    ``feed(data)`` queues a slice; ``close(end)`` says the body is over (``eof``, or ``error``
    / ``cancelled`` when the caller's read failed or was abandoned) and may be called any
    number of times (the first wins); ``await done()`` gives the outcome once the stream is
    settled (:data:`COMPLETED`, :data:`ENDED_WITH_ERROR` or :data:`DROPPED`).
    """

    def __init__(self, stream: _Stream, publish: Publish, *, limit: int, budget: Budget,
                 stats: PushStats, deliver_timeout: float, loop: asyncio.AbstractEventLoop,
                 loop_thread: int,
                 on_settled: Callable[[PushStream], object] | None = None) -> None:
        self.meta: RequestMeta = stream.meta
        self.limit = limit
        self._stream = stream
        self._budget = budget
        self._stats = stats
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._lock = threading.Lock()
        #: The end the caller said (``close``) or the stream came to (overflow).
        self._end: str | None = None
        self.overflowed = False
        self.outcome: str | None = None
        self._loop = loop
        self._thread = loop_thread
        self.deliver_timeout = deliver_timeout
        # Events bind to a loop on first use, in the loop: safe to make in any thread.
        self._wake = asyncio.Event()
        #: Set once the stream is over (closed or overflowed): its end is then due.
        self._over = asyncio.Event()
        self._on_settled = on_settled
        self._task: asyncio.Task[None] | None = None
        self._begun = asyncio.Event()
        stats["opened"] += 1
        if threading.get_ident() == loop_thread:
            self._begin(publish)
        else:
            # A sync client's thread (or another loop's): the sender starts in the
            # publisher's loop; what is fed meanwhile waits in the queue. A loop that is
            # closed raises RuntimeError here, to the caller of open_stream.
            loop.call_soon_threadsafe(self._begin, publish)

    def _begin(self, publish: Publish) -> None:
        self._task = self._loop.create_task(self._run(publish),
                                            name=f"toolwire-push-{self.meta.request_id}")
        if self._on_settled is not None:
            on_settled = self._on_settled
            self._task.add_done_callback(lambda _: on_settled(self))
        self._begun.set()

    # -- the caller's side: never blocks, never raises ---------------------------------------

    def feed(self, data: bytes) -> None:
        """Queue one slice of the body (empty slices are ignored)."""
        size = len(data)
        if not size:
            return
        with self._lock:
            if self._end is not None:
                self._stats["ignored_bytes"] += size
                return
            if self._queued + size > self.limit or not self._budget.take(size):
                self._end = END_ERROR
                self.overflowed = True
                self._stats["ignored_bytes"] += size
            else:
                self._queue.append(bytes(data))
                self._queued += size
        self._notify()

    def close(self, end: str = END_EOF) -> None:
        """The body is over: ``eof`` when the caller read it to its end, ``error`` or
        ``cancelled`` otherwise. Later calls change nothing."""
        if end not in END_MARKERS:
            end = END_ERROR
        with self._lock:
            if self._end is None:
                self._end = end
        self._notify()

    @property
    def closed(self) -> bool:
        return self._end is not None

    async def done(self) -> str:
        """Wait until the stream is settled; its outcome (in the publisher's loop)."""
        await self._begun.wait()
        assert self._task is not None
        await asyncio.shield(self._task)
        assert self.outcome is not None
        return self.outcome

    # -- the sender's side: in the publisher's loop ------------------------------------------

    def _notify(self) -> None:
        if threading.get_ident() == self._thread:
            self._wakeup()
        else:
            # A closed loop raises: nothing can be sent any more, and the caller never hears.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._wakeup)

    def _wakeup(self) -> None:
        self._wake.set()
        if self._end is not None:
            self._over.set()

    async def _pieces(self) -> AsyncIterator[bytes]:
        """The queue as the body of :meth:`ChunkPublisher._publish`: every queued slice, in
        order, until the stream is closed (or overflowed) and the queue is empty."""
        while True:
            with self._lock:
                piece = self._queue.popleft() if self._queue else None
                if piece is not None:
                    self._queued -= len(piece)
                end = self._end
            if piece is not None:
                self._budget.give(len(piece))
                yield piece
                continue
            if end is not None:
                return
            self._wake.clear()
            with self._lock:
                waiting = not self._queue and self._end is None
            if waiting:
                await self._wake.wait()

    def _marker(self) -> str:
        assert self._end is not None
        return self._end

    async def _deliver(self, publish: Publish) -> None:
        """The publish path, given up on when the stream's end is not acknowledged within
        :attr:`deliver_timeout` of the stream being over."""
        sending = asyncio.ensure_future(publish(self._stream, self._pieces(), self._marker))
        over = asyncio.ensure_future(self._over.wait())
        try:
            await asyncio.wait({sending, over}, return_when=asyncio.FIRST_COMPLETED)
            if not sending.done():
                await asyncio.wait({sending}, timeout=self.deliver_timeout)
        finally:
            over.cancel()
        if not sending.done():
            # Cancelled, the path still tries its cancelled marker (shielded): a second
            # cancel, a moment later, ends that try too.
            for _ in range(2):
                sending.cancel()
                await asyncio.wait({sending}, timeout=1.0)
                if sending.done():
                    break
            raise TimeoutError(f"its end was not acknowledged within "
                               f"{self.deliver_timeout:g} s")
        await sending

    async def _run(self, publish: Publish) -> None:
        request = self.meta.request_id
        try:
            await self._deliver(publish)
        except asyncio.CancelledError:
            self._settle()
            raise
        except Exception as exc:
            # The publish path sent the error marker if it still could.
            self._settle()
            log.warning("request %s: the pushed stream %s: %s", request,
                        "was dropped" if self.outcome == DROPPED else "ended with error",
                        exc)
            return
        self._settle()
        if self.outcome != COMPLETED:
            log.warning("request %s: the pushed stream ended with error: its queue of %d "
                        "bytes (or all streams' together) overflowed", request, self.limit)

    def _settle(self) -> None:
        """Count what became of the stream; give its queue's bytes back."""
        with self._lock:
            left, self._queue = sum(map(len, self._queue)), deque()
            self._queued = 0
            if self._end is None:
                self._end = END_CANCELLED
        if left:
            self._budget.give(left)
        delivered = self._stream.delivered_end
        if delivered is None:
            self.outcome = DROPPED
        elif delivered == self._end and not self.overflowed:
            self.outcome = COMPLETED  # as its caller said: eof, or its own error or cancel
        else:
            self.outcome = ENDED_WITH_ERROR
        self._stats[self.outcome] += 1
        if self.overflowed:
            self._stats["overflowed"] += 1
