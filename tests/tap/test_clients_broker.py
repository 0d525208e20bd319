"""The tap with each real Python SDK, end to end: every SDK reads a real capture from a real
HTTP server on 127.0.0.1 through a toolwire tee (the tee transport, or the tee as a response
event hook), the tee pushes the bytes to a real broker, a real worker assembles them; the tool
calls the SDK parsed itself and the worker's record are the same calls.

SDKs (see shared/reference/clients-2026.md): openai (Chat Completions and Responses, async and
sync), anthropic (async and sync), google-genai, mistralai (closes on ``[DONE]`` before the end
of the body) on httpx2; LiteLLM on httpx, both through its OpenAI-compatible path (the
module-level ``aclient_session``) and through its native Anthropic handler (a per-call
``AsyncHTTPHandler``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from mistralai.client import Mistral

from tests.app.support import Deployment, Worker, collect, running
from tests.core.captures import CORPUS
from tests.tap.server import Stream, serving
from toolwire.core import Options, assemble
from toolwire.publish import COMPLETED, ChunkPublisher, PublisherThread, split_events
from toolwire.tap import Httpx2TeeTransport, HttpxTeeTransport, StreamOpener, TeeHook, wire_of

pytestmark = pytest.mark.broker

WIRES = Path(__file__).parents[1] / "core" / "corpus_wires"
FORMS = ("transport", "hook")

#: One tool call as an SDK gives it: id, name, and the arguments as JSON text (or, for the
#: SDKs that parse them, anthropic and google-genai, as the object).
Call = tuple[str | None, str | None, Any]


@dataclass(frozen=True)
class Capture:
    """A real body with tool calls, its wire, and the tools its request must declare."""

    path: Path
    wire: str
    tools: tuple[str, ...]

    @property
    def body(self) -> bytes:
        return self.path.read_bytes()

    def offline(self) -> list[Call]:
        record = assemble(self.body, Options(wire=self.wire,
                                             declared_tools=frozenset(self.tools)))
        assert record["outcome"] == "assembled", record
        return calls_of(record)


CHAT = Capture(CORPUS / "deepseek_parallel_empty_continuations_reversed.sse", "openai-chat",
               ("get_weather", "get_local_time"))
#: Every delta names its call, as mistralai's model requires (a Mistral-shaped body).
CHAT_NAMED = Capture(CORPUS / "litellm_identity_repeated_two_calls.sse", "openai-chat",
                     ("get_weather",))
RESPONSES = Capture(WIRES / "openai-responses" / "parallel_function_calls.sse",
                    "openai-responses", ("get_weather",))
MESSAGES = Capture(WIRES / "anthropic-messages" / "claude_parallel_tool_use.sse",
                   "anthropic-messages", ("get_weather", "get_local_time"))
GEMINI = Capture(WIRES / "gemini" / "gemini3_parallel_calls_first_signed.sse", "gemini",
                 ("get_weather", "get_time"))

#: The request messages (typed loosely: each SDK has its own TypedDicts for them).
USER: Any = [{"role": "user", "content": "hi"}]


def calls_of(record: Mapping[str, Any], parsed: bool = False) -> list[Call]:
    """A record's calls; ``parsed``: with the arguments as the object they spell."""
    return [(c["id"], c["name"], json.loads(c["arguments"]) if parsed else c["arguments"])
            for c in record["tool_calls"]]


def chat_tools(capture: Capture) -> Any:
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in capture.tools]


def headers_for(request_id: str) -> dict[str, str]:
    return {"x-request-id": request_id, "x-session-id": f"session-{request_id}"}


