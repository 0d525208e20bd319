"""Generate the streamed tool-call corpus: ``NAME.sse`` bodies and ``NAME.json`` expectations.

Run from anywhere::

    python tests/core/corpus/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
streamed chat completion (Server-Sent Events, written byte-exact) and the subset of the
assembler's record that it must produce.  The shapes come from
``shared/reference/provider-quirks.md`` (beside the repository); the comment on each case
names the provider and the public report it reproduces.

Every expected value is written out by hand from the assembler spec (never computed by running
``toolwire``): the expectations are literals, not derived from the bodies.  The ``repairs``
counts are explained in the comment next to them, per entry and per field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

REPAIR_KEYS = (
    "empty_identity_ignored",
    "null_identity_ignored",
    "non_string_identity_ignored",
    "identity_repeated",
    "identity_conflicts",
    "index_fallbacks",
    "index_reuse_splits",
)

DONE = "data: [DONE]\n\n"


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


@dataclass
class Capture:
    """One corpus entry: the body to feed the assembler and what the record must contain."""

    description: str
    source: str
    shape: str
    proves: str
    body: bytes
    expect: dict[str, Any]
    declared_tools: list[str] | None = None
    strict: bool = False
    name: str = ""

    def expectation(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "source": self.source,
            "options": {"declared_tools": self.declared_tools, "strict": self.strict},
            "expect": self.expect,
        }


@dataclass
class Stream:
    """The envelope every chunk of one response shares (id, created, model, ...)."""

    id: str
    model: str
    created: int
    fingerprint: str | None = None

    def chunk(self, *choices: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """A ``chat.completion.chunk``; extra keyword fields (``usage=...``) go after choices."""
        payload: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        if self.fingerprint is not None:
            payload["system_fingerprint"] = self.fingerprint
        payload["choices"] = list(choices)
        payload.update(fields)
        return payload


def choice(delta: dict[str, Any], finish: Any = None, index: int = 0) -> dict[str, Any]:
    """A choice as DeepSeek/OpenAI send it: index, delta, logprobs, finish_reason."""
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}


def ollama_choice(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
    """Ollama's OpenAI-compatible choice: no logprobs key."""
    return {"index": 0, "delta": delta, "finish_reason": finish}


def opening(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    """The standard first delta of a call: index, id, type, function.name, function.arguments."""
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def more(index: int, arguments: str) -> dict[str, Any]:
    """The standard continuation delta: index and an arguments fragment only."""
    return {"index": index, "function": {"arguments": arguments}}


def dumps(payload: Any, *, ascii_only: bool = False) -> str:
    """Compact JSON as providers send it (non-ASCII kept raw unless ``ascii_only``)."""
    return json.dumps(payload, ensure_ascii=ascii_only, separators=(",", ":"))


def event(payload: Any) -> str:
    """One ``data: ...`` event with LF framing; a ``str`` payload is sent verbatim."""
    text = payload if isinstance(payload, str) else dumps(payload)
    return f"data: {text}\n\n"


def sse(*payloads: Any, done: bool = True) -> bytes:
    """A well-framed body: one event per payload, then ``data: [DONE]`` unless ``done=False``."""
    body = "".join(event(p) for p in payloads)
    if done:
        body += DONE
    return body.encode("utf-8")


def repairs(**counts: int) -> dict[str, int]:
    """The full repairs dict: every key present, the named ones set, the rest zero."""
    unknown = set(counts) - set(REPAIR_KEYS)
    if unknown:
        raise ValueError(f"unknown repair keys: {sorted(unknown)}")
    return {key: counts.get(key, 0) for key in REPAIR_KEYS}


def call(
    choice_index: int,
    index: int,
    call_id: str | None,
    name: str | None,
    arguments: str,
    arguments_json: bool,
) -> dict[str, Any]:
    """An expected call object of the record."""
    return {
        "choice": choice_index,
        "index": index,
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "arguments_json": arguments_json,
    }


def missing(entry: dict[str, Any], *fields: str) -> dict[str, Any]:
    """An expected call object of a missing_identity dead letter."""
    return {**entry, "missing": list(fields)}


def assembled(
    *,
    finish_reason: str | None,
    tool_calls: list[dict[str, Any]] | None = None,
    withheld: list[dict[str, Any]] | None = None,
    content: str | None = None,
    truncated: bool = False,
    error_code: str | None = None,
    retryable: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """The mandatory keys of an assembled record, plus any extra keys to check."""
    return {
        "outcome": "assembled",
        "finish_reason": finish_reason,
        "truncated": truncated,
        "error_code": error_code,
        "retryable": retryable,
        "tool_calls": tool_calls or [],
        "withheld_tool_calls": withheld or [],
        "content": content,
        **extra,
    }


def dead_letter(reason: str, **extra: Any) -> dict[str, Any]:
    return {"outcome": "dead_letter", "reason": reason, **extra}


CASES: list[Callable[[], Capture]] = []


def case(fn: Callable[[], Capture]) -> Callable[[], Capture]:
    CASES.append(fn)
    return fn


# Reference links (from provider-quirks.md).
DSHCODE_36 = "https://github.com/whitelonng/dshcode/issues/36"
SUB2API_6080 = "https://github.com/Wei-Shaw/sub2api/pull/6080"
OPENCODE_37841 = "https://github.com/anomalyco/opencode/issues/37841"
VEKIL_334 = "https://github.com/sozercan/vekil/pull/334"
DEEPSEEK_ACP_4 = "https://github.com/xintaofei/deepseek-acp/issues/4"
EXPERIENTIAL_742 = "https://github.com/experientiallabs/experiential/pull/742"
OPENCODE_26412 = "https://github.com/anomalyco/opencode/issues/26412"
LITELLM_8990 = "https://github.com/BerriAI/litellm/issues/8990"
LITELLM_20480 = "https://github.com/BerriAI/litellm/issues/20480"
LLAMACPP_13774 = "https://github.com/ggml-org/llama.cpp/issues/13774"
LANGCHAIN_40044 = "https://github.com/langchain-ai/langchain/issues/40044"
HERMES_106943 = "https://github.com/NousResearch/hermes-agent/pull/106943"
OLLAMA_15457 = "https://github.com/ollama/ollama/issues/15457"
CONTINUE_5849 = "https://github.com/continuedev/continue/pull/5849"
MULTICA_8268 = "https://github.com/multica-ai/multica/issues/8268"
DSHA_66 = "https://github.com/DSH-APP/DSHA/issues/66"
CONTINUE_13236 = "https://github.com/continuedev/continue/pull/13236"
CORPORATE_PROXY = (
    "https://github.com/AndrewAltimit/template-repo "
    "(automation/corporate-proxy/docs/STREAMING_TOOL_CALLS_FIX.md)"
)
OPENAI_PYTHON_3425 = "https://github.com/openai/openai-python/pull/3425"
OLLAMA_4357 = "https://github.com/ollama/ollama/issues/4357"
WORKBUDDY_3 = "https://github.com/CangShui/workbuddy-gateway/pull/3"
QUIRKS = "provider-quirks.md"
DEEPSEEK_WIRE = f"DeepSeek API wire format ({QUIRKS}, 'The wire, as DeepSeek documents it')"
SPEC_ONLY = "assembler spec rule (no public report; synthetic shape)"

DEEPSEEK_FP = "fp_8802369eaa_prod0820_fp8_kvcache"


# --------------------------------------------------------------------------------------------
# The wire as DeepSeek documents it
# --------------------------------------------------------------------------------------------


@case
def deepseek_single_call() -> Capture:
    # DeepSeek: first tool-call delta carries id, type, name and arguments ""; later deltas carry
    # index and arguments only; usage on the finish chunk.
    s = Stream("0b1e2c8e-5a51-4c3e-9d0e-2f6a4f1c7d93", "deepseek-chat", 1794652011, DEEPSEEK_FP)
    usage = {
        "prompt_tokens": 412,
        "completion_tokens": 24,
        "total_tokens": 436,
        "prompt_tokens_details": {"cached_tokens": 384},
        "prompt_cache_hit_tokens": 384,
        "prompt_cache_miss_tokens": 28,
    }
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_Qf3kZ8mW1xR7tYpL2nB9vC4d", "get_weather")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"city": ')]})),
        s.chunk(choice({"tool_calls": [more(0, '"Hangzhou", ')]})),
        s.chunk(choice({"tool_calls": [more(0, '"unit": "celsius"}')]})),
        s.chunk(choice({"content": ""}, "tool_calls"), usage=usage),
    )
    return Capture(
        description="DeepSeek single tool call: identity on the first delta, then arguments only.",
        source=DEEPSEEK_WIRE,
        shape="DeepSeek canonical tool call, usage on finish chunk",
        proves="baseline assembly: arguments concatenate verbatim, no repairs, usage kept",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_00_Qf3kZ8mW1xR7tYpL2nB9vC4d",
                    "get_weather",
                    '{"city": "Hangzhou", "unit": "celsius"}',
                    True,
                )
            ],
            repairs=repairs(),
            usage={
                "prompt_tokens": 412,
                "completion_tokens": 24,
                "total_tokens": 436,
                "prompt_tokens_details": {"cached_tokens": 384},
                "prompt_cache_hit_tokens": 384,
                "prompt_cache_miss_tokens": 28,
            },
            chunks=5,
        ),
    )


