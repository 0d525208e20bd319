"""Every form of the tee (transport and hook; httpx2 and httpx; sync and async) against a real
server on 127.0.0.1, with a recording opener in the publisher's place: what each form hands
on, and how it says a body ended. The broker tests prove the publisher's side."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
import pytest

from tests.tap.server import Stream, serving
from toolwire.publish import RequestMeta
from toolwire.stream.messages import END_CANCELLED, END_EOF
from toolwire.tap import Httpx2TeeTransport, HttpxTeeTransport, TeeHook

EVENTS = [b'data: {"choices":[{"index":0,"delta":{"content":"x%d"}}]}\n\n' % n
          for n in range(20)]
BODY = b"".join(EVENTS) + b"data: [DONE]\n\n"
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
HEADERS = {"x-request-id": "r-forms", "x-session-id": "s-forms", "traceparent": TRACE}


@dataclass
class Recorded:
    meta: RequestMeta
    data: bytearray = field(default_factory=bytearray)
    ends: list[str] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return bool(self.ends)

    def feed(self, data: bytes) -> None:
        assert not self.ends, "fed after its end"
        self.data += data

    def close(self, end: str = END_EOF) -> None:
        self.ends.append(end)

    @property
    def end(self) -> str:
        """The end the stream came to: a pushed stream's first close wins."""
        return self.ends[0]


@dataclass
class Recorder:
    streams: list[Recorded] = field(default_factory=list)

    def open_stream(self, meta: RequestMeta) -> Any:
        self.streams.append(Recorded(meta))
        return self.streams[-1]


def sync_client(form: str, library: str, recorder: Recorder) -> Any:
    lib: Any = httpx2 if library == "httpx2" else httpx
    if form == "hook":
        return lib.Client(event_hooks={"response": [TeeHook(recorder)]})
    tee = Httpx2TeeTransport if library == "httpx2" else HttpxTeeTransport
    return lib.Client(transport=tee(lib.HTTPTransport(), recorder))


def async_client(form: str, library: str, recorder: Recorder) -> Any:
    lib: Any = httpx2 if library == "httpx2" else httpx
    if form == "hook":
        return lib.AsyncClient(event_hooks={"response": [TeeHook(recorder)]})
    tee = Httpx2TeeTransport if library == "httpx2" else HttpxTeeTransport
    return lib.AsyncClient(transport=tee(lib.AsyncHTTPTransport(), recorder))


FORMS = [(form, library) for form in ("transport", "hook") for library in ("httpx2", "httpx")]


@pytest.mark.parametrize(("form", "library"), FORMS)
@pytest.mark.parametrize("coding", [None, "gzip"])
def test_sync_clients_hand_on_every_byte_and_end_eof(form: str, library: str,
                                                     coding: str | None) -> None:
    recorder = Recorder()
    stream = Stream(BODY, coding=coding, piece=17)
    with serving(stream) as url, sync_client(form, library, recorder) as client:
        response = client.post(f"{url}/v1/chat/completions", headers=HEADERS,
                               content=b'{"model": "m-sync"}')
        assert response.content == BODY
    (pushed,) = recorder.streams
    assert bytes(pushed.data) == BODY and pushed.end == END_EOF
    assert (pushed.meta.request_id, pushed.meta.session_id, pushed.meta.model,
            pushed.meta.traceparent) == ("r-forms", "s-forms", "m-sync", TRACE)


@pytest.mark.parametrize(("form", "library"), FORMS)
def test_async_clients_hand_on_every_byte_and_end_eof(form: str, library: str) -> None:
    recorder = Recorder()

    async def read(url: str) -> bytes:
        async with async_client(form, library, recorder) as client:
            response = await client.post(f"{url}/v1/messages", headers=HEADERS, content=b"{}")
            return bytes(response.content)

    with serving(Stream(BODY, coding="deflate", piece=23)) as url:
        assert asyncio.run(read(url)) == BODY
    (pushed,) = recorder.streams
    assert bytes(pushed.data) == BODY and pushed.end == END_EOF
    assert pushed.meta.wire == "anthropic-messages"