class ChatDeltas:
    """Chat Completions tool calls as an SDK streams them (parsed delta objects, by index):
    the id and name that come, the arguments concatenated."""

    def __init__(self) -> None:
        self._calls: dict[int, list[Any]] = {}

    def add(self, chunk: Any) -> None:
        for choice in chunk.choices or []:
            for tc in choice.delta.tool_calls or []:
                call = self._calls.setdefault(tc.index, ["", "", ""])
                call[0] = tc.id or call[0]
                if tc.function is not None:
                    call[1] = tc.function.name or call[1]
                    call[2] += tc.function.arguments or ""

    def calls(self) -> list[Call]:
        return [(i, n, a) for i, n, a in (self._calls[k] for k in sorted(self._calls))]

    @classmethod
    async def read(cls, chunks: AsyncIterable[Any]) -> list[Call]:
        """The calls of a whole async stream of chunks."""
        deltas = cls()
        async for chunk in chunks:
            deltas.add(chunk)
        return deltas.calls()


def tee_args(form: str, publisher: StreamOpener, library: Any = httpx2,
             is_async: bool = True) -> dict[str, Any]:
    """The client arguments that put the tee in: the tee transport around the library's own
    (``httpx2`` or ``httpx``, async or sync), or the tee as a response event hook."""
    if form == "hook":
        return {"event_hooks": {"response": [TeeHook(publisher)]}}
    tee = Httpx2TeeTransport if library is httpx2 else HttpxTeeTransport
    inner = library.AsyncHTTPTransport() if is_async else library.HTTPTransport()
    return {"transport": tee(inner, publisher)}


@pytest.fixture(scope="module")
def deployment(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[Deployment, Worker]]:
    dep = Deployment(kafka_bootstrap, tmp_path_factory.mktemp("clients"), partitions=3)
    with running(dep) as worker:
        yield dep, worker


AsyncRead = Callable[[str, ChunkPublisher], Awaitable[list[Call]]]
SyncRead = Callable[[str, PublisherThread], list[Call]]


def through_async(deployment: tuple[Deployment, Worker], capture: Capture, stream: Stream,
                  request_id: str, read: AsyncRead, *, parsed: bool = False) -> None:
    """An async SDK reads the server through a tee that pushes to a publisher in its loop;
    then :func:`check` (the push stats are read once the publisher stopped: stopping waits
    for every pushed stream to settle, and ends any still open as cancelled)."""

    async def run(url: str) -> tuple[list[Call], dict[str, int]]:
        async with ChunkPublisher(deployment[0].bootstrap, deployment[0].chunks) as publisher:
            calls = await read(url, publisher)
        return calls, dict(publisher.push_stats)

    with serving(stream) as url:
        calls, stats = asyncio.run(run(url))
    check(deployment, capture, stream, request_id, calls, stats, parsed=parsed)


def through_sync(deployment: tuple[Deployment, Worker], capture: Capture, stream: Stream,
                 request_id: str, read: SyncRead, *, parsed: bool = False) -> None:
    """:func:`through_async` for a sync SDK, with a :class:`PublisherThread`."""
    dep = deployment[0]
    with serving(stream) as url, PublisherThread(dep.bootstrap, dep.chunks) as publisher:
        calls = read(url, publisher)
    check(deployment, capture, stream, request_id, calls, dict(publisher.push_stats),
          parsed=parsed)


