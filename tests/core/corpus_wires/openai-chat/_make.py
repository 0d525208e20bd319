"""Generate the streamed tool-call corpus: ``NAME.sse`` bodies and ``NAME.json`` expectations.

Run from anywhere::

    python tests/core/corpus_wires/openai-chat/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
streamed chat completion (Server-Sent Events, written byte-exact) and the whole of the
assembler's record that it must produce.  The shapes come from
``shared/reference/provider-quirks.md`` (beside the repository); the comment on each case
names the provider and the public report it reproduces.  The cases of the 2026 rules (same-index
parallel calls, custom tools, provider fields, id synthesis, ends, refusals and provider errors)
come from ``shared/reference/shapes-2026.md`` and follow the spec of those rules.

Every expected value is written out by hand from the assembler spec (never computed by running
``toolwire``): the expectations are literals, not derived from the bodies.  The ``repairs``
counts are explained in the comment next to them, per entry and per field.
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
from tests.core.corpus_build import call, dumps, missing, synthesized_id

HERE = Path(__file__).resolve().parent

WIRE = "openai-chat"

REPAIR_KEYS = (
    "empty_identity_ignored",
    "null_identity_ignored",
    "non_string_identity_ignored",
    "identity_repeated",
    "identity_conflicts",
    "index_fallbacks",
    "index_reuse_splits",
    "ids_synthesized",
    "ended_without_done",
)

DONE = "data: [DONE]\n\n"


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``openai-chat`` (its ``NAME.json`` says so, as every corpus's does)."""

    wire = WIRE


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


def assembled(*, finish: str, **fields: Any) -> dict[str, Any]:
    """An assembled record of this corpus: its wire and finish after the outcome, then the
    keys in the order its files have always had them (calls before ``content``: the corpus
    was written before the other wires)."""
    outcome, *rest = corpus_build.assembled(None, **fields).items()
    return dict([outcome, ("wire", WIRE), ("finish", finish), *rest])


#: A dead letter names its wire, as every record does.
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)


CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


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
            finish="tool_calls",
            model="deepseek-chat",
            response_id="0b1e2c8e-5a51-4c3e-9d0e-2f6a4f1c7d93",
            finish_reasons={"0": "tool_calls"},
            bytes=1893,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="deepseek-chat",
            response_id="5d0c7a3e-91b2-4f68-8e0d-6b4c2a1f9e70",
            finish_reasons={"0": "stop"},
            bytes=1500,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Hello! How can I help you today?",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="deepseek-reasoner",
            response_id="a7e41c90-3b6d-4d22-b1f8-0c9e5a2d7f13",
            finish_reasons={"0": "stop"},
            usage={
                "prompt_tokens": 14,
                "completion_tokens": 22,
                "total_tokens": 36,
                "completion_tokens_details": {"reasoning_tokens": 15},
            },
            bytes=1710,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "2 + 2 = 4.",
                    "reasoning": "The user asks for 2+2. That is 4.",
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="deepseek-chat",
            response_id="c3f9a2b1-7e5d-4a08-9c6b-1d2e3f4a5b6c",
            finish_reasons={"0": "stop"},
            usage={"prompt_tokens": 1203, "completion_tokens": 0, "total_tokens": 1203},
            bytes=654,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="deepseek-chat",
            response_id="e2b7d4f1-0a9c-4e35-8f16-7c3d9b0a2e54",
            finish_reasons={"0": "stop"},
            bytes=1327,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Paris is the capital of France.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="gpt-4.1-mini-2025-04-14",
            response_id="chatcmpl-CQx7Rk2mN9pL4vT0sW8yB3hJ",
            finish_reasons={"0": "tool_calls"},
            bytes=1322,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="gpt-4o-mini-2024-07-18",
            response_id="chatcmpl-Bt5Yq0wE2rT7uI9oP1aS3dF6",
            finish_reasons={"0": "stop"},
            bytes=1131,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Hi there!",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="length",
            model="deepseek-chat",
            response_id="1f0e9d8c-7b6a-4594-8372-615049382716",
            finish_reasons={"0": "length"},
            usage={"prompt_tokens": 230, "completion_tokens": 16, "total_tokens": 246},
            bytes=1490,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "length",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="content_filter",
            model="deepseek-chat",
            response_id="6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d",
            finish_reasons={"0": "content_filter"},
            usage=None,
            bytes=1170,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "content_filter",
                    "content": "Here is a summary of the article:",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="other",
            model="deepseek-chat",
            response_id="9e8d7c6b-5a49-4837-a625-14f3e2d1c0b9",
            finish_reasons={"0": "insufficient_system_resource"},
            usage=None,
            bytes=1075,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "insufficient_system_resource",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="deepseek-chat",
            response_id="3c2b1a09-8f7e-4d6c-b5a4-93827160f5e4",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1817,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="deepseek-chat",
            response_id="7d6c5b4a-3928-4170-86f5-e4d3c2b1a098",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=2025,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="gpt-4.1",
            response_id="chatcmpl-vk-5N1q8Rz3Lx0Wm7Tb4Ye9Dc2F",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1385,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="hy3",
            response_id="hy3-0a4f7c2e91d8b653",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1383,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="longcat-2.0",
            response_id="lc-20261115-7e3a9b1d5f",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1664,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": "Reading both files.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="deepseek-v3.1",
            response_id="chatcmpl-acp-2b7e0d9f4c1a",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=879,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="qwen3-coder-plus",
            response_id="chatcmpl-3c1b5f0e-8a7d-9b2c-a4e6-f1d0c9b8a7e6",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1599,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="Qwen/Qwen3-32B",
            response_id="chatcmpl-7d0d3c1f9a0b4b62a1f1f0d2c7b9e4a1",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1376,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="accounts/fireworks/models/kimi-k2-instruct",
            response_id="4f6c2a1e-9d3b-47e8-a05c-8b1d2e3f4a5b",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1770,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="gpt-4o-mini",
            response_id="chatcmpl-8e2f4a6c-1b3d-4e5f-9a7b-c0d1e2f3a4b5",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1667,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="gpt-oss-20b",
            response_id="chatcmpl-Lk8vQ2nX5rB1tY7pW0cZ3mH9",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1977,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
    # Re-checked against spec §1: before each new id the joined arguments ('{', '{"', ...,
    # '{"path":"."') never parse as complete JSON, so every new id stays a conflict; the
    # different-id-and-name exception needs a non-empty name, and the name is "".
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
        "(the arguments stay incomplete JSON until the last delta, and the name is empty)",
        body=sse(*chunks),
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, "672935248", "list_dir", '{"path":"."}', True)],
            # deltas 2..12 (11 of them): new id -> 11 conflicts; name "" -> 11 empty
            repairs=repairs(identity_conflicts=11, empty_identity_ignored=11),
            chunks=13,
            finish="tool_calls",
            model="google/gemma-3-12b",
            response_id="chatcmpl-r8y2c5f0k1m9q3t7w6z4",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=3881,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
    # Re-checked against spec §1: still holds (each earlier call has an id and complete JSON
    # arguments when the next id arrives; the names differ too, so the kept exception agrees).
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
            finish="tool_calls",
            model="qwen3:8b",
            response_id="chatcmpl-412",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1336,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def ollama_index_reuse_same_name() -> Capture:
    # Ollama (ollama#15457): two parallel calls to the SAME function, both at index 0.
    # Re-checked against the 2026 rules (spec §1): this case CHANGED.  Before, the split needed
    # id AND name to differ, so the two calls merged into one (conflict + repeat, arguments
    # '{"city":"Paris"}{"city":"Berlin"}').  Now, at wire index 0 the current call has a
    # non-empty id (call_m3n4o5p6) and arguments that parse as one complete JSON value
    # ('{"city":"Paris"}'), and the second entry carries a different non-empty id together with
    # a non-empty name: it starts a NEW call at index highest(0)+1 = 1, whatever its name.  Its
    # id and name are the first values of the new call: no conflict, no repeat counted.
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
        description="Two calls to one function both at index 0: split after complete arguments.",
        source=f"Ollama: {OLLAMA_15457}",
        shape="Ollama index 0 reuse with the same name",
        proves="a new id after complete JSON arguments starts a new call even with the same name "
        "(2026 rule §1; before, the calls merged)",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_m3n4o5p6", "get_weather", '{"city":"Paris"}', True),
                call(0, 1, "call_q7r8s9t0", "get_weather", '{"city":"Berlin"}', True),
            ],
            # 2nd entry: new id after complete arguments -> 1 split; its id and name are the
            # new call's first values -> nothing else counted
            repairs=repairs(index_reuse_splits=1),
            chunks=3,
            finish="tool_calls",
            model="qwen3:8b",
            response_id="chatcmpl-733",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=959,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
        expect=dead_letter(
            "unknown_tool",
            # One call: "isting_file" (the last non-empty name) replaced "edit_ex", never
            # joined; the fragments "" + '{"filepath": "src/app.ts", ' + '"replacement": ...}'
            # are one JSON object.  Complete identity -> missing [].
            calls=[
                missing(
                    call(
                        0,
                        0,
                        "call_gm_4f1e9a7c",
                        "isting_file",
                        '{"filepath": "src/app.ts", "replacement": "export {}\\n"}',
                        True,
                    )
                )
            ],
            model="gemini-2.5-flash",
            response_id="chatcmpl-gem-6Yb2Kq9Xw1",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(identity_conflicts=1),
            chunks=4,
            bytes=1135,
            frames_after_end=0,
            detail="not among the declared tools: 'isting_file'",
            declared_tools=["edit_existing_file", "read_file"],
        ),
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
        expect=dead_letter(
            "identity_conflict",
            # Strict mode assembles as usual and refuses at the decision: entry 2's id arrives
            # while the arguments are "{" (incomplete JSON) -> no split, a conflict, the last
            # id wins; its name "" is ignored; arguments "{" + "}" are JSON.
            calls=[missing(call(0, 0, "115830946", "get_time", "{}", True))],
            model="google/gemma-3-12b",
            response_id="chatcmpl-x2w9v4u7t1s6r3q8p5o0",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(empty_identity_ignored=1, identity_conflicts=1),
            chunks=3,
            bytes=867,
            frames_after_end=0,
            detail="1 identity value(s) replaced by a different one (strict mode)",
            declared_tools=None,
        ),
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
            model="kimi-k2.5",
            response_id="gen-1794654601-Qm7Tz2Xc9Lp4",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(),
            chunks=3,
            bytes=792,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id or name",
            declared_tools=None,
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
            model="agnes-3.0-flash",
            response_id="agn-5c8e1f3a7b2d",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(empty_identity_ignored=2),
            chunks=3,
            bytes=812,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id or name",
            declared_tools=None,
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
            model="agnes-3.0-flash",
            response_id="agn-9a0b1c2d3e4f",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(empty_identity_ignored=2),
            chunks=5,
            bytes=1380,
            frames_after_end=0,
            detail="call 1 of choice 0 has no id or name",
            declared_tools=None,
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
            model="llama3.1:8b",
            response_id="chatcmpl-88",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(),
            chunks=2,
            bytes=685,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id; call 1 of choice 0 has no id",
            declared_tools=None,
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
            finish="length",
            model="kimi-k2.5",
            response_id="gen-1794654910-Hn3Rv8Kw1Yd6",
            finish_reasons={"0": "length"},
            usage=None,
            bytes=752,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "length",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="claude-sonnet-4",
            response_id="chatcmpl-proxy-4b8d2f6a0c1e",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1000,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def proxy_missing_index_sequential() -> Capture:
    # Corporate proxy (template-repo): calls sent one after the other, no index on any entry, so
    # every entry falls back to position 0; the second call splits off like Ollama's reuse.
    # Re-checked against spec §1: still holds.  At chunk 3 the call at wire index 0 has id a and
    # arguments '{"city": "Oslo"}' (complete JSON), and the entry carries a different id b with
    # a non-empty name -> a new call at index 1 (both the new rule and the kept exception fire;
    # it is one split).  Chunk 4 (fallback wire index 0) then feeds the new call.
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
            finish="tool_calls",
            model="claude-sonnet-4",
            response_id="chatcmpl-proxy-9e7c5a3b1d0f",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1420,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="meta-llama/Llama-3.3-70B-Instruct",
            response_id="chatcmpl-5f4e3d2c1b0a49f8a7e6d5c4b3a2f1e0",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1203,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="llama3.2",
            response_id="chatcmpl-57",
            finish_reasons={"0": "stop"},
            usage=None,
            bytes=1129,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "The sky is blue.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="glm-4.6",
            response_id="chatcmpl-wb-1a2b3c4d5e6f",
            finish_reasons={"0": "tool_calls"},
            bytes=1075,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="glm-4.6",
            response_id="chatcmpl-wb-7f8e9d0c1b2a",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=947,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="MiniMax-M2",
            response_id="chatcmpl-rp-3e5g7i9k1m",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1011,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="mistral-nemo",
            response_id="chatcmpl-301",
            finish_reasons={"0": "stop"},
            usage=None,
            bytes=604,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
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
            finish="tool_calls",
            model="Qwen/Qwen2.5-7B-Instruct",
            response_id="chatcmpl-9c8b7a6f5e4d43c2b1a0f9e8d7c6b5a4",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1146,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="qwen-plus",
            response_id="chatcmpl-ja-0f1e2d3c4b5a",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1320,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": "了解しました。",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model="gpt-4o-mini-2024-07-18",
            response_id="chatcmpl-n2-Vb7Xc0Zq3Wr5",
            usage=None,
            bytes=1987,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Sunny in Nice today.",
                    "reasoning": None,
                    "refusal": None,
                },
                {
                    "choice": 1,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="glm-4.6",
            response_id="chatcmpl-ns-4d3c2b1a",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1066,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
        expect=dead_letter(
            "stream_closed",
            # The call as far as it came: identity from the first delta, arguments cut
            # mid-string (not JSON).
            calls=[
                missing(
                    call(
                        0, 0, "call_00_Dd4Ff6Gg8Hh0Jj2Kk4Ll6Mm8", "tail_log", '{"path": "/var/log/',
                        False,
                    )
                )
            ],
            model="deepseek-chat",
            response_id="2a3b4c5d-6e7f-4809-9a1b-2c3d4e5f6a7b",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=2,
            bytes=762,
            frames_after_end=0,
            detail="the body ended without data: [DONE] (connection dropped or cut)",
            declared_tools=None,
        ),
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
        expect=dead_letter("stream_closed", calls=[],
            model="deepseek-chat",
            response_id="8b9c0d1e-2f3a-4b5c-8d6e-7f8091a2b3c4",
            finish_reason="stop",
            finish_reasons={"0": "stop"},
            usage=None,
            repairs=repairs(),
            chunks=3,
            bytes=845,
            frames_after_end=0,
            detail=(
                "the body ended without data: [DONE] (connection dropped or cut); every choice had "
                "sent its finish reason, so the provider may be one that never sends data: [DONE] "
                "(Writer, Perplexity's older chat.completion chunks): name it in "
                "TOOLWIRE_END_WITHOUT_DONE (toolwire assemble --end-without-done) to take such a "
                "body as complete"
            ),
            declared_tools=None,
        ),  # a text answer: no call
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
        # No chunk carried a tool call: no call.
        expect=dead_letter("malformed_chunk", calls=[],
            model="deepseek-chat",
            response_id="c4d5e6f7-0819-4a2b-b3c4-d5e6f708192a",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=2,
            bytes=892,
            frames_after_end=0,
            declared_tools=None,
        ),
        unstated=corpus_build.PARSER_DETAIL,
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
        # No chunk carried a tool call: no call.
        expect=dead_letter("malformed_chunk", calls=[],
            model="deepseek-chat",
            response_id="d5e6f708-192a-4b3c-84d5-e6f708192a3b",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=1,
            bytes=594,
            frames_after_end=0,
            detail="not a JSON object: [1,2]",
            declared_tools=None,
        ),
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
        # No chunk carried a tool call: no call.
        expect=dead_letter("malformed_chunk", calls=[],
            model="qwen-plus",
            response_id="chatcmpl-gw-e7f8091a2b3c",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=2,
            bytes=388,
            frames_after_end=0,
            detail=(
                "'choices' is not a list: {\"id\":\"chatcmpl-gw-e7f8091a2b3c\",\"object\":\"chat.co"
                "mpletion.chunk\",\"created\":1794656290,\"model\":\"qwen-plus\",\"choices\":\"upst"
                "ream error: rate limited\"}"
            ),
            declared_tools=None,
        ),
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
        # The only call entry is in the malformed chunk, and a payload that fails is not applied
        # (toolwire/core/wire.py: "A payload that fails is the dead letter malformed_chunk"):
        # nothing of it was assembled, so no call -- not a call with its id and name only.
        expect=dead_letter("malformed_chunk", calls=[],
            model="qwen3:8b",
            response_id="chatcmpl-420",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=1,
            bytes=595,
            frames_after_end=0,
            detail=(
                "'function.arguments' is not a string: {\"id\":\"chatcmpl-420\",\"object\":\"chat.c"
                "ompletion.chunk\",\"created\":1794656350,\"model\":\"qwen3:8b\",\"system_fingerpri"
                "nt\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"c"
                "ontent\":\"\",\"tool_call…"
            ),
            declared_tools=None,
        ),
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
        # The only call entry is in the malformed chunk (an index true places it nowhere): no
        # call.
        expect=dead_letter("malformed_chunk", calls=[],
            model="glm-4.6",
            response_id="chatcmpl-bi-5a6b7c8d",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=1,
            bytes=558,
            frames_after_end=0,
            detail=(
                "a tool call 'index' is not a non-negative integer: "
                "{\"id\":\"chatcmpl-bi-5a6b7c8d\",\"object\":\"chat.completion.chunk\",\"created\":"
                "1794656420,\"model\":\"glm-4.6\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"a"
                "ssistant\",\"content\":null,\"tool_calls\":[{\"index\":true,\"id\":\"…"
            ),
            declared_tools=None,
        ),
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
        expect=assembled(finish_reason="stop", content="OK", repairs=repairs(), chunks=2,
            finish="stop",
            model="glm-4.6",
            response_id="chatcmpl-dd-6c7d8e9f0a1b",
            finish_reasons={"0": "stop"},
            usage=None,
            bytes=450,
            frames_after_end=2,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "OK",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
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
            finish="stop",
            model="glm-4.6",
            response_id="chatcmpl-sp-0e1f2a3b4c",
            usage=None,
            bytes=537,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Yes, it is.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="stop",
            model=None,
            response_id=None,
            bytes=14,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[],
            server_tool_calls=[],
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
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3,
            finish="tool_calls",
            model="deepseek-chat",
            response_id="f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1066,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3,
            finish="tool_calls",
            model="deepseek-chat",
            response_id="a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1058,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3,
            finish="tool_calls",
            model="deepseek-chat",
            response_id="b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1200,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish="tool_calls",
            model="deepseek-chat",
            response_id="c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f",
            finish_reasons={"0": "tool_calls"},
            bytes=1135,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
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
            finish_reason="tool_calls", tool_calls=[_FRAMING_CALL], repairs=repairs(), chunks=3,
            finish="tool_calls",
            model="deepseek-chat",
            response_id="d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f7a",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1061,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# 2026 rules: same-index parallel calls (spec §1)
# --------------------------------------------------------------------------------------------

# References from shapes-2026.md.
SHAPES = "shapes-2026.md"
LITELLM_37792 = "https://github.com/BerriAI/litellm/issues/37792"
HASS_LOCAL_92 = f"hass_local_openai_llm #92 ({SHAPES})"
CYBERSTRIKE_231 = f"CyberStrikeAI #231 ({SHAPES})"
AGNO_8880 = f"agno #8880 ({SHAPES})"
VLLM_51697 = "https://github.com/vllm-project/vllm/issues/51697"
OPENAI_OPENAPI_576 = "https://github.com/openai/openai-openapi/issues/576"
OPENAI_PYTHON_2530 = "https://github.com/openai/openai-python/issues/2530"
PI_8504 = "https://github.com/earendil-works/pi/issues/8504"
DAYU_AGENT_45 = "https://github.com/noho/dayu-agent/issues/45"
EVA_206 = "https://github.com/ServiceNow/eva/pull/206"
LANGBOT_2262 = f"LangBot #2262 ({SHAPES})"
AGENTGATEWAY_2233 = f"agentgateway PR #2233 ({SHAPES})"
PERPLEXITY_FIXTURES = (
    f"Perplexity (Sonar) recordings: vercel/ai packages/perplexity fixtures, prism-php/prism "
    f"tests ({SHAPES}, 'Ends, refusals and errors')"
)
OPENAI_REFUSAL = (
    "OpenAI structured outputs: openai-python tests/lib/chat/test_completions_streaming.py "
    f"({SHAPES}, 'Ends, refusals and errors')"
)
GROQ_CASSETTES = f"Groq: pydantic-ai Groq cassettes ({SHAPES}, 'Ends, refusals and errors')"
OPENROUTER_CASSETTES = (
    f"OpenRouter: pydantic-ai OpenRouter cassettes ({SHAPES}, 'Ends, refusals and errors')"
)


def _litellm_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """LiteLLM's ollama_chat entry: the whole call in one delta, always at index 0."""
    return {
        "id": call_id,
        "function": {"arguments": arguments, "name": name},
        "type": "function",
        "index": 0,
    }


def _litellm_choice(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
    return {"finish_reason": finish, "index": 0, "delta": delta}


@case
def litellm_ollama_chat_same_name_split() -> Capture:
    # LiteLLM ollama_chat (litellm#37792): two get_weather calls, each whole in one delta, both
    # on index 0, ids call_1 and call_2.
    # Entry 1 opens call 0 (id call_1, name get_weather, arguments '{"city":"Paris"}').
    # Entry 2 at wire index 0: call 0 has a non-empty id and arguments that parse as complete
    # JSON; the entry carries a different non-empty id (call_2) with a non-empty name -> a new
    # call at index highest(0)+1 = 1 (index_reuse_splits 1); call_2 and get_weather are that
    # call's first values (nothing else counted).  function_call: null is ignored entirely.
    s = Stream("chatcmpl-6f1d2c3b-9a8e-4f7d-b6c5-a4e3d2c1b0a9", "ollama_chat/qwen3:8b", 1794660001)
    body = sse(
        s.chunk(
            _litellm_choice(
                {
                    "content": None,
                    "role": "assistant",
                    "function_call": None,
                    "tool_calls": [_litellm_call("call_1", "get_weather", '{"city":"Paris"}')],
                }
            )
        ),
        s.chunk(
            _litellm_choice(
                {
                    "content": None,
                    "role": "assistant",
                    "function_call": None,
                    "tool_calls": [_litellm_call("call_2", "get_weather", '{"city":"Rome"}')],
                }
            )
        ),
        s.chunk(_litellm_choice({"content": None, "role": None}, "tool_calls")),
    )
    return Capture(
        description="Two calls to one function, each whole, both at index 0 (LiteLLM ollama_chat).",
        source=f"LiteLLM ollama_chat: {LITELLM_37792}",
        shape="LiteLLM ollama_chat parallel calls to one function on index 0",
        proves="same-index split: a new id after complete JSON arguments starts a new call, "
        "same name or not; new index = highest+1",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_1", "get_weather", '{"city":"Paris"}', True),
                call(0, 1, "call_2", "get_weather", '{"city":"Rome"}', True),
            ],
            repairs=repairs(index_reuse_splits=1),
            chunks=3,
            finish="tool_calls",
            model="ollama_chat/qwen3:8b",
            response_id="chatcmpl-6f1d2c3b-9a8e-4f7d-b6c5-a4e3d2c1b0a9",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1020,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


def _or_entry(call_id: str, arguments: str, name: str | None = None) -> dict[str, Any]:
    """An engine behind OpenRouter that repeats index 0 and the call id on every delta."""
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function = {"name": name, "arguments": arguments}
    return {"index": 0, "id": call_id, "type": "function", "function": function}


@case
def openrouter_same_name_split_fragmented() -> Capture:
    # OpenRouter engines that repeat index and id (hass_local_openai_llm#92): two get_weather
    # calls, both on index 0, arguments in fragments; every delta repeats its call's id; the
    # second call's first delta carries its new id and the name; finish_reason twice.
    #   e1 (call_A, name, ""): opens call 0; first values, nothing counted.
    #   e2, e3 (call_A + fragment): same id -> identity_repeated 1 each (2).  The same id never
    #     splits.  After e3 the arguments are '{"city": "Paris"}' (complete JSON).
    #   e4 (call_B, name, ""): different non-empty id + non-empty name after complete JSON ->
    #     split (1), new call at index 1, wire index 0 now feeds it; call_B/get_weather are its
    #     first values (not repeats, not conflicts).
    #   e5, e6 (call_B + fragment): same id as the call wire 0 now feeds -> repeated (2).
    # Totals: identity_repeated 4, index_reuse_splits 1.
    s = Stream("gen-1794660100-Or7Kq2Wz9Xc4", "openai/gpt-oss-120b", 1794660100)
    a, b = "call_or_7Hq2Lm9Xv4Tb", "call_or_3Pn8Rd1Fs6Yk"
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_or_entry(a, "", "get_weather")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [_or_entry(a, '{"city":')]})),
        s.chunk(choice({"tool_calls": [_or_entry(a, ' "Paris"}')]})),
        s.chunk(choice({"tool_calls": [_or_entry(b, "", "get_weather")]})),
        s.chunk(choice({"tool_calls": [_or_entry(b, '{"city":')]})),
        s.chunk(choice({"tool_calls": [_or_entry(b, ' "Rome"}')]})),
        s.chunk(choice({}, "tool_calls")),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Two same-name calls on index 0, fragmented arguments, id on every delta.",
        source=f"OpenRouter engines repeating index and id: {HASS_LOCAL_92}",
        shape="index 0 reused for a same-name call, arguments in fragments, id repeated",
        proves="the split fires on the new id after complete JSON; later fragments on wire "
        "index 0 feed the new call; repeated ids are counted, never split",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, a, "get_weather", '{"city": "Paris"}', True),
                call(0, 1, b, "get_weather", '{"city": "Rome"}', True),
            ],
            repairs=repairs(identity_repeated=4, index_reuse_splits=1),
            chunks=8,
            finish="tool_calls",
            model="openai/gpt-oss-120b",
            response_id="gen-1794660100-Or7Kq2Wz9Xc4",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=2345,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def gateway_three_calls_one_index() -> Capture:
    # OpenAI-compatible gateway (CyberStrikeAI#231): three parallel calls all on index 0, each
    # opened by id + name (arguments "") and followed by two argument fragments.
    #   call_c2 arrives when call 0 holds '{"path": "a.py"}' (complete) -> split (1), index 1.
    #   call_c3 arrives when call 1 holds '{"path": "b.py"}' (complete) -> split (2), index 2.
    # The names (read_file, read_file, grep) do not matter.  Nothing else is counted.
    s = Stream("chatcmpl-csa-2c4e6a8b0d1f", "qwen3-235b-a22b", 1794660200)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_c1_Xa8Lq3", "read_file")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"path": ')]})),
        s.chunk(choice({"tool_calls": [more(0, '"a.py"}')]})),
        s.chunk(choice({"tool_calls": [opening(0, "call_c2_Rm5Tz1", "read_file")]})),
        s.chunk(choice({"tool_calls": [more(0, '{"path": ')]})),
        s.chunk(choice({"tool_calls": [more(0, '"b.py"}')]})),
        s.chunk(choice({"tool_calls": [opening(0, "call_c3_Wb2Ny7", "grep")]})),
        s.chunk(choice({"tool_calls": [more(0, '{"pattern": "TODO"')]})),
        s.chunk(choice({"tool_calls": [more(0, ', "path": "."}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="Three parallel calls on index 0, fragmented arguments.",
        source=f"OpenAI-compatible gateways: {CYBERSTRIKE_231}",
        shape="three calls on one wire index",
        proves="each new id after complete JSON splits again: indices 0, 1, 2",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_c1_Xa8Lq3", "read_file", '{"path": "a.py"}', True),
                call(0, 1, "call_c2_Rm5Tz1", "read_file", '{"path": "b.py"}', True),
                call(0, 2, "call_c3_Wb2Ny7", "grep", '{"pattern": "TODO", "path": "."}', True),
            ],
            repairs=repairs(index_reuse_splits=2),
            chunks=10,
            finish="tool_calls",
            model="qwen3-235b-a22b",
            response_id="chatcmpl-csa-2c4e6a8b0d1f",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=2734,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


def _new_id_mid_arguments_body(s: Stream, first: str, second: str) -> bytes:
    """A call whose id changes while its arguments are still incomplete JSON (same name)."""
    return sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, first, "search_docs", '{"query": ')],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [opening(0, second, "search_docs", '"refund policy"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )


@case
def new_id_mid_arguments_conflict() -> Capture:
    # Spec §1 bullet: a different id while the arguments are incomplete stays a conflict.
    # Entry 2 arrives when call 0 holds '{"query": ' (not parseable JSON) -> no §1 split; the
    # kept exception needs a different name too, and the name is the same -> no split.
    # So: id call_k2 replaces call_k1 (last non-empty wins) -> identity_conflicts 1; the name
    # equals the established one -> identity_repeated 1; the fragment is appended.
    s = Stream("chatcmpl-mid-4b6d8f0a2c", "google/gemma-3-27b", 1794660300)
    return Capture(
        description="A new id while the arguments are incomplete: one call, last id wins.",
        source=f"{SPEC_ONLY}; LM Studio-like id change ({HERMES_106943})",
        shape="new id mid-arguments, same name",
        proves="incomplete arguments never split: identity conflict, last id wins, one call",
        body=_new_id_mid_arguments_body(s, "call_k1_Pq4Ws8", "call_k2_Lm7Xv3"),
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_k2_Lm7Xv3", "search_docs", '{"query": "refund policy"}', True)
            ],
            repairs=repairs(identity_conflicts=1, identity_repeated=1),
            chunks=3,
            finish="tool_calls",
            model="google/gemma-3-27b",
            response_id="chatcmpl-mid-4b6d8f0a2c",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=901,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def new_id_mid_arguments_strict() -> Capture:
    # The same shape as new_id_mid_arguments_conflict, in strict mode: the conflict (1) is
    # dead-lettered identity_conflict.
    s = Stream("chatcmpl-mid-9e1c3a5b7d", "google/gemma-3-27b", 1794660360)
    return Capture(
        description="A new id while the arguments are incomplete, strict mode.",
        source=f"{SPEC_ONLY}; LM Studio-like id change ({HERMES_106943})",
        shape="new id mid-arguments, same name (strict)",
        proves="the mid-arguments id change is a conflict, so strict mode dead-letters it",
        body=_new_id_mid_arguments_body(s, "call_k3_Tz2Nb6", "call_k4_Qd9Hr1"),
        strict=True,
        expect=dead_letter(
            "identity_conflict",
            # Assembled as in new_id_mid_arguments_conflict (one call, the last id), refused
            # at the decision.
            calls=[
                missing(
                    call(0, 0, "call_k4_Qd9Hr1", "search_docs", '{"query": "refund policy"}', True)
                )
            ],
            model="google/gemma-3-27b",
            response_id="chatcmpl-mid-9e1c3a5b7d",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(identity_repeated=1, identity_conflicts=1),
            chunks=3,
            bytes=901,
            frames_after_end=0,
            detail="1 identity value(s) replaced by a different one (strict mode)",
            declared_tools=None,
        ),
    )


@case
def different_identity_mid_arguments_split() -> Capture:
    # Spec §1 EXCEPTION kept from before: entry 2 arrives while call 0's arguments are
    # '{"path": "notes.txt"' (incomplete), but its id AND name are both non-empty and both
    # differ from call 0's established id and name, and call 0 already has fragments -> split
    # (index_reuse_splits 1), new call at index 1.  Call 0 keeps its incomplete arguments
    # (arguments_json false); finish tool_calls emits both.
    s = Stream("chatcmpl-836", "qwen3:14b", 1794660420, "fp_ollama")
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        _ollama_call("call_x1_Jf5", "read_file", '{"path": "notes.txt"')
                    ],
                }
            )
        ),
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_ollama_call("call_x2_Gk8", "list_dir", '{"dir": "."}')],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )
    return Capture(
        description="A new id and a new name while the arguments are incomplete: still splits.",
        source=f"{SPEC_ONLY}; Ollama reuse of index 0 ({OLLAMA_15457})",
        shape="new id and new name mid-arguments on index 0",
        proves="the old split (id and name both differ, arguments begun) is kept as an exception",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_x1_Jf5", "read_file", '{"path": "notes.txt"', False),
                call(0, 1, "call_x2_Gk8", "list_dir", '{"dir": "."}', True),
            ],
            repairs=repairs(index_reuse_splits=1),
            chunks=3,
            finish="tool_calls",
            model="qwen3:14b",
            response_id="chatcmpl-836",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=952,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def deepseek_v4_head_and_tail_split() -> Capture:
    # DeepSeek-v4 (agno#8880): the second call's head (id + name) arrives on index 0, its tail
    # (argument fragments, with DeepSeek's "" id/name continuations) on index 1.
    #   c1: opens call 0 (call_00_..., get_weather, "").
    #   c2: "" continuation on index 0 -> empty_identity_ignored 2; call 0 = '{"city": "Paris"}'.
    #   c3: head on index 0: different non-empty id + name after complete JSON -> split (1),
    #       new call at index 1 (id call_01_..., name get_weather, arguments ""); wire 0 -> it.
    #   c4: wire index 1 has never been seen, but index 1 is taken by the split -> a new call at
    #       highest(1)+1 = 2, with no identity; id "" and name "" -> empty 2.
    #   c5: wire index 1 -> call 2; empty 2.
    # Totals: empty_identity_ignored 6, index_reuse_splits 1.  Finish tool_calls: call 2 has no
    # id and no name -> missing_identity, listing every call (the split call 1 has identity but
    # empty arguments: it must not run either; nothing is executable).
    s = Stream("4e5f6a7b-8c9d-4e0f-a1b2-c3d4e5f6a7b8", "deepseek-v4", 1794660500, DEEPSEEK_FP)
    a, b = "call_00_Hd4Tl8Vq2Zs6Nx0Bm3Kc7Wj", "call_01_Ft9Pr1Ye5Ua3Oi7Gs2Lx4Qn"
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, a, "get_weather")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [_empty_cont(0, '{"city": "Paris"}')]})),
        s.chunk(choice({"tool_calls": [opening(0, b, "get_weather")]})),
        s.chunk(choice({"tool_calls": [_empty_cont(1, '{"city": ')]})),
        s.chunk(choice({"tool_calls": [_empty_cont(1, '"Rome"}')]})),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description="A second call's head on index 0 and its tail on index 1.",
        source=f"DeepSeek-v4: {AGNO_8880}",
        shape="DeepSeek-v4 head on index 0, tail on index 1",
        proves="the head splits off (index 1); the tail's wire index is taken, so it opens an "
        "identity-less call 2 -> missing_identity, never an executable wrong call",
        body=body,
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(call(0, 0, a, "get_weather", '{"city": "Paris"}', True)),
                missing(call(0, 1, b, "get_weather", "", False)),
                missing(call(0, 2, None, None, '{"city": "Rome"}', True), "id", "name"),
            ],
            repairs=repairs(empty_identity_ignored=6, index_reuse_splits=1),
            chunks=6,
            model="deepseek-v4",
            response_id="4e5f6a7b-8c9d-4e0f-a1b2-c3d4e5f6a7b8",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=2197,
            frames_after_end=0,
            detail="call 2 of choice 0 has no id or name",
            declared_tools=None,
        ),
    )


