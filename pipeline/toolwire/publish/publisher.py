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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

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
    "END_CANCELLED",
    "END_EOF",
    "END_ERROR",
    "BrokerUnreachable",
    "ChunkPublisher",
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
    #: Body messages (the end marker is not counted).
    chunks: int
    #: Body bytes, i.e. the sum of the chunk values.
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


# --------------------------------------------------------------------------- publisher

class _Stream:
    """Per-request state, kept apart so that the failure paths see what was already sent."""

    __slots__ = ("base", "bytes", "chunks", "ended", "futures", "key", "seq")

    def __init__(self, meta: RequestMeta) -> None:
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
    ``toolwire.security.client_options(Settings.from_env())``, or builds them itself::

        ChunkPublisher("kafka1:9093", "llm.sse.chunks", security={
            "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user, "sasl_plain_password": password,
            "ssl_context": aiokafka.helpers.create_ssl_context(cafile="ca.pem")})
    """

    def __init__(
        self,
        source: str | AIOKafkaProducer,
        topic: str,
        *,
        linger_ms: int = DEFAULT_LINGER_MS,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        security: Mapping[str, Any] | None = None,
        **producer_options: Any,
    ) -> None:
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

        Each slice is enqueued without waiting for its acknowledgement, so a slow broker
        round trip never stalls the relay; ordering holds because every message has the same
        key (one partition) and the producer is idempotent. All acknowledgements are awaited
        at the end, which is what makes a returned report a delivery guarantee.

        Empty slices are skipped: they carry no bytes and would spend a sequence number.

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
        try:
            async for piece in body:
                if not piece:
                    continue
                await self._send(producer, stream, piece)
                stream.chunks += 1
                stream.bytes += len(piece)
            if end:
                await self._send(producer, stream, b"", END_EOF)
            results = await asyncio.shield(asyncio.gather(*stream.futures))
        except asyncio.CancelledError:
            if end and not stream.ended:
                try:
                    await asyncio.shield(self._close(producer, stream, END_CANCELLED))
                except Exception as marker_exc:
                    log.warning("request %s: the cancelled marker was not delivered: %s",
                                meta.request_id, marker_exc)
            raise
        except Exception as exc:
            if end and not stream.ended:
                try:
                    await self._close(producer, stream, END_ERROR)
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

    async def _close(self, producer: Any, stream: _Stream, end: str) -> None:
        """Send the end marker and wait until it and the chunks before it are acknowledged."""
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
                              security=security) as publisher:
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
) -> list[PublishReport]:
    """Publish each captured body as one request of ``session``, in order.

    One SSE event per message by default (what a server flushing per event produces), or
    ``slice_size``-byte slices. The request id defaults to ``<session>-<file stem>-<8 hex>``;
    ``request`` fixes it and is only allowed with one capture. ``end=False`` leaves out the
    end marker. ``progress`` is called with each report as soon as that request is delivered.
    ``security``: the connection options of :class:`ChunkPublisher`.

    Raises OSError for an unreadable file (before anything is published), ValueError for
    bad arguments, :class:`PublishError` when the broker or the topic is not there.
    """
    loaded = load_captures(paths)
    return await publish_loaded(
        bootstrap, topic, loaded, session=session, request=request, provider=provider,
        model=model, tools=tools, slice_size=slice_size, end=end, progress=progress,
        connect_timeout=connect_timeout, security=security,
    )
