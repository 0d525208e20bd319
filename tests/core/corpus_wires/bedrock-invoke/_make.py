"""Generate the Bedrock InvokeModel corpus: ``NAME.eventstream`` bodies and ``NAME.json``.

Run from the repository root::

    .venv/bin/python tests/core/corpus_wires/bedrock-invoke/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
Bedrock ``POST /model/{modelId}/invoke-with-response-stream`` response for an Anthropic model
(``application/vnd.amazon.eventstream``, written byte-exact) and the whole of the assembler's
record that it must produce with ``options.wire = "bedrock-invoke"``. The shapes come from
``shared/reference/wires-beyond-sse.md`` sections 1 (the framing), 3 ("bedrock-invoke") and
5 (how ``anthropic.AnthropicBedrock`` reads it); the rules are the bedrock-invoke wire's
(listed in ``README.md``): the chunks carry Anthropic Messages events, read by the
anthropic-messages wire's rules unchanged, so a value that depends on those rules follows the
anthropic-messages corpus's README ("Decisions").

Every expected value is written out by hand from those rules (never computed by running
``toolwire``): the expectations are literals, not derived from the bodies. The one exception
is the synthesized call id, written from its formula with :func:`corpus_build.synthesized_id`
(offline the seed is the response id: ``msg_bdrk_…``).

Framing, as Bedrock sends it. Every message is written with the encoder of
:mod:`toolwire.core.framing.eventstream` (byte-exact against a real recording): an event is
``:event-type chunk``, ``:content-type application/json``, ``:message-type event``; its
payload is ``{"bytes":"<base64>","p":"<padding>"}`` (sorted keys, compact), the padding a
prefix of ``abc…XYZ0`` whose length (1 to 52) is worked out from the chunk's place and size,
so that the files are the same on every run. The decoded bytes are one Anthropic event,
compact JSON with non-ASCII raw (``json.dumps(e, separators=(",", ":"),
ensure_ascii=False)``), in the field order the Messages API writes; no ``ping`` events, no
SSE names (none in a Bedrock recording). ``message_stop`` carries
``amazon-bedrock-invocationMetrics``. An exception is ``:exception-type``, ``:content-type``,
``:message-type exception`` with a compact JSON payload; an ``error`` message carries its code
and message in headers, with an empty payload.
"""

from __future__ import annotations

import base64
import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Run as a script, only this folder is on the path: the shared builders are under the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.core import corpus_build
from tests.core.corpus_build import COMPACT, missing
from toolwire.core.framing import eventstream as es

HERE = Path(__file__).resolve().parent

WIRE = "bedrock-invoke"
SUFFIX = ".eventstream"

#: The padding alphabet of Bedrock's ``"p"`` field (every recording cuts it somewhere).
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"
#: Where ``message_stop`` carries Bedrock's own metrics (kept under this key in ``usage``).
METRICS = "amazon-bedrock-invocationMetrics"
#: What a body that ends without ``message_stop`` says (the anthropic-messages wire's words).
NO_STOP = "the body ended without message_stop"
#: Exceptions AWS says to retry ("Retry your request"; modelTimeoutException: invoke only).
RETRYABLE_EXCEPTIONS = frozenset({"throttlingException", "serviceUnavailableException",
                                  "internalServerException", "modelStreamErrorException",
                                  "modelTimeoutException"})
#: Every exception member of ``ResponseStream`` (service-2.json).
EXCEPTIONS = RETRYABLE_EXCEPTIONS | {"validationException"}


# --------------------------------------------------------------------------------------------
# Building blocks: the capture and the body
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``bedrock-invoke`` (its ``NAME.json`` says so)."""

    wire = WIRE


def compact(payload: Any) -> str:
    """JSON as Bedrock writes an Anthropic event: compact, non-ASCII raw, keys as given."""
    return json.dumps(payload, separators=COMPACT, ensure_ascii=False)


def chunk_payload(data: str, ordinal: int) -> bytes:
    """A ``chunk`` event's payload: ``bytes`` (the base64 given) and its padding, keys
    sorted. The padding's length (1..52) depends only on the chunk's place and size."""
    padding = PADDING[:1 + (ordinal * 19 + len(data)) % 52]
    return json.dumps({"bytes": data, "p": padding}, separators=COMPACT,
                      sort_keys=True).encode("ascii")


def chunk(event: dict[str, Any] | bytes, ordinal: int) -> bytes:
    """One ``chunk`` message carrying ``event`` (a dict: written compact; bytes: as given)."""
    raw = event if isinstance(event, bytes) else compact(event).encode("utf-8")
    return es.event("chunk", chunk_payload(base64.b64encode(raw).decode("ascii"), ordinal))


@dataclass(frozen=True)
class Raw:
    """A message of the body written as it is (an exception, an error, a damaged chunk)."""

    message: bytes


@dataclass(frozen=True)
class RawChunk:
    """A ``chunk`` message with this payload verbatim (one that is not ``{bytes, p}``)."""

    payload: bytes


@dataclass(frozen=True)
class Encoded:
    """A ``chunk`` message whose decoded bytes are these, verbatim (not an Anthropic event
    written compact: a Llama event, half an event)."""

    data: bytes


Part = dict[str, Any] | Raw | RawChunk | Encoded


def body(*parts: Part) -> bytes:
    """The body: each part one message, back to back (chunks numbered from 0 for padding)."""
    out = []
    for ordinal, part in enumerate(parts):
        if isinstance(part, Raw):
            out.append(part.message)
        elif isinstance(part, RawChunk):
            out.append(es.event("chunk", part.payload))
        elif isinstance(part, Encoded):
            out.append(chunk(part.data, ordinal))
        else:
            out.append(chunk(part, ordinal))
    return b"".join(out)


def exception(kind: str, **payload: Any) -> Raw:
    """An exception message: ``:exception-type`` and its JSON payload (keys sorted)."""
    return Raw(es.exception(kind, json.dumps(payload, separators=COMPACT, sort_keys=True,
                                             ensure_ascii=False).encode("utf-8")))


def error_message(code: str, message: str) -> Raw:
    """An ``error`` message: ``:error-code`` and ``:error-message`` headers, empty payload."""
    return Raw(es.error(code, message))


def damaged(part: dict[str, Any], ordinal: int, at: int) -> Raw:
    """A chunk message with one base64 character of its payload changed after its CRCs were
    written (the payload still base64 and JSON: only the message CRC can tell)."""
    message = bytearray(chunk(part, ordinal))
    start = bytes(message).index(b'{"bytes":"') + len(b'{"bytes":"')
    pos = start + at
    message[pos] = ord("B") if message[pos] != ord("B") else ord("C")
    return Raw(bytes(message))


def metrics(input_tokens: int, output_tokens: int, invocation: int, first_byte: int
            ) -> dict[str, int]:
    """``amazon-bedrock-invocationMetrics`` in the order Bedrock writes it."""
    return {"inputTokenCount": input_tokens, "outputTokenCount": output_tokens,
            "invocationLatency": invocation, "firstByteLatency": first_byte}


@dataclass
class Invoke:
    """One streamed InvokeModel response of an Anthropic model: the events, as dicts."""

    id: str
    model: str
    input_tokens: int
    #: Claude 4 models report cache counts in message_start's usage; Claude 3 ones do not.
    cache_fields: bool = False

    def start_usage(self) -> dict[str, Any]:
        if not self.cache_fields:
            return {"input_tokens": self.input_tokens, "output_tokens": 1}
        return {"input_tokens": self.input_tokens, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": 1}

    def start(self) -> dict[str, Any]:
        return {"type": "message_start", "message": {
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": self.start_usage()}}

    @staticmethod
    def block(index: int, content_block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": content_block}

    def text(self, index: int) -> dict[str, Any]:
        return self.block(index, {"type": "text", "text": ""})

    def thinking(self, index: int) -> dict[str, Any]:
        return self.block(index, {"type": "thinking", "thinking": "", "signature": ""})

    def tool_use(self, index: int, tool_id: str, name: str) -> dict[str, Any]:
        return self.block(index, {"type": "tool_use", "id": tool_id, "name": name, "input": {}})

    def server_tool_use(self, index: int, tool_id: str, name: str) -> dict[str, Any]:
        return self.block(index, {"type": "server_tool_use", "id": tool_id, "name": name,
                                  "input": {}})

    @staticmethod
    def delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": delta}

    def say(self, index: int, text: str) -> dict[str, Any]:
        return self.delta(index, {"type": "text_delta", "text": text})

    def think(self, index: int, thinking: str) -> dict[str, Any]:
        return self.delta(index, {"type": "thinking_delta", "thinking": thinking})

    def sign(self, index: int, signature: str) -> dict[str, Any]:
        return self.delta(index, {"type": "signature_delta", "signature": signature})

    def args(self, index: int, partial_json: str) -> dict[str, Any]:
        return self.delta(index, {"type": "input_json_delta", "partial_json": partial_json})

    @staticmethod
    def stop(index: int) -> dict[str, Any]:
        return {"type": "content_block_stop", "index": index}

    @staticmethod
    def message_delta(stop_reason: str, usage: dict[str, Any],
                      stop_sequence: str | None = None) -> dict[str, Any]:
        return {"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                "usage": usage}

    @staticmethod
    def end(invocation_metrics: dict[str, int] | None) -> dict[str, Any]:
        """``message_stop``, with Bedrock's metrics (``None``: a relay stripped them)."""
        if invocation_metrics is None:
            return {"type": "message_stop"}
        return {"type": "message_stop", METRICS: invocation_metrics}

    @staticmethod
    def error(error_type: str, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": error_type, "message": message}}


# --------------------------------------------------------------------------------------------
# Building blocks: the expected record
# --------------------------------------------------------------------------------------------

#: An expected client call: choice 0, ``index`` its ordinal among client calls, type
#: ``function`` (every ``tool_use``); no provider fields in this corpus.
call = functools.partial(corpus_build.call, 0)
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)


