"""Generate the Gemini wire corpus: ``NAME.sse`` bodies and ``NAME.json`` expectations.

Run from the repository root::

    .venv/bin/python tests/core/corpus_wires/gemini/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
``streamGenerateContent?alt=sse`` response (Gemini API or Vertex AI, written byte-exact) and the
whole of the assembler's record that it must produce with ``options.wire = "gemini"``.  The
shapes come from ``shared/reference/wires.md`` section 3 and ``shapes-2026.md`` ("Responses,
Anthropic, Gemini (2026 additions)"), beside the repository; the rules come from issue 13
("Every streaming wire, one record"): its table (Gemini column), "Output", "Precisely",
"Shapes added in 2026" and "Tests".  Where the issue leaves a value open, the choice made is
listed under "Decisions" in ``README.md`` and named in the comment of the capture that pins it.

Every expected value is written out by hand from those rules (never computed by running
``toolwire``): the expectations are literals, not derived from the bodies.  The one exception
is the synthesized call id, which is written from the issue's formula with :func:`synthesized_id`
(sha256 of ``toolwire/call-id/{seed}/0/{index}``, seed = the response's ``responseId`` offline).

Framing, as the servers send it:

* Gemini API (``generativelanguage.googleapis.com``): data-only frames, CRLF line ends
  (``data: {...}\\r\\n\\r\\n``), JSON with ``", "``/``": "`` separators, ``usageMetadata`` on
  every chunk, ``modelVersion`` and ``responseId`` on every chunk.
* Vertex AI (``aiplatform.googleapis.com``): data-only frames with LF line ends, compact JSON,
  ``createTime`` beside ``responseId``; non-final chunks carry ``usageMetadata:
  {"trafficType": ...}`` only (as in the vercel/ai fixtures the reference docs cite).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Run as a script, only this folder is on the path: the shared builders are under the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.core import corpus_build
from tests.core.corpus_build import COMPACT, dumps, missing

HERE = Path(__file__).resolve().parent

WIRE = "gemini"

#: Separators of the Gemini API's JSON (``{"candidates": [{"content": {"parts": [...``);
#: Vertex AI's is ``COMPACT``.
GOOGLE = (",", ": ")


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``gemini`` (its ``NAME.json`` says so)."""

    wire = WIRE


@dataclass
class Studio:
    """One Gemini API response: every chunk repeats modelVersion and responseId."""

    response_id: str
    model: str

    def chunk(
        self,
        parts: list[dict[str, Any]] | None,
        usage: dict[str, Any],
        finish: str | None = None,
        **candidate: Any,
    ) -> dict[str, Any]:
        """A chunk with one candidate; ``parts=None`` leaves ``content`` out entirely."""
        cand: dict[str, Any] = {}
        if parts is not None:
            cand["content"] = {"parts": parts, "role": "model"}
        elif "content" in candidate:
            cand["content"] = candidate.pop("content")
        if finish is not None:
            cand["finishReason"] = finish
        cand.update(candidate)
        cand["index"] = 0
        return {
            "candidates": [cand],
            "usageMetadata": usage,
            "modelVersion": self.model,
            "responseId": self.response_id,
        }

    def envelope(self, **fields: Any) -> dict[str, Any]:
        """A chunk without candidates (``promptFeedback``, ``usageMetadata``)."""
        return {**fields, "modelVersion": self.model, "responseId": self.response_id}


@dataclass
class Vertex:
    """One Vertex AI response: modelVersion, createTime and responseId on every chunk."""

    response_id: str
    model: str
    create_time: str
    traffic: str = "ON_DEMAND"

    def chunk(
        self,
        parts: list[dict[str, Any]],
        finish: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A chunk; without ``usage`` it carries Vertex's bare ``{"trafficType": ...}``."""
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if finish is not None:
            cand["finishReason"] = finish
        return {
            "candidates": [cand],
            "usageMetadata": usage if usage is not None else {"trafficType": self.traffic},
            "modelVersion": self.model,
            "createTime": self.create_time,
            "responseId": self.response_id,
        }


def studio_usage(prompt: int, candidates: int, thoughts: int = 0) -> dict[str, Any]:
    """The Gemini API's usageMetadata (thoughtsTokenCount only when the model thought)."""
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def fc(name: str | None = None, args: Any = None, call_id: str | None = None,
       **more: Any) -> dict[str, Any]:
    """A ``functionCall`` object: only the keys given (name, args, id, then the rest)."""
    out: dict[str, Any] = {}
    if name is not None:
        out["name"] = name
    if args is not None:
        out["args"] = args
    if call_id is not None:
        out["id"] = call_id
    out.update(more)
    return out


def call_part(function_call: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
    """A part holding a functionCall, with the part-level thoughtSignature when given."""
    part: dict[str, Any] = {"functionCall": function_call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def partial(*args: dict[str, Any], more: bool = True) -> dict[str, Any]:
    """A Vertex nameless continuation part: ``partialArgs`` and (usually) ``willContinue``."""
    function_call: dict[str, Any] = {"partialArgs": list(args)}
    if more:
        function_call["willContinue"] = True
    return {"functionCall": function_call}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def thought(value: str) -> dict[str, Any]:
    return {"text": value, "thought": True}


def sse(
    *payloads: Any,
    eol: str = "\r\n",
    separators: tuple[str, str] = GOOGLE,
    trailer: str | None = None,
) -> bytes:
    """Data-only SSE frames, one per payload (a ``str`` payload is sent verbatim)."""
    out = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else dumps(payload, separators)
        out.append(f"data: {data}{eol}{eol}")
    if trailer is not None:
        out.append(f"data: {trailer}{eol}{eol}")
    return "".join(out).encode("utf-8")


def vertex_sse(*payloads: Any) -> bytes:
    return sse(*payloads, eol="\n", separators=COMPACT)


#: An expected call of the record: choice 0, type ``function``; ``provider_fields`` and
#: ``id_synthesized`` are record keys only when they apply.
call = functools.partial(corpus_build.call, 0)
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)


def synthesized_id(seed: str, index: int) -> str:
    """The issue's deterministic id for a Gemini call without one: seed, choice 0, ordinal."""
    return corpus_build.synthesized_id(seed, 0, index)


def assembled(*, server_tool_calls: list[dict[str, Any]] | None = None, **fields: Any
              ) -> dict[str, Any]:
    """An assembled Gemini record: ``server_tool_calls`` is stated by every capture."""
    return corpus_build.assembled(WIRE, server_tool_calls=server_tool_calls or [], **fields)


def sig(seed: str, size: int = 96) -> str:
    """A thoughtSignature-looking opaque base64 value (fixed per seed; never decoded)."""
    raw = b""
    counter = 0
    while len(raw) < size:
        raw += hashlib.sha256(f"{seed}/{counter}".encode()).digest()
        counter += 1
    return base64.b64encode(b"\x12\x8f" + raw[:size]).decode("ascii")


CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


# Reference sections and the public reports they cite.
WIRES = "wires.md §3 'Gemini streamGenerateContent?alt=sse'"
SHAPES = "shapes-2026.md 'Responses, Anthropic, Gemini (2026 additions)'"
VERTEX = f"{WIRES}, 'Vertex-only streamFunctionCallArguments' (vercel/ai google-stream-tool-call-*)"
SPEC = "assembler spec rule (synthetic shape)"
ISSUE = "issue 13"
PIPECAT_3420 = "https://github.com/pipecat-ai/pipecat/pull/3420"
JS_GENAI_1275 = "googleapis/js-genai #1275"
HERMES_46077 = "hermes-agent #46077"
HERMES_101536 = "https://github.com/NousResearch/hermes-agent/issues/101536"
GEMINI_CLI_26646 = "https://github.com/google-gemini/gemini-cli/pull/26646"
LITELLM_11558 = "https://github.com/BerriAI/litellm/pull/11558"
LITELLM_21744 = "https://github.com/BerriAI/litellm/issues/21744"
REQ_LLM_935 = "https://github.com/agentjido/req_llm/issues/935"
SUB2API_7081 = "https://github.com/Wei-Shaw/sub2api/issues/7081"
OMNIROUTE_4182 = "https://github.com/diegosouzapw/OmniRoute/pull/4182"
UNIFY_49 = "https://github.com/smallmain/vscode-unify-chat-provider/pull/49"
VERCEL_14358 = "vercel/ai #14358"
LANGCHAINJS_10196 = "https://github.com/langchain-ai/langchainjs/issues/10196"

# Opaque thought signatures (only the first call of a batch carries one).
SIG_WEATHER = sig("weather")
SIG_PARIS = sig("paris")
SIG_DOCS = sig("docs")
SIG_TABS = sig("tabs")
SIG_HIKE = sig("hike")
SIG_EMPTY = sig("empty", 64)
SIG_ORDER = sig("order")
SIG_DELAYS = sig("delays")
SIG_VERTEX_WEATHER = sig("vertex-weather", 128)
SIG_ITEMS = sig("items", 128)
SIG_EVENT = sig("event")
SIG_SCREEN = sig("screen", 128)
SIG_EMAIL = sig("email")
SIG_TRIAGE = sig("triage")
SIG_DEPLOY = sig("deploy")
SIG_LOGS = sig("logs")


# --------------------------------------------------------------------------------------------
# Calls: identity, arguments, provider fields
# --------------------------------------------------------------------------------------------


@case
def gemini3_single_call_with_id() -> Capture:
    # Gemini 3 on the Gemini API: the functionCall arrives whole in parts[0] with its id and the
    # part's thoughtSignature; finishReason STOP comes in a later {"text": ""} chunk.
    #   call 0: id kept verbatim (Gemini 3 sends one), name, args serialized compact in received
    #           order -> '{"city":"Hangzhou","unit":"celsius"}'; provider_fields = the part's
    #           thoughtSignature, kept verbatim under its wire key (README decision 3).
    #   STOP with a call -> finish tool_calls; finish_reason verbatim "STOP".
    #   The "" text adds nothing: content null.  usage = the last usageMetadata (chunk 2).
    s = Studio("QHiLaa6LBrb8vdIPoNztsAg", "gemini-3.1-pro-preview")
    body = sse(
        s.chunk(
            [
                call_part(
                    fc("get_weather", {"city": "Hangzhou", "unit": "celsius"}, "call_5280713"),
                    SIG_WEATHER,
                )
            ],
            studio_usage(61, 18, 212),
        ),
        s.chunk([text("")], studio_usage(61, 18, 212), "STOP"),
    )
    return Capture(
        description="Gemini 3: one whole functionCall with id and thoughtSignature, then STOP.",
        source=f"{WIRES} ('functionCall{{name, args, id?}} arrives whole'); id: {SHAPES} "
        f"({HERMES_46077})",
        shape="Gemini 3 single call with id, CRLF data-only frames, STOP in a later text chunk",
        proves="a functionCall starts a call; id kept; args compact; STOP with calls is "
        "tool_calls; the signature is a provider field; usage is usageMetadata",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    "call_5280713",
                    "get_weather",
                    '{"city":"Hangzhou","unit":"celsius"}',
                    provider_fields={"thoughtSignature": SIG_WEATHER},
                )
            ],
            usage={
                "promptTokenCount": 61,
                "candidatesTokenCount": 18,
                "totalTokenCount": 291,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 61}],
                "thoughtsTokenCount": 212,
            },
            model="gemini-3.1-pro-preview",
            response_id="QHiLaa6LBrb8vdIPoNztsAg",
            finish_reasons={"0": "STOP"},
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=985,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini3_parallel_calls_first_signed() -> Capture:
    # Gemini 3 parallel calls: two functionCall parts in ONE chunk; only the first part carries
    # a thoughtSignature (pipecat #3420, js-genai #1275).
    #   call 0: get_weather, id call_3902214, provider_fields {thoughtSignature}.
    #   call 1: get_time, id call_3902215, no signature -> no provider_fields key.
    #   Indices follow the order the calls started (part order).  STOP -> tool_calls.
    s = Studio("Ys5maI-nA9nOz7IPqL2J8AQ", "gemini-3-flash-preview")
    body = sse(
        s.chunk(
            [
                call_part(fc("get_weather", {"city": "Paris"}, "call_3902214"), SIG_PARIS),
                call_part(fc("get_time", {"timezone": "Europe/Paris"}, "call_3902215")),
            ],
            studio_usage(88, 34, 141),
        ),
        s.chunk([text("")], studio_usage(88, 34, 141), "STOP"),
    )
    return Capture(
        description="Gemini 3: two calls in one chunk, the signature on the first part only.",
        source=f"{WIRES} (identity: {PIPECAT_3420}); {SHAPES} ({JS_GENAI_1275})",
        shape="Gemini 3 parallel calls in one chunk, thoughtSignature on the first only",
        proves="each functionCall part is its own call, in part order; provider_fields only on "
        "the call whose part carried the signature",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    "call_3902214",
                    "get_weather",
                    '{"city":"Paris"}',
                    provider_fields={"thoughtSignature": SIG_PARIS},
                ),
                call(1, "call_3902215", "get_time", '{"timezone":"Europe/Paris"}'),
            ],
            model="gemini-3-flash-preview",
            response_id="Ys5maI-nA9nOz7IPqL2J8AQ",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 88,
                "candidatesTokenCount": 34,
                "totalTokenCount": 263,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 88}],
                "thoughtsTokenCount": 141,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=1061,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini3_same_name_separate_chunks() -> Capture:
    # Same-name parallel calls, each arriving as parts[0] of its own chunk: clients keyed by
    # name or by part position merged them into '{…}{…}' (hermes-agent #101536, gemini-cli
    # #26646, LiteLLM #11558) or kept only the first (langchainjs #10196).
    #   chunk 1: search_docs {"query":"kafka rebalance"} id call_7719040 (+ signature) -> call 0.
    #   chunk 2: search_docs {"query":"faust table recovery"} id call_7719041 -> a NEW call 1
    #            ("a new call each time, even with the same name"); arguments never joined.
    #   chunk 3: "" text, STOP -> tool_calls.
    s = Studio("dqHOab6xGLzWodAPkPuViA4", "gemini-3-flash-preview")
    usage = studio_usage(143, 41, 96)
    body = sse(
        s.chunk(
            [call_part(fc("search_docs", {"query": "kafka rebalance"}, "call_7719040"), SIG_DOCS)],
            usage,
        ),
        s.chunk([call_part(fc("search_docs", {"query": "faust table recovery"}, "call_7719041"))],
                usage),
        s.chunk([text("")], usage, "STOP"),
    )
    return Capture(
        description="Gemini 3: two same-name calls, each in parts[0] of its own chunk.",
        source=f"{WIRES} ('Client bugs': {HERMES_101536}, {GEMINI_CLI_26646}, {LITELLM_11558}, "
        f"{LANGCHAINJS_10196})",
        shape="same-name Gemini calls in separate chunks, with ids",
        proves="a functionCall part always starts a new call, same name or not: two calls, "
        "never merged into {…}{…}",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    "call_7719040",
                    "search_docs",
                    '{"query":"kafka rebalance"}',
                    provider_fields={"thoughtSignature": SIG_DOCS},
                ),
                call(1, "call_7719041", "search_docs", '{"query":"faust table recovery"}'),
            ],
            model="gemini-3-flash-preview",
            response_id="dqHOab6xGLzWodAPkPuViA4",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 143,
                "candidatesTokenCount": 41,
                "totalTokenCount": 280,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 143}],
                "thoughtsTokenCount": 96,
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=1425,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