@case
def vllm_xlam_duplicated_arguments_same_id() -> Capture:
    # vLLM xlam parser (vllm#51697): the end-of-stream flush appends the full arguments again;
    # here the flush delta repeats the call's id.
    #   c2: id + name (no arguments key) -> first values.
    #   c3, c4: fragments -> '{"city": "Seattle", "state": "WA", "unit": "celsius"}'.
    #   c5: the same id with the whole arguments again: the same id never splits -> appended;
    #       the id counts identity_repeated 1 (no name key on it).
    # Result: one call, '{…}{…}', arguments_json false, emitted (finish tool_calls).
    s = Stream(
        "chatcmpl-3d2c1b0a9f8e47d6a5b4c3d2e1f0a9b8", "Salesforce/Llama-xLAM-2-8b-fc-r", 1794660600
    )
    tid = "chatcmpl-tool-5a7c9e1b3d4f"
    whole = '{"city": "Seattle", "state": "WA", "unit": "celsius"}'
    body = sse(
        s.chunk(choice({"role": "assistant", "content": ""})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "id": tid,
                            "type": "function",
                            "index": 0,
                            "function": {"name": "get_current_weather"},
                        }
                    ]
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"city": "Seattle", ')]})),
        s.chunk(choice({"tool_calls": [more(0, '"state": "WA", "unit": "celsius"}')]})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "id": tid,
                            "type": "function",
                            "index": 0,
                            "function": {"arguments": whole},
                        }
                    ]
                }
            )
        ),
        s.chunk(choice({"content": ""}, "tool_calls")),
    )
    return Capture(
        description="The whole arguments sent twice under one id (end-of-stream flush).",
        source=f"vLLM xlam parser: {VLLM_51697}",
        shape="vLLM xlam duplicated arguments {…}{…} under one id",
        proves="the same id repeated never splits: one call, arguments_json false",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, tid, "get_current_weather", whole + whole, False),
            ],
            repairs=repairs(identity_repeated=1),
            chunks=6,
            finish="tool_calls",
            model="Salesforce/Llama-xLAM-2-8b-fc-r",
            response_id="chatcmpl-3d2c1b0a9f8e47d6a5b4c3d2e1f0a9b8",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1885,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# 2026 rules: custom (freeform) tools (spec §2)
# --------------------------------------------------------------------------------------------

PATCH = (
    "*** Begin Patch\n*** Update File: src/app.py\n"
    '@@ def main():\n-    print("hi")\n'
    '+    print("hello")\n*** End Patch'
)


@case
def gpt5_custom_tool_apply_patch() -> Capture:
    # GPT-5 custom tool (openai-openapi#576, openai-python#2530): the first entry has
    # type "custom" and custom {name, input ""}; the input follows in custom.input fragments.
    # Continuations here also carry "" and null id / custom.name:
    #   c1: id, type custom, custom.name apply_patch (first values), input "" (adds nothing).
    #   c2: id "" -> empty 1; custom.name "" -> empty 1 (counted like function.name).
    #   c3: id null -> null 1; custom.name null -> null 1.
    #   c4: custom.input only -> nothing counted.
    # Totals: empty_identity_ignored 2, null_identity_ignored 2.  The call is custom, its
    # arguments are the input joined (freeform, not JSON -> arguments_json false).  The
    # declared-tools check applies to the custom name (apply_patch is declared).
    s = Stream("chatcmpl-Cx5Gp7Rt9Vb1Nd3Fh", "gpt-5-2025-08-07", 1794660700)
    cid = "call_Pq4tC8hQ1mZ7vN2xR5sL9wKe"
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": cid,
                            "type": "custom",
                            "custom": {"name": "apply_patch", "input": ""},
                        }
                    ],
                    "refusal": None,
                }
            ),
            usage=None,
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "",
                            "type": "custom",
                            "custom": {
                                "name": "",
                                "input": "*** Begin Patch\n*** Update File: src/app.py\n",
                            },
                        }
                    ]
                }
            ),
            usage=None,
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": None,
                            "custom": {"name": None, "input": '@@ def main():\n-    print("hi")\n'},
                        }
                    ]
                }
            ),
            usage=None,
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {"index": 0, "custom": {"input": '+    print("hello")\n*** End Patch'}}
                    ]
                }
            ),
            usage=None,
        ),
        s.chunk(choice({}, "tool_calls"), usage=None),
    )
    return Capture(
        description='A custom (freeform) tool call: custom.input fragments, ""/null continuations.',
        source=f"GPT-5 custom tools: {OPENAI_OPENAPI_576} , {OPENAI_PYTHON_2530}",
        shape="GPT-5 custom tool apply_patch, custom.input fragments",
        proves='custom.input concatenates into arguments, type custom; ""/null id and '
        "custom.name are ignored and counted like function identity",
        body=body,
        declared_tools=["apply_patch", "shell"],
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, cid, "apply_patch", PATCH, False, type_="custom")],
            repairs=repairs(empty_identity_ignored=2, null_identity_ignored=2),
            chunks=5,
            finish="tool_calls",
            model="gpt-5-2025-08-07",
            response_id="chatcmpl-Cx5Gp7Rt9Vb1Nd3Fh",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1556,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def custom_empty_object_echo() -> Capture:
    # An adapter echoing "custom": {} (and once null) on every ordinary function delta
    # (pi#8504: a client then lost every argument).  custom {} / null carries no custom.name or
    # custom.input string and no type "custom": the call stays a function call; "custom" is not
    # a provider field (it is one of the excluded keys); nothing is counted.
    s = Stream("chatcmpl-ce-8a0b2c4d6e", "gpt-4.1", 1794660800)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_Ec1Ho3Jq5Ls7Nu9Pw",
                            "type": "function",
                            "function": {"name": "bash", "arguments": ""},
                            "custom": {},
                        }
                    ],
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"arguments": '{"command": '}, "custom": {}}
                    ]
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"arguments": '"ls -la"}'}, "custom": None}
                    ]
                }
            )
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description='"custom": {} echoed on every function delta (null on one).',
        source=f"empty custom echoed on function deltas: {PI_8504}",
        shape="custom {} echoed on ordinary function deltas",
        proves="an empty custom object changes nothing: type function, arguments kept, no "
        "provider fields, no repairs",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_Ec1Ho3Jq5Ls7Nu9Pw", "bash", '{"command": "ls -la"}', True)
            ],
            repairs=repairs(),
            chunks=4,
            finish="tool_calls",
            model="gpt-4.1",
            response_id="chatcmpl-ce-8a0b2c4d6e",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1075,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def function_and_custom_parallel() -> Capture:
    # GPT-5 (openai-openapi#576): a function call on index 0 and a custom call on index 1 in
    # one response.  Each call is typed by its own entries; no repairs.
    s = Stream("chatcmpl-Fc2Jk4Mn6Pq8Rs0Tu", "gpt-5-2025-08-07", 1794660900)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_Wf1Xg3Yh5Zi7Aj9Bk", "get_weather")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [more(0, '{"city": "Oslo"}')]})),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_Pc2Qd4Re6Sf8Tg0Uh",
                            "type": "custom",
                            "custom": {"name": "apply_patch", "input": ""},
                        }
                    ]
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "custom": {"input": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n"},
                        }
                    ]
                }
            )
        ),
        s.chunk(choice({"tool_calls": [{"index": 1, "custom": {"input": "*** End Patch"}}]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="A function call (index 0) and a custom call (index 1) in parallel.",
        source=f"GPT-5 custom tools: {OPENAI_OPENAPI_576}",
        shape="function call and custom call in parallel",
        proves="type is per call: function on index 0, custom on index 1; both declared",
        body=body,
        declared_tools=["apply_patch", "get_weather"],
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, "call_Wf1Xg3Yh5Zi7Aj9Bk", "get_weather", '{"city": "Oslo"}', True),
                call(
                    0,
                    1,
                    "call_Pc2Qd4Re6Sf8Tg0Uh",
                    "apply_patch",
                    "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch",
                    False,
                    type_="custom",
                ),
            ],
            repairs=repairs(),
            chunks=6,
            finish="tool_calls",
            model="gpt-5-2025-08-07",
            response_id="chatcmpl-Fc2Jk4Mn6Pq8Rs0Tu",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1700,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def function_and_custom_mixed_malformed() -> Capture:
    # Spec §2: one call fed both function (function.name "apply_patch", a non-empty string) and
    # custom (custom.input, a string) -> the whole response is malformed_chunk.
    s = Stream("chatcmpl-Mx3Ny5Oz7Pa9Qb1Rc", "gpt-5-2025-08-07", 1794661000)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_Mf4Ng6Oh8Pi0Qj2Rk", "apply_patch")],
                }
            )
        ),
        s.chunk(choice({"tool_calls": [{"index": 0, "custom": {"input": "*** Begin Patch\n"}}]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="One call fed function.name and then custom.input.",
        source=f"{SPEC_ONLY}; custom tool shape from {OPENAI_OPENAPI_576}",
        shape="function and custom fields on one call",
        proves="a call that is both function and custom -> malformed_chunk",
        body=body,
        expect=dead_letter(
            "malformed_chunk",
            # The first chunk opened the function call (arguments ""); the malformed second
            # chunk is not applied, so the call stays a function call without arguments.
            calls=[missing(call(0, 0, "call_Mf4Ng6Oh8Pi0Qj2Rk", "apply_patch", "", False))],
            model="gpt-5-2025-08-07",
            response_id="chatcmpl-Mx3Ny5Oz7Pa9Qb1Rc",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=2,
            bytes=832,
            frames_after_end=0,
            detail=(
                "call 0 of choice 0 is fed both 'function' and 'custom': "
                "{\"id\":\"chatcmpl-Mx3Ny5Oz7Pa9Qb1Rc\",\"object\":\"chat.completion.chunk\",\"crea"
                "ted\":1794661000,\"model\":\"gpt-5-2025-08-07\",\"choices\":[{\"index\":0,\"delta"
                "\":{\"tool_calls\":[{\"index\":0,\"custom\":{\"input\":\"*** Begin…"
            ),
            declared_tools=None,
        ),
    )


@case
def custom_not_an_object() -> Capture:
    # Spec §2: "custom" that is neither an object nor null -> malformed_chunk.
    s = Stream("chatcmpl-Cs5Dt7Eu9Fv1Gw3Hx", "gpt-5-2025-08-07", 1794661060)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_Cn6Do8Ep0Fq2Gr4Hs",
                            "type": "custom",
                            "custom": "apply_patch",
                        }
                    ],
                }
            )
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description='"custom" is a string, not an object.',
        source=SPEC_ONLY,
        shape="custom not an object",
        proves="custom that is not an object (and not null) -> malformed_chunk",
        body=body,
        # The only call entry is in the malformed chunk: no call.
        expect=dead_letter("malformed_chunk", calls=[],
            model="gpt-5-2025-08-07",
            response_id="chatcmpl-Cs5Dt7Eu9Fv1Gw3Hx",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=1,
            bytes=543,
            frames_after_end=0,
            detail=(
                "'custom' is not an object: {\"id\":\"chatcmpl-Cs5Dt7Eu9Fv1Gw3Hx\",\"object\":\"cha"
                "t.completion.chunk\",\"created\":1794661060,\"model\":\"gpt-5-2025-08-07\",\"choic"
                "es\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls"
                "\":[{\"ind…"
            ),
            declared_tools=None,
        ),
    )