def records_of(dep: Deployment, request_id: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The records of one request, once there is one (the module's worker has the records of
    every test before it on its topics too)."""
    deadline = time.monotonic() + timeout
    while True:
        records = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter],
                                      idle=0.5, timeout=timeout))
        mine = [r for r in records if r["request_id"] == request_id]
        if mine or time.monotonic() > deadline:
            return mine


def check(deployment: tuple[Deployment, Worker], capture: Capture, stream: Stream,
          request_id: str, sdk_calls: list[Call], stats: Mapping[str, int], *,
          parsed: bool = False) -> None:
    """One stream pushed and completed; the worker's record of it assembled, on the
    capture's wire, with the calls the SDK parsed (and ``assemble`` finds offline)."""
    dep, worker = deployment
    assert stats.get("opened") == 1 and stats.get(COMPLETED) == 1, stats
    (seen_path, seen_headers), = stream.seen
    assert wire_of(urlsplit(seen_path).path) == capture.wire
    assert seen_headers["x-request-id"] == request_id
    if stream.coding is not None:  # what a real server may send: a coding asked for
        assert stream.coding in seen_headers["accept-encoding"]
    (record,) = records_of(dep, request_id)
    assert record["outcome"] == "assembled", (record.get("reason"), record.get("detail"))
    assert record["wire"] == capture.wire
    assert record["session_id"] == f"session-{request_id}"
    assert calls_of(record) == capture.offline()
    assert calls_of(record, parsed) == sdk_calls
    assert worker.errors() == []


# -- openai -----------------------------------------------------------------------------------


@pytest.mark.timeout(180)
@pytest.mark.parametrize("form", FORMS)
def test_openai_responses_stream(deployment: Any, form: str) -> None:
    request_id = f"clients-openai-responses-{form}"
    stream = Stream(RESPONSES.body, piece=37)

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0,
                                    http_client=httpx2.AsyncClient(**tee_args(form, publisher)))
        events = await client.responses.create(
            model="gpt-x", input="hi", stream=True, extra_headers=headers_for(request_id),
            tools=[{"type": "function", "name": n, "parameters": {"type": "object"},
                    "strict": False} for n in RESPONSES.tools])
        final = None
        async for event in events:
            if event.type == "response.completed":
                final = event.response
        await client.close()
        assert final is not None
        return [(o.call_id, o.name, o.arguments) for o in final.output
                if o.type == "function_call"]

    through_async(deployment, RESPONSES, stream, request_id, read)


@pytest.mark.timeout(180)
def test_openai_chat_completions_through_the_hook(deployment: Any) -> None:
    """The transport form is test_tee_broker's; openai's async stream stops at ``[DONE]`` and
    drains the rest."""
    request_id = "clients-openai-chat-hook"
    stream = Stream(CHAT.body, piece=41)

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0,
                                    http_client=httpx2.AsyncClient(**tee_args("hook", publisher)))
        chunks = await client.chat.completions.create(
            model="deepseek-chat", messages=USER, tools=chat_tools(CHAT), stream=True,
            extra_headers=headers_for(request_id))
        calls = await ChatDeltas.read(chunks)
        await client.close()
        return calls

    through_async(deployment, CHAT, stream, request_id, read)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("form", FORMS)
def test_sync_openai_closes_on_done_and_the_record_is_assembled(
        deployment: Any, form: str) -> None:
    """Sync openai breaks on ``[DONE]`` and closes the response without reading on: the tee
    has seen the terminal event, so the stream still ends ``eof``."""
    request_id = f"clients-openai-sync-{form}"
    stream = Stream(CHAT.body, piece=41)

    def read(url: str, publisher: PublisherThread) -> list[Call]:
        http = httpx2.Client(**tee_args(form, publisher, is_async=False))
        with openai.OpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0,
                           http_client=http) as client:
            deltas = ChatDeltas()
            for chunk in client.chat.completions.create(
                    model="deepseek-chat", messages=USER, tools=chat_tools(CHAT), stream=True,
                    extra_headers=headers_for(request_id)):
                deltas.add(chunk)
        return deltas.calls()

    through_sync(deployment, CHAT, stream, request_id, read)


# -- anthropic --------------------------------------------------------------------------------

ANTHROPIC_TOOLS: Any = [{"name": n, "input_schema": {"type": "object"}} for n in MESSAGES.tools]


def tool_uses(message: Any) -> list[Call]:
    return [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("form", "coding"), [("transport", None), ("hook", "gzip")])