@case
def deepseek_plain_text() -> Capture:
    # DeepSeek: a plain text answer, role chunk with content "", usage on the finish chunk.
    s = Stream("5d0c7a3e-91b2-4f68-8e0d-6b4c2a1f9e70", "deepseek-chat", 1794652120, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(choice({"content": "Hello"})),
        s.chunk(choice({"content": "! How can I"})),
        s.chunk(choice({"content": " help you today?"})),
        s.chunk(
            choice({"content": ""}, "stop"),
            usage={"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18},
        ),
    )
    return Capture(
        description="Plain text answer, no tool calls.",
        source=DEEPSEEK_WIRE,
        shape="DeepSeek text answer",
        proves="content accumulates, empty content strings add nothing, no calls, stop",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="Hello! How can I help you today?",
            reasoning=None,
            repairs=repairs(),
            usage={"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18},
            chunks=5,
        ),
    )


@case
def deepseek_reasoner_thinking() -> Capture:
    # DeepSeek thinking mode: the first chunk carries reasoning_content "" with content null.
    s = Stream("a7e41c90-3b6d-4d22-b1f8-0c9e5a2d7f13", "deepseek-reasoner", 1794652233, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": None, "reasoning_content": ""})),
        s.chunk(choice({"content": None, "reasoning_content": "The user asks for 2+2."})),
        s.chunk(choice({"content": None, "reasoning_content": " That is 4."})),
        s.chunk(choice({"content": "2 + 2 = 4.", "reasoning_content": None})),
        s.chunk(
            choice({"content": "", "reasoning_content": None}, "stop"),
            usage={
                "prompt_tokens": 14,
                "completion_tokens": 22,
                "total_tokens": 36,
                "completion_tokens_details": {"reasoning_tokens": 15},
            },
        ),
    )
    return Capture(
        description='Thinking stream: reasoning_content first (starting with ""), then content.',
        source=DEEPSEEK_WIRE,
        shape="DeepSeek reasoner thinking stream",
        proves='reasoning accumulates separately from content; ""/null pieces add nothing',
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="2 + 2 = 4.",
            reasoning="The user asks for 2+2. That is 4.",
            repairs=repairs(),
            chunks=5,
        ),
    )


@case
def deepseek_empty_response() -> Capture:
    # DeepSeek: a response that carries nothing at all and ends with stop.
    s = Stream("c3f9a2b1-7e5d-4a08-9c6b-1d2e3f4a5b6c", "deepseek-chat", 1794652301, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(
            choice({"content": ""}, "stop"),
            usage={"prompt_tokens": 1203, "completion_tokens": 0, "total_tokens": 1203},
        ),
    )
    return Capture(
        description="Empty response ending stop: no content, no reasoning, no calls.",
        source=DEEPSEEK_WIRE,
        shape="DeepSeek empty answer",
        proves="EMPTY_RESPONSE, retryable, still assembled",
        body=body,
        expect=assembled(
            finish_reason="stop",
            error_code="EMPTY_RESPONSE",
            retryable=True,
            reasoning=None,
            repairs=repairs(),
            chunks=2,
        ),
    )


@case
def deepseek_usage_finish_and_trailing() -> Capture:
    # DeepSeek: usage on the finish chunk AND on a trailing chunk with choices [] (keep the later).
    s = Stream("e2b7d4f1-0a9c-4e35-8f16-7c3d9b0a2e54", "deepseek-chat", 1794652402, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(choice({"content": "Paris is the capital of France."})),
        s.chunk(
            choice({"content": ""}, "stop"),
            usage={"prompt_tokens": 18, "completion_tokens": 7, "total_tokens": 25},
        ),
        s.chunk(
            usage={
                "prompt_tokens": 18,
                "completion_tokens": 8,
                "total_tokens": 26,
                "prompt_tokens_details": {"cached_tokens": 0},
                "prompt_cache_hit_tokens": 0,
                "prompt_cache_miss_tokens": 18,
            }
        ),
    )
    return Capture(
        description="Usage on the finish chunk and again on a trailing choices:[] chunk.",
        source=DEEPSEEK_WIRE,
        shape="usage twice (finish chunk + trailing choices [])",
        proves="the later usage object wins; a choices:[] chunk is valid and counted",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="Paris is the capital of France.",
            repairs=repairs(),
            usage={
                "prompt_tokens": 18,
                "completion_tokens": 8,
                "total_tokens": 26,
                "prompt_tokens_details": {"cached_tokens": 0},
                "prompt_cache_hit_tokens": 0,
                "prompt_cache_miss_tokens": 18,
            },
            chunks=4,
        ),
    )


@case
def openai_usage_only_on_trailing_chunk() -> Capture:
    # OpenAI-style stream_options.include_usage: "usage": null on every chunk, the object only on
    # a trailing chunk whose choices is [].
    s = Stream(
        "chatcmpl-CQx7Rk2mN9pL4vT0sW8yB3hJ", "gpt-4.1-mini-2025-04-14", 1794652510, "fp_6f2eabb9a5"
    )
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_cT8nV3xL0pQ6rZ1sK9wE4yHu", "get_weather")],
                    "refusal": None,
                }
            ),
            usage=None,
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"location":"Boston, MA"}')]}), usage=None),
        s.chunk(choice({}, "tool_calls"), usage=None),
        s.chunk(usage={"prompt_tokens": 81, "completion_tokens": 17, "total_tokens": 98}),
    )
    return Capture(
        description="usage null on every chunk, the usage object only on a trailing choices:[].",
        source=DEEPSEEK_WIRE,
        shape="usage on trailing choices [] chunk only, usage null elsewhere",
        proves="usage null is accepted and never erases; trailing usage kept",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_cT8nV3xL0pQ6rZ1sK9wE4yHu",
                    "get_weather",
                    '{"location":"Boston, MA"}',
                    True,
                )
            ],
            repairs=repairs(),
            usage={"prompt_tokens": 81, "completion_tokens": 17, "total_tokens": 98},
            chunks=4,
        ),
    )


@case
def usage_null_everywhere() -> Capture:
    # A stream without include_usage: every chunk says "usage": null (DeepSeek: usage can be null).
    s = Stream(
        "chatcmpl-Bt5Yq0wE2rT7uI9oP1aS3dF6", "gpt-4o-mini-2024-07-18", 1794652577, "fp_560af6e559"
    )
    body = sse(
        s.chunk(choice({"role": "assistant", "content": "", "refusal": None}), usage=None),
        s.chunk(choice({"content": "Hi there"}), usage=None),
        s.chunk(choice({"content": "!"}), usage=None),
        s.chunk(choice({}, "stop"), usage=None),
    )
    return Capture(
        description="usage: null on every chunk and never an object.",
        source=DEEPSEEK_WIRE,
        shape="usage null on every chunk",
        proves="usage null is not malformed; the record's usage stays null",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="Hi there!",
            repairs=repairs(),
            usage=None,
            chunks=4,
        ),
    )


@case
def deepseek_length_truncated_call() -> Capture:
    # DeepSeek: max_tokens hit in the middle of a call's arguments; finish_reason "length".
    s = Stream("1f0e9d8c-7b6a-4594-8372-615049382716", "deepseek-chat", 1794652650, DEEPSEEK_FP)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_Hh2Ns7Ue4Oy1Gj9Pk3Fa6Vb", "write_file")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"path": "report.md", ')]})),
        s.chunk(choice({"tool_calls": [more(0, '"content": "# Q3 report\\n\\nRevenue grew ')]})),
        s.chunk(
            choice({"content": ""}, "length"),
            usage={"prompt_tokens": 230, "completion_tokens": 16, "total_tokens": 246},
        ),
    )
    return Capture(
        description="Call cut off by max_tokens (finish length): withheld, truncated, no error.",
        source=DEEPSEEK_WIRE,
        shape="DeepSeek finish length mid-arguments",
        proves="length withholds the call, truncated true, error_code null, not retryable",
        body=body,
        expect=assembled(
            finish_reason="length",
            truncated=True,
            withheld=[
                call(
                    0,
                    0,
                    "call_00_Hh2Ns7Ue4Oy1Gj9Pk3Fa6Vb",
                    "write_file",
                    '{"path": "report.md", "content": "# Q3 report\\n\\nRevenue grew ',
                    False,
                )
            ],
            repairs=repairs(),
            chunks=4,
        ),
    )


@case
def deepseek_content_filter() -> Capture:
    # DeepSeek: generation stopped by the content filter after some text.
    s = Stream("6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d", "deepseek-chat", 1794652718, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(choice({"content": "Here is a summary"})),
        s.chunk(choice({"content": " of the article:"})),
        s.chunk(choice({"content": ""}, "content_filter")),
    )
    return Capture(
        description="Text stopped by content_filter.",
        source=DEEPSEEK_WIRE,
        shape="DeepSeek finish content_filter",
        proves="abnormal finish becomes error_code CONTENT_FILTER, not retryable, not truncated",
        body=body,
        expect=assembled(
            finish_reason="content_filter",
            error_code="CONTENT_FILTER",
            content="Here is a summary of the article:",
            repairs=repairs(),
            chunks=4,
        ),
    )