@pytest.mark.parametrize(("form", "library"), FORMS)
def test_a_sync_close_after_the_terminal_event_is_the_end_before_it_a_cancel(
        form: str, library: str) -> None:
    """openai's sync client breaks on [DONE] and closes without reading to EOF: ``eof``; a
    client that closes earlier: ``cancelled``."""
    recorder = Recorder()
    with serving(Stream(BODY, piece=40)) as url, sync_client(form, library, recorder) as client:
        with client.stream("POST", f"{url}/v1/chat/completions", content=b"{}") as response:
            seen = b""
            for piece in response.iter_raw():
                seen += piece
                if b"[DONE]" in seen:
                    break
        with client.stream("POST", f"{url}/v1/chat/completions", content=b"{}") as response:
            for _ in response.iter_raw():
                break
    done, given_up = recorder.streams
    assert done.end == END_EOF and b"[DONE]" in done.data
    assert given_up.end == END_CANCELLED


def test_a_second_iteration_goes_on_teeing_the_same_body() -> None:
    """openai's async HTTP/1.1 drain iterates ``response.stream`` again after [DONE]."""
    recorder = Recorder()

    async def read(url: str) -> bytes:
        async with async_client("transport", "httpx2", recorder) as client:
            request = client.build_request("POST", f"{url}/v1/chat/completions", content=b"{}")
            response = await client.send(request, stream=True)
            seen = b""
            async for piece in response.stream:
                seen += piece
                if len(seen) > len(BODY) // 2:
                    break
            async for piece in response.stream:  # the drain
                seen += piece
            await response.aclose()
            await response.aclose()  # cleaned up twice, as httpx2 does
            return seen

    with serving(Stream(BODY, piece=31)) as url:
        assert asyncio.run(read(url)) == BODY
    (pushed,) = recorder.streams
    assert bytes(pushed.data) == BODY and pushed.end == END_EOF


def test_a_response_dropped_unread_still_ends_its_stream() -> None:
    recorder = Recorder()
    with serving(Stream(BODY, piece=31)) as url, sync_client(
            "transport", "httpx2", recorder) as client:
        response = client.send(client.build_request("POST", f"{url}/v1/responses"),
                               stream=True)
        del response
        import gc

        gc.collect()
    (pushed,) = recorder.streams
    assert pushed.end == END_CANCELLED


def test_an_opener_that_fails_lets_the_response_pass_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def open_stream(self, meta: RequestMeta) -> Any:
            raise RuntimeError("the publisher is not started")

    with caplog.at_level(logging.WARNING, logger="toolwire.tap"), serving(
            Stream(BODY, piece=31)) as url, httpx2.Client(
            event_hooks={"response": [TeeHook(Broken())]}) as client:
        response = client.post(f"{url}/v1/chat/completions", headers=HEADERS)
    assert response.content == BODY
    assert "r-forms" in caplog.text and "not published" in caplog.text


ANTHROPIC_END = (b'event: message_delta\ndata: {"type":"message_delta","delta":'
                 b'{"stop_reason":"tool_use"}}\n\n'
                 b'event: message_stop\ndata: {"type":"message_stop"}\n\n')


@pytest.mark.parametrize(("pause", "end"), [(0.005, END_EOF), (0.4, END_CANCELLED)])
def test_a_close_after_the_finish_drains_briefly_to_the_terminal_event(
        pause: float, end: str) -> None:
    """LiteLLM's Anthropic handler closes once ``message_delta`` said how the body finishes:
    the async tee reads on for at most 0.1 s to reach ``message_stop`` (``eof``); a terminal
    event later than that leaves the close a cancel."""
    recorder = Recorder()
    body = b"".join(EVENTS) + ANTHROPIC_END

    async def read(url: str) -> None:
        async with async_client("transport", "httpx", recorder) as client, client.stream(
                "POST", f"{url}/v1/messages", content=b"{}") as response:
            seen = b""
            async for piece in response.aiter_raw():
                seen += piece
                if b"message_delta" in seen:
                    break

    cut = len(body) - len(ANTHROPIC_END) + ANTHROPIC_END.index(b"event: message_stop")
    # message_delta ends one write, message_stop is the next, ``pause`` later.
    with serving(Stream(body, pause=pause, split=lambda data: [data[:cut], data[cut:]])) as url:
        asyncio.run(read(url))
    (pushed,) = recorder.streams
    assert pushed.end == end
    assert (b"message_stop" in pushed.data) == (end == END_EOF)