def test_anthropic_messages_stream(deployment: Any, form: str, coding: str | None) -> None:
    """Anthropic (behind Cloudflare) gzips its SSE: the tee decodes it for the topic."""
    request_id = f"clients-anthropic-{form}"
    stream = Stream(MESSAGES.body, coding=coding, piece=43)

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        client = anthropic.AsyncAnthropic(
            base_url=url, api_key="test-key", max_retries=0,
            http_client=httpx2.AsyncClient(**tee_args(form, publisher)))
        async with client.messages.stream(
                model="claude-x", max_tokens=256, messages=USER, tools=ANTHROPIC_TOOLS,
                extra_headers=headers_for(request_id)) as events:
            message = await events.get_final_message()
        await client.close()
        return tool_uses(message)

    through_async(deployment, MESSAGES, stream, request_id, read, parsed=True)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("form", FORMS)
def test_sync_anthropic_messages_stream(deployment: Any, form: str) -> None:
    request_id = f"clients-anthropic-sync-{form}"
    stream = Stream(MESSAGES.body, piece=43)

    def read(url: str, publisher: PublisherThread) -> list[Call]:
        http = httpx2.Client(**tee_args(form, publisher, is_async=False))
        with anthropic.Anthropic(base_url=url, api_key="test-key", max_retries=0,
                                 http_client=http) as client, client.messages.stream(
                model="claude-x", max_tokens=256, messages=USER, tools=ANTHROPIC_TOOLS,
                extra_headers=headers_for(request_id)) as events:
            return tool_uses(events.get_final_message())

    through_sync(deployment, MESSAGES, stream, request_id, read, parsed=True)


# -- google-genai -----------------------------------------------------------------------------


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("form", "coding"), [("transport", "br"), ("hook", None)])
def test_google_genai_generate_content_stream(
        deployment: Any, form: str, coding: str | None) -> None:
    """google-genai on httpx2: its transport given in ``async_client_args`` (the tee is an
    httpx2 class, so the backend is httpx2, and aiohttp, installed here with LiteLLM, does
    not win), or its own ``httpx_async_client`` with the hook."""
    request_id = f"clients-genai-{form}"
    stream = Stream(GEMINI.body, coding=coding, piece=39)

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        args = tee_args(form, publisher)
        own = httpx2.AsyncClient(**args) if form == "hook" else None
        options = genai_types.HttpOptions(
            base_url=url, retry_options=genai_types.HttpRetryOptions(attempts=1),
            **({"httpx_async_client": own} if own is not None else {"async_client_args": args}))
        client = genai.Client(api_key="test-key", http_options=options)
        config = genai_types.GenerateContentConfig(
            http_options=genai_types.HttpOptions(headers=headers_for(request_id)),
            tools=[genai_types.Tool(function_declarations=[
                genai_types.FunctionDeclaration(name=n, parameters_json_schema={"type": "object"})
                for n in GEMINI.tools])])
        calls: list[Call] = []
        async for response in await client.aio.models.generate_content_stream(
                model="gemini-x", contents="hi", config=config):
            calls += [(c.id, c.name, c.args) for c in response.function_calls or []]
        await client.aio.aclose()
        if own is not None:
            await own.aclose()
        return calls

    through_async(deployment, GEMINI, stream, request_id, read, parsed=True)


# -- mistralai --------------------------------------------------------------------------------


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("form", "coding"), [("transport", None), ("hook", "gzip")])
def test_mistral_closes_on_done_and_the_record_is_assembled(
        deployment: Any, form: str, coding: str | None) -> None:
    """mistralai returns on ``[DONE]`` and closes before the end of the body: the tee has
    seen the terminal event, so the stream still ends ``eof``."""
    request_id = f"clients-mistral-{form}"
    stream = Stream(CHAT_NAMED.body, coding=coding, piece=31)

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        client = Mistral(api_key="test-key", server_url=url, retry_config=None,
                         async_client=httpx2.AsyncClient(**tee_args(form, publisher)))
        events = await client.chat.stream_async(
            model="mistral-x", messages=USER, tools=chat_tools(CHAT_NAMED),
            http_headers=headers_for(request_id))
        async with events:
            return await ChatDeltas.read(event.data async for event in events)

    through_async(deployment, CHAT_NAMED, stream, request_id, read)