@case
def custom_tool_unknown_name() -> Capture:
    # Spec §2: the declared-tools check applies to custom names like function names.  The
    # custom call apply_patch is whole and typed, but the request declared only "shell".
    s = Stream("chatcmpl-Cu7Ev9Fw1Gx3Hy5Iz", "gpt-5-2025-08-07", 1794661120)
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_Cu8Dv0Ew2Fx4Gy6Hz",
                            "type": "custom",
                            "custom": {"name": "apply_patch", "input": ""},
                        }
                    ],
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {"index": 0, "custom": {"input": "*** Begin Patch\n*** End Patch"}}
                    ]
                }
            )
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="A custom call whose name the request did not declare.",
        source=f"{SPEC_ONLY}; custom tool shape from {OPENAI_OPENAPI_576}",
        shape="custom tool name not declared",
        proves="declared tools are checked for custom names too -> unknown_tool",
        body=body,
        declared_tools=["shell"],
        expect=dead_letter(
            "unknown_tool",
            # The whole custom call: custom.input "" then the patch text (not JSON), type custom;
            # complete identity -> missing [].
            calls=[
                missing(
                    call(
                        0,
                        0,
                        "call_Cu8Dv0Ew2Fx4Gy6Hz",
                        "apply_patch",
                        "*** Begin Patch\n*** End Patch",
                        False,
                        type_="custom",
                    )
                )
            ],
            model="gpt-5-2025-08-07",
            response_id="chatcmpl-Cu7Ev9Fw1Gx3Hy5Iz",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            repairs=repairs(),
            chunks=3,
            bytes=837,
            frames_after_end=0,
            detail="not among the declared tools: 'apply_patch'",
            declared_tools=["shell"],
        ),
    )


# --------------------------------------------------------------------------------------------
# 2026 rules: provider fields (spec §3)
# --------------------------------------------------------------------------------------------

GEMINI_SIGNATURE = "CiQB0e2Kb8fQm3xV1pL7rT9sW2yN4cA6dE8gH0jK2lM4nP6qR8sTuVwXyZ0aB2cD4eF6"


def _gemini_choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """Gemini's OpenAI-compatible choice: no logprobs, finish_reason only on the last chunk."""
    out: dict[str, Any] = {"delta": delta}
    if finish is not None:
        out["finish_reason"] = finish
    out["index"] = 0
    return out


@case
def gemini3_thought_signature_first_call() -> Capture:
    # Gemini 3 via the OpenAI-compatible endpoint (dayu-agent#45, fixed in dayu-agent PR #91):
    # parallel calls arrive one per chunk, each whole, WITHOUT index; only the first carries
    # extra_content.google.thought_signature; finish_reason "stop" although there are calls.
    #   c1: no index -> list position 0, index_fallbacks 1; opens call 0 with its provider
    #       field extra_content.
    #   c2: no index -> position 0 again, index_fallbacks 1 (2); call 0 has id and complete JSON
    #       arguments, the entry has a different id + name -> split (1), call 1 (same name).
    #       This entry has no provider field, so call 1 has no provider_fields key.
    # Totals: index_fallbacks 2, index_reuse_splits 1.  "stop" is executable: both emitted.
    s = Stream("mMgXaKr3Dp6Zs9Vb2Nq5Lt8", "gemini-3-pro-preview", 1794661200)
    first = {
        "extra_content": {"google": {"thought_signature": GEMINI_SIGNATURE}},
        "function": {"arguments": '{"city":"Paris"}', "name": "get_weather"},
        "id": "function-call-7301948265513370912",
        "type": "function",
    }
    second = {
        "function": {"arguments": '{"city":"London"}', "name": "get_weather"},
        "id": "function-call-7301948265513370913",
        "type": "function",
    }
    body = sse(
        s.chunk(_gemini_choice({"role": "assistant", "tool_calls": [first]})),
        s.chunk(_gemini_choice({"role": "assistant", "tool_calls": [second]})),
        s.chunk(
            _gemini_choice({"role": "assistant"}, "stop"),
            usage={"completion_tokens": 38, "prompt_tokens": 61, "total_tokens": 99},
        ),
    )
    return Capture(
        description="Gemini 3: two calls without index, signature on the first only, stop.",
        source=f"Gemini OpenAI-compatible endpoint: {DAYU_AGENT_45} ; signature dropped by "
        f"LiteLLM's stream_chunk_builder: {EVA_206}",
        shape="Gemini 3 parallel calls without index, extra_content on the first",
        proves="provider fields are kept verbatim on their own call only; missing index falls "
        "back to position 0 and the second call splits off",
        body=body,
        expect=assembled(
            finish_reason="stop",
            tool_calls=[
                call(
                    0,
                    0,
                    "function-call-7301948265513370912",
                    "get_weather",
                    '{"city":"Paris"}',
                    True,
                    provider_fields={
                        "extra_content": {"google": {"thought_signature": GEMINI_SIGNATURE}}
                    },
                ),
                call(
                    0,
                    1,
                    "function-call-7301948265513370913",
                    "get_weather",
                    '{"city":"London"}',
                    True,
                ),
            ],
            repairs=repairs(index_fallbacks=2, index_reuse_splits=1),
            usage={"completion_tokens": 38, "prompt_tokens": 61, "total_tokens": 99},
            chunks=3,
            finish="stop",
            model="gemini-3-pro-preview",
            response_id="mMgXaKr3Dp6Zs9Vb2Nq5Lt8",
            finish_reasons={"0": "stop"},
            bytes=1052,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def provider_field_on_continuation() -> Capture:
    # A LiteLLM-style proxy puts provider_specific_fields (a thought signature) on a
    # continuation delta of call 0, then provider_specific_fields: null on the next one
    # (eva#206: the merge carries provider_specific_fields).  Call 1 never carries one.
    #   call 0: the field arrives on c2 (non-null), c3's null never erases it.
    #   call 1: no provider field at all -> no provider_fields key.
    # No identity fields are repeated: no repairs.
    s = Stream("chatcmpl-psf-1f3e5d7c9b", "gemini/gemini-2.5-pro", 1794661300)
    signature = {"thought_signature": "Ev0BCvoBAXLI2nyQ7u3pT8rZ5sK1mW9bD4fH6jL0"}
    body = sse(
        s.chunk(
            choice(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [opening(0, "call_Lo2Mp4Nq6Or8Ps0Qt", "lookup_order")],
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {"arguments": '{"order_id": '},
                            "provider_specific_fields": signature,
                        }
                    ]
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {"arguments": '"A-1042"}'},
                            "provider_specific_fields": None,
                        }
                    ]
                }
            )
        ),
        s.chunk(
            choice(
                {
                    "tool_calls": [
                        opening(
                            1, "call_Ru1Sv3Tw5Ux7Vy9Wz", "lookup_order", '{"order_id": "A-1043"}'
                        )
                    ]
                }
            )
        ),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="A provider field on a continuation delta, then null on the next one.",
        source=f"provider_specific_fields through LiteLLM: {EVA_206}",
        shape="provider_specific_fields on a later delta, null afterwards",
        proves="a provider field arriving late is kept; a later null never erases it; a call "
        "without one has no provider_fields",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    "call_Lo2Mp4Nq6Or8Ps0Qt",
                    "lookup_order",
                    '{"order_id": "A-1042"}',
                    True,
                    provider_fields={"provider_specific_fields": signature},
                ),
                call(
                    0, 1, "call_Ru1Sv3Tw5Ux7Vy9Wz", "lookup_order", '{"order_id": "A-1043"}', True
                ),
            ],
            repairs=repairs(),
            chunks=5,
            finish="tool_calls",
            model="gemini/gemini-2.5-pro",
            response_id="chatcmpl-psf-1f3e5d7c9b",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=1578,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# 2026 rules: id synthesis (spec §4)
# --------------------------------------------------------------------------------------------


def _no_id_entry(index: int, name: str | None, arguments: str) -> dict[str, Any]:
    """Ollama /v1 (LangBot#2262): index, type and function, but no id key."""
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function = {"name": name, "arguments": arguments}
    return {"index": index, "type": "function", "function": function}


OLLAMA_V1_SEED = "chatcmpl-271"


def _ollama_v1_no_id_body() -> bytes:
    s = Stream(OLLAMA_V1_SEED, "qwen2.5:7b", 1794661400, "fp_ollama")
    return sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_no_id_entry(0, "get_weather", '{"city":"Beijing"}')],
                }
            )
        ),
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_no_id_entry(1, "get_time", '{"timezone":"Asia/Shanghai"}')],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )


@case
def ollama_v1_no_id_without_synthesis() -> Capture:
    # Ollama /v1 (LangBot#2262): two calls with index and name but never an id; synthesis off.
    # Both calls lack only the id -> missing_identity with missing ["id"] on each.
    return Capture(
        description="Calls without id, synthesis off.",
        source=f"Ollama /v1: {LANGBOT_2262}",
        shape="Ollama /v1 calls without id (no synthesis)",
        proves="without synthesis a call without id is still a missing_identity dead letter",
        body=_ollama_v1_no_id_body(),
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(call(0, 0, None, "get_weather", '{"city":"Beijing"}', True), "id"),
                missing(call(0, 1, None, "get_time", '{"timezone":"Asia/Shanghai"}', True), "id"),
            ],
            repairs=repairs(),
            model="qwen2.5:7b",
            response_id="chatcmpl-271",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            chunks=3,
            bytes=933,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id; call 1 of choice 0 has no id",
            declared_tools=None,
        ),
    )


@case
def ollama_v1_no_id_synthesized() -> Capture:
    # The same body as ollama_v1_no_id_without_synthesis, with synthesize_ids on.  Offline the
    # seed is the response id (the chunks' id, "chatcmpl-271"); each call gets
    # call_tw_ + sha256("toolwire/call-id/chatcmpl-271/<choice>/<index>")[:24], with
    # id_synthesized true; ids_synthesized 2 (one per call).  The names are there: assembled.
    return Capture(
        description="Calls without id, synthesis on: deterministic ids, assembled.",
        source=f"Ollama /v1: {LANGBOT_2262} ; agentgateway synthesizes ids: {AGENTGATEWAY_2233}",
        shape="Ollama /v1 calls without id (synthesis on)",
        proves="synthesis gives each id-less call the spec's deterministic id (seed = response "
        "id, choice, index), id_synthesized true, counted in ids_synthesized",
        body=_ollama_v1_no_id_body(),
        synthesize_ids=True,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    synthesized_id(OLLAMA_V1_SEED, 0, 0),
                    "get_weather",
                    '{"city":"Beijing"}',
                    True,
                    id_synthesized=True,
                ),
                call(
                    0,
                    1,
                    synthesized_id(OLLAMA_V1_SEED, 0, 1),
                    "get_time",
                    '{"timezone":"Asia/Shanghai"}',
                    True,
                    id_synthesized=True,
                ),
            ],
            repairs=repairs(ids_synthesized=2),
            chunks=3,
            finish="tool_calls",
            model="qwen2.5:7b",
            response_id="chatcmpl-271",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=933,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def nameless_call_synthesized_id() -> Capture:
    # opencode Go gateway shape (multica#8268): only index and arguments, no id and no name;
    # synthesis on.  The id is synthesized (seed = response id), the name never is -> still
    # missing_identity, and missing lists only "name"; the dead letter's call carries the
    # synthesized id (id_synthesized true) and ids_synthesized counts it (1).
    seed = "gen-1794661500-Tb5Wq8Lp2Xr7"
    s = Stream(seed, "kimi-k2.5", 1794661500)
    body = sse(
        s.chunk(
            choice({"role": "assistant", "content": None, "tool_calls": [more(0, '{"command": ')]})
        ),
        s.chunk(choice({"tool_calls": [more(0, '"git log -1"}')]})),
        s.chunk(choice({}, "tool_calls")),
    )
    return Capture(
        description="A call without id and name, synthesis on: the name is never made up.",
        source=f"opencode Console Go gateway: {MULTICA_8268}",
        shape="identity never sent (synthesis on)",
        proves="a name is never synthesized: missing_identity with missing [name], the call "
        "carrying its synthesized id",
        body=body,
        synthesize_ids=True,
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(
                    call(
                        0,
                        0,
                        synthesized_id(seed, 0, 0),
                        None,
                        '{"command": "git log -1"}',
                        True,
                        id_synthesized=True,
                    ),
                    "name",
                )
            ],
            repairs=repairs(ids_synthesized=1),
            model="kimi-k2.5",
            response_id="gen-1794661500-Tb5Wq8Lp2Xr7",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            chunks=3,
            bytes=763,
            frames_after_end=0,
            detail="call 0 of choice 0 has no name",
            declared_tools=None,
        ),
    )


NO_ID_SAME_NAME_SEED = "chatcmpl-604"


def _no_id_same_name_body() -> bytes:
    s = Stream(NO_ID_SAME_NAME_SEED, "llama3.1:8b", 1794661600, "fp_ollama")
    return sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_no_id_entry(0, "get_weather", '{"city":"Paris"}')],
                }
            )
        ),
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_no_id_entry(0, "get_weather", '{"city":"Rome"}')],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "tool_calls")),
    )


@case
def no_id_same_name_split_synthesized() -> Capture:
    # Ollama /v1 without ids (LangBot#2262) calling one function twice, both on index 0, each
    # whole; synthesis on.  Entry 2 repeats call 0's non-empty name with a new non-empty
    # fragment after call 0's arguments were complete JSON, and call 0 has no id -> split
    # (index_reuse_splits 1), new call at index 1; the name is its first value (no repeat).
    # Both calls then get synthesized ids (index 0 and 1): ids_synthesized 2.
    return Capture(
        description="Two id-less calls to one function on index 0, synthesis on: split.",
        source=f"Ollama /v1: {LANGBOT_2262}",
        shape="no-id same-name calls on index 0 (synthesis on)",
        proves="with synthesis, a repeated name with new arguments after complete JSON splits "
        "an id-less call; each part gets its own synthesized id",
        body=_no_id_same_name_body(),
        synthesize_ids=True,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(
                    0,
                    0,
                    synthesized_id(NO_ID_SAME_NAME_SEED, 0, 0),
                    "get_weather",
                    '{"city":"Paris"}',
                    True,
                    id_synthesized=True,
                ),
                call(
                    0,
                    1,
                    synthesized_id(NO_ID_SAME_NAME_SEED, 0, 1),
                    "get_weather",
                    '{"city":"Rome"}',
                    True,
                    id_synthesized=True,
                ),
            ],
            repairs=repairs(index_reuse_splits=1, ids_synthesized=2),
            chunks=3,
            finish="tool_calls",
            model="llama3.1:8b",
            response_id="chatcmpl-604",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            bytes=924,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def no_id_same_name_without_synthesis() -> Capture:
    # The same body as no_id_same_name_split_synthesized, synthesis off: §1 needs an id and §4's
    # split needs synthesis, so nothing splits.  Entry 2's name equals call 0's ->
    # identity_repeated 1; its fragment is appended: '{"city":"Paris"}{"city":"Rome"}' (not
    # JSON).  The one call has no id -> missing_identity, missing ["id"].
    return Capture(
        description="Two id-less calls to one function on index 0, synthesis off: merged.",
        source=f"Ollama /v1: {LANGBOT_2262}",
        shape="no-id same-name calls on index 0 (no synthesis)",
        proves="without synthesis an id-less call never splits: fragments concatenate and the "
        "response is a missing_identity dead letter",
        body=_no_id_same_name_body(),
        expect=dead_letter(
            "missing_identity",
            calls=[
                missing(
                    call(0, 0, None, "get_weather", '{"city":"Paris"}{"city":"Rome"}', False), "id"
                )
            ],
            repairs=repairs(identity_repeated=1),
            model="llama3.1:8b",
            response_id="chatcmpl-604",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage=None,
            chunks=3,
            bytes=924,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id",
            declared_tools=None,
        ),
    )