def server_call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An expected ``server_tool_calls`` entry of a ``server_tool_use`` block (no status)."""
    return corpus_build.server_call(index, "server_tool_use", call_id, name, arguments, None)


def assembled(*, finish: str, finish_reason: str | None, chunks: int,
              error_message: str | None = None, reasoning: str | None = None,
              server_tool_calls: list[dict[str, Any]] | None = None,
              usage: dict[str, Any] | None, response_id: str | None, model: str | None,
              frames_after_end: int = 0, **fields: Any) -> dict[str, Any]:
    """An assembled record: every key the corpus states, in one order for every capture."""
    return corpus_build.assembled(
        WIRE, finish=finish, finish_reason=finish_reason, **fields,
        error_message=error_message, reasoning=reasoning,
        server_tool_calls=server_tool_calls or [], usage=usage, response_id=response_id,
        model=model, chunks=chunks, frames_after_end=frames_after_end)


def failed(code: str, message: str, *, retryable: bool, finish_reason: str | None = None,
           **fields: Any) -> dict[str, Any]:
    """A record whose body ended on an exception or error message: finish error, the calls
    withheld (``withheld``), the code and message as sent."""
    return assembled(finish="error", finish_reason=finish_reason, error_code=code,
                     error_message=message, retryable=retryable, **fields)


CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


# Sources (sections of shared/reference/wires-beyond-sse.md and the recordings they cite).
REF = "wires-beyond-sse.md §3 'bedrock-invoke'"
FRAMING = "wires-beyond-sse.md §1"
CLIENTS = "wires-beyond-sse.md §5 'bedrock-invoke'"
OPEN = "wires-beyond-sse.md §6"
OPENINFERENCE = ("openinference python TestInvokeModelWithStreamResponse.test_invoke.yaml "
                 "(a text block, then two tool_use blocks)")
OPENLLMETRY = "openllmetry test_anthropic_3_completion_streaming.yaml"
RULES = "bedrock-invoke wire rules (README)"
ANTHROPIC = "anthropic-messages corpus README, Decisions"
SPEC = "assembler spec rule (synthetic shape)"

HAIKU_3 = "claude-3-haiku-20240307"
HAIKU_35 = "claude-3-5-haiku-20241022"
SONNET_35 = "claude-3-5-sonnet-20240620"
SONNET_35_V2 = "claude-3-5-sonnet-20241022"
SONNET_37 = "claude-3-7-sonnet-20250219"
SONNET_45 = "claude-sonnet-4-5-20250929"
OPUS_3 = "claude-3-opus-20240229"


# --------------------------------------------------------------------------------------------
# Whole responses
# --------------------------------------------------------------------------------------------


@case
def bedrock_text_then_two_tool_uses() -> Capture:
    # The openinference recording's shape: a text block, then two tool_use blocks with
    # toolu_bdrk_ ids (first partial_json ""), message_delta tool_use, message_stop with the
    # invocation metrics.
    #   response_id = message_start's msg_bdrk_ id; model its model.
    #   content = the two text deltas joined; calls 0 and 1 in block order, arguments the
    #   partial_json fragments joined verbatim (JSON).  tool_use -> finish tool_calls.
    #   usage = message_delta's usage, then the metrics under their key.
    #   chunks = 16 events; nothing after message_stop.
    m = Invoke("msg_bdrk_01Kc8H6bq4sQqgXPYGjzSxNb", SONNET_35, 401)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Certainly! I'll check the current weather"),
        m.say(0, " and the local time in Seattle."),
        m.stop(0),
        m.tool_use(1, "toolu_bdrk_01Ua6qAUVbmD1pNYBUhyL5Ks", "get_weather"),
        m.args(1, ""),
        m.args(1, '{"location": "Se'),
        m.args(1, 'attle, WA"}'),
        m.stop(1),
        m.tool_use(2, "toolu_bdrk_01GpB3sCyYi4m7LuQfhbN3rX", "get_time"),
        m.args(2, ""),
        m.args(2, '{"timezone": "America/Los_Angeles"}'),
        m.stop(2),
        m.message_delta("tool_use", {"output_tokens": 118}),
        m.end(metrics(401, 118, 3127, 684)),
    )
    return Capture(
        description="A text block, then two tool_use blocks, then message_stop with metrics.",
        source=f"{REF}; {OPENINFERENCE}",
        shape="Claude 3.5 Sonnet on Bedrock: text + two tool_use blocks, toolu_bdrk_ ids",
        proves="the chunks are read by the Anthropic rules: msg_bdrk_ response id, calls by "
        "block, tool_use -> tool_calls; the invocation metrics join the usage under their key",
        body=raw,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Certainly! I'll check the current weather and the local time in Seattle.",
            tool_calls=[
                call(0, "toolu_bdrk_01Ua6qAUVbmD1pNYBUhyL5Ks", "get_weather",
                     '{"location": "Seattle, WA"}'),
                call(1, "toolu_bdrk_01GpB3sCyYi4m7LuQfhbN3rX", "get_time",
                     '{"timezone": "America/Los_Angeles"}'),
            ],
            usage={"output_tokens": 118,
                   METRICS: {"inputTokenCount": 401, "outputTokenCount": 118,
                             "invocationLatency": 3127, "firstByteLatency": 684}},
            response_id="msg_bdrk_01Kc8H6bq4sQqgXPYGjzSxNb",
            model=SONNET_35,
            chunks=16,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=4704,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": (
                        "Certainly! I'll check the current weather and the local time in Seattle."
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_parallel_same_name_calls() -> Capture:
    # Two get_weather blocks in one response (parallel tool use), no text.
    #   Two calls, never merged: index 0 and 1, each its own toolu_bdrk_ id and arguments.
    #   content null (no text block).  chunks = 12.
    m = Invoke("msg_bdrk_01X2wVn6Qe5rJtY8Lk3Hp9Aa", HAIKU_35, 562)
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Hq7nEo2XfWz6RkT1cVb8Mu", "get_weather"),
        m.args(0, ""),
        m.args(0, '{"city": "Ber'),
        m.args(0, 'lin"}'),
        m.stop(0),
        m.tool_use(1, "toolu_bdrk_01Rj4sLp9WmYc3NfQa6Dk2Ze", "get_weather"),
        m.args(1, ""),
        m.args(1, '{"city": "Paris"}'),
        m.stop(1),
        m.message_delta("tool_use", {"output_tokens": 97}),
        m.end(metrics(562, 97, 1893, 402)),
    )
    return Capture(
        description="Two same-name tool_use blocks, no text.",
        source=f"{REF}; anthropic-messages corpus claude_parallel_tool_use (same rule)",
        shape="Claude 3.5 Haiku on Bedrock: parallel get_weather tool_use blocks",
        proves="same-name blocks are two calls with their own ids, indexed 0 and 1",
        body=raw,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            tool_calls=[
                call(0, "toolu_bdrk_01Hq7nEo2XfWz6RkT1cVb8Mu", "get_weather",
                     '{"city": "Berlin"}'),
                call(1, "toolu_bdrk_01Rj4sLp9WmYc3NfQa6Dk2Ze", "get_weather",
                     '{"city": "Paris"}'),
            ],
            usage={"output_tokens": 97,
                   METRICS: {"inputTokenCount": 562, "outputTokenCount": 97,
                             "invocationLatency": 1893, "firstByteLatency": 402}},
            response_id="msg_bdrk_01X2wVn6Qe5rJtY8Lk3Hp9Aa",
            model=HAIKU_35,
            chunks=12,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=3510,
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
def bedrock_thinking_signature_then_call() -> Capture:
    # Extended thinking (Claude 3.7 Sonnet): a thinking block with two thinking_delta and a
    # signature_delta, then a text block, then a tool_use block.
    #   reasoning = the thinking text joined (no separator); the signature adds nothing.
    #   The thinking block does not shift the call index: the call is 0.  chunks = 15.
    m = Invoke("msg_bdrk_01TnD5vXa8KqLw2Hs7Yc4Ruf", SONNET_37, 1288)
    raw = body(
        m.start(),
        m.thinking(0),
        m.think(0, "The user asks whether the deploy finished."),
        m.think(0, " I should check the pipeline status first."),
        m.sign(0, "EqQBCkgIAxABGAIiQHc0pXbq2Jm8Lw4TnVbR7sKd1Fy3Hx9GzQe6WcPa5Mt0"),
        m.stop(0),
        m.text(1),
        m.say(1, "Let me check the pipeline."),
        m.stop(1),
        m.tool_use(2, "toolu_bdrk_01Pz8WcQ3mLx5Rv2Kd7Nh4Ty", "get_pipeline_status"),
        m.args(2, ""),
        m.args(2, '{"pipeline": "web-deploy", "run": "latest"}'),
        m.stop(2),
        m.message_delta("tool_use", {"output_tokens": 211}),
        m.end(metrics(1288, 211, 5412, 1536)),
    )
    return Capture(
        description="A thinking block with its signature, a text block, then a tool_use.",
        source=f"{REF}; {ANTHROPIC} (reasoning = thinking_delta text; signatures add nothing)",
        shape="Claude 3.7 Sonnet on Bedrock: thinking + signature_delta, text, tool_use",
        proves="thinking text goes to reasoning, the signature adds nothing, the call after "
        "it is index 0 and executable",
        body=raw,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Let me check the pipeline.",
            reasoning="The user asks whether the deploy finished. I should check the pipeline "
            "status first.",
            tool_calls=[
                call(0, "toolu_bdrk_01Pz8WcQ3mLx5Rv2Kd7Nh4Ty", "get_pipeline_status",
                     '{"pipeline": "web-deploy", "run": "latest"}'),
            ],
            usage={"output_tokens": 211,
                   METRICS: {"inputTokenCount": 1288, "outputTokenCount": 211,
                             "invocationLatency": 5412, "firstByteLatency": 1536}},
            response_id="msg_bdrk_01TnD5vXa8KqLw2Hs7Yc4Ruf",
            model=SONNET_37,
            chunks=15,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=4320,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Let me check the pipeline.",
                    "reasoning": (
                        "The user asks whether the deploy finished. I should check the pipeline "
                        "status first."
                    ),
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_max_tokens_withholds_call() -> Capture:
    # max_tokens hit inside a tool_use block (no content_block_stop for it), then
    # message_delta max_tokens and message_stop.
    #   finish length: truncated, error_code null, not retryable; the call withheld with its
    #   arguments as far as they came (not JSON: arguments_json false).  chunks = 9.
    m = Invoke("msg_bdrk_01Fm3QkZ8bVt6Wy1Jc5Hn2Lp", SONNET_35_V2, 734)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "I'll write the migration script."),
        m.stop(0),
        m.tool_use(1, "toolu_bdrk_01Lw6YtRa3Vn9Kx2Qm8Bd5Hc", "write_file"),
        m.args(1, ""),
        m.args(1, '{"path": "migrate.sql", "content": "ALTER TABLE orders ADD COLUMN '),
        m.message_delta("max_tokens", {"output_tokens": 64}),
        m.end(metrics(734, 64, 2210, 590)),
    )
    return Capture(
        description="max_tokens inside a tool_use block's arguments, then message_stop.",
        source=f"{REF}; {ANTHROPIC} (max_tokens -> length, calls withheld)",
        shape="Claude 3.5 Sonnet v2 on Bedrock: max_tokens mid-arguments",
        proves="max_tokens is finish length: truncated, the call withheld with partial "
        "arguments, no error code, never executed",
        body=raw,
        expect=assembled(
            finish="length",
            finish_reason="max_tokens",
            truncated=True,
            content="I'll write the migration script.",
            withheld=[
                call(0, "toolu_bdrk_01Lw6YtRa3Vn9Kx2Qm8Bd5Hc", "write_file",
                     '{"path": "migrate.sql", "content": "ALTER TABLE orders ADD COLUMN ',
                     False),
            ],
            usage={"output_tokens": 64,
                   METRICS: {"inputTokenCount": 734, "outputTokenCount": 64,
                             "invocationLatency": 2210, "firstByteLatency": 590}},
            response_id="msg_bdrk_01Fm3QkZ8bVt6Wy1Jc5Hn2Lp",
            model=SONNET_35_V2,
            chunks=9,
            finish_reasons={"0": "max_tokens"},
            repairs=corpus_build.repairs(),
            bytes=2767,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "max_tokens",
                    "content": "I'll write the migration script.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_web_search_server_tool() -> Capture:
    # A server_tool_use web_search block, its web_search_tool_result block, then the answer;
    # end_turn.  (No Bedrock recording of a server tool was read: the blocks are the Messages
    # API's, carried in chunks.)
    #   server_tool_calls: one entry, index 0, type server_tool_use, arguments the
    #   partial_json joined verbatim, status null; the result block is recorded nowhere.
    #   No client call: finish stop (end_turn), tool_calls [].  content = both text blocks
    #   joined.  usage = message_delta's (server_tool_use counts kept) + metrics.  chunks = 16.
    m = Invoke("msg_bdrk_01Ws9Hb4Kt2Yq7Lm3Xc6Pv8N", SONNET_45, 2051, cache_fields=True)
    search_id = "srvtoolu_bdrk_01Gv5Nq8Xw2Ky4Tj7Hm3Rc6B"
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Let me search for that."),
        m.stop(0),
        m.server_tool_use(1, search_id, "web_search"),
        m.args(1, ""),
        m.args(1, '{"query": "Bedrock Claude '),
        m.args(1, 'region availability"}'),
        m.stop(1),
        m.block(2, {"type": "web_search_tool_result", "tool_use_id": search_id, "content": [
            {"type": "web_search_result",
             "title": "Supported Regions for Claude on Amazon Bedrock",
             "url": "https://docs.aws.amazon.com/bedrock/latest/userguide/models-regions.html",
             "encrypted_content": "EqwBCioIAxgCIiQ5YjE0ZTQ4Ny1hNTE3LTRiNjEtOTk4Mi0yZjAx",
             "page_age": None}]}),
        m.stop(2),
        m.text(3),
        m.say(3, "Claude Sonnet 4.5 is available in us-east-1, us-west-2 and eu-central-1."),
        m.stop(3),
        m.message_delta("end_turn", {"output_tokens": 188,
                                     "server_tool_use": {"web_search_requests": 1}}),
        m.end(metrics(2051, 188, 7320, 911)),
    )
    return Capture(
        description="server_tool_use web_search and its result block, then the answer.",
        source=f"{REF} (chunks carry Messages events); {ANTHROPIC} (server calls); {SPEC}",
        shape="Claude Sonnet 4.5 on Bedrock: server_tool_use web_search (synthetic shape)",
        proves="a server tool block goes to server_tool_calls, never to tool_calls; end_turn "
        "without client calls is stop",
        body=raw,
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Let me search for that.Claude Sonnet 4.5 is available in us-east-1, "
            "us-west-2 and eu-central-1.",
            server_tool_calls=[
                server_call(0, search_id, "web_search",
                            '{"query": "Bedrock Claude region availability"}'),
            ],
            usage={"output_tokens": 188, "server_tool_use": {"web_search_requests": 1},
                   METRICS: {"inputTokenCount": 2051, "outputTokenCount": 188,
                             "invocationLatency": 7320, "firstByteLatency": 911}},
            response_id="msg_bdrk_01Ws9Hb4Kt2Yq7Lm3Xc6Pv8N",
            model=SONNET_45,
            chunks=16,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=4980,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": (
                        "Let me search for that.Claude Sonnet 4.5 is available in us-east-1, "
                        "us-west-2 and eu-central-1."
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_text_only_end_turn() -> Capture:
    # The openllmetry recording's shape: Claude 3 Haiku, one text block, end_turn.
    #   finish stop, finish_reason end_turn, no calls; usage = message_delta's + metrics.
    #   chunks = 7.
    m = Invoke("msg_bdrk_01Yd4Lq7Wn2Xc9Vb5Kt3Hs8G", HAIKU_3, 18)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Why did the trace span"),
        m.say(0, " break up? It needed more context."),
        m.stop(0),
        m.message_delta("end_turn", {"output_tokens": 19}),
        m.end(metrics(18, 19, 812, 327)),
    )
    return Capture(
        description="A text-only answer: one text block, end_turn, message_stop.",
        source=f"{REF}; {OPENLLMETRY}",
        shape="Claude 3 Haiku on Bedrock: one text block, end_turn",
        proves="a text-only answer is finish stop with its text; the metrics join the usage",
        body=raw,
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Why did the trace span break up? It needed more context.",
            usage={"output_tokens": 19,
                   METRICS: {"inputTokenCount": 18, "outputTokenCount": 19,
                             "invocationLatency": 812, "firstByteLatency": 327}},
            response_id="msg_bdrk_01Yd4Lq7Wn2Xc9Vb5Kt3Hs8G",
            model=HAIKU_3,
            chunks=7,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=2028,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "Why did the trace span break up? It needed more context.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_message_stop_without_metrics() -> Capture:
    # A relay that re-encodes the chunks and drops the invocation metrics from message_stop;
    # stop_sequence with the sequence named.
    #   stop_sequence -> finish stop (verbatim reason); usage = message_delta's alone (no
    #   metrics came, so no key is added).  chunks = 6.
    m = Invoke("msg_bdrk_01Ss7Lw3Kq9Xd5Vn2Hc8Ty4M", HAIKU_3, 57)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Name: Ada Lovelace\nRole: engineer"),
        m.stop(0),
        m.message_delta("stop_sequence", {"output_tokens": 12}, stop_sequence="</record>"),
        m.end(None),
    )
    return Capture(
        description="stop_sequence, and a message_stop without invocation metrics.",
        source=f"{RULES} (metrics added only when message_stop carries them); {SPEC}",
        shape="relay: message_stop without amazon-bedrock-invocationMetrics (synthetic shape)",
        proves="without metrics the usage is the Anthropic usage alone; stop_sequence is stop",
        body=raw,
        expect=assembled(
            finish="stop",
            finish_reason="stop_sequence",
            content="Name: Ada Lovelace\nRole: engineer",
            usage={"output_tokens": 12},
            response_id="msg_bdrk_01Ss7Lw3Kq9Xd5Vn2Hc8Ty4M",
            model=HAIKU_3,
            chunks=6,
            finish_reasons={"0": "stop_sequence"},
            repairs=corpus_build.repairs(),
            bytes=1643,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop_sequence",
                    "content": "Name: Ada Lovelace\nRole: engineer",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_tool_use_empty_id_synthesized() -> Capture:
    # A tool_use block with "id": "" (a relay), run with synthesize_ids on.  The empty id is
    # no id; synthesis (the operator's opt-in, every wire) gives the deterministic id seeded,
    # offline, by the response id: sha256("toolwire/call-id/msg_bdrk_…/0/0").
    #   Assembled, finish tool_calls; the call flagged id_synthesized.  chunks = 10.
    m = Invoke("msg_bdrk_01Sy4Nd8Kq2Wx6Lt9Hv3Rc7B", HAIKU_35, 702)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Looking it up."),
        m.stop(0),
        m.tool_use(1, "", "lookup_order"),
        m.args(1, ""),
        m.args(1, '{"order_id": "B-7714"}'),
        m.stop(1),
        m.message_delta("tool_use", {"output_tokens": 44}),
        m.end(metrics(702, 44, 1320, 388)),
    )
    made = corpus_build.synthesized_id("msg_bdrk_01Sy4Nd8Kq2Wx6Lt9Hv3Rc7B", 0, 0)
    return Capture(
        description="tool_use with an empty id, synthesis on.",
        source=f"{ANTHROPIC} (id synthesis is the operator's opt-in on every wire); {SPEC}",
        shape="relay: tool_use id '' (synthesize_ids on)",
        proves="with synthesis on, an id-less call gets the id seeded by the msg_bdrk_ "
        "response id, flagged id_synthesized",
        body=raw,
        synthesize_ids=True,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Looking it up.",
            tool_calls=[call(0, made, "lookup_order", '{"order_id": "B-7714"}',
                             id_synthesized=True)],
            usage={"output_tokens": 44,
                   METRICS: {"inputTokenCount": 702, "outputTokenCount": 44,
                             "invocationLatency": 1320, "firstByteLatency": 388}},
            response_id="msg_bdrk_01Sy4Nd8Kq2Wx6Lt9Hv3Rc7B",
            model=HAIKU_35,
            chunks=10,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(empty_identity_ignored=1, ids_synthesized=1),
            bytes=2777,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Looking it up.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_messages_after_message_stop() -> Capture:
    # After message_stop a relay replays the last chunk and appends a throttlingException.
    #   message_stop ends the body: the two messages after it are not read (the exception
    #   changes nothing), each counted in frames_after_end (2).  chunks = 10 (the events up
    #   to message_stop).  finish tool_calls with the one call.
    m = Invoke("msg_bdrk_01Af5Kq8Wx3Lv7Yd2Hc9Tn4M", HAIKU_35, 199)
    end = m.end(metrics(199, 41, 1104, 356))
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Restarting the worker."),
        m.stop(0),
        m.tool_use(1, "toolu_bdrk_01Ag2Xw6Lq9Kt4Vd7Hn3Yb5R", "restart_service"),
        m.args(1, ""),
        m.args(1, '{"service": "worker"}'),
        m.stop(1),
        m.message_delta("tool_use", {"output_tokens": 41}),
        end,
        end,
        exception("throttlingException", message="Too many requests, please wait before "
                  "trying again."),
    )
    return Capture(
        description="A whole response, then a replayed message_stop chunk and an exception.",
        source=f"{RULES} (messages after message_stop are not read); {SPEC}",
        shape="relay: messages after message_stop (a replayed chunk, an exception)",
        proves="message_stop ends the body: later messages, an exception included, are "
        "counted in frames_after_end and change nothing",
        body=raw,
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Restarting the worker.",
            tool_calls=[call(0, "toolu_bdrk_01Ag2Xw6Lq9Kt4Vd7Hn3Yb5R", "restart_service",
                             '{"service": "worker"}')],
            usage={"output_tokens": 41,
                   METRICS: {"inputTokenCount": 199, "outputTokenCount": 41,
                             "invocationLatency": 1104, "firstByteLatency": 356}},
            response_id="msg_bdrk_01Af5Kq8Wx3Lv7Yd2Hc9Tn4M",
            model=HAIKU_35,
            chunks=10,
            frames_after_end=2,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=3368,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "Restarting the worker.",
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
def bedrock_anthropic_overloaded_error_event() -> Capture:
    # An Anthropic error event carried in a chunk, mid tool arguments (the Messages API's
    # overloaded_error on HTTP 200; on Bedrock a relay or the model container can emit it).
    #   The error event ends the body (no message_stop needed): finish error,
    #   OVERLOADED_ERROR (type upper-cased), retryable, message "Overloaded"; finish_reason
    #   the error type verbatim (no stop reason came); the call withheld with its partial
    #   arguments; usage = message_start's (the last usage object).  chunks = 5.
    m = Invoke("msg_bdrk_01Ov3Kd8Lr5Wq2Yt7Hc4Nm9B", SONNET_35_V2, 1342)
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Ec6Tm2Wq9Yh4Lk7Rb3Xv5N", "search_flights"),
        m.args(0, ""),
        m.args(0, '{"origin": "SEA", "destination": "JF'),
        m.error("overloaded_error", "Overloaded"),
    )
    return Capture(
        description="An Anthropic error event (overloaded_error) in a chunk, mid-arguments.",
        source=f"{REF}; {ANTHROPIC} (an error event); {SPEC}",
        shape="Anthropic error event overloaded_error inside a chunk (synthetic shape)",
        proves="an Anthropic error event is read by the Anthropic rules: OVERLOADED_ERROR, "
        "retryable, the call withheld, usage from message_start",
        body=raw,
        expect=failed(
            "OVERLOADED_ERROR", "Overloaded", retryable=True,
            finish_reason="overloaded_error",
            withheld=[call(0, "toolu_bdrk_01Ec6Tm2Wq9Yh4Lk7Rb3Xv5N", "search_flights",
                           '{"origin": "SEA", "destination": "JF', False)],
            usage={"input_tokens": 1342, "output_tokens": 1},
            response_id="msg_bdrk_01Ov3Kd8Lr5Wq2Yt7Hc4Nm9B",
            model=SONNET_35_V2,
            chunks=5,
            finish_reasons={"0": "overloaded_error"},
            repairs=corpus_build.repairs(),
            bytes=1617,
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
        ),
    )


@case
def bedrock_throttling_exception_after_text() -> Capture:
    # throttlingException after some text (anthropic-sdk 2.15 turns it into an SSE error
    # event; botocore raises EventStreamError with this code).
    #   finish error, error_code "throttlingException" verbatim, its payload message,
    #   retryable (AWS: retry); finish_reason null (no stop reason came); content kept;
    #   usage message_start's.  chunks = 3 events + 1 exception = 4.
    m = Invoke("msg_bdrk_01Th7Qw3Ld9Kx5Vn2Yb8Mc4R", HAIKU_3, 95)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "The three largest moons of Jupiter are"),
        exception("throttlingException", message="Too many tokens, please wait before "
                  "trying again."),
    )
    return Capture(
        description="throttlingException after a text delta.",
        source=f"{REF} (exceptions); {FRAMING} (exception messages); {CLIENTS}",
        shape="Bedrock throttlingException mid-stream",
        proves="an exception ends the body as error: its type verbatim, its message, "
        "retryable for throttling; text before it kept",
        body=raw,
        expect=failed(
            "throttlingException", "Too many tokens, please wait before trying again.",
            retryable=True,
            content="The three largest moons of Jupiter are",
            usage={"input_tokens": 95, "output_tokens": 1},
            response_id="msg_bdrk_01Th7Qw3Ld9Kx5Vn2Yb8Mc4R",
            model=HAIKU_3,
            chunks=4,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=1194,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "The three largest moons of Jupiter are",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_model_timeout_exception_after_call() -> Capture:
    # modelTimeoutException (InvokeModel only) after a whole tool_use block.
    #   finish error, "modelTimeoutException", retryable; the whole call withheld
    #   (arguments JSON); finish_reason null.  chunks = 8 + 1 = 9.
    m = Invoke("msg_bdrk_01Tm5Bx8Qc2Wn7Ld4Yh9Kr3V", SONNET_35, 3310)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Running the query."),
        m.stop(0),
        m.tool_use(1, "toolu_bdrk_01Qx4Hn7Wd2Lc9Vb5Km8Yt3R", "run_sql"),
        m.args(1, ""),
        m.args(1, '{"query": "SELECT region, SUM(total) FROM orders GROUP BY region"}'),
        m.stop(1),
        exception("modelTimeoutException", message="Model has timed out in processing the "
                  "request. Try your request again."),
    )
    return Capture(
        description="modelTimeoutException after a whole tool_use block.",
        source=f"{REF} (modelTimeoutException: 408, invoke only); {FRAMING}",
        shape="Bedrock modelTimeoutException after a call",
        proves="an exception withholds even a whole call; modelTimeoutException is retryable",
        body=raw,
        expect=failed(
            "modelTimeoutException",
            "Model has timed out in processing the request. Try your request again.",
            retryable=True,
            content="Running the query.",
            withheld=[call(0, "toolu_bdrk_01Qx4Hn7Wd2Lc9Vb5Km8Yt3R", "run_sql",
                           '{"query": "SELECT region, SUM(total) FROM orders GROUP BY '
                           'region"}')],
            usage={"input_tokens": 3310, "output_tokens": 1},
            response_id="msg_bdrk_01Tm5Bx8Qc2Wn7Ld4Yh9Kr3V",
            model=SONNET_35,
            chunks=9,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=2463,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Running the query.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_validation_exception_after_stop_reason() -> Capture:
    # validationException after message_delta (stop_reason tool_use) and before message_stop.
    #   finish error (the exception wins over the stop reason), "validationException", not
    #   retryable; finish_reason stays "tool_use" (it had arrived); the call withheld;
    #   usage = message_delta's (no message_stop, so no metrics).  chunks = 6 + 1 = 7.
    m = Invoke("msg_bdrk_01Va2Nc6Xk9Tq4Lw7Hb3Ym5D", HAIKU_35, 870)
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Vd8Kq3Nx6Wm2Lc9Hb5Ty7R", "create_ticket"),
        m.args(0, ""),
        m.args(0, '{"title": "Disk full on db-2", "priority": "high"}'),
        m.stop(0),
        m.message_delta("tool_use", {"output_tokens": 73}),
        exception("validationException", message="Malformed input request, please reformat "
                  "your input and try again."),
    )
    return Capture(
        description="validationException after the stop reason, before message_stop.",
        source=f"{REF}; {RULES} (a stop reason that arrived stays); {SPEC}",
        shape="Bedrock validationException after message_delta (synthetic shape)",
        proves="an exception after the stop reason still ends as error, not retryable for "
        "validation; finish_reason keeps the stop reason",
        body=raw,
        expect=failed(
            "validationException",
            "Malformed input request, please reformat your input and try again.",
            retryable=False,
            finish_reason="tool_use",
            withheld=[call(0, "toolu_bdrk_01Vd8Kq3Nx6Wm2Lc9Hb5Ty7R", "create_ticket",
                           '{"title": "Disk full on db-2", "priority": "high"}')],
            usage={"output_tokens": 73},
            response_id="msg_bdrk_01Va2Nc6Xk9Tq4Lw7Hb3Ym5D",
            model=HAIKU_35,
            chunks=7,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=2032,
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
def bedrock_model_stream_error_exception() -> Capture:
    # modelStreamErrorException (424) with originalStatusCode/originalMessage beside message.
    #   error_code "modelStreamErrorException", error_message = the payload's message (not
    #   originalMessage), retryable.  chunks = 4 + 1 = 5.
    m = Invoke("msg_bdrk_01Ms4Rt8Kv2Xq6Ld3Wn9Hc5B", OPUS_3, 412)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Here is the summary of"),
        m.say(0, " the incident report:"),
        exception("modelStreamErrorException",
                  message="Received a 500 status code from the model while streaming.",
                  originalMessage="Internal server error", originalStatusCode=500),
    )
    return Capture(
        description="modelStreamErrorException with originalStatusCode after text.",
        source=f"{REF}; wires-beyond-sse.md §2 (modelStreamErrorException's payload)",
        shape="Bedrock modelStreamErrorException {message, originalMessage, "
        "originalStatusCode}",
        proves="error_message is the payload's message; modelStreamErrorException is "
        "retryable",
        body=raw,
        expect=failed(
            "modelStreamErrorException",
            "Received a 500 status code from the model while streaming.",
            retryable=True,
            content="Here is the summary of the incident report:",
            usage={"input_tokens": 412, "output_tokens": 1},
            response_id="msg_bdrk_01Ms4Rt8Kv2Xq6Ld3Wn9Hc5B",
            model=OPUS_3,
            chunks=5,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=1512,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Here is the summary of the incident report:",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def bedrock_error_message_after_call() -> Capture:
    # A :message-type error message (code and message in headers, empty payload) after a
    # whole call.  No Bedrock recording holds one (§6): the code is AWS's generic one.
    #   finish error, error_code "InternalFailure" (the :error-code header), error_message
    #   the :error-message header, not retryable (an error message never is); the call
    #   withheld.  chunks = 5 + 1 = 6.
    m = Invoke("msg_bdrk_01Er6Lk2Qw9Xt4Vb7Nh3Mc8P", SONNET_35_V2, 655)
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Ep3Wx8Kq5Lv2Yd9Tc6Hn4M", "fetch_invoice"),
        m.args(0, ""),
        m.args(0, '{"invoice_id": "INV-20931"}'),
        m.stop(0),
        error_message("InternalFailure", "We encountered an internal error. Please try "
                      "again."),
    )
    return Capture(
        description="An error message (:error-code InternalFailure) after a whole call.",
        source=f"{FRAMING} (':message-type: error', botocore ERROR_EVENT_MESSAGE); {OPEN}; "
        f"{SPEC}",
        shape="event-stream error message, code and message in headers (synthetic shape)",
        proves="an error message ends the body as error with its header code and message, "
        "not retryable, calls withheld",
        body=raw,
        expect=failed(
            "InternalFailure", "We encountered an internal error. Please try again.",
            retryable=False,
            withheld=[call(0, "toolu_bdrk_01Ep3Wx8Kq5Lv2Yd9Tc6Hn4M", "fetch_invoice",
                           '{"invoice_id": "INV-20931"}')],
            usage={"input_tokens": 655, "output_tokens": 1},
            response_id="msg_bdrk_01Er6Lk2Qw9Xt4Vb7Nh3Mc8P",
            model=SONNET_35_V2,
            chunks=6,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=1670,
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
        ),
    )


# --------------------------------------------------------------------------------------------
# Bodies cut short
# --------------------------------------------------------------------------------------------


@case
def bedrock_cut_inside_message() -> Capture:
    # The body is cut inside the message_stop chunk (its prelude and some headers arrived).
    # botocore drops the partial message silently and the SDK ends normally (§5).
    #   dead letter stream_closed (the body ended without message_stop), the call listed
    #   (complete identity: missing []).
    m = Invoke("msg_bdrk_01Ct8Hq3Wv5Kx2Ln9Yd4Rb7M", HAIKU_3, 240)
    whole = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Cu5Lm9Xq2Wt7Kd4Hv8Nb3R", "tail_log"),
        m.args(0, ""),
        m.args(0, '{"path": "/var/log/app.log", "lines": 200}'),
        m.stop(0),
        m.message_delta("tool_use", {"output_tokens": 52}),
        m.end(metrics(240, 52, 1408, 377)),
    )
    last = es.EventStreamFramer.split(whole)[-1]
    raw = whole[:len(whole) - len(last) + 40]
    return Capture(
        description="The body is cut 40 bytes into its message_stop chunk.",
        source=f"{FRAMING} ('Cut body'); {CLIENTS} (the SDK ends silently); {RULES}",
        shape="Bedrock body cut inside the message_stop message",
        proves="a body that ends inside a message was cut: stream_closed, never assembled, "
        "even after the stop reason",
        body=raw,
        expect=dead_letter(
            "stream_closed",
            [missing(call(0, "toolu_bdrk_01Cu5Lm9Xq2Wt7Kd4Hv8Nb3R", "tail_log",
                          '{"path": "/var/log/app.log", "lines": 200}'))],
            model="claude-3-haiku-20240307",
            response_id="msg_bdrk_01Ct8Hq3Wv5Kx2Ln9Yd4Rb7M",
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={"output_tokens": 52},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1899,
            frames_after_end=0,
            detail="the body ended without message_stop (connection dropped or cut)",
            declared_tools=None,
        ),
    )


@case
def bedrock_ends_before_message_stop() -> Capture:
    # The body ends between messages, after message_delta: every message whole, no
    # message_stop (LiteLLM PR #32159: a hard cut of a real Bedrock stream).
    #   dead letter stream_closed, the call listed (missing []).
    m = Invoke("msg_bdrk_01Nm2Xk7Qt4Wc9Lv5Hd3Yb8R", SONNET_35, 615)
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Ns6Vq3Lx8Wk2Yd5Tc9Hm4B", "send_email"),
        m.args(0, ""),
        m.args(0, '{"to": "ops@example.com", "subject": "Deploy done"}'),
        m.stop(0),
        m.message_delta("tool_use", {"output_tokens": 57}),
    )
    return Capture(
        description="The body ends at a message boundary after message_delta.",
        source=f"{CLIENTS} (LiteLLM PR #32159); {RULES}",
        shape="Bedrock body ending before message_stop (every message whole)",
        proves="without message_stop the response never ended: stream_closed, even with a "
        "whole call and a stop reason",
        body=raw,
        expect=dead_letter(
            "stream_closed",
            [missing(call(0, "toolu_bdrk_01Ns6Vq3Lx8Wk2Yd5Tc9Hm4B", "send_email",
                          '{"to": "ops@example.com", "subject": "Deploy done"}'))],
            model="claude-3-5-sonnet-20240620",
            response_id="msg_bdrk_01Nm2Xk7Qt4Wc9Lv5Hd3Yb8R",
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={"output_tokens": 57},
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1839,
            frames_after_end=0,
            detail="the body ended without message_stop (connection dropped or cut)",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Malformed chunks
# --------------------------------------------------------------------------------------------


@case
def bedrock_bad_message_crc() -> Capture:
    # One base64 character of the second arguments chunk changed after its CRCs were written
    # (still base64, still a chunk): only the message CRC tells.
    #   dead letter malformed_chunk; the call as assembled before it: arguments the first
    #   fragment (not JSON), missing [].
    m = Invoke("msg_bdrk_01Bc4Rw8Kx2Ql6Vn9Hd3Tm7Y", SONNET_35_V2, 508)
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Bd7Xn3Wq5Lk9Yc2Hv6Tm4R", "read_file"),
        m.args(0, ""),
        m.args(0, '{"path": "/etc/'),
        damaged(m.args(0, 'nginx/nginx.conf"}'), 4, 60),
        m.stop(0),
        m.message_delta("tool_use", {"output_tokens": 39}),
        m.end(metrics(508, 39, 990, 301)),
    )
    return Capture(
        description="A chunk whose payload was damaged after its message CRC was written.",
        source=f"{FRAMING} ('Bad CRC': botocore ChecksumMismatch); {CLIENTS}",
        shape="Bedrock chunk with a bad message CRC",
        proves="a bad CRC is malformed_chunk: a damaged argument never reaches an executor",
        body=raw,
        expect=dead_letter(
            "malformed_chunk",
            [missing(call(0, "toolu_bdrk_01Bd7Xn3Wq5Lk9Yc2Hv6Tm4R", "read_file",
                          '{"path": "/etc/', False))],
            model="claude-3-5-sonnet-20241022",
            response_id="msg_bdrk_01Bc4Rw8Kx2Ql6Vn9Hd3Tm7Y",
            finish_reason=None,
            finish_reasons={"0": None},
            usage={"input_tokens": 508, "output_tokens": 1},
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=2396,
            frames_after_end=0,
            detail=(
                "event-stream message 5 (at byte 1306 of the body): its message CRC is 0x467d7b10 "
                "but its bytes give 0xb034cf49 (a byte of its headers or payload was damaged)"
            ),
            declared_tools=None,
        ),
    )


@case
def bedrock_chunk_bytes_not_base64() -> Capture:
    # A relay that forgot to base64 the last event: its chunk's "bytes" is the event's JSON
    # text itself.
    #   dead letter malformed_chunk (not base64); no call.
    m = Invoke("msg_bdrk_01Nb3Wq7Lx5Kd2Yv9Hc4Tm8R", HAIKU_3, 301)
    stop = compact(m.end(metrics(301, 4, 640, 290)))
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Done."),
        m.stop(0),
        m.message_delta("end_turn", {"output_tokens": 4}),
        RawChunk(chunk_payload(stop, 5)),
    )
    return Capture(
        description="A chunk whose bytes are raw JSON text, not base64.",
        source=f"{REF} (the chunk payload: base64 bytes); {RULES}; {SPEC}",
        shape="relay: chunk bytes not base64 (synthetic shape)",
        proves="chunk bytes that are not base64 are malformed_chunk, not skipped",
        body=raw,
        expect=dead_letter("malformed_chunk", [],
            model="claude-3-haiku-20240307",
            response_id="msg_bdrk_01Nb3Wq7Lx5Kd2Yv9Hc4Tm8R",
            finish_reason="end_turn",
            finish_reasons={"0": "end_turn"},
            usage={"output_tokens": 4},
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=1737,
            frames_after_end=0,
            detail=(
                "a chunk whose 'bytes' are not base64: "
                "{\"bytes\":\"{\\\"type\\\":\\\"message_stop\\\",\\\"amazon-bedrock-invocationMetri"
                "cs\\\":{\\\"inputTokenCount\\\":301,\\\"outputTokenCount\\\":4,\\\"invocationLaten"
                "cy\\\":640,\\\"firstByteLatency\\\":290}}\",\"p\":\"abcdefghijklmnopqrs…"
            ),
            declared_tools=None,
        ),
    )


@case
def bedrock_chunk_bytes_not_json() -> Capture:
    # A relay that re-chunks: one event's JSON split across two chunks.  The first chunk's
    # bytes are base64 of half an event (not JSON).
    #   dead letter malformed_chunk; the call as far as assembled: its start input {} as
    #   compact JSON ("{}": the only delta so far was ""), missing [].
    m = Invoke("msg_bdrk_01Jn6Tq2Wx8Kd4Lv9Hc3Ym5B", SONNET_35, 447)
    event = compact(m.args(0, '{"query": "retry policy"}')).encode("utf-8")
    half = event.index(b"retry")
    raw = body(
        m.start(),
        m.tool_use(0, "toolu_bdrk_01Jq9Xw4Lk7Vd2Tc5Hn8Rb3M", "search_docs"),
        m.args(0, ""),
        Encoded(event[:half]),
        Encoded(event[half:]),
        m.stop(0),
        m.message_delta("tool_use", {"output_tokens": 33}),
        m.end(metrics(447, 33, 870, 310)),
    )
    return Capture(
        description="One event's JSON split across two chunks: the first is not JSON.",
        source=f"{REF} ('The decoded bytes are exactly one Anthropic Messages streaming "
        f"event'); {CLIENTS} (the SDK's sse.json() fails); {SPEC}",
        shape="relay: chunk bytes not JSON (half an event)",
        proves="chunk bytes that are not JSON are malformed_chunk; the call stays listed as "
        "far as assembled",
        body=raw,
        expect=dead_letter(
            "malformed_chunk",
            [missing(call(0, "toolu_bdrk_01Jq9Xw4Lk7Vd2Tc5Hn8Rb3M", "search_docs", "{}"))],
            model="claude-3-5-sonnet-20240620",
            response_id="msg_bdrk_01Jn6Tq2Wx8Kd4Lv9Hc3Ym5B",
            finish_reason=None,
            finish_reasons={"0": None},
            usage={"input_tokens": 447, "output_tokens": 1},
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=2332,
            frames_after_end=0,
            declared_tools=None,
        ),
        unstated=corpus_build.PARSER_DETAIL,
    )


@case
def bedrock_llama_generation_chunk() -> Capture:
    # A Meta Llama 3 model's stream on the same route, read as bedrock-invoke (a wrong wire
    # header): its chunks decode to {"generation": …} objects, no "type".
    #   dead letter malformed_chunk at the first chunk (not an Anthropic event); no call.
    llama = [
        {"generation": "Hi", "prompt_token_count": 12, "generation_token_count": 1,
         "stop_reason": None},
        {"generation": " there!", "prompt_token_count": None, "generation_token_count": 3,
         "stop_reason": None},
        {"generation": "", "prompt_token_count": None, "generation_token_count": 4,
         "stop_reason": "stop", METRICS: metrics(12, 4, 402, 188)},
    ]
    raw = body(*(Encoded(compact(e).encode("utf-8")) for e in llama))
    return Capture(
        description="A Llama stream (generation chunks) read as bedrock-invoke.",
        source=f"{REF} ('Non-Anthropic models on the same route': Llama {{\"generation\":…}})",
        shape="Meta Llama 3 on InvokeModelWithResponseStream: {\"generation\": …} chunks",
        proves="a chunk that is not an Anthropic event (no string type) is malformed_chunk, "
        "never skipped as an unknown type",
        body=raw,
        expect=dead_letter("malformed_chunk", [],
            model=None,
            response_id=None,
            finish_reason=None,
            finish_reasons={},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=0,
            bytes=950,
            frames_after_end=0,
            detail=(
                "a chunk whose bytes are not an Anthropic Messages event (bedrock-invoke reads "
                "Anthropic models; Nova, Llama and Titan send other JSON): "
                "{\"generation\":\"Hi\",\"prompt_token_count\":12,\"generation_token_count\":1,\"st"
                "op_reason\":null}"
            ),
            declared_tools=None,
        ),
    )


@case
def bedrock_chunk_without_bytes() -> Capture:
    # A chunk message whose payload has only the padding (no "bytes"), mid text.
    #   dead letter malformed_chunk; no call.
    m = Invoke("msg_bdrk_01Pb8Lw3Xq6Kt2Yd9Hv4Nc7M", HAIKU_3, 150)
    raw = body(
        m.start(),
        m.text(0),
        m.say(0, "Checking"),
        RawChunk(b'{"p":"abcdefghijklmnopq"}'),
        m.say(0, " the logs."),
        m.stop(0),
        m.message_delta("end_turn", {"output_tokens": 6}),
        m.end(metrics(150, 6, 520, 240)),
    )
    return Capture(
        description="A chunk payload without bytes (padding only).",
        source=f"{REF} (PayloadPart{{bytes}}); {RULES}; {SPEC}",
        shape="chunk payload {\"p\": …} without bytes (synthetic shape)",
        proves="a chunk without a bytes string is malformed_chunk, never an empty event",
        body=raw,
        expect=dead_letter("malformed_chunk", [],
            model="claude-3-haiku-20240307",
            response_id="msg_bdrk_01Pb8Lw3Xq6Kt2Yd9Hv4Nc7M",
            finish_reason=None,
            finish_reasons={"0": None},
            usage={"input_tokens": 150, "output_tokens": 1},
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=2176,
            frames_after_end=0,
            detail="a chunk without a base64 'bytes' string: {\"p\":\"abcdefghijklmnopq\"}",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Identity
# --------------------------------------------------------------------------------------------


@case
def bedrock_tool_use_empty_id() -> Capture:
    # A tool_use block with "id": "" (a relay), synthesis off.
    #   The empty id is no id: dead letter missing_identity, the call with id null,
    #   missing ["id"].
    m = Invoke("msg_bdrk_01Ei5Wq9Lx3Kd7Yv2Hc6Tm8R", HAIKU_3, 640)
    raw = body(
        m.start(),
        m.tool_use(0, "", "lookup_order"),
        m.args(0, ""),
        m.args(0, '{"order_id": "A-20931"}'),
        m.stop(0),
        m.message_delta("tool_use", {"output_tokens": 41}),
        m.end(metrics(640, 41, 1012, 344)),
    )
    return Capture(
        description="tool_use with an empty id (id synthesis off).",
        source=f"{ANTHROPIC} (an empty id is no id); {SPEC}",
        shape="relay: tool_use id '' (synthesize_ids off)",
        proves="an empty tool id is missing_identity, never executed",
        body=raw,
        expect=dead_letter(
            "missing_identity",
            [missing(call(0, None, "lookup_order", '{"order_id": "A-20931"}'), "id")],
            model="claude-3-haiku-20240307",
            response_id="msg_bdrk_01Ei5Wq9Lx3Kd7Yv2Hc6Tm8R",
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={
                "output_tokens": 41,
                "amazon-bedrock-invocationMetrics": {
                    "inputTokenCount": 640,
                    "outputTokenCount": 41,
                    "invocationLatency": 1012,
                    "firstByteLatency": 344,
                },
            },
            repairs=corpus_build.repairs(empty_identity_ignored=1),
            chunks=7,
            bytes=2088,
            frames_after_end=0,
            detail="call 0 of choice 0 has no id",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

#: What every assembled expectation of this corpus states, beyond the shared keys.
STATED = ("error_message", "reasoning", "server_tool_calls", "usage", "response_id", "model",
          "chunks", "frames_after_end")
#: The keys of every server call entry: one shape on every wire.
SERVER_CALL_KEYS = ("index", "type", "id", "name", "arguments", "status")
#: The lists of call objects, each in ordinal order.
LISTS = ("tool_calls", "withheld_tool_calls", "server_tool_calls", "calls")


def incomplete(capture: Capture) -> list[str]:
    """What ``capture.expect`` leaves unsaid that every capture must say, or says against the
    wire's rules (empty: nothing)."""
    expect = capture.expect
    lacking = corpus_build.unstated(
        expect,
        assembled_lists={**corpus_build.CLIENT_CALLS, "server_tool_calls": SERVER_CALL_KEYS},
        ordinals=LISTS,
        absent=lambda value: not value,  # an id "" is no id
    )
    lacking += corpus_build.unfinished(expect)
    if expect.get("wire") != WIRE:
        lacking.append(f"wire (must be {WIRE!r})")
    if expect.get("outcome") == "assembled":
        lacking += [key for key in STATED if key not in expect]
        finish = expect.get("finish")
        if finish in ("content_filter", "error", "other") and not expect.get("error_code"):
            lacking.append("error_code (an abnormal finish names its code)")
        if finish in ("length", "content_filter", "error", "other") and expect.get("tool_calls"):
            lacking.append("tool_calls (calls are withheld under this finish)")
        code = expect.get("error_code")
        if code in EXCEPTIONS and expect.get("retryable") != (code in RETRYABLE_EXCEPTIONS):
            lacking.append("retryable (exactly the exceptions AWS says to retry)")
        if (finish == "error") != (expect.get("error_message") is not None):
            lacking.append("error_message (the error's message exactly when finish is error)")
    for key, n, entry in corpus_build.call_lists(expect, ("tool_calls", "withheld_tool_calls",
                                                          "calls")):
        made = str(entry.get("id") or "").startswith("call_tw_")
        if made != bool(entry.get("id_synthesized")):
            lacking.append(f"{key}[{n}].id_synthesized")
    return lacking


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the wire's rules")


