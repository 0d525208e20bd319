"""Tee transports: every streamed LLM response a client reads is also pushed, byte for byte,
to the chunks topic, without slowing or failing the client.

The client keeps its own transport (HTTP/1.1 or HTTP/2, proxies, TLS): the tee wraps it, and
wraps each 2xx ``text/event-stream`` response's byte stream in one that hands every slice to a
:class:`~toolwire.publish.PushStream` as the client reads it, then gives the slice to the
client unchanged. Nothing is buffered beyond what is in flight; the pushed stream's queue is
bounded and never blocks (:mod:`toolwire.publish._push`). Other responses pass untouched and
unpublished.

Each HTTP library asserts its own stream class after a transport call (httpx2's
``AsyncByteStream``, httpx's), so there is one concrete class per library over one shared
body of code: :class:`Httpx2TeeTransport` (openai, anthropic, google-genai, mistralai) and
:class:`HttpxTeeTransport` (LiteLLM, groq, cohere).

How a stream ends, as the consumer must learn it (``end-of-stream``):

- the body read to its end, or closed after its wire's terminal event (openai closes before
  the end on HTTP/2, mistralai on ``[DONE]``): ``eof``;
- an exception while reading: ``error``;
- closed before the terminal event, or dropped unread (a finalizer): ``cancelled``.

Closing is idempotent (httpx2 cleans up twice), and a second iteration of the stream (openai's
HTTP/1.1 drain after ``[DONE]``) goes on reading the same body and teeing it. A fault of the
tee itself is logged and ends its pushed stream with ``error``; the client never sees it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import urllib.parse
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, Final, Protocol

import httpx
import httpx2
import orjson

from toolwire.publish import PushStream, RequestMeta
from toolwire.stream.messages import END_CANCELLED, END_EOF, END_ERROR
from toolwire.tap._decoding import ContentDecoder, DecodingError, decoder_for

log = logging.getLogger("toolwire.tap")

#: The session the responses of the current task belong to (``toolwire.tap.SESSION.set``),
#: when no header and no callback names one.
SESSION: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "toolwire_tap_session", default=None)
#: The request headers a request id is taken from, in order (else one is made).
REQUEST_ID_HEADERS: Final = ("x-request-id", "request-id")
#: The wire of a request, by the end of its path (Gemini's by the method after ``:``).
WIRES_BY_PATH: Final = (("/chat/completions", "openai-chat"), ("/messages", "anthropic-messages"),
                        ("/responses", "openai-responses"),
                        (":streamGenerateContent", "gemini"), ("/api/chat", "ollama-chat"),
                        ("/converse-stream", "bedrock-converse"),
                        ("/invoke-with-response-stream", "bedrock-invoke"))
#: The content type a streamed body of each wire has (SSE unless named here).
STREAM_TYPES: Final = {"ollama-chat": "application/x-ndjson",
                       "bedrock-converse": "application/vnd.amazon.eventstream",
                       "bedrock-invoke": "application/vnd.amazon.eventstream"}
#: The provider of a request, by its host (else the host itself).
PROVIDERS_BY_HOST: Final = {
    "api.openai.com": "openai", "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gemini", "openrouter.ai": "openrouter",
    "api.mistral.ai": "mistral", "api.deepseek.com": "deepseek", "api.groq.com": "groq",
    "api.writer.com": "writer", "api.perplexity.ai": "perplexity",
}
#: What a body holds once its wire's terminal event came: a close after it is the end.
TERMINALS: Final[dict[str, tuple[bytes, ...]]] = {
    "openai-chat": (b"data: [DONE]", b'"chat.completion.done"'),
    "anthropic-messages": (b'"message_stop"',),
    "openai-responses": (b'"response.completed"', b'"response.incomplete"',
                         b'"response.failed"'),
    "gemini": (b'"finishReason"',),
    "ollama-chat": (b'"done":true',),
    # The ``:event-type`` header's value as event-stream writes it (type 7, length 11).
    "bedrock-converse": (b"\x07\x00\x0bmessageStop",),
    # An invoke chunk's bytes are base64: ``{"type":"message_stop"`` begins so.
    "bedrock-invoke": (b"eyJ0eXBlIjoibWVzc2FnZV9zdG9w",),
}
#: Bedrock's runtime hosts (``bedrock-runtime.<region>.amazonaws.com``) are one provider.
BEDROCK_HOST: Final = re.compile(r"bedrock-runtime(-fips)?\.[a-z0-9-]+\.amazonaws\.com")
#: The model of a Bedrock request is in its path (``/model/{modelId}/converse-stream``).
BEDROCK_MODEL: Final = re.compile(
    r"/model/([^/]+)/(?:converse-stream|invoke-with-response-stream)$")
#: What a body holds once its wire said how it finishes, while its terminal event may still
#: be on the way: a client that closes then (LiteLLM's native Anthropic handler stops after
#: ``message_delta``, before ``message_stop``) gets the rest drained, briefly (below).
FINISHING: Final[dict[str, tuple[bytes, ...]]] = {
    "anthropic-messages": (b'"message_delta"',),
}
#: How long, and how many bytes, an async tee reads on after its client closed a body whose
#: wire had said it finishes, to reach the terminal event (openai drains 0.1 s itself).
DRAIN_SECONDS: Final = 0.1
DRAIN_BYTES: Final = 64 * 1024
#: The bytes kept from the end of one slice, so that a terminal cut across two is seen.
_OVERLAP: Final = 32


def wire_of(path: str) -> str | None:
    """The wire a request path calls, or ``None`` for a path no wire streams on."""
    for end, wire in WIRES_BY_PATH:
        if path.endswith(end):
            return wire
    return None


def request_fields(content: bytes) -> tuple[str | None, tuple[str, ...] | None]:
    """The model and the declared tool names of a request body (``None``: not known; every
    tool must have a name for the names to be a declaration)."""
    try:
        body = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        return None, None
    if type(body) is not dict:
        return None, None
    model = body.get("model")
    tools = body.get("tools")
    config = body.get("toolConfig")  # Bedrock Converse: toolConfig.tools[].toolSpec
    if tools is None and type(config) is dict:
        tools = config.get("tools")
    names: tuple[str, ...] | None = None
    if type(tools) is list:
        found: list[str] = []
        for tool in tools:
            declared = _tool_names(tool)
            if declared is None:
                found = []
                names = None
                break
            found += declared
        else:
            names = tuple(found)
    return (model if type(model) is str and model else None), names


def _tool_names(tool: object) -> list[str] | None:
    """The names one entry of ``tools`` declares: Chat Completions' ``function.name`` or
    ``custom.name``, Anthropic's and Responses' ``name``, Gemini's functionDeclarations,
    Bedrock Converse's ``toolSpec.name``."""
    if type(tool) is not dict:
        return None
    for kind in ("function", "custom", "toolSpec"):
        inner = tool.get(kind)
        if type(inner) is dict and type(inner.get("name")) is str:
            return [inner["name"]]
    if type(tool.get("name")) is str:
        return [tool["name"]]
    declarations = tool.get("functionDeclarations") or tool.get("function_declarations")
    if type(declarations) is list and all(type(d) is dict and type(d.get("name")) is str
                                          for d in declarations):
        return [d["name"] for d in declarations]
    return None


