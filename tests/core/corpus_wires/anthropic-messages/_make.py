"""Generate the Anthropic Messages corpus: ``NAME.sse`` bodies and ``NAME.json`` expectations.

Run from anywhere::

    .venv/bin/python tests/core/corpus_wires/anthropic-messages/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
streamed Messages response (``event:`` + ``data:`` frames as the API sends them, or data-only
frames as some proxies relay them; written byte-exact) and the whole of the record the
assembler must produce for it under ``wire: anthropic-messages``.  The shapes come from
``shared/reference/wires.md`` §1 and ``shapes-2026.md`` (beside the repository); the rules
from issue 13 (the table's Anthropic column, "Output", "Precisely", "Shapes added in 2026").

Every expected value is written out by hand from those rules (never computed by running
``toolwire``): calls, arguments, finish, error codes and usage are literals.  The comment on
each case says how its values follow from the rules.  Where the rules leave a value open, the
choice made is listed in ``DECISIONS`` (and in the README's "Decisions" section).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Run as a script, only this folder is on the path: the shared builders are under the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.core import corpus_build
from tests.core.corpus_build import dumps, missing

HERE = Path(__file__).resolve().parent

WIRE = "anthropic-messages"

#: The API sends its ping with a space after the colon (streaming docs); kept verbatim.
PING_DATA = '{"type": "ping"}'
DONE = "data: [DONE]\n\n"


# --------------------------------------------------------------------------------------------
# Building blocks: the capture
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``anthropic-messages`` (its ``NAME.json`` says so)."""

    wire = WIRE


# --------------------------------------------------------------------------------------------
# Building blocks: the wire
# --------------------------------------------------------------------------------------------


def frame(payload: dict[str, Any] | str, *, name: str | None = None, named: bool = True) -> str:
    """One SSE frame: ``event: TYPE`` + ``data: JSON`` (or data-only when ``named`` is False).

    A ``str`` payload is sent verbatim (then ``name`` gives the event line); ``name`` also lets
    a frame carry an event name that differs from its JSON ``type`` (a relabelling proxy).
    """
    text = payload if isinstance(payload, str) else dumps(payload)
    if not named:
        return f"data: {text}\n\n"
    if name is None:
        if isinstance(payload, str):
            raise ValueError("a verbatim payload needs its event name")
        name = str(payload["type"])
    return f"event: {name}\ndata: {text}\n\n"


def body(*frames: str, eol: str = "\n") -> bytes:
    """The body: the frames joined, with ``eol`` line ends (JSON never holds a raw newline)."""
    text = "".join(frames)
    if eol != "\n":
        text = text.replace("\n", eol)
    return text.encode("utf-8")


@dataclass
class Message:
    """One streamed Messages response: its id, model and the usage its message_start reports."""

    id: str
    model: str
    input_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    named: bool = True

    def _f(self, payload: dict[str, Any]) -> str:
        return frame(payload, named=self.named)

    def start_usage(self) -> dict[str, Any]:
        """The usage object of message_start as the API sends it (output_tokens so far)."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_write,
            "cache_read_input_tokens": self.cache_read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_write,
                "ephemeral_1h_input_tokens": 0,
            },
            "output_tokens": 1,
            "service_tier": "standard",
        }

    def usage(self, output_tokens: int, **extra: Any) -> dict[str, Any]:
        """The cumulative usage object of message_delta."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_write,
            "cache_read_input_tokens": self.cache_read,
            "output_tokens": output_tokens,
            **extra,
        }

    def start(self, usage: dict[str, Any] | None = None) -> str:
        return self._f(
            {
                "type": "message_start",
                "message": {
                    "id": self.id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": self.start_usage() if usage is None else usage,
                },
            }
        )

    def ping(self) -> str:
        return frame(PING_DATA, name="ping", named=self.named)

    def block(self, index: int, content_block: dict[str, Any]) -> str:
        return self._f(
            {"type": "content_block_start", "index": index, "content_block": content_block}
        )

    def text(self, index: int) -> str:
        return self.block(index, {"type": "text", "text": ""})

    def tool_use(
        self,
        index: int,
        tool_id: str | None,
        name: str,
        input_: dict[str, Any] | None = None,
        **extra: Any,
    ) -> str:
        """A ``tool_use`` block's start (``tool_id`` None: a relay that leaves ``id`` out)."""
        identity = {} if tool_id is None else {"id": tool_id}
        block = {"type": "tool_use", **identity, "name": name, "input": input_ or {}, **extra}
        return self.block(index, block)

    def server_tool_use(self, index: int, tool_id: str, name: str) -> str:
        return self.block(
            index, {"type": "server_tool_use", "id": tool_id, "name": name, "input": {}}
        )

    def thinking(self, index: int) -> str:
        return self.block(index, {"type": "thinking", "thinking": "", "signature": ""})

    def delta(self, index: int, delta: dict[str, Any]) -> str:
        return self._f({"type": "content_block_delta", "index": index, "delta": delta})

    def say(self, index: int, text: str) -> str:
        return self.delta(index, {"type": "text_delta", "text": text})

    def args(self, index: int, partial_json: str) -> str:
        return self.delta(index, {"type": "input_json_delta", "partial_json": partial_json})

    def think(self, index: int, thinking: str) -> str:
        return self.delta(index, {"type": "thinking_delta", "thinking": thinking})

    def sign(self, index: int, signature: str) -> str:
        return self.delta(index, {"type": "signature_delta", "signature": signature})

    def stop(self, index: int) -> str:
        return self._f({"type": "content_block_stop", "index": index})

    def message_delta(
        self,
        stop_reason: str,
        usage: dict[str, Any],
        stop_sequence: str | None = None,
        stop_details: dict[str, Any] | None = None,
    ) -> str:
        delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": stop_sequence}
        if stop_details is not None:
            delta["stop_details"] = stop_details
        return self._f({"type": "message_delta", "delta": delta, "usage": usage})

    def end(self) -> str:
        return self._f({"type": "message_stop"})

    def error(self, error_type: str, message: str, request_id: str) -> str:
        payload = {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": request_id,
        }
        return self._f(payload)


# --------------------------------------------------------------------------------------------
# Building blocks: the expected record
# --------------------------------------------------------------------------------------------


#: An expected client call: choice 0, ``index`` its ordinal among client calls.  Every
#: Anthropic ``tool_use`` call has type ``function``; ``provider_fields`` is a key only when the
#: block carried ``caller`` or ``toolset_name``.  A call is ``id_synthesized`` only under the
#: operator's opt-in (``proxy_tool_use_ids_synthesized``).
call = functools.partial(corpus_build.call, 0)
assembled = functools.partial(corpus_build.assembled, WIRE)
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)