@case
def deepseek_insufficient_system_resource() -> Capture:
    # DeepSeek: the server gives up mid-call with finish_reason insufficient_system_resource.
    s = Stream("9e8d7c6b-5a49-4837-a625-14f3e2d1c0b9", "deepseek-chat", 1794652790, DEEPSEEK_FP)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_Zx5Cv8Bn1Mq4Wr7Ty0Ui3Op", "search_web")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"query": "latest ')]})),
        s.chunk(choice({"content": ""}, "insufficient_system_resource")),
    )
    return Capture(
        description="Call interrupted by insufficient_system_resource: withheld, error code set.",
        source=DEEPSEEK_WIRE,
        shape="DeepSeek finish insufficient_system_resource with a partial call",
        proves="abnormal finish withholds calls, error_code upper-cased, not truncated",
        body=body,
        expect=assembled(
            finish_reason="insufficient_system_resource",
            error_code="INSUFFICIENT_SYSTEM_RESOURCE",
            withheld=[
                call(
                    0,
                    0,
                    "call_00_Zx5Cv8Bn1Mq4Wr7Ty0Ui3Op",
                    "search_web",
                    '{"query": "latest ',
                    False,
                )
            ],
            repairs=repairs(),
            chunks=3,
        ),
    )


# --------------------------------------------------------------------------------------------
# Identity repeated as empty string
# --------------------------------------------------------------------------------------------


def _empty_cont(index: int, arguments: str) -> dict[str, Any]:
    """DeepSeek/DashScope continuation: id "" and function.name "" re-sent with each fragment."""
    return {
        "index": index,
        "id": "",
        "type": "function",
        "function": {"name": "", "arguments": arguments},
    }


@case
def deepseek_empty_string_continuations() -> Capture:
    # DeepSeek upstream (dshcode#36, sub2api#6080, opencode#37841): every continuation re-sends
    # id "" and function.name "".
    s = Stream("3c2b1a09-8f7e-4d6c-b5a4-93827160f5e4", "deepseek-chat", 1794653001, DEEPSEEK_FP)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_pK4vX1cN8sQe2mYh6tRz0aLw", "read_file")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [_empty_cont(0, '{"path": ')]})),
        s.chunk(choice({"tool_calls": [_empty_cont(0, '"src/main.py", ')]})),
        s.chunk(choice({"tool_calls": [_empty_cont(0, '"limit": 200}')]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description='Continuations carry id "" and name "": identity kept from the first delta.',
        source=f"DeepSeek: {DSHCODE_36} , {SUB2API_6080} , {OPENCODE_37841}",
        shape='DeepSeek "" continuations',
        proves='"" never erases identity; counted as empty_identity_ignored (2 per delta)',
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_00_pK4vX1cN8sQe2mYh6tRz0aLw",
                    "read_file",
                    '{"path": "src/main.py", "limit": 200}',
                    True,
                )
            ],
            # 3 continuation deltas x (id "" + name "") = 6
            repairs=repairs(empty_identity_ignored=6),
            chunks=5,
        ),
    )


@case
def deepseek_parallel_empty_continuations_reversed() -> Capture:
    # DeepSeek parallel calls under "" continuations; one continuation chunk lists index 1
    # before index 0 (dshcode#36).
    s = Stream("7d6c5b4a-3928-4170-86f5-e4d3c2b1a098", "deepseek-chat", 1794653090, DEEPSEEK_FP)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_Wm3bT9eKq1Zs5Nd8Yc2Hv7Ju", "get_weather")],
                }
            )
        ),
        s.chunk(
            choice(
                {"tool_calls": [opening(1, "call_01_Lr6gP0xDf4Ka8Vn2Qs9Ey3Bt", "get_local_time")]}
            )
        ),
        s.chunk(
            choice({"tool_calls": [_empty_cont(1, '{"timezone": '), _empty_cont(0, '{"city": ')]})
        ),
        s.chunk(
            choice({"tool_calls": [_empty_cont(0, '"Tokyo"}'), _empty_cont(1, '"Asia/Tokyo"}')]})
        ),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description='Two parallel calls, "" continuations, a chunk listing index 1 before 0.',
        source=f"DeepSeek: {DSHCODE_36}",
        shape='DeepSeek parallel calls, "" continuations, out-of-order indices',
        proves="fragments are routed by index, not by list position; calls ordered by appearance",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_00_Wm3bT9eKq1Zs5Nd8Yc2Hv7Ju",
                    "get_weather",
                    '{"city": "Tokyo"}',
                    True,
                ),
                call(
                    0,
                    1,
                    "call_01_Lr6gP0xDf4Ka8Vn2Qs9Ey3Bt",
                    "get_local_time",
                    '{"timezone": "Asia/Tokyo"}',
                    True,
                ),
            ],
            # 4 continuation entries x (id "" + name "") = 8
            repairs=repairs(empty_identity_ignored=8),
            chunks=5,
        ),
    )


@case
def proxy_empty_name_on_argument_deltas() -> Capture:
    # Responses->Chat proxy (vekil#334): function.name "" on every arguments delta, no id key.
    s = Stream("chatcmpl-vk-5N1q8Rz3Lx0Wm7Tb4Ye9Dc2F", "gpt-4.1", 1794653170)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_R2d8Xk1Vq7Nf3Lp9Zm5Tb0Wc", "run_shell")],
                }
            )
        ),
        s.chunk(
            choice({"tool_calls": [{"index": 0, "function": {"name": "", "arguments": '{"cmd":'}}]})
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"name": "", "arguments": '"git status"'}}
                    ]
                }
            )
        ),
        s.chunk(choice({"tool_calls": [{"index": 0, "function": {"name": "", "arguments": "}"}}]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description='A proxy sends function.name "" on every arguments delta (no id key).',
        source=f"proxy: {VEKIL_334}",
        shape="proxy empty name on every delta",
        proves="the empty name never replaces the first name; only name fields counted (3)",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0, 0, "call_R2d8Xk1Vq7Nf3Lp9Zm5Tb0Wc", "run_shell", '{"cmd":"git status"}', True
                )
            ],
            # 3 continuation deltas x name "" = 3 (no id key on them)
            repairs=repairs(empty_identity_ignored=3),
            chunks=5,
        ),
    )


# --------------------------------------------------------------------------------------------
# Identity repeated as null
# --------------------------------------------------------------------------------------------


def _null_cont(index: int, arguments: str, type_: str | None = "function") -> dict[str, Any]:
    """hy3/longcat continuation: id null and function.name null re-sent with each fragment."""
    return {
        "index": index,
        "id": None,
        "type": type_,
        "function": {"name": None, "arguments": arguments},
    }


@case
def hy3_null_continuations() -> Capture:
    # hy3 gateway (dshcode#36): continuations send id null and function.name null; a
    # concatenating client produced names like "Globnull".
    s = Stream("hy3-0a4f7c2e91d8b653", "hy3", 1794653301)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_b41c9e07d2a84f6e", "Glob")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [_null_cont(0, '{"pattern": ')]})),
        s.chunk(choice({"tool_calls": [_null_cont(0, '"**/*.py", ')]})),
        s.chunk(choice({"tool_calls": [_null_cont(0, '"path": "src"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Continuations carry id null and name null: identity kept.",
        source=f"hy3: {DSHCODE_36}",
        shape="hy3 null continuations",
        proves="null never erases or appends to identity; counted as null_identity_ignored",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_b41c9e07d2a84f6e",
                    "Glob",
                    '{"pattern": "**/*.py", "path": "src"}',
                    True,
                )
            ],
            # 3 continuation deltas x (id null + name null) = 6
            repairs=repairs(null_identity_ignored=6),
            chunks=5,
        ),
    )


@case
def longcat_null_continuations_two_calls() -> Capture:
    # longcat-2.0 gateway (dshcode#36): text first, then two sequential calls whose
    # continuations send id null, type null and name null.
    s = Stream("lc-20261115-7e3a9b1d5f", "longcat-2.0", 1794653377)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": "Reading both files."})),
        s.chunk(choice({"tool_calls": [opening(0, "call_lc_8d2f61a0", "Read")]})),
        s.chunk(choice({"tool_calls": [_null_cont(0, '{"file_path": "README.md"}', None)]})),
        s.chunk(choice({"tool_calls": [opening(1, "call_lc_8d2f61a1", "Read")]})),
        s.chunk(choice({"tool_calls": [_null_cont(1, '{"file_path": "setup.cfg"}', None)]})),
        s.chunk(choice({"content": None}, "tool_calls")),
    )
    return Capture(
        description="Text then two calls; continuations send id/type/name null.",
        source=f"longcat-2.0: {DSHCODE_36}",
        shape="longcat null continuations, two calls, content before calls",
        proves="content and calls coexist; null identity ignored per call",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            content="Reading both files.",
            tool_calls=[
                call(0, 0, "call_lc_8d2f61a0", "Read", '{"file_path": "README.md"}', True),
                call(0, 1, "call_lc_8d2f61a1", "Read", '{"file_path": "setup.cfg"}', True),
            ],
            # 2 continuation deltas x (id null + name null) = 4; type null is not counted
            repairs=repairs(null_identity_ignored=4),
            chunks=6,
        ),
    )


