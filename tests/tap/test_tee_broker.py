"""The tee transports end to end: a real HTTP server on 127.0.0.1 streams real captures (some
compressed), a client reads them through a tee, the tee pushes the bytes to a real broker, a
real worker assembles them; the client's own result and the worker's record agree, and the
client saw the server's bytes unchanged."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest

from tests.app.support import Deployment, collect, running
from tests.core.captures import CORPUS
from tests.tap.h2server import serving_h2
from tests.tap.server import Stream, serving
from toolwire.core import Options, assemble
from toolwire.publish import COMPLETED, ChunkPublisher
from toolwire.tap import SESSION, Httpx2TeeTransport, HttpxTeeTransport

pytestmark = pytest.mark.broker

WIRES = Path(__file__).parents[1] / "core" / "corpus_wires"
CHAT = (CORPUS / "deepseek_parallel_empty_continuations_reversed.sse").read_bytes()
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
         for n in ("get_weather", "get_local_time", "search")]


def comparable_calls(calls: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(c["id"], c["name"], c["arguments"]) for c in calls]


async def sdk_calls(chunks: Any) -> list[tuple[str, str, str]]:
    """The calls as openai's parsed chunks give them, assembled by index."""
    calls: dict[int, dict[str, str]] = {}
    async for chunk in chunks:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = tc.id or call["id"]
                if tc.function is not None:
                    call["name"] = tc.function.name or call["name"]
                    call["arguments"] += tc.function.arguments or ""
    return comparable_calls([calls[i] for i in sorted(calls)])


@pytest.fixture(scope="module")
def deployment(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    dep = Deployment(kafka_bootstrap, tmp_path_factory.mktemp("tap"), partitions=3)
    with running(dep) as worker:
        yield dep, worker


def records_of(dep: Deployment, count: int) -> list[dict[str, Any]]:
    return asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter], until=count,
                               idle=2, timeout=90))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("coding", [None, "gzip", "deflate", "br"])
def test_openai_through_the_httpx2_tee_gets_the_calls_the_worker_assembles(
        deployment: Any, coding: str | None) -> None:
    dep, worker = deployment
    stream = Stream(CHAT, coding=coding, piece=41)
    request_id = f"tap-openai-{coding}"

    async def run(url: str) -> tuple[list[tuple[str, str, str]], str, dict[str, int]]:
        async with ChunkPublisher(dep.bootstrap, dep.chunks) as publisher:
            transport = Httpx2TeeTransport(httpx2.AsyncHTTPTransport(), publisher)
            client = openai.AsyncOpenAI(
                base_url=f"{url}/v1", api_key="test-key", max_retries=0,
                http_client=httpx2.AsyncClient(transport=transport))
            SESSION.set(f"session-{coding}")
            chunks = await client.chat.completions.create(
                model="deepseek-chat", messages=[{"role": "user", "content": "hi"}],
                tools=TOOLS, stream=True, extra_headers={"x-request-id": request_id})
            calls = await sdk_calls(chunks)
            await client.close()
            # The stream may be settled already (then it left the publisher's open set).
            outcome = COMPLETED
            for pushed in list(publisher._pushed):
                outcome = await pushed.done()
            return calls, outcome, dict(publisher.push_stats)

    with serving(stream) as url:
        parsed, outcome, stats = asyncio.run(run(url))
    assert outcome == COMPLETED and stats.get(COMPLETED) == 1
    (seen_path, seen_headers), = stream.seen
    assert seen_path == "/v1/chat/completions"
    # What a real server may send: a coding the client asked for (httpx2 asks for zstd only
    # on Python 3.14; the httpx test below reads zstd).
    assert coding is None or coding in seen_headers["accept-encoding"]
    records = [r for r in records_of(dep, 1) if r["request_id"] == request_id]
    assert len(records) == 1, records
    (record,) = records
    offline = assemble(CHAT, Options(declared_tools=frozenset(
        {"get_weather", "get_local_time", "search"})))
    assert record["outcome"] == "assembled", (record.get("reason"), record.get("detail"))
    assert record["session_id"] == f"session-{coding}"
    assert (record["provider"], record["model"]) == ("127.0.0.1", "deepseek-chat")
    assert comparable_calls(record["tool_calls"]) == comparable_calls(offline["tool_calls"])
    assert comparable_calls(record["tool_calls"]) == parsed
    assert worker.errors() == []