RUN_RESPONSE_ID = "mVnXaPq8LbCrz7IPrN3mwQo"


@case
def gemini25_no_id_run1() -> Capture:
    # Gemini 2.5 sends no functionCall.id (shapes-2026.md: "Gemini 2.x sends none").  Two
    # same-name calls in one chunk, finishReason STOP on that same chunk (2.5's usual last chunk).
    #   Each call gets the deterministic id of the issue's formula, seed = responseId
    #   (offline: no request id), ordinal 0 and 1 -> two distinct ids, id_synthesized true.
    #   Synthesis applies on this wire whatever options.synthesize_ids says (README decision
    #   1): here it is false.  gemini25_no_id_run2 replays the same response: same ids.
    s = Studio(RUN_RESPONSE_ID, "gemini-2.5-flash")
    body = sse(
        s.chunk(
            [
                call_part(fc("get_weather", {"city": "Paris"})),
                call_part(fc("get_weather", {"city": "London"})),
            ],
            studio_usage(52, 20),
            "STOP",
        ),
    )
    return Capture(
        description="Gemini 2.5: two calls without id in one chunk, STOP on the same chunk.",
        source=f"{WIRES} ('id is absent on older models'; Vercel mints random ids); {SHAPES}",
        shape="Gemini 2.5 calls without id (run 1: one chunk, CRLF, synthesize_ids false)",
        proves="a call without id gets the deterministic id from responseId and its ordinal, "
        "flagged id_synthesized; distinct per call",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    synthesized_id(RUN_RESPONSE_ID, 0),
                    "get_weather",
                    '{"city":"Paris"}',
                    id_synthesized=True,
                ),
                call(
                    1,
                    synthesized_id(RUN_RESPONSE_ID, 1),
                    "get_weather",
                    '{"city":"London"}',
                    id_synthesized=True,
                ),
            ],
            response_id=RUN_RESPONSE_ID,
            model="gemini-2.5-flash",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 52,
                "candidatesTokenCount": 20,
                "totalTokenCount": 72,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 52}],
            },
            repairs=corpus_build.repairs(ids_synthesized=2),
            chunks=1,
            bytes=469,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini25_no_id_run2() -> Capture:
    # The same response as gemini25_no_id_run1 (same responseId, same calls) as a relay
    # re-framed it: LF line ends, one call per chunk, STOP in a trailing {"text": ""} chunk,
    # and options.synthesize_ids true.  The ids must be exactly those of run 1 (the same on
    # every replay; Vercel's random ids change on each one).
    s = Studio(RUN_RESPONSE_ID, "gemini-2.5-flash")
    usage = studio_usage(52, 20)
    body = sse(
        s.chunk([call_part(fc("get_weather", {"city": "Paris"}))], usage),
        s.chunk([call_part(fc("get_weather", {"city": "London"}))], usage),
        s.chunk([text("")], usage, "STOP"),
        eol="\n",
    )
    return Capture(
        description="The run-1 response replayed: LF framing, one call per chunk, same ids.",
        source=f"{WIRES} ('Vercel mints random ids'); {ISSUE} 'Precisely' (same on every replay)",
        shape="Gemini 2.5 calls without id (run 2: same responseId, separate chunks, LF, "
        "synthesize_ids true)",
        proves="synthesized ids depend only on the seed and the ordinal: the same ids as run 1, "
        "whatever the framing, chunking or synthesize_ids option",
        body=body,
        synthesize_ids=True,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    synthesized_id(RUN_RESPONSE_ID, 0),
                    "get_weather",
                    '{"city":"Paris"}',
                    id_synthesized=True,
                ),
                call(
                    1,
                    synthesized_id(RUN_RESPONSE_ID, 1),
                    "get_weather",
                    '{"city":"London"}',
                    id_synthesized=True,
                ),
            ],
            response_id=RUN_RESPONSE_ID,
            model="gemini-2.5-flash",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 52,
                "candidatesTokenCount": 20,
                "totalTokenCount": 72,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 52}],
            },
            repairs=corpus_build.repairs(ids_synthesized=2),
            chunks=3,
            bytes=1094,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini3_call_without_args() -> Capture:
    # A tool without parameters: the functionCall has name and id but no "args" key at all.
    #   "A Gemini call without args has arguments {}" -> arguments "{}", arguments_json true.
    s = Studio("_vr4aYiWEJnYodAPkujX0QM", "gemini-3-flash-preview")
    usage = studio_usage(249, 9, 183)
    body = sse(
        s.chunk([call_part(fc("list_open_tabs", call_id="call_6034419"), SIG_TABS)], usage),
        s.chunk([text("")], usage, "STOP"),
    )
    return Capture(
        description="Gemini 3: a call to a tool without parameters (no args key).",
        source=f"{ISSUE} 'Precisely' (a call without args); shape of vercel/ai "
        "google-stream-no-args-tool-call, cited in " + WIRES,
        shape="Gemini 3 call without args",
        proves="a functionCall without args has arguments {} (valid JSON), never empty",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    "call_6034419",
                    "list_open_tabs",
                    "{}",
                    provider_fields={"thoughtSignature": SIG_TABS},
                )
            ],
            model="gemini-3-flash-preview",
            response_id="_vr4aYiWEJnYodAPkujX0QM",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 249,
                "candidatesTokenCount": 9,
                "totalTokenCount": 441,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 249}],
                "thoughtsTokenCount": 183,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=943,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_args_compact_received_order() -> Capture:
    # The args object as the Gemini API sends it (", " / ": " separators, raw UTF-8, keys not
    # sorted, nesting, array, true, null, an escaped quote and a newline) is serialized as
    # compact JSON, keys in received order (README decision 4: non-ASCII kept raw, JSON escapes
    # only where JSON needs them, integers stay integers):
    #   {"query":"chaussures de randonnée","filters":{"max_price":120,"brands":["Salomon",
    #   "Merrell"],"waterproof":true,"color":null},"note":"pointure \"42\"\nlarge","limit":5}
    s = Studio("k3ZqaJ2xN9mD7s8P4vRtwQc", "gemini-3.1-pro-preview")
    args = {
        "query": "chaussures de randonnée",
        "filters": {
            "max_price": 120,
            "brands": ["Salomon", "Merrell"],
            "waterproof": True,
            "color": None,
        },
        "note": 'pointure "42"\nlarge',
        "limit": 5,
    }
    usage = studio_usage(204, 47, 388)
    body = sse(
        s.chunk([call_part(fc("search_products", args, "call_2217065"), SIG_HIKE)], usage),
        s.chunk([text("")], usage, "STOP"),
    )
    return Capture(
        description="An args object with nesting, unsorted keys, non-ASCII and escapes.",
        source=f"{ISSUE} table, Gemini 'arguments' (compact JSON, keys in received order)",
        shape="Gemini 3 call with nested, non-ASCII args",
        proves="args become compact JSON in received key order: no sorting, no spaces, raw "
        "UTF-8, integers unchanged",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    "call_2217065",
                    "search_products",
                    r'{"query":"chaussures de randonnée","filters":{"max_price":120,'
                    r'"brands":["Salomon","Merrell"],"waterproof":true,"color":null},'
                    r'"note":"pointure \"42\"\nlarge","limit":5}',
                    provider_fields={"thoughtSignature": SIG_HIKE},
                )
            ],
            model="gemini-3.1-pro-preview",
            response_id="k3ZqaJ2xN9mD7s8P4vRtwQc",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 204,
                "candidatesTokenCount": 47,
                "totalTokenCount": 639,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 204}],
                "thoughtsTokenCount": 388,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=1131,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Text, thoughts, usage, ends