# -- LiteLLM ----------------------------------------------------------------------------------


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """LiteLLM on httpx's own transport, with its global state put back afterwards (the
    module-level session, the aiohttp switch, its cache of SDK clients)."""
    # Its own cost map, not a fetch from GitHub at import (no network here).
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    monkeypatch.setattr(litellm, "disable_aiohttp_transport", True)
    monkeypatch.setattr(litellm, "aclient_session", None)
    cache: Any = litellm.in_memory_llm_clients_cache
    cache.flush_cache()
    yield litellm
    cache.flush_cache()


async def litellm_calls(litellm: Any, capture: Capture, request_id: str,
                        **route: Any) -> list[Call]:
    """The calls LiteLLM parsed from one streamed ``acompletion`` on ``route``."""
    chunks = await litellm.acompletion(
        api_key="test-key", messages=USER, tools=chat_tools(capture), stream=True,
        max_retries=0, extra_headers=headers_for(request_id), **route)
    return await ChatDeltas.read(chunks)


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("form", "coding"), [("transport", None), ("hook", "gzip")])
def test_litellm_openai_compatible_through_its_module_session(
        deployment: Any, litellm: Any, form: str, coding: str | None) -> None:
    """``litellm.aclient_session``: the legacy httpx client LiteLLM hands to openai's SDK."""
    request_id = f"clients-litellm-openai-{form}"
    stream = Stream(CHAT.body, coding=coding, piece=41)

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        session = httpx.AsyncClient(**tee_args(form, publisher, httpx))
        litellm.aclient_session = session
        calls = await litellm_calls(litellm, CHAT, request_id, model="openai/deepseek-chat",
                                    api_base=f"{url}/v1")
        await session.aclose()
        return calls

    through_async(deployment, CHAT, stream, request_id, read)


def split_events_ending_together(data: bytes) -> list[bytes]:
    """One SSE event a write, but the last two (``message_delta``, ``message_stop``) in one."""
    pieces = split_events(data)
    return [*pieces[:-2], pieces[-2] + pieces[-1]]


def litellm_native_anthropic(deployment: Any, litellm: Any, form: str, stream: Stream,
                             request_id: str) -> None:
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    async def read(url: str, publisher: ChunkPublisher) -> list[Call]:
        handler: Any = AsyncHTTPHandler(**tee_args(form, publisher, httpx))
        calls = await litellm_calls(litellm, MESSAGES, request_id, model="anthropic/claude-x",
                                    api_base=url, client=handler)
        await handler.close()
        return calls

    through_async(deployment, MESSAGES, stream, request_id, read)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("form", FORMS)
def test_litellm_native_anthropic_through_its_http_handler(
        deployment: Any, litellm: Any, form: str) -> None:
    """A per-call ``client=AsyncHTTPHandler(...)`` for LiteLLM's own Anthropic handler, which
    reads the Messages wire itself and gives Chat Completions deltas. It closes the response
    at the first empty chunk after the finish (``message_delta``), without reading on
    (``litellm/litellm_core_utils/streaming_handler.py:1519-1532``): here ``message_stop``
    came in the same read, so the tee has seen it (for the other case see below)."""
    litellm_native_anthropic(deployment, litellm, form,
                             Stream(MESSAGES.body, split=split_events_ending_together),
                             f"clients-litellm-anthropic-{form}")


@pytest.mark.timeout(180)
def test_litellm_native_anthropic_closing_before_message_stop(
        deployment: Any, litellm: Any) -> None:
    """The same, with the server writing one event at a time (as Anthropic flushes): LiteLLM
    has every call and the finish, and closes before reading ``message_stop``; the tee reads
    on briefly (it had seen ``message_delta``) to the end, so the record is assembled."""
    litellm_native_anthropic(deployment, litellm, "transport",
                             Stream(MESSAGES.body, split=split_events),
                             "clients-litellm-anthropic-by-event")