class Tee:
    """One response's bytes on their way to the topic: decoded, fed, and ended once."""

    __slots__ = ("__weakref__", "_decoder", "_finishing", "_tail", "_terminals", "finishing",
                 "push", "terminal")

    def __init__(self, push: PushStream, decoder: ContentDecoder | None, wire: str) -> None:
        self.push = push
        self._decoder = decoder
        self._terminals = TERMINALS.get(wire, ())
        self._finishing = FINISHING.get(wire, ())
        self._tail = b""
        #: The wire's terminal event has been read.
        self.terminal = False
        #: The wire said how the body finishes; its terminal event may be close behind.
        self.finishing = False

    def take(self, raw: bytes) -> None:
        """A slice the client read."""
        if self.push.closed:
            return
        try:
            data = raw if self._decoder is None else self._decoder.decode(raw)
        except DecodingError as exc:
            log.warning("request %s: the tee cannot decode the body: %s",
                        self.push.meta.request_id, exc)
            self.push.close(END_ERROR)
            return
        if data:
            self.push.feed(data)
            if not self.terminal:
                seen = self._tail + data
                self.terminal = any(t in seen for t in self._terminals)
                self.finishing = self.finishing or any(f in seen for f in self._finishing)
                self._tail = seen[-_OVERLAP:]

    def end(self) -> None:
        """The client read the body to its end."""
        if self.push.closed:
            return
        if self._decoder is not None:
            try:
                self.take_decoded(self._decoder.flush())
            except DecodingError as exc:
                log.warning("request %s: the body ended inside its coding: %s",
                            self.push.meta.request_id, exc)
                self.push.close(END_ERROR)
                return
        self.push.close(END_EOF)

    def take_decoded(self, data: bytes) -> None:
        if data:
            self.push.feed(data)

    def fail(self) -> None:
        """Reading the body raised."""
        self.push.close(END_ERROR)

    def closed(self) -> None:
        """The client closed the response (or dropped it): the end if the terminal event
        came, a cancellation otherwise."""
        self.push.close(END_EOF if self.terminal else END_CANCELLED)