# --------------------------------------------------------------------------------------------


@case
def gemini_text_only_stop() -> Capture:
    # Gemini 2.5 text answer: text in two chunks, the second carrying finishReason STOP.
    #   content = the texts concatenated with no separator; STOP without calls -> stop.
    #   usage = the LAST usageMetadata (chunk 2: 12 candidate tokens, not chunk 1's 5).
    #   response_id = responseId; model = modelVersion (README decision 8).
    s = Studio("Hq1naLzZMcrRz7IPpPmL4Qk", "gemini-2.5-flash")
    body = sse(
        s.chunk([text("The capital of France")], studio_usage(8, 5)),
        s.chunk([text(" is Paris.")], studio_usage(8, 12), "STOP"),
    )
    return Capture(
        description="Gemini 2.5 text answer in two chunks, STOP on the last.",
        source=WIRES,
        shape="Gemini text-only answer, CRLF data-only frames",
        proves="text parts concatenate into content; STOP without calls is stop; the last "
        "usageMetadata wins",
        body=body,
        expect=assembled(
            finish="stop",
            finish_reason="STOP",
            content="The capital of France is Paris.",
            reasoning=None,
            usage={
                "promptTokenCount": 8,
                "candidatesTokenCount": 12,
                "totalTokenCount": 20,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}],
            },
            response_id="Hq1naLzZMcrRz7IPpPmL4Qk",
            model="gemini-2.5-flash",
            finish_reasons={"0": "STOP"},
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=693,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": "The capital of France is Paris.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini3_empty_stop_retryable() -> Capture:
    # An "empty 200" (sub2api #7081): the only part is {"text": "", "thoughtSignature": …},
    # finishReason STOP.  No text, no thought part, no call -> finish stop, EMPTY_RESPONSE,
    # retryable.  A signature on a text part is not a call's provider field and adds nothing.
    s = Studio("WQuqavG5KbfUjMcPuP_n6QI", "gemini-3.7-flash")
    usage = studio_usage(7, 0, 94)
    body = sse(
        s.chunk([{"text": "", "thoughtSignature": SIG_EMPTY}], usage, "STOP"),
    )
    return Capture(
        description="Gemini 3: STOP with only an empty, signed text part.",
        source=f"{WIRES} ('return an empty 200': {SUB2API_7081})",
        shape="Gemini 3 empty answer (empty text part with thoughtSignature)",
        proves="STOP with nothing is EMPTY_RESPONSE, retryable, still assembled",
        body=body,
        expect=assembled(
            finish="stop",
            finish_reason="STOP",
            error_code="EMPTY_RESPONSE",
            retryable=True,
            reasoning=None,
            model="gemini-3.7-flash",
            response_id="WQuqavG5KbfUjMcPuP_n6QI",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 7,
                "candidatesTokenCount": 0,
                "totalTokenCount": 101,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 7}],
                "thoughtsTokenCount": 94,
            },
            repairs=corpus_build.repairs(),
            chunks=1,
            bytes=479,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_thoughts_between_calls() -> Capture:
    # includeThoughts: parts with "thought": true are the model's thought summaries.
    #   reasoning = the three thought texts concatenated in order with no separator:
    #     "**Planning the lookups**\n\nI need the order first." + " Then its shipment."
    #     + "Now the carrier."
    #   The thoughts never go to content (null) and do not start or split calls: call 0 and
    #   call 1 keep their own ids and arguments.  STOP -> tool_calls.
    s = Studio("pL0saM6dG5aYz7IP7oWq-Ag", "gemini-3.1-pro-preview")
    body = sse(
        s.chunk([thought("**Planning the lookups**\n\nI need the order first.")],
                studio_usage(310, 0, 120)),
        s.chunk([thought(" Then its shipment.")], studio_usage(310, 0, 160)),
        s.chunk([call_part(fc("get_order", {"order_id": "A-1042"}, "call_4410876"), SIG_ORDER)],
                studio_usage(310, 14, 160)),
        s.chunk([thought("Now the carrier.")], studio_usage(310, 14, 190)),
        s.chunk([call_part(fc("track_parcel", {"carrier": "DHL", "order_id": "A-1042"},
                              "call_4410877"))], studio_usage(310, 35, 190)),
        s.chunk([text("")], studio_usage(310, 35, 190), "STOP"),
    )
    return Capture(
        description="Thought parts before and between two calls.",
        source=f"{ISSUE} 'Tests' (thinking between tools), 'Precisely' (concatenation); "
        f"thought parts: {WIRES}",
        shape="Gemini thought parts (thought: true) between calls",
        proves="thought parts go to reasoning, concatenated with no separator; calls around "
        "them are unaffected",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            reasoning="**Planning the lookups**\n\nI need the order first. Then its shipment."
            "Now the carrier.",
            tool_calls=[
                call(
                    0,
                    "call_4410876",
                    "get_order",
                    '{"order_id":"A-1042"}',
                    provider_fields={"thoughtSignature": SIG_ORDER},
                ),
                call(1, "call_4410877", "track_parcel", '{"carrier":"DHL","order_id":"A-1042"}'),
            ],
            usage={
                "promptTokenCount": 310,
                "candidatesTokenCount": 35,
                "totalTokenCount": 535,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 310}],
                "thoughtsTokenCount": 190,
            },
            model="gemini-3.1-pro-preview",
            response_id="pL0saM6dG5aYz7IP7oWq-Ag",
            finish_reasons={"0": "STOP"},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=2630,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": (
                        "**Planning the lookups**\n\nI need the order first. Then its shipment.Now "
                        "the carrier."
                    ),
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_proxy_done_trailer() -> Capture:
    # A gateway relays the Gemini SSE and appends an OpenRouter-style "data: [DONE]".  The
    # [DONE] frame is accepted on every wire; the record is the one without it.
    s = Studio("Zx8raPf2Bd3kz7IPs4uNmAo", "gemini-2.5-flash-lite")
    body = sse(
        s.chunk([text("Pong")], studio_usage(4, 1)),
        s.chunk([text("!")], studio_usage(4, 2), "STOP"),
        trailer="[DONE]",
    )
    return Capture(
        description="Gemini SSE relayed by a gateway that appends data: [DONE].",
        source=f"{ISSUE} 'Shapes added in 2026', 'Trailers'; {SPEC}",
        shape="Gemini text answer + trailing data: [DONE] (gateway)",
        proves="a [DONE] frame after the finish is accepted on the gemini wire, never "
        "malformed_chunk",
        body=body,
        expect=assembled(finish="stop", finish_reason="STOP", content="Pong!",
            model="gemini-2.5-flash-lite",
            response_id="Zx8raPf2Bd3kz7IPs4uNmAo",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 4,
                "candidatesTokenCount": 2,
                "totalTokenCount": 6,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 4}],
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=690,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": "Pong!",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Finish reasons
# --------------------------------------------------------------------------------------------


