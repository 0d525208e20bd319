"""Generate the OpenAI Responses corpus: ``NAME.sse`` bodies and ``NAME.json`` expectations.

Run from the repository root::

    .venv/bin/python tests/core/corpus_wires/openai-responses/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
streamed Responses API call (Server-Sent Events, written byte-exact) and the whole of the
assembler's record that it must produce.  The wire's shapes come from
``shared/reference/wires.md`` §2 and ``shared/reference/shapes-2026.md`` (beside the
repository); the record rules from issue 13 ("Every streaming wire, one record").  Where those
rules leave a value open, the choice made here is listed under "Decisions" in the README this
script writes, and the comment on the case says which decision it rests on.

Every expected value is written out by hand from the rules (never computed by running
``toolwire``): the expectations are literals, not derived from the bodies.  The builder below
only frames events (sequence numbers, obfuscation padding, SSE lines); nothing in it computes
an expectation.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path
from typing import Any

# Run as a script, only this folder is on the path: the shared builders are under the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.core import corpus_build
from tests.core.corpus_build import dumps, missing, server_call

HERE = Path(__file__).resolve().parent

WIRE = "openai-responses"

# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``openai-responses`` (its ``NAME.json`` says so)."""

    wire = WIRE


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _padding(seed: str, delta: str) -> str:
    """OpenAI's ``obfuscation`` field: random characters that even out the frame size.

    Deterministic here (so the corpus is reproducible); it carries no meaning for assembly.
    """
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    size = max(2, 14 - len(delta))
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:size])


def usage(
    input_tokens: int, cached: int, output_tokens: int, reasoning: int, total: int
) -> dict[str, Any]:
    """The Responses usage object, every number written out by the caller."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": total,
    }


def fn_tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A function tool as the response object echoes it back."""
    return {
        "type": "function",
        "description": description,
        "name": name,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
        "strict": True,
    }