INTRO = """\
# Bedrock InvokeModel corpus (`wire: bedrock-invoke`)

Raw bodies of Bedrock `POST /model/{modelId}/invoke-with-response-stream` responses for
Anthropic models (`application/vnd.amazon.eventstream`; `NAME.eventstream`, byte-exact) and the
record the assembler must produce for each (`NAME.json`: `options` to run it with, `wire`
included; `expect` = keys of the record that must be equal). Generated by `_make.py`, which
documents each case in the comment above it; regenerate with
`.venv/bin/python tests/core/corpus_wires/bedrock-invoke/_make.py`. Every expected value was
worked out by hand from the wire's rules (below) and the reference
(`shared/reference/wires-beyond-sse.md` §1, §3 and §5 "bedrock-invoke"), not by running the
assembler; where a value follows from the Anthropic Messages rules, it is the one the
anthropic-messages corpus's README ("Decisions") gives. The one computed value is the
synthesized id of `bedrock_tool_use_empty_id_synthesized` (`"call_tw_" +
sha256("toolwire/call-id/{seed}/0/{index}")[:24]`, seed the `msg_bdrk_` response id offline).

Every message is written with `toolwire.core.framing.eventstream`'s encoder (byte-exact
against a real recording). A `chunk` event has the headers `:event-type chunk`,
`:content-type application/json`, `:message-type event`, and the payload
`{"bytes":"<base64>","p":"<padding>"}` (sorted keys, compact; the padding a prefix of
`abc…XYZ0`, 1 to 52 characters, its length worked out from the chunk's place and size). The
decoded bytes are one Anthropic Messages event as compact JSON (`json.dumps(e,
separators=(",", ":"), ensure_ascii=False)`, fields in the API's order); no `ping`, no SSE
names, as in the recordings §3 cites. `message_stop` carries
`"amazon-bedrock-invocationMetrics":{"inputTokenCount","outputTokenCount","invocationLatency",
"firstByteLatency"}`. Ids are `msg_bdrk_…` and `toolu_bdrk_…` (`srvtoolu_bdrk_…` for a server
tool). Captures whose shape no recording shows (a relay, a server tool, an `error` message)
say "synthetic shape" in their `source`.

## The wire's rules

- A `:message-type event` message with `:event-type chunk`: its payload is a JSON object whose
  `bytes` is a base64 string, and the decoding is exactly one Anthropic Messages streaming
  event, read by the anthropic-messages wire's rules unchanged: `response_id` is
  message_start's `msg_bdrk_…` id, `model` its model; content, reasoning, calls, server calls,
  `finish_reason` (the stop reason verbatim), `finish` and `usage` are what the
  anthropic-messages wire gives for the same events. Other event types are ignored.
- `usage`: the anthropic-messages wire's (the last usage object: message_delta's), plus, when
  `message_stop` carries `amazon-bedrock-invocationMetrics`, that object verbatim under its
  own key, added last.
- `chunks`: the Anthropic events read (as the anthropic-messages wire counts them), plus one
  for an exception or error message.
- The body ends on `message_stop` (or on an Anthropic `error` event); the messages after it
  are not read, each counted in `frames_after_end`. A body that ends otherwise, or inside a
  message, is a `stream_closed` dead letter whose detail is the anthropic-messages wire's:
  "the body ended without message_stop (connection dropped or cut)".
- Chunk bytes that are not base64, not a JSON object, or a JSON object without a string
  `type` (a Nova, Llama or Titan event); a chunk payload that is not a JSON object, or whose
  `bytes` is absent or not a string; a bad CRC: a `malformed_chunk` dead letter.
- An `exception` message ends the body: outcome `assembled`, finish `error`, `finish_reason`
  null unless the Anthropic events had already given a stop reason (then that stays),
  `error_code` the `:exception-type` verbatim, `error_message` the payload's `message`
  (at most 1000 characters), `retryable` for `throttlingException`,
  `serviceUnavailableException`, `internalServerException`, `modelStreamErrorException`,
  `modelTimeoutException` (false otherwise), the calls withheld. An `error` message: the same,
  with `error_code` its `:error-code` header, `error_message` its `:error-message`, not
  retryable.

Every assembled expectation states `outcome`, `wire`, `finish`, `finish_reason`, `truncated`,
`error_code`, `error_message`, `retryable`, `content`, `reasoning`, `tool_calls`,
`withheld_tool_calls`, `server_tool_calls`, `usage`, `response_id`, `model`, `chunks` and
`frames_after_end`. Every dead letter states `outcome`, `wire`, `reason` and `calls` (with
`missing`); `tests/core/test_corpus_bedrock_invoke.py` checks the detail of each
`stream_closed` one.

"""