@case
def openai_compat_null_type_and_identity() -> Capture:
    # OpenAI-compatible upstream (deepseek-acp#4): arguments "" first, then the whole JSON on a
    # delta with id null, type null and function.name null.
    s = Stream("chatcmpl-acp-2b7e0d9f4c1a", "deepseek-v3.1", 1794653450)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_9f8e7d6c5b4a", "search_code")],
                }
            )
        ),
        s.chunk(
            choice({"tool_calls": [_null_cont(0, '{"query": "TODO", "max_results": 5}', None)]})
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="type null with id null and name null on the arguments delta.",
        source=f"OpenAI-compatible upstream: {DEEPSEEK_ACP_4}",
        shape='null id/type/name, arguments "" then JSON',
        proves="type is ignored entirely (type null is not an error and not counted)",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_9f8e7d6c5b4a",
                    "search_code",
                    '{"query": "TODO", "max_results": 5}',
                    True,
                )
            ],
            # 1 continuation x (id null + name null) = 2
            repairs=repairs(null_identity_ignored=2),
            chunks=3,
        ),
    )


@case
def dashscope_empty_id_null_name() -> Capture:
    # DashScope (Qwen) mix (experiential#742): continuations send id "" with function.name null.
    s = Stream("chatcmpl-3c1b5f0e-8a7d-9b2c-a4e6-f1d0c9b8a7e6", "qwen3-coder-plus", 1794653520)

    def cont(arguments: str) -> dict[str, Any]:
        return {
            "index": 0,
            "id": "",
            "type": "function",
            "function": {"name": None, "arguments": arguments},
        }

    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [opening(0, "call_5e3a0c1d9b7f4e2a8c6d1f0b", "write_file")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [cont('{"path": "notes.md", ')]})),
        s.chunk(choice({"tool_calls": [cont('"content": "# Notes\\n"')]})),
        s.chunk(choice({"tool_calls": [cont("}")]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description='Continuations mix id "" and name null.',
        source=f"DashScope: {EXPERIENTIAL_742}",
        shape='DashScope id "" + name null',
        proves="the two kinds of ignored identity are counted separately",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_5e3a0c1d9b7f4e2a8c6d1f0b",
                    "write_file",
                    '{"path": "notes.md", "content": "# Notes\\n"}',
                    True,
                )
            ],
            # 3 continuations: id "" each -> 3 empty; name null each -> 3 null
            repairs=repairs(empty_identity_ignored=3, null_identity_ignored=3),
            chunks=5,
        ),
    )


@case
def vllm_name_null_strict() -> Capture:
    # vLLM (opencode#26412): continuations send function.name null; broke a strict client.
    # Assembled here in strict mode: null is ignored, never a conflict.
    s = Stream("chatcmpl-7d0d3c1f9a0b4b62a1f1f0d2c7b9e4a1", "Qwen/Qwen3-32B", 1794653601)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "id": "chatcmpl-tool-3b9f0c2e8a7d4c15",
                            "type": "function",
                            "index": 0,
                            "function": {"name": "list_files"},
                        }
                    ]
                }
            )
        ),
        s.chunk(
            choice(
                {"tool_calls": [{"index": 0, "function": {"name": None, "arguments": '{"dir": '}}]}
            )
        ),
        s.chunk(
            choice(
                {"tool_calls": [{"index": 0, "function": {"name": None, "arguments": '"/tmp"}'}}]}
            )
        ),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description="vLLM continuations with name null, assembled in strict mode.",
        source=f"vLLM: {OPENCODE_26412}",
        shape="vLLM name null continuations (strict)",
        proves="a null name is not an identity conflict even in strict mode",
        body=body,
        strict=True,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "chatcmpl-tool-3b9f0c2e8a7d4c15", "list_files", '{"dir": "/tmp"}', True)
            ],
            # 2 continuations x name null = 2 (no id key on them)
            repairs=repairs(null_identity_ignored=2),
            chunks=5,
        ),
    )


# --------------------------------------------------------------------------------------------
# Identity repeated in full
# --------------------------------------------------------------------------------------------


@case
def fireworks_identity_repeated_full() -> Capture:
    # Fireworks (litellm#8990): the same id, type and name on every delta; a concatenating client
    # produced "call_123call_123".
    s = Stream(
        "4f6c2a1e-9d3b-47e8-a05c-8b1d2e3f4a5b",
        "accounts/fireworks/models/kimi-k2-instruct",
        1794653801,
    )
    cid = "call_123XyZaBcDeFgHiJkLmNoP"
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, cid, "search_docs")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [opening(0, cid, "search_docs", '{"query": ')]})),
        s.chunk(choice({"tool_calls": [opening(0, cid, "search_docs", '"rate limits", ')]})),
        s.chunk(choice({"tool_calls": [opening(0, cid, "search_docs", '"top_k": 3}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Identical id and name repeated in full on every delta.",
        source=f"Fireworks: {LITELLM_8990}",
        shape="Fireworks full identity on every delta",
        proves="a repeated identity is never concatenated; counted as identity_repeated",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_123XyZaBcDeFgHiJkLmNoP",
                    "search_docs",
                    '{"query": "rate limits", "top_k": 3}',
                    True,
                )
            ],
            # 3 later deltas x (same id + same name) = 6
            repairs=repairs(identity_repeated=6),
            chunks=5,
        ),
    )


@case
def litellm_identity_repeated_two_calls() -> Capture:
    # LiteLLM proxy (litellm#20480): each delta repeats its call's id and name; two calls to the
    # same function.
    s = Stream("chatcmpl-8e2f4a6c-1b3d-4e5f-9a7b-c0d1e2f3a4b5", "gpt-4o-mini", 1794653880)
    a, b = "call_Jm4kQ2wX8pN1vR6tB3yH9sLd", "call_Tz7cF0aG5eU2iO8pK1mW4nXq"
    body = sse(
        s.chunk(
            choice(
                {"role": "assistant", "content": None, "tool_calls": [opening(0, a, "get_weather")]}
            )
        ),
        s.chunk(choice({"tool_calls": [opening(0, a, "get_weather", '{"city": "Paris"}')]})),
        s.chunk(choice({"tool_calls": [opening(1, b, "get_weather")]})),
        s.chunk(choice({"tool_calls": [opening(1, b, "get_weather", '{"city": "Lyon"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Two calls to one function, each delta repeating its call's id and name.",
        source=f"LiteLLM proxy: {LITELLM_20480}",
        shape="LiteLLM full identity repeated, two calls",
        proves="repeats are per call: the second call's first name is a set, not a repeat",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, a, "get_weather", '{"city": "Paris"}', True),
                call(0, 1, b, "get_weather", '{"city": "Lyon"}', True),
            ],
            # chunk 2: id+name repeated (2); chunk 4: id+name repeated (2) = 4
            repairs=repairs(identity_repeated=4),
            chunks=5,
        ),
    )


@case
def llamacpp_name_repeated() -> Capture:
    # llama-server (llama.cpp#13774; langchain#40044 for MiniMax/adapters): the full name on
    # every delta, the id only on the first.
    s = Stream("chatcmpl-Lk8vQ2nX5rB1tY7pW0cZ3mH9", "gpt-oss-20b", 1794653950, "b6142-6c9e1a2f")
    name = "get_current_weather"

    def cont(arguments: str) -> dict[str, Any]:
        return {"index": 0, "function": {"name": name, "arguments": arguments}}

    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "Wq3XhU7pLc9RtZ1vNb5MkY2sDf8GjA4e", name, '{"')],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [cont("location")]})),
        s.chunk(choice({"tool_calls": [cont('":"')]})),
        s.chunk(choice({"tool_calls": [cont("San Francisco")]})),
        s.chunk(choice({"tool_calls": [cont('"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="The full function name repeated on every delta (id only on the first).",
        source=f"llama-server / MiniMax: {LLAMACPP_13774} , {LANGCHAIN_40044}",
        shape="llama-server full name on every delta",
        proves="a repeated name is never doubled; counted once per delta",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "Wq3XhU7pLc9RtZ1vNb5MkY2sDf8GjA4e",
                    "get_current_weather",
                    '{"location":"San Francisco"}',
                    True,
                )
            ],
            # 4 continuation deltas x same name = 4
            repairs=repairs(identity_repeated=4),
            chunks=6,
        ),
    )


# --------------------------------------------------------------------------------------------
# Identity changing or split
# --------------------------------------------------------------------------------------------

# LM Studio ids: a new numeric string on each delta of the same call.
LMSTUDIO_IDS = (
    "381924756",
    "529301846",
    "610482937",
    "774120593",
    "802917364",
    "915038472",
    "106284739",
    "237591048",
    "348602915",
    "459713026",
    "561824137",
    "672935248",
)


@case
def lmstudio_new_id_per_delta() -> Capture:
    # LM Studio with Gemma (hermes-agent#106943): a new unique id on every delta of one call,
    # an empty name after the first, one argument character each.
    s = Stream("chatcmpl-r8y2c5f0k1m9q3t7w6z4", "google/gemma-3-12b", 1794654101)
    chars = '{"path":"."}'  # 12 characters, one per delta
    assert len(chars) == len(LMSTUDIO_IDS) == 12
    chunks = [
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, LMSTUDIO_IDS[0], "list_dir", chars[0])],
                }
            )
        )
    ]
    for call_id, char in zip(LMSTUDIO_IDS[1:], chars[1:], strict=True):
        chunks.append(s.chunk(choice({"tool_calls": [opening(0, call_id, "", char)]})))
    chunks.append(s.chunk(choice({}, "tool_calls")))
    return Capture(
        description="A new id on every delta of one call, empty name after the first.",
        source=f"LM Studio (Gemma): {HERMES_106943}",
        shape="LM Studio new id per delta",
        proves="one call, last id wins, each change counted as a conflict; no split "
        "(the name is empty, so the Ollama split rule does not fire)",
        body=sse(*chunks),
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, "672935248", "list_dir", '{"path":"."}', True)],
            # deltas 2..12 (11 of them): new id -> 11 conflicts; name "" -> 11 empty
            repairs=repairs(identity_conflicts=11, empty_identity_ignored=11),
            chunks=13,
        ),
    )


