"""The tee proxy: for clients in any language, and gateways that route to an upstream base URL.

A client (node's ``fetch``, curl, a Go SDK, LiteLLM proxy's ``api_base``, Kong, Envoy) is
pointed at the proxy instead of the provider; the proxy forwards each request to the
upstream its path names and streams the answer back unchanged: the status, the headers (all
but the hop-by-hop ones), the body in the slices and at the moments the upstream sent them,
still in the upstream's ``Content-Encoding``. Each 2xx ``text/event-stream`` answer on a
streaming path is teed on the way by the same :class:`~toolwire.tap.Tap` the client-side
tees use, so a body published by the proxy is the one a tee inside the client would publish.

It is an ASGI application (served by uvicorn: ``toolwire tap serve``) over one httpx2 client
for the upstreams, which verifies TLS as httpx2 does. What it guarantees:

- nothing is buffered beyond what is in flight: a slice goes to the tee, then to the client;
- a client that goes away cancels the upstream request (its connection is closed), and the
  teed stream ends ``cancelled`` unless the wire's terminal event had been read;
- an upstream that fails mid-body ends the teed stream with ``error`` and cuts the client's
  response (the client sees a short body, as it would from the upstream itself);
- an upstream that cannot be reached is a ``502`` whose JSON body says why;
- bodies, query strings (Gemini's ``key=``) and headers are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import httpx2
import orjson

from toolwire.tap._tee import StreamOpener, Tap, request_id_of, safely

log = logging.getLogger("toolwire.tap")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Headers of one hop only (RFC 9110 7.6.1), never forwarded; ``host`` is the upstream's.
HOP_BY_HOP: Final = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "transfer-encoding", "upgrade", "host",
})
#: The response header that tells the client the request id its body was published under.
H_PUBLISHED_AS: Final = "x-toolwire-request-id"
#: A request body larger than this is refused (413), by default: far above any LLM request.
DEFAULT_MAX_REQUEST_BYTES: Final = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Upstream:
    """Requests whose path starts with ``prefix`` go to ``url`` (the prefix taken off, the
    rest of the path appended to the URL's own path)."""

    prefix: str
    url: str

    @classmethod
    def parse(cls, text: str) -> Upstream:
        """``URL`` (every path) or ``/PREFIX=URL``; raises ``ValueError`` saying what to fix."""
        prefix, url = ("", text)
        if text.startswith("/"):
            prefix, sep, url = text.partition("=")
            if not sep:
                raise ValueError(f"{text!r}: a prefixed upstream is /PREFIX=URL")
            prefix = prefix.rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{text!r}: the upstream must be an http:// or https:// URL")
        if parts.query or parts.fragment:
            raise ValueError(f"{text!r}: the upstream URL must have no query or fragment")
        return cls(prefix, url.rstrip("/"))

    def matches(self, path: str) -> bool:
        return not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")

    def target(self, path: str, query: bytes) -> str:
        rest = path[len(self.prefix):]
        return self.url + rest + (("?" + query.decode("latin-1")) if query else "")


def route(upstreams: Sequence[Upstream], path: str) -> Upstream | None:
    """The upstream of a path: the longest prefix that matches."""
    found = [u for u in upstreams if u.matches(path)]
    return max(found, key=lambda u: len(u.prefix)) if found else None


class TeeProxy:
    """The ASGI application (see the module docstring). ``client`` is the httpx2 client for
    the upstreams and the publisher are the caller's to start and stop (a
    :class:`~toolwire.publish.ChunkPublisher` in the server's own loop, or a
    :class:`~toolwire.publish.PublisherThread`); it answers ``http`` scopes only."""

    def __init__(self, upstreams: Sequence[Upstream], publisher: StreamOpener,
                 client: httpx2.AsyncClient, *, provider: str | None = None,
                 session_header: str | None = "x-session-id",
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        if not upstreams:
            raise ValueError("the proxy needs at least one upstream")
        prefixes = [u.prefix for u in upstreams]
        if len(set(prefixes)) != len(prefixes):
            raise ValueError(f"two upstreams for one prefix: {prefixes}")
        self.upstreams = tuple(upstreams)
        self.tap = Tap(publisher, provider=provider, session_header=session_header)
        self.client = client
        self.max_request_bytes = max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        upstream = route(self.upstreams, path)
        if upstream is None:
            await _error(send, 404, f"no upstream for the path {path!r} (the proxy routes "
                                    f"{', '.join(u.prefix or '/' for u in self.upstreams)})")
            return
        content = await _read_body(receive, self.max_request_bytes)
        if content is None:
            await _error(send, 413, f"the request body is over the proxy's bound of "
                                    f"{self.max_request_bytes} bytes")
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
                   if k.decode("latin-1").lower() not in HOP_BY_HOP]
        url = upstream.target(path, scope.get("query_string", b""))
        request = self.client.build_request(scope["method"], url, headers=headers,
                                            content=content)
        try:
            response = await self.client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            log.warning("the upstream %s did not answer: %s", upstream.url,
                        type(exc).__name__)
            await _error(send, 502, f"the upstream {upstream.url} did not answer: "
                                    f"{type(exc).__name__}: {exc}")
            return
        try:
            await self._relay(request, content, response, receive, send)
        finally:
            await response.aclose()

    async def _relay(self, request: httpx2.Request, content: bytes, response: httpx2.Response,
                     receive: Receive, send: Send) -> None:
        tee = self.tap.opened(request, content, response.status_code, response.headers)
        out = [(k.encode("latin-1"), v.encode("latin-1"))
               for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP]
        if tee is not None:
            out.append((H_PUBLISHED_AS.encode(), tee.push.meta.request_id.encode()))
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": out})

        async def pump() -> None:
            async for piece in response.aiter_raw():
                if tee is not None:
                    safely(tee, tee.take, piece)
                await send({"type": "http.response.body", "body": piece, "more_body": True})

        # One task reads the upstream, one listens for the client: the first to end decides.
        pumping = asyncio.ensure_future(pump())
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({pumping, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not pumping.done():  # the client is gone (or the server is stopping)
                pumping.cancel()
                with contextlib.suppress(BaseException):
                    await pumping
                if tee is not None:
                    safely(tee, tee.closed)
        if pumping.cancelled():
            return
        failure = pumping.exception()
        if failure is not None:
            log.warning("request %s: the upstream failed mid-body: %s",
                        request_id_of(request),
                        type(failure).__name__)
            if tee is not None:
                safely(tee, tee.fail)
            raise failure  # the server cuts the client's response: a short body
        if tee is not None:
            safely(tee, tee.end)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Receive, bound: int) -> bytes | None:
    """The request body, or ``None`` when it is over ``bound`` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        body = message.get("body", b"")
        size += len(body)
        if size > bound:
            return None
        parts.append(body)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def _error(send: Send, status: int, message: str) -> None:
    body = orjson.dumps({"error": {"type": "toolwire_tap", "message": message}})
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def parse_upstreams(texts: Iterable[str]) -> list[Upstream]:
    """Every ``--upstream``; raises ``ValueError`` naming the one to fix."""
    return [Upstream.parse(text) for text in texts]