@pytest.mark.timeout(180)
def test_a_raw_httpx_client_sees_the_bytes_unchanged_and_an_early_close_is_cancelled(
        deployment: Any) -> None:
    """Through the httpx tee: read whole, the body is the server's, byte for byte (zstd: the
    client decodes it itself, and so does the tee for the topic); closed half-way before the
    terminal event, the stream ends ``cancelled`` and the worker says stream_closed."""
    dep, worker = deployment
    body = (WIRES / "anthropic-messages" / sorted(
        p.name for p in (WIRES / "anthropic-messages").glob("*.sse"))[0]).read_bytes()
    whole = Stream(body, coding="zstd", piece=29)

    async def read_all(url: str, publisher: ChunkPublisher) -> bytes:
        transport = HttpxTeeTransport(httpx.AsyncHTTPTransport(), publisher)
        async with httpx.AsyncClient(transport=transport) as client, client.stream(
                "POST", f"{url}/v1/messages", headers={"x-request-id": "tap-httpx-whole",
                                                       "x-session-id": "s-whole"},
                content=json.dumps({"model": "claude-x", "stream": True})) as response:
            return b"".join([piece async for piece in response.aiter_bytes()])

    async def read_half(url: str, publisher: ChunkPublisher) -> None:
        transport = HttpxTeeTransport(httpx.AsyncHTTPTransport(), publisher)
        async with httpx.AsyncClient(transport=transport) as client, client.stream(
                "POST", f"{url}/v1/chat/completions",
                headers={"x-request-id": "tap-httpx-half", "x-session-id": "s-half"},
                content=b"{}") as response:
            async for _ in response.aiter_raw():
                break  # the client gives up after the first slice

    async def run(url: str, url2: str) -> tuple[bytes, dict[str, int]]:
        async with ChunkPublisher(dep.bootstrap, dep.chunks) as publisher:
            got = await read_all(url, publisher)
            await read_half(url2, publisher)
            for stream in list(publisher._pushed):
                await stream.done()
            return got, dict(publisher.push_stats)

    half = Stream(CHAT, piece=23)
    with serving(whole) as url, serving(half) as url2:
        got, stats = asyncio.run(run(url, url2))
    assert got == body
    assert "zstd" in whole.seen[0][1]["accept-encoding"]
    assert stats.get(COMPLETED) == 2
    by_request = {r["request_id"]: r for r in records_of(dep, 2)}
    wire = assemble(body, Options(wire="anthropic-messages"))
    assert by_request["tap-httpx-whole"]["outcome"] == wire["outcome"]
    assert by_request["tap-httpx-whole"]["wire"] == "anthropic-messages"
    assert by_request["tap-httpx-whole"]["session_id"] == "s-whole"
    assert by_request["tap-httpx-half"]["reason"] == "stream_closed"
    assert "'cancelled'" in by_request["tap-httpx-half"]["detail"]
    assert worker.errors() == []


@pytest.mark.timeout(180)
def test_openai_over_http2_closes_before_eof_and_the_tee_still_says_eof(
        deployment: Any) -> None:
    """On HTTP/2 openai's async client closes the stream after [DONE] without reading to its
    end: the terminal event read, that close is the end (``eof``), and the record is
    assembled, the same calls as the SDK's."""
    dep, worker = deployment
    stream = Stream(CHAT, coding="gzip", piece=47)

    async def run(url: str) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
        async with ChunkPublisher(dep.bootstrap, dep.chunks) as publisher:
            transport = Httpx2TeeTransport(
                httpx2.AsyncHTTPTransport(http1=False, http2=True), publisher)
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="test-key",
                                        max_retries=0,
                                        http_client=httpx2.AsyncClient(transport=transport))
            chunks = await client.chat.completions.create(
                model="deepseek-chat", messages=[{"role": "user", "content": "hi"}],
                tools=TOOLS, stream=True, extra_headers={"x-request-id": "tap-openai-h2"})
            calls = await sdk_calls(chunks)
            await client.close()
            for pushed in list(publisher._pushed):
                await pushed.done()
            return calls, dict(publisher.push_stats)

    with serving_h2(stream) as url:
        calls, stats = asyncio.run(run(url))
    assert stream.seen[0][1][":version"] == "2"
    assert stats.get(COMPLETED) == 1, stats
    record = next(r for r in records_of(dep, 1) if r["request_id"] == "tap-openai-h2")
    assert record["outcome"] == "assembled", (record.get("reason"), record.get("detail"))
    assert comparable_calls(record["tool_calls"]) == calls
    assert worker.errors() == []