@case
def truncated_no_id_synthesized() -> Capture:
    # Spec §4: synthesis applies to withheld calls too.  An id-less call (Ollama /v1 shape,
    # LangBot#2262) cut off by finish length, synthesis on: withheld with a synthesized id,
    # truncated, ids_synthesized 1.
    seed = "chatcmpl-917"
    s = Stream(seed, "qwen2.5:7b", 1794661700, "fp_ollama")
    partial = '{"path": "essay.md", "content": "# Title\\n\\nOnce upon a'
    body = sse(
        s.chunk(
            ollama_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_no_id_entry(0, "write_file", partial)],
                }
            )
        ),
        s.chunk(ollama_choice({"role": "assistant", "content": ""}, "length")),
    )
    return Capture(
        description="An id-less call cut off by length, synthesis on.",
        source=f"{SPEC_ONLY}; Ollama /v1 shape from {LANGBOT_2262}",
        shape="no-id call + finish length (synthesis on)",
        proves="withheld calls get synthesized ids too",
        body=body,
        synthesize_ids=True,
        expect=assembled(
            finish_reason="length",
            truncated=True,
            withheld=[
                call(
                    0,
                    0,
                    synthesized_id(seed, 0, 0),
                    "write_file",
                    partial,
                    False,
                    id_synthesized=True,
                )
            ],
            repairs=repairs(ids_synthesized=1),
            chunks=2,
            finish="length",
            model="qwen2.5:7b",
            response_id="chatcmpl-917",
            finish_reasons={"0": "length"},
            usage=None,
            bytes=623,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "length",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# 2026 rules: ends, refusals and provider errors (spec §6)
# --------------------------------------------------------------------------------------------

PPLX_CITATIONS = [
    "https://www.toureiffel.paris/en/the-monument/key-figures",
    "https://en.wikipedia.org/wiki/Eiffel_Tower",
]


def _pplx_chunk(
    rid: str, created: int, content: str, completion_tokens: int, *, done: bool = False
) -> dict[str, Any]:
    """A Perplexity (Sonar) chunk: usage and citations on every chunk, object done at the end."""
    choice_: dict[str, Any] = {"index": 0, "delta": {"role": "assistant", "content": content}}
    if done:
        choice_["finish_reason"] = "stop"
    return {
        "id": rid,
        "model": "sonar",
        "created": created,
        "usage": {
            "prompt_tokens": 9,
            "completion_tokens": completion_tokens,
            "total_tokens": 9 + completion_tokens,
        },
        "citations": PPLX_CITATIONS,
        "object": "chat.completion.done" if done else "chat.completion.chunk",
        "choices": [choice_],
    }


def _pplx_chunks(rid: str, created: int) -> list[dict[str, Any]]:
    return [
        _pplx_chunk(rid, created, "The", 1),
        _pplx_chunk(rid, created, " Eiffel Tower", 4),
        _pplx_chunk(rid, created, " is 330 m tall", 9),
        _pplx_chunk(rid, created, "[1].", 12),
    ]


@case
def perplexity_done_chunk_end() -> Capture:
    # Perplexity (Sonar): usage and citations on every chunk; the last chunk has object
    # "chat.completion.done" (delta content "", finish_reason stop, its own usage) and no
    # data: [DONE] follows.  That chunk is an explicit end and is applied: finish_reason stop
    # comes only from it, and its usage (completion_tokens 13) replaces the previous one (12).
    # 5 chunks counted (4 + the done chunk).  No calls, content present: no error code.
    rid = "7c1e4b2a-9d3f-4e8a-b5c6-0a1f2e3d4c5b"
    body = sse(
        *_pplx_chunks(rid, 1794661800), _pplx_chunk(rid, 1794661800, "", 13, done=True), done=False
    )
    return Capture(
        description="Perplexity: the stream ends with a chat.completion.done chunk, no [DONE].",
        source=PERPLEXITY_FIXTURES,
        shape="Perplexity chat.completion.done end, no [DONE]",
        proves="a chat.completion.done chunk is an explicit end and is itself applied "
        "(finish reason, usage, counted)",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="The Eiffel Tower is 330 m tall[1].",
            repairs=repairs(),
            usage={"prompt_tokens": 9, "completion_tokens": 13, "total_tokens": 22},
            chunks=5,
            finish="stop",
            model="sonar",
            response_id="7c1e4b2a-9d3f-4e8a-b5c6-0a1f2e3d4c5b",
            finish_reasons={"0": "stop"},
            bytes=1933,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "The Eiffel Tower is 330 m tall[1].",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def perplexity_done_chunk_then_trailing() -> Capture:
    # Spec §6: everything after the chat.completion.done chunk is ignored: a later content
    # chunk and a non-JSON payload are neither parsed nor counted (chunks stays 5, content has
    # no " Extra"), but their bytes count in bytes (the whole body).
    rid = "2b4d6f8a-0c1e-4a3b-9d5f-7e9a1c3b5d7f"
    body = sse(
        *_pplx_chunks(rid, 1794661860),
        _pplx_chunk(rid, 1794661860, "", 13, done=True),
        _pplx_chunk(rid, 1794661860, " Extra", 14),
        "{not json",
        done=False,
    )
    return Capture(
        description="Bytes after the chat.completion.done chunk (a chunk, then non-JSON).",
        source=f"{SPEC_ONLY}; Perplexity end shape from {PERPLEXITY_FIXTURES}",
        shape="chat.completion.done then trailing events",
        proves="after the done chunk nothing is parsed or counted, but the bytes still count",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="The Eiffel Tower is 330 m tall[1].",
            repairs=repairs(),
            usage={"prompt_tokens": 9, "completion_tokens": 13, "total_tokens": 22},
            chunks=5,
            bytes=len(body),
            finish="stop",
            model="sonar",
            response_id="2b4d6f8a-0c1e-4a3b-9d5f-7e9a1c3b5d7f",
            finish_reasons={"0": "stop"},
            frames_after_end=2,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "The Eiffel Tower is 330 m tall[1].",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def perplexity_cut_before_done() -> Capture:
    # A Perplexity-like stream cut before its chat.completion.done chunk: neither [DONE] nor
    # an explicit end chunk -> stream_closed (usage on every chunk does not make it complete).
    rid = "5e7a9c1b-3d5f-4b7e-8a0c-2e4a6c8e0b1d"
    body = sse(*_pplx_chunks(rid, 1794661920), done=False)
    return Capture(
        description="Perplexity-like stream cut before the chat.completion.done chunk.",
        source=f"{SPEC_ONLY}; Perplexity end shape from {PERPLEXITY_FIXTURES}",
        shape="Perplexity stream without its done chunk",
        proves="a body ending with neither [DONE] nor a chat.completion.done chunk is "
        "stream_closed",
        body=body,
        expect=dead_letter("stream_closed", calls=[],
            model="sonar",
            response_id="5e7a9c1b-3d5f-4b7e-8a0c-2e4a6c8e0b1d",
            finish_reason=None,
            finish_reasons={"0": None},
            usage={"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
            repairs=repairs(),
            chunks=4,
            bytes=1535,
            frames_after_end=0,
            detail="the body ended without data: [DONE] (connection dropped or cut)",
            declared_tools=None,
        ),  # a text answer: no call
    )


@case
def openai_structured_output_refusal() -> Capture:
    # OpenAI structured outputs: the refusal streams in delta.refusal (first "", then
    # fragments) with content null, finish_reason "stop".  The refusal text concatenates;
    # the choice refused -> error_code REFUSAL, not retryable, not EMPTY_RESPONSE; the text
    # is the top-level refusal and choice 0's refusal.  No calls, no repairs.
    s = Stream(
        "chatcmpl-AZr9Tq3Lm7Xv1Bn5Kd8Wf2Hs", "gpt-4o-2024-08-06", 1794662000, "fp_2f406b9113"
    )
    text = "I'm sorry, I can't assist with that request."
    body = sse(
        s.chunk(choice({"role": "assistant", "content": None, "refusal": ""})),
        s.chunk(choice({"refusal": "I'm sorry"})),
        s.chunk(choice({"refusal": ", I can't assist"})),
        s.chunk(choice({"refusal": " with that request."})),
        s.chunk(choice({}, "stop")),
    )
    return Capture(
        description="A structured-output refusal streamed in delta.refusal, finish stop.",
        source=OPENAI_REFUSAL,
        shape="OpenAI delta.refusal fragments, content null, stop",
        proves="refusal text is kept; error_code REFUSAL, not retryable, never EMPTY_RESPONSE",
        body=body,
        expect=assembled(
            finish_reason="stop",
            error_code="REFUSAL",
            refusal=text,
            error_message=None,
            reasoning=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": text,
                }
            ],
            repairs=repairs(),
            chunks=5,
            finish="content_filter",
            model="gpt-4o-2024-08-06",
            response_id="chatcmpl-AZr9Tq3Lm7Xv1Bn5Kd8Wf2Hs",
            finish_reasons={"0": "stop"},
            usage=None,
            bytes=1347,
            frames_after_end=0,
            server_tool_calls=[],
        ),
    )


GROQ_MESSAGE = (
    "Failed to call a function. Please adjust your prompt. "
    "See 'failed_generation' for more details."
)


@case
def groq_error_event_tool_use_failed() -> Capture:
    # Groq: a call starts, then an "event: error" frame (data {"error": {message, type
    # invalid_request_error, code tool_use_failed, failed_generation}}) and no [DONE].  The
    # error event ends the response: assembled, every call withheld, truncated false;
    # error_code = the code string upper-cased (TOOL_USE_FAILED); error_message = its message;
    # retryable false (no rate_limit/overload/server_error/unavailable in code or type).
    # No finish reason ever arrived.  No repairs.
    s = Stream(
        "chatcmpl-9f1a3c5e-7b9d-4f1a-8c3e-5a7c9e1b3d5f",
        "llama-3.3-70b-versatile",
        1794662100,
        "fp_3f3b593e33",
    )
    error = {
        "error": {
            "message": GROQ_MESSAGE,
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": (
                '<function=get_weather>{"city": "Paris", "unit": celsius}</function>'
            ),
        }
    }
    text = (
        event(
            s.chunk(
                choice({"role": "assistant", "content": None}),
                x_groq={"id": "req_01k3c5e7g9j1m3p5r7t9v1x3z5"},
            )
        )
        + event(
            s.chunk(
                choice(
                    {
                        "tool_calls": [
                            {
                                "id": "call_gq_8h2k4m6p",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": "Par'},
                                "index": 0,
                            }
                        ]
                    }
                )
            )
        )
        + f"event: error\ndata: {dumps(error)}\n\n"
    )
    return Capture(
        description="Groq: an event: error frame after a partial call, no [DONE].",
        source=GROQ_CASSETTES,
        shape="Groq event: error tool_use_failed, no [DONE]",
        proves="an error event ends the response: assembled, calls withheld, error_code from "
        "its code, error_message kept, not retryable, not truncated",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason=None,
            error_code="TOOL_USE_FAILED",
            error_message=GROQ_MESSAGE,
            withheld=[call(0, 0, "call_gq_8h2k4m6p", "get_weather", '{"city": "Par', False)],
            repairs=repairs(),
            finish="error",
            model="llama-3.3-70b-versatile",
            response_id="chatcmpl-9f1a3c5e-7b9d-4f1a-8c3e-5a7c9e1b3d5f",
            finish_reasons={"0": None},
            usage=None,
            chunks=2,
            bytes=1025,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


def _or_choice(delta: dict[str, Any], finish: Any = None, native: Any = None) -> dict[str, Any]:
    """OpenRouter's choice: native_finish_reason beside finish_reason."""
    return {
        "index": 0,
        "delta": delta,
        "finish_reason": finish,
        "native_finish_reason": native,
        "logprobs": None,
    }


@case
def openrouter_error_chunk_after_length() -> Capture:
    # OpenRouter: finish_reason "length" on one chunk, then an ordinary chunk carrying
    # "error": {"code": 400, "message": "Token limit reached"}, then [DONE].
    # The error wins over the earlier finish reason: truncated false (finish_reason stays
    # "length" verbatim), calls withheld; the code is a number (not a string) and there is no
    # type -> error_code PROVIDER_ERROR; 400 is not 429/5xx -> not retryable.  The error
    # chunk's own choice (content "", no finish reason) adds nothing.  Usage from the length
    # chunk.  No repairs.
    s = Stream("gen-1794662200-Lk3Mn5Pq7Rs9", "google/gemini-2.5-flash", 1794662200)
    usage = {"prompt_tokens": 512, "completion_tokens": 64, "total_tokens": 576}
    partial = '{"path": "essay.md", "content": "Once upon a time'
    body = sse(
        s.chunk(
            _or_choice(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [opening(0, "tool_0_write_file_Zp4Xq8", "write_file")],
                }
            ),
            provider="Google",
        ),
        s.chunk(
            _or_choice({"role": "assistant", "tool_calls": [more(0, partial)]}), provider="Google"
        ),
        s.chunk(
            _or_choice({"role": "assistant", "content": ""}, "length", "MAX_TOKENS"),
            provider="Google",
            usage=usage,
        ),
        s.chunk(
            _or_choice({"role": "assistant", "content": ""}),
            provider="Google",
            error={"code": 400, "message": "Token limit reached"},
        ),
    )
    return Capture(
        description="OpenRouter: an error object in an ordinary chunk after finish length.",
        source=OPENROUTER_CASSETTES,
        shape="OpenRouter error chunk (code 400) after finish length, then [DONE]",
        proves="a provider error wins over length: PROVIDER_ERROR, truncated false, "
        "finish_reason verbatim, calls withheld, not retryable",
        body=body,
        expect=assembled(
            finish_reason="length",
            truncated=False,
            error_code="PROVIDER_ERROR",
            error_message="Token limit reached",
            retryable=False,
            withheld=[call(0, 0, "tool_0_write_file_Zp4Xq8", "write_file", partial, False)],
            repairs=repairs(),
            usage=usage,
            finish="error",
            model="google/gemini-2.5-flash",
            response_id="gen-1794662200-Lk3Mn5Pq7Rs9",
            finish_reasons={"0": "length"},
            chunks=4,
            bytes=1506,
            frames_after_end=1,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "length",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def openrouter_error_chunk_rate_limited() -> Capture:
    # Spec §6: a chunk whose top-level "error" is {"code": 429, ...} (numeric) after some text;
    # no [DONE] follows (the error ends the response).  Numeric code, no type ->
    # PROVIDER_ERROR; 429 -> retryable true.  The text before it counts as usual.
    s = Stream("gen-1794662300-Rt5Yu7Io9Pa1", "deepseek/deepseek-chat-v3.1:free", 1794662300)
    body = sse(
        s.chunk(_or_choice({"role": "assistant", "content": "Let me check"}), provider="Chutes"),
        {"error": {"code": 429, "message": "Rate limit exceeded: free-models-per-min."}},
        done=False,
    )
    return Capture(
        description="An error object with code 429 mid-stream, no [DONE].",
        source=f"{SPEC_ONLY}; error-in-chunk shape from {OPENROUTER_CASSETTES}",
        shape="error chunk code 429, no [DONE]",
        proves="a 429 provider error is retryable; it ends the response without [DONE]",
        body=body,
        expect=assembled(
            finish_reason=None,
            content="Let me check",
            error_code="PROVIDER_ERROR",
            error_message="Rate limit exceeded: free-models-per-min.",
            retryable=True,
            repairs=repairs(),
            finish="error",
            model="deepseek/deepseek-chat-v3.1:free",
            response_id="gen-1794662300-Rt5Yu7Io9Pa1",
            finish_reasons={"0": None},
            usage=None,
            chunks=2,
            bytes=388,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Let me check",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def openrouter_midstream_server_error() -> Capture:
    # Spec §6: a mid-stream error chunk with a string code ("server_error") and, in the same
    # chunk, a choice with finish_reason "error"; nothing after it.  The chunk's own choice is
    # applied (finish_reason "error", verbatim); the provider error decides the record:
    # error_code = code upper-cased (SERVER_ERROR), retryable true (contains server_error),
    # truncated false.  Content before it is kept.
    s = Stream("gen-1794662400-Se2Dr4Ft6Gy8", "anthropic/claude-sonnet-4", 1794662400)
    body = sse(
        s.chunk(_or_choice({"role": "assistant", "content": "Here is the"}), provider="Anthropic"),
        s.chunk(_or_choice({"role": "assistant", "content": " plan:"}), provider="Anthropic"),
        s.chunk(
            _or_choice({"content": ""}, "error"),
            provider="Anthropic",
            error={"code": "server_error", "message": "Provider disconnected unexpectedly"},
        ),
        done=False,
    )
    return Capture(
        description="A mid-stream error chunk with a string code and finish_reason error.",
        source=f"{SPEC_ONLY}; error-in-chunk shape from {OPENROUTER_CASSETTES}",
        shape="error chunk code server_error with finish_reason error, no [DONE]",
        proves="a string code becomes error_code upper-cased; server_error is retryable",
        body=body,
        expect=assembled(
            finish_reason="error",
            content="Here is the plan:",
            error_code="SERVER_ERROR",
            error_message="Provider disconnected unexpectedly",
            retryable=True,
            repairs=repairs(),
            finish="error",
            model="anthropic/claude-sonnet-4",
            response_id="gen-1794662400-Se2Dr4Ft6Gy8",
            finish_reasons={"0": "error"},
            usage=None,
            chunks=3,
            bytes=944,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "error",
                    "content": "Here is the plan:",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def error_event_overloaded_type() -> Capture:
    # Spec §6: an "event: error" whose data is {"type": "error", "error": {"type":
    # "overloaded_error", "message": "Overloaded"}}: the error object is data["error"]; no code
    # -> its type upper-cased (OVERLOADED_ERROR); "overload" -> retryable true.  A call was
    # under way: withheld.
    s = Stream("chatcmpl-ov-3a5c7e9b1d", "claude-sonnet-4", 1794662500)
    data = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    text = (
        event(
            s.chunk(
                choice(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            opening(0, "toolu_01Ov3Er5Lo7Ad9Ed1Xq", "search_web", '{"query": ')
                        ],
                    }
                )
            )
        )
        + f"event: error\ndata: {dumps(data)}\n\n"
    )
    return Capture(
        description="An error event whose error object has a type and no code.",
        source=SPEC_ONLY,
        shape="event: error, error.type overloaded_error",
        proves="without a code the error type names the error; overload is retryable",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason=None,
            error_code="OVERLOADED_ERROR",
            error_message="Overloaded",
            retryable=True,
            withheld=[call(0, 0, "toolu_01Ov3Er5Lo7Ad9Ed1Xq", "search_web", '{"query": ', False)],
            repairs=repairs(),
            finish="error",
            model="claude-sonnet-4",
            response_id="chatcmpl-ov-3a5c7e9b1d",
            finish_reasons={"0": None},
            usage=None,
            chunks=1,
            bytes=458,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def error_event_not_json() -> Capture:
    # Spec §6: an "event: error" whose data is not JSON: PROVIDER_ERROR, the message is the data
    # text, not retryable (no code or type to say otherwise).  It ends the response.
    s = Stream("chatcmpl-nj-6b8d0f2a4c", "glm-4.6", 1794662600)
    message = "upstream connect error or disconnect/reset before headers"
    text = event(s.chunk(choice({"role": "assistant", "content": "Working"}))) + (
        f"event: error\ndata: {message}\n\n"
    )
    return Capture(
        description="An error event whose data is plain text.",
        source=SPEC_ONLY,
        shape="event: error with non-JSON data",
        proves="a non-JSON error event is PROVIDER_ERROR with the text as message, not malformed",
        body=text.encode("utf-8"),
        expect=assembled(
            finish_reason=None,
            content="Working",
            error_code="PROVIDER_ERROR",
            error_message=message,
            retryable=False,
            repairs=repairs(),
            finish="error",
            model="glm-4.6",
            response_id="chatcmpl-nj-6b8d0f2a4c",
            finish_reasons={"0": None},
            usage=None,
            chunks=1,
            bytes=299,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Working",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


# --------------------------------------------------------------------------------------------
# Chat Completions as other providers send it (issue 24): no [DONE], reasoning under another
# name, reasoning_details
# --------------------------------------------------------------------------------------------

WRITER_CASSETTES = (
    "Writer (palmyra-x4, api.writer.com/v1/chat): traceloop/openllmetry "
    "packages/opentelemetry-instrumentation-writer/tests/cassettes/test_chat/"
    "test_writer_streaming_chat_*.yaml (recorded 2025-08): message beside delta, every field "
    "null rather than absent, a usage chunk with choices [] last, no [DONE]"
)
PERPLEXITY_OLD = (
    "Perplexity (sonar, 2024-08 to 2025-02): object chat.completion on every chunk, "
    "cumulative message beside delta, usage (and citations) on every chunk, the stream stops "
    "after the stop chunk (perplexityai/api-discussion #175, #193)"
)
OPENROUTER_REASONING = (
    "OpenRouter with reasoning: pydantic-ai tests/models/cassettes/test_openrouter/"
    "test_openrouter_streaming_reasoning.yaml (Claude Sonnet 4.5: delta.reasoning beside "
    "reasoning_details reasoning.text pieces, the signature in a piece of its own, "
    ": OPENROUTER PROCESSING comments, a usage chunk after the finish chunk, [DONE])"
)
OPENROUTER_GEMINI3 = (
    "OpenRouter with Gemini 3: a reasoning_details reasoning.encrypted entry (format "
    "google-gemini-v1) whose id is the call's id, one chunk before the call (issue 24; "
    "OpenRouter's reasoning-tokens documentation; no public recording of the stream found, so "
    "the envelope is the Claude recording's)"
)
VERCEL_GATEWAY = (
    "Vercel AI Gateway: delta.reasoning beside reasoning_details (BerriAI/litellm #16155, "
    "minimax/minimax-m2, ids gen_01...)"
)

_WRITER_EMPTY = {
    "graph_data": {"sources": None, "status": None, "subqueries": None},
    "llm_data": None,
    "image_data": None,
    "translation_data": None,
    "web_search_data": None,
    "refusal": None,
}


def _writer_chunk(rid: str, created: int, *, finish: str | None = None,
                  content: str | None = None,
                  tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Writer chunk: ``message`` repeats ``delta`` (the SDK calls it deprecated for
    streaming), every field present, null when unused."""

    def delta() -> dict[str, Any]:
        return {"content": content, "role": "assistant", "tool_calls": tool_calls,
                **_WRITER_EMPTY}

    return {
        "id": rid,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "finish_reason": finish, "message": delta(), "delta": delta(),
                     "logprobs": None, "trace_details": None}],
        "created": created,
        "model": "palmyra-x4",
        "usage": None,
        "system_fingerprint": "v1",
        "service_tier": None,
    }


def _writer_usage(rid: str, created: int, prompt: int, completion: int) -> dict[str, Any]:
    """Writer's last chunk: the usage (its own key order), with ``choices: []``."""
    return {
        "id": rid,
        "object": "chat.completion.chunk",
        "choices": [],
        "created": created,
        "model": "palmyra-x4",
        "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                  "completion_tokens": completion, "prompt_token_details": None,
                  "completion_tokens_details": None},
        "system_fingerprint": "v1",
        "service_tier": None,
    }


def _writer_head(index: int, call_id: str, name: str) -> dict[str, Any]:
    return {"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": None}}


def _writer_more(index: int, arguments: str) -> dict[str, Any]:
    return {"index": index, "id": None, "type": None,
            "function": {"name": None, "arguments": arguments}}


WRITER_CALL_ID = "chatcmpl-tool-a31f1a5690b14b7daf0e78d2a2d23da2"


def _writer_single_call_body(rid: str, created: int, *, finished: bool = True) -> bytes:
    """Writer's one get_weather call: role chunk, the call's head (arguments null), two
    argument fragments (id, type and name null), then the finish chunk and the usage chunk
    (left out when ``finished`` is false: a body cut before its finish chunk)."""
    chunks = [
        _writer_chunk(rid, created),
        _writer_chunk(rid, created, tool_calls=[_writer_head(0, WRITER_CALL_ID, "get_weather")]),
        _writer_chunk(rid, created, tool_calls=[_writer_more(0, '{"location":')]),
        _writer_chunk(rid, created, tool_calls=[_writer_more(0, ' "Zakopane"}')]),
    ]
    if finished:
        chunks += [_writer_chunk(rid, created, finish="tool_calls"),
                   _writer_usage(rid, created, 194, 22)]
    return sse(*chunks, done=False)


WRITER_USAGE = {"prompt_tokens": 194, "total_tokens": 216, "completion_tokens": 22,
                "prompt_token_details": None, "completion_tokens_details": None}


@case
def writer_single_call() -> Capture:
    # Writer (provider named in TOOLWIRE_END_WITHOUT_DONE): 6 events, no [DONE]; the body ends
    # on a whole event ("}\n\n") after choice 0 sent finish_reason tool_calls -> complete,
    # ended_without_done 1.  The head sets id and name (arguments null adds nothing); each of
    # the two fragments sends id null and name null: null_identity_ignored 2 + 2 = 4 (type
    # null is not identity).  message repeats delta and is not read (the arguments are not
    # doubled).  The usage chunk (choices []) gives the usage.  6 chunks counted.
    body = _writer_single_call_body("a2c90cfe-6b1d-4c8e-9f3a-2d7e5b4c1a90", 1756221201)
    return Capture(
        description="Writer: one call, then finish and usage chunks, no [DONE] (setting on).",
        source=WRITER_CASSETTES,
        shape="Writer single call, message beside delta, no [DONE]",
        proves="with the setting, a body that ends after every choice finished is complete "
        "(repairs.ended_without_done); delta counts, message is not read",
        body=body,
        end_without_done=True,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, WRITER_CALL_ID, "get_weather", '{"location": "Zakopane"}')],
            repairs=repairs(null_identity_ignored=4, ended_without_done=1),
            usage=WRITER_USAGE,
            chunks=6,
            finish="tool_calls",
            model="palmyra-x4",
            response_id="a2c90cfe-6b1d-4c8e-9f3a-2d7e5b4c1a90",
            finish_reasons={"0": "tool_calls"},
            bytes=4487,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def writer_without_the_setting() -> Capture:
    # The same Writer body read for a provider the setting does not name: no [DONE] is
    # stream_closed, as before; every choice had finished, so the detail says the provider
    # may be one that never sends [DONE] and names the setting.
    body = _writer_single_call_body("5b0e7c2d-3f4a-4e1b-8c9d-6a2f1e0b3c47", 1756221202)
    return Capture(
        description="The Writer body for a provider not named in the setting.",
        source=WRITER_CASSETTES,
        shape="Writer single call, no [DONE], setting off",
        proves="providers not named keep the rule (stream_closed); the detail says every "
        "choice had finished and names TOOLWIRE_END_WITHOUT_DONE",
        body=body,
        expect=dead_letter(
            "stream_closed",
            calls=[missing(call(0, 0, WRITER_CALL_ID, "get_weather",
                                '{"location": "Zakopane"}'))],
            detail="the body ended without data: [DONE] (connection dropped or cut); every "
            "choice had sent its finish reason, so the provider may be one that never sends "
            "data: [DONE] (Writer, Perplexity's older chat.completion chunks): name it in "
            "TOOLWIRE_END_WITHOUT_DONE (toolwire assemble --end-without-done) to take such a "
            "body as complete",
            model="palmyra-x4",
            response_id="5b0e7c2d-3f4a-4e1b-8c9d-6a2f1e0b3c47",
            finish_reason="tool_calls",
            finish_reasons={"0": "tool_calls"},
            usage={
                "prompt_tokens": 194,
                "total_tokens": 216,
                "completion_tokens": 22,
                "prompt_token_details": None,
                "completion_tokens_details": None,
            },
            repairs=repairs(null_identity_ignored=4),
            chunks=6,
            bytes=4487,
            frames_after_end=0,
            declared_tools=None,
        ),
    )


@case
def writer_cut_before_finish() -> Capture:
    # Writer cut after the call's arguments, before its finish chunk: the setting is on, but
    # choice 0 never sent a finish reason -> stream_closed (the arguments happen to be
    # complete JSON: that does not make the body complete).  No hint: not every choice
    # finished.
    body = _writer_single_call_body("9e4d2a1b-7c6f-4b3e-a5d8-0f1e2c3b4a59", 1756221203,
                                    finished=False)
    return Capture(
        description="Writer cut before its finish chunk (setting on).",
        source=WRITER_CASSETTES,
        shape="Writer call without its finish chunk",
        proves="a body that ends before every choice finished stays stream_closed, even for a "
        "provider named in the setting",
        body=body,
        end_without_done=True,
        expect=dead_letter(
            "stream_closed",
            calls=[missing(call(0, 0, WRITER_CALL_ID, "get_weather",
                                '{"location": "Zakopane"}'))],
            detail="the body ended without data: [DONE] (connection dropped or cut)",
            model="palmyra-x4",
            response_id="9e4d2a1b-7c6f-4b3e-a5d8-0f1e2c3b4a59",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(null_identity_ignored=4),
            chunks=4,
            bytes=3448,
            frames_after_end=0,
            declared_tools=None,
        ),
    )


WRITER_CITIES = ("Zakopane", "Krakow", "Gdansk", "Warsaw", "Wroclaw", "Poznan", "Lodz")
WRITER_PARALLEL_IDS = (
    "chatcmpl-tool-5ac885d9b1b54a66b11f014a1ecb5b9d",
    "chatcmpl-tool-368eedfd835c4186b5cb97c69d803cf0",
    "chatcmpl-tool-0c2b9e8f1a7d4f36b5e4c3d2a1f09e8d",
    "chatcmpl-tool-7d1e2f3a4b5c4d6e8f9a0b1c2d3e4f5a",
    "chatcmpl-tool-e9f8d7c6b5a44938a7b6c5d4e3f2a1b0",
    "chatcmpl-tool-1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6",
    "chatcmpl-tool-f0e1d2c3b4a54968a7b6c5d4e3f2a1b9",
)


@case
def writer_seven_parallel_calls() -> Capture:
    # Writer's parallel calls stream one after another in choice 0, indexes 0..6, each as a
    # head (id, name, arguments null) and two fragments (id, type, name null): 7 calls,
    # null_identity_ignored 7 * 2 * 2 = 28.  24 events: role, 21 call chunks, finish
    # tool_calls, usage (choices []).  No [DONE], setting on -> complete, ended_without_done 1.
    rid, created = "1908e68d-0a48-4394-a155-d160bca81742", 1756221269
    chunks = [_writer_chunk(rid, created)]
    for index, (call_id, city) in enumerate(zip(WRITER_PARALLEL_IDS, WRITER_CITIES,
                                                strict=True)):
        chunks += [
            _writer_chunk(rid, created, tool_calls=[_writer_head(index, call_id, "get_weather")]),
            _writer_chunk(rid, created, tool_calls=[_writer_more(index, '{"location":')]),
            _writer_chunk(rid, created, tool_calls=[_writer_more(index, f' "{city}"}}')]),
        ]
    chunks += [_writer_chunk(rid, created, finish="tool_calls"),
               _writer_usage(rid, created, 212, 153)]
    body = sse(*chunks, done=False)
    return Capture(
        description="Writer: seven parallel calls, one after another, no [DONE] (setting on).",
        source=WRITER_CASSETTES,
        shape="Writer seven parallel calls, no [DONE]",
        proves="seven calls, each whole and apart; the body is complete without [DONE]",
        body=body,
        end_without_done=True,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, index, call_id, "get_weather", f'{{"location": "{city}"}}')
                        for index, (call_id, city) in enumerate(
                            zip(WRITER_PARALLEL_IDS, WRITER_CITIES, strict=True))],
            repairs=repairs(null_identity_ignored=28, ended_without_done=1),
            usage={"prompt_tokens": 212, "total_tokens": 365, "completion_tokens": 153,
                   "prompt_token_details": None, "completion_tokens_details": None},
            chunks=24,
            finish="tool_calls",
            model="palmyra-x4",
            response_id="1908e68d-0a48-4394-a155-d160bca81742",
            finish_reasons={"0": "tool_calls"},
            bytes=20884,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_calls",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


def _pplx_old_chunk(rid: str, created: int, text: str, piece: str, tokens: int,
                    finish: str | None = None) -> str:
    """Perplexity's older chunk, written as it was sent (Python's separators): object
    chat.completion, usage and citations on every chunk, ``message`` the text so far."""
    return dumps({
        "id": rid,
        "model": "sonar",
        "created": created,
        "usage": {"prompt_tokens": 10, "completion_tokens": tokens,
                  "total_tokens": 10 + tokens},
        "citations": PPLX_CITATIONS,
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": text},
                     "delta": {"role": "assistant", "content": piece}}],
    }, (", ", ": "))


@case
def perplexity_chat_completion_objects() -> Capture:
    # Perplexity's older shape: object "chat.completion" on every chunk, neither [DONE] nor a
    # chat.completion.done chunk; the stream stops after the chunk with finish_reason stop
    # (its delta content "", its message the whole text).  Setting on: complete,
    # ended_without_done 1.  Content is the deltas joined ("The Eiffel Tower is 330 m
    # tall[1]."), never the cumulative message (which would repeat every piece).  The last
    # usage wins (completion_tokens 13).  5 chunks.
    rid, created = "ab7cac59-7b92-464c-9940-fd96bc28c030", 1740046265
    pieces = ["The", " Eiffel Tower", " is 330 m tall", "[1]."]
    events, text = [], ""
    for n, piece in enumerate(pieces):
        text += piece
        events.append(_pplx_old_chunk(rid, created, text, piece, 3 * n + 1))
    events.append(_pplx_old_chunk(rid, created, text, "", 13, "stop"))
    body = sse(*events, done=False)
    return Capture(
        description="Perplexity's older chat.completion chunks: no end of any kind (setting on).",
        source=PERPLEXITY_OLD,
        shape="Perplexity object chat.completion, cumulative message, no [DONE]",
        proves="an object other than chat.completion.chunk is read the same; complete once "
        "the stop chunk came; delta, not the cumulative message, is the content",
        body=body,
        end_without_done=True,
        expect=assembled(
            finish_reason="stop",
            content="The Eiffel Tower is 330 m tall[1].",
            repairs=repairs(ended_without_done=1),
            usage={"prompt_tokens": 10, "completion_tokens": 13, "total_tokens": 23},
            chunks=5,
            finish="stop",
            model="sonar",
            response_id="ab7cac59-7b92-464c-9940-fd96bc28c030",
            finish_reasons={"0": "stop"},
            bytes=2490,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "The Eiffel Tower is 330 m tall[1].",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


OPENROUTER_PROCESSING = ": OPENROUTER PROCESSING\n\n"


@dataclass
class OpenRouter:
    """OpenRouter's chunk envelope (its ``provider`` and ``native_finish_reason``)."""

    id: str
    model: str
    created: int
    provider: str

    def chunk(self, delta: dict[str, Any], finish: str | None = None,
              native: str | None = None, **fields: Any) -> str:
        return event({
            "id": self.id,
            "provider": self.provider,
            "model": self.model,
            "object": "chat.completion.chunk",
            "created": self.created,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                         "native_finish_reason": native, "logprobs": None}],
            **fields,
        })

    def body(self, *events: str) -> bytes:
        """Two processing comments first, as OpenRouter opens a stream, then ``[DONE]``."""
        return (OPENROUTER_PROCESSING * 2 + "".join(events) + DONE).encode("utf-8")


def _or_delta(content: str = "", reasoning: str | None = None,
              details: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "reasoning": reasoning,
            "reasoning_details": [] if details is None else details, **fields}


CLAUDE_SIGNATURE = (
    "Et0BCkgIChACGAIqQA2sLmV0Yk9hRnpQcXl1b0ZjS3JXbW5LZ1p4c0JpTEt0dVhXR3hIa2Y5b3JxR2dGb1lq"
    "ZFhPb0hWcGRzTmJYaEl3EgwVbnR5cGU5a2V5MTIzGgx1c2VyLXNpZ25hdHVyZSIwZXhhbXBsZS1zaWduYXR1cmUt"
    "Zm9yLWEtY2xhdWRlLXRoaW5raW5nLWJsb2NrLXZpYS1vcGVucm91dGVyKhAIChACGAIqQIcYAQ=="
)


def _claude_text(text: str | None = None, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "reasoning.text"}
    if text is not None:
        entry["text"] = text
    entry.update(fields)
    return {**entry, "format": "anthropic-claude-v1", "index": 0}


@case
def openrouter_claude_reasoning_details() -> Capture:
    # OpenRouter, Claude Sonnet 4.5 with reasoning (the pydantic-ai recording's shape): the
    # reasoning comes in delta.reasoning (no reasoning_content anywhere) and again in
    # reasoning_details pieces of one reasoning.text entry (index 0): the first piece has text
    # "" and signature "", the next three carry text, one more text "", then a piece with only
    # the signature.  Reasoning: "This" + " is a simple arithmetic question. " + "2+2 equals
    # 4." (reasoning null adds nothing).  The merged entry keeps the first piece's field order
    # (type, text, signature, format, index): text the pieces joined, signature the first
    # value that is neither null nor "" (the later one, since the first was "").  Empty
    # reasoning_details lists add nothing.  Content "2 " + "+ 2 = 4".  The usage chunk after
    # the finish chunk has finish_reason null (never erases stop).  Comments are not events:
    # 14 chunks.
    s = OpenRouter("gen-1765226419-AGrwjunAftQIAgweibL8", "anthropic/claude-sonnet-4.5",
                   1765226419, "Google")
    body = s.body(
        s.chunk(_or_delta()),
        s.chunk(_or_delta(details=[_claude_text("", signature="")])),
        s.chunk(_or_delta(reasoning="This", details=[_claude_text("This")])),
        OPENROUTER_PROCESSING,
        OPENROUTER_PROCESSING,
        s.chunk(_or_delta(reasoning=" is a simple arithmetic question. ",
                          details=[_claude_text(" is a simple arithmetic question. ")])),
        s.chunk(_or_delta(reasoning="2+2 equals 4.", details=[_claude_text("2+2 equals 4.")])),
        s.chunk(_or_delta(details=[_claude_text("")])),
        s.chunk(_or_delta(details=[_claude_text(signature=CLAUDE_SIGNATURE)])),
        s.chunk(_or_delta()),
        s.chunk(_or_delta()),
        s.chunk(_or_delta("2 ")),
        s.chunk(_or_delta("+ 2 = 4")),
        s.chunk(_or_delta()),
        s.chunk(_or_delta(), "stop", "stop"),
        s.chunk({"role": "assistant", "content": ""}, usage={
            "prompt_tokens": 43, "completion_tokens": 36, "total_tokens": 79,
            "cost": 0.000669, "is_byok": False,
            "completion_tokens_details": {"reasoning_tokens": 13, "image_tokens": 0}}),
    )
    reasoning = "This is a simple arithmetic question. 2+2 equals 4."
    details = [{"type": "reasoning.text", "text": reasoning, "signature": CLAUDE_SIGNATURE,
                "format": "anthropic-claude-v1", "index": 0}]
    return Capture(
        description="OpenRouter Claude: reasoning in delta.reasoning and reasoning_details.",
        source=OPENROUTER_REASONING,
        shape="OpenRouter delta.reasoning with reasoning.text pieces and a signature piece",
        proves="reasoning is read from delta.reasoning; reasoning_details pieces merge by type "
        "and index (text joined, the signature the first non-blank value) onto the choice",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="2 + 2 = 4",
            reasoning=reasoning,
            choices=[{"choice": 0, "finish_reason": "stop", "content": "2 + 2 = 4",
                      "reasoning": reasoning, "refusal": None, "reasoning_details": details}],
            repairs=repairs(),
            usage={"prompt_tokens": 43, "completion_tokens": 36, "total_tokens": 79,
                   "cost": 0.000669, "is_byok": False,
                   "completion_tokens_details": {"reasoning_tokens": 13, "image_tokens": 0}},
            chunks=14,
            finish="stop",
            model="anthropic/claude-sonnet-4.5",
            response_id="gen-1765226419-AGrwjunAftQIAgweibL8",
            finish_reasons={"0": "stop"},
            bytes=5768,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            server_tool_calls=[],
        ),
    )


GLM_CALL_ID = "call_7c1f3a9e0b2d4e6f8a1b3c5d"


@case
def openrouter_glm_reasoning_then_call() -> Capture:
    # OpenRouter, GLM 4.6: reasoning text in delta.reasoning with empty reasoning_details
    # lists, then one call whole in one delta, finish tool_calls, a usage chunk, [DONE].
    # Reasoning "The user wants" + " the weather in Paris." ; no content; the call as sent.
    # The choice carries no reasoning_details (only empty lists came).  7 chunks.
    s = OpenRouter("gen-1765300000-Zq8LmN3pR7tYvW2xK9bD", "z-ai/glm-4.6", 1765300000, "Z.AI")
    body = s.body(
        s.chunk(_or_delta()),
        s.chunk(_or_delta(reasoning="The user wants")),
        s.chunk(_or_delta(reasoning=" the weather in Paris.")),
        s.chunk(_or_delta(tool_calls=[{"index": 0, "id": GLM_CALL_ID, "type": "function",
                                       "function": {"name": "get_weather",
                                                    "arguments": '{"city":"Paris"}'}}])),
        s.chunk(_or_delta()),
        s.chunk(_or_delta(), "tool_calls", "tool_calls"),
        s.chunk({"role": "assistant", "content": ""},
                usage={"prompt_tokens": 160, "completion_tokens": 31, "total_tokens": 191}),
    )
    reasoning = "The user wants the weather in Paris."
    return Capture(
        description="OpenRouter GLM: reasoning in delta.reasoning, then a call.",
        source=f"{OPENROUTER_REASONING}; GLM's shape not recorded publicly: the same envelope",
        shape="OpenRouter GLM delta.reasoning then a tool call",
        proves="reasoning from delta.reasoning beside a call; empty reasoning_details add "
        "nothing (no reasoning_details on the choice)",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, GLM_CALL_ID, "get_weather", '{"city":"Paris"}')],
            reasoning=reasoning,
            choices=[{"choice": 0, "finish_reason": "tool_calls", "content": None,
                      "reasoning": reasoning, "refusal": None}],
            repairs=repairs(),
            chunks=7,
            finish="tool_calls",
            model="z-ai/glm-4.6",
            response_id="gen-1765300000-Zq8LmN3pR7tYvW2xK9bD",
            finish_reasons={"0": "tool_calls"},
            usage={"prompt_tokens": 160, "completion_tokens": 31, "total_tokens": 191},
            bytes=2521,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            server_tool_calls=[],
        ),
    )