WEATHER_TOOL = fn_tool(
    "get_weather",
    "Current weather for a city.",
    {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
)
TIME_TOOL = fn_tool("get_current_time", "The current UTC time.", {})
WRITE_TOOL = fn_tool(
    "write_file",
    "Write a text file in the workspace.",
    {"path": {"type": "string"}, "content": {"type": "string"}},
)
SEARCH_TOOL = fn_tool("search_docs", "Search the product docs.", {"query": {"type": "string"}})


class Responses:
    """One streamed response: numbers each event, builds the response object, frames the body.

    ``obfuscation`` adds OpenAI's padding field to the delta events (compatible servers do not
    send it); ``sequence`` False leaves ``sequence_number`` out (some compatible servers).
    """

    def __init__(
        self,
        response_id: str,
        model: str,
        created_at: int,
        tools: list[dict[str, Any]],
        *,
        reasoning: dict[str, Any] | None = None,
        obfuscation: bool = True,
        sequence: bool = True,
        max_output_tokens: int | None = None,
    ) -> None:
        self.id = response_id
        self.model = model
        self.created_at = created_at
        self.tools = tools
        self.reasoning = reasoning or {"effort": None, "summary": None}
        self.obfuscation = obfuscation
        self.sequence = sequence
        self.max_output_tokens = max_output_tokens
        self.seq = 0
        self.events: list[dict[str, Any]] = []

    # -- events --------------------------------------------------------------------------

    def emit(self, type_: str, **fields: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"type": type_}
        if self.sequence:
            payload["sequence_number"] = self.seq
        payload.update(fields)
        self.seq += 1
        self.events.append(payload)
        return payload

    def resend(self, *payloads: dict[str, Any]) -> None:
        """Events sent a second time, byte-identical (same ``sequence_number``)."""
        self.events.extend(payloads)

    def response(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage_: dict[str, Any] | None,
        *,
        error: dict[str, Any] | None = None,
        incomplete: str | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "error": error,
            "incomplete_details": None if incomplete is None else {"reason": incomplete},
            "instructions": None,
            "max_output_tokens": self.max_output_tokens,
            "max_tool_calls": None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "prompt_cache_key": None,
            "reasoning": self.reasoning,
            "safety_identifier": None,
            "service_tier": "auto" if status == "in_progress" else "default",
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": self.tools,
            "top_logprobs": 0,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage_,
            "user": None,
            "metadata": {},
        }

    def start(self) -> None:
        self.emit("response.created", response=self.response("in_progress", [], None))
        self.emit("response.in_progress", response=self.response("in_progress", [], None))

    def completed(self, output: list[dict[str, Any]], usage_: dict[str, Any]) -> None:
        self.emit("response.completed", response=self.response("completed", output, usage_))

    def incomplete(
        self, reason: str, output: list[dict[str, Any]], usage_: dict[str, Any]
    ) -> None:
        self.emit(
            "response.incomplete",
            response=self.response("incomplete", output, usage_, incomplete=reason),
        )

    def failed(self, code: str, message: str, output: list[dict[str, Any]]) -> None:
        self.emit(
            "response.failed",
            response=self.response(
                "failed", output, None, error={"code": code, "message": message}
            ),
        )

    def added(self, output_index: int, item: dict[str, Any]) -> dict[str, Any]:
        return self.emit("response.output_item.added", output_index=output_index, item=item)

    def item_done(self, output_index: int, item: dict[str, Any]) -> dict[str, Any]:
        return self.emit("response.output_item.done", output_index=output_index, item=item)

    def delta(self, type_: str, output_index: int, item_id: str | None, text: str,
              **extra: Any) -> dict[str, Any]:
        """A ``*.delta`` event: item_id (when the server sends one), output_index, delta."""
        fields: dict[str, Any] = {}
        if item_id is not None:
            fields["item_id"] = item_id
        fields["output_index"] = output_index
        fields.update({k: v for k, v in extra.items() if k != "logprobs"})
        fields["delta"] = text
        if "logprobs" in extra:
            fields["logprobs"] = extra["logprobs"]
        if self.obfuscation:
            fields["obfuscation"] = _padding(f"{self.id}/{self.seq}", text)
        return self.emit(type_, **fields)

    def args_delta(self, output_index: int, item_id: str | None, text: str) -> dict[str, Any]:
        return self.delta("response.function_call_arguments.delta", output_index, item_id, text)

    def args_done(self, output_index: int, item_id: str | None, name: str,
                  arguments: str) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if item_id is not None:
            fields["item_id"] = item_id
        return self.emit(
            "response.function_call_arguments.done",
            **fields,
            name=name,
            output_index=output_index,
            arguments=arguments,
        )

    # -- whole items ---------------------------------------------------------------------

    def function_call(
        self,
        output_index: int,
        item_id: str,
        call_id: str | None,
        name: str,
        deltas: list[str],
        *,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A function_call item the way OpenAI streams it: added, deltas, .done, item done
        (``call_id`` None: a server that leaves the key out of both items)."""
        arguments = "".join(deltas)
        fields = extra or {}
        identity = {} if call_id is None else {"call_id": call_id}
        self.added(output_index, {
            "id": item_id, "type": "function_call", "status": "in_progress",
            "arguments": "", **identity, "name": name, **fields,
        })
        for piece in deltas:
            self.args_delta(output_index, item_id, piece)
        self.args_done(output_index, item_id, name, arguments)
        item = {
            "id": item_id, "type": "function_call", "status": "completed",
            "arguments": arguments, **identity, "name": name, **fields,
        }
        self.item_done(output_index, item)
        return item

    def message(
        self, output_index: int, item_id: str, deltas: list[str], *, status: str = "completed"
    ) -> dict[str, Any]:
        """An assistant message with one output_text part: added, part, deltas, dones."""
        text = "".join(deltas)
        self.added(output_index, {
            "id": item_id, "type": "message", "status": "in_progress",
            "content": [], "role": "assistant",
        })
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        self.emit("response.content_part.added", item_id=item_id, output_index=output_index,
                  content_index=0, part=empty)
        for piece in deltas:
            self.delta("response.output_text.delta", output_index, item_id, piece,
                       content_index=0, logprobs=[])
        self.emit("response.output_text.done", item_id=item_id, output_index=output_index,
                  content_index=0, text=text, logprobs=[])
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        self.emit("response.content_part.done", item_id=item_id, output_index=output_index,
                  content_index=0, part=part)
        item = {"id": item_id, "type": "message", "status": status, "content": [part],
                "role": "assistant"}
        self.item_done(output_index, item)
        return item

    def reasoning_item(
        self, output_index: int, item_id: str, parts: list[list[str]]
    ) -> dict[str, Any]:
        """A reasoning item; each entry of ``parts`` is one summary part's deltas."""
        self.added(output_index, {"id": item_id, "type": "reasoning", "summary": []})
        summary = []
        for n, deltas in enumerate(parts):
            self.emit("response.reasoning_summary_part.added", item_id=item_id,
                      output_index=output_index, summary_index=n,
                      part={"type": "summary_text", "text": ""})
            for piece in deltas:
                self.delta("response.reasoning_summary_text.delta", output_index, item_id,
                           piece, summary_index=n)
            text = "".join(deltas)
            self.emit("response.reasoning_summary_text.done", item_id=item_id,
                      output_index=output_index, summary_index=n, text=text)
            self.emit("response.reasoning_summary_part.done", item_id=item_id,
                      output_index=output_index, summary_index=n,
                      part={"type": "summary_text", "text": text})
            summary.append({"type": "summary_text", "text": text})
        item = {"id": item_id, "type": "reasoning", "summary": summary}
        self.item_done(output_index, item)
        return item

    # -- framing -------------------------------------------------------------------------

    def body(self, framing: str = "event", newline: str = "\n", trailer: str = "") -> bytes:
        """SSE frames: ``event:`` + ``data:`` lines (OpenAI), or ``data:`` only (proxies)."""
        frames = []
        for payload in self.events:
            data = f"data: {dumps(payload)}"
            frames.append(f"event: {payload['type']}\n{data}\n\n" if framing == "event"
                          else f"{data}\n\n")
        text = "".join(frames) + trailer
        return text.replace("\n", newline).encode("utf-8")


#: An expected client call of the record: choice 0 (``provider_fields`` only when it
#: applies); ``server_call`` is the one shape of every wire (README, Decisions 1).
call = functools.partial(corpus_build.call, 0)
assembled = functools.partial(corpus_build.assembled, WIRE)
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)
CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


# Sources (reference docs beside the repository, and the public reports they cite).
WIRES = "wires.md §2 OpenAI Responses"
WIRE_DOC = f"{WIRES}, 'Wire' (https://platform.openai.com/docs/api-reference/responses-streaming)"
IDENTITY = f"{WIRES}, 'Identity' (https://github.com/tingly-dev/tingly-box/pull/1445)"
ROTATING = f"{WIRES}, 'Identity' (Vercel: compatible providers rotate opaque item ids)"
DONE_ONLY = "https://github.com/Wei-Shaw/sub2api/pull/6629"
DELTA_FIRST = "https://github.com/docker/docker-agent/pull/2976"
NO_ITEM_ID = "https://github.com/anomalyco/opencode/pull/45081"
NO_STATUS = "https://github.com/router-for-me/CLIProxyAPI/issues/5851"
STRANDS = "https://github.com/strands-agents/harness-sdk/pull/4139"
OPENAI_PY_3538 = "https://github.com/openai/openai-python/pull/3538"
PRISM_FIXTURE = (
    "https://kngadvisors.com/simulador/vendor/prism-php/prism/tests/Fixtures/openai/"
    "stream-unknown-error-responses-1.json"
)
SHAPES = "shapes-2026.md 'Responses, Anthropic, Gemini (2026 additions)'"
CUSTOM = f"{SHAPES}: custom_tool_call (Oaklight/llm-rosetta #182)"
MCP = f"{SHAPES}: mcp_call (vllm-project/agentic-api #139; mcp-use #2550)"
FIELDS = f"{SHAPES}: namespace, caller, async (openai 3.51 types)"
ISSUE = "issue 13"
SPEC_ONLY = "assembler spec rule (synthetic shape)"

GPT5 = "gpt-5-2025-08-07"
GPT41 = "gpt-4.1-2025-04-14"
SUMMARY_AUTO = {"effort": "medium", "summary": "detailed"}
NO_SUMMARY = {"effort": "medium", "summary": None}


# --------------------------------------------------------------------------------------------
# The wire as OpenAI documents it
# --------------------------------------------------------------------------------------------


@case
def single_function_call() -> Capture:
    # The canonical stream: created, in_progress, a reasoning item without summary (summary
    # off), then the function_call item: added (arguments ""), nine argument deltas, .done,
    # output_item.done, response.completed with usage.  The call's id is its call_id
    # ("call_…"), never the item id ("fc_…").  completed with one client call -> finish
    # tool_calls, finish_reason "completed" (verbatim).  The reasoning item has no summary
    # text: reasoning null.  usage = the final response's usage.
    r = Responses("resp_68c2f1a04e5c8193a0f1d6b2e9c47a3d0b5e8f1c2a4d6b7e", GPT5, 1794700001,
                  [WEATHER_TOOL], reasoning=NO_SUMMARY)
    r.start()
    rs = r.reasoning_item(0, "rs_68c2f1a1b7d08193b2e4c6a8f0d1e3a50c7b9d2f4e6a8c0b", [])
    fc = r.function_call(
        1, "fc_68c2f1a2c9e48193a7b1d3f5e7092c4b1d3f5a7c9e0b2d4f", "call_Vb3qT8mZ1xK6pR9sW2nL5yHd",
        "get_weather",
        ['{"', "city", '":"', "Paris", '","', "unit", '":"', "celsius", '"}'],
    )
    u = usage(318, 0, 94, 64, 412)
    r.completed([rs, fc], u)
    return Capture(
        description="One function call, streamed the way OpenAI documents it.",
        source=WIRE_DOC,
        shape="OpenAI gpt-5: reasoning item (no summary), one function_call, event: + data:",
        proves="baseline: deltas by output_index, call_id is the id (not fc_), completed -> "
        "tool_calls, usage from the final response",
        body=r.body(),
        declared_tools=["get_weather"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Vb3qT8mZ1xK6pR9sW2nL5yHd", "get_weather",
                             '{"city":"Paris","unit":"celsius"}', True)],
            reasoning=None,
            server_tool_calls=[],
            usage={
                "input_tokens": 318,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 94,
                "output_tokens_details": {"reasoning_tokens": 64},
                "total_tokens": 412,
            },
            model="gpt-5-2025-08-07",
            response_id="resp_68c2f1a04e5c8193a0f1d6b2e9c47a3d0b5e8f1c2a4d6b7e",
            finish_reasons={"0": "completed"},
            repairs=corpus_build.repairs(),
            chunks=17,
            bytes=7212,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def plain_text_answer() -> Capture:
    # A message item with one output_text part, four text deltas.  No call -> completed maps to
    # stop.  Text goes to content.
    r = Responses("resp_0d9a4b7e2c1f8193b6a0e3d5c7f9a1b2c4d6e8f0a2b4c6d8", GPT41, 1794700102,
                  [WEATHER_TOOL])
    r.start()
    msg = r.message(0, "msg_0d9a4b7f3e2a8193a4c6e8f0b2d4a6c8e0f2b4d6a8c0e2f4",
                    ["The", " capital of", " France is", " Paris."])
    r.completed([msg], usage(52, 0, 8, 0, 60))
    return Capture(
        description="A text answer, no tool calls.",
        source=WIRE_DOC,
        shape="OpenAI gpt-4.1 text answer, one output_text part",
        proves="output_text deltas accumulate into content; completed without calls -> stop",
        body=r.body(),
        expect=assembled(
            finish="stop",
            finish_reason="completed",
            content="The capital of France is Paris.",
            reasoning=None,
            server_tool_calls=[],
            usage={
                "input_tokens": 52,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 8,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 60,
            },
            model="gpt-4.1-2025-04-14",
            response_id="resp_0d9a4b7e2c1f8193b6a0e3d5c7f9a1b2c4d6e8f0a2b4c6d8",
            finish_reasons={"0": "completed"},
            repairs=corpus_build.repairs(),
            chunks=12,
            bytes=5971,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "The capital of France is Paris.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def no_argument_call() -> Capture:
    # A tool whose parameters are {}: OpenAI streams one delta "{}" and .done "{}".  The call is
    # complete and executable with arguments "{}".
    r = Responses("resp_5e1b8c3d7a9f8193a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b1", GPT41, 1794700203,
                  [TIME_TOOL])
    r.start()
    fc = r.function_call(0, "fc_5e1b8c3e9d0b8193b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4",
                         "call_Hn4kP7wQ2sX9mT1vB6cR3zLe", "get_current_time", ["{}"])
    r.completed([fc], usage(61, 0, 12, 0, 73))
    return Capture(
        description="A tool without arguments: the arguments are the single delta {}.",
        source=f"{WIRE_DOC}; no-argument tools lost by clients: "
        "https://github.com/langchain-ai/langchain/issues/23911 (wires.md §1)",
        shape="OpenAI function_call for a parameterless tool, delta {}",
        proves="a no-argument call is a complete call with arguments {}",
        body=r.body(),
        declared_tools=["get_current_time"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Hn4kP7wQ2sX9mT1vB6cR3zLe", "get_current_time", "{}", True)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_5e1b8c3d7a9f8193a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b1",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 61,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 12,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 73,
            },
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=4315,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def parallel_function_calls() -> Capture:
    # parallel_tool_calls: a reasoning item at output_index 0, then two function_call items at
    # output_index 1 and 2, one after the other.  index counts client calls only: 0 and 1
    # (output_index 1 and 2).  Same name, distinct call_ids.
    r = Responses("resp_7a2c9e4f1b3d8193a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5", GPT5, 1794700304,
                  [WEATHER_TOOL], reasoning=NO_SUMMARY)
    r.start()
    rs = r.reasoning_item(0, "rs_7a2c9e50c4e68193b9d1f3a5c7e9b1d3f5a7c9e1b3d5f7a9", [])
    one = r.function_call(1, "fc_7a2c9e51d5f78193a1c3e5a7b9d1f3e5a7c9b1d3f5e7a9c1",
                          "call_Qm8vX2nK5tR1pW7sL4yB9cHd", "get_weather",
                          ['{"city":"', "Paris", '","unit":"', "celsius", '"}'])
    two = r.function_call(2, "fc_7a2c9e52e6a88193b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3",
                          "call_Zt3cN6wP9kV2xM5qR8sJ1bFg", "get_weather",
                          ['{"city":"', "Tokyo", '","unit":"', "celsius", '"}'])
    r.completed([rs, one, two], usage(330, 256, 141, 64, 471))
    return Capture(
        description="Two parallel calls to one function after a reasoning item.",
        source=WIRE_DOC,
        shape="OpenAI gpt-5: reasoning item, then two function_call items (output_index 1, 2)",
        proves="each output_item.added starts a call; index is the ordinal among client calls, "
        "not output_index",
        body=r.body(),
        declared_tools=["get_weather"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[
                call(0, "call_Qm8vX2nK5tR1pW7sL4yB9cHd", "get_weather",
                     '{"city":"Paris","unit":"celsius"}', True),
                call(1, "call_Zt3cN6wP9kV2xM5qR8sJ1bFg", "get_weather",
                     '{"city":"Tokyo","unit":"celsius"}', True),
            ],
            usage={
                "input_tokens": 330,
                "input_tokens_details": {"cached_tokens": 256},
                "output_tokens": 141,
                "output_tokens_details": {"reasoning_tokens": 64},
                "total_tokens": 471,
            },
            model="gpt-5-2025-08-07",
            response_id="resp_7a2c9e4f1b3d8193a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5",
            finish_reasons={"0": "completed"},
            repairs=corpus_build.repairs(),
            chunks=21,
            bytes=8629,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def interleaved_argument_deltas() -> Capture:
    # A compatible server opens both items first, then interleaves their argument deltas
    # (output_index 0, 1, 0, 1, ...), and sends no .done and no output_item.done: the arguments
    # exist only as deltas, so they must be joined by output_index.  (Decision 3: the terminal
    # response's output list is not read for calls.)  Call 0: get_weather Paris; call 1:
    # get_current_time {}.
    r = Responses("resp_c41e7a9b2d5f4c6e8a0b1d3f5e7a9c2b", "gpt-oss-120b", 1794700405,
                  [WEATHER_TOOL, TIME_TOOL], obfuscation=False)
    r.start()
    w_id, t_id = "fc_c41e7a9b0001", "fc_c41e7a9b0002"
    r.added(0, {"id": w_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_8f2d4b6a1c3e5f7a", "name": "get_weather"})
    r.added(1, {"id": t_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_9a3e5c7b2d4f6a8b", "name": "get_current_time"})
    r.args_delta(0, w_id, '{"city":')
    r.args_delta(1, t_id, "{")
    r.args_delta(0, w_id, '"Paris",')
    r.args_delta(1, t_id, "}")
    r.args_delta(0, w_id, '"unit":"celsius"}')
    r.completed([
        {"id": w_id, "type": "function_call", "status": "completed",
         "arguments": '{"city":"Paris","unit":"celsius"}', "call_id": "call_8f2d4b6a1c3e5f7a",
         "name": "get_weather"},
        {"id": t_id, "type": "function_call", "status": "completed", "arguments": "{}",
         "call_id": "call_9a3e5c7b2d4f6a8b", "name": "get_current_time"},
    ], usage(144, 0, 31, 0, 175))
    return Capture(
        description="Two calls whose argument deltas interleave; no done events.",
        source=f"{SPEC_ONLY}; output_index as the stable key: {ROTATING}",
        shape="compatible server: both items added, deltas interleaved by output_index, "
        "deltas only",
        proves="deltas are routed by output_index, not to the latest item",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[
                call(0, "call_8f2d4b6a1c3e5f7a", "get_weather",
                     '{"city":"Paris","unit":"celsius"}', True),
                call(1, "call_9a3e5c7b2d4f6a8b", "get_current_time", "{}", True),
            ],
            model="gpt-oss-120b",
            response_id="resp_c41e7a9b2d5f4c6e8a0b1d3f5e7a9c2b",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 144,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 31,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 175,
            },
            repairs=corpus_build.repairs(),
            chunks=10,
            bytes=5592,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def reasoning_summary_between_calls() -> Capture:
    # reasoning.summary "detailed": a reasoning item with two summary parts, a call, a second
    # reasoning item with one part, a second call.  reasoning = the three parts' deltas
    # concatenated in order with no separator.  Calls at output_index 1 and 3 -> index 0, 1.
    r = Responses("resp_2b9d4f6a8c1e8193a3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3", GPT5, 1794700506,
                  [WEATHER_TOOL, SEARCH_TOOL], reasoning=SUMMARY_AUTO)
    r.start()
    rs1 = r.reasoning_item(0, "rs_2b9d4f6b9d2f8193b5c7e9a1b3d5f7a9c1e3b5d7f9a1c3e5", [
        ["**Checking", " the weather**\n\n", "The user wants to know whether",
         " to pack an umbrella."],
        ["**Choosing", " a source**\n\n", "I'll ask the weather tool", " for Lisbon first."],
    ])
    one = r.function_call(1, "fc_2b9d4f6cae308193a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7",
                          "call_Lr5tY8uI1oP4aS7dF0gH3jKz", "get_weather",
                          ['{"city":"Lisbon",', '"unit":"celsius"}'])
    rs2 = r.reasoning_item(2, "rs_2b9d4f6dbf418193b9e1a3c5d7f9b1a3c5e7d9f1b3a5c7e9", [
        ["**Looking up", " the packing list**\n\n", "The docs may list rain gear."],
    ])
    two = r.function_call(3, "fc_2b9d4f6ec0528193a1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1",
                          "call_Xc2vB5nM8qW1eR4tY7uI0oPa", "search_docs",
                          ['{"query":', '"rain gear"}'])
    r.completed([rs1, one, rs2, two], usage(402, 0, 388, 320, 790))
    return Capture(
        description="Reasoning summaries before and between two calls.",
        source=f"{WIRE_DOC}; thinking between tools: {ISSUE} 'Tests'",
        shape="OpenAI gpt-5 reasoning.summary: reasoning, call, reasoning, call",
        proves="reasoning_summary_text deltas go to reasoning, parts and items joined with no "
        "separator; reasoning items do not count as calls",
        body=r.body(),
        declared_tools=["get_weather", "search_docs"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            reasoning=(
                "**Checking the weather**\n\nThe user wants to know whether to pack an umbrella."
                "**Choosing a source**\n\nI'll ask the weather tool for Lisbon first."
                "**Looking up the packing list**\n\nThe docs may list rain gear."
            ),
            tool_calls=[
                call(0, "call_Lr5tY8uI1oP4aS7dF0gH3jKz", "get_weather",
                     '{"city":"Lisbon","unit":"celsius"}', True),
                call(1, "call_Xc2vB5nM8qW1eR4tY7uI0oPa", "search_docs",
                     '{"query":"rain gear"}', True),
            ],
            model="gpt-5-2025-08-07",
            response_id="resp_2b9d4f6a8c1e8193a3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 402,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 388,
                "output_tokens_details": {"reasoning_tokens": 320},
                "total_tokens": 790,
            },
            repairs=corpus_build.repairs(),
            chunks=37,
            bytes=14572,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": (
                        "**Checking the weather**\n\nThe user wants to know whether to pack an "
                        "umbrella.**Choosing a source**\n\nI'll ask the weather tool for Lisbon "
                        "first.**Looking up the packing list**\n\nThe docs may list rain gear."
                    ),
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def web_search_then_client_call() -> Capture:
    # The built-in web_search tool runs first (web_search_call item with its in_progress,
    # searching and completed events), then a short message, then a client function_call.  The
    # search goes to server_tool_calls (Decision 1: index 0, type, item id, name null,
    # arguments the done item's action as compact JSON, final status) and is never withheld;
    # the client call is index 0 although it sits at output_index 2.  Text before the call
    # goes to content.
    r = Responses("resp_9e3a5c7b1d2f8193a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2b4", GPT5, 1794700607,
                  [{"type": "web_search", "filters": None, "search_context_size": "medium",
                    "user_location": {"type": "approximate", "city": None, "country": "US",
                                      "region": None, "timezone": None}},
                   fn_tool("save_note", "Save a note for the user.", {"text": {"type": "string"}})],
                  reasoning=NO_SUMMARY)
    r.start()
    ws_id = "ws_9e3a5c7c2e3a8193b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6"
    r.added(0, {"id": ws_id, "type": "web_search_call", "status": "in_progress",
                "action": {"type": "search"}})
    r.emit("response.web_search_call.in_progress", item_id=ws_id, output_index=0)
    r.emit("response.web_search_call.searching", item_id=ws_id, output_index=0)
    r.emit("response.web_search_call.completed", item_id=ws_id, output_index=0)
    ws = {"id": ws_id, "type": "web_search_call", "status": "completed",
          "action": {"type": "search", "query": "Lisbon ferry timetable Cacilhas"}}
    r.item_done(0, ws)
    msg = r.message(1, "msg_9e3a5c7d3f4b8193a8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8",
                    ["Ferries to Cacilhas", " leave every 20 minutes.", " Saving that now."])
    fc = r.function_call(2, "fc_9e3a5c7e4a5c8193b0f2a4c6e8b0d2f4a6c8e0b2d4f6a8c0",
                         "call_Pw6eR9tY2uI5oA8sD1fG4hJk", "save_note",
                         ['{"text":"Cacilhas ferry:', ' every 20 min"}'])
    r.completed([ws, msg, fc], usage(9120, 0, 176, 96, 9296))
    return Capture(
        description="A provider-run web search, a message, then a client function call.",
        source=f"{WIRE_DOC}; server tools: {ISSUE} 'Precisely'",
        shape="OpenAI gpt-5 web_search_call, message, function_call",
        proves="web_search_call goes to server_tool_calls, not tool_calls; index counts client "
        "calls only; text and calls coexist",
        body=r.body(),
        declared_tools=["save_note"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            content="Ferries to Cacilhas leave every 20 minutes. Saving that now.",
            tool_calls=[call(0, "call_Pw6eR9tY2uI5oA8sD1fG4hJk", "save_note",
                             '{"text":"Cacilhas ferry: every 20 min"}', True)],
            server_tool_calls=[server_call(
                0, "web_search_call", "ws_9e3a5c7c2e3a8193b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6",
                None, '{"type":"search","query":"Lisbon ferry timetable Cacilhas"}',
                "completed")],
            model="gpt-5-2025-08-07",
            response_id="resp_9e3a5c7b1d2f8193a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2b4",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 9120,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 176,
                "output_tokens_details": {"reasoning_tokens": 96},
                "total_tokens": 9296,
            },
            repairs=corpus_build.repairs(),
            chunks=21,
            bytes=9155,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "Ferries to Cacilhas leave every 20 minutes. Saving that now.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Ends: incomplete, failed, error events, refusals
# --------------------------------------------------------------------------------------------


@case
def max_output_tokens_open_call() -> Capture:
    # max_output_tokens 256: the reasoning used most of it, the call is cut mid-arguments (no
    # .done, no output_item.done), then response.incomplete with incomplete_details.reason
    # "max_output_tokens".  finish length -> truncated true, the call withheld, error_code null,
    # not retryable, not a dead letter.  finish_reason is the incomplete reason verbatim.
    r = Responses("resp_4c8e0a2b6d9f8193a6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6", GPT5, 1794700708,
                  [WRITE_TOOL], reasoning=NO_SUMMARY, max_output_tokens=256)
    r.start()
    rs = r.reasoning_item(0, "rs_4c8e0a2c7e0a8193b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6a8", [])
    fc_id = "fc_4c8e0a2d8f1b8193a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0"
    r.added(1, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Gk7hJ0lZ3xC6vB9nM2qW5eRt", "name": "write_file"})
    for piece in ['{"path":"notes/q3.md",', '"content":"# Q3 review\\n\\n', "Revenue grew"]:
        r.args_delta(1, fc_id, piece)
    r.incomplete("max_output_tokens", [rs, {
        "id": fc_id, "type": "function_call", "status": "incomplete",
        "arguments": '{"path":"notes/q3.md","content":"# Q3 review\\n\\nRevenue grew',
        "call_id": "call_Gk7hJ0lZ3xC6vB9nM2qW5eRt", "name": "write_file"}],
        usage(204, 0, 256, 224, 460))
    return Capture(
        description="max_output_tokens reached with a function call still open.",
        source=f"{WIRE_DOC}; truncated calls executed as {{}}: {STRANDS}",
        shape="OpenAI gpt-5 response.incomplete (max_output_tokens), call without done events",
        proves="incomplete max_output_tokens -> finish length, truncated, call withheld with its "
        "partial arguments, never dead-lettered",
        body=r.body(),
        declared_tools=["write_file"],
        expect=assembled(
            finish="length",
            finish_reason="max_output_tokens",
            truncated=True,
            withheld=[call(0, "call_Gk7hJ0lZ3xC6vB9nM2qW5eRt", "write_file",
                           '{"path":"notes/q3.md","content":"# Q3 review\\n\\nRevenue grew',
                           False)],
            usage={
                "input_tokens": 204,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 256,
                "output_tokens_details": {"reasoning_tokens": 224},
                "total_tokens": 460,
            },
            model="gpt-5-2025-08-07",
            response_id="resp_4c8e0a2b6d9f8193a6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6",
            finish_reasons={"0": "max_output_tokens"},
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=5128,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "max_output_tokens",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


FAILED_MESSAGE = (
    "An error occurred while processing your request. You can retry your request, or contact "
    "us through our help center at help.openai.com if the error persists. Please include the "
    "request ID req_5f0c2a7e9b1d4c6e8a3f5b7d9c1e2a4b in your message."
)


@case
def failed_server_error_partial_arguments() -> Capture:
    # response.failed with error.code "server_error" after a call's first argument deltas.
    # finish error, finish_reason "failed", error_code SERVER_ERROR (error.code upper-cased),
    # retryable (server_error is transient), truncated false, the call withheld.  The failed
    # response's usage is null -> usage null (Decision 10).  error_message is the error's
    # message (Decision 9).
    r = Responses("resp_6d0f2b4c8e1a8193a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8", GPT41, 1794700809,
                  [SEARCH_TOOL])
    r.start()
    fc_id = "fc_6d0f2b4d9f2b8193b0e2a4c6d8f0b2a4c6e8d0f2b4a6c8e0"
    r.added(0, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Ns1dF4gH7jK0lZ3xC6vB9mQw", "name": "search_docs"})
    r.args_delta(0, fc_id, '{"query":')
    r.args_delta(0, fc_id, '"refund po')
    r.failed("server_error", FAILED_MESSAGE, [])
    return Capture(
        description="response.failed (server_error) after partial arguments.",
        source=f"{WIRE_DOC}; clients that raise on failed: {OPENAI_PY_3538}",
        shape="OpenAI response.failed error.code server_error, call mid-arguments",
        proves="failed -> finish error, SERVER_ERROR, retryable, not truncated, call withheld",
        body=r.body(),
        expect=assembled(
            finish="error",
            finish_reason="failed",
            error_code="SERVER_ERROR",
            error_message=FAILED_MESSAGE,
            retryable=True,
            withheld=[call(0, "call_Ns1dF4gH7jK0lZ3xC6vB9mQw", "search_docs",
                           '{"query":"refund po', False)],
            usage=None,
            model="gpt-4.1-2025-04-14",
            response_id="resp_6d0f2b4c8e1a8193a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8",
            finish_reasons={"0": "failed"},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=4025,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "failed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def error_event_then_completed() -> Capture:
    # An error event (code "rate_limit_exceeded") arrives after a complete call, and the
    # response still ends with response.completed.  The error event is kept as detail and does
    # not end the stream; it makes finish error (issue 13 'Precisely': an error event always
    # makes finish error, even after a stop reason): finish_reason stays "completed"
    # (verbatim), error_code RATE_LIMIT_EXCEEDED, retryable, the call withheld, usage from the
    # completed response (Decision 8).
    r = Responses("resp_8f2b4d6e0a3c8193a0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0", GPT41, 1794700910,
                  [WEATHER_TOOL])
    r.start()
    fc = r.function_call(0, "fc_8f2b4d6f1b4d8193b2a4c6e8d0f2a4b6c8e0d2f4a6b8c0e2",
                         "call_Ty4uI7oP0aS3dF6gH9jK2lZx", "get_weather",
                         ['{"city":"Oslo",', '"unit":"celsius"}'])
    message = "Rate limit reached for gpt-4.1 on tokens per min (TPM). Please try again in 2s."
    r.emit("error", code="rate_limit_exceeded", message=message, param=None)
    r.completed([fc], usage(77, 0, 19, 0, 96))
    return Capture(
        description="An error event between the items and response.completed.",
        source=f"{SPEC_ONLY}; error event shape: {PRISM_FIXTURE} ({WIRES}, 'Wire')",
        shape="error event (rate_limit_exceeded) then response.completed",
        proves="an error event is detail, not the end; it still makes finish error with its "
        "code, withholds the calls, keeps finish_reason completed",
        body=r.body(),
        expect=assembled(
            finish="error",
            finish_reason="completed",
            error_code="RATE_LIMIT_EXCEEDED",
            error_message=message,
            retryable=True,
            withheld=[call(0, "call_Ty4uI7oP0aS3dF6gH9jK2lZx", "get_weather",
                           '{"city":"Oslo","unit":"celsius"}', True)],
            usage={
                "input_tokens": 77,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 19,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 96,
            },
            model="gpt-4.1-2025-04-14",
            response_id="resp_8f2b4d6e0a3c8193a0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0",
            finish_reasons={"0": "completed"},
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=5147,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def error_event_then_nothing() -> Capture:
    # An error event (server_error) mid-arguments and then the body ends: no
    # response.completed, .incomplete or .failed.  Only those three end a response, so this is
    # stream_closed; the dead letter lists the call as far as it got (missing []).
    r = Responses("resp_1a3c5e7f9b2d8193a2c4e6f8b0d2a4c6e8f0b2d4a6c8e0f2", GPT41, 1794701011,
                  [WRITE_TOOL])
    r.start()
    fc_id = "fc_1a3c5e80ac3e8193b4e6a8c0d2f4b6a8c0e2d4f6b8a0c2e4"
    r.added(0, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Mq7wE0rT3yU6iO9pA2sD5fGh", "name": "write_file"})
    r.args_delta(0, fc_id, '{"path":"out/report.csv",')
    r.emit("error", code="server_error", message="The server had an error while processing "
           "your request. Sorry about that!", param=None)
    return Capture(
        description="An error event and then the end of the body, no terminal event.",
        source=f"{ISSUE} 'Precisely' (an error event is kept as detail); error event shape: "
        f"{PRISM_FIXTURE}",
        shape="error event (server_error) mid-arguments, body ends",
        proves="an error event does not end a Responses stream: no terminal event -> "
        "stream_closed",
        body=r.body(),
        expect=dead_letter("stream_closed", [
            missing(call(0, "call_Mq7wE0rT3yU6iO9pA2sD5fGh", "write_file",
                         '{"path":"out/report.csv",', False)),
        ],
            model="gpt-4.1-2025-04-14",
            response_id="resp_1a3c5e7f9b2d8193a2c4e6f8b0d2a4c6e8f0b2d4a6c8e0f2",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=2811,
            frames_after_end=0,
            detail=(
                "the body ended without response.completed, response.incomplete or response.failed "
                "(connection dropped or cut)"
            ),
            declared_tools=None,
        ),
    )


@case
def error_event_then_failed() -> Capture:
    # The usual failure shape: an error event, then response.failed carrying the same error
    # (code "invalid_prompt").  finish error, finish_reason "failed", error_code
    # INVALID_PROMPT, not retryable (invalid_prompt is not transient), no calls, and never
    # EMPTY_RESPONSE (finish is not stop).  usage null (Decision 10).
    r = Responses("resp_f1a3c5e7b9d08193a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2", GPT41, 1794701080,
                  [])
    r.start()
    message = "Invalid prompt: your prompt was flagged as potentially violating our usage policy."
    r.emit("error", code="invalid_prompt", message=message, param=None)
    r.failed("invalid_prompt", message, [])
    return Capture(
        description="An error event, then response.failed with the same error.",
        source=f"{WIRE_DOC}: response.failed usually preceded by an error event "
        f"({PRISM_FIXTURE})",
        shape="error event (invalid_prompt) then response.failed, nothing else",
        proves="error then failed -> finish error under the error's code, not retryable, not "
        "EMPTY_RESPONSE",
        body=r.body(),
        expect=assembled(
            finish="error",
            finish_reason="failed",
            error_code="INVALID_PROMPT",
            error_message=message,
            usage=None,
            model="gpt-4.1-2025-04-14",
            response_id="resp_f1a3c5e7b9d08193a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2",
            finish_reasons={"0": "failed"},
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=2604,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "failed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def incomplete_content_filter() -> Capture:
    # Text starts, then response.incomplete with incomplete_details.reason "content_filter";
    # the message item is closed with status "incomplete".  No calls.  finish content_filter ->
    # error_code CONTENT_FILTER (the reason upper-cased), not retryable, not truncated; the
    # text that arrived stays in content.
    r = Responses("resp_3c5e7a9b1d4f8193a4e6a8c0b2d4f6a8c0e2b4d6f8a0c2e4", GPT41, 1794701112,
                  [])
    r.start()
    msg = r.message(0, "msg_3c5e7a9c2e5a8193b6a8c0e2d4f6b8a0c2e4d6f8b0a2c4e6",
                    ["Here is", " how the"], status="incomplete")
    r.incomplete("content_filter", [msg], usage(38, 0, 4, 0, 42))
    return Capture(
        description="response.incomplete with reason content_filter, no calls.",
        source=f"{WIRE_DOC} (incomplete_details.reason is max_output_tokens or content_filter)",
        shape="OpenAI response.incomplete (content_filter) after two text deltas",
        proves="incomplete content_filter -> finish content_filter, CONTENT_FILTER, not "
        "retryable, never EMPTY_RESPONSE",
        body=r.body(),
        expect=assembled(
            finish="content_filter",
            finish_reason="content_filter",
            error_code="CONTENT_FILTER",
            content="Here is how the",
            model="gpt-4.1-2025-04-14",
            response_id="resp_3c5e7a9b1d4f8193a4e6a8c0b2d4f6a8c0e2b4d6f8a0c2e4",
            finish_reasons={"0": "content_filter"},
            usage={
                "input_tokens": 38,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 4,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 42,
            },
            repairs=corpus_build.repairs(),
            chunks=10,
            bytes=4577,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "content_filter",
                    "content": "Here is how the",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def refusal_content_part() -> Capture:
    # A structured-output refusal: the message's content part is {type: "refusal"}, streamed as
    # response.refusal.delta / .done; the response completes.  Decision 7: finish
    # content_filter, finish_reason "completed", error_code REFUSAL, the text in `refusal`,
    # content null, not retryable (a refusal with nothing else is under its own code).
    r = Responses("resp_5e7a9c1d3f6b8193a6a8c0e2f4b6d8a0c2e4f6b8d0a2c4e6", GPT41, 1794701213,
                  [])
    r.start()
    msg_id = "msg_5e7a9c1e4a7c8193b8c0e2a4f6d8b0c2e4a6f8d0b2c4e6a8"
    r.added(0, {"id": msg_id, "type": "message", "status": "in_progress", "content": [],
                "role": "assistant"})
    r.emit("response.content_part.added", item_id=msg_id, output_index=0, content_index=0,
           part={"type": "refusal", "refusal": ""})
    for piece in ["I'm sorry,", " I can't", " help with that."]:
        r.delta("response.refusal.delta", 0, msg_id, piece, content_index=0)
    text = "I'm sorry, I can't help with that."
    r.emit("response.refusal.done", item_id=msg_id, output_index=0, content_index=0,
           refusal=text)
    r.emit("response.content_part.done", item_id=msg_id, output_index=0, content_index=0,
           part={"type": "refusal", "refusal": text})
    msg = {"id": msg_id, "type": "message", "status": "completed",
           "content": [{"type": "refusal", "refusal": text}], "role": "assistant"}
    r.item_done(0, msg)
    r.completed([msg], usage(95, 0, 11, 0, 106))
    return Capture(
        description="A refusal content part in a completed response.",
        source=f"{WIRE_DOC} (response.refusal.delta); refusal rule: {ISSUE} 'Precisely'",
        shape="OpenAI structured output refusal (response.refusal.delta), completed",
        proves="a refusal is content_filter under REFUSAL, not stop and not EMPTY_RESPONSE",
        body=r.body(),
        expect=assembled(
            finish="content_filter",
            finish_reason="completed",
            error_code="REFUSAL",
            refusal="I'm sorry, I can't help with that.",
            reasoning=None,
            model="gpt-4.1-2025-04-14",
            response_id="resp_5e7a9c1d3f6b8193a6a8c0e2f4b6d8a0c2e4f6b8d0a2c4e6",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 95,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 11,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 106,
            },
            repairs=corpus_build.repairs(),
            chunks=11,
            bytes=4674,
            frames_after_end=0,
            error_message=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": "I'm sorry, I can't help with that.",
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# Framing
# --------------------------------------------------------------------------------------------


@case
def data_only_frames() -> Capture:
    # Behind a proxy that drops the event: lines, every frame is data only.  The type is read
    # from the JSON, never from the event name.  A text preface, then one call.
    r = Responses("resp_7a9c1e3f5b8d8193a8c0e2a4b6d8f0a2c4e6b8d0f2a4c6e8", GPT41, 1794701314,
                  [WEATHER_TOOL])
    r.start()
    msg = r.message(0, "msg_7a9c1e40a6c98193b0e2a4c6d8f0b2a4c6e8d0f2b4a6c8e0",
                    ["Checking", " Madrid."])
    fc = r.function_call(1, "fc_7a9c1e41b7da8193a2c4e6a8b0d2f4a6c8e0b2d4f6a8c0e2",
                         "call_Rt8yU1iO4pA7sD0fG3hJ6kLz", "get_weather",
                         ['{"city":"Madrid",', '"unit":"celsius"}'])
    r.completed([msg, fc], usage(70, 0, 24, 0, 94))
    return Capture(
        description="Every frame is a data: line only (no event: lines).",
        source=f"{ISSUE} 'Input' (data-only frames happen behind proxies); wires.md §1 "
        "(clients that dispatch on the event name drop them)",
        shape="proxy-stripped framing: data: lines only",
        proves="events are dispatched on the JSON type; data-only frames assemble the same",
        body=r.body(framing="data"),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            content="Checking Madrid.",
            tool_calls=[call(0, "call_Rt8yU1iO4pA7sD0fG3hJ6kLz", "get_weather",
                             '{"city":"Madrid","unit":"celsius"}', True)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_7a9c1e3f5b8d8193a8c0e2a4b6d8f0a2c4e6b8d0f2a4c6e8",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 70,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 24,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 94,
            },
            repairs=corpus_build.repairs(),
            chunks=15,
            bytes=6555,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "Checking Madrid.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def crlf_framing() -> Capture:
    # CRLF line ends on every line (event: and data: lines, and the blank separator line).  A
    # reasoning summary and a text answer.
    r = Responses("resp_9c1e3a5b7d0f8193a0e2c4a6b8d0f2e4a6c8b0d2f4e6a8c0", GPT5, 1794701415,
                  [], reasoning=SUMMARY_AUTO)
    r.start()
    rs = r.reasoning_item(0, "rs_9c1e3a5c8e1a8193b2a4c6e8d0f2b4a6c8e0d2f4b6a8c0e2", [
        ["**Translating**", "\n\n", "A short French sentence about the weather."],
    ])
    msg = r.message(1, "msg_9c1e3a5d9f2b8193a4c6e8a0d2f4b6c8e0a2d4f6b8c0e2a4",
                    ["Il fait très", " beau à Zürich."])
    r.completed([rs, msg], usage(21, 0, 40, 28, 61))
    return Capture(
        description="Every line ends with CRLF; reasoning summary then text.",
        source=f"{SPEC_ONLY}: SSE framing (CRLF line ends)",
        shape="CRLF framing, event: + data: lines, non-ASCII text",
        proves="CRLF line ends split frames like LF; reasoning and content kept apart",
        body=r.body(newline="\r\n"),
        expect=assembled(
            finish="stop",
            finish_reason="completed",
            content="Il fait très beau à Zürich.",
            reasoning="**Translating**\n\nA short French sentence about the weather.",
            model="gpt-5-2025-08-07",
            response_id="resp_9c1e3a5b7d0f8193a0e2c4a6b8d0f2e4a6c8b0d2f4e6a8c0",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 21,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 40,
                "output_tokens_details": {"reasoning_tokens": 28},
                "total_tokens": 61,
            },
            repairs=corpus_build.repairs(),
            chunks=18,
            bytes=7105,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "Il fait très beau à Zürich.",
                    "reasoning": "**Translating**\n\nA short French sentence about the weather.",
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def openrouter_done_trailer() -> Capture:
    # OpenRouter's Responses endpoint: data-only frames, and `data: [DONE]` after
    # response.completed.  The trailer is accepted (frames after the terminal event are
    # ignored, never a malformed_chunk).  The item id is OpenRouter's temporary fc_tmp_ id; the
    # call's id is still its call_id.
    r = Responses("gen-1794701516-Qw3Er5Ty7Ui9Op1As3Df", "openai/gpt-5", 1794701516,
                  [WEATHER_TOOL], reasoning=NO_SUMMARY, obfuscation=False)
    r.start()
    fc = r.function_call(0, "fc_tmp_k2j4h6g8f0d2s4a6", "call_Bx5nM8qW1eR4tY7uI0oP3aSd",
                         "get_weather", ['{"city":"Berlin","unit":', '"celsius"}'])
    r.completed([fc], usage(88, 0, 30, 16, 118))
    return Capture(
        description="OpenRouter: data-only frames and a trailing data: [DONE].",
        source=f"{ISSUE} 'Shapes added in 2026' (Trailers); fc_tmp_ item ids: "
        "https://github.com/rbb-dev/Open-WebUI-OpenRouter-pipe/pull/54 (wires.md §2)",
        shape="OpenRouter /responses: data-only, fc_tmp_ item id, data: [DONE] after completed",
        proves="[DONE] after response.completed is accepted; the call's id is call_id, never "
        "the fc_tmp_ item id",
        body=r.body(framing="data", trailer="data: [DONE]\n\n"),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Bx5nM8qW1eR4tY7uI0oP3aSd", "get_weather",
                             '{"city":"Berlin","unit":"celsius"}', True)],
            usage={
                "input_tokens": 88,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 30,
                "output_tokens_details": {"reasoning_tokens": 16},
                "total_tokens": 118,
            },
            model="openai/gpt-5",
            response_id="gen-1794701516-Qw3Er5Ty7Ui9Op1As3Df",
            finish_reasons={"0": "completed"},
            repairs=corpus_build.repairs(),
            chunks=8,
            bytes=4432,
            frames_after_end=1,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def frames_after_terminal_ignored() -> Capture:
    # After response.completed a proxy appends a keep-alive comment, a stray delta for an item
    # that never started and a half-written frame.  Frames after the wire's terminal event are
    # ignored (counted), never parsed into the record, never a malformed_chunk.
    r = Responses("resp_b3d5f7a9c1e48193a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6", GPT41, 1794701617,
                  [])
    r.start()
    msg = r.message(0, "msg_b3d5f7aad2f58193b8e0a2c4f6b8d0e2a4c6f8b0d2e4a6c8", ["Done."])
    r.completed([msg], usage(12, 0, 2, 0, 14))
    stray = dumps({"type": "response.output_text.delta", "sequence_number": 99,
                   "item_id": "msg_zzz", "output_index": 7, "content_index": 0, "delta": "x"})
    trailer = f": keep-alive\n\nevent: response.output_text.delta\ndata: {stray}\n\n" \
              'data: {"type":"response.compl\n\n'
    return Capture(
        description="Junk after response.completed: a comment, a stray delta, a torn frame.",
        source=f"{ISSUE} 'Shapes added in 2026' (Trailers: frames after a wire's terminal "
        "event are ignored)",
        shape="trailing frames after response.completed (stray delta, non-JSON frame)",
        proves="nothing after the terminal event is applied or judged malformed",
        body=r.body(trailer=trailer),
        expect=assembled(finish="stop", finish_reason="completed", content="Done.",
            model="gpt-4.1-2025-04-14",
            response_id="resp_b3d5f7a9c1e48193a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 12,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 2,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 14,
            },
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=4466,
            frames_after_end=2,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "Done.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# Shapes that broke clients
# --------------------------------------------------------------------------------------------


@case
def delta_before_output_item_added() -> Capture:
    # The first argument delta of the call arrives before its output_item.added (same
    # output_index 0).  It is kept and joined to the item once it is added; the call is
    # complete.  (The .done arguments agree with the joined deltas.)
    r = Responses("resp_d5f7a9b1c3e68193a8e0c2b4d6f8a0c2e4b6d8f0a2c4e6b8", GPT41, 1794701718,
                  [SEARCH_TOOL])
    r.start()
    fc_id = "fc_d5f7a9b2d4f78193b0a2c4e6f8b0d2a4c6e8f0b2d4a6c8e0"
    r.args_delta(0, fc_id, '{"query":')
    r.added(0, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Kd9fG2hJ5kL8zX1cV4bN7mQa", "name": "search_docs"})
    r.args_delta(0, fc_id, '"invoice ')
    r.args_delta(0, fc_id, 'export"}')
    r.args_done(0, fc_id, "search_docs", '{"query":"invoice export"}')
    fc = {"id": fc_id, "type": "function_call", "status": "completed",
          "arguments": '{"query":"invoice export"}', "call_id": "call_Kd9fG2hJ5kL8zX1cV4bN7mQa",
          "name": "search_docs"}
    r.item_done(0, fc)
    r.completed([fc], usage(66, 0, 15, 0, 81))
    return Capture(
        description="An argument delta before its output_item.added.",
        source=DELTA_FIRST + f" ({WIRES}, 'Client bugs')",
        shape="argument delta before response.output_item.added",
        proves="an early delta is kept and joined to its item; not a malformed_chunk",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Kd9fG2hJ5kL8zX1cV4bN7mQa", "search_docs",
                             '{"query":"invoice export"}', True)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_d5f7a9b1c3e68193a8e0c2b4d6f8a0c2e4b6d8f0a2c4e6b8",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 66,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 15,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 81,
            },
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=4965,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def arguments_only_in_done_event() -> Capture:
    # No argument deltas at all: the arguments come whole in
    # response.function_call_arguments.done (and again on the output_item.done item).  The
    # .done value is the final value.
    r = Responses("resp_f7a9b1c3d5e88193a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0", GPT41, 1794701819,
                  [WEATHER_TOOL])
    r.start()
    fc_id = "fc_f7a9b1c4e6f98193b2e4a6c8d0f2b4a6c8e0d2f4b6a8c0e2"
    r.added(0, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Fs2gH5jK8lZ1xC4vB7nM0qWe", "name": "get_weather"})
    r.args_done(0, fc_id, "get_weather", '{"city":"Rome","unit":"celsius"}')
    fc = {"id": fc_id, "type": "function_call", "status": "completed",
          "arguments": '{"city":"Rome","unit":"celsius"}',
          "call_id": "call_Fs2gH5jK8lZ1xC4vB7nM0qWe", "name": "get_weather"}
    r.item_done(0, fc)
    r.completed([fc], usage(73, 0, 18, 0, 91))
    return Capture(
        description="Arguments only in the .done event, no deltas.",
        source=DONE_ONLY + f" ({WIRES}, 'Client bugs')",
        shape="gateway relay: function_call_arguments.done without any delta",
        proves="the .done event's full arguments are the call's arguments",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Fs2gH5jK8lZ1xC4vB7nM0qWe", "get_weather",
                             '{"city":"Rome","unit":"celsius"}', True)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_f7a9b1c3d5e88193a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 73,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 18,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 91,
            },
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=4448,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def arguments_only_on_output_item_done() -> Capture:
    # Neither deltas nor function_call_arguments.done: the full arguments appear only on the
    # output_item.done item.  The item's full arguments are the final value.
    r = Responses("resp_a9b1c3d5e7f08193a2e4c6b8d0f2a4e6c8b0d2f4a6e8c0b2", GPT41, 1794701920,
                  [WRITE_TOOL])
    r.start()
    fc_id = "fc_a9b1c3d6f8a18193b4c6e8a0d2f4b6c8e0a2d4f6b8c0e2a4"
    r.added(0, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Wa3sD6fG9hJ2kL5zX8cV1bNm", "name": "write_file"})
    fc = {"id": fc_id, "type": "function_call", "status": "completed",
          "arguments": '{"path":"todo.txt","content":"buy milk"}',
          "call_id": "call_Wa3sD6fG9hJ2kL5zX8cV1bNm", "name": "write_file"}
    r.item_done(0, fc)
    r.completed([fc], usage(80, 0, 22, 0, 102))
    return Capture(
        description="Arguments only on the output_item.done item.",
        source=DONE_ONLY + f" ({WIRES}, 'Client bugs': arguments sent only in done events)",
        shape="gateway relay: no deltas, no .done event, arguments on output_item.done",
        proves="the item's full arguments are the call's arguments",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Wa3sD6fG9hJ2kL5zX8cV1bNm", "write_file",
                             '{"path":"todo.txt","content":"buy milk"}', True)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_a9b1c3d5e7f08193a2e4c6b8d0f2a4e6c8b0d2f4a6e8c0b2",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 80,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 22,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 102,
            },
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=4127,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def rotating_item_ids() -> Capture:
    # A compatible provider gives every event of an item a new opaque item id (added, each
    # delta, .done and output_item.done all differ); output_index stays stable.  Deltas are
    # joined by output_index, so both calls assemble.  Keyed by item_id, every delta would
    # belong to an item that never started.
    r = Responses("resp_e1f3a5b7c9d28193a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4", "grok-4-fast",
                  1794702021, [WEATHER_TOOL], obfuscation=False)
    r.start()
    r.added(0, {"id": "fc_01K5A1", "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": "call_58231707", "name": "get_weather"})
    r.args_delta(0, "fc_01K5A2", '{"city":"Cairo",')
    r.args_delta(0, "fc_01K5A3", '"unit":"celsius"}')
    r.args_done(0, "fc_01K5A4", "get_weather", '{"city":"Cairo","unit":"celsius"}')
    one = {"id": "fc_01K5A5", "type": "function_call", "status": "completed",
           "arguments": '{"city":"Cairo","unit":"celsius"}', "call_id": "call_58231707",
           "name": "get_weather"}
    r.item_done(0, one)
    r.added(1, {"id": "fc_01K5B1", "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": "call_58231708", "name": "get_weather"})
    r.args_delta(1, "fc_01K5B2", '{"city":"Lima",')
    r.args_delta(1, "fc_01K5B3", '"unit":"celsius"}')
    r.args_done(1, "fc_01K5B4", "get_weather", '{"city":"Lima","unit":"celsius"}')
    two = {"id": "fc_01K5B5", "type": "function_call", "status": "completed",
           "arguments": '{"city":"Lima","unit":"celsius"}', "call_id": "call_58231708",
           "name": "get_weather"}
    r.item_done(1, two)
    r.completed([one, two], usage(101, 0, 36, 0, 137))
    return Capture(
        description="Item ids change on every event; output_index is stable.",
        source=ROTATING,
        shape="compatible provider rotating opaque item ids, two calls",
        proves="deltas and done events are joined by output_index, never by item_id",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[
                call(0, "call_58231707", "get_weather", '{"city":"Cairo","unit":"celsius"}',
                     True),
                call(1, "call_58231708", "get_weather", '{"city":"Lima","unit":"celsius"}',
                     True),
            ],
            model="grok-4-fast",
            response_id="resp_e1f3a5b7c9d28193a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 101,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 36,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 137,
            },
            repairs=corpus_build.repairs(),
            chunks=13,
            bytes=5929,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def duplicated_sequence_numbers() -> Capture:
    # A relay lost its connection after the call's first argument delta and resumed the stream
    # from an earlier cursor (starting_after), so the events from the second text delta to the
    # first argument delta arrive twice, byte-identical, with the same sequence_numbers.  Each
    # sequence_number is applied once: the text is not doubled (Decision 2: content comes from
    # the deltas) and the re-sent output_item.added does not open a second call.
    r = Responses("resp_0b2d4f6a8c1e8193a6c8e0a2b4d6f8c0e2a4b6d8f0c2e4a6", GPT41, 1794702122,
                  [WEATHER_TOOL])
    r.start()
    msg_id = "msg_0b2d4f6b9d2f8193b8e0a2c4d6f8b0a2c4e6d8f0b2a4c6e8"
    fc_id = "fc_0b2d4f6cae308193a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0"
    r.added(0, {"id": msg_id, "type": "message", "status": "in_progress", "content": [],
                "role": "assistant"})
    r.emit("response.content_part.added", item_id=msg_id, output_index=0, content_index=0,
           part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""})
    r.delta("response.output_text.delta", 0, msg_id, "Looking up", content_index=0, logprobs=[])
    window = [
        r.delta("response.output_text.delta", 0, msg_id, " Nairobi.", content_index=0,
                logprobs=[]),
        r.emit("response.output_text.done", item_id=msg_id, output_index=0, content_index=0,
               text="Looking up Nairobi.", logprobs=[]),
    ]
    part = {"type": "output_text", "annotations": [], "logprobs": [],
            "text": "Looking up Nairobi."}
    window.append(r.emit("response.content_part.done", item_id=msg_id, output_index=0,
                         content_index=0, part=part))
    msg = {"id": msg_id, "type": "message", "status": "completed", "content": [part],
           "role": "assistant"}
    window.append(r.item_done(0, msg))
    window.append(r.added(1, {"id": fc_id, "type": "function_call", "status": "in_progress",
                              "arguments": "", "call_id": "call_Jh6kL9zX2cV5bN8mQ1wE4rTy",
                              "name": "get_weather"}))
    window.append(r.args_delta(1, fc_id, '{"city":"Nairobi",'))
    r.resend(*window)
    r.args_delta(1, fc_id, '"unit":"celsius"}')
    r.args_done(1, fc_id, "get_weather", '{"city":"Nairobi","unit":"celsius"}')
    fc = {"id": fc_id, "type": "function_call", "status": "completed",
          "arguments": '{"city":"Nairobi","unit":"celsius"}',
          "call_id": "call_Jh6kL9zX2cV5bN8mQ1wE4rTy", "name": "get_weather"}
    r.item_done(1, fc)
    r.completed([msg, fc], usage(84, 0, 27, 0, 111))
    return Capture(
        description="A window of events re-sent with the same sequence numbers.",
        source=f"{SPEC_ONLY}; every event carries a monotonic sequence_number: {WIRE_DOC}",
        shape="resumed relay stream: six events repeated with their sequence_numbers",
        proves="an event whose sequence_number was seen is applied once: no doubled text, no "
        "second call",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            content="Looking up Nairobi.",
            tool_calls=[call(0, "call_Jh6kL9zX2cV5bN8mQ1wE4rTy", "get_weather",
                             '{"city":"Nairobi","unit":"celsius"}', True)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_0b2d4f6a8c1e8193a6c8e0a2b4d6f8c0e2a4b6d8f0c2e4a6",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 84,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 27,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 111,
            },
            repairs=corpus_build.repairs(),
            chunks=15,
            bytes=8775,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "Looking up Nairobi.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def item_without_id_or_status() -> Capture:
    # A compatible server sends items without `id` and without `status`, deltas without
    # `item_id`, and no sequence_number on any event (Decision 15: events without a
    # sequence_number are never deduplicated).  Identity is call_id and name, deltas join by
    # output_index: the call assembles.
    r = Responses("resp_2d4f6a8b0c3e4a5b", "qwen3-coder-480b", 1794702223, [SEARCH_TOOL],
                  obfuscation=False, sequence=False)
    r.start()
    r.added(0, {"type": "function_call", "arguments": "", "call_id": "call_qw_4f1a9c",
                "name": "search_docs"})
    r.args_delta(0, None, '{"query":')
    r.args_delta(0, None, '"sso setup"}')
    r.args_done(0, None, "search_docs", '{"query":"sso setup"}')
    fc = {"type": "function_call", "arguments": '{"query":"sso setup"}',
          "call_id": "call_qw_4f1a9c", "name": "search_docs"}
    r.item_done(0, fc)
    r.completed([fc], usage(59, 0, 14, 0, 73))
    return Capture(
        description="Items without id or status, deltas without item_id, no sequence numbers.",
        source=f"no item id: {NO_ITEM_ID}; items without status: {NO_STATUS} ({WIRES})",
        shape="compatible server: no item id, no status, no item_id, no sequence_number",
        proves="a call needs only call_id, name and output_index; absent sequence numbers are "
        "not duplicates",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_qw_4f1a9c", "search_docs", '{"query":"sso setup"}', True)],
            model="qwen3-coder-480b",
            response_id="resp_2d4f6a8b0c3e4a5b",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 59,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 14,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 73,
            },
            repairs=corpus_build.repairs(),
            chunks=8,
            bytes=3922,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# 2026 shapes: custom tools, MCP, provider fields
# --------------------------------------------------------------------------------------------


@case
def custom_tool_call_apply_patch() -> Capture:
    # A freeform custom tool: custom_tool_call item (ctc_…, input ""), then
    # response.custom_tool_call_input.delta fragments and .done{input}.  A client call with type
    # "custom", arguments = the freeform input (the .done input is the final value), id = its
    # call_id; not JSON -> arguments_json false, and still executable (never judged as JSON).
    r = Responses("resp_4f6a8c0d2e5b8193a8e0c2a4d6f8b0c2e4a6d8f0b2c4e6a8", "gpt-5.1-2025-11-13",
                  1794702324, [{"type": "custom", "name": "apply_patch",
                                "description": "Apply a patch in the V4A diff format.",
                                "format": {"type": "text"}}], reasoning=NO_SUMMARY)
    r.start()
    ctc_id = "ctc_4f6a8c0e3f6c8193b0a2c4e6f8d0b2a4c6e8f0d2b4a6c8e0"
    call_id = "call_Ue7rT0yU3iO6pA9sD2fG5hJx"
    r.added(0, {"id": ctc_id, "type": "custom_tool_call", "status": "in_progress",
                "call_id": call_id, "input": "", "name": "apply_patch"})
    pieces = ["*** Begin Patch\n*** Update File: src/app.py\n", "@@ def main():\n",
              '-    print("hi")\n+    print("hello")\n', "*** End Patch"]
    for piece in pieces:
        r.delta("response.custom_tool_call_input.delta", 0, ctc_id, piece)
    patch = "".join(pieces)
    r.emit("response.custom_tool_call_input.done", item_id=ctc_id, output_index=0, input=patch)
    ctc = {"id": ctc_id, "type": "custom_tool_call", "status": "completed", "call_id": call_id,
           "input": patch, "name": "apply_patch"}
    r.item_done(0, ctc)
    r.completed([ctc], usage(512, 384, 47, 0, 559))
    return Capture(
        description="A custom (freeform) tool call streamed as custom_tool_call_input deltas.",
        source=CUSTOM,
        shape="OpenAI gpt-5.1 custom_tool_call apply_patch, input deltas and .done",
        proves="a custom_tool_call is a client call of type custom; its input is the arguments "
        "verbatim; non-JSON input is still executable",
        body=r.body(),
        declared_tools=["apply_patch"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(
                0, "call_Ue7rT0yU3iO6pA9sD2fG5hJx", "apply_patch",
                '*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n'
                '-    print("hi")\n+    print("hello")\n*** End Patch',
                False, type_="custom")],
            model="gpt-5.1-2025-11-13",
            response_id="resp_4f6a8c0d2e5b8193a8e0c2a4d6f8b0c2e4a6d8f0b2c4e6a8",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 512,
                "input_tokens_details": {"cached_tokens": 384},
                "output_tokens": 47,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 559,
            },
            repairs=corpus_build.repairs(),
            chunks=10,
            bytes=5227,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


MCP_TOOL = {"type": "mcp", "allowed_tools": None, "headers": None, "require_approval": "never",
            "server_description": None, "server_label": "deepwiki",
            "server_url": "https://mcp.deepwiki.com/<redacted>"}


@case
def mcp_list_tools_and_call() -> Capture:
    # A remote MCP server run by the provider: mcp_list_tools (with its in_progress/completed
    # events), an mcp_call (response.mcp_call_arguments.delta/.done, mcp_call.in_progress and
    # .completed), then the answer text.  Both go to server_tool_calls in output order
    # (Decision 1: index 0 and 1; mcp_list_tools has no name or status and arguments "";
    # the mcp_call's arguments are the .done value), never to tool_calls.  The mcp tool's
    # name is not among the declared tools and that is no unknown_tool (Decision 6).  No
    # client call -> stop.
    r = Responses("resp_6a8c0e2f4b7d8193a0c2e4f6b8d0a2c4e6f8b0d2a4c6e8f0", GPT5, 1794702425,
                  [MCP_TOOL, WEATHER_TOOL], reasoning=NO_SUMMARY)
    r.start()
    mcpl_id = "mcpl_6a8c0e30c5e88193b2e4a6c8d0f2b4a6c8e0d2f4b6a8c0e2"
    r.added(0, {"id": mcpl_id, "type": "mcp_list_tools", "server_label": "deepwiki",
                "tools": []})
    r.emit("response.mcp_list_tools.in_progress", item_id=mcpl_id, output_index=0)
    r.emit("response.mcp_list_tools.completed", item_id=mcpl_id, output_index=0)
    listed = {"id": mcpl_id, "type": "mcp_list_tools", "server_label": "deepwiki", "tools": [
        {"annotations": {"read_only": False}, "description": "Ask any question about a repo",
         "input_schema": {"type": "object", "properties": {"repoName": {"type": "string"},
                                                           "question": {"type": "string"}},
                          "required": ["repoName", "question"]},
         "name": "ask_question"}]}
    r.item_done(0, listed)
    mcp_id = "mcp_6a8c0e31d6f98193a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2b4"
    r.added(1, {"id": mcp_id, "type": "mcp_call", "status": "in_progress",
                "approval_request_id": None, "arguments": "", "error": None,
                "name": "ask_question", "output": None, "server_label": "deepwiki"})
    r.emit("response.mcp_call.in_progress", item_id=mcp_id, output_index=1)
    for piece in ['{"repoName":"modelcontextprotocol/python-sdk",', '"question":"transports?"}']:
        r.delta("response.mcp_call_arguments.delta", 1, mcp_id, piece)
    args = '{"repoName":"modelcontextprotocol/python-sdk","question":"transports?"}'
    r.emit("response.mcp_call_arguments.done", item_id=mcp_id, output_index=1, arguments=args)
    r.emit("response.mcp_call.completed", item_id=mcp_id, output_index=1)
    mcp = {"id": mcp_id, "type": "mcp_call", "status": "completed", "approval_request_id": None,
           "arguments": args, "error": None, "name": "ask_question",
           "output": "stdio, SSE and Streamable HTTP.", "server_label": "deepwiki"}
    r.item_done(1, mcp)
    msg = r.message(2, "msg_6a8c0e32e7a08193b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6",
                    ["It supports stdio,", " SSE and Streamable HTTP."])
    r.completed([listed, mcp, msg], usage(1450, 0, 96, 32, 1546))
    return Capture(
        description="Provider-run MCP: list tools, one mcp_call, then the answer.",
        source=MCP,
        shape="OpenAI gpt-5 remote MCP: mcp_list_tools, mcp_call with argument deltas, message",
        proves="mcp_list_tools and mcp_call go to server_tool_calls with their type, never to "
        "tool_calls; declared tools are not checked against them",
        body=r.body(),
        declared_tools=["get_weather"],
        expect=assembled(
            finish="stop",
            finish_reason="completed",
            content="It supports stdio, SSE and Streamable HTTP.",
            server_tool_calls=[
                server_call(0, "mcp_list_tools",
                            "mcpl_6a8c0e30c5e88193b2e4a6c8d0f2b4a6c8e0d2f4b6a8c0e2",
                            None, "", None),
                server_call(1, "mcp_call", "mcp_6a8c0e31d6f98193a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2b4",
                            "ask_question",
                            '{"repoName":"modelcontextprotocol/python-sdk",'
                            '"question":"transports?"}',
                            "completed"),
            ],
            model="gpt-5-2025-08-07",
            response_id="resp_6a8c0e2f4b7d8193a0c2e4f6b8d0a2c4e6f8b0d2a4c6e8f0",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 1450,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 96,
                "output_tokens_details": {"reasoning_tokens": 32},
                "total_tokens": 1546,
            },
            repairs=corpus_build.repairs(),
            chunks=21,
            bytes=9894,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": "It supports stdio, SSE and Streamable HTTP.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def mcp_approval_request_only() -> Capture:
    # require_approval: the response lists the MCP tools and ends with an mcp_approval_request
    # item; no text, no client call.  Both items go to server_tool_calls.  Decision 5: a
    # provider-run call counts as a call for EMPTY_RESPONSE, so this is finish stop with no
    # error code, not retryable.
    tool = {**MCP_TOOL, "require_approval": "always"}
    r = Responses("resp_8c0e2a4b6d9f8193a2e4a6c8b0d2f4e6a8c0b2d4f6e8a0c2", GPT5, 1794702526,
                  [tool], reasoning=NO_SUMMARY)
    r.start()
    mcpl_id = "mcpl_8c0e2a4c7e0a8193b4a6c8e0d2f4b6a8c0e2d4f6b8a0c2e4"
    listed = {"id": mcpl_id, "type": "mcp_list_tools", "server_label": "deepwiki", "tools": [
        {"annotations": {"read_only": False}, "description": "Ask any question about a repo",
         "input_schema": {"type": "object", "properties": {"repoName": {"type": "string"},
                                                           "question": {"type": "string"}},
                          "required": ["repoName", "question"]},
         "name": "ask_question"}]}
    r.added(0, {**listed, "tools": []})
    r.emit("response.mcp_list_tools.in_progress", item_id=mcpl_id, output_index=0)
    r.emit("response.mcp_list_tools.completed", item_id=mcpl_id, output_index=0)
    r.item_done(0, listed)
    mcpr_id = "mcpr_8c0e2a4d8f1b8193a6c8e0a2d4f6b8c0e2a4d6f8b0c2e4a6"
    approval = {"id": mcpr_id, "type": "mcp_approval_request",
                "arguments": '{"repoName":"openai/codex","question":"sandbox modes?"}',
                "name": "ask_question", "server_label": "deepwiki"}
    r.added(1, approval)
    r.item_done(1, approval)
    r.completed([listed, approval], usage(1310, 0, 58, 32, 1368))
    return Capture(
        description="An MCP approval request and nothing else.",
        source=MCP,
        shape="OpenAI remote MCP with require_approval: mcp_list_tools, mcp_approval_request",
        proves="mcp_approval_request goes to server_tool_calls; a response that only asks for "
        "approval is not an EMPTY_RESPONSE",
        body=r.body(),
        expect=assembled(
            finish="stop",
            finish_reason="completed",
            server_tool_calls=[
                server_call(0, "mcp_list_tools",
                            "mcpl_8c0e2a4c7e0a8193b4a6c8e0d2f4b6a8c0e2d4f6b8a0c2e4",
                            None, "", None),
                server_call(1, "mcp_approval_request",
                            "mcpr_8c0e2a4d8f1b8193a6c8e0a2d4f6b8c0e2a4d6f8b0c2e4a6",
                            "ask_question",
                            '{"repoName":"openai/codex","question":"sandbox modes?"}', None),
            ],
            model="gpt-5-2025-08-07",
            response_id="resp_8c0e2a4b6d9f8193a2e4a6c8b0d2f4e6a8c0b2d4f6e8a0c2",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 1310,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 58,
                "output_tokens_details": {"reasoning_tokens": 32},
                "total_tokens": 1368,
            },
            repairs=corpus_build.repairs(),
            chunks=9,
            bytes=5404,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def namespace_caller_async_fields() -> Capture:
    # Two function calls carrying the 2026 item fields: the first has namespace "crm",
    # caller {type:"program", caller_id} and async true; the second only caller
    # {type:"direct"}.  Each call keeps exactly its own fields, verbatim, in provider_fields
    # (Decision 11); the fields do not change the identity (call_id, name).
    r = Responses("resp_ae0c2e4f6a8b8193a4c6e8a0b2d4f6c8e0a2b4d6f8c0e2a4", "gpt-5.1-2025-11-13",
                  1794702627, [{**SEARCH_TOOL, "name": "find_contact"}, WEATHER_TOOL],
                  reasoning=NO_SUMMARY)
    r.start()
    program = {"type": "program", "caller_id": "ci_ae0c2e50b7c98193b6e8a0c2d4f6b8a0c2e4d6f8"}
    one = r.function_call(0, "fc_ae0c2e51c8da8193a8a0c2e4f6b8d0a2c4e6f8b0d2a4c6e8",
                          "call_Ci9oP2aS5dF8gH1jK4lZ7xCv", "find_contact",
                          ['{"query":', '"Ana Ribeiro"}'],
                          extra={"namespace": "crm", "caller": program, "async": True})
    two = r.function_call(1, "fc_ae0c2e52d9eb8193b0c2e4a6d8f0b2c4e6a8d0f2b4c6e8a0",
                          "call_Dj0pA3sD6fG9hJ2kL5zX8cVb", "get_weather",
                          ['{"city":"Porto",', '"unit":"celsius"}'],
                          extra={"caller": {"type": "direct"}})
    r.completed([one, two], usage(640, 512, 58, 0, 698))
    return Capture(
        description="Function calls carrying namespace, caller and async.",
        source=FIELDS,
        shape="OpenAI gpt-5.1 function_call items with namespace/caller/async",
        proves="namespace, caller and async are kept verbatim per call in provider_fields; a "
        "call without them has only its own",
        body=r.body(),
        declared_tools=["find_contact", "get_weather"],
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[
                call(0, "call_Ci9oP2aS5dF8gH1jK4lZ7xCv", "find_contact",
                     '{"query":"Ana Ribeiro"}', True,
                     provider_fields={
                         "namespace": "crm",
                         "caller": {"type": "program",
                                    "caller_id": "ci_ae0c2e50b7c98193b6e8a0c2d4f6b8a0c2e4d6f8"},
                         "async": True,
                     }),
                call(1, "call_Dj0pA3sD6fG9hJ2kL5zX8cVb", "get_weather",
                     '{"city":"Porto","unit":"celsius"}', True,
                     provider_fields={"caller": {"type": "direct"}}),
            ],
            model="gpt-5.1-2025-11-13",
            response_id="resp_ae0c2e4f6a8b8193a4c6e8a0b2d4f6c8e0a2b4d6f8c0e2a4",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 640,
                "input_tokens_details": {"cached_tokens": 512},
                "output_tokens": 58,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 698,
            },
            repairs=corpus_build.repairs(),
            chunks=13,
            bytes=7684,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# Dead letters and verbatim arguments
# --------------------------------------------------------------------------------------------


@case
def call_without_call_id() -> Capture:
    # A compatible server sends call_id "" (the item id fc_… is there).  The item id is never
    # used as the call's id, and this wire does not synthesize one by itself (Decision 12:
    # only the opt-in synthesize_ids, off here, would) -> missing_identity, the call with id
    # null and missing ["id"].
    r = Responses("resp_c2e4a6b8d0f1a3c5", "llama-4-maverick", 1794702728, [WEATHER_TOOL],
                  obfuscation=False)
    r.start()
    fc = r.function_call(0, "fc_c2e4a6b8d0f1a3c5_0", "", "get_weather",
                         ['{"city":"Quito","unit":"celsius"}'])
    r.completed([fc], usage(71, 0, 16, 0, 87))
    return Capture(
        description="A function call whose call_id is empty (synthesis off).",
        source=f"{SPEC_ONLY}; call_id vs item id: {IDENTITY}",
        shape="compatible server: call_id \"\", item id present",
        proves="the fc_ item id never stands in for call_id and this wire synthesizes no id by "
        "itself: missing_identity",
        body=r.body(),
        expect=dead_letter("missing_identity", [
            missing(call(0, None, "get_weather", '{"city":"Quito","unit":"celsius"}', True),
                    "id"),
        ],
            model="llama-4-maverick",
            response_id="resp_c2e4a6b8d0f1a3c5",
            finish_reason="completed",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 71,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 16,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 87,
            },
            repairs=corpus_build.repairs(empty_identity_ignored=2),
            chunks=7,
            bytes=4368,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id",
            declared_tools=None,
        ),
    )


#: The response id that seeds the synthesized ids of ``call_ids_synthesized`` (offline: no
#: request id, so the response id; the spec's formula, ``corpus_build.synthesized_id``).
SYNTHESIZED_SEED = "resp_d3f5b7c9e1a2b4d6"


@case
def call_ids_synthesized() -> Capture:
    # The server of call_without_call_id, two calls, run with synthesize_ids on (the operator's
    # opt-in, which applies to every wire: Decision 12).  Call 0's items say call_id "", call
    # 1's leave the key out; neither item id (fc_…) stands in.  Each call ends without an id,
    # so each gets the id seeded by the response id and its ordinal:
    #   "call_tw_" + sha256("toolwire/call-id/resp_d3f5b7c9e1a2b4d6/0/{0,1}")[:24],
    # distinct per call, the same on every replay, each flagged id_synthesized; then the calls
    # are executable: completed -> finish tool_calls.  Repairs: ids_synthesized 2; call 0's ""
    # is offered twice (output_item.added, and output_item.done while it still has no id) ->
    # empty_identity_ignored 2; a key never sent is not counted.
    r = Responses(SYNTHESIZED_SEED, "llama-4-maverick", 1794702731, [WEATHER_TOOL],
                  obfuscation=False)
    r.start()
    one = r.function_call(0, "fc_d3f5b7c9e1a2b4d6_0", "", "get_weather",
                          ['{"city":"Quito",', '"unit":"celsius"}'])
    two = r.function_call(1, "fc_d3f5b7c9e1a2b4d6_1", None, "get_weather",
                          ['{"city":"Lima","unit":"celsius"}'])
    r.completed([one, two], usage(74, 0, 31, 0, 105))
    return Capture(
        description="Two function calls without a call_id (\"\" and absent), synthesis on.",
        source=f"{SPEC_ONLY}; call_id vs item id: {IDENTITY}",
        shape="compatible server: call_id \"\" then no call_id, item ids present "
        "(synthesize_ids on)",
        proves="with synthesis on, each call without a call_id gets the id seeded by the "
        "response id and its ordinal (distinct, deterministic), flagged id_synthesized; the "
        "fc_ item id never stands in",
        body=r.body(),
        synthesize_ids=True,
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[
                call(0, corpus_build.synthesized_id(SYNTHESIZED_SEED, 0, 0), "get_weather",
                     '{"city":"Quito","unit":"celsius"}', True, id_synthesized=True),
                call(1, corpus_build.synthesized_id(SYNTHESIZED_SEED, 0, 1), "get_weather",
                     '{"city":"Lima","unit":"celsius"}', True, id_synthesized=True),
            ],
            usage=usage(74, 0, 31, 0, 105),
            repairs=corpus_build.repairs(empty_identity_ignored=2, ids_synthesized=2),
            model="llama-4-maverick",
            response_id="resp_d3f5b7c9e1a2b4d6",
            finish_reasons={"0": "completed"},
            chunks=12,
            bytes=5688,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def arguments_not_json() -> Capture:
    # strict off: the model's arguments are not valid JSON (a trailing brace missing).  The
    # call is still emitted, its arguments verbatim, arguments_json false.
    r = Responses("resp_e4a6c8d0f2b38193a6e8c0a2d4b6f8e0c2a4d6b8f0e2c4a6", GPT41, 1794702829,
                  [{**WEATHER_TOOL, "strict": False}])
    r.start()
    fc = r.function_call(0, "fc_e4a6c8d1a3c48193b8a0c2e4f6d8b0a2c4e6f8d0b2a4c6e8",
                         "call_Ek1aS4dF7gH0jK3lZ6xC9vBn", "get_weather",
                         ['{"city":"Seoul",', '"unit":"celsius"'])
    r.completed([fc], usage(68, 0, 14, 0, 82))
    return Capture(
        description="Arguments that are not valid JSON, response completed.",
        source=f"{SPEC_ONLY} (arguments that are not valid JSON are kept verbatim)",
        shape="function_call with a missing closing brace, strict false",
        proves="invalid JSON arguments are emitted verbatim with arguments_json false",
        body=r.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="completed",
            tool_calls=[call(0, "call_Ek1aS4dF7gH0jK3lZ6xC9vBn", "get_weather",
                             '{"city":"Seoul","unit":"celsius"', False)],
            model="gpt-4.1-2025-04-14",
            response_id="resp_e4a6c8d0f2b38193a6e8c0a2d4b6f8e0c2a4d6b8f0e2c4a6",
            finish_reasons={"0": "completed"},
            usage={
                "input_tokens": 68,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 14,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 82,
            },
            repairs=corpus_build.repairs(),
            chunks=8,
            bytes=4959,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "completed",
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
    # A proxy injects a plain-text data frame mid-stream (an upstream timeout notice).  An
    # unparseable frame -> malformed_chunk; the dead letter lists the call as far as it got.
    r = Responses("resp_a6c8e0f2b4d58193a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8", GPT41, 1794702930,
                  [WEATHER_TOOL])
    r.start()
    fc_id = "fc_a6c8e0f3c5e68193b0e2a4c6f8d0b2e4a6c8f0d2b4e6a8c0"
    r.added(0, {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_Fl2sD5fG8hJ1kL4zX7cV0bNq", "name": "get_weather"})
    r.args_delta(0, fc_id, '{"city":"Hanoi",')
    body = r.body() + b"event: response.function_call_arguments.delta\n" \
        b"data: upstream request timeout\n\n"
    return Capture(
        description="A non-JSON data frame in the middle of a call.",
        source=f"{SPEC_ONLY} (unparseable frames -> malformed_chunk)",
        shape="proxy-injected plain-text frame mid-arguments",
        proves="an unparseable frame before the terminal event is a malformed_chunk",
        body=body,
        expect=dead_letter("malformed_chunk", [
            missing(call(0, "call_Fl2sD5fG8hJ1kL4zX7cV0bNq", "get_weather",
                         '{"city":"Hanoi",', False)),
        ],
            model="gpt-4.1-2025-04-14",
            response_id="resp_a6c8e0f2b4d58193a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=2742,
            frames_after_end=0,
            declared_tools=None,
        ),
        unstated=corpus_build.PARSER_DETAIL,
    )


@case
def delta_for_item_never_added() -> Capture:
    # One call completes at output_index 0; a delta for output_index 1 arrives, and no item is
    # ever added at output_index 1 before response.completed.  A delta for an item that never
    # started and never starts -> malformed_chunk.  The dead letter lists the one real call.
    r = Responses("resp_c8e0a2b4d6f78193a0e2c4b6d8f0a2e4c6b8d0f2a4e6c8b0", GPT41, 1794703031,
                  [WEATHER_TOOL])
    r.start()
    fc = r.function_call(0, "fc_c8e0a2b5e7a88193b2a4c6e8d0f2b4a6c8e0d2f4b6a8c0e2",
                         "call_Gm3dF6gH9jK2lZ5xC8vB1nMw", "get_weather",
                         ['{"city":"Lagos","unit":"celsius"}'])
    r.args_delta(1, "fc_c8e0a2b6f8b98193a4c6e8a0d2f4b6c8e0a2d4f6b8c0e2a4", '{"city":"Accra"')
    r.completed([fc], usage(90, 0, 25, 0, 115))
    return Capture(
        description="A delta for an output_index whose item never arrives.",
        source=f"{SPEC_ONLY} (a delta for an item that never started and never starts)",
        shape="orphan function_call_arguments.delta (output_index 1 never added)",
        proves="an orphan delta is kept until the end, then the response is a malformed_chunk",
        body=r.body(),
        expect=dead_letter("malformed_chunk", [
            missing(call(0, "call_Gm3dF6gH9jK2lZ5xC8vB1nMw", "get_weather",
                         '{"city":"Lagos","unit":"celsius"}', True)),
        ],
            model="gpt-4.1-2025-04-14",
            response_id="resp_c8e0a2b4d6f78193a0e2c4b6d8f0a2e4c6b8d0f2a4e6c8b0",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=8,
            bytes=4980,
            frames_after_end=0,
            detail=(
                "a delta for output_index 1, whose item never started: "
                "{\"type\":\"response.completed\",\"sequence_number\":7,\"response\":{\"id\":\"resp"
                "_c8e0a2b4d6f78193a0e2c4b6d8f0a2e4c6b8d0f2a4e6c8b0\",\"object\":\"response\",\"crea"
                "ted_at\":1794703031,\"status\":\"completed\",\"background\":…"
            ),
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def incomplete(capture: Capture) -> list[str]:
    """What ``capture.expect`` leaves unsaid that every capture must say (empty: nothing)."""
    return [
        *corpus_build.unstated(capture.expect, ordinals=("tool_calls", "withheld_tool_calls")),
        *corpus_build.unfinished(capture.expect),
    ]


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the rules")


INTRO = """\
# OpenAI Responses corpus

Raw SSE bodies of streamed OpenAI Responses API calls (`NAME.sse`, byte-exact) and the record
the assembler must produce for each (`NAME.json`: `options` to run it with, `options.wire` =
`openai-responses`; `expect` = the keys of the record that must be equal). Generated by
`_make.py`, which documents each case; regenerate with
`.venv/bin/python tests/core/corpus_wires/openai-responses/_make.py`. Every expected value was
worked out by hand from the rules of issue 13 ("Every streaming wire, one record"), not by
running the assembler. Shapes come from `shared/reference/wires.md` §2 and
`shared/reference/shapes-2026.md`; each capture's `source` says which.

Every assembled expectation states `outcome`, `wire`, `finish`, `finish_reason`, `truncated`,
`error_code`, `retryable`, `content`, `tool_calls` and `withheld_tool_calls` (plus `reasoning`,
`refusal`, `usage`, `server_tool_calls`, `error_message` where the capture is about them);
every dead letter states `outcome`, `wire`, `reason` and `calls` (each with `missing`).
"""

DECISIONS = """\
## Decisions

Where issue 13 leaves a value open, these captures assume the following. The wire's builder
should implement them or change the captures that rest on them (named in brackets).

1. **`server_tool_calls` entries** are `{index, type, id, name, arguments, status}` (the one
   shape of every wire), in the order their `output_item.added` arrived: `index` their
   ordinal among the server calls (0-based), `type` the item type verbatim
   (`web_search_call`, `mcp_call`, `mcp_list_tools`, `mcp_approval_request`,
   `file_search_call`, `code_interpreter_call`, …), `id` the item id, `name` the item's
   `name` or null, `arguments` always a string: the item's arguments string (after
   `response.mcp_call_arguments.done` or the `output_item.done` item), else the item's
   `action` object as compact JSON (a web search's `{"type":"search","query":…}`), else `""`
   when the item type has neither, `status` the latest item's `status` or null when the item
   has none. The latest item seen for an `output_index` (`output_item.done` over `added`)
   supplies the fields. [web_search_then_client_call, mcp_list_tools_and_call,
   mcp_approval_request_only]
2. **Text comes from deltas.** `content`, `reasoning` and `refusal` are the concatenation of
   `response.output_text.delta`, `response.reasoning_summary_text.delta` and
   `response.refusal.delta` (after de-duplication by `sequence_number`); the matching
   `.done` events and the `output_item.done` item are not read for text. (Every capture's
   `.done` text equals its joined, de-duplicated deltas, so only the duplicated deltas of
   [duplicated_sequence_numbers] tell the two readings apart.)
3. **The terminal response's `output` list is not read** for calls or text: calls come from the
   item events only. From `response.completed|incomplete|failed` the assembler reads `status`,
   `incomplete_details.reason`, `error` and `usage`. (Every capture's terminal `output` agrees
   with its events.) [interleaved_argument_deltas]
4. **`completed` → `tool_calls` only with a client call** (`function_call` or
   `custom_tool_call`); server tool calls alone give `stop`. [mcp_list_tools_and_call,
   mcp_approval_request_only]
5. **A server tool call counts as "a call" for `EMPTY_RESPONSE`**: a completed response whose
   only output is provider-run items (e.g. an `mcp_approval_request`) is `stop` with
   `error_code` null, not retryable. [mcp_approval_request_only]
6. **`declared_tools` checks client calls only**; server tool call names are never checked
   (`unknown_tool` never comes from them). [mcp_list_tools_and_call]
7. **A refusal content part** (`response.refusal.delta`) in a completed response gives
   `finish` `content_filter`, `finish_reason` `completed` (verbatim), `error_code` `REFUSAL`,
   the text in `refusal`, not retryable; calls, if any, would be withheld.
   [refusal_content_part]
8. **An `error` event followed by a terminal event**: the terminal event ends the response and
   sets `finish_reason` (verbatim) and `usage`; the error event still makes `finish` `error`,
   `error_code` its `code` upper-cased, `error_message` its `message`, `retryable` per its code
   (`server_error`, `rate_limit_exceeded`), calls withheld, `truncated` false.
   [error_event_then_completed]
9. **`error_message`** of a `response.failed` is `response.error.message`.
   [failed_server_error_partial_arguments]
10. **`usage`** is the terminal response's `usage` object verbatim; a failed response's
    `usage: null` gives `usage` null (earlier events carry `usage: null` only).
    [failed_server_error_partial_arguments]
11. **`provider_fields`** of a Responses call are the item's `namespace`, `caller` and `async`
    keys that are present and not null, verbatim (from `output_item.added`, replaced by the
    `output_item.done` item's when it has them); a call with none has no `provider_fields`
    key. Other item keys (`status`, the item `id`) are not provider fields.
    [namespace_caller_async_fields]
12. **No id synthesis by this wire itself** (unlike Gemini, whose ids it always synthesizes):
    a Responses call with an empty or absent `call_id` is `missing_identity` with `id` null,
    and the item id (`fc_…`) never stands in for it. Only the opt-in `Options.synthesize_ids`
    (the Chat Completions 2026 rule, which applies to every wire) makes one: with it, every
    call that ends without an id (`call_id` `""` or absent) gets `"call_tw_" +
    sha256("toolwire/call-id/{seed}/0/{index}")[:24]`, seeded offline by the response id
    (the only values of the corpus computed: a sha256 is not worked out by hand), flagged
    `id_synthesized`.
    [call_without_call_id, call_ids_synthesized]
13. **`wire` is in dead letters too** (`"openai-responses"`), as in assembled records.
14. **A repeated `sequence_number`**: the first event with that number is applied, every later
    one is dropped whatever it carries. [duplicated_sequence_numbers]
15. **Events without `sequence_number`** (compatible servers) are never treated as duplicates.
    [item_without_id_or_status]
16. **`arguments_json` of a custom call** is computed as for any call (false for non-JSON
    freeform input) and never withholds it; the corpus uses non-JSON input only.
    [custom_tool_call_apply_patch]
17. **A delta before its `output_item.added`** is buffered by `output_index` until the end of
    the body; if no item is added at that index by the terminal event, the response is a
    `malformed_chunk` dead letter whose `calls` are the calls that did start.
    [delta_before_output_item_added, delta_for_item_never_added]
18. **Counters are the builder's**: `chunks`, `bytes` and `repairs` (the Chat Completions repair
    counters) were left to the wire's builder, and trailing frames after the terminal event to
    whatever counter it chose (`frames_after_end`); they were not asserted until every key of
    the record was required, and are now stated as the builder gives them.
    [frames_after_terminal_ignored, openrouter_done_trailer]
19. **Dead-letter `calls`** for `stream_closed` and `malformed_chunk` are the client calls as far
    as they were assembled when the body ended or broke, in index order, each with `missing`.
    [error_event_then_nothing, non_json_frame]
"""

CHANGED = """\
### Expectations changed by the wire's builder

The corpus was written before the wire; these expectations were changed (by hand, in
`_make.py`) where a rule of issue 13 or of the shared record forced it:

- **Server calls are one shape on every wire** (`{index, type, id, name, arguments, status}`,
  `arguments` always a string): every `server_tool_calls` entry gained its `index`, and the
  `arguments` that were null became strings — `web_search_call` the done item's `action` as
  compact JSON (`{"type":"search","query":"Lisbon ferry timetable Cacilhas"}`), `mcp_list_tools`
  `""` (Decision 1). [web_search_then_client_call, mcp_list_tools_and_call,
  mcp_approval_request_only]
- **Id synthesis**: the capture ran with `synthesize_ids` on and expected no synthesis
  ("Gemini only"). The issue builds on the Chat Completions 2026 id synthesis, an opt-in that
  the decision applies to every wire; nothing in issue 13 limits it to Gemini (Gemini only
  *always* synthesizes). The capture now runs with synthesis off, and still proves that the
  `fc_` item id never stands in for `call_id` (Decision 12). [call_without_call_id]
- **Kept, not yet met by the neutral decision**: Decision 5 rests on the issue ("no text,
  reasoning or call": a provider-run call is a call) and on sense (a response that asks the
  client for an MCP approval is not worth a retry); `decide` counts only client calls for
  `EMPTY_RESPONSE`, so [mcp_approval_request_only] fails until it also looks at the server
  calls (the corpus test marks it as an expected failure, strict).
"""

NOT_COVERED = """\
## Not covered here

- A `call_id` that changes between the stream and `response.completed` (vllm #47916) or
  OpenRouter `fc_tmp_` ids that become `call_` ids: the rules do not say which value wins, and
  Decision 3 makes the terminal `output` unread; the captures keep ids consistent.
- `tool_search_call{execution:"client"}`: whether a client-executed tool search is a client
  call is not stated by the rules.
- An `error` event and a `response.failed` whose codes differ: which one names `error_code`
  is open; [error_event_then_failed] uses the same code in both.
- `file_search_call` and `code_interpreter_call` items: Decision 1 covers them, but no capture
  carries one (web_search_call and the MCP items stand for the provider-run kind).
- `response.reasoning_text.delta` (raw reasoning of open-weight models): only summaries are
  named for `reasoning`.
"""


def readme(captures: list[Capture]) -> str:
    lines = [INTRO + "\n" + corpus_build.EVERY_KEY.rstrip("\n"), "",
             *corpus_build.capture_table(captures)]
    return "\n".join(lines) + "\n\n" + DECISIONS + "\n" + CHANGED + "\n" + NOT_COVERED


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures))


if __name__ == "__main__":
    main()