def server_call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An expected entry of ``server_tool_calls``.  ``index`` is its ordinal among server
    calls, ``type`` the block's own type (``server_tool_use``) verbatim, ``arguments`` built by
    the client-call rule; a ``server_tool_use`` block carries no status, so ``status`` is null."""
    return corpus_build.server_call(index, "server_tool_use", call_id, name, arguments, None)


CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


# Sources (sections of shared/reference/*.md and the public URLs they cite).
WIRES = "wires.md §1 Anthropic Messages"
STREAMING_DOCS = (
    f"{WIRES}, 'Wire' (https://platform.claude.com/docs/en/build-with-claude/streaming)"
)
STOP_REASONS_DOCS = (
    f"{WIRES}, 'Stop reasons' "
    "(https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons)"
)
FINE_GRAINED_DOCS = (
    f"{WIRES}, 'Fine-grained streaming' "
    "(https://platform.claude.com/docs/en/agents-and-tools/tool-use/fine-grained-tool-streaming)"
)
SDK_FIXTURE = (
    f"{WIRES}, 'Truncation': anthropic-sdk-python "
    "tests/lib/streaming/fixtures/incomplete_partial_json_response.txt"
)
SDK_1192 = "https://github.com/anthropics/anthropic-sdk-python/issues/1192"
SDK_1258 = "https://github.com/anthropics/anthropic-sdk-python/issues/1258"
SDK_GO_164 = "https://github.com/anthropics/anthropic-sdk-go/issues/164"
LANGCHAIN_23911 = "https://github.com/langchain-ai/langchain/issues/23911"
VANE_1160 = "https://github.com/ItzCrazyKns/Vane/issues/1160"
VERCEL_14280 = "https://github.com/vercel/ai/pull/14280"
SHAPES = "shapes-2026.md, 'Responses, Anthropic, Gemini (2026 additions)'"
SPEC_ONLY = "assembler spec rule (synthetic shape)"

SONNET = "claude-sonnet-4-6"
OPUS = "claude-opus-4-7"
HAIKU = "claude-haiku-4-5-20251001"


# --------------------------------------------------------------------------------------------
# Calls: start, identity, arguments
# --------------------------------------------------------------------------------------------


@case
def claude_single_tool_use() -> Capture:
    # The documented stream: a text block, then a tool_use block whose input is {} and whose
    # first partial_json is "" (wires.md: "The first fragment is often ''"); a ping after the
    # first block start.  Arguments = the partial_json fragments concatenated verbatim
    # ("" adds nothing); the start input {} is not used because the fragments are not empty.
    # stop_reason tool_use -> finish tool_calls.  usage = message_delta's usage object.
    m = Message("msg_018qfxViTkN5nXnUq59XA6eB", SONNET, 486)
    usage = m.usage(71)
    b = body(
        m.start(),
        m.text(0),
        m.ping(),
        m.say(0, "I'll check the"),
        m.say(0, " weather in Paris."),
        m.stop(0),
        m.tool_use(1, "toolu_01Py3g1UkGCEqwAtRFgxIJf2", "get_weather"),
        m.args(1, ""),
        m.args(1, '{"city": "Pa'),
        m.args(1, 'ris", "unit": "c'),
        m.args(1, 'elsius"}'),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Text block then one tool_use block; input_json_delta fragments, first one ''.",
        source=STREAMING_DOCS,
        shape="Claude text + tool_use, first partial_json ''",
        proves="baseline: identity from content_block_start, arguments = partial_json "
        "concatenated by block index, tool_use -> tool_calls, usage from message_delta",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="I'll check the weather in Paris.",
            tool_calls=[
                call(
                    0,
                    "toolu_01Py3g1UkGCEqwAtRFgxIJf2",
                    "get_weather",
                    '{"city": "Paris", "unit": "celsius"}',
                    True,
                )
            ],
            reasoning=None,
            server_tool_calls=[],
            usage={
                "input_tokens": 486,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 71,
            },
            model="claude-sonnet-4-6",
            response_id="msg_018qfxViTkN5nXnUq59XA6eB",
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            chunks=14,
            bytes=2000,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "I'll check the weather in Paris.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def claude_no_argument_tools() -> Capture:
    # Two tools without arguments: the first gets one input_json_delta with partial_json "",
    # the second no delta at all.  Both concatenations are empty, so arguments = the start
    # block's input {} serialized as compact JSON: "{}" (valid JSON) for each.  No text.
    m = Message("msg_01IZKh9H7fGMmWv4szLN3eGb", HAIKU, 1204, cache_read=1024)
    usage = m.usage(58)
    b = body(
        m.start(),
        m.tool_use(0, "toolu_01gxQsnv85Bvp0lEG8wqIe3A", "get_current_time"),
        m.ping(),
        m.args(0, ""),
        m.stop(0),
        m.tool_use(1, "toolu_01Sn4sc6dsCLMIyPE6UHbUng", "list_open_tabs"),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Two no-argument tools: input {} with an empty partial_json, and with none.",
        source=f"{WIRES}, 'Tools with no arguments': {SDK_GO_164} , {LANGCHAIN_23911} , "
        f"{VANE_1160}",
        shape="tool_use input {} with partial_json '' / with no delta",
        proves="empty partial_json falls back to the start input: arguments '{}' (valid JSON), "
        "the call is kept, never lost or ''",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(0, "toolu_01gxQsnv85Bvp0lEG8wqIe3A", "get_current_time", "{}", True),
                call(1, "toolu_01Sn4sc6dsCLMIyPE6UHbUng", "list_open_tabs", "{}", True),
            ],
            reasoning=None,
            server_tool_calls=[],
            usage={
                "input_tokens": 1204,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 1024,
                "output_tokens": 58,
            },
            model="claude-haiku-4-5-20251001",
            response_id="msg_01IZKh9H7fGMmWv4szLN3eGb",
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=1395,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def claude_parallel_tool_use() -> Capture:
    # Three tool_use blocks one after the other (block indexes 1, 2, 3 after the text block 0),
    # two of them with the same name.  index = ordinal among client calls (0, 1, 2), not the
    # block index; same-name calls stay separate because each block is its own call.
    m = Message("msg_01DCjtbr9YCNmt92DhGrgEZk", SONNET, 912)
    usage = m.usage(164)
    b = body(
        m.start(),
        m.text(0),
        m.ping(),
        m.say(0, "Let me look those up."),
        m.stop(0),
        m.tool_use(1, "toolu_01UGVzZ6RSYOuRBkdCQ3uBP3", "get_weather"),
        m.args(1, ""),
        m.args(1, '{"city": "Paris"}'),
        m.stop(1),
        m.tool_use(2, "toolu_01BJGQBCFaXHGLygOciuRQTl", "get_weather"),
        m.args(2, ""),
        m.args(2, '{"city": '),
        m.args(2, '"London"}'),
        m.stop(2),
        m.tool_use(3, "toolu_01q32GjCIhvIpHsrI8GVQnbK", "get_local_time"),
        m.args(3, ""),
        m.args(3, '{"timezone": "Europe/'),
        m.args(3, 'Paris"}'),
        m.stop(3),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Three parallel tool_use blocks after a text block, two with the same name.",
        source=f"{STREAMING_DOCS}; {WIRES}, 'Identity' (the tool ordinal is not the block index)",
        shape="Claude parallel tool_use blocks 1-3",
        proves="index is the ordinal among client calls (0, 1, 2), not the block index; "
        "same-name blocks are separate calls",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Let me look those up.",
            tool_calls=[
                call(0, "toolu_01UGVzZ6RSYOuRBkdCQ3uBP3", "get_weather", '{"city": "Paris"}', True),
                call(
                    1, "toolu_01BJGQBCFaXHGLygOciuRQTl", "get_weather", '{"city": "London"}', True
                ),
                call(
                    2,
                    "toolu_01q32GjCIhvIpHsrI8GVQnbK",
                    "get_local_time",
                    '{"timezone": "Europe/Paris"}',
                    True,
                ),
            ],
            server_tool_calls=[],
            model="claude-sonnet-4-6",
            response_id="msg_01DCjtbr9YCNmt92DhGrgEZk",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 912,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 164,
            },
            repairs=corpus_build.repairs(),
            chunks=21,
            bytes=2933,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Let me look those up.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def proxy_interleaved_block_deltas() -> Capture:
    # A multiplexing proxy opens both tool_use blocks before their deltas and interleaves the
    # deltas of blocks 0 and 1.  Routing by block index gives each call its own fragments; a
    # client that routes to "the latest tool" (LiteLLM's counter) would merge them.
    m = Message("msg_01geEq31ZooAyrX8uQ3m1BGr", SONNET, 733)
    usage = m.usage(97)
    b = body(
        m.start(),
        m.tool_use(0, "toolu_01KrE21VVzBnEHNqJ7sCHa4m", "read_file"),
        m.args(0, ""),
        m.tool_use(1, "toolu_01qCDhKPWjo7diIB4ZcQaWeO", "read_file"),
        m.args(1, ""),
        m.args(0, '{"path": "src/'),
        m.args(1, '{"path": "tests/'),
        m.args(0, 'app.py"}'),
        m.args(1, 'test_app.py"}'),
        m.stop(0),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Deltas of two open tool_use blocks interleaved by a proxy.",
        source=f"{SPEC_ONLY}; {WIRES}, 'Client bugs' (LiteLLM: tool_index is a counter, "
        "deltas go to the latest tool)",
        shape="proxy interleaving input_json_delta of blocks 0 and 1",
        proves="fragments are joined by block index, never by arrival order; calls ordered by "
        "their content_block_start",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(
                    0, "toolu_01KrE21VVzBnEHNqJ7sCHa4m", "read_file", '{"path": "src/app.py"}', True
                ),
                call(
                    1,
                    "toolu_01qCDhKPWjo7diIB4ZcQaWeO",
                    "read_file",
                    '{"path": "tests/test_app.py"}',
                    True,
                ),
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01geEq31ZooAyrX8uQ3m1BGr",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 733,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 97,
            },
            repairs=corpus_build.repairs(),
            chunks=13,
            bytes=2035,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def proxy_block_index_gaps() -> Capture:
    # A proxy that drops blocks (or renumbers them) leaves gaps: blocks 0 (text), 2 and 5
    # (tool_use).  The anthropic SDK appends blocks without checking the index and raises
    # IndexError on such a stream (sdk-python #1192).  Blocks are keyed by their index, calls
    # numbered by their order: 0 and 1.
    m = Message("msg_01S5V4mtc8NMosT4fmPgGygQ", SONNET, 2210)
    usage = m.usage(118)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Creating both issues now."),
        m.stop(0),
        m.tool_use(2, "toolu_01mOfsrzfUytGveGl9EkO6gz", "create_issue"),
        m.args(2, '{"title": "Login fails on Safari", '),
        m.args(2, '"labels": ["bug"]}'),
        m.stop(2),
        m.tool_use(5, "toolu_01MDUF3yJJ8wrGtUkuCmJRgr", "create_issue"),
        m.args(5, '{"title": "Add dark mode", "labels": ["feature"]}'),
        m.stop(5),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Block indexes with gaps (0, 2, 5) from a proxy.",
        source=f"{WIRES}, 'Client bugs' (content_block_start without an index check): {SDK_1192}",
        shape="proxy block indexes 0, 2, 5",
        proves="block indexes are keys, not list positions: gaps are accepted, call indexes "
        "stay 0 and 1",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Creating both issues now.",
            tool_calls=[
                call(
                    0,
                    "toolu_01mOfsrzfUytGveGl9EkO6gz",
                    "create_issue",
                    '{"title": "Login fails on Safari", "labels": ["bug"]}',
                    True,
                ),
                call(
                    1,
                    "toolu_01MDUF3yJJ8wrGtUkuCmJRgr",
                    "create_issue",
                    '{"title": "Add dark mode", "labels": ["feature"]}',
                    True,
                ),
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01S5V4mtc8NMosT4fmPgGygQ",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 2210,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 118,
            },
            repairs=corpus_build.repairs(),
            chunks=13,
            bytes=2046,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Creating both issues now.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def claude_thinking_between_tools() -> Capture:
    # Interleaved thinking: thinking (0), tool_use (1), redacted_thinking (2, arrives whole),
    # thinking (3), tool_use (4).  Each thinking block streams thinking_delta then one
    # signature_delta.  reasoning = the thinking text of blocks 0 and 3 concatenated with no
    # separator; signatures and the redacted block's data add nothing to it (DECISIONS).
    # Calls are numbered 0 and 1 across the thinking blocks.
    m = Message("msg_01OWoT7lSjb74oUyHRaibvTw", OPUS, 3051, cache_read=2816)
    usage = m.usage(412)
    b = body(
        m.start(),
        m.thinking(0),
        m.think(0, "The user wants the open incidents"),
        m.think(0, " for the payments service."),
        m.sign(0, "Eq6cpn6fx0Z9/GlfEeaY3Jl5AOwAkKIHHXQCJ7loCFx/0E4J3sGego6n3bQ758urf6IgBm6J1KEnpf"),
        m.stop(0),
        m.tool_use(1, "toolu_01XBAc4Lr7HvYYatkgCBjvyi", "list_incidents"),
        m.args(1, ""),
        m.args(1, '{"service": "payments", "status": "open"}'),
        m.stop(1),
        m.block(
            2,
            {
                "type": "redacted_thinking",
                "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
            },
        ),
        m.stop(2),
        m.thinking(3),
        m.think(3, "I also need the on-call engineer."),
        m.sign(3, "EqxEvDHvdyvStC/o6ylhLsmWxqRVuwVpXPdGb7UPyLq26cao+EXfNINyXDJLeFUQRwOP75g1ukf0"),
        m.stop(3),
        m.tool_use(4, "toolu_01UFmbpuyMv5kghdA0RBiHjr", "get_on_call"),
        m.args(4, ""),
        m.args(4, '{"team": "payments"}'),
        m.stop(4),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Thinking blocks with signature_delta between two tool_use blocks.",
        source=f"{SPEC_ONLY}; {WIRES}, 'Blocks' (thinking: thinking_delta, then signature_delta; "
        "redacted_thinking arrives whole)",
        shape="Claude interleaved thinking / redacted_thinking between tool_use blocks",
        proves="thinking text goes to reasoning, concatenated with no separator; signatures "
        "and redacted data add nothing; thinking blocks do not shift call indexes",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(
                    0,
                    "toolu_01XBAc4Lr7HvYYatkgCBjvyi",
                    "list_incidents",
                    '{"service": "payments", "status": "open"}',
                    True,
                ),
                call(
                    1, "toolu_01UFmbpuyMv5kghdA0RBiHjr", "get_on_call", '{"team": "payments"}', True
                ),
            ],
            reasoning="The user wants the open incidents for the payments service."
            "I also need the on-call engineer.",
            server_tool_calls=[],
            model="claude-opus-4-7",
            response_id="msg_01OWoT7lSjb74oUyHRaibvTw",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 3051,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 2816,
                "output_tokens": 412,
            },
            repairs=corpus_build.repairs(),
            chunks=22,
            bytes=3363,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": (
                        "The user wants the open incidents for the payments service.I also need "
                        "the on-call engineer."
                    ),
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Server tools and provider fields
# --------------------------------------------------------------------------------------------

WEB_RESULTS = [
    {
        "type": "web_search_result",
        "title": "EUR to USD Exchange Rate - Today's Euro to Dollar Rate",
        "url": "https://www.xe.com/currencyconverter/convert/?From=EUR&To=USD",
        "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC0xNjNjZmQ2ZTYz",
        "page_age": "2 hours ago",
    },
    {
        "type": "web_search_result",
        "title": "Euro (EUR) to US Dollar (USD) exchange rate history",
        "url": "https://www.exchange-rates.org/exchange-rate-history/eur-usd",
        "encrypted_content": "EvsECioIARgBIiQ2Y2FhYjc0Ny1hZWUwLTRkYWUtYjNhZi1hMDdlMzI1ZTM4",
        "page_age": None,
    },
]


@case
def claude_web_search_then_client_tool() -> Capture:
    # Anthropic's web search: text (0), server_tool_use web_search (1) with its query streamed as
    # input_json_delta, web_search_tool_result (2, whole), text (3) with a citations_delta, then
    # a client tool_use (4).  The server call goes to server_tool_calls (index 0 there, same
    # argument rule), never to tool_calls; the client call is index 0.  content = the text of
    # blocks 0 and 3 concatenated, no separator; citations add nothing.  usage carries
    # server_tool_use.web_search_requests, kept verbatim.
    m = Message("msg_0175GjBjIl3B2CXaSRxzV0Be", SONNET, 2188)
    usage = m.usage(236, server_tool_use={"web_search_requests": 1})
    b = body(
        m.start(),
        m.text(0),
        m.ping(),
        m.say(0, "I'll look up today's exchange rate."),
        m.stop(0),
        m.server_tool_use(1, "srvtoolu_01iqomkUig635ZqsfOj3iICF", "web_search"),
        m.args(1, ""),
        m.args(1, '{"query": "EUR to USD'),
        m.args(1, ' exchange rate today"}'),
        m.stop(1),
        m.block(
            2,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01iqomkUig635ZqsfOj3iICF",
                "content": WEB_RESULTS,
            },
        ),
        m.stop(2),
        m.text(3),
        m.delta(
            3,
            {
                "type": "citations_delta",
                "citation": {
                    "type": "web_search_result_location",
                    "cited_text": "1 EUR = 1.0842 USD",
                    "url": "https://www.xe.com/currencyconverter/convert/?From=EUR&To=USD",
                    "title": "EUR to USD Exchange Rate - Today's Euro to Dollar Rate",
                    "encrypted_index": "EpMBCioIARgBIiQ0ZjFhNjg4Ny1kMzE2LTQ0YjctOGU4Zi1h",
                },
            },
        ),
        m.say(3, "One euro is about 1.0842 US dollars today."),
        m.say(3, " Converting your amount now."),
        m.stop(3),
        m.tool_use(4, "toolu_01c9nMnLDtNU18UWhy4DaG6g", "convert_currency"),
        m.args(4, ""),
        m.args(4, '{"amount": 250, "from": "EUR", '),
        m.args(4, '"to": "USD", "rate": 1.0842}'),
        m.stop(4),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="server_tool_use web_search + web_search_tool_result, then a client tool.",
        source=f"{WIRES}, 'Blocks' (server_tool_use srvtoolu_…, results whole as *_tool_result); "
        "LiteLLM emits server_tool_use as an ordinary tool call (same section, 'Client bugs')",
        shape="Claude web search (server tool) then client tool_use",
        proves="server calls go to server_tool_calls in their own order, never to tool_calls; "
        "the client call is index 0; text of two blocks concatenates; citations add nothing",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="I'll look up today's exchange rate."
            "One euro is about 1.0842 US dollars today. Converting your amount now.",
            tool_calls=[
                call(
                    0,
                    "toolu_01c9nMnLDtNU18UWhy4DaG6g",
                    "convert_currency",
                    '{"amount": 250, "from": "EUR", "to": "USD", "rate": 1.0842}',
                    True,
                )
            ],
            server_tool_calls=[
                server_call(
                    0,
                    "srvtoolu_01iqomkUig635ZqsfOj3iICF",
                    "web_search",
                    '{"query": "EUR to USD exchange rate today"}',
                )
            ],
            usage={
                "input_tokens": 2188,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 236,
                "server_tool_use": {"web_search_requests": 1},
            },
            model="claude-sonnet-4-6",
            response_id="msg_0175GjBjIl3B2CXaSRxzV0Be",
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            chunks=24,
            bytes=4213,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": (
                        "I'll look up today's exchange rate.One euro is about 1.0842 US dollars "
                        "today. Converting your amount now."
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def claude_pause_turn_server_tools() -> Capture:
    # The server-tool loop hit its limit: two web searches with their results, then stop_reason
    # pause_turn (the client must continue).  finish other, error_code PAUSE_TURN (verbatim,
    # upper-cased), not retryable, never reported as stop.  No client call to withhold; the
    # server calls are informational and listed in order (0, 1).
    m = Message("msg_011OKcZHtzBCzixlPHkKLONr", SONNET, 1630)
    usage = m.usage(188, server_tool_use={"web_search_requests": 2})
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Let me research both releases."),
        m.stop(0),
        m.server_tool_use(1, "srvtoolu_01qrvlj9MJ9cn732T7VqCsxU", "web_search"),
        m.args(1, '{"query": "PostgreSQL 18 release notes"}'),
        m.stop(1),
        m.block(
            2,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01qrvlj9MJ9cn732T7VqCsxU",
                "content": [
                    {
                        "type": "web_search_result",
                        "title": "PostgreSQL 18 Release Notes",
                        "url": "https://www.postgresql.org/docs/18/release-18.html",
                        "encrypted_content": "EtUCCioIARgBIiQ1ZDc4YjI3Zi0wNmQ1LTRhNzktOTNm",
                        "page_age": "1 month ago",
                    }
                ],
            },
        ),
        m.stop(2),
        m.server_tool_use(3, "srvtoolu_01vGLAAQIzcY8QFPRDOyAjnE", "web_search"),
        m.args(3, '{"query": "MySQL 9.5 release notes"}'),
        m.stop(3),
        m.block(
            4,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01vGLAAQIzcY8QFPRDOyAjnE",
                "content": [
                    {
                        "type": "web_search_result",
                        "title": "Changes in MySQL 9.5.0",
                        "url": "https://dev.mysql.com/doc/relnotes/mysql/9.5/en/news-9-5-0.html",
                        "encrypted_content": "EqMDCioIARgBIiRlNjFkOWQ2Ny1hYzQ4LTRmNDctYTA1",
                        "page_age": "3 weeks ago",
                    }
                ],
            },
        ),
        m.stop(4),
        m.message_delta("pause_turn", usage),
        m.end(),
    )
    return Capture(
        description="pause_turn after two server-side web searches.",
        source=f"{STOP_REASONS_DOCS} (pause_turn: the server-tool loop hit its limit); LiteLLM "
        "and Vercel map it to stop (same section, 'Client bugs')",
        shape="Claude server tool loop ends with pause_turn",
        proves="pause_turn -> finish other, error_code PAUSE_TURN, not retryable, never stop; "
        "server calls still listed",
        body=b,
        expect=assembled(
            finish="other",
            finish_reason="pause_turn",
            error_code="PAUSE_TURN",
            content="Let me research both releases.",
            server_tool_calls=[
                server_call(
                    0,
                    "srvtoolu_01qrvlj9MJ9cn732T7VqCsxU",
                    "web_search",
                    '{"query": "PostgreSQL 18 release notes"}',
                ),
                server_call(
                    1,
                    "srvtoolu_01vGLAAQIzcY8QFPRDOyAjnE",
                    "web_search",
                    '{"query": "MySQL 9.5 release notes"}',
                ),
            ],
            usage={
                "input_tokens": 1630,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 188,
                "server_tool_use": {"web_search_requests": 2},
            },
            model="claude-sonnet-4-6",
            response_id="msg_011OKcZHtzBCzixlPHkKLONr",
            finish_reasons={"0": "pause_turn"},
            repairs=corpus_build.repairs(),
            chunks=16,
            bytes=2914,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "pause_turn",
                    "content": "Let me research both releases.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def programmatic_calls_caller_input_in_start() -> Capture:
    # Programmatic tool calling: a server_tool_use code_execution block (0) streams its code,
    # then two tool_use blocks called from that code carry caller {type
    # code_execution_20250825, tool_id} and their whole input in content_block_start, with NO
    # input_json_delta.  Arguments = the start input as compact JSON (keys in received order).
    # provider_fields = {"caller": …} verbatim on each call.  The code execution call goes to
    # server_tool_calls.
    m = Message("msg_01RVaJiY5CRcKJK0EBk8Aq8u", OPUS, 4120, cache_read=3840)
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_011yDc2v0f5mYzMyu0NPF7y6"}
    usage = m.usage(301)
    code = (
        '{"code": "import asyncio\\nrows = await asyncio.gather(*[query_database('
        "sql=f\\\"SELECT SUM(amount) FROM sales WHERE region='{r}'\\\") for r in "
        "['EU', 'US']])\\nprint(rows)\"}"
    )
    b = body(
        m.start(),
        m.server_tool_use(0, "srvtoolu_011yDc2v0f5mYzMyu0NPF7y6", "code_execution"),
        m.args(0, ""),
        m.args(0, code),
        m.stop(0),
        m.tool_use(
            1,
            "toolu_01hs4PbJm5wsyq0dhA8kQbYA",
            "query_database",
            {"sql": "SELECT SUM(amount) FROM sales WHERE region='EU'"},
            caller=caller,
        ),
        m.stop(1),
        m.tool_use(
            2,
            "toolu_01NTJB5VyEzQuXD59NeIkmPd",
            "query_database",
            {"sql": "SELECT SUM(amount) FROM sales WHERE region='US'"},
            caller=caller,
        ),
        m.stop(2),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Programmatic calls: caller field, whole input in the start block, no deltas.",
        source=f"{WIRES}, 'Blocks' (programmatic calls carry caller and a non-empty input with no "
        f"deltas); {SHAPES} (tool_use.caller; clients that ignore the start input saw {{}}: "
        "inflaborg/ccrelay #119)",
        shape="Claude programmatic tool calling (code_execution caller)",
        proves="a non-empty start input with no deltas is the arguments (compact JSON); caller "
        "kept verbatim in provider_fields; the code execution call is a server call",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(
                    0,
                    "toolu_01hs4PbJm5wsyq0dhA8kQbYA",
                    "query_database",
                    '{"sql":"SELECT SUM(amount) FROM sales WHERE region=\'EU\'"}',
                    True,
                    provider_fields={
                        "caller": {
                            "type": "code_execution_20250825",
                            "tool_id": "srvtoolu_011yDc2v0f5mYzMyu0NPF7y6",
                        }
                    },
                ),
                call(
                    1,
                    "toolu_01NTJB5VyEzQuXD59NeIkmPd",
                    "query_database",
                    '{"sql":"SELECT SUM(amount) FROM sales WHERE region=\'US\'"}',
                    True,
                    provider_fields={
                        "caller": {
                            "type": "code_execution_20250825",
                            "tool_id": "srvtoolu_011yDc2v0f5mYzMyu0NPF7y6",
                        }
                    },
                ),
            ],
            server_tool_calls=[
                server_call(
                    0,
                    "srvtoolu_011yDc2v0f5mYzMyu0NPF7y6",
                    "code_execution",
                    '{"code": "import asyncio\\nrows = await asyncio.gather(*[query_database('
                    "sql=f\\\"SELECT SUM(amount) FROM sales WHERE region='{r}'\\\") for r in "
                    "['EU', 'US']])\\nprint(rows)\"}",
                )
            ],
            model="claude-opus-4-7",
            response_id="msg_01RVaJiY5CRcKJK0EBk8Aq8u",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 4120,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 3840,
                "output_tokens": 301,
            },
            repairs=corpus_build.repairs(),
            chunks=11,
            bytes=2212,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def toolset_tool_close_tab() -> Capture:
    # A browser-toolset call: bare name close_tab with toolset_name "browser" and caller
    # {type: direct}; the full identity is the pair, so both go to provider_fields verbatim.
    # A plain tool in the same response carries neither: no provider_fields key.
    m = Message("msg_01AALlh0KRLcgHxKsJsxbCJR", SONNET, 5312, cache_read=4096)
    usage = m.usage(83)
    b = body(
        m.start(),
        m.tool_use(
            0,
            "toolu_01by18WzmtpMQDeH4MWVMNAp",
            "close_tab",
            caller={"type": "direct"},
            toolset_name="browser",
        ),
        m.args(0, ""),
        m.args(0, '{"tab_id": 3}'),
        m.stop(0),
        m.tool_use(1, "toolu_012OYJ5kXBu0GDG6bM2PHJrl", "save_note"),
        m.args(1, '{"text": "Closed the pricing tab."}'),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="A toolset tool (bare name, toolset_name, caller direct) beside a plain tool.",
        source=f"{SHAPES} (tool_use.caller direct, toolset_name for browser and computer "
        "toolsets; bare names such as close_tab)",
        shape="Claude browser toolset tool_use with toolset_name and caller",
        proves="caller and toolset_name are kept verbatim per call in provider_fields; a call "
        "without them has no provider_fields",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(
                    0,
                    "toolu_01by18WzmtpMQDeH4MWVMNAp",
                    "close_tab",
                    '{"tab_id": 3}',
                    True,
                    provider_fields={"caller": {"type": "direct"}, "toolset_name": "browser"},
                ),
                call(
                    1,
                    "toolu_012OYJ5kXBu0GDG6bM2PHJrl",
                    "save_note",
                    '{"text": "Closed the pricing tab."}',
                    True,
                ),
            ],
            server_tool_calls=[],
            model="claude-sonnet-4-6",
            response_id="msg_01AALlh0KRLcgHxKsJsxbCJR",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 5312,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 4096,
                "output_tokens": 83,
            },
            repairs=corpus_build.repairs(),
            chunks=10,
            bytes=1703,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def eager_input_streaming_invalid_json() -> Capture:
    # Fine-grained tool streaming (eager_input_streaming): the fragments join into text that
    # is not JSON (a raw newline inside a string, the closing brace never sent).  Kept
    # verbatim, arguments_json false; stop_reason tool_use, so the call is emitted (the flag
    # tells the consumer), not withheld.
    m = Message("msg_01TaBjobflPmF9Xr11JS6cUs", SONNET, 1877)
    usage = m.usage(64)
    b = body(
        m.start(),
        m.tool_use(0, "toolu_01cgAXqc1w2iWVyGyjsivySO", "write_file"),
        m.args(0, '{"path": "notes.txt", "content": "line one'),
        m.args(0, '\nline two"'),
        m.stop(0),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="eager_input_streaming arguments that are not valid JSON.",
        source=f"{FINE_GRAINED_DOCS}; {SHAPES} (eager_input_streaming sends invalid JSON: "
        f"dust-tt/dust #21976); invalid JSON replayed into history: {VERCEL_14280}",
        shape="fine-grained tool streaming, invalid JSON arguments",
        proves="arguments that are not JSON are kept verbatim with arguments_json false",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(
                    0,
                    "toolu_01cgAXqc1w2iWVyGyjsivySO",
                    "write_file",
                    '{"path": "notes.txt", "content": "line one\nline two"',
                    False,
                )
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01TaBjobflPmF9Xr11JS6cUs",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 1877,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 64,
            },
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=1272,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def proxy_tool_use_empty_id() -> Capture:
    # A proxy forwards a tool_use block with "id": "".  Without the operator's opt-in to id
    # synthesis (TOOLWIRE_SYNTHESIZE_IDS, which applies to every wire), the call has no
    # non-empty id -> missing_identity, missing [id].
    m = Message("msg_01cem69kvyXlnxmMslsP8Ur3", HAIKU, 640)
    usage = m.usage(41)
    b = body(
        m.start(),
        m.tool_use(0, "", "lookup_order"),
        m.args(0, '{"order_id": "A-20931"}'),
        m.stop(0),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="tool_use with an empty id (id synthesis off).",
        source=SPEC_ONLY,
        shape="proxy tool_use id ''",
        proves="a call without a non-empty id is missing_identity: an empty id is no id",
        body=b,
        expect=dead_letter(
            "missing_identity",
            # The empty id is no id: recorded as null, like an id never sent.
            calls=[missing(call(0, None, "lookup_order", '{"order_id": "A-20931"}', True), "id")],
            model="claude-haiku-4-5-20251001",
            response_id="msg_01cem69kvyXlnxmMslsP8Ur3",
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 640,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 41,
            },
            repairs=corpus_build.repairs(empty_identity_ignored=1),
            chunks=6,
            bytes=1087,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id",
            declared_tools=None,
        ),
    )


#: The message id that seeds the synthesized ids of ``proxy_tool_use_ids_synthesized``
#: (offline: no request id, so the response id; the spec's formula,
#: ``corpus_build.synthesized_id``: a sha256 is the one value not worked out by hand).
SYNTHESIZED_SEED = "msg_01Rz5kWq8NcYd3HtLb7Vm2Pf"


@case
def proxy_tool_use_ids_synthesized() -> Capture:
    # The proxy of proxy_tool_use_empty_id, two tool_use blocks, run with synthesize_ids on (the
    # operator's opt-in, which applies to every wire).  Block 0 says "id": "", block 1 leaves
    # the id out.  Each call ends without an id, so each gets the id seeded by the message id
    # and its ordinal: "call_tw_" + sha256("toolwire/call-id/msg_01Rz…/0/{0,1}")[:24],
    # distinct per call, the same on every replay, each flagged id_synthesized; the calls are
    # then executable: tool_use -> finish tool_calls.  Repairs: ids_synthesized 2; the ""
    # of block 0 -> empty_identity_ignored 1 (an id never sent is not counted).
    m = Message(SYNTHESIZED_SEED, HAIKU, 655)
    usage = m.usage(58)
    b = body(
        m.start(),
        m.tool_use(0, "", "lookup_order"),
        m.args(0, '{"order_id": "A-20931"}'),
        m.stop(0),
        m.tool_use(1, None, "lookup_order"),
        m.args(1, '{"order_id": '),
        m.args(1, '"A-20932"}'),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="Two tool_use blocks without an id ('' and absent), synthesis on.",
        source=SPEC_ONLY,
        shape="proxy tool_use id '' then no id (synthesize_ids on)",
        proves="with synthesis on, each call without a non-empty id gets the id seeded by the "
        "message id and its ordinal (distinct, deterministic), flagged id_synthesized",
        body=b,
        synthesize_ids=True,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(0, corpus_build.synthesized_id(SYNTHESIZED_SEED, 0, 0), "lookup_order",
                     '{"order_id": "A-20931"}', True, id_synthesized=True),
                call(1, corpus_build.synthesized_id(SYNTHESIZED_SEED, 0, 1), "lookup_order",
                     '{"order_id": "A-20932"}', True, id_synthesized=True),
            ],
            server_tool_calls=[],
            usage=usage,
            repairs=corpus_build.repairs(empty_identity_ignored=1, ids_synthesized=2),
            model="claude-haiku-4-5-20251001",
            response_id="msg_01Rz5kWq8NcYd3HtLb7Vm2Pf",
            finish_reasons={"0": "tool_use"},
            chunks=10,
            bytes=1589,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Stop reasons
# --------------------------------------------------------------------------------------------


@case
def claude_max_tokens_block_open() -> Capture:
    # The SDK's own truncation fixture shape: max_tokens hit inside a tool_use block, which
    # never gets its content_block_stop; message_delta max_tokens, then message_stop.
    # finish length -> truncated true, the call withheld (arguments as far as they came, not
    # JSON), error_code null, not retryable, never dead-lettered.
    m = Message("msg_01eUU3uxmFSkKIPIU4PDpf7S", SONNET, 903)
    usage = m.usage(128)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Writing the report."),
        m.stop(0),
        m.tool_use(1, "toolu_01dVFY5j0ClGIfjoOufZw5KW", "write_file"),
        m.args(1, ""),
        m.args(1, '{"path": "report.md", '),
        m.args(1, '"content": "# Q3 report\\n\\nRevenue grew '),
        m.message_delta("max_tokens", usage),
        m.end(),
    )
    return Capture(
        description="max_tokens inside a tool_use block that never gets content_block_stop.",
        source=SDK_FIXTURE,
        shape="Claude max_tokens mid-arguments, block left open",
        proves="max_tokens -> finish length: truncated, call withheld with its partial "
        "arguments, no error code, never dead-lettered",
        body=b,
        expect=assembled(
            finish="length",
            finish_reason="max_tokens",
            truncated=True,
            content="Writing the report.",
            withheld=[
                call(
                    0,
                    "toolu_01dVFY5j0ClGIfjoOufZw5KW",
                    "write_file",
                    '{"path": "report.md", "content": "# Q3 report\\n\\nRevenue grew ',
                    False,
                )
            ],
            usage={
                "input_tokens": 903,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 128,
            },
            model="claude-sonnet-4-6",
            response_id="msg_01eUU3uxmFSkKIPIU4PDpf7S",
            finish_reasons={"0": "max_tokens"},
            repairs=corpus_build.repairs(),
            chunks=10,
            bytes=1663,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "max_tokens",
                    "content": "Writing the report.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def claude_context_window_exceeded() -> Capture:
    # model_context_window_exceeded after a complete tool_use block and a text block cut short.
    # finish length: truncated, error_code null; calls are withheld even when complete (their
    # arguments are still checked as JSON: true).  content = both text blocks.
    m = Message("msg_01xEymU2CqooHO32A0VoMSag", SONNET, 198211, cache_read=196608)
    usage = m.usage(1789)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "I'll save the summary first."),
        m.stop(0),
        m.tool_use(1, "toolu_01Qql4bQwQonmBNlwh7RvR05", "save_summary"),
        m.args(1, '{"path": "notes/summary.md"}'),
        m.stop(1),
        m.text(2),
        m.say(2, "Next I will"),
        m.message_delta("model_context_window_exceeded", usage),
        m.end(),
    )
    return Capture(
        description="model_context_window_exceeded after a complete call.",
        source=f"{STOP_REASONS_DOCS}; LiteLLM leaves it unmapped and reports stop (same "
        "section, 'Client bugs')",
        shape="Claude model_context_window_exceeded",
        proves="model_context_window_exceeded -> finish length: truncated, complete calls "
        "withheld too, no error code",
        body=b,
        expect=assembled(
            finish="length",
            finish_reason="model_context_window_exceeded",
            truncated=True,
            content="I'll save the summary first.Next I will",
            withheld=[
                call(
                    0,
                    "toolu_01Qql4bQwQonmBNlwh7RvR05",
                    "save_summary",
                    '{"path": "notes/summary.md"}',
                    True,
                )
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01xEymU2CqooHO32A0VoMSag",
            finish_reasons={"0": "model_context_window_exceeded"},
            usage={
                "input_tokens": 198211,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 196608,
                "output_tokens": 1789,
            },
            repairs=corpus_build.repairs(),
            chunks=11,
            bytes=1729,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "model_context_window_exceeded",
                    "content": "I'll save the summary first.Next I will",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def claude_refusal_no_blocks() -> Capture:
    # A refusal before any content: message_start, then message_delta with stop_reason refusal
    # and stop_details, then message_stop.  finish content_filter, error_code REFUSAL, not
    # retryable, and NOT EMPTY_RESPONSE (that applies only when finish is stop).
    m = Message("msg_01CZMi5KYuIBghpBECcpiS4U", SONNET, 77)
    usage = m.usage(2)
    b = body(
        m.start(),
        m.ping(),
        m.message_delta(
            "refusal",
            usage,
            stop_details={
                "type": "refusal",
                "category": "cyber",
                "explanation": "The request asks for working malware.",
            },
        ),
        m.end(),
    )
    return Capture(
        description="stop_reason refusal with no content block at all.",
        source=f"{STOP_REASONS_DOCS} (refusal, with stop_details)",
        shape="Claude refusal, no blocks",
        proves="refusal -> finish content_filter, error_code REFUSAL, not retryable, never "
        "EMPTY_RESPONSE",
        body=b,
        expect=assembled(
            finish="content_filter",
            finish_reason="refusal",
            error_code="REFUSAL",
            reasoning=None,
            server_tool_calls=[],
            usage={
                "input_tokens": 77,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 2,
            },
            model="claude-sonnet-4-6",
            response_id="msg_01CZMi5KYuIBghpBECcpiS4U",
            finish_reasons={"0": "refusal"},
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=837,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "refusal",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def claude_refusal_cuts_tool_use() -> Capture:
    # A streaming classifier intervenes mid-call: text, then a tool_use whose arguments stop
    # part-way, no content_block_stop, stop_reason refusal.  finish content_filter: the call is
    # withheld, error_code REFUSAL, truncated false; the text is kept.
    m = Message("msg_012KIXgvRiQP6L4ksuA4HlWy", SONNET, 455)
    usage = m.usage(39)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Sure, running it now."),
        m.stop(0),
        m.tool_use(1, "toolu_011Isx2lIGKYtsvjMHmcajlk", "run_shell"),
        m.args(1, ""),
        m.args(1, '{"command": "curl -s http://'),
        m.message_delta(
            "refusal",
            usage,
            stop_details={
                "type": "refusal",
                "category": "cyber",
                "explanation": "The command would exfiltrate credentials.",
            },
        ),
        m.end(),
    )
    return Capture(
        description="A refusal stop reason that cuts a tool_use block mid-arguments.",
        source=f"{STOP_REASONS_DOCS} (refusal, with stop_details)",
        shape="Claude refusal mid tool_use (streaming classifier)",
        proves="refusal withholds calls under content_filter: REFUSAL, truncated false, text kept",
        body=b,
        expect=assembled(
            finish="content_filter",
            finish_reason="refusal",
            error_code="REFUSAL",
            content="Sure, running it now.",
            withheld=[
                call(
                    0,
                    "toolu_011Isx2lIGKYtsvjMHmcajlk",
                    "run_shell",
                    '{"command": "curl -s http://',
                    False,
                )
            ],
            model="claude-sonnet-4-6",
            response_id="msg_012KIXgvRiQP6L4ksuA4HlWy",
            finish_reasons={"0": "refusal"},
            usage={
                "input_tokens": 455,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 39,
            },
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=1602,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "refusal",
                    "content": "Sure, running it now.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def crlf_stop_sequence() -> Capture:
    # A text answer that ended on a stop sequence, framed with CRLF line ends (a gateway that
    # rewrites line ends).  stop_sequence -> finish stop; finish_reason verbatim.
    m = Message("msg_01OuLQ6M8a67r4TB90CPHGwr", HAIKU, 152)
    usage = m.usage(9)
    b = body(
        m.start(),
        m.text(0),
        m.ping(),
        m.say(0, "<answer>42"),
        m.stop(0),
        m.message_delta("stop_sequence", usage, stop_sequence="</answer>"),
        m.end(),
        eol="\r\n",
    )
    return Capture(
        description="stop_sequence text answer, CRLF framing.",
        source=f"{STOP_REASONS_DOCS}; CRLF framing: {SPEC_ONLY}",
        shape="Claude stop_sequence, CRLF line ends",
        proves="CRLF frames split like LF; stop_sequence -> finish stop, verbatim reason",
        body=b,
        expect=assembled(
            finish="stop",
            finish_reason="stop_sequence",
            content="<answer>42",
            reasoning=None,
            usage={
                "input_tokens": 152,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 9,
            },
            model="claude-haiku-4-5-20251001",
            response_id="msg_01OuLQ6M8a67r4TB90CPHGwr",
            finish_reasons={"0": "stop_sequence"},
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=1089,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop_sequence",
                    "content": "<answer>42",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def end_turn_with_tool_use() -> Capture:
    # A gateway reports end_turn although the message holds a tool_use block.  end_turn ->
    # finish stop, which is not an abnormal finish: the call is emitted (as Chat Completions
    # does for stop with tool calls), finish_reason stays end_turn.
    m = Message("msg_01OOmZOATP5IXQcmFmEsTQiq", SONNET, 388)
    usage = m.usage(52)
    b = body(
        m.start(),
        m.tool_use(0, "toolu_01pSh1On7ncBiFdN9YcxnlpU", "get_stock_price"),
        m.args(0, ""),
        m.args(0, '{"ticker": "NVDA"}'),
        m.stop(0),
        m.message_delta("end_turn", usage),
        m.end(),
    )
    return Capture(
        description="end_turn with a tool_use block in the message.",
        source=SPEC_ONLY,
        shape="end_turn with tool_use",
        proves="end_turn -> finish stop (verbatim end_turn) and the call is still emitted",
        body=b,
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            tool_calls=[
                call(
                    0,
                    "toolu_01pSh1On7ncBiFdN9YcxnlpU",
                    "get_stock_price",
                    '{"ticker": "NVDA"}',
                    True,
                )
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01OOmZOATP5IXQcmFmEsTQiq",
            finish_reasons={"0": "end_turn"},
            usage={
                "input_tokens": 388,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 52,
            },
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=1236,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def claude_empty_end_turn() -> Capture:
    # An empty end_turn (no block at all), as Claude sometimes answers right after a tool
    # result.  finish stop with no text, reasoning or call -> EMPTY_RESPONSE, retryable.
    m = Message("msg_01jQxdiQb2xh1MKdeRc4LPGV", SONNET, 6021, cache_read=5632)
    usage = m.usage(3)
    b = body(m.start(), m.ping(), m.message_delta("end_turn", usage), m.end())
    return Capture(
        description="end_turn with no content block.",
        source=f"{STOP_REASONS_DOCS} (empty responses with end_turn)",
        shape="Claude empty end_turn",
        proves="EMPTY_RESPONSE (retryable) when finish is stop and nothing arrived; still "
        "assembled",
        body=b,
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            error_code="EMPTY_RESPONSE",
            retryable=True,
            reasoning=None,
            server_tool_calls=[],
            model="claude-sonnet-4-6",
            response_id="msg_01jQxdiQb2xh1MKdeRc4LPGV",
            finish_reasons={"0": "end_turn"},
            usage={
                "input_tokens": 6021,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 5632,
                "output_tokens": 3,
            },
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=741,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@case
def overloaded_error_mid_arguments() -> Capture:
    # HTTP 200, then event: error overloaded_error after partial arguments; no message_delta,
    # no message_stop (the error event is the end).  finish error; finish_reason = the error's
    # verbatim type (no stop reason arrived); error_code OVERLOADED_ERROR; retryable true;
    # truncated false; the call withheld.  usage = the last usage object seen, message_start's.
    m = Message("msg_01WJGhH4UmwzQtgFvWLoXp8T", SONNET, 1342)
    b = body(
        m.start(),
        m.ping(),
        m.tool_use(0, "toolu_019FLfEzaym9rvSK1BF8G5A8", "search_flights"),
        m.args(0, ""),
        m.args(0, '{"origin": "SFO", "destination": "NR'),
        m.error("overloaded_error", "Overloaded", "req_011CVOvDzK0bFqe6mw1aww"),
    )
    return Capture(
        description="event: error overloaded_error after partial tool arguments.",
        source=f"{WIRES}, 'Wire' (event: error mid-stream on HTTP 200); overloaded_error "
        f"raised as status 200: {SDK_1258}",
        shape="Claude overloaded_error mid tool_use",
        proves="an error event ends the response as finish error: OVERLOADED_ERROR, retryable, "
        "not truncated, calls withheld",
        body=b,
        expect=assembled(
            finish="error",
            finish_reason="overloaded_error",
            error_code="OVERLOADED_ERROR",
            error_message="Overloaded",
            retryable=True,
            withheld=[
                call(
                    0,
                    "toolu_019FLfEzaym9rvSK1BF8G5A8",
                    "search_flights",
                    '{"origin": "SFO", "destination": "NR',
                    False,
                )
            ],
            usage={
                "input_tokens": 1342,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 1,
                "service_tier": "standard",
            },
            model="claude-sonnet-4-6",
            response_id="msg_01WJGhH4UmwzQtgFvWLoXp8T",
            finish_reasons={"0": "overloaded_error"},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1090,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "overloaded_error",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def api_error_after_stop_reason() -> Capture:
    # message_delta end_turn arrived, then event: error api_error before message_stop.  An
    # error event always makes finish error, even after a stop reason: finish_reason stays the
    # verbatim end_turn, error_code API_ERROR, retryable true.  The text is kept.
    m = Message("msg_01DdvLD4LDwUZTmbwYnjnuti", OPUS, 720)
    usage = m.usage(14)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "The migration is complete."),
        m.stop(0),
        m.message_delta("end_turn", usage),
        m.error("api_error", "Internal server error", "req_011CVxC5aLezjJR3kO2IH7"),
    )
    return Capture(
        description="event: error api_error after message_delta end_turn, no message_stop.",
        source=f"{WIRES}, 'Wire' (event: error mid-stream on HTTP 200)",
        shape="Claude api_error after the stop reason",
        proves="an error after a stop reason still wins: finish error, API_ERROR, retryable; "
        "finish_reason is the stop reason that arrived",
        body=b,
        expect=assembled(
            finish="error",
            finish_reason="end_turn",
            error_code="API_ERROR",
            error_message="Internal server error",
            retryable=True,
            content="The migration is complete.",
            usage={
                "input_tokens": 720,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 14,
            },
            model="claude-opus-4-7",
            response_id="msg_01DdvLD4LDwUZTmbwYnjnuti",
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1118,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "The migration is complete.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def invalid_request_error_mid_stream() -> Capture:
    # event: error invalid_request_error mid-text (output blocked by a filter).  Not one of the
    # transient types (overloaded_error, api_error): retryable false.  finish error,
    # finish_reason = the error type, error_code INVALID_REQUEST_ERROR.
    m = Message("msg_01LCDpqEmQI0rXkNwZT6JYos", SONNET, 512)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Here is the"),
        m.say(0, " lyric you asked for:"),
        m.error(
            "invalid_request_error",
            "Output blocked by content filtering policy",
            "req_011CVZqsTWZdEJFcWsy2wR",
        ),
    )
    return Capture(
        description="event: error invalid_request_error mid-text.",
        source=f"{SPEC_ONLY}; error event shape from {WIRES}, 'Wire'",
        shape="Claude invalid_request_error mid-stream",
        proves="an error type that is not transient is not retryable; error_code is the type "
        "upper-cased",
        body=b,
        expect=assembled(
            finish="error",
            finish_reason="invalid_request_error",
            error_code="INVALID_REQUEST_ERROR",
            error_message="Output blocked by content filtering policy",
            retryable=False,
            content="Here is the lyric you asked for:",
            model="claude-sonnet-4-6",
            response_id="msg_01LCDpqEmQI0rXkNwZT6JYos",
            finish_reasons={"0": "invalid_request_error"},
            usage={
                "input_tokens": 512,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 1,
                "service_tier": "standard",
            },
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=984,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "invalid_request_error",
                    "content": "Here is the lyric you asked for:",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# Framing, dispatch, ends
# --------------------------------------------------------------------------------------------


@case
def proxy_data_only_frames() -> Capture:
    # A proxy relays the stream without event: lines (data-only frames), ping included.  The
    # JSON's type decides every frame, so the stream assembles as usual.
    m = Message("msg_011w3zRcgYHsNuHstLI3aFPL", SONNET, 811, named=False)
    usage = m.usage(66)
    b = body(
        m.start(),
        m.ping(),
        m.text(0),
        m.say(0, "Scheduling it."),
        m.stop(0),
        m.tool_use(1, "toolu_01uq9BVr0gWPCvE5lUcVrxw7", "create_event"),
        m.args(1, ""),
        m.args(1, '{"title": "Standup", "start": "2026-11-16T09:30:00Z"}'),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="The whole stream as data-only frames (no event: lines).",
        source=f"{WIRES}, 'Client bugs' (the SDK dispatches on the event: name, so data-only "
        "frames are dropped); data-only frames behind proxies: issue 13 'Input' "
        f"({SPEC_ONLY})",
        shape="proxy data-only frames",
        proves="dispatch is on the JSON type, never the event: name; data-only streams assemble",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Scheduling it.",
            tool_calls=[
                call(
                    0,
                    "toolu_01uq9BVr0gWPCvE5lUcVrxw7",
                    "create_event",
                    '{"title": "Standup", "start": "2026-11-16T09:30:00Z"}',
                    True,
                )
            ],
            usage={
                "input_tokens": 811,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 66,
            },
            model="claude-sonnet-4-6",
            response_id="msg_011w3zRcgYHsNuHstLI3aFPL",
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            chunks=11,
            bytes=1366,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Scheduling it.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def pings_and_unknown_events() -> Capture:
    # Pings everywhere (before, inside and between blocks), two event types the assembler does
    # not know (ignored), and one frame whose event: line says "completion" while its JSON type
    # is content_block_delta (a relabelling proxy): it is applied by its type.  Two text blocks
    # concatenate with no separator.  end_turn -> stop.
    m = Message("msg_0144vndNnbq7akGoCPNEUKdS", HAIKU, 96)
    usage = m.usage(21)
    b = body(
        m.ping(),
        m.start(),
        m.ping(),
        frame({"type": "message_annotation", "annotation": {"kind": "latency", "ms": 184}}),
        m.text(0),
        m.say(0, "Paris is the capital"),
        m.ping(),
        frame(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": " of France."},
            },
            name="completion",
        ),
        m.stop(0),
        frame({"type": "content_block_progress", "index": 0, "progress": 1.0}),
        m.text(1),
        m.say(1, " It has about 2.1 million inhabitants."),
        m.stop(1),
        m.ping(),
        m.message_delta("end_turn", usage),
        m.end(),
    )
    return Capture(
        description="ping events, unknown event types and a relabelled event name, text answer.",
        source=f"{STREAMING_DOCS} ('ping can arrive anywhere'; new event types may be added, so "
        "unknown ones must be ignored)",
        shape="Claude pings + unknown event types + a relabelled event name",
        proves="pings and unknown event types change nothing; a frame is applied by its JSON "
        "type whatever its event: name; text blocks concatenate",
        body=b,
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Paris is the capital of France. It has about 2.1 million inhabitants.",
            reasoning=None,
            server_tool_calls=[],
            usage={
                "input_tokens": 96,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 21,
            },
            model="claude-haiku-4-5-20251001",
            response_id="msg_0144vndNnbq7akGoCPNEUKdS",
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            chunks=16,
            bytes=1833,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": (
                        "Paris is the capital of France. It has about 2.1 million inhabitants."
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def delta_for_block_never_started() -> Capture:
    # An input_json_delta for block index 1, which never gets a content_block_start (before or
    # after).  A delta for a block that never starts -> malformed_chunk dead letter; the
    # calls as assembled are listed (the one complete call, missing []).
    m = Message("msg_01pP8BiNfuqQj5ZfPf8f7GIu", SONNET, 430)
    usage = m.usage(48)
    b = body(
        m.start(),
        m.tool_use(0, "toolu_01LTRDufnMPRJ1kJButTzlH3", "get_weather"),
        m.args(0, '{"city": "Oslo"}'),
        m.stop(0),
        m.args(1, '{"city": "Bergen"}'),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="A content_block_delta for a block index that never started.",
        source=f"{SPEC_ONLY}; proxies sending unexpected block indexes: {SDK_1192}",
        shape="input_json_delta for an unstarted block",
        proves="a delta for a block that never starts is malformed_chunk",
        body=b,
        expect=dead_letter(
            "malformed_chunk",
            calls=[
                missing(
                    call(
                        0, "toolu_01LTRDufnMPRJ1kJButTzlH3", "get_weather", '{"city": "Oslo"}', True
                    )
                )
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01pP8BiNfuqQj5ZfPf8f7GIu",
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 430,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 48,
            },
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=1252,
            frames_after_end=0,
            detail=(
                "a delta for block 1, which never started: "
                "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_del"
                "ta\",\"partial_json\":\"{\\\"city\\\": \\\"Bergen\\\"}\"}}"
            ),
            declared_tools=None,
        ),
    )


@case
def delta_before_block_start() -> Capture:
    # A reordering proxy sends block 0's first input_json_delta before its content_block_start.
    # The block does start, so the delta is not malformed: it is kept and joined to the block,
    # in arrival order, ahead of the later fragments.
    m = Message("msg_015T2wWwudoJSGzNqONgNh6J", HAIKU, 355)
    usage = m.usage(33)
    b = body(
        m.start(),
        m.args(0, '{"ticket": '),
        m.tool_use(0, "toolu_01HhYGJkLvHTr97M5hs86MOH", "get_ticket"),
        m.args(0, '"OPS-1142"}'),
        m.stop(0),
        m.message_delta("tool_use", usage),
        m.end(),
    )
    return Capture(
        description="An input_json_delta that arrives before its content_block_start.",
        source=f"{SPEC_ONLY} (issue 13: a delta for a block that 'never started and never "
        "starts' is malformed; this one starts)",
        shape="proxy delta before content_block_start",
        proves="an early delta for a block that does start is kept and joined in arrival order",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(
                    0,
                    "toolu_01HhYGJkLvHTr97M5hs86MOH",
                    "get_ticket",
                    '{"ticket": "OPS-1142"}',
                    True,
                )
            ],
            model="claude-haiku-4-5-20251001",
            response_id="msg_015T2wWwudoJSGzNqONgNh6J",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 355,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 33,
            },
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=1243,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def non_json_frame() -> Capture:
    # A gateway cut one frame's JSON short and went on.  An unparseable frame ->
    # malformed_chunk; no call had started.
    m = Message("msg_01hbzFN8ltWBXwsuEzAokanH", SONNET, 240)
    usage = m.usage(12)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Hello"),
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":'
        '{"type":"text_delta","text":" th\n\n',
        m.stop(0),
        m.message_delta("end_turn", usage),
        m.end(),
    )
    return Capture(
        description="A frame whose data is truncated JSON.",
        source=SPEC_ONLY,
        shape="unparseable data frame",
        proves="an unparseable frame is malformed_chunk",
        body=b,
        expect=dead_letter("malformed_chunk", calls=[],
            model="claude-sonnet-4-6",
            response_id="msg_01hbzFN8ltWBXwsuEzAokanH",
            finish_reason=None,
            finish_reasons={"0": None},
            usage={
                "input_tokens": 240,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 1,
                "service_tier": "standard",
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=1123,
            frames_after_end=0,
            declared_tools=None,
        ),
        unstated=corpus_build.PARSER_DETAIL,
    )


@case
def stream_without_message_stop() -> Capture:
    # The connection drops after message_delta: no message_stop.  The stop reason arrived but
    # the end did not -> stream_closed; the complete call is listed with missing [].
    m = Message("msg_01mgcHUVgXwaIvz14u76PbQa", SONNET, 615)
    usage = m.usage(57)
    b = body(
        m.start(),
        m.tool_use(0, "toolu_0158Y5lhxQtlCD0EzylpK11u", "send_email"),
        m.args(0, ""),
        m.args(0, '{"to": "ops@example.com", "subject": "Deploy done"}'),
        m.stop(0),
        m.message_delta("tool_use", usage),
    )
    return Capture(
        description="A stream that ends after message_delta without message_stop.",
        source=f"{WIRES}, 'Wire' (order: … message_delta, message_stop); {SPEC_ONLY}",
        shape="no message_stop",
        proves="without message_stop the response never ended: stream_closed, even after a "
        "stop reason",
        body=b,
        expect=dead_letter(
            "stream_closed",
            calls=[
                missing(
                    call(
                        0,
                        "toolu_0158Y5lhxQtlCD0EzylpK11u",
                        "send_email",
                        '{"to": "ops@example.com", "subject": "Deploy done"}',
                        True,
                    )
                )
            ],
            model="claude-sonnet-4-6",
            response_id="msg_01mgcHUVgXwaIvz14u76PbQa",
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={
                "input_tokens": 615,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 57,
            },
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1217,
            frames_after_end=0,
            detail="the body ended without message_stop (connection dropped or cut)",
            declared_tools=None,
        ),
    )


@case
def done_without_message_stop() -> Capture:
    # A proxy appends data: [DONE] but message_stop never came.  [DONE] is accepted (not
    # malformed) but it is not this wire's end -> stream_closed (DECISIONS).
    m = Message("msg_01PxSJZdzSNlXHsGkY4H1yyy", HAIKU, 130)
    usage = m.usage(8)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "All tests pass."),
        m.stop(0),
        m.message_delta("end_turn", usage),
        DONE,
    )
    return Capture(
        description="data: [DONE] after message_delta, with no message_stop.",
        source=f"{SPEC_ONLY} (issue 13 'Trailers': [DONE] is accepted on every wire)",
        shape="proxy [DONE] without message_stop",
        proves="[DONE] is not the Anthropic end: without message_stop the response is "
        "stream_closed",
        body=b,
        expect=dead_letter("stream_closed", calls=[],
            model="claude-haiku-4-5-20251001",
            response_id="msg_01PxSJZdzSNlXHsGkY4H1yyy",
            finish_reason="end_turn",
            finish_reasons={"0": "end_turn"},
            usage={
                "input_tokens": 130,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 8,
            },
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=988,
            frames_after_end=0,
            detail="the body ended without message_stop (connection dropped or cut)",
            declared_tools=None,
        ),
    )


@case
def openrouter_done_after_message_stop() -> Capture:
    # OpenRouter-style Messages stream: ": OPENROUTER PROCESSING" comments before the first
    # event, message_start usage with input_tokens 0 (the real count comes on message_delta),
    # message_stop, then a trailing data: [DONE].  The trailer is accepted and ignored; usage is
    # the message_delta object (the last one), not a merge.
    m = Message("gen-1794673201-Vb8Nc2Xz5Qw1Lp4Kd7Rt", "anthropic/claude-sonnet-4.6", 1450)
    start_usage = {"input_tokens": 0, "output_tokens": 0}
    usage = {"input_tokens": 1450, "output_tokens": 77, "cache_read_input_tokens": 0}
    b = body(
        ": OPENROUTER PROCESSING\n\n",
        ": OPENROUTER PROCESSING\n\n",
        m.start(usage=start_usage),
        m.text(0),
        m.say(0, "Opening the ticket."),
        m.stop(0),
        m.tool_use(1, "toolu_01KZCUAVynNreVgLkCUftWLS", "open_ticket"),
        m.args(1, '{"queue": "billing", "priority": "high"}'),
        m.stop(1),
        m.message_delta("tool_use", usage),
        m.end(),
        DONE,
    )
    return Capture(
        description="OpenRouter-style trailer: data: [DONE] after message_stop.",
        source=f"{SPEC_ONLY} (issue 13 'Shapes added in 2026', Trailers: OpenRouter sends "
        "data: [DONE] after the terminal event)",
        shape="OpenRouter comments, input_tokens 0 on message_start, [DONE] after message_stop",
        proves="a trailing [DONE] is accepted, never malformed; usage is the last usage "
        "object (message_delta's), not merged with message_start's",
        body=b,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Opening the ticket.",
            tool_calls=[
                call(
                    0,
                    "toolu_01KZCUAVynNreVgLkCUftWLS",
                    "open_ticket",
                    '{"queue": "billing", "priority": "high"}',
                    True,
                )
            ],
            usage={"input_tokens": 1450, "output_tokens": 77, "cache_read_input_tokens": 0},
            model="anthropic/claude-sonnet-4.6",
            response_id="gen-1794673201-Vb8Nc2Xz5Qw1Lp4Kd7Rt",
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=1336,
            frames_after_end=1,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Opening the ticket.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def frames_after_message_stop() -> Capture:
    # After message_stop a buggy relay replays frames: a delta for an unknown block index and a
    # second message_delta.  Frames after the terminal event are ignored (never parsed into
    # the response, never malformed_chunk): the record is the one message_stop closed.
    m = Message("msg_01cdlru5RR0N6qvs8ZTFTvnW", SONNET, 204)
    usage = m.usage(11)
    b = body(
        m.start(),
        m.text(0),
        m.say(0, "Done."),
        m.stop(0),
        m.message_delta("end_turn", usage),
        m.end(),
        m.args(7, '{"x": 1}'),
        m.message_delta("max_tokens", m.usage(99)),
        "event: content_block_delta\ndata: not json\n\n",
    )
    return Capture(
        description="Frames after message_stop: a stray delta, a second message_delta, non-JSON.",
        source=f"{SPEC_ONLY} (issue 13 'Trailers': frames after a wire's terminal event are "
        "ignored, never a malformed_chunk)",
        shape="relay replays frames after message_stop",
        proves="nothing after message_stop changes the record or makes it malformed",
        body=b,
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Done.",
            usage={
                "input_tokens": 204,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 11,
            },
            model="claude-sonnet-4-6",
            response_id="msg_01cdlru5RR0N6qvs8ZTFTvnW",
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1409,
            frames_after_end=3,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "Done.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# Decisions (where issue 13 leaves a value open); written into the README
# --------------------------------------------------------------------------------------------

DECISIONS = [
    'Every record of this wire, dead letters included, carries `wire: "anthropic-messages"`.',
    'Every client call (`tool_use`) has `type: "function"`, `choice: 0`; a call is '
    "`id_synthesized` only under the operator's opt-in (`synthesize_ids`, per provider, on "
    'every wire); without it a `tool_use` with `id: ""` is `missing_identity` '
    "(`proxy_tool_use_empty_id`, run with synthesis off); with it, every call that ends "
    'without an id (`id` `""` or absent) gets `"call_tw_" + '
    'sha256("toolwire/call-id/{seed}/0/{index}")[:24]`, seeded offline by the message id '
    "(`proxy_tool_use_ids_synthesized`: the only values of the corpus computed, a sha256 not "
    "being worked out by hand).",
    'A `tool_use` whose `id` is `""` has no id: the call records `id: null` (as an id never '
    'sent does on Chat Completions) and its dead letter says `missing: ["id"]`.',
    "`stop_details` (refusal category/explanation) is not part of the record; `error_code` stays "
    "`REFUSAL`.",
    "`server_tool_calls` entries have the shape every wire shares, `{index, type, id, name, "
    "arguments, status}`: `index` is the ordinal among server calls, `type` the block's own "
    "type verbatim (`server_tool_use`; `mcp_tool_use` is a server call too), `arguments` built "
    "by the same rule as client calls (partial_json verbatim, else the start input as compact "
    "JSON), `status` null (these blocks carry none). `*_tool_result` blocks (e.g. "
    "`web_search_tool_result`) are not recorded anywhere. A dead letter's `calls` lists client "
    "calls only.",
    "`server_tool_calls` is `[]` when there is none; expectations assert it only where a capture "
    "is about it.",
    'Compact JSON of a start `input` = `json.dumps(input, separators=(",", ":"), '
    "ensure_ascii=False)` with keys in received order (the Gemini rule, applied here too).",
    "When the partial_json concatenation is non-empty it is the arguments, whatever the start "
    "`input` held.",
    "`provider_fields` holds `caller` and `toolset_name` verbatim, under those keys, when the "
    'block carries them non-null (`caller: {"type": "direct"}` included); absent otherwise.',
    "`reasoning` = the `thinking_delta` text of every `thinking` block, concatenated in order "
    "with no separator; `signature_delta` and `redacted_thinking` add nothing (and "
    "`redacted_thinking` alone does not count as reasoning for `EMPTY_RESPONSE`).",
    "`content` = the `text_delta` text of every `text` block, concatenated in order with no "
    "separator; `citations_delta` adds nothing.",
    "`usage` = the last usage object seen, verbatim, never merged: `message_start.message.usage` "
    "counts as one, so a stream cut by an error before `message_delta` reports "
    "message_start's usage (`overloaded_error_mid_arguments`); a later `message_delta.usage` "
    "replaces it whole (`openrouter_done_after_message_stop`).",
    "An `error` event: `finish: error`; `error_code` = `error.type` upper-cased; "
    "`error_message` = `error.message`; `retryable` only for `overloaded_error` and "
    "`api_error`; `finish_reason` = the stop reason if one arrived before it, else the error "
    "type verbatim. The error event is itself an end: no `message_stop` is needed after it.",
    "A delta whose block index starts later (delta before its `content_block_start`) is kept "
    "and joined in arrival order (`delta_before_block_start`); only a block that never starts "
    "by the end of the body makes `malformed_chunk`.",
    "`data: [DONE]` is accepted anywhere but is not this wire's end: without `message_stop` (or "
    "an `error` event) the response is `stream_closed` (`done_without_message_stop`).",
    "Frames after `message_stop` are ignored whatever they hold (stray deltas, a second "
    "`message_delta`, non-JSON): `frames_after_message_stop`.",
    "A stop reason `end_turn` with a `tool_use` block is `finish: stop` and the call is emitted "
    "(`end_turn_with_tool_use`), as Chat Completions does for stop with calls.",
    "Complete calls are withheld under `length` too (`claude_context_window_exceeded`); "
    "`arguments_json` is still reported for withheld calls.",
    "`ping` frames before `message_start` are ignored like any other ping.",
    "`repairs`, `chunks`, `bytes` and `frames_after_end` are the wire module's (the issue "
    "defines no repairs for this wire but id synthesis's, and leaves to the wire module whether "
    "pings, unknown events and trailers count as chunks); they were not asserted by this corpus "
    "until every key of the record was required, and are now stated as the module gives them.",
    "A `tool_use` (or server) block that sends no `input` at all (absent or null) has no start "
    'arguments: without deltas its arguments are `""` (`arguments_json: false`); nothing is '
    "made up.",
    "An `error` event ends the response even while a delta is held for a block that has not "
    "started: the provider error is the outcome (the stream was cut, so the block cannot be "
    "said never to start); at `message_stop` a held delta is `malformed_chunk`.",
    "A `message_stop` with no stop reason at all is finished by its calls (the neutral "
    "default: `tool_calls` with calls, else `stop`).",
]

#: Expectations changed after the corpus was written, because a rule of the issue (or of the
#: brief that assigned the wire) says otherwise; written into the README.
CHANGES = [
    "`server_tool_calls` entries (`claude_web_search_then_client_tool`, "
    "`claude_pause_turn_server_tools`, `programmatic_calls_caller_input_in_start`): were "
    "`{choice, index, id, name, type, arguments, arguments_json}`; now `{index, type, id, "
    "name, arguments, status}` with `status: null`, because server calls are one shape on "
    "every wire (the record's `ServerCall` contract). Their ids, names, indexes and arguments "
    "are unchanged: a streamed `partial_json` stays verbatim (the contract's arguments are "
    '"what the provider sent, as text; compact JSON when it sent an object"), so only a start '
    "`input` object is written as compact JSON.",
    "`proxy_tool_use_empty_id` now runs with `synthesize_ids` off (settled by the lead: the "
    "opt-in to id synthesis applies to every wire, as `decide` does); its expectation is "
    "unchanged.",
]


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


#: The keys of every server call entry: one shape on every wire.
SERVER_CALL_KEYS = ("index", "type", "id", "name", "arguments", "status")
#: Every list of call objects an expectation can hold: the ordinals of each run 0, 1, ...
LISTS = ("tool_calls", "withheld_tool_calls", "server_tool_calls", "calls")


def incomplete(capture: Capture) -> list[str]:
    """What a capture's expectation leaves out, or states inconsistently with the rules."""
    expect = capture.expect
    lacking = corpus_build.unstated(
        expect,
        assembled_lists={**corpus_build.CLIENT_CALLS, "server_tool_calls": SERVER_CALL_KEYS},
        ordinals=LISTS,
        absent=lambda value: not value,  # an id "" is no id (DECISIONS)
    )
    lacking += corpus_build.unfinished(expect)
    if expect.get("outcome") == "assembled":
        finish = expect.get("finish")
        if finish in ("content_filter", "error", "other") and not expect.get("error_code"):
            lacking.append("error_code (an abnormal finish names its code)")
        if finish in ("length", "content_filter", "error", "other") and expect.get("tool_calls"):
            lacking.append("tool_calls (calls are withheld under this finish)")
    if expect.get("outcome") in ("assembled", "dead_letter") and expect.get("wire") != WIRE:
        lacking.append(f"wire (must be {WIRE!r})")
    return lacking


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the rules")


def readme(captures: list[Capture]) -> str:
    lines = [
        "# Anthropic Messages corpus",
        "",
        "Raw SSE bodies of streamed Anthropic Messages responses (`NAME.sse`, byte-exact) and the",
        "record the assembler must produce for each under `wire: anthropic-messages` (`NAME.json`:",
        "`options` to run it with, `expect` = keys of the record that must be equal). Generated by",
        "`_make.py`, which documents each case; regenerate with",
        "`.venv/bin/python tests/core/corpus_wires/anthropic-messages/_make.py`. Every expected",
        "value was worked out by hand from issue 13's rules, not by running the assembler.",
        "",
        *corpus_build.EVERY_KEY.splitlines(),
        *corpus_build.capture_table(captures),
        "",
        "## Decisions",
        "",
        "Where issue 13 leaves a value open, these captures assume:",
        "",
    ]
    lines += [f"- {d}" for d in DECISIONS]
    lines += ["", "Expectations changed since the corpus was written, and why:", ""]
    lines += [f"- {c}" for c in CHANGES]
    return "\n".join(lines) + "\n"


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures))


if __name__ == "__main__":
    main()