class _TeeStream:
    """What both kinds of tee stream hold: the inner stream, its one iterator, the tee."""

    def __init__(self, inner: Any, tee: Tee) -> None:
        self._inner = inner
        self._tee = tee
        self._iterator: Any = None
        self._closed = False
        # A response dropped unread still ends its stream.
        weakref.finalize(self, tee.closed)

    def _closing(self) -> bool:
        """Whether this close is the first (httpx2 cleans up twice); tell the tee if so."""
        if self._closed:
            return False
        self._closed = True
        safely(self._tee, self._tee.closed)
        return True


class _AsyncTeeStream(_TeeStream):
    """The byte stream an async client reads: the inner stream's slices, each teed first."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # A second iteration (openai's drain) goes on with the same body.
        if self._iterator is None:
            self._iterator = self._inner.__aiter__()
        iterator: AsyncIterator[bytes] = self._iterator
        try:
            while True:
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    break
                safely(self._tee, self._tee.take, chunk)
                yield chunk
        except Exception:
            safely(self._tee, self._tee.fail)
            raise
        safely(self._tee, self._tee.end)

    async def aclose(self) -> None:
        if not self._closed and self._tee.finishing and not self._tee.terminal:
            await self._drain()
        if self._closing():
            await self._inner.aclose()

    async def _drain(self) -> None:
        """Read on, within :data:`DRAIN_SECONDS` and :data:`DRAIN_BYTES`, to the terminal
        event of a body whose client closed it once it knew how it finishes; read to its end,
        the body ends ``eof`` as if the client had read it all."""
        if self._iterator is None:
            self._iterator = self._inner.__aiter__()
        iterator: AsyncIterator[bytes] = self._iterator
        drained = 0
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                while not self._tee.terminal and drained < DRAIN_BYTES:
                    chunk = await iterator.__anext__()
                    drained += len(chunk)
                    safely(self._tee, self._tee.take, chunk)
        except StopAsyncIteration:
            safely(self._tee, self._tee.end)
        except Exception:  # a timeout or a failed read: the close decides, as without it
            pass


class _SyncTeeStream(_TeeStream):
    """The byte stream a sync client reads: the same as :class:`_AsyncTeeStream`, in the
    client's thread (the pushed stream hands its work to the publisher's loop)."""

    def __iter__(self) -> Iterator[bytes]:
        if self._iterator is None:
            self._iterator = iter(self._inner)
        iterator: Iterator[bytes] = self._iterator
        try:
            for chunk in iterator:
                safely(self._tee, self._tee.take, chunk)
                yield chunk
        except Exception:
            safely(self._tee, self._tee.fail)
            raise
        safely(self._tee, self._tee.end)

    def close(self) -> None:
        if self._closing():
            self._inner.close()


def safely(tee: Tee, step: Callable[..., None], *args: Any) -> None:
    """Run a step of the tee; a fault of the tee ends its stream, never the client's read."""
    try:
        step(*args)
    except Exception:
        log.exception("request %s: the tee failed; its stream ends with error",
                      tee.push.meta.request_id)
        try:
            tee.push.close(END_ERROR)
        except Exception:  # nothing more can be done, and the client must not hear of it
            log.exception("the tee's stream could not be ended")


