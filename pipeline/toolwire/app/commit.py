"""The at-least-once commit: what must be durable before input offsets are committed.

The invariant: an input offset is committed only once everything the messages before it
produced is acknowledged by the broker — their records (Faust's attached messages) *and* the
table changelog writes they caused, which Faust neither attaches nor waits for. Committing
past a changelog write still in flight loses it in a crash: the restarted worker skips the
input it covered and the response comes back with a hole (faust-streaming #606 and #707, fix 1
of :mod:`toolwire.app.fixes`, which calls :meth:`Checkpoint.commit` right before Faust commits
the offsets). The stored chunks of a decided response are deleted only after a drain that
began after its done marker (see :mod:`toolwire.stream.store`), so that a crash keeps either
both or the marker.

:meth:`Checkpoint.commit` is the one place that sequence is written; the sweep timer runs the
same function for an idle partition (which commits nothing, so its held writes and deletions
would otherwise wait for its next message).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

log = logging.getLogger("toolwire.app")

#: Drains (each followed by a re-send of what failed) before a commit gives up, at least,
#: and the pause before each re-send (the last one repeats): a broker that lost leadership
#: takes seconds to hand it over, and an idempotent producer that saw
#: ``OutOfOrderSequenceNumber`` needs its in-flight batches to fail first (about 16 s in
#: all). The commit goes on re-sending past them until its ``retry_timeout``.
RESEND_ATTEMPTS = 8
RESEND_BACKOFF = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0)


class Held(Protocol):
    """What holds table writes between commits (:class:`toolwire.stream.processor.Processor`)."""

    def flush(self) -> object: ...

    def drained(self) -> None: ...

    def retire(self) -> None: ...


class Checkpoint:
    """The commit of one worker: its held table writes, its producer, its changelog tables.

    ``drain`` waits until everything produced so far is acknowledged (raising if it cannot);
    ``resend`` sends again the changelog writes the producer gave up on and returns how many;
    ``fatal`` stops the worker when they keep failing (without it, the commit raises);
    ``gate`` returns once writing is safe (the zombie fence, :mod:`toolwire.app.fencing`);
    ``retry_timeout``: seconds failed changelog writes are sent again before the commit gives
    up (``TOOLWIRE_PUBLISH_RETRY_TIMEOUT``, as long as a record's publish: a broker isolated
    from its cluster keeps leading its partitions until the controller fences it, 10 s and
    more), and never fewer than :data:`RESEND_ATTEMPTS` times.
    """

    def __init__(self, held: Held, drain: Callable[[], Awaitable[None]],
                 resend: Callable[[], int],
                 fatal: Callable[[BaseException], object] | None = None,
                 gate: Callable[[], Awaitable[None]] | None = None,
                 retry_timeout: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.held = held
        self.gate = gate
        self.retry_timeout = retry_timeout
        self.clock = clock
        self.drain = drain
        self.resend = resend
        self.fatal = fatal
        #: Drains counted (step 4) so far: the sweep tells by it whether a commit ran since.
        self.counted = 0

    async def commit(self, *, offsets: bool = True) -> bool:
        """Make what is held durable, in six steps; whether the drain was counted.

        0. **Gate**: wait while the worker's group session is in doubt (the fence): a worker
           whose partitions may belong to another writes nothing.
        1. **Flush** the held table writes (segments, metadata, markers, deletions) to the
           tables and their changelogs.
        2. **Drain** the producer: every message produced so far, those writes included, is
           acknowledged by the broker.
        3. **Resend** the changelog writes the producer gave up on (with the keys' current
           values), draining again after each, until none failed.
        4. **Count the drain**: every write made before it began is now durable.
        5. **Retire**: delete the stored chunks whose replacement (a done marker, a segment)
           is now durable; the next flush writes the deletions.

        ``offsets``: input offsets are committed right after (Faust's commit). Then every
        write must be durable: a failed drain raises, and writes that still fail after
        :data:`RESEND_ATTEMPTS` re-sends (with :data:`RESEND_BACKOFF`) and ``retry_timeout``
        seconds stop the worker (``fatal``) rather than commit past them. Without (the sweep
        of an idle partition), a failed drain or re-send ends the commit at that step and the
        next commit does the rest.
        """
        # 0. Gate.
        if self.gate is not None:
            await self.gate()
        # 1. Flush.
        self.held.flush()
        # 2. Drain.
        try:
            await self.drain()
        except Exception as exc:
            if offsets:
                raise
            log.warning("sweep: the producer did not drain (%s): deletions wait for the next "
                        "commit", type(exc).__name__)
            return False
        # 3. Resend.
        deadline = self.clock() + self.retry_timeout
        attempts = 0
        while failed := self.resend():
            if not offsets:
                return False  # sent again: the next commit drains and checks them
            log.warning("%d changelog writes failed (attempt %d; at least %d, for up to "
                        "%g s): sent again before committing offsets", failed, attempts + 1,
                        RESEND_ATTEMPTS, self.retry_timeout)
            await asyncio.sleep(RESEND_BACKOFF[min(attempts, len(RESEND_BACKOFF) - 1)])
            attempts += 1
            await self.drain()
            if attempts >= RESEND_ATTEMPTS and self.clock() >= deadline:
                error = RuntimeError(
                    f"changelog writes still fail after {attempts} attempts in "
                    f"{self.retry_timeout:g} s or more: not committing offsets past them")
                if self.fatal is None:
                    raise error
                self.fatal(error)
                return False
        # 4. Count the drain.
        self.held.drained()
        self.counted += 1
        # 5. Retire.
        self.held.retire()
        return True


async def drain_producer(app: Any, timeout: float = 60.0) -> None:
    """Every message produced so far by ``app`` is acknowledged by the broker, or this raises.

    ``Producer.flush()`` alone is not enough: Faust's buffer (where table writes wait) gives
    up after 0.1 s without progress and returns with messages still queued.
    """
    producer = app.producer
    buffer = producer.buffer
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    for _ in range(2):  # the second round catches a message dequeued but not yet handed over
        while buffer.size:
            if loop.time() > deadline:
                raise RuntimeError(f"{buffer.size} produced messages not sent in {timeout} s; "
                                   "not committing offsets past them")
            await buffer.flush_atmost(buffer.size)
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        await producer.flush()
