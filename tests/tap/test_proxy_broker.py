"""The tee proxy end to end: ``toolwire tap serve`` as its own process in front of a real HTTP
server on 127.0.0.1 that streams real captures, clients that are not Python (node's fetch,
curl) and a Python one that gives up, a real broker and a real worker. The clients see the
upstream's answer unchanged; the worker assembles what they assembled."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

import toolwire
from tests.app.support import Deployment, collect, free_port, running
from tests.core.captures import CORPUS
from tests.tap.proxying import proxying
from tests.tap.server import Stream, serving
from toolwire.core import Options, assemble

pytestmark = pytest.mark.broker

WIRES = Path(__file__).parents[1] / "core" / "corpus_wires"
CHAT = (CORPUS / "deepseek_parallel_empty_continuations_reversed.sse").read_bytes()
NODE_CLIENT = Path(__file__).with_name("node_client.mjs")


def calls_of(record_or_result: dict[str, Any]) -> list[list[str]]:
    return [[c["id"], c["name"], c["arguments"]] for c in record_or_result["tool_calls"]]


@pytest.fixture(scope="module")
def deployment(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    dep = Deployment(kafka_bootstrap, tmp_path_factory.mktemp("proxy"), partitions=3)
    with running(dep) as worker:
        yield dep, worker


def records(dep: Deployment, count: int) -> dict[str, dict[str, Any]]:
    got = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter], until=count,
                              idle=1, timeout=90))
    return {r["request_id"]: r for r in got}


@pytest.mark.timeout(240)
def test_node_and_curl_through_the_proxy(deployment: Any) -> None:
    """node's fetch reads a gzip body through the proxy and assembles the calls the worker
    assembles from the tee; curl, reading raw, gets the upstream's br bytes unchanged (its
    Content-Encoding too), routed by prefix to a second upstream."""
    dep, worker = deployment
    chat = Stream(CHAT, coding="gzip", piece=37)
    anthropic_body = (WIRES / "anthropic-messages" / sorted(
        p.name for p in (WIRES / "anthropic-messages").glob("*.sse"))[0]).read_bytes()
    messages = Stream(anthropic_body, coding="br", piece=53)
    with serving(chat) as chat_url, serving(messages) as messages_url, proxying(
            dep.bootstrap, dep.chunks, [f"/chat={chat_url}", f"/msg={messages_url}/base"]
    ) as proxy:
        assert proxy.url.startswith("http://127.0.0.1:")
        node = subprocess.run(
            ["node", str(NODE_CLIENT), f"{proxy.url}/chat/v1/chat/completions",
             "proxy-node", "s-node"], capture_output=True, text=True, timeout=60, check=True)
        seen = json.loads(node.stdout)
        curl = subprocess.run(
            ["curl", "-sS", "--raw", "-D", "-", "-X", "POST", "-H", "x-request-id: proxy-curl",
             "-H", "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
             "--data", json.dumps({"model": "claude-x", "stream": True}),
             f"{proxy.url}/msg/v1/messages"], capture_output=True, timeout=60, check=True)
    # Stopped by SIGTERM, it exits 0 and says what became of the streams it published.
    assert proxy.process.returncode == 0, proxy.lines
    assert any("stopped; streams:" in line and "completed 2" in line
               for line in proxy.lines), proxy.lines
    head, _, body = curl.stdout.partition(b"\r\n\r\n")
    # curl --raw keeps the chunked framing: take the chunk payloads out of it.
    assert b"transfer-encoding: chunked" in head.lower()
    assert b"content-encoding: br" in head.lower()
    assert b"x-toolwire-request-id: proxy-curl" in head.lower()
    assert dechunk(body) == messages.wire_bytes()
    assert messages.seen[0][0] == "/base/v1/messages"  # the prefix off, the base path on
    assert chat.seen[0][0] == "/v1/chat/completions"
    assert messages.seen[0][1]["traceparent"].startswith("00-0af7651916")
    assert seen["status"] == 200 and seen["published_as"] == "proxy-node"
    by_request = records(dep, 2)
    node_record = by_request["proxy-node"]
    assert node_record["outcome"] == "assembled", node_record
    assert node_record["session_id"] == "s-node"
    assert (node_record["provider"], node_record["model"]) == ("127.0.0.1", "deepseek-chat")
    assert calls_of(node_record) == seen["calls"] == calls_of(assemble(CHAT, Options()))
    curl_record = by_request["proxy-curl"]
    assert curl_record["wire"] == "anthropic-messages"
    assert curl_record["outcome"] == assemble(anthropic_body,
                                              Options(wire="anthropic-messages"))["outcome"]
    assert worker.errors() == []
    assert not any("Traceback" in line for line in proxy.lines), proxy.lines


def dechunk(raw: bytes) -> bytes:
    """The payload of an HTTP/1.1 chunked body."""
    out = b""
    while raw:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += raw[:size]
        raw = raw[size + 2:]
    return out


@pytest.mark.timeout(240)
def test_a_client_that_goes_away_cancels_the_upstream_and_the_stream(
        deployment: Any) -> None:
    """A client that gives up after one slice of a slow body: the proxy notices at once, the
    published stream ends ``cancelled`` long before the upstream body would have ended, and
    the worker says stream_closed."""
    dep, worker = deployment
    slow = Stream(CHAT, piece=16, pause=0.1)  # about 12 s to send whole
    assert len(CHAT) / 16 * 0.1 > 10

    async def give_up(url: str) -> float:
        async with httpx2.AsyncClient() as client, client.stream(
                "POST", f"{url}/v1/chat/completions", headers={"x-request-id": "proxy-gone"},
                content=b'{"model": "m", "stream": true}') as response:
            assert response.status_code == 200
            async for _ in response.aiter_raw():
                break
        return time.monotonic()

    with serving(slow) as url, proxying(dep.bootstrap, dep.chunks, [url]) as proxy:
        gave_up = asyncio.run(give_up(proxy.url))
        record = records(dep, 1)["proxy-gone"]
        noticed = time.monotonic() - gave_up
    assert record["reason"] == "stream_closed", record
    assert "'cancelled'" in record["detail"]
    assert noticed < 8, noticed  # the whole body would take 12 s more
    assert worker.errors() == []


@pytest.mark.timeout(180)
def test_what_is_not_a_stream_passes_untouched_and_errors_say_why(deployment: Any) -> None:
    """A 400 JSON answer comes back as it was, unpublished; a path no upstream routes is a
    404, an upstream that does not answer a 502, each with a JSON reason."""
    dep, _ = deployment
    refusal = Stream(b'{"error": {"message": "bad key"}}', status=401,
                     content_type="application/json")
    dead = f"http://127.0.0.1:{free_port()}"
    with serving(refusal) as url, proxying(dep.bootstrap, dep.chunks, [
            f"/ok={url}", f"/dead={dead}"]) as proxy, httpx2.Client() as client:
        refused = client.post(f"{proxy.url}/ok/v1/chat/completions", content=b"{}")
        unrouted = client.post(f"{proxy.url}/elsewhere/v1/chat/completions")
        unanswered = client.post(f"{proxy.url}/dead/v1/messages", content=b"{}")
    assert refused.status_code == 401 and refused.content == refusal.body
    assert "x-toolwire-request-id" not in refused.headers
    assert unrouted.status_code == 404 and "no upstream" in unrouted.json()["error"]["message"]
    assert unanswered.status_code == 502
    assert dead in unanswered.json()["error"]["message"]
    assert not any("bad key" in line for line in proxy.lines)


SAMPLES = Path(toolwire.__file__).parent / "samples"


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("body_file", "path", "content_type", "wire"), [
    (WIRES / "ollama-chat" / "ollama_parallel_calls_one_line.ndjson", "/api/chat",
     "application/x-ndjson", "ollama-chat"),
    (SAMPLES / "12_bedrock_converse_calls.eventstream",
     "/model/anthropic.claude-sonnet-4-5-v1%3A0/converse-stream",
     "application/vnd.amazon.eventstream", "bedrock-converse"),
    (SAMPLES / "13_bedrock_invoke_call.eventstream",
     "/model/anthropic.claude-sonnet-4-5-v1%3A0/invoke-with-response-stream",
     "application/vnd.amazon.eventstream", "bedrock-invoke"),
], ids=["ollama-chat", "bedrock-converse", "bedrock-invoke"])
def test_a_stream_that_is_not_sse_through_the_proxy_is_published_and_assembled(
        deployment: Any, body_file: Path, path: str, content_type: str, wire: str) -> None:
    """Ollama's /api/chat answers application/x-ndjson, Bedrock's streaming routes
    application/vnd.amazon.eventstream: the proxy tees each like an event stream, cut
    anywhere (29-byte pieces split messages and their CRCs), and the worker assembles it
    under the wire its path names."""
    dep, worker = deployment
    body = body_file.read_bytes()
    stream = Stream(body, piece=29, content_type=content_type)
    request = f"proxy-{wire}"
    with serving(stream) as url, proxying(dep.bootstrap, dep.chunks, [url]) as proxy, \
            httpx2.Client() as client:
        got = client.post(f"{proxy.url}{path}", headers={"x-request-id": request},
                          content=b'{"model": "m", "stream": true}')
    assert got.content == body and got.headers["x-toolwire-request-id"] == request
    record = records(dep, 1)[request]
    offline = assemble(body, Options(wire=wire))
    assert record["wire"] == wire and record["outcome"] == offline["outcome"] == "assembled"
    assert calls_of(record) == calls_of(offline) and calls_of(offline)
    assert worker.errors() == []