class Httpx2AsyncTeeStream(_AsyncTeeStream, httpx2.AsyncByteStream):
    pass


class Httpx2SyncTeeStream(_SyncTeeStream, httpx2.SyncByteStream):
    pass


class HttpxAsyncTeeStream(_AsyncTeeStream, httpx.AsyncByteStream):
    pass


class HttpxSyncTeeStream(_SyncTeeStream, httpx.SyncByteStream):
    pass


#: The stream class that wraps a response's stream: by library, then by async.
_STREAMS: Final[dict[tuple[bool, bool], type[_AsyncTeeStream] | type[_SyncTeeStream]]] = {
    (True, True): Httpx2AsyncTeeStream, (True, False): Httpx2SyncTeeStream,
    (False, True): HttpxAsyncTeeStream, (False, False): HttpxSyncTeeStream,
}


class StreamOpener(Protocol):
    """Where a tee pushes: a :class:`~toolwire.publish.ChunkPublisher` (async clients in its
    loop) or a :class:`~toolwire.publish.PublisherThread` (any client, any thread)."""

    def open_stream(self, meta: RequestMeta) -> PushStream: ...


class Tap:
    """What every tee of one client shares: where it publishes and how it names a request.

    ``provider`` overrides the provider found from the host; the session comes from the
    ``session`` callback (given the request), else the ``session_header``, else
    :data:`SESSION`.
    """

    def __init__(self, publisher: StreamOpener, *, provider: str | None = None,
                 session_header: str | None = "x-session-id",
                 session: Callable[[Any], str | None] | None = None) -> None:
        self.publisher = publisher
        self.provider = provider
        self.session_header = session_header
        self.session = session

    def meta(self, request: Any, headers: Mapping[str, str], host: str, content: bytes,
             wire: str, content_encoding: str | None, path: str = "") -> RequestMeta:
        """The chunks' headers of one request: its id (its own header, else a new one: a retry
        is another request), provider, wire, model and tools, session, trace context."""
        request_id = next((headers[h] for h in REQUEST_ID_HEADERS if headers.get(h)),
                          None) or f"tap-{uuid.uuid4().hex}"
        model, tools = request_fields(content)
        if model is None and (in_path := BEDROCK_MODEL.search(path)) is not None:
            model = urllib.parse.unquote(in_path.group(1))
        if self.provider is not None:
            provider = self.provider
        else:
            provider = ("bedrock" if BEDROCK_HOST.fullmatch(host)
                        else PROVIDERS_BY_HOST.get(host, host))
        session = (self.session(request) if self.session is not None else None) or (
            headers.get(self.session_header) if self.session_header else None) or SESSION.get()
        return RequestMeta(request_id=request_id, session_id=session,
                           provider=provider,
                           model=model, declared_tools=tools, wire=wire,
                           content_encoding=content_encoding,
                           traceparent=headers.get("traceparent") or None)

    def open(self, request: Any, headers: Mapping[str, str], host: str, path: str,
             content: bytes, status: int, response_headers: Mapping[str, str]) -> Tee | None:
        """The tee of one response, or ``None`` for a response that is not published (not a
        2xx ``text/event-stream`` answer on a streaming path). Raises what opening raised:
        the caller logs it and lets the response pass."""
        wire = wire_of(path)
        if (wire is None or not 200 <= status < 300
                or not response_headers.get("content-type", "").startswith(
                    STREAM_TYPES.get(wire, "text/event-stream"))):
            return None
        coding = response_headers.get("content-encoding")
        decoder = decoder_for(coding)
        meta = self.meta(request, headers, host, content, wire,
                         None if decoder is not None else coding, path)
        return Tee(self.publisher.open_stream(meta), decoder, wire)

    def opened(self, request: Any, content: bytes, status: int,
               response_headers: Mapping[str, str]) -> Tee | None:
        """:meth:`open` for an httpx or httpx2 request; a failure to open is logged with the
        request id and the response passes unpublished (never raised)."""
        try:
            return self.open(request, request.headers, request.url.host, request.url.path,
                             content, status, response_headers)
        except Exception as exc:
            log.warning("request %s: the tee could not open a stream for the response, which "
                        "is not published: %s", request_id_of(request), exc)
            return None

    def wrap(self, request: Any, response: Any, is_async: bool) -> None:
        """Tee an httpx or httpx2 response: replace its stream with a tee of it, when it is
        one to publish. Never raises: a response the tee cannot open passes unpublished."""
        try:
            try:
                content = request.content
            except Exception:  # a streaming request body: not read here
                content = b""
            tee = self.opened(request, content, response.status_code, response.headers)
            if tee is not None:
                kind = _STREAMS[(isinstance(response, httpx2.Response), is_async)]
                response.stream = kind(response.stream, tee)
        except Exception as exc:
            log.warning("request %s: the tee could not wrap the response, which is not "
                        "published: %s", request_id_of(request), exc)


