"""Publishes response bodies to the input topic exactly as the pipeline expects to read them.

Gateways call :class:`ChunkPublisher` while they relay a live stream; ``toolwire publish`` uses
the same code to replay captured bodies, so a capture exercises the very path production
traffic takes. The contract (see :mod:`toolwire.stream.messages`):

- key: the session id, or the request id when there is no session, so that every request of a
  session lands on one partition, in order, on the worker that owns the session;
- value: the raw body bytes exactly as read (any slicing; the processor re-frames them);
- headers: ``request-id`` and ``chunk-seq`` (0, 1, 2, ... with no gap) on every message, plus
  ``provider``, ``model`` and ``declared-tools`` when known;
- the last message of a request carries ``end-of-stream`` (``eof``, ``error`` or
  ``cancelled``), an empty value and the next sequence number.

Because the value is any slicing of the body, a publisher may also join consecutive slices
into one message (``coalesce_ms``): a server that flushes one tiny SSE event at a time would
otherwise cost one Kafka record, and one record of processor work, per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, Self

from aiokafka import AIOKafkaProducer

from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REQUEST_ID,
)

__all__ = [
    "DEFAULT_COALESCE_BYTES",
    "END_CANCELLED",
    "END_EOF",
    "END_ERROR",
    "BrokerUnreachable",
    "Cancellable",
    "ChunkPublisher",
    "Coalescer",
    "CoalescingClock",
    "PublishError",
    "PublishReport",
    "RequestMeta",
    "TopicNotFound",
    "publish_captures",
    "split_events",
    "split_fixed",
]

log = logging.getLogger("toolwire.publish")

END_EOF: Final = "eof"
END_ERROR: Final = "error"
END_CANCELLED: Final = "cancelled"

#: The aiokafka options that ``ChunkPublisher(security=...)`` accepts.
SECURITY_OPTIONS: Final = frozenset({
    "security_protocol", "ssl_context", "sasl_mechanism", "sasl_plain_username",
    "sasl_plain_password", "sasl_kerberos_service_name", "sasl_kerberos_domain_name",
    "sasl_oauth_token_provider"})

#: Short enough not to add visible latency to a live stream, long enough that a burst of small
#: SSE events shares one produce request instead of paying a round trip each.
DEFAULT_LINGER_MS: Final = 5
DEFAULT_CONNECT_TIMEOUT: Final = 30.0
#: Size cap of one coalesced message: a small fraction of Kafka's default 1 MiB
#: ``max.message.bytes``, so a coalesced message never risks the broker's limit, yet far more
#: than the few KiB a burst of SSE events within a short window usually holds, so the cap
#: rarely cuts a window short.
DEFAULT_COALESCE_BYTES: Final = 65536

Headers = list[tuple[str, bytes]]


class PublishError(RuntimeError):
    """Publishing could not even begin; the message says what to fix."""


class BrokerUnreachable(PublishError):
    """No broker answered within the connect timeout."""


class TopicNotFound(PublishError):
    """The broker does not have the topic (the local broker never auto-creates topics)."""


@dataclass(frozen=True)
class RequestMeta:
    """Who a stream belongs to: becomes the key and the headers of every message."""

    request_id: str
    session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    #: ``None``: unknown (any tool name is accepted downstream). An empty sequence: the request
    #: declared no tools, so downstream every tool call is an unknown tool.
    declared_tools: Sequence[str] | None = None

    def __post_init__(self) -> None:
        # The processor dead-letters a message without a request id; better to refuse it here,
        # where the caller can still fix it, than to publish a stream that can never assemble.
        if not self.request_id:
            raise ValueError("request_id must not be empty")
        if isinstance(self.declared_tools, str):
            raise TypeError("declared_tools is a sequence of names, not one string")
        for name in self.declared_tools or ():
            if "," in name or not name.strip():
                raise ValueError(
                    f"declared tool name {name!r} cannot travel in the comma-separated "
                    f"{H_DECLARED_TOOLS} header"
                )

    @property
    def key(self) -> str:
        """The partitioning key: all requests of a session stay together and in order."""
        return self.session_id or self.request_id

    def headers(self) -> Headers:
        """Headers shared by every message of the request.

        They go on every message, not only the first, so a consumer that starts mid-stream
        (or a human reading the topic) still sees whose chunk it is; they are a few bytes.
        """
        out: Headers = [(H_REQUEST_ID, self.request_id.encode())]
        if self.provider is not None:
            out.append((H_PROVIDER, self.provider.encode()))
        if self.model is not None:
            out.append((H_MODEL, self.model.encode()))
        if self.declared_tools is not None:
            out.append((H_DECLARED_TOOLS, ",".join(self.declared_tools).encode()))
        return out


@dataclass(frozen=True)
class PublishReport:
    """What the broker acknowledged for one request."""

    request_id: str
    #: Body messages actually sent (the end marker is not counted). Without coalescing that is
    #: the number of non-empty slices; with ``coalesce_ms`` it is the number of coalesced
    #: messages, usually fewer.
    chunks: int
    #: Body bytes, i.e. the sum of the chunk values (the same with or without coalescing).
    bytes: int
    #: ``eof``, or ``None`` when the stream was deliberately left open (``end=False``).
    end: str | None
    #: ``None`` only when nothing at all was sent (an empty body with ``end=False``).
    partition: int | None
    first_offset: int | None
    last_offset: int | None

    @property
    def messages(self) -> int:
        return self.chunks + (self.end is not None)

    def line(self) -> str:
        """One human- and grep-friendly line (what ``toolwire publish`` prints)."""
        offsets = (
            "-" if self.first_offset is None else f"{self.first_offset}-{self.last_offset}"
        )
        partition = "-" if self.partition is None else str(self.partition)
        return (
            f"{self.request_id} chunks={self.chunks} bytes={self.bytes} "
            f"end={self.end or '-'} partition={partition} offsets={offsets}"
        )


# --------------------------------------------------------------------------- slicing

def split_events(body: bytes) -> list[bytes]:
    """Cut ``body`` after each SSE event's blank line, losing and changing nothing.

    Replaying a capture one event per message reproduces what a server flushing event by
    event sends, so ``b"".join(split_events(body)) == body`` must hold exactly: the pipeline
    sees the very bytes of the capture, with CR, CRLF or LF line ends, a BOM and any bytes after
    ``[DONE]`` left as they are.

    A piece starts at the first line of an event; extra blank lines (which dispatch nothing)
    stay with the event before them, and blank lines at the very start with the first event,
    so that no message carries only blank lines. Whatever trails without a closing blank
    line is the last piece. ``\\r\\n`` is one line end, so no cut falls between ``\\r`` and
    ``\\n``.
    """
    pieces: list[bytes] = []
    start = 0
    pos = 0  # where the current line starts
    n = len(body)
    seen_content = False
    prev_blank = False
    while pos < n:
        cr = body.find(b"\r", pos)
        lf = body.find(b"\n", pos)
        if cr < 0 and lf < 0:
            eol = end = n  # an unterminated last line
        elif cr < 0 or 0 <= lf < cr:
            eol, end = lf, lf + 1
        else:
            eol = cr
            end = cr + 2 if body[cr + 1:cr + 2] == b"\n" else cr + 1
        blank = eol == pos
        if not blank:
            if prev_blank and seen_content:
                pieces.append(body[start:pos])
                start = pos
            seen_content = True
        prev_blank = blank
        pos = end
    if start < n:
        pieces.append(body[start:])
    return pieces


def split_fixed(body: bytes, size: int) -> list[bytes]:
    """``size``-byte slices (the last may be shorter): the worst case a gateway can produce.

    Slices ignore lines, CRLF pairs and UTF-8 characters on purpose; the pipeline must cope.
    """
    if size <= 0:
        raise ValueError(f"slice size must be positive, got {size}")
    return [body[i:i + size] for i in range(0, len(body), size)]


# --------------------------------------------------------------------------- coalescing

def _check_coalescing(coalesce_ms: float, coalesce_bytes: int) -> None:
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
    with made-up clocks; :meth:`ChunkPublisher.publish_stream` drives it with the publisher's
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
    :class:`ChunkPublisher` uses unless given another.

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


# --------------------------------------------------------------------------- publisher

class _Stream:
    """Per-request state, kept apart so that the failure paths see what was already sent."""

    __slots__ = ("base", "bytes", "chunks", "ended", "futures", "key", "request_id", "seq")

    def __init__(self, meta: RequestMeta) -> None:
        self.request_id = meta.request_id
        self.key = meta.key.encode()
        self.base = meta.headers()
        self.seq = 0
        self.chunks = 0
        self.bytes = 0
        self.ended = False
        self.futures: list[asyncio.Future[Any]] = []


class ChunkPublisher:
    """Publishes streams to one topic through one idempotent producer.

    ``source`` is a bootstrap string (the publisher then owns a producer with ``acks="all"``
    and idempotence, started and stopped by ``async with``) or an already started
    :class:`aiokafka.AIOKafkaProducer`, which stays the caller's to stop. A borrowed producer
    should be configured the same way: without idempotence a retried batch can be duplicated
    or reordered, which downstream reads as a sequence gap.

    One publisher serves any number of concurrent streams: each keeps its own sequence, and
    the records of one stream are enqueued in order, which is all the ordering needed.

    ``security`` is how the owned producer connects to a secured cluster: aiokafka's
    connection options (``security_protocol``, ``ssl_context``, ``sasl_mechanism``,
    ``sasl_plain_username``, ``sasl_plain_password``). The publisher reads no environment;
    a gateway configured like a worker gets them from
    ``toolwire.config.security.client_options(Settings.from_env())``, or builds them itself::

        ChunkPublisher("kafka1:9093", "llm.sse.chunks", security={
            "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user, "sasl_plain_password": password,
            "ssl_context": aiokafka.helpers.create_ssl_context(cafile="ca.pem")})

    ``coalesce_ms`` > 0 joins the slices one stream produces within that many milliseconds
    into one message of at most ``coalesce_bytes`` bytes (see :class:`Coalescer`; a single
    larger slice goes alone). A server that flushes every small SSE event makes one record
    per event, and each record costs a produce entry, a header set and a processor step;
    coalescing trades that for up to ``coalesce_ms`` of added latency on the first slice of
    each window. The values stay the body's bytes in order, so the consumer assembles the same
    response either way. 0 (the default) sends one message per slice, as they come.

    ``clock`` is what the coalescing windows are timed with and closed by (see
    :class:`CoalescingClock`): by default (``None``) the running event loop's own clock and
    timers. It is the seam for deterministic tests, which pass a fake clock that moves only
    when they advance it; a gateway has no reason to set it.
    """

    def __init__(
        self,
        source: str | AIOKafkaProducer,
        topic: str,
        *,
        linger_ms: int = DEFAULT_LINGER_MS,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        security: Mapping[str, Any] | None = None,
        coalesce_ms: float = 0.0,
        coalesce_bytes: int = DEFAULT_COALESCE_BYTES,
        clock: CoalescingClock | None = None,
        **producer_options: Any,
    ) -> None:
        _check_coalescing(coalesce_ms, coalesce_bytes)
        if clock is not None and not (callable(getattr(clock, "time", None))
                                      and callable(getattr(clock, "call_at", None))):
            raise TypeError(f"clock must have time() and call_at(when, callback) like an "
                            f"event loop, got {clock!r}")
        self.coalesce_ms = coalesce_ms
        self.coalesce_bytes = coalesce_bytes
        self._clock = clock
        self.topic = topic
        self.connect_timeout = connect_timeout
        self._owned = isinstance(source, str)
        unknown = set(security or ()) - SECURITY_OPTIONS
        if unknown:
            raise TypeError(f"not a connection security option: {', '.join(sorted(unknown))} "
                            f"(expected some of {', '.join(sorted(SECURITY_OPTIONS))})")
        if isinstance(source, str):
            self.bootstrap: str | None = source
            options: dict[str, Any] = {
                "acks": "all",
                "enable_idempotence": True,
                "linger_ms": linger_ms,
                **(security or {}),
                **producer_options,
            }
            self._producer: Any = None
            self._options = options
        else:
            if producer_options or security:
                raise TypeError("producer and security options only apply when given a "
                                "bootstrap string (a borrowed producer is already connected)")
            self.bootstrap = None
            self._producer = source
            self._options = {}

    @property
    def producer(self) -> Any:
        if self._producer is None:
            raise RuntimeError("ChunkPublisher is not started (use `async with`)")
        return self._producer

    async def start(self) -> None:
        """Connect (bounded by ``connect_timeout``) and make sure the topic exists.

        Both checks happen here so that a wrong address or topic fails at once with a message
        instead of as a timeout on the first chunk of a live stream.
        """
        if self._owned and self._producer is None:
            producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, **self._options)
            try:
                await asyncio.wait_for(producer.start(), self.connect_timeout)
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(producer.stop(), 5)
                if not isinstance(exc, Exception):
                    raise
                why = "no answer" if isinstance(exc, TimeoutError) else str(exc) or repr(exc)
                raise BrokerUnreachable(
                    f"cannot reach Kafka at {self.bootstrap} within "
                    f"{self.connect_timeout:g}s: {why}"
                ) from exc
            self._producer = producer
        try:
            await self._check_topic()
        except BaseException:
            await self.stop()
            raise

    async def _check_topic(self) -> None:
        try:
            cluster = await asyncio.wait_for(
                self.producer.client.fetch_all_metadata(), self.connect_timeout
            )
        except TimeoutError as exc:
            raise BrokerUnreachable(
                f"Kafka did not answer a metadata request within {self.connect_timeout:g}s"
            ) from exc
        if self.topic not in cluster.topics():
            where = f" on {self.bootstrap}" if self.bootstrap else ""
            raise TopicNotFound(
                f"topic {self.topic!r} does not exist{where}; create it first (the pipeline "
                "creates its topics when it starts; brokers here do not auto-create them)"
            )

    async def stop(self) -> None:
        """Flush and close an owned producer; a borrowed one is left running."""
        if self._owned and self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def publish_stream(
        self, meta: RequestMeta, body: AsyncIterator[bytes], *, end: bool = True
    ) -> PublishReport:
        """Publish ``body`` as it arrives; return once the broker acknowledged every message.

        Each message is enqueued without waiting for its acknowledgement, so a slow broker
        round trip never stalls the relay; ordering holds because every message has the same
        key (one partition) and the producer is idempotent. All acknowledgements are awaited
        at the end, which is what makes a returned report a delivery guarantee.

        Empty slices are skipped: they carry no bytes and would spend a sequence number.

        With ``coalesce_ms`` the body is read in a helper task, so that a window can close
        while the body is quiet (a timeout on the iterator itself would cancel it, and an async
        generator cancelled mid-step is finished for good). Whatever is still buffered is sent
        before the end marker, on every path below (and also with ``end=False``).

        When ``body`` raises, an ``error`` end marker is sent and the exception propagates; when
        the task is cancelled, a ``cancelled`` marker is sent, shielded from the cancellation,
        and :class:`asyncio.CancelledError` propagates. Either way the consumer learns at once
        that the stream is over instead of waiting for it to expire. A failure of the producer
        itself is treated the same way, best effort (the marker may fail too); a marker that
        cannot be delivered is logged, never raised in place of the original exception.

        ``end=False`` sends no end marker at all, leaving the stream open as a gateway that
        crashed would: useful to exercise expiry downstream.
        """
        stream = _Stream(meta)
        producer = self.producer
        batch = (Coalescer(self.coalesce_ms / 1000, self.coalesce_bytes)
                 if self.coalesce_ms > 0 else None)
        try:
            if batch is None:
                async for piece in body:
                    if piece:
                        await self._send_chunk(producer, stream, piece)
            else:
                await self._pump(producer, stream, body, batch)
            if end:
                await self._send(producer, stream, b"", END_EOF)
            results = await asyncio.shield(asyncio.gather(*stream.futures))
        except asyncio.CancelledError:
            marker = END_CANCELLED if end and not stream.ended else None
            if marker is not None or (batch is not None and batch.pending):
                try:
                    await asyncio.shield(self._close(producer, stream, marker, batch))
                except Exception as marker_exc:
                    log.warning("request %s: the cancelled marker was not delivered: %s",
                                meta.request_id, marker_exc)
            raise
        except Exception as exc:
            marker = END_ERROR if end and not stream.ended else None
            if marker is not None or (batch is not None and batch.pending):
                try:
                    await self._close(producer, stream, marker, batch)
                except Exception as marker_exc:
                    log.warning("request %s: the error marker was not delivered: %s",
                                meta.request_id, marker_exc)
                    exc.add_note(f"the {H_END}: {END_ERROR} marker was not delivered either: "
                                 f"{marker_exc!r}")
            raise
        first = results[0] if results else None
        last = results[-1] if results else None
        return PublishReport(
            request_id=meta.request_id,
            chunks=stream.chunks,
            bytes=stream.bytes,
            end=END_EOF if end else None,
            partition=None if first is None else int(first.partition),
            first_offset=None if first is None else int(first.offset),
            last_offset=None if last is None else int(last.offset),
        )

    async def _pump(
        self, producer: Any, stream: _Stream, body: AsyncIterator[bytes], batch: Coalescer
    ) -> None:
        """Feed ``body`` through ``batch``, sending each message as soon as it is complete.

        The read of the next slice stays pending across a window's timeout (never cancelled
        by it), and messages are sent while it is pending, so a quiet body still gets its
        buffered bytes out when the window elapses. Time is read from, and the window's timer
        set on, the publisher's clock (the running loop unless one was given).
        """
        clock: CoalescingClock = (self._clock if self._clock is not None
                                  else asyncio.get_running_loop())
        pull: asyncio.Task[bytes | None] | None = None
        try:
            while True:
                await self._drain(producer, stream, batch)
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
        await self._drain(producer, stream, batch)

    async def _drain(self, producer: Any, stream: _Stream, batch: Coalescer) -> None:
        """Send the finished messages, in order; each leaves ``batch`` only once enqueued."""
        while batch.ready:
            await self._send_chunk(producer, stream, batch.ready[0])
            batch.ready.popleft()

    async def _send_chunk(self, producer: Any, stream: _Stream, value: bytes) -> None:
        await self._send(producer, stream, value)
        stream.chunks += 1
        stream.bytes += len(value)

    async def _send(
        self, producer: Any, stream: _Stream, value: bytes, end: str | None = None
    ) -> None:
        """Enqueue one message and take the next sequence number.

        ``send()`` either enqueues the record and returns its delivery future, or raises
        (also when cancelled) having enqueued nothing, so the counter only moves for records
        that will go out and the next one, or the end marker, never leaves a gap.
        """
        headers = [*stream.base, (H_CHUNK_SEQ, str(stream.seq).encode())]
        if end is not None:
            headers.append((H_END, end.encode()))
        future = await producer.send(self.topic, value=value, key=stream.key, headers=headers)
        stream.futures.append(future)
        stream.seq += 1
        if end is not None:
            stream.ended = True

    async def _close(
        self, producer: Any, stream: _Stream, end: str | None, batch: Coalescer | None
    ) -> None:
        """Send what is still buffered, then the end marker (if any), and wait until all of it
        is acknowledged; raise only when the marker itself failed.

        Buffered bytes go first so that the consumer sees as much of the body as the gateway
        read. The first of them that cannot be sent stops the rest: sending later bytes
        would leave a hole in the body that contiguous sequence numbers could not reveal,
        whereas a short body ending in ``error`` or ``cancelled`` is exactly what happened.
        """
        if batch is not None:
            batch.seal()
            try:
                await self._drain(producer, stream, batch)
            except Exception as exc:
                # Sizes only: the body may hold tool arguments, which can carry secrets.
                log.warning("request %s: %d buffered body bytes were not sent before the "
                            "end: %s", stream.request_id, batch.pending, exc)
        if end is None:
            return
        await self._send(producer, stream, b"", end)
        # The chunks' own failures (if any) must not hide whether the marker went out.
        results = await asyncio.shield(asyncio.gather(*stream.futures, return_exceptions=True))
        if isinstance(results[-1], BaseException):
            raise results[-1]


# --------------------------------------------------------------------------- captures

async def _iterate(pieces: Iterable[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def load_captures(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[Path, bytes]]:
    """Read every capture before connecting: a typo must not leave half the files published."""
    return [(Path(p), Path(p).read_bytes()) for p in paths]


def _request_ids(
    files: Sequence[Path], session: str, request: str | None
) -> list[str]:
    if request is not None:
        if len(files) != 1:
            raise ValueError("a request id can only be given for a single capture")
        return [request]
    # Random suffix: replaying the same capture twice must make two requests, not a
    # duplicate that the pipeline's dedupe would swallow.
    return [f"{session}-{f.stem}-{secrets.token_hex(4)}" for f in files]


async def publish_loaded(
    bootstrap: str,
    topic: str,
    loaded: Sequence[tuple[Path, bytes]],
    *,
    session: str,
    request: str | None,
    provider: str | None,
    model: str | None,
    tools: Sequence[str] | None,
    slice_size: int | None,
    end: bool,
    progress: Callable[[PublishReport], object] | None,
    connect_timeout: float,
    security: Mapping[str, Any] | None = None,
    coalesce_ms: float = 0.0,
    coalesce_bytes: int = DEFAULT_COALESCE_BYTES,
) -> list[PublishReport]:
    ids = _request_ids([path for path, _ in loaded], session, request)
    metas = [
        RequestMeta(request_id=rid, session_id=session, provider=provider, model=model,
                    declared_tools=None if tools is None else tuple(tools))
        for rid in ids
    ]
    if slice_size is not None and slice_size <= 0:
        raise ValueError(f"slice size must be positive, got {slice_size}")
    reports: list[PublishReport] = []
    async with ChunkPublisher(bootstrap, topic, connect_timeout=connect_timeout,
                              security=security, coalesce_ms=coalesce_ms,
                              coalesce_bytes=coalesce_bytes) as publisher:
        for meta, (_, body) in zip(metas, loaded, strict=True):
            pieces = split_events(body) if slice_size is None else split_fixed(body, slice_size)
            report = await publisher.publish_stream(meta, _iterate(pieces), end=end)
            reports.append(report)
            if progress is not None:
                progress(report)
    return reports


async def publish_captures(
    bootstrap: str,
    topic: str,
    paths: Sequence[str | os.PathLike[str]],
    *,
    session: str,
    request: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    tools: Sequence[str] | None = None,
    slice_size: int | None = None,
    end: bool = True,
    progress: Callable[[PublishReport], object] | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    security: Mapping[str, Any] | None = None,
    coalesce_ms: float = 0.0,
    coalesce_bytes: int = DEFAULT_COALESCE_BYTES,
) -> list[PublishReport]:
    """Publish each captured body as one request of ``session``, in order.

    One SSE event per message by default (what a server flushing per event produces), or
    ``slice_size``-byte slices. The request id defaults to ``<session>-<file stem>-<8 hex>``;
    ``request`` fixes it and is only allowed with one capture. ``end=False`` leaves out the
    end marker. ``progress`` is called with each report as soon as that request is delivered.
    ``security``, ``coalesce_ms``, ``coalesce_bytes``: as for :class:`ChunkPublisher`. A
    capture's slices are replayed without pauses, so with coalescing they all arrive within
    the first window and join into messages of up to ``coalesce_bytes``.

    Raises OSError for an unreadable file (before anything is published), ValueError for
    bad arguments, :class:`PublishError` when the broker or the topic is not there.
    """
    loaded = load_captures(paths)
    return await publish_loaded(
        bootstrap, topic, loaded, session=session, request=request, provider=provider,
        model=model, tools=tools, slice_size=slice_size, end=end, progress=progress,
        connect_timeout=connect_timeout, security=security, coalesce_ms=coalesce_ms,
        coalesce_bytes=coalesce_bytes,
    )