@case
def gemini_max_tokens_withholds_call() -> Capture:
    # MAX_TOKENS -> finish length: truncated true, every call withheld (never executed, never
    # dead-lettered), error_code null, not retryable.  The call has no id (Gemini 2.5): its
    # synthesized id is given in the withheld list too.
    #   content = "I'll book it now." + " Then I'll" (text on the MAX_TOKENS chunk is kept).
    rid = "Tb4naK7xEoXgz7IPz8GYqQs"
    s = Studio(rid, "gemini-2.5-flash")
    body = sse(
        s.chunk([text("I'll book it now.")], studio_usage(120, 6)),
        s.chunk(
            [call_part(fc("book_table", {"restaurant": "Septime", "party_size": 4,
                                         "time": "20:30"}))],
            studio_usage(120, 27),
        ),
        s.chunk([text(" Then I'll")], studio_usage(120, 32), "MAX_TOKENS"),
    )
    return Capture(
        description="MAX_TOKENS after a whole call and some text.",
        source=f"{WIRES} (FinishReason enum); {ISSUE} table ('MAX_TOKENS -> length')",
        shape="Gemini 2.5 finishReason MAX_TOKENS with a call (no id)",
        proves="length withholds the calls, truncated true, error_code null, not retryable",
        body=body,
        expect=assembled(
            finish="length",
            finish_reason="MAX_TOKENS",
            truncated=True,
            content="I'll book it now. Then I'll",
            withheld=[
                call(
                    0,
                    synthesized_id(rid, 0),
                    "book_table",
                    '{"restaurant":"Septime","party_size":4,"time":"20:30"}',
                    id_synthesized=True,
                )
            ],
            model="gemini-2.5-flash",
            response_id="Tb4naK7xEoXgz7IPz8GYqQs",
            finish_reasons={"0": "MAX_TOKENS"},
            usage={
                "promptTokenCount": 120,
                "candidatesTokenCount": 32,
                "totalTokenCount": 152,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}],
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=3,
            bytes=1124,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "MAX_TOKENS",
                    "content": "I'll book it now. Then I'll",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


SAFETY_BLOCKED = [
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
]


@case
def gemini_safety_after_text() -> Capture:
    # SAFETY after some text: the last candidate has no content, only finishReason and the
    # safetyRatings (one blocked).  -> content_filter, error_code SAFETY, not retryable, not
    # truncated; the text already streamed is kept.
    s = Studio("Rk2naNq1HuTaz7IPi9W5-Aw", "gemini-2.5-flash")
    body = sse(
        s.chunk([text("To get past the lock you")], studio_usage(19, 6)),
        s.chunk(None, studio_usage(19, 6), "SAFETY", safetyRatings=SAFETY_BLOCKED),
    )
    return Capture(
        description="SAFETY finish on a candidate without content, after some text.",
        source=f"{WIRES} (FinishReason enum); {ISSUE} table ('SAFETY -> content_filter')",
        shape="Gemini finishReason SAFETY, candidate without content",
        proves="SAFETY is content_filter: error_code SAFETY, not retryable, text kept; a "
        "candidate without content is not malformed",
        body=body,
        expect=assembled(
            finish="content_filter",
            finish_reason="SAFETY",
            error_code="SAFETY",
            content="To get past the lock you",
            model="gemini-2.5-flash",
            response_id="Rk2naNq1HuTaz7IPi9W5-Aw",
            finish_reasons={"0": "SAFETY"},
            usage={
                "promptTokenCount": 19,
                "candidatesTokenCount": 6,
                "totalTokenCount": 25,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 19}],
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=958,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "SAFETY",
                    "content": "To get past the lock you",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_recitation_partial_text() -> Capture:
    # RECITATION: the model started quoting a source; the last chunk has text, the finish
    # reason and citationMetadata.  -> content_filter, error_code RECITATION; content kept.
    s = Studio("Cw7naOv3JtSbz7IPq6H1gQo", "gemini-2.5-pro")
    body = sse(
        s.chunk([text("It was the best of times, it was the worst of times,")],
                studio_usage(15, 13, 402)),
        s.chunk(
            [text(" it was the age of wisdom")],
            studio_usage(15, 19, 402),
            "RECITATION",
            citationMetadata={
                "citationSources": [
                    {"startIndex": 0, "endIndex": 77, "uri": "https://www.gutenberg.org/ebooks/98"}
                ]
            },
        ),
    )
    return Capture(
        description="RECITATION finish with citationMetadata after partial text.",
        source=f"{WIRES} (FinishReason enum); {ISSUE} table ('RECITATION -> content_filter')",
        shape="Gemini finishReason RECITATION",
        proves="RECITATION is content_filter with error_code RECITATION; the text is kept",
        body=body,
        expect=assembled(
            finish="content_filter",
            finish_reason="RECITATION",
            error_code="RECITATION",
            content="It was the best of times, it was the worst of times, it was the age of wisdom",
            model="gemini-2.5-pro",
            response_id="Cw7naOv3JtSbz7IPq6H1gQo",
            finish_reasons={"0": "RECITATION"},
            usage={
                "promptTokenCount": 15,
                "candidatesTokenCount": 19,
                "totalTokenCount": 436,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 15}],
                "thoughtsTokenCount": 402,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=921,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "RECITATION",
                    "content": (
                        "It was the best of times, it was the worst of times, it was the age of "
                        "wisdom"
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_blocklist() -> Capture:
    # BLOCKLIST (a term of the project's blocklist) after a little text -> content_filter.
    s = Studio("Lm5naPw8KvUcz7IPt3J2hRo", "gemini-2.5-flash")
    body = sse(
        s.chunk([text("Sure, the internal codename is")], studio_usage(22, 7)),
        s.chunk(None, studio_usage(22, 7), "BLOCKLIST"),
    )
    return Capture(
        description="BLOCKLIST finish after some text.",
        source=f"{WIRES} (FinishReason enum); {ISSUE} table ('BLOCKLIST -> content_filter')",
        shape="Gemini finishReason BLOCKLIST",
        proves="BLOCKLIST is content_filter with error_code BLOCKLIST",
        body=body,
        expect=assembled(
            finish="content_filter",
            finish_reason="BLOCKLIST",
            error_code="BLOCKLIST",
            content="Sure, the internal codename is",
            model="gemini-2.5-flash",
            response_id="Lm5naPw8KvUcz7IPt3J2hRo",
            finish_reasons={"0": "BLOCKLIST"},
            usage={
                "promptTokenCount": 22,
                "candidatesTokenCount": 7,
                "totalTokenCount": 29,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 22}],
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=647,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "BLOCKLIST",
                    "content": "Sure, the internal codename is",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_spii_withholds_call() -> Capture:
    # SPII (sensitive personal data) after a whole call: content_filter withholds the call.
    s = Studio("Np6naQx9LwVdz7IPu4K3iSo", "gemini-3-flash-preview")
    body = sse(
        s.chunk(
            [
                call_part(
                    fc("send_email", {"to": "hr@example.com", "subject": "Employee record"},
                       "call_8830152"),
                    SIG_EMAIL,
                )
            ],
            studio_usage(140, 22, 75),
        ),
        s.chunk(None, studio_usage(140, 22, 75), "SPII"),
    )
    return Capture(
        description="SPII finish after a whole call.",
        source=f"{WIRES} (FinishReason enum); {ISSUE} table ('SPII -> content_filter')",
        shape="Gemini finishReason SPII with a call",
        proves="content_filter withholds the calls (provider fields kept on the withheld call); "
        "error_code SPII, not truncated",
        body=body,
        expect=assembled(
            finish="content_filter",
            finish_reason="SPII",
            error_code="SPII",
            withheld=[
                call(
                    0,
                    "call_8830152",
                    "send_email",
                    '{"to":"hr@example.com","subject":"Employee record"}',
                    provider_fields={"thoughtSignature": SIG_EMAIL},
                )
            ],
            model="gemini-3-flash-preview",
            response_id="Np6naQx9LwVdz7IPu4K3iSo",
            finish_reasons={"0": "SPII"},
            usage={
                "promptTokenCount": 140,
                "candidatesTokenCount": 22,
                "totalTokenCount": 237,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 140}],
                "thoughtsTokenCount": 75,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=948,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "SPII",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_malformed_function_call_no_parts() -> Capture:
    # MALFORMED_FUNCTION_CALL: the model wrote a call the API could not parse; the candidate
    # has content {} (no parts) and a finishMessage.  LiteLLM maps this to "stop" (#21744).
    #   -> finish error, error_code MALFORMED_FUNCTION_CALL, not retryable ("a malformed call
    #   with nothing else is reported under its own code"), never EMPTY_RESPONSE.
    #   error_message = the finishMessage verbatim (README decision 6; req_llm #935 dropped it).
    s = Studio("Fg3naRy0MxWez7IPv5L4jTo", "gemini-2.5-flash")
    message = (
        "Malformed function call: print(default_api.get_weather(city='Paris', unit=celsius))"
    )
    body = sse(
        s.chunk(
            None,
            studio_usage(77, 0, 35),
            "MALFORMED_FUNCTION_CALL",
            content={},
            finishMessage=message,
        ),
    )
    return Capture(
        description="MALFORMED_FUNCTION_CALL with an empty content and a finishMessage.",
        source=f"{WIRES} ('Client bugs': {LITELLM_21744}, {REQ_LLM_935})",
        shape="Gemini finishReason MALFORMED_FUNCTION_CALL, content {} without parts",
        proves="MALFORMED_FUNCTION_CALL is error (never stop): error_code of its own, not "
        "retryable, finishMessage kept as error_message",
        body=body,
        expect=assembled(
            finish="error",
            finish_reason="MALFORMED_FUNCTION_CALL",
            error_code="MALFORMED_FUNCTION_CALL",
            error_message=message,
            model="gemini-2.5-flash",
            response_id="Fg3naRy0MxWez7IPv5L4jTo",
            finish_reasons={"0": "MALFORMED_FUNCTION_CALL"},
            usage={
                "promptTokenCount": 77,
                "candidatesTokenCount": 0,
                "totalTokenCount": 112,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 77}],
                "thoughtsTokenCount": 35,
            },
            repairs=corpus_build.repairs(),
            chunks=1,
            bytes=453,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "MALFORMED_FUNCTION_CALL",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_unexpected_tool_call_withheld() -> Capture:
    # UNEXPECTED_TOOL_CALL (a call although function calling was off for this turn) after a
    # text and a whole call: finish error, the call withheld, error_code UNEXPECTED_TOOL_CALL.
    rid = "Hj8naSz1NyXfz7IPw6M5kUo"
    s = Studio(rid, "gemini-2.5-flash")
    body = sse(
        s.chunk([text("Cleaning the build directory.")], studio_usage(96, 6)),
        s.chunk([call_part(fc("run_shell", {"command": "rm -rf build"}))], studio_usage(96, 19),
                "UNEXPECTED_TOOL_CALL"),
    )
    return Capture(
        description="UNEXPECTED_TOOL_CALL on the chunk that carries the call.",
        source=f"{WIRES} ('Client bugs': {LITELLM_21744})",
        shape="Gemini finishReason UNEXPECTED_TOOL_CALL with a call (no id)",
        proves="UNEXPECTED_TOOL_CALL is error: calls withheld (synthesized id kept), error_code "
        "UNEXPECTED_TOOL_CALL, not retryable, never stop",
        body=body,
        expect=assembled(
            finish="error",
            finish_reason="UNEXPECTED_TOOL_CALL",
            error_code="UNEXPECTED_TOOL_CALL",
            content="Cleaning the build directory.",
            withheld=[
                call(
                    0,
                    synthesized_id(rid, 0),
                    "run_shell",
                    '{"command":"rm -rf build"}',
                    id_synthesized=True,
                )
            ],
            model="gemini-2.5-flash",
            response_id="Hj8naSz1NyXfz7IPw6M5kUo",
            finish_reasons={"0": "UNEXPECTED_TOOL_CALL"},
            usage={
                "promptTokenCount": 96,
                "candidatesTokenCount": 19,
                "totalTokenCount": 115,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 96}],
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=2,
            bytes=776,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "UNEXPECTED_TOOL_CALL",
                    "content": "Cleaning the build directory.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_too_many_tool_calls() -> Capture:
    # TOO_MANY_TOOL_CALLS after three whole calls in one chunk: finish error, all three
    # withheld in part order (indices 0, 1, 2), the signature on the first only.
    s = Studio("Jk9naTa2OzYgz7IPx7N6lVo", "gemini-3-flash-preview")
    body = sse(
        s.chunk(
            [
                call_part(fc("get_ticket", {"id": "OPS-101"}, "call_1190342"), SIG_TRIAGE),
                call_part(fc("get_ticket", {"id": "OPS-102"}, "call_1190343")),
                call_part(fc("get_ticket", {"id": "OPS-103"}, "call_1190344")),
            ],
            studio_usage(402, 45, 130),
        ),
        s.chunk([text("")], studio_usage(402, 45, 130), "TOO_MANY_TOOL_CALLS"),
    )
    return Capture(
        description="TOO_MANY_TOOL_CALLS after three calls in one chunk.",
        source=f"{WIRES} (FinishReason enum; {LITELLM_21744})",
        shape="Gemini finishReason TOO_MANY_TOOL_CALLS with three calls",
        proves="TOO_MANY_TOOL_CALLS is error: every call withheld, in order, with its own "
        "provider fields",
        body=body,
        expect=assembled(
            finish="error",
            finish_reason="TOO_MANY_TOOL_CALLS",
            error_code="TOO_MANY_TOOL_CALLS",
            withheld=[
                call(
                    0,
                    "call_1190342",
                    "get_ticket",
                    '{"id":"OPS-101"}',
                    provider_fields={"thoughtSignature": SIG_TRIAGE},
                ),
                call(1, "call_1190343", "get_ticket", '{"id":"OPS-102"}'),
                call(2, "call_1190344", "get_ticket", '{"id":"OPS-103"}'),
            ],
            model="gemini-3-flash-preview",
            response_id="Jk9naTa2OzYgz7IPx7N6lVo",
            finish_reasons={"0": "TOO_MANY_TOOL_CALLS"},
            usage={
                "promptTokenCount": 402,
                "candidatesTokenCount": 45,
                "totalTokenCount": 577,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 402}],
                "thoughtsTokenCount": 130,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=1158,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "TOO_MANY_TOOL_CALLS",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_finish_other() -> Capture:
    # finishReason OTHER (not in the table's lists) -> finish other: error_code OTHER, calls
    # withheld, not retryable, never stop.
    s = Studio("Ml0naUb3PaZhz7IPy8O7mWo", "gemini-3-flash-preview")
    body = sse(
        s.chunk([text("Deploying")], studio_usage(64, 2, 40)),
        s.chunk([call_part(fc("deploy", {"env": "staging"}, "call_5561208"), SIG_DEPLOY)],
                studio_usage(64, 13, 40)),
        s.chunk(None, studio_usage(64, 13, 40), "OTHER"),
    )
    return Capture(
        description="finishReason OTHER after text and a call.",
        source=f"{WIRES} (FinishReason enum); {ISSUE} table ('others -> other')",
        shape="Gemini finishReason OTHER with a call",
        proves="an unlisted finish reason is other: error_code OTHER, calls withheld",
        body=body,
        expect=assembled(
            finish="other",
            finish_reason="OTHER",
            error_code="OTHER",
            content="Deploying",
            withheld=[
                call(
                    0,
                    "call_5561208",
                    "deploy",
                    '{"env":"staging"}',
                    provider_fields={"thoughtSignature": SIG_DEPLOY},
                )
            ],
            model="gemini-3-flash-preview",
            response_id="Ml0naUb3PaZhz7IPy8O7mWo",
            finish_reasons={"0": "OTHER"},
            usage={
                "promptTokenCount": 64,
                "candidatesTokenCount": 13,
                "totalTokenCount": 117,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 64}],
                "thoughtsTokenCount": 40,
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=1268,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "OTHER",
                    "content": "Deploying",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_prompt_blocked_no_candidates() -> Capture:
    # The prompt itself is blocked: the only chunk has promptFeedback.blockReason and no
    # candidates (vercel/ai fixture issue-19758-prompt-block).  It ends the response:
    #   finish content_filter, finish_reason = the block reason verbatim, error_code the same
    #   upper-cased, not retryable (a block reason with nothing else keeps its own code, not
    #   EMPTY_RESPONSE); usage = its usageMetadata.
    s = Studio("EXCPatOAKMrQjMcPteHVmQo", "gemini-3.7-flash")
    body = sse(
        s.envelope(
            promptFeedback={"blockReason": "PROHIBITED_CONTENT"},
            usageMetadata={
                "promptTokenCount": 9,
                "totalTokenCount": 9,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
                "serviceTier": "standard",
            },
        ),
    )
    return Capture(
        description="promptFeedback.blockReason PROHIBITED_CONTENT and no candidates.",
        source=f"{ISSUE} 'Precisely' (a block reason with no candidates ends the response); "
        f"{ISSUE} table (finish_reason: promptFeedback.blockReason)",
        shape="Gemini prompt block: promptFeedback only, no candidates",
        proves="a block reason ends the response as content_filter with its own code, not "
        "retryable, not stream_closed",
        body=body,
        expect=assembled(
            finish="content_filter",
            finish_reason="PROHIBITED_CONTENT",
            error_code="PROHIBITED_CONTENT",
            usage={
                "promptTokenCount": 9,
                "totalTokenCount": 9,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
                "serviceTier": "standard",
            },
            model="gemini-3.7-flash",
            response_id="EXCPatOAKMrQjMcPteHVmQo",
            finish_reasons={"0": "PROHIBITED_CONTENT"},
            repairs=corpus_build.repairs(),
            chunks=1,
            bytes=292,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "PROHIBITED_CONTENT",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Errors inside the stream
# --------------------------------------------------------------------------------------------


@case
def gemini_error_chunk_unavailable_after_call() -> Capture:
    # A mid-stream {"error": {"code": 503, "status": "UNAVAILABLE"}} chunk on HTTP 200
    # (OmniRoute #4182) after text and a whole call, before any finishReason.  It ends the
    # response: finish error; finish_reason = the error's verbatim status "UNAVAILABLE" (no stop
    # reason arrived); error_code UNAVAILABLE; retryable true (Gemini marks it transient);
    # truncated false; the call withheld; error_message = the error's message.
    s = Studio("Gv4naVc4QbAiz7IPz9P8nXo", "gemini-3.1-pro-preview")
    message = "The model is overloaded. Please try again later."
    body = sse(
        s.chunk([text("Checking both airports.")], studio_usage(75, 5, 220)),
        s.chunk([call_part(fc("get_delays", {"airport": "SFO"}, "call_9907731"), SIG_DELAYS)],
                studio_usage(75, 16, 220)),
        {"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}},
    )
    return Capture(
        description="An UNAVAILABLE error chunk after text and a call, no finishReason.",
        source=f"{WIRES} (mid-stream error: {OMNIROUTE_4182})",
        shape='Gemini {"error": {code 503, status UNAVAILABLE}} chunk mid-stream',
        proves="an error chunk ends the response as error: code from its status, retryable, "
        "calls withheld, not truncated",
        body=body,
        expect=assembled(
            finish="error",
            finish_reason="UNAVAILABLE",
            error_code="UNAVAILABLE",
            retryable=True,
            error_message=message,
            content="Checking both airports.",
            withheld=[
                call(
                    0,
                    "call_9907731",
                    "get_delays",
                    '{"airport":"SFO"}',
                    provider_fields={"thoughtSignature": SIG_DELAYS},
                )
            ],
            model="gemini-3.1-pro-preview",
            response_id="Gv4naVc4QbAiz7IPz9P8nXo",
            finish_reasons={"0": "UNAVAILABLE"},
            usage={
                "promptTokenCount": 75,
                "candidatesTokenCount": 16,
                "totalTokenCount": 311,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 75}],
                "thoughtsTokenCount": 220,
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=1083,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "UNAVAILABLE",
                    "content": "Checking both airports.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_error_chunk_after_stop() -> Capture:
    # An error chunk AFTER a chunk with finishReason STOP: "An error event always makes finish
    # error with error_code from the error, even after a stop reason."  finish_reason stays
    # the verbatim stop reason (STOP); error_code RESOURCE_EXHAUSTED, retryable true (Gemini
    # marks it transient); the call is withheld.
    rid = "Ix5naWd5RcBjz7IPa0Q9oYo"
    s = Studio(rid, "gemini-2.5-flash")
    message = "Resource has been exhausted (e.g. check quota)."
    body = sse(
        s.chunk([call_part(fc("get_quote", {"symbol": "GOOG"}))], studio_usage(33, 9), "STOP"),
        {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}},
    )
    return Capture(
        description="A RESOURCE_EXHAUSTED error chunk after the STOP chunk.",
        source=f"{SPEC}; error chunk shape from {WIRES} ({OMNIROUTE_4182})",
        shape="Gemini STOP chunk then an error chunk (429 RESOURCE_EXHAUSTED)",
        proves="an error after a stop reason still makes finish error; finish_reason keeps the "
        "stop reason; RESOURCE_EXHAUSTED is retryable",
        body=body,
        expect=assembled(
            finish="error",
            finish_reason="STOP",
            error_code="RESOURCE_EXHAUSTED",
            retryable=True,
            error_message=message,
            withheld=[
                call(
                    0,
                    synthesized_id(rid, 0),
                    "get_quote",
                    '{"symbol":"GOOG"}',
                    id_synthesized=True,
                )
            ],
            model="gemini-2.5-flash",
            response_id="Ix5naWd5RcBjz7IPa0Q9oYo",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 33,
                "candidatesTokenCount": 9,
                "totalTokenCount": 42,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 33}],
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=2,
            bytes=524,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Vertex streamFunctionCallArguments (partialArgs)
# --------------------------------------------------------------------------------------------

VERTEX_WEATHER_ID = "dqHOab6xGLzWodAPkPuViA5"


@case
def vertex_partial_args_terminal_calls() -> Capture:
    # Vertex streamFunctionCallArguments, two sequential calls (vercel/ai fixture
    # google-stream-tool-call-arguments):
    #   {name:getWeather, willContinue} (+ signature)  -> call 0 opens (no id: synthesized 0)
    #   {partialArgs:[$.location "Boston" willContinue]} -> nameless: continues call 0
    #   {partialArgs:[$.location ""]}                  -> ends the string: "Boston"
    #   {}                                             -> closes call 0
    #   {}                                             -> no open call: ignored
    #   {name:getWeather, willContinue}                -> call 1 opens (synthesized 1)
    #   {partialArgs:[$.location "San Francisco" willContinue]}, {partialArgs:[$.location ""]}
    #   {} with finishReason STOP                      -> closes call 1; STOP -> tool_calls
    # arguments rebuilt from the JSON paths: '{"location":"Boston"}', '{"location":"San
    # Francisco"}'.  usage = the last usageMetadata (the full one on the STOP chunk).
    v = Vertex(VERTEX_WEATHER_ID, "gemini-3.1-pro-preview", "2026-04-02T17:03:50.399550Z")
    body = vertex_sse(
        v.chunk([call_part(fc("getWeather", willContinue=True), SIG_VERTEX_WEATHER)]),
        v.chunk([partial({"jsonPath": "$.location", "stringValue": "Boston",
                          "willContinue": True})]),
        v.chunk([partial({"jsonPath": "$.location", "stringValue": ""})]),
        v.chunk([{"functionCall": {}}]),
        v.chunk([{"functionCall": {}}]),
        v.chunk([call_part(fc("getWeather", willContinue=True))]),
        v.chunk([partial({"jsonPath": "$.location", "stringValue": "San Francisco",
                          "willContinue": True})]),
        v.chunk([partial({"jsonPath": "$.location", "stringValue": ""})]),
        v.chunk(
            [{"functionCall": {}}],
            "STOP",
            {
                "promptTokenCount": 26,
                "candidatesTokenCount": 23,
                "totalTokenCount": 181,
                "trafficType": "ON_DEMAND",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 26}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 23}],
                "thoughtsTokenCount": 132,
            },
        ),
    )
    return Capture(
        description="Vertex partialArgs: two streamed calls, each closed by functionCall {}.",
        source=VERTEX,
        shape="Vertex streamFunctionCallArguments, terminal {} after each call, an extra {}",
        proves="nameless partialArgs continue the open call and rebuild arguments from JSON "
        "paths; {} closes the open call and is otherwise ignored",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    synthesized_id(VERTEX_WEATHER_ID, 0),
                    "getWeather",
                    '{"location":"Boston"}',
                    provider_fields={"thoughtSignature": SIG_VERTEX_WEATHER},
                    id_synthesized=True,
                ),
                call(
                    1,
                    synthesized_id(VERTEX_WEATHER_ID, 1),
                    "getWeather",
                    '{"location":"San Francisco"}',
                    id_synthesized=True,
                ),
            ],
            usage={
                "promptTokenCount": 26,
                "candidatesTokenCount": 23,
                "totalTokenCount": 181,
                "trafficType": "ON_DEMAND",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 26}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 23}],
                "thoughtsTokenCount": 132,
            },
            model="gemini-3.1-pro-preview",
            response_id="dqHOab6xGLzWodAPkPuViA5",
            finish_reasons={"0": "STOP"},
            repairs=corpus_build.repairs(ids_synthesized=2),
            chunks=9,
            bytes=3129,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


ITEMS_ID = "3noMaojQL_2s6tkPiO26qQ4"


@case
def vertex_partial_args_array_no_terminal() -> Capture:
    # Array arguments (vercel/ai #14358, fixture google-stream-tool-call-array-arguments-
    # missing-terminal-function-call): paths $.operations[N].field build an array of objects;
    # the LAST continuation ($.operations[1].price 0.3) has no willContinue at all, and no
    # terminal {functionCall: {}} follows: the call closes at the end of the body.
    #   operations[0] = {"action":"add","description":"Fresh red apple","itemid":"apple_001",
    #                    "price":0.5}
    #   operations[1] = {"action":"add","description":"Ripe yellow banana",
    #                    "itemid":"banana_001","price":0.3}
    # Keys in the order their paths first arrived; STOP (on a {"text": ""} chunk) -> tool_calls.
    v = Vertex(ITEMS_ID, "gemini-3-flash-preview", "2026-05-19T14:59:42.780296Z",
               "PROVISIONED_THROUGHPUT")
    pieces: list[dict[str, Any]] = []
    for n, (description, item, price) in enumerate(
        [("Fresh red apple", "apple_001", 0.5), ("Ripe yellow banana", "banana_001", 0.3)]
    ):
        for field, value in (("action", "add"), ("description", description), ("itemid", item)):
            path = f"$.operations[{n}].{field}"
            pieces.append(partial({"jsonPath": path, "stringValue": value, "willContinue": True}))
            pieces.append(partial({"jsonPath": path, "stringValue": ""}))
        last = n == 1
        pieces.append(partial({"jsonPath": f"$.operations[{n}].price", "numberValue": price},
                              more=not last))
    body = vertex_sse(
        v.chunk([call_part(fc("writeItems", willContinue=True), SIG_ITEMS)]),
        *(v.chunk([p]) for p in pieces),
        v.chunk(
            [text("")],
            "STOP",
            {
                "promptTokenCount": 54,
                "candidatesTokenCount": 74,
                "totalTokenCount": 249,
                "trafficType": "PROVISIONED_THROUGHPUT",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 54}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 74}],
                "thoughtsTokenCount": 121,
            },
        ),
    )
    return Capture(
        description="Vertex partialArgs for an array argument, no terminal functionCall {}.",
        source=f"{VERTEX}; {SHAPES} ({VERCEL_14358})",
        shape="Vertex partialArgs array paths, last continuation without willContinue, "
        "no terminal {}",
        proves="array paths rebuild arrays of objects; a continuation without willContinue "
        "still belongs to the open call; the call closes at the end of the body",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    synthesized_id(ITEMS_ID, 0),
                    "writeItems",
                    '{"operations":[{"action":"add","description":"Fresh red apple",'
                    '"itemid":"apple_001","price":0.5},{"action":"add",'
                    '"description":"Ripe yellow banana","itemid":"banana_001","price":0.3}]}',
                    provider_fields={"thoughtSignature": SIG_ITEMS},
                    id_synthesized=True,
                )
            ],
            model="gemini-3-flash-preview",
            response_id="3noMaojQL_2s6tkPiO26qQ4",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 54,
                "candidatesTokenCount": 74,
                "totalTokenCount": 249,
                "trafficType": "PROVISIONED_THROUGHPUT",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 54}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 74}],
                "thoughtsTokenCount": 121,
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=16,
            bytes=6100,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def vertex_partial_args_value_types() -> Capture:
    # partialArgs of every value kind, on a call whose opening part carries an id:
    #   open {id, name:create_event, willContinue} (+ signature) -> call 0, id kept (no synthesis)
    #   $.title "Design " (willContinue) + "review \"Q3\"" (willContinue) + "" -> one string
    #   one part with three partialArgs: $.title "" ends it, $.duration_minutes numberValue 45,
    #     $.remote boolValue true
    #   $.attendees[0].email, $.attendees[1].email (one part, two entries), $.room nullValue
    #   {} closes the call; STOP on a later text "" chunk.
    # arguments: {"title":"Design review \"Q3\"","duration_minutes":45,"remote":true,
    #             "attendees":[{"email":"ana@example.com"},{"email":"li@example.com"}],
    #             "room":null}
    # (README decision 5: an integral numberValue stays an integer; nullValue means null,
    # whatever value the key carries.)
    v = Vertex("Qm2oaKr4Hs6Jt8Lv0Nx2Pz4", "gemini-3.1-pro-preview", "2026-08-11T09:12:04.551870Z")
    body = vertex_sse(
        v.chunk([call_part(fc("create_event", call_id="call_6650219", willContinue=True),
                           SIG_EVENT)]),
        v.chunk([partial({"jsonPath": "$.title", "stringValue": "Design ", "willContinue": True})]),
        v.chunk([partial({"jsonPath": "$.title", "stringValue": 'review "Q3"',
                          "willContinue": True})]),
        v.chunk([partial({"jsonPath": "$.title", "stringValue": ""},
                         {"jsonPath": "$.duration_minutes", "numberValue": 45},
                         {"jsonPath": "$.remote", "boolValue": True})]),
        v.chunk([partial({"jsonPath": "$.attendees[0].email", "stringValue": "ana@example.com"},
                         {"jsonPath": "$.attendees[1].email", "stringValue": "li@example.com"})]),
        v.chunk([partial({"jsonPath": "$.room", "nullValue": None})]),
        v.chunk([{"functionCall": {}}]),
        v.chunk(
            [text("")],
            "STOP",
            {
                "promptTokenCount": 118,
                "candidatesTokenCount": 52,
                "totalTokenCount": 407,
                "trafficType": "ON_DEMAND",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 118}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 52}],
                "thoughtsTokenCount": 237,
            },
        ),
    )
    return Capture(
        description="Vertex partialArgs with string pieces, number, bool, array and null values.",
        source=f"{VERTEX}; {SPEC} (value kinds of python-genai's PartialArg)",
        shape="Vertex partialArgs: multi-piece string, numberValue, boolValue, nullValue, "
        "several partialArgs in one part, id on the opening part",
        proves="string pieces join until a piece without willContinue; each value kind lands "
        "at its path; the opening part's id is kept",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[
                call(
                    0,
                    "call_6650219",
                    "create_event",
                    r'{"title":"Design review \"Q3\"","duration_minutes":45,"remote":true,'
                    r'"attendees":[{"email":"ana@example.com"},{"email":"li@example.com"}],'
                    r'"room":null}',
                    provider_fields={"thoughtSignature": SIG_EVENT},
                )
            ],
            model="gemini-3.1-pro-preview",
            response_id="Qm2oaKr4Hs6Jt8Lv0Nx2Pz4",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 118,
                "candidatesTokenCount": 52,
                "totalTokenCount": 407,
                "trafficType": "ON_DEMAND",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 118}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 52}],
                "thoughtsTokenCount": 237,
            },
            repairs=corpus_build.repairs(),
            chunks=8,
            bytes=3063,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