def request_id_of(request: Any) -> str:
    """The request id a request's headers name, for a log line (``(no id)`` without)."""
    try:
        headers = request.headers
        return next((headers[h] for h in REQUEST_ID_HEADERS if headers.get(h)), "(no id)")
    except Exception:
        return "(no id)"


class _TeeTransport:
    """The tee around a client's own transport, sync or async (see the module docstring)."""

    def __init__(self, inner: Any, publisher: StreamOpener, *, provider: str | None = None,
                 session_header: str | None = "x-session-id",
                 session: Callable[[Any], str | None] | None = None) -> None:
        self._inner = inner
        self.tap = Tap(publisher, provider=provider, session_header=session_header,
                       session=session)

    def handle_request(self, request: Any) -> Any:
        response = self._inner.handle_request(request)
        self.tap.wrap(request, response, is_async=False)
        return response

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        self.tap.wrap(request, response, is_async=True)
        return response

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


class Httpx2TeeTransport(_TeeTransport, httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """For httpx2 clients (openai, anthropic, google-genai, mistralai), around the client's
    own transport: ``httpx2.AsyncClient(transport=Httpx2TeeTransport(
    httpx2.AsyncHTTPTransport(), publisher))``, or ``httpx2.HTTPTransport()`` for a sync
    client (then with a :class:`~toolwire.publish.PublisherThread`)."""


class HttpxTeeTransport(_TeeTransport, httpx.BaseTransport, httpx.AsyncBaseTransport):
    """For httpx clients (LiteLLM, groq, cohere): as :class:`Httpx2TeeTransport`, with
    ``httpx.AsyncHTTPTransport()`` or ``httpx.HTTPTransport()`` inside."""


class TeeHook:
    """The tee as a response event hook, for httpx2 and httpx clients, sync and async:
    ``httpx2.AsyncClient(event_hooks={"response": [TeeHook(publisher)]})``.

    Use it where a client's transport should stay the client's own: an explicit
    ``transport=`` drops the mounts a client makes for its environment's proxies, and some
    SDKs build their own transport. The hook runs after the client bound the response's
    stream and before any read, and replaces ``response.stream`` with a tee of it. For an
    async client its call returns an awaitable (done at once), for a sync client nothing.
    """

    def __init__(self, publisher: StreamOpener, *, provider: str | None = None,
                 session_header: str | None = "x-session-id",
                 session: Callable[[Any], str | None] | None = None) -> None:
        self.tap = Tap(publisher, provider=provider, session_header=session_header,
                       session=session)

    def __call__(self, response: Any) -> Awaitable[None] | None:
        is_async = isinstance(response.stream, (httpx2.AsyncByteStream, httpx.AsyncByteStream))
        self.tap.wrap(response.request, response, is_async)
        return _done() if is_async else None


async def _done() -> None:
    return None