def _ollama_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """Ollama sends each call whole in one delta, "id" before "index", always at index 0."""
    return {
        "id": call_id,
        "index": 0,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


@case
def ollama_parallel_index_reuse() -> Capture:
    # Ollama (ollama#15457): parallel calls all reuse index 0, each with a new id and name.
    s = Stream("chatcmpl-412", "qwen3:8b", 1794654203, "fp_ollama")
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call("call_a1b2c3d4", "get_weather", '{"city":"Paris"}')
                    ],
                }
            )
        ),
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call(
                            "call_e5f6g7h8", "get_local_time", '{"timezone":"Europe/Paris"}'
                        )
                    ],
                }
            )
        ),
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call("call_i9j0k1l2", "search_web", '{"query":"Paris events"}')
                    ],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )
    return Capture(
        description="Three parallel calls all on index 0, each with its own id, name, arguments.",
        source=f"Ollama: {OLLAMA_15457} , {HERMES_106943}",
        shape="Ollama parallel calls reusing index 0",
        proves="index-reuse split: new calls get index highest+1 (1, then 2)",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_a1b2c3d4", "get_weather", '{"city":"Paris"}', True),
                call(0, 1, "call_e5f6g7h8", "get_local_time", '{"timezone":"Europe/Paris"}', True),
                call(0, 2, "call_i9j0k1l2", "search_web", '{"query":"Paris events"}', True),
            ],
            # 2nd and 3rd entries each split (id and name both differ, arguments already seen)
            repairs=repairs(index_reuse_splits=2),
            chunks=4,
        ),
    )


@case
def ollama_index_reuse_same_name() -> Capture:
    # Ollama (ollama#15457): two parallel calls to the SAME function, both at index 0.  The split
    # rule needs id AND name to differ, so by the spec they merge into one call: the second id
    # replaces the first (a conflict), the name is a repeat and the arguments concatenate.
    s = Stream("chatcmpl-733", "qwen3:8b", 1794654290, "fp_ollama")
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call("call_m3n4o5p6", "get_weather", '{"city":"Paris"}')
                    ],
                }
            )
        ),
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call("call_q7r8s9t0", "get_weather", '{"city":"Berlin"}')
                    ],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )
    return Capture(
        description="Two calls to one function both at index 0: no split, merged (spec limit).",
        source=f"Ollama: {OLLAMA_15457}",
        shape="Ollama index 0 reuse with the same name",
        proves="the split needs both id and name to differ; otherwise last id wins, "
        "arguments concatenate (not JSON)",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_q7r8s9t0",
                    "get_weather",
                    '{"city":"Paris"}{"city":"Berlin"}',
                    False,
                )
            ],
            # 2nd entry: id differs -> 1 conflict; name equal -> 1 repeated
            repairs=repairs(identity_conflicts=1, identity_repeated=1),
            chunks=3,
        ),
    )


@case
def gemini_split_name_unknown_tool() -> Capture:
    # Gemini via an adapter (continue#5849): the name split across deltas ("edit_ex" then
    # "isting_file").  The last non-empty name wins, which is not a declared tool.
    s = Stream("chatcmpl-gem-6Yb2Kq9Xw1", "gemini-2.5-flash", 1794654402)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_gm_4f1e9a7c", "edit_ex")],
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {
                                "name": "isting_file",
                                "arguments": '{"filepath": "src/app.ts", ',
                            },
                        }
                    ]
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '"replacement": "export {}\\n"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Name split across deltas; the resulting name is not a declared tool.",
        source=f"Gemini via adapter: {CONTINUE_5849}",
        shape="Gemini split name",
        proves="names are never concatenated; last non-empty wins -> unknown_tool dead letter",
        body=body,
        declared_tools=["edit_existing_file", "read_file"],
        expect=dead_letter("unknown_tool"),
    )


@case
def strict_identity_conflict() -> Capture:
    # LM Studio-style id change within one call (hermes-agent#106943; the reference notes
    # LiteLLM lets a later id replace the first), run in strict mode.
    s = Stream("chatcmpl-x2w9v4u7t1s6r3q8p5o0", "google/gemma-3-12b", 1794654480)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "904518273", "get_time", "{")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [opening(0, "115830946", "", "}")]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="The call id changes mid-call; strict mode refuses conflicting identity.",
        source=f"LM Studio (Gemma): {HERMES_106943}",
        shape="id changes within a call (strict)",
        proves="strict mode dead-letters identity_conflict",
        body=body,
        strict=True,
        expect=dead_letter("identity_conflict"),
    )


# --------------------------------------------------------------------------------------------
# Identity never sent
# --------------------------------------------------------------------------------------------


@case
def opencode_go_identity_never_sent() -> Capture:
    # opencode Console Go gateway (multica#8268): no id, no function.name, only arguments.
    s = Stream("gen-1794654601-Qm7Tz2Xc9Lp4", "kimi-k2.5", 1794654601)
    body = sse(
        s.chunk(
            choice({"role": "assistant", "content": None, "tool_calls": [more(0, '{"command": ')]})
        ),
        s.chunk(choice({"tool_calls": [more(0, '"ls -la", "description": "List files"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Identity never sent: only index and arguments arrive.",
        source=f"opencode Console Go gateway: {MULTICA_8268}",
        shape="opencode Go gateway, identity never sent",
        proves="a call without id and name is dead-lettered missing_identity, not emitted",
        body=body,
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(
                    call(
                        0,
                        0,
                        None,
                        None,
                        '{"command": "ls -la", "description": "List files"}',
                        True,
                    ),
                    "id",
                    "name",
                )
            ],
        ),
    )


def _agnes_cont(index: int, arguments: str) -> dict[str, Any]:
    """agnes under load: empty id and no name key on every delta of the call."""
    return {"index": index, "id": "", "type": "function", "function": {"arguments": arguments}}


@case
def agnes_empty_id_no_name() -> Capture:
    # agnes-3.0-flash under load (DSHA#66): no name and an empty id on every delta of the call,
    # with a normal finish_reason tool_calls.
    s = Stream("agn-5c8e1f3a7b2d", "agnes-3.0-flash", 1794654702)
    body = sse(
        s.chunk(
            choice(
                {"role": "assistant", "content": None, "tool_calls": [_agnes_cont(0, '{"url": ')]}
            )
        ),
        s.chunk(choice({"tool_calls": [_agnes_cont(0, '"https://example.com/status"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Empty id and no name on every delta; finish tool_calls.",
        source=f"agnes-3.0-flash: {DSHA_66}",
        shape="agnes empty id, no name",
        proves='an id that is only ever "" counts as missing -> missing_identity',
        body=body,
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(
                    call(0, 0, None, None, '{"url": "https://example.com/status"}', True),
                    "id",
                    "name",
                )
            ],
        ),
    )


@case
def agnes_second_call_without_identity() -> Capture:
    # agnes-3.0-flash (DSHA#66), intermittent: the first call is complete, the second has only
    # empty ids and no name.  The dead letter lists every call, complete ones with missing [].
    s = Stream("agn-9a0b1c2d3e4f", "agnes-3.0-flash", 1794654790)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_ag_71d0e2", "fetch_url")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"url": "https://example.com/a"}')]})),
        s.chunk(choice({"tool_calls": [_agnes_cont(1, '{"url": ')]})),
        s.chunk(choice({"tool_calls": [_agnes_cont(1, '"https://example.com/b"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="One complete call, one without identity: the whole response dead-letters.",
        source=f"agnes-3.0-flash: {DSHA_66}",
        shape="agnes, second of two calls without identity",
        proves="missing_identity lists every call in order, complete ones with missing []",
        body=body,
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(
                    call(
                        0,
                        0,
                        "call_ag_71d0e2",
                        "fetch_url",
                        '{"url": "https://example.com/a"}',
                        True,
                    )
                ),
                missing(
                    call(0, 1, None, None, '{"url": "https://example.com/b"}', True), "id", "name"
                ),
            ],
        ),
    )


@case
def ollama_calls_without_id() -> Capture:
    # Ollama (continue#13236): calls with index and name but no id.
    s = Stream("chatcmpl-88", "llama3.1:8b", 1794654850, "fp_ollama")
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "index": 0,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Madrid"}'},
                        },
                        {
                            "index": 1,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'},
                        },
                    ],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )
    return Capture(
        description="Two calls with index and name but no id.",
        source=f"Ollama: {CONTINUE_13236}",
        shape="Ollama calls without id",
        proves="missing lists only the absent field (id)",
        body=body,
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(call(0, 0, None, "get_weather", '{"city":"Madrid"}', True), "id"),
                missing(call(0, 1, None, "get_weather", '{"city":"Lisbon"}', True), "id"),
            ],
        ),
    )


@case
def truncated_call_without_identity() -> Capture:
    # opencode Go gateway shape (multica#8268) cut off by max_tokens: no identity, finish length.
    s = Stream("gen-1794654910-Hn3Rv8Kw1Yd6", "kimi-k2.5", 1794654910)
    body = sse(
        s.chunk(
            choice({"role": "assistant", "content": None, "tool_calls": [more(0, '{"command": ')]})
        ),
        s.chunk(choice({"tool_calls": [more(0, '"npm te')]})),
        s.chunk(choice({}, "length")),
    )
    return Capture(
        description="A call without identity cut off by length: emitted truncated, withheld.",
        source=f"opencode Console Go gateway: {MULTICA_8268}",
        shape="identity never sent + finish length",
        proves="a truncation is never dead-lettered, even when the withheld call lacks identity",
        body=body,
        expect=assembled(
            finish_reason="length",
            truncated=True,
            withheld=[call(0, 0, None, None, '{"command": "npm te', False)],
            repairs=repairs(),
            chunks=3,
        ),
    )


# --------------------------------------------------------------------------------------------
# Other shapes
# --------------------------------------------------------------------------------------------


@case
def proxy_missing_index_parallel() -> Capture:
    # Corporate proxy (template-repo STREAMING_TOOL_CALLS_FIX.md): tool-call entries without
    # index; two parallel calls, position in the list is the index.
    s = Stream("chatcmpl-proxy-4b8d2f6a0c1e", "claude-sonnet-4", 1794655001)
    a, b = "toolu_01A9xK3mQ7vN2pR8sT4wY6zB", "toolu_01C5dF8gH1jK4lM7nP0qR3sU"
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": a,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        },
                        {
                            "id": b,
                            "type": "function",
                            "function": {"name": "get_local_time", "arguments": ""},
                        },
                    ],
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {"function": {"arguments": '{"city": "Oslo"}'}},
                        {"function": {"arguments": '{"timezone": "Europe/Oslo"}'}},
                    ]
                }
            )
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Tool-call entries without index: list position is the index.",
        source=f"corporate proxy: {CORPORATE_PROXY}",
        shape="missing index, parallel calls in one list",
        proves="index falls back to list position; one index_fallbacks per entry",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, a, "get_weather", '{"city": "Oslo"}', True),
                call(0, 1, b, "get_local_time", '{"timezone": "Europe/Oslo"}', True),
            ],
            # 4 entries without index
            repairs=repairs(index_fallbacks=4),
            chunks=3,
        ),
    )