DECISIONS = """\
## Decisions

Where the rules leave a value open, these captures pin the following choices. The capture
that pins each one is named.

1. **An exception wins over a stop reason, and keeps it.** After `message_delta` but before
   `message_stop`, an exception still ends the body as `error`, with the calls withheld, and
   `finish_reason` is the stop reason that came (`tool_use`); `usage` is message_delta's, with
   no metrics (they come only on `message_stop`)
   (`bedrock_validation_exception_after_stop_reason`).
2. **The exception's message is the payload's `message`**, never `originalMessage`
   (`bedrock_model_stream_error_exception`).
3. **`error` messages** carry a code no recording shows (§6); the captures use AWS's generic
   `InternalFailure` (`bedrock_error_message_after_call`).
4. **The padding** (`"p"`) is never read: its length varies from chunk to chunk.
5. **A chunk whose bytes are not JSON is malformed even if a later chunk completes it**: one
   chunk is one event (`bedrock_chunk_bytes_not_json`); the call it would have continued is
   listed with its start input (`"{}"`).
6. **Messages after `message_stop`**, an exception included, are counted, never read
   (`bedrock_messages_after_message_stop`: a replayed chunk and a `throttlingException`, 2).
7. **Metrics only when sent**: a `message_stop` without them adds no key
   (`bedrock_message_stop_without_metrics`).
8. **Id synthesis** is the operator's opt-in, as on every wire: off, an empty `id` is
   `missing_identity` (`bedrock_tool_use_empty_id`); on, the id is seeded by the `msg_bdrk_`
   response id offline (`bedrock_tool_use_empty_id_synthesized`).
9. **A damaged message is read up to.** The messages before a bad CRC are read, so the dead
   letter lists the call as far as they built it, however the body is sliced (in one slice
   with the damaged message, or apart) (`bedrock_bad_message_crc`).
10. **Pinned as the builder gives them.** `repairs`, `bytes`, `choices`, `finish_reasons`,
    `refusal` and the detail of every dead letter (but the parser's words in
    `bedrock_chunk_bytes_not_json`'s) were not pinned while the rules left them to the builder;
    every expectation now states them. The truncation of an exception message over 1000
    characters is checked by the test beside the corpus.

## Not covered here

- `--wire auto`: `tests/core/test_corpus_bedrock_invoke.py` requires the same record under
  `auto` for every capture (each opens with a `chunk` message, which tells this wire).
- A request refused before the stream began (4xx, a JSON body): not a stream.
- Exception-first bodies (nothing tells ConverseStream from InvokeModel, §6), legacy Text
  Completions chunks (`{"completion": …}`), `serviceUnavailableException` and
  `internalServerException` (the rule is the same as `throttlingException`'s).
- The property that every anthropic-messages capture, re-encoded as chunks, gives the record
  the anthropic-messages wire gives: in the test, not in this folder.
"""


def readme(captures: list[Capture]) -> str:
    return (INTRO + corpus_build.EVERY_KEY + "\n".join(corpus_build.capture_table(captures))
            + "\n\n" + DECISIONS)


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures), suffix=SUFFIX)


if __name__ == "__main__":
    main()
