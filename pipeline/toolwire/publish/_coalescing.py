"""Coalescing: joining one stream's consecutive slices into fewer messages.

The invariants: the messages are the stream's bytes, in order, with nothing added, dropped or
moved (the consumer re-frames any slicing, so it assembles the same response either way); no
message grows past the cap, except a single slice that is already as large, which goes alone
and unsplit; a window opened by a slice ends at most ``window`` seconds later, on its own
timer even while the body is quiet; and a message leaves the buffer only once its send has
been enqueued, so a failing or cancelled send leaves its bytes for the failure path to send.

Why here, apart from Kafka: :class:`Coalescer` is pure (the caller supplies the time), and
:func:`pump` drives it from a :class:`CoalescingClock`, the running loop's by default, so that
tests pass a fake clock and assert every window by content, order and fake time.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, Protocol

#: Size cap of one coalesced message: a small fraction of Kafka's default 1 MiB
#: ``max.message.bytes``, so a coalesced message never risks the broker's limit, yet far more
#: than the few KiB a burst of SSE events within a short window usually holds, so the cap
#: rarely cuts a window short.
DEFAULT_COALESCE_BYTES: Final = 65536

#: Sends one finished message (enqueues it; raises having enqueued nothing).
Send = Callable[[bytes], Awaitable[None]]


def check_coalescing(coalesce_ms: float, coalesce_bytes: int) -> None:
    """Refuse settings that would silently mean something else (a negative window read as
    "off", a cap of 0 sending every slice alone) before any stream depends on them."""
    if isinstance(coalesce_ms, bool) or not isinstance(coalesce_ms, int | float):
        raise TypeError(f"coalesce_ms must be a number of milliseconds, got {coalesce_ms!r}")
    if not math.isfinite(coalesce_ms) or coalesce_ms < 0:
        raise ValueError(f"coalesce_ms must be a finite number of milliseconds >= 0 "
                         f"(0 turns coalescing off), got {coalesce_ms!r}")
    if isinstance(coalesce_bytes, bool) or not isinstance(coalesce_bytes, int):
        raise TypeError(f"coalesce_bytes must be a whole number of bytes, got "
                        f"{coalesce_bytes!r}")
    if coalesce_bytes < 1:
        raise ValueError(f"coalesce_bytes must be at least 1 byte, got {coalesce_bytes}")


class Coalescer:
    """Joins one stream's slices into fewer messages; pure: the caller supplies the time.

    Kept apart from Kafka and from the event loop so that its rules can be tested exactly
    with made-up clocks; :func:`pump` drives it, for
    :meth:`~toolwire.publish.ChunkPublisher.publish_stream`, with the publisher's
    :class:`CoalescingClock` (the running loop's by default) and that clock's timer. The
    rules:

    - the first slice after a send opens a window of ``window`` seconds, and slices that
      arrive before it elapses join the buffer; the buffer becomes a message when the window
      has elapsed (:meth:`expire`, or :meth:`add` with a slice that came too late);
    - a slice that would take the buffer past ``cap`` bytes sends the buffer first, so no
      message grows past the cap; a slice of ``cap`` bytes or more goes alone and unsplit
      (the consumer re-frames any slicing, so cutting it would buy nothing), and a buffer
      that reaches the cap goes at once, since nothing more can join it;
    - :meth:`seal` turns whatever is buffered into a message, for the end of the body and the
      failure paths.

    Finished messages wait in :attr:`ready`, oldest first. The caller removes one only after
    its send succeeded, so a send that fails or is cancelled leaves its bytes where the
    failure path can still send them, in order.
    """

    __slots__ = ("_buffer", "_size", "cap", "deadline", "ready", "window")

    def __init__(self, window: float, cap: int) -> None:
        if not window >= 0 or cap < 1:
            raise ValueError(f"need window >= 0 and cap >= 1, got {window!r} and {cap!r}")
        self.window = window
        self.cap = cap
        self._buffer: list[bytes] = []
        self._size = 0
        #: When the open window elapses; ``None`` while nothing is buffered.
        self.deadline: float | None = None
        self.ready: deque[bytes] = deque()

    @property
    def buffered(self) -> int:
        """Bytes waiting in the open window (not yet in :attr:`ready`)."""
        return self._size

    @property
    def pending(self) -> int:
        """Bytes not yet taken by the caller: the open window's and the ready messages'."""
        return self._size + sum(len(m) for m in self.ready)

    def add(self, piece: bytes, now: float) -> None:
        """Take a slice that arrived at ``now``; an empty one is ignored."""
        if not piece:
            return
        self.expire(now)
        if self._size + len(piece) > self.cap:
            self.seal()
        if not self._buffer:
            self.deadline = now + self.window
        self._buffer.append(piece)
        self._size += len(piece)
        if self._size >= self.cap:
            self.seal()

    def expire(self, now: float) -> None:
        """Close the window if it has elapsed by ``now``."""
        if self.deadline is not None and now >= self.deadline:
            self.seal()

    def seal(self) -> None:
        """Whatever is buffered becomes a message now."""
        if self._buffer:
            buffer = self._buffer
            self.ready.append(buffer[0] if len(buffer) == 1 else b"".join(buffer))
            self._buffer = []
            self._size = 0
        self.deadline = None


class Cancellable(Protocol):
    """A timer that has been set: :class:`asyncio.TimerHandle` is one."""

    def cancel(self) -> None: ...


class CoalescingClock(Protocol):
    """What a publisher measures its coalescing windows with and closes them by.

    ``time()`` is now, in seconds; ``call_at(when, callback)`` runs ``callback()`` once
    ``time()`` has reached ``when`` and returns a handle whose ``cancel()`` stops it. Every
    asyncio event loop is one (``loop.time``, ``loop.call_at``), and the running loop is what
    :class:`~toolwire.publish.ChunkPublisher` uses unless given another.

    This is the seam for deterministic tests: a fake whose time moves only when the test
    advances it (running the callbacks that fall due) closes a window exactly when the test
    says so, with no real sleep and no dependence on how busy the machine is.
    """

    def time(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], object], /) -> Cancellable: ...


async def _first_of(
    pull: asyncio.Future[Any], deadline: float | None, clock: CoalescingClock
) -> None:
    """Return as soon as ``pull`` is done or ``clock`` reaches ``deadline`` (never, for
    ``None``), whichever comes first, leaving ``pull`` as it is.

    ``asyncio.wait((pull,), timeout=...)`` with the timer set on ``clock`` instead of on the
    loop; cancelling the caller cancels only the wait.
    """
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    timer = None if deadline is None else clock.call_at(deadline, wake)
    pull.add_done_callback(wake)
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        pull.remove_done_callback(wake)


async def _next_piece(body: AsyncIterator[bytes]) -> bytes | None:
    """The body's next slice, or ``None`` once it is exhausted.

    A falsy slice comes back as ``b""`` (skipped like any empty slice) so that ``None`` can
    only mean the end.
    """
    try:
        return await anext(body) or b""
    except StopAsyncIteration:
        return None


def _forget(task: asyncio.Future[Any]) -> None:
    """Mark an abandoned read's outcome as seen: the stream is already ending for another
    reason, and asyncio would otherwise log that its exception was never retrieved."""
    if not task.cancelled():
        task.exception()


async def pump(body: AsyncIterator[bytes], batch: Coalescer, clock: CoalescingClock,
               send: Send) -> None:
    """Feed ``body`` through ``batch``, sending each message as soon as it is complete.

    The read of the next slice stays pending across a window's timeout (never cancelled
    by it), and messages are sent while it is pending, so a quiet body still gets its
    buffered bytes out when the window elapses. Time is read from, and the window's timer
    set on, ``clock``.
    """
    pull: asyncio.Task[bytes | None] | None = None
    try:
        while True:
            await drain(batch, send)
            if pull is None:
                pull = asyncio.create_task(_next_piece(body))
            await _first_of(pull, batch.deadline, clock)
            if not pull.done():
                # Only this window's timer ends the wait without a slice (nothing else
                # touches the deadline meanwhile), so seal rather than compare clocks:
                # the loop may run a timer a clock tick early.
                batch.seal()
                continue
            piece = pull.result()  # the body's own exception propagates from here
            pull = None
            if piece is None:
                break
            batch.add(piece, clock.time())
    finally:
        if pull is not None:
            if pull.done() and not pull.cancelled() and pull.exception() is None:
                # Read just as the stream failed: the body gave it up, so it goes out
                # with the rest of the buffer.
                batch.add(pull.result() or b"", clock.time())
            else:
                # Reaches the body as the cancellation would without coalescing.
                pull.cancel()
                pull.add_done_callback(_forget)
    batch.seal()
    await drain(batch, send)


async def drain(batch: Coalescer, send: Send) -> None:
    """Send the finished messages, in order; each leaves ``batch`` only once enqueued."""
    while batch.ready:
        await send(batch.ready[0])
        batch.ready.popleft()