@case
def proxy_missing_index_sequential() -> Capture:
    # Corporate proxy (template-repo): calls sent one after the other, no index on any entry, so
    # every entry falls back to position 0; the second call splits off like Ollama's reuse.
    s = Stream("chatcmpl-proxy-9e7c5a3b1d0f", "claude-sonnet-4", 1794655070)
    a, b = "toolu_01E2fG5hJ8kL1mN4pQ7rS0tV", "toolu_01W3xY6zA9bC2dE5fG8hJ1kL"
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": a,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [{"function": {"arguments": '{"city": "Oslo"}'}}]})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "id": b,
                            "type": "function",
                            "function": {"name": "get_local_time", "arguments": ""},
                        }
                    ]
                }
            )
        ),
        s.chunk(
            choice({"tool_calls": [{"function": {"arguments": '{"timezone": "Europe/Oslo"}'}}]})
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Sequential calls without index: second call splits off at index 1.",
        source=f"corporate proxy: {CORPORATE_PROXY}",
        shape="missing index, sequential calls",
        proves="fallback index 0 reused by a new identity after arguments -> split; later "
        "entries at wire index 0 go to the newest call",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, a, "get_weather", '{"city": "Oslo"}', True),
                call(0, 1, b, "get_local_time", '{"timezone": "Europe/Oslo"}', True),
            ],
            # 4 entries without index; chunk 3 (new id and name after arguments) splits
            repairs=repairs(index_fallbacks=4, index_reuse_splits=1),
            chunks=5,
        ),
    )


@case
def vllm_duplicate_index_in_one_chunk() -> Capture:
    # vLLM (openai-python#3425): two entries with the same index in one chunk (identity, then
    # the first arguments fragment).
    s = Stream(
        "chatcmpl-5f4e3d2c1b0a49f8a7e6d5c4b3a2f1e0", "meta-llama/Llama-3.3-70B-Instruct", 1794655150
    )
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "id": "chatcmpl-tool-8e1f2a3b4c5d",
                            "type": "function",
                            "index": 0,
                            "function": {"name": "get_weather"},
                        },
                        {"index": 0, "function": {"arguments": '{"city": '}},
                    ]
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '"Rome"}')]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description="Two entries with the same index in one chunk, applied in list order.",
        source=f"vLLM: {OPENAI_PYTHON_3425}",
        shape="vLLM duplicate index in one chunk",
        proves="same-index entries in one chunk feed one call in list order; no repairs",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "chatcmpl-tool-8e1f2a3b4c5d", "get_weather", '{"city": "Rome"}', True)
            ],
            repairs=repairs(),
            chunks=4,
        ),
    )


@case
def ollama_empty_finish_padding() -> Capture:
    # Ollama (ollama#4357): finish_reason "" on every non-terminal chunk.
    s = Stream("chatcmpl-57", "llama3.2", 1794655230, "fp_ollama")
    body = sse(
        s.chunk(ollama_choice({"role": "assistant", "content": "The"}, "")),
        s.chunk(ollama_choice({"role": "assistant", "content": " sky"}, "")),
        s.chunk(ollama_choice({"role": "assistant", "content": " is blue"}, "")),
        s.chunk(ollama_choice({"role": "assistant", "content": "."}, "")),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "stop")),
    )
    return Capture(
        description='finish_reason "" on every non-terminal chunk.',
        source=f"Ollama: {OLLAMA_4357}",
        shape='Ollama finish_reason "" padding',
        proves='"" finish reasons are ignored; the real one is kept',
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="The sky is blue.",
            repairs=repairs(),
            chunks=5,
        ),
    )


@case
def finish_reason_then_empty() -> Capture:
    # workbuddy-gateway upstream (workbuddy-gateway#3): a real finish_reason, then a trailing
    # chunk with finish_reason "" (and usage null).
    s = Stream("chatcmpl-wb-1a2b3c4d5e6f", "glm-4.6", 1794655301)
    usage = {"prompt_tokens": 96, "completion_tokens": 19, "total_tokens": 115}
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_wb_0c7e5a91", "get_stock_price")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"symbol": "AAPL"}')]})),
        s.chunk(choice({}, "tool_calls"), usage=usage),
        s.chunk(choice({}, ""), usage=None),
    )
    return Capture(
        description='finish_reason tool_calls, then a trailing chunk with finish_reason "".',
        source=f"workbuddy-gateway upstream: {WORKBUDDY_3}",
        shape='real finish reason then ""',
        proves='a later "" never erases the finish reason; a later usage null never erases usage',
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_wb_0c7e5a91", "get_stock_price", '{"symbol": "AAPL"}', True)
            ],
            repairs=repairs(),
            usage={"prompt_tokens": 96, "completion_tokens": 19, "total_tokens": 115},
            chunks=4,
        ),
    )


@case
def legacy_function_call_stub() -> Capture:
    # workbuddy-gateway (workbuddy-gateway#3): the terminal chunk carries a legacy
    # delta.function_call {"name":"","arguments":""} stub next to tool_calls.
    s = Stream("chatcmpl-wb-7f8e9d0c1b2a", "glm-4.6", 1794655380)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_wb_5d2b8f13", "create_ticket")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"title": "Printer jam", ')]})),
        s.chunk(
            choice(
                {
                    "content": None,
                    "function_call": {"name": "", "arguments": ""},
                    "tool_calls": [more(0, '"priority": "low"}')],
                },
                "tool_calls",
            )
        ),
    )
    return Capture(
        description="Legacy function_call stub beside tool_calls on the terminal chunk.",
        source=f"workbuddy-gateway: {WORKBUDDY_3}",
        shape="legacy delta.function_call stub",
        proves='function_call is ignored entirely (its "" name is not even counted)',
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_wb_5d2b8f13",
                    "create_ticket",
                    '{"title": "Printer jam", "priority": "low"}',
                    True,
                )
            ],
            repairs=repairs(),
            chunks=3,
        ),
    )


@case
def finish_tool_calls_repeated() -> Capture:
    # finish_reason "tool_calls" on two trailing chunks (a LangChain client built
    # "tool_callstool_calls"); reported in provider-quirks.md without a link.
    s = Stream("chatcmpl-rp-3e5g7i9k1m", "MiniMax-M2", 1794655450)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_3KxP9qLm2VnR7tWs", "lookup_order")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"order_id": "A-1042"}')]})),
        s.chunk(choice({}, "tool_calls")),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description='finish_reason "tool_calls" repeated on two trailing chunks.',
        source=f"{QUIRKS}: Other shapes (LangChain client report, no link)",
        shape="finish tool_calls repeated",
        proves="the finish reason is replaced, never concatenated",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_3KxP9qLm2VnR7tWs", "lookup_order", '{"order_id": "A-1042"}', True)
            ],
            repairs=repairs(),
            chunks=4,
        ),
    )