SCREEN_ID = "_vr4aYiWEJnYodAPkujX0QN"


@case
def vertex_nameless_after_close_missing_identity() -> Capture:
    # Vertex streamed calls where the name-bearing opening part of the second call was lost
    # (nameless chunks replayed into history got a 400: vscode-unify-chat-provider #49):
    #   call 0: {name:read_screen, willContinue}, $.id "A", "", {} -> complete, closed.
    #   then a nameless {partialArgs:[$.id "B"], willContinue} with NO open call -> it is a
    #   call without a name (call 1), never a continuation of the closed call 0.
    #   Ids: neither part has one -> synthesized for both (ordinals 0 and 1); the name is never
    #   synthesized -> missing_identity dead letter listing both calls in order, call 0 with
    #   missing [], call 1 with missing ["name"].
    v = Vertex(SCREEN_ID, "gemini-3-flash-preview", "2026-05-04T20:01:02.264968Z",
               "PROVISIONED_THROUGHPUT")
    body = vertex_sse(
        v.chunk([call_part(fc("read_screen", willContinue=True), SIG_SCREEN)]),
        v.chunk([partial({"jsonPath": "$.id", "stringValue": "A", "willContinue": True})]),
        v.chunk([partial({"jsonPath": "$.id", "stringValue": ""})]),
        v.chunk([{"functionCall": {}}]),
        v.chunk([partial({"jsonPath": "$.id", "stringValue": "B", "willContinue": True})]),
        v.chunk([partial({"jsonPath": "$.id", "stringValue": ""})]),
        v.chunk([{"functionCall": {}}]),
        v.chunk(
            [text("")],
            "STOP",
            {
                "promptTokenCount": 249,
                "candidatesTokenCount": 58,
                "totalTokenCount": 490,
                "trafficType": "PROVISIONED_THROUGHPUT",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 249}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 58}],
                "thoughtsTokenCount": 183,
            },
        ),
    )
    return Capture(
        description="A nameless partialArgs part after {} closed the only call.",
        source=f"{VERTEX}; nameless chunks: {UNIFY_49}",
        shape="Vertex nameless functionCall with no open call",
        proves="{} closes the open call; a nameless functionCall with no open call is a call "
        "without a name -> missing_identity (ids synthesized, the name never)",
        body=body,
        expect=dead_letter(
            "missing_identity",
            [
                missing(
                    call(
                        0,
                        synthesized_id(SCREEN_ID, 0),
                        "read_screen",
                        '{"id":"A"}',
                        provider_fields={"thoughtSignature": SIG_SCREEN},
                        id_synthesized=True,
                    )
                ),
                missing(
                    call(
                        1,
                        synthesized_id(SCREEN_ID, 1),
                        None,
                        '{"id":"B"}',
                        id_synthesized=True,
                    ),
                    "name",
                ),
            ],
            model="gemini-3-flash-preview",
            response_id="_vr4aYiWEJnYodAPkujX0QN",
            finish_reason="STOP",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 249,
                "candidatesTokenCount": 58,
                "totalTokenCount": 490,
                "trafficType": "PROVISIONED_THROUGHPUT",
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 249}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 58}],
                "thoughtsTokenCount": 183,
            },
            repairs=corpus_build.repairs(ids_synthesized=2),
            chunks=8,
            bytes=2899,
            frames_after_end=0,
            detail="call 1 of choice 0 has no name",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Provider-run tools
