"""What the tee reads off a request, and what it leaves alone (no broker needed: a response it
does not tee never touches the publisher)."""

from __future__ import annotations

import asyncio
import logging

import httpx
import httpx2
import orjson
import pytest

from tests.tap.server import Stream, serving
from toolwire.publish import ChunkPublisher
from toolwire.tap import Httpx2TeeTransport, HttpxTeeTransport, Tap, request_fields, wire_of

BODY = b'data: {"choices":[]}\n\ndata: [DONE]\n\n'


@pytest.mark.parametrize(("path", "wire"), [
    ("/v1/chat/completions", "openai-chat"),
    ("/api/v1/chat/completions", "openai-chat"),
    ("/v1/messages", "anthropic-messages"),
    ("/v1/responses", "openai-responses"),
    ("/v1beta/models/gemini-3-pro:streamGenerateContent", "gemini"),
    ("/api/chat", "ollama-chat"),
    ("/model/anthropic.claude-sonnet-4-5-v1%3A0/converse-stream", "bedrock-converse"),
    ("/model/us.anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream",
     "bedrock-invoke"),
    ("/model/amazon.nova-pro-v1:0/converse", None),
    ("/v1/embeddings", None),
    ("/v1/messages/count_tokens", None),
])
def test_the_wire_is_told_by_the_path(path: str, wire: str | None) -> None:
    assert wire_of(path) == wire


@pytest.mark.parametrize(("body", "model", "tools"), [
    ({"model": "gpt-5", "tools": [{"type": "function", "function": {"name": "a"}},
                                  {"type": "custom", "custom": {"name": "patch"}}]},
     "gpt-5", ("a", "patch")),
    ({"model": "claude", "tools": [{"name": "a", "input_schema": {}}]}, "claude", ("a",)),
    ({"model": "gpt-5", "tools": [{"type": "function", "name": "a"}]}, "gpt-5", ("a",)),
    ({"tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}]}, None, ("a", "b")),
    ({"model": "m", "tools": []}, "m", ()),
    ({"model": "m"}, "m", None),
    # A tool without a name (a provider's own tool): the names are no full declaration.
    ({"model": "m", "tools": [{"name": "a"}, {"type": "web_search"}]}, "m", None),
    ({"model": 3, "tools": "x"}, None, None),
    # Bedrock Converse: the model is in the path, the tools under toolConfig.
    ({"toolConfig": {"tools": [{"toolSpec": {"name": "a", "inputSchema": {}}},
                               {"toolSpec": {"name": "b"}}]}}, None, ("a", "b")),
    ({"toolConfig": {"tools": [{"cachePoint": {"type": "default"}}]}}, None, None),
])
def test_model_and_declared_tools_come_from_the_request(
        body: object, model: str | None, tools: tuple[str, ...] | None) -> None:
    assert request_fields(orjson.dumps(body)) == (model, tools)


@pytest.mark.parametrize(("host", "path", "provider", "model"), [
    ("bedrock-runtime.us-east-1.amazonaws.com",
     "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream", "bedrock",
     "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("bedrock-runtime-fips.us-west-2.amazonaws.com",
     "/model/anthropic.claude-3-haiku-20240307-v1:0/invoke-with-response-stream", "bedrock",
     "anthropic.claude-3-haiku-20240307-v1:0"),
    ("bedrock.example.com", "/model/m/converse-stream", "bedrock.example.com", "m"),
])
def test_a_bedrock_request_names_its_provider_by_host_and_its_model_by_path(
        host: str, path: str, provider: str, model: str) -> None:
    tap = Tap(ChunkPublisher("127.0.0.1:9", "never.used"))
    meta = tap.meta(None, {}, host, b'{"messages": []}', "bedrock-converse", None, path)
    assert (meta.provider, meta.model, meta.wire) == (provider, model, "bedrock-converse")


@pytest.mark.parametrize("content", [b"", b"not json", b"[1, 2]"])
def test_a_request_body_that_says_nothing_gives_nothing(content: bytes) -> None:
    assert request_fields(content) == (None, None)


@pytest.mark.parametrize(("status", "content_type", "path"), [
    (200, "application/json", "/v1/chat/completions"),
    (429, "text/event-stream", "/v1/chat/completions"),
    (500, "text/event-stream", "/v1/messages"),
    (200, "text/event-stream", "/v1/embeddings"),
])
def test_other_responses_pass_untouched_and_unpublished(
        status: int, content_type: str, path: str, caplog: pytest.LogCaptureFixture) -> None:
    """The publisher is never started: a tee that tried to publish would log its failure."""
    stream = Stream(BODY, status=status, content_type=content_type, piece=5)
    publisher = ChunkPublisher("127.0.0.1:9", "never.used")

    async def read(url: str) -> tuple[bytes, bytes]:
        out = []
        for client in (httpx2.AsyncClient(transport=Httpx2TeeTransport(
                          httpx2.AsyncHTTPTransport(), publisher)),
                       httpx.AsyncClient(transport=HttpxTeeTransport(
                          httpx.AsyncHTTPTransport(), publisher))):
            async with client:
                response = await client.post(f"{url}{path}", content=b"{}")
                assert response.status_code == status
                out.append(response.content)
        return out[0], out[1]

    with caplog.at_level(logging.DEBUG, logger="toolwire.tap"), serving(stream) as url:
        got = asyncio.run(read(url))
    assert got == (BODY, BODY)
    assert dict(publisher.push_stats) == {}
    assert caplog.text == ""