@case
def stop_with_tool_calls() -> Capture:
    # Ollama sends finish_reason "stop" with tool calls; LiteLLM rewrites it to tool_calls
    # (provider-quirks.md, client libraries).  The record keeps "stop" verbatim.
    s = Stream("chatcmpl-301", "mistral-nemo", 1794655520, "fp_ollama")
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call("call_x8y7z6w5", "get_weather", '{"city":"Vienna"}')
                    ],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "stop")),
    )
    return Capture(
        description='finish_reason "stop" on a response that carries a tool call.',
        source=f"Ollama; {QUIRKS}: LiteLLM rewrites stop into tool_calls",
        shape="stop finish with tool calls",
        proves="finish_reason is verbatim (stays stop) and the call is still emitted",
        body=body,
        expect=assembled(
            finish_reason="stop",
            tool_calls=[call(0, 0, "call_x8y7z6w5", "get_weather", '{"city":"Vienna"}', True)],
            repairs=repairs(),
            chunks=2,
        ),
    )


@case
def arguments_not_json() -> Capture:
    # vLLM serving a model that writes Python-dict style arguments (single quotes).
    s = Stream("chatcmpl-9c8b7a6f5e4d43c2b1a0f9e8d7c6b5a4", "Qwen/Qwen2.5-7B-Instruct", 1794655600)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(
            choice(
                {"tool_calls": [opening(0, "chatcmpl-tool-6d5c4b3a2f1e", "read_file", "{'path': ")]}
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, "'notes/todo.txt'}")]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description="Arguments that are not valid JSON (single-quoted dict).",
        source="vLLM-served model writing Python-dict arguments (no reference link)",
        shape="arguments not JSON",
        proves="invalid JSON arguments are still emitted, flagged arguments_json false",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "chatcmpl-tool-6d5c4b3a2f1e",
                    "read_file",
                    "{'path': 'notes/todo.txt'}",
                    False,
                )
            ],
            repairs=repairs(),
            chunks=4,
        ),
    )


@case
def non_ascii_arguments() -> Capture:
    # DashScope (Qwen): Japanese text and an emoji inside the arguments and the content; one
    # chunk is sent with \\u escapes (an emoji as a surrogate pair), the others raw UTF-8.
    s = Stream("chatcmpl-ja-0f1e2d3c4b5a", "qwen-plus", 1794655701)
    escaped = s.chunk(choice({"tool_calls": [more(0, '世界 🌏", ')]}))
    body = sse(
        s.chunk(choice({"role": "assistant", "content": "了解しました。"})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        opening(0, "call_ja_8b7c6d5e4f", "translate", '{"text": "こんにちは')
                    ]
                }
            )
        ),
        dumps(escaped, ascii_only=True),
        s.chunk(choice({"tool_calls": [more(0, '"lang": "ja"}')]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description="Non-ASCII (Japanese, emoji) in content and arguments; raw and \\u-escaped.",
        source="DashScope (Qwen) wire; non-ASCII arguments (no reference link)",
        shape="non-ASCII arguments, raw UTF-8 and \\u escapes",
        proves="bodies are decoded as UTF-8 and JSON escapes decoded before concatenation",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            content="了解しました。",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_ja_8b7c6d5e4f",
                    "translate",
                    '{"text": "こんにちは世界 🌏", "lang": "ja"}',
                    True,
                )
            ],
            repairs=repairs(),
            chunks=5,
        ),
    )


@case
def two_choices_n2() -> Capture:
    # OpenAI with n=2: the choices interleave, one chunk per choice; choice 0 answers in text,
    # choice 1 calls a tool.
    s = Stream("chatcmpl-n2-Vb7Xc0Zq3Wr5", "gpt-4o-mini-2024-07-18", 1794655800, "fp_560af6e559")
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""}, index=0)),
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_n2_Bq8Hs1Kd4Mf7", "get_weather")],
                },
                index=1,
            )
        ),
        s.chunk(choice({"content": "Sunny"}, index=0)),
        s.chunk(choice({"tool_calls": [more(0, '{"city": "Nice"}')]}, index=1)),
        s.chunk(choice({"content": " in Nice today."}, index=0)),
        s.chunk(choice({}, "stop", index=0)),
        s.chunk(choice({}, "tool_calls", index=1)),
    )
    return Capture(
        description="Two choices (n=2): text on choice 0, a tool call on choice 1.",
        source=f"OpenAI n=2 ({QUIRKS}: choice index)",
        shape="two choices (n=2)",
        proves="per-choice state; content/finish_reason are choice 0's; calls carry their choice",
        body=body,
        expect=assembled(
            finish_reason="stop",
            finish_reasons={"0": "stop", "1": "tool_calls"},
            content="Sunny in Nice today.",
            tool_calls=[
                call(1, 0, "call_n2_Bq8Hs1Kd4Mf7", "get_weather", '{"city": "Nice"}', True)
            ],
            repairs=repairs(),
            chunks=7,
        ),
    )


@case
def non_string_identity() -> Capture:
    # Synthetic (spec rule): a gateway serialising ids as numbers and the name as false on
    # continuations.  Ignored and counted; the first delta's identity stands.
    s = Stream("chatcmpl-ns-4d3c2b1a", "glm-4.6", 1794655880)

    def cont(arguments: str) -> dict[str, Any]:
        return {"index": 0, "id": 0, "function": {"name": False, "arguments": arguments}}

    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_ns_2f4e6d8c", "get_weather")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [cont('{"city": ')]})),
        s.chunk(choice({"tool_calls": [cont('"Seoul"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Continuations with a numeric id and name false.",
        source=SPEC_ONLY,
        shape="non-string identity values",
        proves="non-string id/name are ignored and counted as non_string_identity_ignored",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, "call_ns_2f4e6d8c", "get_weather", '{"city": "Seoul"}', True)],
            # 2 continuations x (id 0 + name false) = 4
            repairs=repairs(non_string_identity_ignored=4),
            chunks=4,
        ),
    )


# --------------------------------------------------------------------------------------------
# End of stream and malformed payloads
# --------------------------------------------------------------------------------------------


@case
def stream_closed_mid_arguments() -> Capture:
    # Connection dropped mid-call: no finish chunk, no [DONE].
    s = Stream("2a3b4c5d-6e7f-4809-9a1b-2c3d4e5f6a7b", "deepseek-chat", 1794656001, DEEPSEEK_FP)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_Dd4Ff6Gg8Hh0Jj2Kk4Ll6Mm8", "tail_log")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"path": "/var/log/')]})),
        done=False,
    )
    return Capture(
        description="Stream ends without [DONE] in the middle of a call.",
        source=f"{QUIRKS}: streams that end without [DONE] (connection dropped)",
        shape="no [DONE], mid-arguments",
        proves="stream_closed dead letter",
        body=body,
        expect=dead_letter("stream_closed"),
    )


@case
def stream_closed_after_finish() -> Capture:
    # Connection dropped after the finish chunk but before [DONE].
    s = Stream("8b9c0d1e-2f3a-4b5c-8d6e-7f8091a2b3c4", "deepseek-chat", 1794656080, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(choice({"content": "Done."})),
        s.chunk(choice({"content": ""}, "stop")),
        done=False,
    )
    return Capture(
        description="A complete-looking answer whose stream never sent [DONE].",
        source=f"{QUIRKS}: streams that end without [DONE] (connection dropped)",
        shape="no [DONE] after a finish chunk",
        proves="[DONE] is required even when a finish_reason arrived",
        body=body,
        expect=dead_letter("stream_closed"),
    )


@case
def non_json_payload() -> Capture:
    # A gateway injects a plain-text error as an SSE data line mid-stream.
    s = Stream("c4d5e6f7-0819-4a2b-b3c4-d5e6f708192a", "deepseek-chat", 1794656150, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(choice({"content": "Let me"})),
        "upstream request timeout",
        s.chunk(choice({"content": ""}, "stop")),
    )
    return Capture(
        description="A data payload that is not JSON.",
        source=f"{QUIRKS}: payloads that are not JSON",
        shape="non-JSON payload",
        proves="malformed_chunk dead letter",
        body=body,
        expect=dead_letter("malformed_chunk"),
    )


@case
def json_not_object() -> Capture:
    # A payload that is valid JSON but not an object.
    s = Stream("d5e6f708-192a-4b3c-84d5-e6f708192a3b", "deepseek-chat", 1794656220, DEEPSEEK_FP)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        "[1,2]",
        s.chunk(choice({"content": ""}, "stop")),
    )
    return Capture(
        description="A data payload that is JSON but not an object ([1,2]).",
        source=f"{QUIRKS}: payloads that are not JSON",
        shape="JSON array payload",
        proves="malformed_chunk dead letter",
        body=body,
        expect=dead_letter("malformed_chunk"),
    )


@case
def choices_is_string() -> Capture:
    # A gateway puts an error message where the choices list belongs.
    s = Stream("chatcmpl-gw-e7f8091a2b3c", "qwen-plus", 1794656290)
    bad = s.chunk()
    bad["choices"] = "upstream error: rate limited"
    body = sse(s.chunk(choice({"role": "assistant", "content": ""})), bad)
    return Capture(
        description="choices is a string instead of a list.",
        source=f"{QUIRKS}: chunk shape (choices is a list)",
        shape="choices not a list",
        proves="malformed_chunk dead letter",
        body=body,
        expect=dead_letter("malformed_chunk"),
    )


@case
def arguments_object() -> Capture:
    # Synthetic (spec rule): a proxy forwards Ollama's native shape, arguments as an object.
    s = Stream("chatcmpl-420", "qwen3:8b", 1794656350, "fp_ollama")
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_u1v2w3x4",
                            "index": 0,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                        }
                    ],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )
    return Capture(
        description="function.arguments is an object, not a string.",
        source=SPEC_ONLY,
        shape="arguments as a JSON object",
        proves="arguments that are neither string nor null -> malformed_chunk",
        body=body,
        expect=dead_letter("malformed_chunk"),
    )