# --------------------------------------------------------------------------------------------


@case
def gemini_code_execution_then_client_call() -> Capture:
    # The code-execution tool runs on Google's side: an executableCode part, then its
    # codeExecutionResult part, then text, then a client functionCall.
    #   server_tool_calls: one entry per executableCode part, in the one server-call shape of
    #   every wire {index, type, id, name, arguments, status}: index 0 among server calls, type
    #   "executableCode", id and name null (the part has neither), arguments = the part's
    #   object as compact JSON, status null (Gemini sends none; README decision 7).
    #   codeExecutionResult is its result, not a call, and goes nowhere; neither part is
    #   text, so content is only the text part.
    #   tool_calls: the client call has index 0 (index counts client calls only).
    s = Studio("Kp1oaLs5It7Ku9Mw1Oy3Qa5", "gemini-2.5-flash")
    code = "import math\nprint(math.factorial(12))\n"
    body = sse(
        s.chunk([{"executableCode": {"language": "PYTHON", "code": code}}], studio_usage(58, 21)),
        s.chunk([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "479001600\n"}}],
                studio_usage(58, 21)),
        s.chunk([text("12! is 479001600. Saving it.")], studio_usage(58, 31)),
        s.chunk([call_part(fc("save_note", {"text": "12! = 479001600"}))], studio_usage(58, 44),
                "STOP"),
    )
    return Capture(
        description="Code execution (run by Google), then text, then a client call.",
        source=f"{ISSUE} 'Precisely' (index counts client calls; provider-run calls go to "
        f"server_tool_calls) and 'Tests' (server tools then a client tool); {SPEC}",
        shape="Gemini executableCode + codeExecutionResult parts, then a functionCall",
        proves="a provider-run tool goes to server_tool_calls, never to tool_calls; the client "
        "call is index 0; code and its output are not content",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            content="12! is 479001600. Saving it.",
            tool_calls=[
                call(
                    0,
                    synthesized_id("Kp1oaLs5It7Ku9Mw1Oy3Qa5", 0),
                    "save_note",
                    '{"text":"12! = 479001600"}',
                    id_synthesized=True,
                )
            ],
            server_tool_calls=[
                {
                    "index": 0,
                    "type": "executableCode",
                    "id": None,
                    "name": None,
                    "arguments": r'{"language":"PYTHON",'
                    r'"code":"import math\nprint(math.factorial(12))\n"}',
                    "status": None,
                }
            ],
            model="gemini-2.5-flash",
            response_id="Kp1oaLs5It7Ku9Mw1Oy3Qa5",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 58,
                "candidatesTokenCount": 44,
                "totalTokenCount": 102,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 58}],
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=4,
            bytes=1546,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": "12! is 479001600. Saving it.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Bodies that cannot be trusted
