"""The publisher: response bodies to the input topic exactly as the pipeline expects to read
them.

Gateways call :class:`ChunkPublisher` while they relay a live stream; ``toolwire publish`` uses
the same code to replay captured bodies, so a capture exercises the very path production
traffic takes. What every request becomes (the contract is
:mod:`toolwire.stream.messages`, whose :class:`~toolwire.stream.messages.RequestMeta` builds
every header sent here):

- key: the session id, or the request id when there is no session, so that every request of a
  session lands on one partition, in order, on the worker that owns the session;
- value: the raw body bytes exactly as read (any slicing; the processor re-frames them);
- headers: ``request-id`` and ``chunk-seq`` (0, 1, 2, ... with no gap) on every message, plus
  ``provider``, ``model`` and ``declared-tools`` when known;
- the last message of a request carries ``end-of-stream`` (``eof``, ``error`` or
  ``cancelled``), an empty value and the next sequence number — on every path, so that the
  consumer learns at once that a stream is over instead of waiting for it to expire;
- a returned :class:`PublishReport` means the broker acknowledged every message of it.

Because the value is any slicing of the body, a publisher may also join consecutive slices
into one message (``coalesce_ms``, :mod:`toolwire.publish._coalescing`): a server that flushes
one tiny SSE event at a time would otherwise cost one Kafka record, and one record of processor
work, per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self

from aiokafka import AIOKafkaProducer

from toolwire.kafka.clients import KafkaUnreachable, start_client
from toolwire.publish._coalescing import (
    DEFAULT_COALESCE_BYTES,
    Coalescer,
    CoalescingClock,
    check_coalescing,
    drain,
    pump,
)
from toolwire.publish._push import (
    DEFAULT_PUSH_STREAM_BYTES,
    DEFAULT_PUSH_TOTAL_BYTES,
    Budget,
    PushStats,
    PushStream,
)
from toolwire.stream.messages import END_CANCELLED, END_EOF, END_ERROR, H_END, RequestMeta

log = logging.getLogger("toolwire.publish")

#: The aiokafka options that ``ChunkPublisher(security=...)`` accepts.
SECURITY_OPTIONS: Final = frozenset({
    "security_protocol", "ssl_context", "sasl_mechanism", "sasl_plain_username",
    "sasl_plain_password", "sasl_kerberos_service_name", "sasl_kerberos_domain_name",
    "sasl_oauth_token_provider"})

#: Short enough not to add visible latency to a live stream, long enough that a burst of small
#: SSE events shares one produce request instead of paying a round trip each.
DEFAULT_LINGER_MS: Final = 5
DEFAULT_CONNECT_TIMEOUT: Final = 30.0


class PublishError(RuntimeError):
    """Publishing could not even begin; the message says what to fix."""


class BrokerUnreachable(PublishError):
    """No broker answered within the connect timeout."""


class TopicNotFound(PublishError):
    """The broker does not have the topic (the local broker never auto-creates topics)."""


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
    #: The end marker sent: ``eof`` (a pushed stream's also ``error`` or ``cancelled`` when
    #: its caller said so), or ``None`` when the stream was deliberately left open
    #: (``end=False``).
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


class _Stream:
    """One request being published: what was already sent, so that the failure paths see it,
    and the sending itself, so that its sequence numbers never leave a gap."""

    __slots__ = ("bytes", "chunks", "delivered_end", "ended", "futures", "key", "meta",
                 "producer", "seq", "topic")

    def __init__(self, meta: RequestMeta, publisher: ChunkPublisher) -> None:
        self.meta = meta
        self.key = meta.key.encode()
        # Builds (and caches) the request's headers now, so that a value that cannot be
        # encoded fails publish_stream before anything is sent, not as a failed stream.
        meta.message_headers(0)
        self.producer = publisher.producer  # raises when the publisher is not started
        self.topic = publisher.topic
        self.seq = 0
        self.chunks = 0
        self.bytes = 0
        self.ended = False
        #: The end marker the broker acknowledged (``None``: none yet, or it failed).
        self.delivered_end: str | None = None
        self.futures: list[asyncio.Future[Any]] = []

    async def send_chunk(self, value: bytes) -> None:
        await self.send(value)
        self.chunks += 1
        self.bytes += len(value)

    async def send(self, value: bytes, end: str | None = None) -> None:
        """Enqueue one message and take the next sequence number.

        ``send()`` either enqueues the record and returns its delivery future, or raises
        (also when cancelled) having enqueued nothing, so the counter only moves for records
        that will go out and the next one, or the end marker, never leaves a gap.
        """
        headers = self.meta.message_headers(self.seq, end)
        future = await self.producer.send(self.topic, value=value, key=self.key,
                                          headers=headers)
        self.futures.append(future)
        self.seq += 1
        if end is not None:
            self.ended = True

    async def close(self, end: str | None, batch: Coalescer | None) -> None:
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
                await drain(batch, self.send_chunk)
            except Exception as exc:
                # Sizes only: the body may hold tool arguments, which can carry secrets.
                log.warning("request %s: %d buffered body bytes were not sent before the "
                            "end: %s", self.meta.request_id, batch.pending, exc)
        if end is None:
            return
        await self.send(b"", end)
        # The chunks' own failures (if any) must not hide whether the marker went out.
        results = await asyncio.shield(asyncio.gather(*self.futures, return_exceptions=True))
        if isinstance(results[-1], BaseException):
            raise results[-1]
        self.delivered_end = end


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

    ``push_stream_bytes`` and ``push_total_bytes`` bound the queues of pushed streams
    (:meth:`open_stream`): one stream's, and all of them together; a slice that does not fit
    ends its stream with ``error`` (:class:`PushStream`). A pushed stream's end must be
    acknowledged within ``connect_timeout`` of the stream being over, or it is dropped. What
    became of every pushed stream is counted in :attr:`push_stats`.
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
        push_stream_bytes: int = DEFAULT_PUSH_STREAM_BYTES,
        push_total_bytes: int = DEFAULT_PUSH_TOTAL_BYTES,
        **producer_options: Any,
    ) -> None:
        check_coalescing(coalesce_ms, coalesce_bytes)
        for name, value in (("push_stream_bytes", push_stream_bytes),
                            ("push_total_bytes", push_total_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of bytes >= 1, got {value!r}")
        self.push_stream_bytes = push_stream_bytes
        self._budget = Budget(push_total_bytes)
        #: Pushed streams by outcome (see :class:`PushStats`).
        self.push_stats = PushStats()
        self._pushed: set[PushStream] = set()
        #: The loop the publisher was started in, where its pushed streams are sent from.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
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
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        if self._owned and self._producer is None:
            producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, **self._options)
            try:
                # Closed again by start_client when its start fails, however it fails.
                await start_client(producer, str(self.bootstrap), timeout=self.connect_timeout)
            except KafkaUnreachable as exc:  # "cannot reach Kafka at HOST:PORT (why)"
                raise BrokerUnreachable(str(exc)) from exc
            except Exception as exc:
                raise BrokerUnreachable(
                    f"cannot reach Kafka at {self.bootstrap}: {str(exc) or repr(exc)}"
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
        """End the pushed streams still open (``cancelled``: their callers never said the
        body was over), wait for them within the connect timeout, then flush and close an
        owned producer; a borrowed one is left running."""
        if self._pushed:
            pushed = list(self._pushed)
            for stream in pushed:
                stream.close(END_CANCELLED)
            await asyncio.wait([asyncio.ensure_future(s.done()) for s in pushed],
                               timeout=self.connect_timeout)
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
        return await self._publish(_Stream(meta, self), body,
                                   (lambda: END_EOF) if end else None)

    def open_stream(self, meta: RequestMeta) -> PushStream:
        """A stream to push a body into as it is read, for a caller that must never wait on
        Kafka (a tee inside a client: see :class:`PushStream`). Call it once the publisher is
        started, from any thread (a sync client's tee calls it from the client's thread: see
        :class:`PublisherThread`); ``feed`` and ``close`` may then come from any thread too.

        Raises :class:`PublishError` when the publisher is not running: the caller's body
        cannot be published, and the caller must say so (a tee logs it with the request id).
        """
        loop, thread = self._loop, self._loop_thread
        if loop is None and self._producer is not None:
            # A borrowed producer used without start(): the caller's loop is its loop.
            with contextlib.suppress(RuntimeError):
                loop, thread = asyncio.get_running_loop(), threading.get_ident()
        if loop is None or self._producer is None or loop.is_closed():
            raise PublishError(f"request {meta.request_id}: the publisher is not started, "
                               "so its body cannot be published")
        stream = PushStream(_Stream(meta, self), self._publish, limit=self.push_stream_bytes,
                            budget=self._budget, stats=self.push_stats,
                            deliver_timeout=self.connect_timeout, loop=loop,
                            loop_thread=thread, on_settled=self._pushed.discard)
        self._pushed.add(stream)
        return stream

    async def _publish(self, stream: _Stream, body: AsyncIterator[bytes],
                       end: Callable[[], str] | None) -> PublishReport:
        """:meth:`publish_stream` for a stream already made; ``end`` gives the marker of a
        body that ended by itself (asked then: a pushed stream's caller says which), and
        ``None`` sends no marker on any path."""
        meta = stream.meta
        batch = (Coalescer(self.coalesce_ms / 1000, self.coalesce_bytes)
                 if self.coalesce_ms > 0 else None)
        marker_sent: str | None = None
        try:
            if batch is None:
                async for piece in body:
                    if piece:
                        await stream.send_chunk(piece)
            else:
                # The running loop's clock unless the publisher was given one.
                clock = self._clock if self._clock is not None else asyncio.get_running_loop()
                await pump(body, batch, clock, stream.send_chunk)
            marker_sent = None if end is None else end()
            if marker_sent is not None:
                await stream.send(b"", marker_sent)
            results = await asyncio.shield(asyncio.gather(*stream.futures))
            stream.delivered_end = marker_sent
        except asyncio.CancelledError:
            marker = END_CANCELLED if end is not None and not stream.ended else None
            if marker is not None or (batch is not None and batch.pending):
                try:
                    await asyncio.shield(stream.close(marker, batch))
                except Exception as marker_exc:
                    log.warning("request %s: the cancelled marker was not delivered: %s",
                                meta.request_id, marker_exc)
            raise
        except Exception as exc:
            marker = END_ERROR if end is not None and not stream.ended else None
            if marker is not None or (batch is not None and batch.pending):
                try:
                    await stream.close(marker, batch)
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
            end=marker_sent,
            partition=None if first is None else int(first.partition),
            first_offset=None if first is None else int(first.offset),
            last_offset=None if last is None else int(last.offset),
        )