@case
def tool_index_boolean() -> Capture:
    # Synthetic (spec rule): a tool-call index of true; a bool is not an int.
    s = Stream("chatcmpl-bi-5a6b7c8d", "glm-4.6", 1794656420)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": True,
                            "id": "call_bi_1c2d3e4f",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                        }
                    ],
                }
            )
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="A tool-call index that is a boolean.",
        source=SPEC_ONLY,
        shape="tool index true",
        proves="bool is not an int -> malformed_chunk",
        body=body,
        expect=dead_letter("malformed_chunk"),
    )


@case
def done_repeated_then_garbage() -> Capture:
    # A gateway sends [DONE] twice and then junk; everything after the first [DONE] is ignored.
    s = Stream("chatcmpl-dd-6c7d8e9f0a1b", "glm-4.6", 1794656500)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": "OK"})),
        s.chunk(choice({}, "stop")),
    )
    body += (DONE + "data: {not json\n\n").encode("utf-8")
    return Capture(
        description="Bytes after the first [DONE] (a second [DONE], then a non-JSON payload).",
        source=f"{QUIRKS}: the stream ends with data: [DONE]",
        shape="trailing bytes after [DONE]",
        proves="[DONE] ends the stream; later bytes are not parsed or counted",
        body=body,
        expect=assembled(finish_reason="stop", content="OK", repairs=repairs(), chunks=2),
    )


@case
def sparse_choice_fields() -> Capture:
    # Synthetic (spec rule): a gateway that omits the choice index, sends "tool_calls": null on
    # text deltas and "delta": null on the finish chunk.
    s = Stream("chatcmpl-sp-0e1f2a3b4c", "glm-4.6", 1794656540)
    body = sse(
        s.chunk({"delta": {"role": "assistant", "content": "Yes", "tool_calls": None}}),
        s.chunk({"delta": {"content": ", it is.", "tool_calls": None}}),
        s.chunk({"delta": None, "finish_reason": "stop"}),
    )
    return Capture(
        description="Choices without index, tool_calls null, delta null on the finish chunk.",
        source=SPEC_ONLY,
        shape="choice index missing, tool_calls null, delta null",
        proves="missing choice index = position; null tool_calls/delta are empty, not malformed",
        body=body,
        expect=assembled(
            finish_reason="stop",
            finish_reasons={"0": "stop"},
            content="Yes, it is.",
            repairs=repairs(),
            chunks=3,
        ),
    )


@case
def done_only() -> Capture:
    # A gateway that answers with nothing but the terminator.
    return Capture(
        description="The body is only data: [DONE].",
        source=f"{QUIRKS}: the stream ends with data: [DONE]",
        shape="[DONE] only",
        proves="no choice ever seen: finish_reason null, EMPTY_RESPONSE, retryable, 0 chunks",
        body=DONE.encode("utf-8"),
        expect=assembled(
            finish_reason=None,
            error_code="EMPTY_RESPONSE",
            retryable=True,
            finish_reasons={},
            reasoning=None,
            repairs=repairs(),
            usage=None,
            chunks=0,
        ),
    )


# --------------------------------------------------------------------------------------------
# Framing
# --------------------------------------------------------------------------------------------


def _framing_stream(s: Stream) -> list[dict[str, Any]]:
    """A small DeepSeek tool-call response, used by the framing cases."""
    return [
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_00_Fr4mE9nG2sT6uV1wX5yZ8aB3", "get_weather")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"city": "Lima"}')]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    ]


_FRAMING_CALL = call(
    0, 0, "call_00_Fr4mE9nG2sT6uV1wX5yZ8aB3", "get_weather", '{"city": "Lima"}', True
)


@case
def crlf_framing() -> Capture:
    # CRLF line ends throughout (some HTTP servers and proxies).
    s = Stream("f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b", "deepseek-chat", 1794656601, DEEPSEEK_FP)
    text = "".join(f"data: {dumps(p)}\r\n\r\n" for p in _framing_stream(s)) + "data: [DONE]\r\n\r\n"
    return Capture(
        description="Every line ends with CRLF.",
        source=f"{QUIRKS}: SSE framing",
        shape="CRLF framing",
        proves="CRLF line ends split events like LF",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3
        ),
    )


@case
def cr_only_framing() -> Capture:
    # Bare CR line ends (legal in SSE, rare in the wild).
    s = Stream("a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d", "deepseek-chat", 1794656680, DEEPSEEK_FP)
    text = "".join(f"data: {dumps(p)}\r\r" for p in _framing_stream(s)) + "data: [DONE]\r\r"
    return Capture(
        description="Every line ends with a bare CR.",
        source=f"{QUIRKS}: SSE framing",
        shape="CR-only framing",
        proves="bare CR line ends split events like LF",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3
        ),
    )


@case
def keepalive_comments_and_fields() -> Capture:
    # DeepSeek ": keep-alive" comments, an OpenRouter-style processing comment, event:/id:/retry:
    # fields, an event with no data line, and a "data:" line without the space.
    s = Stream("b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", "deepseek-chat", 1794656750, DEEPSEEK_FP)
    first, second, last = (dumps(p) for p in _framing_stream(s))
    text = (
        ": keep-alive\n\n"
        f"event: message\nid: 1\nretry: 3000\ndata: {first}\n\n"
        ": OPENROUTER PROCESSING\n\n"
        "event: ping\n\n"
        f"id: 2\n: inline comment\ndata:{second}\n\n"
        ": keep-alive\n\n"
        f"event: message\nid: 3\ndata: {last}\n\n"
        "data: [DONE]\n\n"
    )
    return Capture(
        description="Comments, event/id/retry fields, a data-less event, data: without space.",
        source=f"DeepSeek keep-alives: {QUIRKS}: SSE framing",
        shape="keep-alive comments and SSE fields",
        proves="comments and non-data fields are ignored; data-less events add no chunk",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3
        ),
    )


@case
def multiline_data_event() -> Capture:
    # One JSON payload split over two data: lines of the same event (joined with "\n", which is
    # JSON whitespace between two members).
    s = Stream("c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f", "deepseek-chat", 1794656820, DEEPSEEK_FP)
    usage = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
    first, second, _ = _framing_stream(s)
    last = dumps(s.chunk(choice({"content": ""}, "tool_calls"), usage=usage))
    head, tail = last.split(',"usage":')
    text = (
        f"data: {dumps(first)}\n\n"
        f"data: {dumps(second)}\n\n"
        f'data: {head},\ndata: "usage":{tail}\n\n'
        "data: [DONE]\n\n"
    )
    return Capture(
        description="The finish chunk's JSON is split over two data: lines in one event.",
        source=f"{QUIRKS}: one SSE event per data: line group",
        shape="multi-line data event",
        proves="data lines of one event join with a newline before JSON parsing",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[_FRAMING_CALL],
            repairs=repairs(),
            usage={"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
            chunks=3,
        ),
    )


@case
def utf8_bom() -> Capture:
    # A UTF-8 byte order mark before the first event (a Windows-hosted proxy).
    s = Stream("d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f7a", "deepseek-chat", 1794656890, DEEPSEEK_FP)
    return Capture(
        description="The body starts with a UTF-8 BOM.",
        source=f"{QUIRKS}: SSE framing",
        shape="UTF-8 BOM at start",
        proves="a leading BOM is ignored; the first event still parses",
        body=b"\xef\xbb\xbf" + sse(*_framing_stream(s)),
        expect=assembled(
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3
        ),
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def build() -> list[Capture]:
    captures = []
    for fn in CASES:
        capture = fn()
        capture.name = fn.__name__
        captures.append(capture)
    names = [c.name for c in captures]
    if len(set(names)) != len(names):
        raise ValueError("duplicate capture names")
    return captures


def readme(captures: list[Capture]) -> str:
    lines = [
        "# Streamed tool-call corpus",
        "",
        "Raw SSE bodies of streamed chat completions (`NAME.sse`, byte-exact) and the record the",
        "assembler must produce for each (`NAME.json`: `options` to run it with, `expect` = keys",
        "of the record that must be equal). Generated by `_make.py`, which documents each case;",
        "regenerate with `python tests/core/corpus/_make.py`. Every expected value was worked",
        "out by hand from the assembler spec, not by running the assembler.",
        "",
        "| name | provider shape | what it proves |",
        "| --- | --- | --- |",
    ]
    for c in captures:
        lines.append(f"| `{c.name}` | {c.shape} | {c.proves} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    captures = build()
    keep = {f"{c.name}{ext}" for c in captures for ext in (".sse", ".json")}
    for stale in [*HERE.glob("*.sse"), *HERE.glob("*.json")]:
        if stale.name not in keep:
            stale.unlink()
    for c in captures:
        (HERE / f"{c.name}.sse").write_bytes(c.body)
        text = json.dumps(c.expectation(), ensure_ascii=False, indent=2) + "\n"
        (HERE / f"{c.name}.json").write_text(text, encoding="utf-8")
    (HERE / "README.md").write_text(readme(captures), encoding="utf-8")
    print(f"wrote {len(captures)} captures to {HERE}")


if __name__ == "__main__":
    main()