# --------------------------------------------------------------------------------------------


@case
def gemini_json_array_body() -> Capture:
    # streamGenerateContent WITHOUT alt=sse (the REST default) answers a JSON array of
    # responses (pretty-printed, elements separated by ",\r\n"), not SSE: no data: line at
    # all.  Issue 22: the wire reads that framing too (its opening "[" tells it), and the
    # chunks give the record they give over SSE: one call, no id (synthesized from the
    # responseId and ordinal 0), STOP with a call -> tool_calls.
    s = Studio("Lq2oaMt6Ju8Lv0Nx2Pz4Rb6", "gemini-2.5-flash")
    first = s.chunk([call_part(fc("get_weather", {"city": "Oslo"}))], studio_usage(40, 8))
    last = s.chunk([text("")], studio_usage(40, 8), "STOP")
    elements = [json.dumps(first, indent=2, ensure_ascii=False),
                json.dumps(last, indent=2, ensure_ascii=False)]
    body = ("[" + "\n,\r\n".join(elements) + "\n]").encode("utf-8")
    return Capture(
        description="The JSON-array framing of streamGenerateContent without alt=sse.",
        source=f"{WIRES} ('Without alt=sse the endpoint returns a JSON array'); {ISSUE} "
        "'Output' (issue 22: the JSON-array framing, read)",
        shape="Gemini JSON-array body (non-SSE)",
        proves="a JSON-array body gives the record of the same chunks over SSE",
        body=body,
        expect=assembled(
            finish="tool_calls",
            finish_reason="STOP",
            tool_calls=[call(0, synthesized_id("Lq2oaMt6Ju8Lv0Nx2Pz4Rb6", 0), "get_weather",
                             '{"city":"Oslo"}', id_synthesized=True)],
            response_id="Lq2oaMt6Ju8Lv0Nx2Pz4Rb6",
            model="gemini-2.5-flash",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 40,
                "candidatesTokenCount": 8,
                "totalTokenCount": 48,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 40}],
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=2,
            bytes=1126,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "STOP",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def gemini_stream_closed_no_finish() -> Capture:
    # The connection drops after a whole call: no finishReason ever arrived, no error chunk.
    # "the end" on this wire is the end of the body after a chunk with finishReason -> without
    # one, stream_closed, the call listed as assembled so far (complete identity: missing []).
    s = Studio("Mr3oaNu7Kv9Mw1Oy3Qa5Sc7", "gemini-3-flash-preview")
    body = sse(
        s.chunk([text("Let me pull the logs.")], studio_usage(91, 5, 60)),
        s.chunk([call_part(fc("tail_log", {"path": "/var/log/app.log", "lines": 200},
                              "call_3348810"), SIG_LOGS)], studio_usage(91, 24, 60)),
    )
    return Capture(
        description="The body ends after a call, without any finishReason.",
        source=f"{ISSUE} table ('the end') and 'Output' (no end -> stream_closed)",
        shape="Gemini body cut before any finishReason",
        proves="without a finishReason (or error chunk) the response is stream_closed, even "
        "though every call is whole",
        body=body,
        expect=dead_letter(
            "stream_closed",
            [
                missing(
                    call(
                        0,
                        "call_3348810",
                        "tail_log",
                        '{"path":"/var/log/app.log","lines":200}',
                        provider_fields={"thoughtSignature": SIG_LOGS},
                    )
                )
            ],
            model="gemini-3-flash-preview",
            response_id="Mr3oaNu7Kv9Mw1Oy3Qa5Sc7",
            finish_reason=None,
            finish_reasons={"0": None},
            usage={
                "promptTokenCount": 91,
                "candidatesTokenCount": 24,
                "totalTokenCount": 175,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 91}],
                "thoughtsTokenCount": 60,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=980,
            frames_after_end=0,
            detail=(
                "the body ended before any chunk with a finishReason (connection dropped or cut)"
            ),
            declared_tools=None,
        ),
    )


@case
def gemini_nameless_call_no_open_call() -> Capture:
    # A functionCall part without a name as the very first call (a relay dropped the name):
    # there is no open call to continue, so it is a call without a name.  Its id is
    # synthesized (no id on the part), the name never -> missing_identity, missing ["name"].
    rid = "Ns4oaOv8Lw0Nx2Pz4Rb6Td8"
    s = Studio(rid, "gemini-2.5-flash")
    body = sse(
        s.chunk([{"functionCall": {"args": {"path": "notes/todo.md"}}}], studio_usage(70, 11),
                "STOP"),
    )
    return Capture(
        description="A nameless functionCall with args and no open call.",
        source=f"{ISSUE} 'Precisely' (without a name and no open call: missing_identity); {SPEC}",
        shape="Gemini functionCall without name, first call of the response",
        proves="a nameless functionCall never becomes an executable call: missing_identity",
        body=body,
        expect=dead_letter(
            "missing_identity",
            [
                missing(
                    call(0, synthesized_id(rid, 0), None, '{"path":"notes/todo.md"}',
                         id_synthesized=True),
                    "name",
                )
            ],
            model="gemini-2.5-flash",
            response_id="Ns4oaOv8Lw0Nx2Pz4Rb6Td8",
            finish_reason="STOP",
            finish_reasons={"0": "STOP"},
            usage={
                "promptTokenCount": 70,
                "candidatesTokenCount": 11,
                "totalTokenCount": 81,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 70}],
            },
            repairs=corpus_build.repairs(ids_synthesized=1),
            chunks=1,
            bytes=386,
            frames_after_end=0,
            detail="call 0 of choice 0 has no name",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

#: The lists of call objects, each in ordinal order.
LISTS = ("tool_calls", "withheld_tool_calls", "calls")