@case
def openrouter_kimi_reasoning_text_details() -> Capture:
    # OpenRouter, Kimi K2 Thinking: delta.reasoning pieces each mirrored by a reasoning.text
    # piece (index 0, format "unknown", no signature), then the answer.  Reasoning "Two" +
    # " and two make four." ; the merged entry's text the same, its other fields as first
    # sent.  Content "Four.".  6 chunks.
    s = OpenRouter("gen-1765300100-Kp4WmE7sA2uQ9yZ1cV6n", "moonshotai/kimi-k2-thinking",
                   1765300100, "Moonshot AI")

    def piece(text: str) -> list[dict[str, Any]]:
        return [{"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}]

    body = s.body(
        s.chunk(_or_delta()),
        s.chunk(_or_delta(reasoning="Two", details=piece("Two"))),
        s.chunk(_or_delta(reasoning=" and two make four.", details=piece(" and two make four."))),
        s.chunk(_or_delta("Four.")),
        s.chunk(_or_delta(), "stop", "stop"),
        s.chunk({"role": "assistant", "content": ""},
                usage={"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}),
    )
    reasoning = "Two and two make four."
    return Capture(
        description="OpenRouter Kimi: delta.reasoning mirrored by reasoning.text pieces.",
        source=f"{OPENROUTER_REASONING}; Kimi's shape not recorded publicly: the same envelope",
        shape="OpenRouter Kimi delta.reasoning with reasoning.text details",
        proves="the reasoning is counted once (from delta.reasoning); the details' text joins "
        "on the choice",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="Four.",
            reasoning=reasoning,
            choices=[{"choice": 0, "finish_reason": "stop", "content": "Four.",
                      "reasoning": reasoning, "refusal": None,
                      "reasoning_details": [{"type": "reasoning.text", "text": reasoning,
                                             "format": "unknown", "index": 0}]}],
            repairs=repairs(),
            chunks=6,
            finish="stop",
            model="moonshotai/kimi-k2-thinking",
            response_id="gen-1765300100-Kp4WmE7sA2uQ9yZ1cV6n",
            finish_reasons={"0": "stop"},
            usage={"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
            bytes=2310,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            server_tool_calls=[],
        ),
    )


@case
def openrouter_reasoning_only() -> Capture:
    # OpenRouter (DeepSeek R1): only reasoning, no content, no call, finish stop.  The rule for
    # reasoning_content holds for delta.reasoning: a reasoning-only response is not
    # EMPTY_RESPONSE (error_code null, not retryable).  5 chunks.
    s = OpenRouter("gen-1765300200-Rr5TnB8mQ1wX3eL7hJ0s", "deepseek/deepseek-r1", 1765300200,
                   "DeepInfra")
    body = s.body(
        s.chunk(_or_delta()),
        s.chunk(_or_delta(reasoning="Okay, so I need")),
        s.chunk(_or_delta(reasoning=" to think about this first.")),
        s.chunk(_or_delta(), "stop", "stop"),
        s.chunk({"role": "assistant", "content": ""},
                usage={"prompt_tokens": 8, "completion_tokens": 11, "total_tokens": 19}),
    )
    return Capture(
        description="OpenRouter: a response that holds only reasoning, in delta.reasoning.",
        source=f"{OPENROUTER_REASONING}; deepseek-r1's delta (huggingface/responses.js PR #19)",
        shape="OpenRouter reasoning only",
        proves="a response with only delta.reasoning is not EMPTY_RESPONSE",
        body=body,
        expect=assembled(
            finish_reason="stop",
            reasoning="Okay, so I need to think about this first.",
            repairs=repairs(),
            chunks=5,
            finish="stop",
            model="deepseek/deepseek-r1",
            response_id="gen-1765300200-Rr5TnB8mQ1wX3eL7hJ0s",
            finish_reasons={"0": "stop"},
            usage={"prompt_tokens": 8, "completion_tokens": 11, "total_tokens": 19},
            bytes=1790,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": "Okay, so I need to think about this first.",
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def vercel_gateway_reasoning() -> Capture:
    # The Vercel AI Gateway (minimax-m2): delta.reasoning with no role or content keys on the
    # reasoning deltas, then content, finish stop, [DONE].  Reasoning "Rayleigh scattering" +
    # " favours short wavelengths." ; content "Because blue light scatters most.".  5 chunks.
    s = Stream("gen_01K8ZE8RV61CRN3QG42PCAXA39", "minimax/minimax-m2", 1762000000)
    body = sse(
        s.chunk({"index": 0, "delta": {"reasoning": "Rayleigh scattering"},
                 "finish_reason": None}),
        s.chunk({"index": 0, "delta": {"reasoning": " favours short wavelengths."},
                 "finish_reason": None}),
        s.chunk({"index": 0, "delta": {"content": "Because blue light"}, "finish_reason": None}),
        s.chunk({"index": 0, "delta": {"content": " scatters most."}, "finish_reason": None}),
        s.chunk({"index": 0, "delta": {}, "finish_reason": "stop"}),
    )
    return Capture(
        description="Vercel AI Gateway: reasoning in delta.reasoning, then the answer.",
        source=VERCEL_GATEWAY,
        shape="Vercel AI Gateway delta.reasoning",
        proves="delta.reasoning is the reasoning when reasoning_content is absent",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="Because blue light scatters most.",
            reasoning="Rayleigh scattering favours short wavelengths.",
            repairs=repairs(),
            chunks=5,
            finish="stop",
            model="minimax/minimax-m2",
            response_id="gen_01K8ZE8RV61CRN3QG42PCAXA39",
            finish_reasons={"0": "stop"},
            usage=None,
            bytes=1077,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Because blue light scatters most.",
                    "reasoning": "Rayleigh scattering favours short wavelengths.",
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


@case
def gateway_reasoning_under_both_names() -> Capture:
    # A gateway that mirrors the reasoning under both names: a delta with reasoning_content
    # "Check" and reasoning "Check" counts it once (reasoning_content wins); a delta with
    # reasoning_content null falls back to reasoning (" the units"); a delta with
    # reasoning_content "" and reasoning " ignored" takes reasoning_content (a string):
    # nothing.  Then a delta with only reasoning_content (" first.").  Reasoning
    # "Check the units first.".  6 chunks.
    s = Stream("chatcmpl-9f8e7d6c5b4a39281706f5e4d3c2b1a0", "qwen3-235b-a22b", 1794670000)
    body = sse(
        s.chunk(choice({"role": "assistant", "content": None})),
        s.chunk(choice({"reasoning_content": "Check", "reasoning": "Check"})),
        s.chunk(choice({"reasoning_content": None, "reasoning": " the units"})),
        s.chunk(choice({"reasoning_content": "", "reasoning": " ignored"})),
        s.chunk(choice({"reasoning_content": " first."})),
        s.chunk(choice({"content": "Use metres."}, "stop")),
    )
    return Capture(
        description="Reasoning under both names in one delta, and under one or the other.",
        source=f"{SPEC_ONLY}; issue 24: reasoning_content wins, never counted twice",
        shape="delta.reasoning_content beside delta.reasoning",
        proves="one of the two per delta: reasoning_content when it is a string, else "
        "reasoning; the text is never counted twice",
        body=body,
        expect=assembled(
            finish_reason="stop",
            content="Use metres.",
            reasoning="Check the units first.",
            repairs=repairs(),
            chunks=6,
            finish="stop",
            model="qwen3-235b-a22b",
            response_id="chatcmpl-9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            finish_reasons={"0": "stop"},
            usage=None,
            bytes=1502,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Use metres.",
                    "reasoning": "Check the units first.",
                    "refusal": None,
                },
            ],
            server_tool_calls=[],
        ),
    )


GEMINI3_CALL_ID = "tool_get_weather_8CfsJGlhSWkhgYBDPBaL"
GEMINI3_SECOND_ID = "tool_get_time_Q2nVw7xTzL0pR4sY6uBc"
GEMINI3_SIGNATURE = (
    "CiQB0e2Kb3f4Wv9Qm1Zy8xT6rL2pN5sK7dH0jG3aF9cE4bV1uQoKdwHR7Ssk2yK4mT8nB1vC6xZ9qW3eR5tY7uI0"
    "oP2aS4dF6gH8jK1lZ3xC5vB7nM9qW2eR4tY6uI8oP0aS2dF4gH6jK8lZ0xC2vB4nM6qW8eR0tY2uI4oP6aS8dF0g"
)


def _gemini3_reasoning(text: str) -> list[dict[str, Any]]:
    return [{"type": "reasoning.text", "text": text, "format": "google-gemini-v1", "index": 0}]


def _gemini3_signature(call_id: str) -> list[dict[str, Any]]:
    return [{"type": "reasoning.encrypted", "data": GEMINI3_SIGNATURE, "id": call_id,
             "format": "google-gemini-v1", "index": 0}]


def _gemini3_call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


GEMINI3_TEXT = {"type": "reasoning.text", "text": "**Checking the weather** I will call the tool.",
                "format": "google-gemini-v1", "index": 0}
GEMINI3_ENCRYPTED = {"type": "reasoning.encrypted", "data": GEMINI3_SIGNATURE,
                     "id": GEMINI3_CALL_ID, "format": "google-gemini-v1", "index": 0}


@case
def openrouter_gemini3_signature_before_call() -> Capture:
    # OpenRouter, Gemini 3: reasoning text ("**Checking the weather**" + " I will call the
    # tool.") with reasoning.text pieces, then a chunk whose only detail is the
    # reasoning.encrypted thought signature naming the call's id, then the call whole, finish
    # tool_calls (native STOP), usage, [DONE].  The choice carries both merged entries (two
    # keys: reasoning.text/0 and reasoning.encrypted/0, in the order they began); the call
    # carries the encrypted one in provider_fields.reasoning_details, though it came first.
    # 6 chunks.
    s = OpenRouter("gen-1765400000-Gm3PrVw8yT1qZ5nB7xK2", "google/gemini-3-pro-preview",
                   1765400000, "Google AI Studio")
    body = s.body(
        s.chunk(_or_delta(reasoning="**Checking the weather**",
                          details=_gemini3_reasoning("**Checking the weather**"))),
        s.chunk(_or_delta(reasoning=" I will call the tool.",
                          details=_gemini3_reasoning(" I will call the tool."))),
        s.chunk(_or_delta(details=_gemini3_signature(GEMINI3_CALL_ID))),
        s.chunk(_or_delta(tool_calls=[_gemini3_call(0, GEMINI3_CALL_ID, "get_weather",
                                                    '{"city":"Paris"}')])),
        s.chunk(_or_delta(), "tool_calls", "STOP"),
        s.chunk({"role": "assistant", "content": ""},
                usage={"prompt_tokens": 71, "completion_tokens": 42, "total_tokens": 113}),
    )
    reasoning = "**Checking the weather** I will call the tool."
    return Capture(
        description="OpenRouter Gemini 3: the thought signature one chunk before its call.",
        source=OPENROUTER_GEMINI3,
        shape="OpenRouter reasoning.encrypted with the call's id, before the call",
        proves="an entry whose id is a call's id goes into that call's provider_fields too, "
        "though it arrived first; the choice keeps every entry",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[call(0, 0, GEMINI3_CALL_ID, "get_weather", '{"city":"Paris"}',
                             provider_fields={"reasoning_details": [GEMINI3_ENCRYPTED]})],
            reasoning=reasoning,
            choices=[{"choice": 0, "finish_reason": "tool_calls", "content": None,
                      "reasoning": reasoning, "refusal": None,
                      "reasoning_details": [GEMINI3_TEXT, GEMINI3_ENCRYPTED]}],
            repairs=repairs(),
            chunks=6,
            finish="tool_calls",
            model="google/gemini-3-pro-preview",
            response_id="gen-1765400000-Gm3PrVw8yT1qZ5nB7xK2",
            finish_reasons={"0": "tool_calls"},
            usage={"prompt_tokens": 71, "completion_tokens": 42, "total_tokens": 113},
            bytes=2867,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            server_tool_calls=[],
        ),
    )


@case
def openrouter_gemini3_signature_after_calls() -> Capture:
    # OpenRouter, Gemini 3, two parallel calls, the signature after both (in the chunk before
    # the finish chunk) and naming the first call only (Gemini signs the first of a batch):
    # the first call carries it in provider_fields, the second carries none.  No reasoning
    # text this time: the choice's reasoning_details is the one encrypted entry.  5 chunks.
    s = OpenRouter("gen-1765400100-Gm3Af7eR2sW9kX4cN6vP", "google/gemini-3-pro-preview",
                   1765400100, "Google AI Studio")
    body = s.body(
        s.chunk(_or_delta(tool_calls=[_gemini3_call(0, GEMINI3_CALL_ID, "get_weather",
                                                    '{"city":"Paris"}')])),
        s.chunk(_or_delta(tool_calls=[_gemini3_call(1, GEMINI3_SECOND_ID, "get_time",
                                                    '{"zone":"Europe/Paris"}')])),
        s.chunk(_or_delta(details=_gemini3_signature(GEMINI3_CALL_ID))),
        s.chunk(_or_delta(), "tool_calls", "STOP"),
        s.chunk({"role": "assistant", "content": ""},
                usage={"prompt_tokens": 75, "completion_tokens": 30, "total_tokens": 105}),
    )
    return Capture(
        description="OpenRouter Gemini 3: the signature after two calls, naming the first.",
        source=OPENROUTER_GEMINI3,
        shape="OpenRouter reasoning.encrypted with the first call's id, after the calls",
        proves="the entry joins the call it names whatever the order; a call it does not name "
        "gets nothing",
        body=body,
        expect=assembled(
            finish_reason="tool_calls",
            tool_calls=[
                call(0, 0, GEMINI3_CALL_ID, "get_weather", '{"city":"Paris"}',
                     provider_fields={"reasoning_details": [GEMINI3_ENCRYPTED]}),
                call(0, 1, GEMINI3_SECOND_ID, "get_time", '{"zone":"Europe/Paris"}'),
            ],
            choices=[{"choice": 0, "finish_reason": "tool_calls", "content": None,
                      "reasoning": None, "refusal": None,
                      "reasoning_details": [GEMINI3_ENCRYPTED]}],
            repairs=repairs(),
            chunks=5,
            finish="tool_calls",
            model="google/gemini-3-pro-preview",
            response_id="gen-1765400100-Gm3Af7eR2sW9kX4cN6vP",
            finish_reasons={"0": "tool_calls"},
            usage={"prompt_tokens": 75, "completion_tokens": 30, "total_tokens": 105},
            bytes=2448,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            server_tool_calls=[],
        ),
    )


#: Encrypted reasoning longer than the provider-fields bound (64 KiB by default).
O3_ENCRYPTED = "gAAAAABpQ" + "x7Kq" * 16_500


@case
def openrouter_reasoning_details_over_the_bound() -> Capture:
    # OpenRouter, o3: a reasoning.encrypted entry (format openai-responses-v1) whose data is
    # 66,009 characters: its fields (their text aside) exceed 65,536 bytes -> oversize, the
    # same dead letter as a call's provider fields over the bound.  The entry comes before the
    # call: the response failed there, so the dead letter lists no call.
    s = OpenRouter("gen-1765400200-O3xW5yZ8aB1cD4eF7gH0", "openai/o3", 1765400200, "OpenAI")
    body = s.body(
        s.chunk(_or_delta(details=[{"type": "reasoning.encrypted", "data": O3_ENCRYPTED,
                                    "id": "rs_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
                                    "format": "openai-responses-v1", "index": 0}])),
        s.chunk(_or_delta(tool_calls=[_gemini3_call(0, "call_Vx8Qm2Lp5Rt9", "get_weather",
                                                    '{"city":"Paris"}')])),
        s.chunk(_or_delta(), "tool_calls", "completed"),
    )
    return Capture(
        description="reasoning_details larger than the provider-fields bound.",
        source=f"{OPENROUTER_REASONING}; the size is the bound's test, not a recording",
        shape="OpenRouter reasoning.encrypted over 64 KiB",
        proves="the provider-fields bound holds for reasoning_details: oversize dead letter",
        body=body,
        expect=dead_letter(
            "oversize",
            calls=[],
            detail="choice 0 has more than 65536 bytes of reasoning_details (their text aside)",
            model="openai/o3",
            response_id="gen-1765400200-O3xW5yZ8aB1cD4eF7gH0",
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=repairs(),
            chunks=1,
            bytes=67302,
            frames_after_end=0,
            declared_tools=None,
        ),
    )



# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


#: What every assembled expectation must state: the calls, the finish reason and the flags.
ASSEMBLED_KEYS = (
    "tool_calls",
    "withheld_tool_calls",
    "finish_reason",
    "truncated",
    "error_code",
    "retryable",
)


def incomplete(capture: Capture) -> list[str]:
    """What ``capture.expect`` leaves unsaid that every capture must say (empty: nothing).

    An assembled record: its calls, withheld calls, finish reason, ``truncated``,
    ``error_code`` and ``retryable``; each call whole, and an executable call never without
    its id or name.  A dead letter: its reason and its calls, each whole and with ``missing``
    naming exactly the identity fields that are null.
    """
    return corpus_build.unstated(capture.expect, assembled_keys=ASSEMBLED_KEYS)


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the spec")


def readme(captures: list[Capture]) -> str:
    lines = [
        "# Streamed tool-call corpus",
        "",
        "Raw SSE bodies of streamed chat completions (`NAME.sse`, byte-exact) and the record the",
        "assembler must produce for each (`NAME.json`: `options` to run it with, `expect` = keys",
        "of the record that must be equal). Generated by `_make.py`, which documents each case;",
        "regenerate with `python tests/core/corpus_wires/openai-chat/_make.py`. Every expected",
        "value was worked out by hand from the assembler spec, not by running the assembler.",
        "",
        *corpus_build.EVERY_KEY.splitlines(),
        *corpus_build.capture_table(captures),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures))


if __name__ == "__main__":
    main()