def incomplete(capture: Capture) -> list[str]:
    """What ``capture.expect`` leaves unsaid that every capture must say (empty: nothing)."""
    expect = capture.expect
    lacking = corpus_build.unstated(expect, ordinals=LISTS) + corpus_build.unfinished(expect)
    # This wire synthesizes every missing id (Decision 1): a call_tw_ id is exactly a
    # synthesized one.
    for key, n, entry in corpus_build.call_lists(expect, LISTS):
        synthesized = str(entry.get("id") or "").startswith("call_tw_")
        if synthesized != bool(entry.get("id_synthesized")):
            lacking.append(f"{key}[{n}].id_synthesized")
    return lacking


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the rules")


INTRO = """\
# Gemini wire corpus (`wire: gemini`)

Raw bodies of Gemini `streamGenerateContent?alt=sse` responses (Gemini API and Vertex AI;
`NAME.sse`, byte-exact) and the record the assembler must produce for each (`NAME.json`:
`options` to run it with, `wire` included; `expect` = keys of the record that must be
equal). Generated by `_make.py`, which documents each case in the comment above it; regenerate
with `.venv/bin/python tests/core/corpus_wires/gemini/_make.py`. Every expected value was
worked out by hand from issue 13 ("Every streaming wire, one record": the table's Gemini column,
"Output", "Precisely", "Shapes added in 2026", "Tests") and the reference docs
(`shared/reference/wires.md` §3, `shapes-2026.md`), not by running the assembler. Synthesized
ids are written from the issue's formula (`"call_tw_" + sha256("toolwire/call-id/{responseId}/0/
{index}")[:24]`).

Framing follows the servers: Gemini API bodies are data-only frames with CRLF line ends and
`", "`/`": "` JSON separators (`usageMetadata`, `modelVersion`, `responseId` on every chunk);
Vertex AI bodies (`vertex_*`) are data-only frames with LF line ends and compact JSON, with
`createTime` and a bare `usageMetadata: {"trafficType": ...}` on non-final chunks.
`gemini25_no_id_run2` is LF (a relay re-framed it), `gemini_proxy_done_trailer` ends with a
gateway's `data: [DONE]`, `gemini_json_array_body` is the JSON-array framing (no `?alt=sse`).

Every assembled expectation states `outcome`, `wire`, `finish`, `finish_reason`, `truncated`,
`error_code`, `retryable`, `content`, `tool_calls`, `withheld_tool_calls` and
`server_tool_calls`; `reasoning`, `usage`, `error_message`, `response_id`, `model` where the
capture is about them. Every dead letter states `outcome`, `wire`, `reason` and `calls` (with
`missing`).

"""

DECISIONS = """\
## Decisions

Where the issue's rules leave a value open, these captures pin the following choices. The
capture that pins each one is named.

1. **Id synthesis is part of the gemini wire, not opt-in.** The issue's table gives a Gemini call
   without a non-empty `id` "a deterministic id derived from the request", with no option: it
   applies whatever `options.synthesize_ids` says (`gemini25_no_id_run1` has it false,
   `gemini25_no_id_run2` true, same ids). Offline the seed is the response's `responseId`
   (every chunk carries the same one); the ordinal is the call's `index`. Withheld calls and
   dead-letter calls get synthesized ids too (`gemini_max_tokens_withholds_call`,
   `vertex_nameless_after_close_missing_identity`); a name is never synthesized.
2. **Ordinals.** `index` is the call's ordinal in start order among all `functionCall`-started
   calls, a nameless one included (it is a client call without a name); dead-letter `calls`
   are listed in that order (`vertex_nameless_after_close_missing_identity`).
3. **`provider_fields` = `{"thoughtSignature": <verbatim>}`**, the part-level key under its wire
   name (not Chat Completions' `extra_content.google.thought_signature`), only on the call whose
   part carried it; for a Vertex streamed call, the opening part's signature. A
   `thoughtSignature` on a text part is not kept anywhere (`gemini3_empty_stop_retryable`).
4. **Argument serialization.** Compact JSON (`,` and `:` with no spaces), keys in received order,
   non-ASCII characters raw (not `\\u` escaped), only the escapes JSON requires (`\\"`, `\\\\`,
   `\\n`, control characters), integers stay integers (`120`, `45`), other numbers in their
   shortest form (`0.5`) (`gemini_args_compact_received_order`,
   `vertex_partial_args_value_types`). Captures avoid floats whose text could differ between
   serializers.
5. **Rebuilding from `partialArgs`.** Pieces of `stringValue` at the same `jsonPath` are
   concatenated while the previous piece said `willContinue: true`; a piece without it (often
   `""`) ends the string. `numberValue`, `boolValue` and `nullValue` set the value at the path;
   the presence of `nullValue` means JSON null, whatever its value (`null` or `"NULL_VALUE"`).
   `[N]` segments build arrays, object keys keep the order their paths first arrived; several
   entries in one `partialArgs` list apply in list order. A nameless part continues the open call
   whether or not the part itself carries `willContinue` (`vertex_partial_args_array_no_terminal`).
   The opening part's `id` is kept when present (`vertex_partial_args_value_types`).
6. **`error_message`.** For an `{"error": …}` chunk, the error's `message`
   (`gemini_error_chunk_unavailable_after_call`, `gemini_error_chunk_after_stop`). For a finish
   reason that carries a `finishMessage`, that text verbatim
   (`gemini_malformed_function_call_no_parts`; req_llm #935 is the bug of dropping it). Not
   pinned where the body has neither.
7. **Provider-run tools on Gemini.** The issue names Anthropic and Responses items only; by
   analogy with Responses `code_interpreter_call` and Anthropic's `code_execution`
   `server_tool_use`, each Gemini `executableCode` part (code execution, run by Google) is one
   `server_tool_calls` entry in the one server-call shape of every wire:
   `{index: <ordinal among server calls>, type: "executableCode", id: <the part's id, else
   null>, name: null, arguments: <the part's object as compact JSON>, status: null}` (Gemini
   sends no status for it; the `codeExecutionResult`'s `outcome` is a result, not a status).
   No id is synthesized and no name is made up for a server call, and server calls are never
   checked for identity (informational, never withheld). The `codeExecutionResult` part is its
   result, not a call, and goes nowhere; neither part is `content`
   (`gemini_code_execution_then_client_call`).
8. **Envelope.** `response_id` = `responseId`, `model` = `modelVersion`
   (`gemini_text_only_stop`, `gemini25_no_id_run1`).
9. **Error chunks.** Before any `finishReason`, `finish_reason` is the error's `status` string
   (`UNAVAILABLE`), not its numeric `code`; after one it stays the verbatim finish reason
   (`STOP` in `gemini_error_chunk_after_stop`). `error_code` is always the `status`.
10. **Block reasons.** `error_code` = the `blockReason` verbatim (already upper-case:
    `PROHIBITED_CONTENT`), `usage` = that chunk's `usageMetadata`
    (`gemini_prompt_blocked_no_candidates`).
11. **Candidates without parts are valid.** A candidate without `content` (`SAFETY`,
    `BLOCKLIST`, `SPII`, `OTHER`) or with `content: {}` (`MALFORMED_FUNCTION_CALL`) is not a
    malformed chunk.
12. **`{}` closes, and only closes.** An empty `functionCall: {}` closes the open call; with no
    open call it is ignored (the second `{}` in `vertex_partial_args_terminal_calls`). A
    nameless part after the close starts a new nameless call, it never reopens the closed one
    (`vertex_nameless_after_close_missing_identity`).
13. **What `EMPTY_RESPONSE` counts.** An empty text part (even with a `thoughtSignature`) is no
    text; only non-empty text, a non-empty thought part or a call make a response non-empty
    (`gemini3_empty_stop_retryable`).
14. **`wire` on every record.** Dead letters carry `wire: "gemini"` too (as the
    anthropic-messages corpus assumes for its wire).
15. **Pinned as the builder gives them.** `repairs`, `chunks`, `bytes`, `choices`,
    `finish_reasons`, `refusal` and `frames_after_end`: the issue defines no Gemini repairs and
    no count for frames after the end, so these were left to the builder, and not pinned until
    every key of the record was required; every expectation now states the values it gives.
    Finish reasons not in the table (`IMAGE_SAFETY`, `LANGUAGE`, `FINISH_REASON_UNSPECIFIED`)
    would be `other` by the table's "others -> other"; only `OTHER` is captured.
16. **Only a streamed call is open.** A call is open (a nameless part continues it) when its
    opening part said `willContinue: true` or carried `partialArgs`; a whole call (`args`, no
    `willContinue`) is closed at once, so a nameless part after it is a new call without a name
    (`missing_identity`), never merged into it. Not pinned by a capture.
17. **Every block reason is `content_filter`**, as the issue's table says ("a block reason ->
    content_filter"), the ones whose name is also a finish reason (`OTHER`, `IMAGE_SAFETY`)
    included; as finish reasons those stay `other`. Only `PROHIBITED_CONTENT` is captured.

## Changes made when the wire was built

Where the corpus disagreed with issue 13 (or the rule the lead set for every wire), the issue
won; these expectations were changed by hand in `_make.py`, then regenerated:

- `gemini_code_execution_then_client_call`: its `server_tool_calls` entry was
  `{choice, index, id, name, type, arguments, arguments_json}` (the call-object keys); server
  calls are now one shape on every wire, `{index, type, id, name, arguments, status}`, so the
  entry lost `choice` and `arguments_json` and gained `status: null` (decision 7 reworded).
  Nothing else changed: every other expectation already followed the issue.

`gemini_json_array_body` (a non-SSE body -> `malformed_chunk`, as the issue says) is kept as it
is, but the wire cannot meet it: the framer drops lines that are not SSE fields, so a body with
no `data:` line reaches the wire as no event at all, which is indistinguishable from an empty
body (`stream_closed`). The corpus test marks it as an expected failure until the neutral
framer reports a non-SSE body.

## Not covered here

- Several candidates (`candidateCount` > 1): every capture has one candidate, `index` 0.
- `--wire auto` detection: no capture says `auto`; `tests/core/test_corpus_gemini.py` runs every
  capture under `auto` too and requires the same record.
- `groundingMetadata` (Google Search grounding) and `urlContext` metadata: no capture says
  whether they are server tool calls; they carry no part, so the captures leave them out.
- Frames after the end other than `data: [DONE]`: the issue's "frames after a wire's terminal
  event are ignored" has no single terminal event on this wire (the end is the end of the body),
  except the error chunk and the block-reason chunk; no capture sends frames after those.
"""


def readme(captures: list[Capture]) -> str:
    return (INTRO + corpus_build.EVERY_KEY + "\n".join(corpus_build.capture_table(captures))
            + "\n\n" + DECISIONS)


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures))


if __name__ == "__main__":
    main()
