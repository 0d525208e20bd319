"""Generate the Bedrock ConverseStream corpus: ``NAME.eventstream`` bodies and ``NAME.json``.

Run from anywhere::

    .venv/bin/python tests/core/corpus_wires/bedrock-converse/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of a
Bedrock ``POST /model/{modelId}/converse-stream`` response (``application/vnd.amazon.eventstream``:
AWS event-stream messages back to back, written byte-exact by the final encoder of
``toolwire.core.framing.eventstream``) and the whole of the assembler's record it must produce
with ``options.wire = "bedrock-converse"``.  The shapes come from
``shared/reference/wires-beyond-sse.md`` §1 (framing), §2 ("bedrock-converse"), §5 (how the
clients read it) and §6 (what the sources leave open), and from the real recordings that
section cites (each capture's ``source`` names the recording it follows, or says "synthetic
shape").  The rules are the bedrock-converse wire's, listed in ``README.md``; where they leave a
value open, the choice is listed under "Decisions" there and named in the capture's comment.

Every expected value is written out by hand from those rules (never computed by running
``toolwire``, nor from the bodies: ``chunks`` is counted by hand in each capture's comment).

Payloads, as Bedrock writes them (every recording read): the JSON of the event's members
directly (the event type only in the ``:event-type`` header), keys sorted, compact, non-ASCII
raw, and a padding member ``"p"``: ``"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"``
cut to a length between 1 and 52.  Here the length is deterministic: the n-th event message of
a body (0-based) gets ``1 + (19 * n) % 52`` characters (1, 20, 39, 6, 25, ...).  Exception
payloads are ``{"message": ...}`` (modelStreamErrorException also ``originalStatusCode`` and
``originalMessage``), without padding; an ``error`` message has an empty payload.
"""

from __future__ import annotations

import functools
import json
import struct
import sys
from pathlib import Path
from typing import Any

# Run as a script, only this folder is on the path: the shared builders are under the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.core import corpus_build
from tests.core.corpus_build import COMPACT, missing
from toolwire.core.framing.eventstream import encode_message, error, event, exception

HERE = Path(__file__).resolve().parent

WIRE = "bedrock-converse"
SUFFIX = ".eventstream"

#: Bedrock's padding alphabet; each event payload's ``"p"`` is a prefix of 1 to 52 characters.
PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"

#: The record's ``detail`` of a body without its end (a dead letter ``stream_closed``).
NO_STOP = "the body ended before messageStop"


# --------------------------------------------------------------------------------------------
# Building blocks: the body
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``bedrock-converse`` (its ``NAME.json`` says so)."""

    wire = WIRE


def payload(members: Any) -> bytes:
    """A payload as Bedrock writes it: JSON, keys sorted, compact, non-ASCII raw."""
    return json.dumps(members, sort_keys=True, separators=COMPACT, ensure_ascii=False).encode()


#: A member left out (``type`` of a ``toolUse`` start on older recordings).
ABSENT: Any = object()


class Stream:
    """One ConverseStream body, message by message (each method appends one or more)."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []
        self._events = 0

    def _pad(self) -> str:
        length = 1 + (19 * self._events) % 52
        self._events += 1
        return PAD[:length]

    def event(self, event_type: str, **members: Any) -> None:
        """An event message: its members and the padding, the type in the header only."""
        members["p"] = self._pad()
        self.messages.append(event(event_type, payload(members)))

    # The six members of ConverseStreamOutput --------------------------------------------

    def start(self) -> None:
        self.event("messageStart", role="assistant")

    def block_start(self, index: int, start: dict[str, Any]) -> None:
        self.event("contentBlockStart", contentBlockIndex=index, start=start)

    def delta(self, index: int, delta: dict[str, Any]) -> None:
        self.event("contentBlockDelta", contentBlockIndex=index, delta=delta)

    def block_stop(self, index: int) -> None:
        self.event("contentBlockStop", contentBlockIndex=index)

    def stop(self, reason: str, additional: dict[str, Any] | None = None) -> None:
        if additional is None:
            self.event("messageStop", stopReason=reason)
        else:
            self.event("messageStop", stopReason=reason, additionalModelResponseFields=additional)

    def metadata(self, usage: dict[str, Any], latency_ms: int,
                 trace: dict[str, Any] | None = None) -> None:
        members: dict[str, Any] = {"usage": usage, "metrics": {"latencyMs": latency_ms}}
        if trace is not None:
            members["trace"] = trace
        self.event("metadata", **members)

    # Blocks -------------------------------------------------------------------------------

    def text(self, index: int, *pieces: str) -> None:
        """Text deltas (a text block has no contentBlockStart): one message per piece."""
        for piece in pieces:
            self.delta(index, {"text": piece})

    def reasoning(self, index: int, *pieces: str) -> None:
        for piece in pieces:
            self.delta(index, {"reasoningContent": {"text": piece}})

    def signature(self, index: int, signature: str) -> None:
        self.delta(index, {"reasoningContent": {"signature": signature}})

    def redacted(self, index: int, blob: str) -> None:
        self.delta(index, {"reasoningContent": {"redactedContent": blob}})

    def tool_start(self, index: int, tool_use_id: Any, name: Any, type_: Any = ABSENT) -> None:
        tool_use: dict[str, Any] = {"toolUseId": tool_use_id, "name": name}
        if type_ is not ABSENT:
            tool_use["type"] = type_
        self.block_start(index, {"toolUse": tool_use})

    def tool_input(self, index: int, *fragments: str) -> None:
        for fragment in fragments:
            self.delta(index, {"toolUse": {"input": fragment}})

    def tool(self, index: int, tool_use_id: Any, name: Any, *fragments: str,
             type_: Any = ABSENT) -> None:
        """A whole tool block: its start, one delta per fragment, its stop."""
        self.tool_start(index, tool_use_id, name, type_)
        self.tool_input(index, *fragments)
        self.block_stop(index)

    # What ends a body otherwise -------------------------------------------------------------

    def exception(self, exception_type: str, **members: Any) -> None:
        """An exception message (no padding: its payload is the exception's members)."""
        self.messages.append(exception(exception_type, payload(members)))

    def error(self, code: str, message: str) -> None:
        self.messages.append(error(code, message))

    def raw(self, message: bytes) -> None:
        self.messages.append(message)

    def body(self) -> bytes:
        return b"".join(self.messages)


def cut_crc(message: bytes) -> bytes:
    """``message`` with the last byte of its message CRC flipped (xor 0x01)."""
    return message[:-1] + bytes([message[-1] ^ 0x01])


def whole_messages(raw: bytes) -> tuple[int, bool]:
    """How many whole messages ``raw`` holds, and whether it ends between messages (read
    from the preludes only: for the generator's own check that a cut body is stream_closed)."""
    offset = count = 0
    while len(raw) - offset >= 12:
        (total,) = struct.unpack_from(">I", raw, offset)
        if total < 16 or offset + total > len(raw):
            break
        offset += total
        count += 1
    return count, offset == len(raw)


# --------------------------------------------------------------------------------------------
# Building blocks: the expected record
# --------------------------------------------------------------------------------------------

#: An expected client call of the record: choice 0, type ``function``.
call = functools.partial(corpus_build.call, 0)
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)


def server_call(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An expected ``server_tool_calls`` entry: type ``server_tool_use``, no status."""
    return corpus_build.server_call(index, "server_tool_use", call_id, name, arguments, None)


def assembled(*, finish: str, finish_reason: str | None, usage: dict[str, Any] | None,
              chunks: int, frames_after_end: int = 0, reasoning: str | None = None,
              error_message: str | None = None,
              server_tool_calls: list[dict[str, Any]] | None = None,
              choices: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """An assembled record stating every key the corpus requires.  ``usage`` and ``chunks``
    have no default: each capture writes them out.  Converse bodies name no response and no
    model, so ``response_id`` and ``model`` are null on every capture."""
    extra: dict[str, Any] = {
        "error_message": error_message,
        "reasoning": reasoning,
        "server_tool_calls": server_tool_calls or [],
        "usage": usage,
        "response_id": None,
        "model": None,
        "chunks": chunks,
        "frames_after_end": frames_after_end,
    }
    if choices is not None:
        extra["choices"] = choices
    return corpus_build.assembled(WIRE, finish=finish, finish_reason=finish_reason, **fields,
                                  **extra)


def choice(finish_reason: str | None, content: str | None, reasoning: str | None,
           details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The record's ``choices``: the one choice, with its ``reasoning_details``."""
    return [{"choice": 0, "finish_reason": finish_reason, "content": content,
             "reasoning": reasoning, "refusal": None, "reasoning_details": details}]


CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


# Reference sections and the recordings they cite.
REF = "wires-beyond-sse.md §2 'bedrock-converse'"
FRAMING = "wires-beyond-sse.md §1 (AWS event-stream framing)"
CLIENTS = "wires-beyond-sse.md §5 'bedrock-converse'"
OPEN = "wires-beyond-sse.md §6"
RULES = "bedrock-converse wire rules (README)"
SYNTHETIC = "synthetic shape"
PYDANTIC = "pydantic/pydantic-ai @ 4fda389 tests/models/cassettes/test_bedrock/"
LANGCHAIN = "langchain-ai/langchain-aws @ 0434c7f libs/aws/tests/cassettes/"
OPENLLMETRY = ("traceloop/openllmetry @ 93429cf "
               "packages/opentelemetry-instrumentation-bedrock/tests/traces/cassettes/")
VERCEL = "vercel/ai @ ed857f5 packages/amazon-bedrock/src/"
BOTOCORE = "boto/botocore @ 0e6e240 botocore/data/bedrock-runtime/2023-09-30/service-2.json"
BOTOCORE_TESTS = "boto/botocore @ 0e6e240 tests/unit/test_eventstream.py"
STRANDS = "strands-agents/sdk-python @ 1232230 src/strands/models/bedrock.py"
LANGCHAIN_1286 = "https://github.com/langchain-ai/langchain-aws/issues/1286"
HERMES_109988 = "https://github.com/NousResearch/hermes-agent/issues/109988"
VERCEL_19035 = "vercel/ai issue #19035 / fix #19040"


# --------------------------------------------------------------------------------------------
# Client calls: identity and arguments
# --------------------------------------------------------------------------------------------


@case
def claude_text_then_tool_call() -> Capture:
    # The openllmetry recording (Claude 3 Sonnet, get_weather for Barcelona): a text block 0
    # (no contentBlockStart) in 14 deltas, then block 1 contentBlockStart.start.toolUse without
    # "type", its input in 5 fragments, the first "".
    #   content = the 14 pieces joined; call 0: id/name verbatim, arguments the 5 fragments
    #   joined (the space after the colon kept); tool_use with a call -> tool_calls.
    #   usage = metadata.usage verbatim (serverToolUsage {} included).
    #   chunks: messageStart 1 + 14 text + stop 1 + toolUse start 1 + 5 input + stop 1
    #   + messageStop 1 + metadata 1 = 25.
    s = Stream()
    s.start()
    s.text(0, "Okay", ",", " let", " me", " check", " the", " weather", " for", " Barcelona",
           " using", " the", " available", " tool", ":")
    s.block_stop(0)
    s.tool(1, "tooluse_yypYDr71TwCwByoyao4-Vg", "get_weather",
           "", '{"locati', 'on": "Bar', "ce", 'lona"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 236, "outputTokens": 58, "serverToolUsage": {},
                "totalTokens": 294}, 1176)
    return Capture(
        description="Claude: a text block, then one tool call whose input comes in five "
        "fragments, the first empty.",
        source=f"{OPENLLMETRY}test_anthropic/test_anthropic_converse_stream_with_tool_use.yaml; "
        f"{REF} ('Claude's first fragment is \"\"')",
        shape="Claude 3 Sonnet text block 0 + toolUse block 1 (no type), input '' + 4 fragments",
        proves="text deltas join into content; a toolUse start is a call; its input fragments "
        "concatenate, the empty first one adding nothing; tool_use with a call is tool_calls",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Okay, let me check the weather for Barcelona using the available tool:",
            tool_calls=[call(0, "tooluse_yypYDr71TwCwByoyao4-Vg", "get_weather",
                             '{"location": "Barcelona"}')],
            usage={"inputTokens": 236, "outputTokens": 58, "serverToolUsage": {},
                   "totalTokens": 294},
            chunks=25,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=4655,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": (
                        "Okay, let me check the weather for Barcelona using the available tool:"
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def claude_tool_use_type_field() -> Capture:
    # Newer recordings send "type":"tool_use" on a client call's start (langchain-aws
    # test_agent_loop_streaming[v1], Claude).  Text block 0 in 2 deltas, then the call.
    #   type "tool_use" is a client call exactly as an absent type: call 0, type function.
    #   chunks: start 1 + 2 text + stop 1 + start 1 + 3 input + stop 1 + messageStop 1
    #   + metadata 1 = 11.
    s = Stream()
    s.start()
    s.text(0, "I'll look up", " the weather.")
    s.block_stop(0)
    s.tool(1, "tooluse_Qm3vXb8KTe2nRw9LpZf4Ha", "get_weather",
           "", '{"location": ', '"San Francisco, CA"}', type_="tool_use")
    s.stop("tool_use")
    s.metadata({"inputTokens": 412, "outputTokens": 71, "serverToolUsage": {},
                "totalTokens": 483}, 1302)
    return Capture(
        description="Claude: a client call whose toolUse start says type tool_use.",
        source=f"{LANGCHAIN}test_agent_loop_streaming[v1].yaml.gz; "
        f"{PYDANTIC}test_bedrock_model_code_execution_tool_stream.yaml; {REF} ('Newer "
        "recordings also send \"type\":\"tool_use\" on client calls')",
        shape="Claude toolUse start with type tool_use",
        proves="type tool_use is a client call as an absent type is",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="I'll look up the weather.",
            tool_calls=[call(0, "tooluse_Qm3vXb8KTe2nRw9LpZf4Ha", "get_weather",
                             '{"location": "San Francisco, CA"}')],
            usage={"inputTokens": 412, "outputTokens": 71, "serverToolUsage": {},
                   "totalTokens": 483},
            chunks=11,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=2115,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "I'll look up the weather.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def claude_parallel_same_name() -> Capture:
    # Two get_weather calls, blocks 1 and 2, after a text block 0: contentBlockIndex numbers
    # every block, so the calls' ordinals (0, 1) are not their block indexes (1, 2).
    #   Two calls, never merged, ordinals in the order they started.
    #   chunks: start 1 + text 1 + stop 1 + (start 1 + 3 input + stop 1) * 2 + messageStop 1
    #   + metadata 1 = 15.
    s = Stream()
    s.start()
    s.text(0, "I'll check both cities.")
    s.block_stop(0)
    s.tool(1, "tooluse_8fKq2LmN5pRs7TuV9wXy1A", "get_weather", "", '{"city": "Par', 'is"}')
    s.tool(2, "tooluse_3bCd5EfG7hIj9KlM1nOp2Q", "get_weather", "", '{"city": "Lon', 'don"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 389, "outputTokens": 102, "serverToolUsage": {},
                "totalTokens": 491}, 1840)
    return Capture(
        description="Two same-name calls in blocks 1 and 2 after a text block.",
        source=f"{REF} ('contentBlockIndex numbers all blocks'); {SYNTHETIC} (Claude's "
        "fragment pattern on two blocks)",
        shape="Claude two parallel get_weather toolUse blocks 1 and 2",
        proves="each toolUse start is its own call at the next ordinal, same name or not; the "
        "ordinal is not the block index",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="I'll check both cities.",
            tool_calls=[
                call(0, "tooluse_8fKq2LmN5pRs7TuV9wXy1A", "get_weather", '{"city": "Paris"}'),
                call(1, "tooluse_3bCd5EfG7hIj9KlM1nOp2Q", "get_weather", '{"city": "London"}'),
            ],
            usage={"inputTokens": 389, "outputTokens": 102, "serverToolUsage": {},
                   "totalTokens": 491},
            chunks=15,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=2870,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "I'll check both cities.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def nova_whole_input_one_fragment() -> Capture:
    # Nova: a text block 0 (its <thinking> text is plain text on the wire), then block 1 with
    # the whole input in ONE fragment, no empty first fragment, no type.
    #   content = both pieces; call 0 arguments = the one fragment verbatim (compact).
    #   chunks: start 1 + 2 text + stop 1 + start 1 + 1 input + stop 1 + messageStop 1
    #   + metadata 1 = 9.
    s = Stream()
    s.start()
    s.text(0, "<thinking> I need the temperature in Paris.", " </thinking>\n")
    s.block_stop(0)
    s.tool(1, "tooluse_Vq1Sx2ZpRk7Ld3Nw5Mt8Ye", "get_temperature", '{"city":"Paris"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 485, "outputTokens": 38, "totalTokens": 523}, 611)
    return Capture(
        description="Nova: a text block, then a call whose whole input is one fragment.",
        source=f"{PYDANTIC}test_bedrock_model_iter_stream.yaml; {REF} ('Nova sends the whole "
        "input in a single fragment')",
        shape="Nova text block 0 + toolUse block 1, input in one fragment",
        proves="a single fragment is the whole arguments text, kept verbatim",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="<thinking> I need the temperature in Paris. </thinking>\n",
            tool_calls=[call(0, "tooluse_Vq1Sx2ZpRk7Ld3Nw5Mt8Ye", "get_temperature",
                             '{"city":"Paris"}')],
            usage={"inputTokens": 485, "outputTokens": 38, "totalTokens": 523},
            chunks=9,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=1711,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "<thinking> I need the temperature in Paris. </thinking>\n",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def tool_input_empty_string() -> Capture:
    # Vercel's no-args fixture: a contentBlockStart with start {} for the text block (no
    # toolUse: not a call), a text delta, then a tool block whose only delta is input "".
    # (Vercel's fixture puts metadata before messageStop; here it is last, as in every real
    # recording; metadata_before_message_stop has Vercel's order.)
    #   start {} is nothing; arguments "" -> "{}" (arguments_json true).
    #   chunks: start 1 + block start {} 1 + text 1 + stop 1 + toolUse start 1 + 1 input
    #   + stop 1 + messageStop 1 + metadata 1 = 9.
    s = Stream()
    s.start()
    s.block_start(0, {})
    s.text(0, "I'll update the issue list for you.")
    s.block_stop(0)
    s.tool(1, "tooluse_Jh4Kp9Qw2Er5Ty8Ui1Op3A", "updateIssueList", "")
    s.stop("tool_use")
    s.metadata({"inputTokens": 100, "outputTokens": 25, "totalTokens": 125}, 150)
    return Capture(
        description="A tool without arguments whose only input fragment is \"\"; the text "
        "block opens with start {}.",
        source=f"{VERCEL}__fixtures__/amazon-bedrock-tool-no-args.chunks.txt (stored as "
        f"bedrock-tool-no-args.chunks.txt); {REF}; {OPEN} ('Converse tools without arguments')",
        shape="Vercel no-args fixture: toolUse block with only input \"\"",
        proves="empty joined input is the empty object \"{}\"; a contentBlockStart without "
        "toolUse starts no call",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="I'll update the issue list for you.",
            tool_calls=[call(0, "tooluse_Jh4Kp9Qw2Er5Ty8Ui1Op3A", "updateIssueList", "{}")],
            usage={"inputTokens": 100, "outputTokens": 25, "totalTokens": 125},
            chunks=9,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=1660,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "tool_use",
                    "content": "I'll update the issue list for you.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def tool_block_without_delta() -> Capture:
    # A tool block that starts and stops with no delta at all (what a tool without arguments
    # may get: §6 says no recording shows it).
    #   arguments "{}" (no input at all is the empty object too); content null.
    #   chunks: start 1 + toolUse start 1 + stop 1 + messageStop 1 + metadata 1 = 5.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_Zx9Cv8Bn7Mm6Ll5Kk4Jj3H", "get_current_time")
    s.stop("tool_use")
    s.metadata({"inputTokens": 310, "outputTokens": 12, "totalTokens": 322}, 402)
    return Capture(
        description="A tool block with a start and a stop but no delta.",
        source=f"{OPEN} ('Converse tools without arguments': no recording shows it); "
        f"{SYNTHETIC}",
        shape="toolUse block without any contentBlockDelta",
        proves="a call whose block had no input has arguments \"{}\"",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content=None,
            tool_calls=[call(0, "tooluse_Zx9Cv8Bn7Mm6Ll5Kk4Jj3H", "get_current_time", "{}")],
            usage={"inputTokens": 310, "outputTokens": 12, "totalTokens": 322},
            chunks=5,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=897,
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
def end_turn_after_call() -> Capture:
    # A model that reports end_turn after its call (some Bedrock models do not say tool_use).
    #   end_turn with a client call -> finish tool_calls; finish_reason verbatim end_turn.
    #   chunks: start 1 + toolUse start 1 + 1 input + stop 1 + messageStop 1 + metadata 1 = 6.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_Gh2Jk3Lm4Nb5Vc6Xz7Qw8E", "get_time", '{"timezone":"UTC"}')
    s.stop("end_turn")
    s.metadata({"inputTokens": 205, "outputTokens": 19, "totalTokens": 224}, 388)
    return Capture(
        description="A whole call, then messageStop end_turn.",
        source=f"{RULES} (end_turn with client calls is tool_calls); {SYNTHETIC}",
        shape="toolUse block then stopReason end_turn",
        proves="end_turn with a client call is finish tool_calls",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="end_turn",
            content=None,
            tool_calls=[call(0, "tooluse_Gh2Jk3Lm4Nb5Vc6Xz7Qw8E", "get_time",
                             '{"timezone":"UTC"}')],
            usage={"inputTokens": 205, "outputTokens": 19, "totalTokens": 224},
            chunks=6,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1121,
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


@case
def empty_tool_use_id_missing_identity() -> Capture:
    # Two calls; the second's toolUseId is "" (a relay that lost it).  An empty id is no id.
    #   dead letter missing_identity; call 0 whole (missing []), call 1 id null (missing
    #   ["id"]), both with their arguments.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_Aa1Bb2Cc3Dd4Ee5Ff6Gg7H", "read_file", "", '{"path": "README.md"}')
    s.tool(1, "", "read_file", "", '{"path": "setup.py"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 160, "outputTokens": 40, "totalTokens": 200}, 733)
    return Capture(
        description="Two calls, the second with toolUseId \"\".",
        source=f"{RULES} (an empty toolUseId is no id -> missing_identity); {BOTOCORE} "
        f"(ToolUseBlockStart: toolUseId required); {SYNTHETIC}",
        shape="toolUse start with toolUseId \"\"",
        proves="an empty toolUseId leaves the call without id: the response is "
        "missing_identity, never executed",
        body=s.body(),
        expect=dead_letter(
            "missing_identity",
            [
                missing(call(0, "tooluse_Aa1Bb2Cc3Dd4Ee5Ff6Gg7H", "read_file",
                             '{"path": "README.md"}')),
                missing(call(1, None, "read_file", '{"path": "setup.py"}'), "id"),
            ],
            model=None,
            response_id=None,
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={"inputTokens": 160, "outputTokens": 40, "totalTokens": 200},
            repairs=corpus_build.repairs(empty_identity_ignored=1),
            chunks=11,
            bytes=2109,
            frames_after_end=0,
            detail="call 1 of choice 0 has no id",
            declared_tools=None,
        ),
    )


@case
def empty_name_missing_identity() -> Capture:
    # One call whose name is "".
    #   dead letter missing_identity; the call with its id, name null, missing ["name"].
    s = Stream()
    s.start()
    s.text(0, "Running it.")
    s.block_stop(0)
    s.tool(1, "tooluse_N0nAmE1x2y3z4w5v6u7t8s", "", "", '{"cmd": "ls"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 98, "outputTokens": 21, "totalTokens": 119}, 512)
    return Capture(
        description="A call whose toolUse name is \"\".",
        source=f"{RULES} (an empty name is no name -> missing_identity); {SYNTHETIC}",
        shape="toolUse start with name \"\"",
        proves="an empty name is no name: missing_identity",
        body=s.body(),
        expect=dead_letter(
            "missing_identity",
            [missing(call(0, "tooluse_N0nAmE1x2y3z4w5v6u7t8s", None, '{"cmd": "ls"}'), "name")],
            model=None,
            response_id=None,
            finish_reason="tool_use",
            finish_reasons={"0": "tool_use"},
            usage={"inputTokens": 98, "outputTokens": 21, "totalTokens": 119},
            repairs=corpus_build.repairs(empty_identity_ignored=1),
            chunks=9,
            bytes=1659,
            frames_after_end=0,
            detail="call 0 of choice 0 has no name",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Reasoning, empty text, server tools, ignored members
# --------------------------------------------------------------------------------------------

SIGNATURE = ("EqoBCkgIBhABGAIiQJ3v2Xq8Lk1m0Nn7Pp4Rr6Ss8Tt0Uu2Vv4Ww6Xx8Yy0Zz2Aa4Bb6Cc8Dd0Ee2Ff4Gg6"
             "Hh8Ii0Jj2Kk4EgxqR3sT5uV7wX9yZ1aB2cD")
REDACTED_0 = "RXR3Q0NrZ0lDeEFCR0FJcVFEMEw5aW90dWMzdXRwWWVpa0d4L2lPYXZiN2lpWS9EWmRvNmhYYk5w"
REDACTED_1 = "RXRrQ0NrZ0lDeEFCR0FJcVFDcHoyZHBTbVU4Y0VCTkRycjhPZXQ2YnBVaTFWdHR6ekRNYXJQbGFi"


@case
def reasoning_signature_then_call() -> Capture:
    # Claude with thinking: reasoning block 0 (text deltas, then a separate signature delta),
    # text block 1, tool block 2.
    #   reasoning = the reasoning pieces joined; content = block 1's text; call 0 from block 2.
    #   reasoning_details: one entry for block 0: index 0, text (joined), signature.
    #   chunks: start 1 + 3 reasoning + signature 1 + stop 1 + text 1 + stop 1 + toolUse
    #   start 1 + 2 input + stop 1 + messageStop 1 + metadata 1 = 14.
    s = Stream()
    s.start()
    s.reasoning(0, "The user asks for", " the weather in Oslo.", " I should call get_weather.")
    s.signature(0, SIGNATURE)
    s.block_stop(0)
    s.text(1, "Let me check.")
    s.block_stop(1)
    s.tool(2, "tooluse_Rt5Yh6Uj7Ik8Ol9Pq0Aw1S", "get_weather", "", '{"city": "Oslo"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 512, "outputTokens": 148, "serverToolUsage": {},
                "totalTokens": 660}, 2214)
    thought = "The user asks for the weather in Oslo. I should call get_weather."
    return Capture(
        description="Reasoning text and its signature, a text block, then a call.",
        source=f"{PYDANTIC}test_bedrock_model_thinking_part_stream.yaml; "
        f"{LANGCHAIN}test_thinking[v0].yaml.gz; {REF} ('signature: a separate delta after the "
        "text')",
        shape="Claude thinking: reasoningContent.text deltas + signature delta, text, toolUse",
        proves="reasoning text joins into reasoning; the block gives one reasoning_details "
        "entry with its index, text and signature; the call after it is unaffected",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content="Let me check.",
            reasoning=thought,
            tool_calls=[call(0, "tooluse_Rt5Yh6Uj7Ik8Ol9Pq0Aw1S", "get_weather",
                             '{"city": "Oslo"}')],
            usage={"inputTokens": 512, "outputTokens": 148, "serverToolUsage": {},
                   "totalTokens": 660},
            chunks=14,
            choices=choice("tool_use", "Let me check.", thought,
                           [{"index": 0, "text": thought, "signature": SIGNATURE}]),
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=2829,
            refusal=None,
        ),
    )


@case
def reasoning_redacted() -> Capture:
    # Claude 3.7's redacted thinking: blocks 0 and 1 each one redactedContent delta (a blob,
    # base64 in the JSON), then text block 2.
    #   reasoning null (no reasoning text); reasoning_details: two entries, index 0 and 1,
    #   each {"index", "redactedContent": the base64 string verbatim}.  end_turn -> stop.
    #   chunks: start 1 + (redacted 1 + stop 1) * 2 + 3 text + stop 1 + messageStop 1
    #   + metadata 1 = 11.
    s = Stream()
    s.start()
    s.redacted(0, REDACTED_0)
    s.block_stop(0)
    s.redacted(1, REDACTED_1)
    s.block_stop(1)
    s.text(2, "I notice your message contains", " what appears to be a trigger phrase.",
           " How can I help?")
    s.block_stop(2)
    s.stop("end_turn")
    s.metadata({"inputTokens": 92, "outputTokens": 173, "serverToolUsage": {},
                "totalTokens": 265}, 3145)
    text = "I notice your message contains what appears to be a trigger phrase. How can I help?"
    return Capture(
        description="Two redacted reasoning blocks, then a text answer.",
        source=f"{PYDANTIC}test_bedrock_model_thinking_part_redacted_stream.yaml; {REF} "
        "('redactedContent: a blob, base64 in the JSON')",
        shape="Claude 3.7 redacted thinking: reasoningContent.redactedContent blocks 0, 1",
        proves="a redacted block is a reasoning_details entry with its base64 verbatim and adds "
        "no reasoning text",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content=text,
            reasoning=None,
            usage={"inputTokens": 92, "outputTokens": 173, "serverToolUsage": {},
                   "totalTokens": 265},
            chunks=11,
            choices=choice("end_turn", text, None, [
                {"index": 0, "redactedContent": REDACTED_0},
                {"index": 1, "redactedContent": REDACTED_1},
            ]),
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=2206,
            refusal=None,
        ),
    )


@case
def gpt_oss_reasoning_without_signature() -> Capture:
    # gpt-oss: reasoning text with no signature delta, then a text block whose first delta is
    # text "".
    #   reasoning = joined; reasoning_details: {"index": 0, "text": ...}, no signature key;
    #   content = the text ("" adds nothing).
    #   chunks: start 1 + 2 reasoning + stop 1 + 3 text + stop 1 + messageStop 1
    #   + metadata 1 = 10.
    s = Stream()
    s.start()
    s.reasoning(0, "The user says hello.", " Respond briefly.")
    s.block_stop(0)
    s.text(1, "", "Hello", "! How can I help?")
    s.block_stop(1)
    s.stop("end_turn")
    s.metadata({"inputTokens": 74, "outputTokens": 31, "totalTokens": 105}, 655)
    return Capture(
        description="gpt-oss: reasoning text without a signature, then text after an empty "
        "delta.",
        source=f"{PYDANTIC}test_bedrock_model_stream_empty_text_delta.yaml; {REF} ('gpt-oss "
        "sends reasoning text without any signature')",
        shape="gpt-oss reasoningContent.text without signature, then text with a \"\" delta",
        proves="a reasoning block without signature gives an entry without signature; an empty "
        "text delta adds nothing",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Hello! How can I help?",
            reasoning="The user says hello. Respond briefly.",
            usage={"inputTokens": 74, "outputTokens": 31, "totalTokens": 105},
            chunks=10,
            choices=choice("end_turn", "Hello! How can I help?",
                           "The user says hello. Respond briefly.",
                           [{"index": 0, "text": "The user says hello. Respond briefly."}]),
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1818,
            refusal=None,
        ),
    )


@case
def empty_text_delta_then_call() -> Capture:
    # A text block whose only delta is text "", then a call.
    #   content null (all text empty); the call as usual.
    #   chunks: start 1 + text 1 + stop 1 + toolUse start 1 + 1 input + stop 1 + messageStop 1
    #   + metadata 1 = 8.
    s = Stream()
    s.start()
    s.text(0, "")
    s.block_stop(0)
    s.tool(1, "tooluse_Nb2Vc3Xz4Lk5Jh6Gf7Ds8A", "lookup_city", '{"name":"Paris"}')
    s.stop("tool_use")
    s.metadata({"inputTokens": 143, "outputTokens": 22, "totalTokens": 165}, 478)
    return Capture(
        description="A text block with only an empty text delta, then a call.",
        source=f"{PYDANTIC}test_bedrock_model_stream_empty_text_delta.yaml; {REF} ('An empty "
        "text delta can arrive')",
        shape="text block 0 with delta.text \"\" only, then toolUse block 1",
        proves="all-empty text is content null",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content=None,
            tool_calls=[call(0, "tooluse_Nb2Vc3Xz4Lk5Jh6Gf7Ds8A", "lookup_city",
                             '{"name":"Paris"}')],
            usage={"inputTokens": 143, "outputTokens": 22, "totalTokens": 165},
            chunks=8,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=1448,
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
def server_tool_code_interpreter() -> Capture:
    # The pydantic-ai recording (Nova 2 Lite): block 0 toolUse type server_tool_use
    # (nova_code_interpreter) with its input, block 1 its toolResult (start.toolResult, a
    # delta.toolResult list), block 2 the client call final_result (type tool_use).
    #   server_tool_calls[0]: the server call, arguments its input, status null; block 1
    #   ignored; tool_calls[0]: final_result at ordinal 0 (server calls take no client ordinal).
    #   chunks: start 1 + 3 blocks * 3 messages + messageStop 1 + metadata 1 = 12.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_3ioV80ZZClc5KdeIhGx32A", "nova_code_interpreter",
           '{"snippet":"1234 * 5678"}', type_="server_tool_use")
    s.block_start(1, {"toolResult": {"status": "success",
                                     "toolUseId": "tooluse_3ioV80ZZClc5KdeIhGx32A",
                                     "type": "nova_code_interpreter_result"}})
    s.delta(1, {"toolResult": [{"json": {"exitCode": 0, "isError": False, "stdErr": "",
                                         "stdOut": "7006652"}}]})
    s.block_stop(1)
    s.tool(2, "tooluse_7hzWoeZES8ykBy2ZYAyUeA", "final_result", '{"result":7006652.0}',
           type_="tool_use")
    s.stop("tool_use")
    s.metadata({"inputTokens": 1002, "outputTokens": 59, "serverToolUsage": {},
                "totalTokens": 1061}, 1590)
    return Capture(
        description="Nova code interpreter (server_tool_use) with its toolResult block, then a "
        "client call.",
        source=f"{PYDANTIC}test_bedrock_model_code_execution_tool_stream.yaml; {REF} "
        "('ToolUseType ... server_tool_use'; 'A server tool's result comes as its own block')",
        shape="Nova 2 Lite server_tool_use nova_code_interpreter + toolResult block + tool_use",
        proves="a server_tool_use block is a server call, never executed nor counted as a "
        "client ordinal; toolResult blocks are ignored",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content=None,
            tool_calls=[call(0, "tooluse_7hzWoeZES8ykBy2ZYAyUeA", "final_result",
                             '{"result":7006652.0}')],
            server_tool_calls=[server_call(0, "tooluse_3ioV80ZZClc5KdeIhGx32A",
                                           "nova_code_interpreter",
                                           '{"snippet":"1234 * 5678"}')],
            usage={"inputTokens": 1002, "outputTokens": 59, "serverToolUsage": {},
                   "totalTokens": 1061},
            chunks=12,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=2514,
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
def citation_block_ignored() -> Capture:
    # Citations arrive as their own block between text blocks (langchain-aws test_citations):
    # block 1 is one delta.citation.
    #   The citation adds nothing; content = blocks 0 and 2 joined.
    #   chunks: start 1 + text 1 + stop 1 + citation 1 + stop 1 + text 1 + stop 1
    #   + messageStop 1 + metadata 1 = 9.
    s = Stream()
    s.start()
    s.text(0, "Refunds are accepted within 30 days")
    s.block_stop(0)
    s.delta(1, {"citation": {
        "location": {"documentChar": {"documentIndex": 0, "end": 57, "start": 0}},
        "sourceContent": [{"text": "Refunds are accepted within 30 days of purchase."}],
        "title": "policy.pdf"}})
    s.block_stop(1)
    s.text(2, " of purchase.")
    s.block_stop(2)
    s.stop("end_turn")
    s.metadata({"inputTokens": 1210, "outputTokens": 33, "totalTokens": 1243}, 980)
    return Capture(
        description="A citation block between two text blocks.",
        source=f"{LANGCHAIN}test_citations*.yaml.gz; {REF} ('citations arrive as their own "
        f"blocks'); {BOTOCORE} (CitationsDelta)",
        shape="text block, delta.citation block, text block",
        proves="citation deltas are ignored; text of every block joins into content",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Refunds are accepted within 30 days of purchase.",
            usage={"inputTokens": 1210, "outputTokens": 33, "totalTokens": 1243},
            chunks=9,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1747,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "Refunds are accepted within 30 days of purchase.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def unknown_event_type_ignored() -> Capture:
    # An event type ConverseStreamOutput does not have, between two text deltas (botocore
    # parses it to {} and skips it).
    #   ignored, but counted in chunks: start 1 + text 1 + unknown 1 + text 1 + stop 1
    #   + messageStop 1 + metadata 1 = 7.
    s = Stream()
    s.start()
    s.text(0, "Hello")
    s.event("contentBlockProgress", contentBlockIndex=0, progress={"tokens": 1})
    s.text(0, " there.")
    s.block_stop(0)
    s.stop("end_turn")
    s.metadata({"inputTokens": 8, "outputTokens": 3, "totalTokens": 11}, 201)
    return Capture(
        description="An unknown event type between two text deltas.",
        source=f"{FRAMING} ('Unknown event types ... skipped silently'); {SYNTHETIC}",
        shape="event message with :event-type contentBlockProgress (not a stream member)",
        proves="an unknown event type is ignored, never malformed, and counts in chunks",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Hello there.",
            usage={"inputTokens": 8, "outputTokens": 3, "totalTokens": 11},
            chunks=7,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1200,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "Hello there.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def usage_with_cache_fields() -> Capture:
    # Prompt caching: metadata.usage carries cacheReadInputTokens and cacheWriteInputTokens.
    #   usage verbatim, its keys as sent (sorted on the wire).
    #   chunks: start 1 + 2 text + stop 1 + messageStop 1 + metadata 1 = 6.
    s = Stream()
    s.start()
    s.text(0, "The contract renews", " on 1 March.")
    s.block_stop(0)
    s.stop("end_turn")
    s.metadata({"cacheReadInputTokens": 1536, "cacheWriteInputTokens": 0, "inputTokens": 12,
                "outputTokens": 41, "serverToolUsage": {}, "totalTokens": 1589}, 742)
    return Capture(
        description="A text answer whose usage has the prompt-cache fields.",
        source=f"{REF} ('Usage': cacheReadInputTokens, cacheWriteInputTokens); "
        f"{PYDANTIC}test_bedrock_cache_write_and_read.yaml",
        shape="metadata.usage with cacheReadInputTokens / cacheWriteInputTokens",
        proves="usage is metadata.usage verbatim, cache fields included",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="The contract renews on 1 March.",
            usage={"cacheReadInputTokens": 1536, "cacheWriteInputTokens": 0, "inputTokens": 12,
                   "outputTokens": 41, "serverToolUsage": {}, "totalTokens": 1589},
            chunks=6,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1127,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "The contract renews on 1 March.",
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
def end_turn_text_only() -> Capture:
    # A text answer in three deltas, end_turn.
    #   end_turn without calls -> stop.  chunks: start 1 + 3 text + stop 1 + messageStop 1
    #   + metadata 1 = 7.
    s = Stream()
    s.start()
    s.text(0, "Paris is", " the capital", " of France.")
    s.block_stop(0)
    s.stop("end_turn")
    s.metadata({"inputTokens": 14, "outputTokens": 9, "totalTokens": 23}, 318)
    return Capture(
        description="A text-only answer, end_turn.",
        source=f"{OPENLLMETRY}test_titan/test_titan_converse_stream.yaml; {REF} ('Order in "
        "recordings')",
        shape="text block, messageStop end_turn, metadata",
        proves="end_turn without calls is stop; usage is metadata.usage",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Paris is the capital of France.",
            usage={"inputTokens": 14, "outputTokens": 9, "totalTokens": 23},
            chunks=7,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1213,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "Paris is the capital of France.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def stop_sequence_additional_fields() -> Capture:
    # Vercel's text fixture: messageStop stop_sequence with additionalModelResponseFields
    # {"delta": {"stop_sequence": "\n\nHuman:"}}.
    #   stop_sequence without calls -> stop; finish_reason verbatim; the additional fields are
    #   not in the record.  chunks: start 1 + 2 text + stop 1 + messageStop 1 + metadata 1 = 6.
    s = Stream()
    s.start()
    s.text(0, "Hello", ", World!")
    s.block_stop(0)
    s.stop("stop_sequence", {"delta": {"stop_sequence": "\n\nHuman:"}})
    s.metadata({"inputTokens": 4, "outputTokens": 34, "totalTokens": 38}, 276)
    return Capture(
        description="Text, then stop_sequence with additionalModelResponseFields.",
        source=f"{VERCEL}__fixtures__/amazon-bedrock-text.chunks.txt; {REF} "
        "('additionalModelResponseFields can carry {\"delta\":{\"stop_sequence\":…}}')",
        shape="messageStop stop_sequence + additionalModelResponseFields.delta.stop_sequence",
        proves="stop_sequence is stop; additionalModelResponseFields changes nothing",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="stop_sequence",
            content="Hello, World!",
            usage={"inputTokens": 4, "outputTokens": 34, "totalTokens": 38},
            chunks=6,
            finish_reasons={"0": "stop_sequence"},
            repairs=corpus_build.repairs(),
            bytes=1109,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop_sequence",
                    "content": "Hello, World!",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def max_tokens_withholds_call() -> Capture:
    # maxTokens reached inside a call's input: the block stops, then messageStop max_tokens.
    #   finish length, truncated, error_code null; the call withheld with its partial
    #   arguments (not JSON: arguments_json false).
    #   chunks: start 1 + 2 text + stop 1 + toolUse start 1 + 2 input + stop 1 + messageStop 1
    #   + metadata 1 = 10.
    s = Stream()
    s.start()
    s.text(0, "Searching", " the archive.")
    s.block_stop(0)
    s.tool(1, "tooluse_Ws4Ed5Rf6Tg7Yh8Uj9Ik0L", "search_archive", "", '{"query": "kafka reb')
    s.stop("max_tokens")
    s.metadata({"inputTokens": 220, "outputTokens": 64, "totalTokens": 284}, 1022)
    return Capture(
        description="max_tokens inside a call's arguments.",
        source=f"{BOTOCORE} (StopReason max_tokens); {CLIENTS} (pydantic-ai: max_tokens -> "
        f"length); {SYNTHETIC}",
        shape="toolUse block cut by maxTokens, stopReason max_tokens",
        proves="max_tokens is length: truncated, the call withheld, error_code null",
        body=s.body(),
        expect=assembled(
            finish="length",
            finish_reason="max_tokens",
            truncated=True,
            content="Searching the archive.",
            withheld=[call(0, "tooluse_Ws4Ed5Rf6Tg7Yh8Uj9Ik0L", "search_archive",
                           '{"query": "kafka reb', False)],
            usage={"inputTokens": 220, "outputTokens": 64, "totalTokens": 284},
            chunks=10,
            finish_reasons={"0": "max_tokens"},
            repairs=corpus_build.repairs(),
            bytes=1863,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "max_tokens",
                    "content": "Searching the archive.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def context_window_exceeded() -> Capture:
    # model_context_window_exceeded after a whole call.
    #   finish length, truncated, error_code null; the whole call withheld all the same.
    #   chunks: start 1 + text 1 + stop 1 + toolUse start 1 + 2 input + stop 1 + messageStop 1
    #   + metadata 1 = 9.
    s = Stream()
    s.start()
    s.text(0, "Reading the notes.")
    s.block_stop(0)
    s.tool(1, "tooluse_Pl1Ok2Ij3Uh4Yg5Tf6Rd7E", "read_file", "", '{"path": "notes.md"}')
    s.stop("model_context_window_exceeded")
    s.metadata({"inputTokens": 199872, "outputTokens": 128, "totalTokens": 200000}, 8410)
    return Capture(
        description="model_context_window_exceeded after a whole call.",
        source=f"{BOTOCORE} (StopReason model_context_window_exceeded); {CLIENTS} (pydantic-ai "
        f"-> length; LiteLLM leaves it unmapped); {SYNTHETIC}",
        shape="stopReason model_context_window_exceeded after a toolUse block",
        proves="model_context_window_exceeded is length: truncated, even a whole call withheld",
        body=s.body(),
        expect=assembled(
            finish="length",
            finish_reason="model_context_window_exceeded",
            truncated=True,
            content="Reading the notes.",
            withheld=[call(0, "tooluse_Pl1Ok2Ij3Uh4Yg5Tf6Rd7E", "read_file",
                           '{"path": "notes.md"}')],
            usage={"inputTokens": 199872, "outputTokens": 128, "totalTokens": 200000},
            chunks=9,
            finish_reasons={"0": "model_context_window_exceeded"},
            repairs=corpus_build.repairs(),
            bytes=1712,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "model_context_window_exceeded",
                    "content": "Reading the notes.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


GUARDRAIL_TRACE = {"guardrail": {
    "actionReason": "No action.\nGuardrail masked.",
    "modelOutput": ["\nThe capital of Italy is Rome. The capital of Japan is Tokyo."],
    "outputAssessments": {"5zwrmdlsra2e": [{"sensitiveInformationPolicy": {"piiEntities": [
        {"action": "ANONYMIZED", "detected": True, "match": "Italy", "type": "ADDRESS"},
        {"action": "ANONYMIZED", "detected": True, "match": "Rome", "type": "ADDRESS"},
        {"action": "ANONYMIZED", "detected": True, "match": "Japan", "type": "ADDRESS"},
        {"action": "ANONYMIZED", "detected": True, "match": "Tokyo", "type": "ADDRESS"},
    ]}}]},
}}


@case
def guardrail_intervened_masked_text() -> Capture:
    # The openllmetry guardrail recording (Titan Express): masked text ({ADDRESS}) streams,
    # then messageStop guardrail_intervened, then metadata with trace.guardrail (shortened here:
    # the assessment's invocationMetrics left out).
    #   finish content_filter, error_code GUARDRAIL_INTERVENED, not retryable; content the
    #   masked text as sent; trace not in the record.
    #   chunks: start 1 + text 1 + stop 1 + messageStop 1 + metadata 1 = 5.
    masked = "\nThe capital of {ADDRESS} is {ADDRESS}. The capital of {ADDRESS} is {ADDRESS}."
    s = Stream()
    s.start()
    s.text(0, masked)
    s.block_stop(0)
    s.stop("guardrail_intervened")
    s.metadata({"inputTokens": 17, "outputTokens": 16, "totalTokens": 33}, 1445,
               GUARDRAIL_TRACE)
    return Capture(
        description="Guardrail: masked text, then guardrail_intervened with metadata.trace.",
        source=f"{OPENLLMETRY}test_guardrails/test_guardrail_converse_stream.yaml; {REF} "
        "('Guardrails')",
        shape="Titan masked {ADDRESS} text, stopReason guardrail_intervened, metadata.trace",
        proves="guardrail_intervened is content_filter with error_code GUARDRAIL_INTERVENED; "
        "the trace is not in the record",
        body=s.body(),
        expect=assembled(
            finish="content_filter",
            finish_reason="guardrail_intervened",
            error_code="GUARDRAIL_INTERVENED",
            content="\nThe capital of {ADDRESS} is {ADDRESS}. The capital of {ADDRESS} is "
            "{ADDRESS}.",
            usage={"inputTokens": 17, "outputTokens": 16, "totalTokens": 33},
            chunks=5,
            finish_reasons={"0": "guardrail_intervened"},
            repairs=corpus_build.repairs(),
            bytes=1445,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "guardrail_intervened",
                    "content": (
                        "\nThe capital of {ADDRESS} is {ADDRESS}. The capital of {ADDRESS} is "
                        "{ADDRESS}."
                    ),
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def content_filtered_withholds_call() -> Capture:
    # content_filtered after a whole call.
    #   finish content_filter, error_code CONTENT_FILTERED, the call withheld.
    #   chunks: start 1 + text 1 + stop 1 + toolUse start 1 + 2 input + stop 1 + messageStop 1
    #   + metadata 1 = 9.
    s = Stream()
    s.start()
    s.text(0, "Sending the report.")
    s.block_stop(0)
    s.tool(1, "tooluse_Mn8Bv7Cx6Zl5Ak4Sj3Dh2F", "send_email", "", '{"to": "ops@example.com"}')
    s.stop("content_filtered")
    s.metadata({"inputTokens": 301, "outputTokens": 44, "totalTokens": 345}, 905)
    return Capture(
        description="content_filtered after a whole call.",
        source=f"{BOTOCORE} (StopReason content_filtered); {CLIENTS} (pydantic-ai, LiteLLM: "
        f"content_filter); {SYNTHETIC}",
        shape="stopReason content_filtered after a toolUse block",
        proves="content_filtered is content_filter with error_code CONTENT_FILTERED, the call "
        "withheld",
        body=s.body(),
        expect=assembled(
            finish="content_filter",
            finish_reason="content_filtered",
            error_code="CONTENT_FILTERED",
            content="Sending the report.",
            withheld=[call(0, "tooluse_Mn8Bv7Cx6Zl5Ak4Sj3Dh2F", "send_email",
                           '{"to": "ops@example.com"}')],
            usage={"inputTokens": 301, "outputTokens": 44, "totalTokens": 345},
            chunks=9,
            finish_reasons={"0": "content_filtered"},
            repairs=corpus_build.repairs(),
            bytes=1698,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "content_filtered",
                    "content": "Sending the report.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def malformed_tool_use() -> Capture:
    # malformed_tool_use: the model wrote input that is not JSON.
    #   finish error, error_code MALFORMED_TOOL_USE, not retryable; the call withheld,
    #   arguments as joined, arguments_json false.
    #   chunks: start 1 + toolUse start 1 + 2 input + stop 1 + messageStop 1 + metadata 1 = 7.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_Qa1Ws2Ed3Rf4Tg5Yh6Uj7K", "get_weather", "", '{"city": Oslo}')
    s.stop("malformed_tool_use")
    s.metadata({"inputTokens": 133, "outputTokens": 17, "totalTokens": 150}, 640)
    return Capture(
        description="malformed_tool_use after a call whose input is not JSON.",
        source=f"{BOTOCORE} (StopReason malformed_tool_use); {CLIENTS} (pydantic-ai: "
        f"malformed_* -> error); {SYNTHETIC}",
        shape="stopReason malformed_tool_use, input {\"city\": Oslo}",
        proves="malformed_tool_use is error with error_code MALFORMED_TOOL_USE, the call "
        "withheld",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason="malformed_tool_use",
            error_code="MALFORMED_TOOL_USE",
            content=None,
            withheld=[call(0, "tooluse_Qa1Ws2Ed3Rf4Tg5Yh6Uj7K", "get_weather",
                           '{"city": Oslo}', False)],
            usage={"inputTokens": 133, "outputTokens": 17, "totalTokens": 150},
            chunks=7,
            finish_reasons={"0": "malformed_tool_use"},
            repairs=corpus_build.repairs(),
            bytes=1305,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "malformed_tool_use",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def malformed_model_output() -> Capture:
    # malformed_model_output after some text.
    #   finish error, error_code MALFORMED_MODEL_OUTPUT, content kept.
    #   chunks: start 1 + text 1 + stop 1 + messageStop 1 + metadata 1 = 5.
    s = Stream()
    s.start()
    s.text(0, "Here is the answer: {")
    s.block_stop(0)
    s.stop("malformed_model_output")
    s.metadata({"inputTokens": 57, "outputTokens": 6, "totalTokens": 63}, 299)
    return Capture(
        description="malformed_model_output after some text.",
        source=f"{BOTOCORE} (StopReason malformed_model_output); {CLIENTS}; {SYNTHETIC}",
        shape="stopReason malformed_model_output",
        proves="malformed_model_output is error with error_code MALFORMED_MODEL_OUTPUT",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason="malformed_model_output",
            error_code="MALFORMED_MODEL_OUTPUT",
            content="Here is the answer: {",
            usage={"inputTokens": 57, "outputTokens": 6, "totalTokens": 63},
            chunks=5,
            finish_reasons={"0": "malformed_model_output"},
            repairs=corpus_build.repairs(),
            bytes=856,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "malformed_model_output",
                    "content": "Here is the answer: {",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def unknown_stop_reason_is_other() -> Capture:
    # A stopReason StopReason does not list (a newer one): pause_turn, after a whole call.
    #   finish other, error_code PAUSE_TURN, the call withheld.
    #   chunks: start 1 + toolUse start 1 + 2 input + stop 1 + messageStop 1 + metadata 1 = 7.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_Lk9Jh8Gf7Ds6Ap5Oi4Uy3T", "web_fetch", "", '{"url": "https://example.com"}')
    s.stop("pause_turn")
    s.metadata({"inputTokens": 260, "outputTokens": 30, "totalTokens": 290}, 700)
    return Capture(
        description="A stopReason the enum does not list, after a whole call.",
        source=f"{RULES} (any other reason -> other); {BOTOCORE} (StopReason); {SYNTHETIC}",
        shape="stopReason pause_turn (not in StopReason)",
        proves="an unknown stop reason is other with its code upper-cased, calls withheld",
        body=s.body(),
        expect=assembled(
            finish="other",
            finish_reason="pause_turn",
            error_code="PAUSE_TURN",
            content=None,
            withheld=[call(0, "tooluse_Lk9Jh8Gf7Ds6Ap5Oi4Uy3T", "web_fetch",
                           '{"url": "https://example.com"}')],
            usage={"inputTokens": 260, "outputTokens": 30, "totalTokens": 290},
            chunks=7,
            finish_reasons={"0": "pause_turn"},
            repairs=corpus_build.repairs(),
            bytes=1313,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "pause_turn",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# The end
# --------------------------------------------------------------------------------------------


@case
def metadata_before_message_stop() -> Capture:
    # Vercel's tool-call fixture, in its order: no messageStart, the tool block, metadata, and
    # messageStop last.  With metadata first, messageStop ends the body.
    #   usage from the metadata before it; the call executable.
    #   chunks: toolUse start 1 + 2 input + stop 1 + metadata 1 + messageStop 1 = 6.
    s = Stream()
    s.tool(0, "tool-use-id", "test-tool", '{"value":', '"Sparkle Day"}')
    s.metadata({"inputTokens": 125, "outputTokens": 45, "totalTokens": 170}, 234)
    s.stop("tool_use")
    return Capture(
        description="Vercel fixture order: metadata before messageStop (and no messageStart).",
        source=f"{VERCEL}__fixtures__/amazon-bedrock-tool-call.1.chunks.txt (stored as "
        f"bedrock-tool-call.1.chunks.txt); {REF} ('Some of Vercel's fixtures put metadata "
        "before messageStop')",
        shape="Vercel fixture: tool block, metadata, then messageStop; no messageStart",
        proves="with metadata first the body ends on messageStop, usage kept; messageStart is "
        "not required",
        body=s.body(),
        expect=assembled(
            finish="tool_calls",
            finish_reason="tool_use",
            content=None,
            tool_calls=[call(0, "tool-use-id", "test-tool", '{"value":"Sparkle Day"}')],
            usage={"inputTokens": 125, "outputTokens": 45, "totalTokens": 170},
            chunks=6,
            finish_reasons={"0": "tool_use"},
            repairs=corpus_build.repairs(),
            bytes=1149,
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
def message_stop_without_metadata() -> Capture:
    # The body ends right after messageStop: no metadata came (§6: no AWS page says it always
    # does).
    #   complete; usage null.  chunks: start 1 + 2 text + stop 1 + messageStop 1 = 5.
    s = Stream()
    s.start()
    s.text(0, "Yes.", " It is.")
    s.block_stop(0)
    s.stop("end_turn")
    return Capture(
        description="The body ends after messageStop, without metadata.",
        source=f"{OPEN} ('Which Converse event is the last one'); {SYNTHETIC}",
        shape="messageStop end_turn, then the body ends (no metadata)",
        proves="a body with messageStop is complete without metadata; usage null",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Yes. It is.",
            usage=None,
            chunks=5,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=794,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "end_turn",
                    "content": "Yes. It is.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def messages_after_metadata() -> Capture:
    # A relay repeats the metadata message and appends an unknown event after the end.
    #   The body ends on the (first) metadata after messageStop: the two later messages are
    #   not read, only counted: frames_after_end 2.  chunks: start 1 + text 1 + stop 1
    #   + messageStop 1 + metadata 1 = 5.
    s = Stream()
    s.start()
    s.text(0, "Done.")
    s.block_stop(0)
    s.stop("end_turn")
    s.metadata({"inputTokens": 22, "outputTokens": 3, "totalTokens": 25}, 190)
    s.metadata({"inputTokens": 99, "outputTokens": 99, "totalTokens": 198}, 191)
    s.event("relayTrailer", note="end")
    return Capture(
        description="Text, messageStop, metadata, then a repeated metadata and an unknown "
        "event.",
        source=f"{RULES} (messages after the end are counted, not read); {SYNTHETIC}",
        shape="relay: messages after metadata (a second metadata, an unknown event)",
        proves="the metadata after messageStop ends the body; later messages are counted in "
        "frames_after_end and change nothing (usage is the first metadata's)",
        body=s.body(),
        expect=assembled(
            finish="stop",
            finish_reason="end_turn",
            content="Done.",
            usage={"inputTokens": 22, "outputTokens": 3, "totalTokens": 25},
            chunks=5,
            frames_after_end=2,
            finish_reasons={"0": "end_turn"},
            repairs=corpus_build.repairs(),
            bytes=1193,
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
        ),
    )


@case
def stream_closed_before_message_stop() -> Capture:
    # The connection drops after a whole call, at a message boundary, before messageStop
    # (correct CRCs; what langchain-aws #1286 and hermes-agent #109988 returned as success).
    #   dead letter stream_closed, the call listed (missing []).
    s = Stream()
    s.start()
    s.text(0, "Tailing the log.")
    s.block_stop(0)
    s.tool(1, "tooluse_Cl0sEd1Bo2Dy3Wi4Th5Ou6", "tail_log", "", '{"path": "/var/log/app.log"}')
    return Capture(
        description="The body ends at a message boundary after a call, before messageStop.",
        source=f"{CLIENTS} (langchain-aws: {LANGCHAIN_1286}; {HERMES_109988}); {SYNTHETIC}",
        shape="body cut between messages, after contentBlockStop, no messageStop",
        proves="without messageStop the response is stream_closed, even with every call whole",
        body=s.body(),
        expect=dead_letter(
            "stream_closed",
            [missing(call(0, "tooluse_Cl0sEd1Bo2Dy3Wi4Th5Ou6", "tail_log",
                          '{"path": "/var/log/app.log"}'))],
            model=None,
            response_id=None,
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=7,
            bytes=1286,
            frames_after_end=0,
            detail=(
                "the body ended before messageStop, or inside a message (connection dropped or cut)"
            ),
            declared_tools=None,
        ),
    )


@case
def cut_inside_message() -> Capture:
    # The body is cut inside the messageStop message (its first 40 bytes arrived: prelude,
    # headers begun).  botocore drops the unread bytes silently.
    #   dead letter stream_closed (never malformed_chunk), the call listed (missing []).
    s = Stream()
    s.start()
    s.tool(0, "tooluse_CuTiNs1dE2mEs3sAg4Ee5X", "lookup_order", "", '{"order_id": "A-20931"}')
    s.stop("tool_use")
    s.messages[-1] = s.messages[-1][:40]
    return Capture(
        description="The body is cut inside the messageStop message.",
        source=f"{FRAMING} ('Cut body'); {CLIENTS} (vercel: {VERCEL_19035}); {SYNTHETIC}",
        shape="body cut 40 bytes into the messageStop message",
        proves="a body ending inside a message is stream_closed, not malformed, not assembled",
        body=s.body(),
        expect=dead_letter(
            "stream_closed",
            [missing(call(0, "tooluse_CuTiNs1dE2mEs3sAg4Ee5X", "lookup_order",
                          '{"order_id": "A-20931"}'))],
            model=None,
            response_id=None,
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=969,
            frames_after_end=0,
            detail=(
                "the body ended before messageStop, or inside a message (connection dropped or cut)"
            ),
            declared_tools=None,
        ),
    )


@case
def bad_message_crc() -> Capture:
    # The message CRC of the call's last input fragment does not match (its last byte
    # flipped): a damaged byte must never reach an executor.
    #   dead letter malformed_chunk; the call listed as assembled up to the bad message: its
    #   arguments are the fragments before it ('{"account": "ops", "amount": 1', not JSON).
    s = Stream()
    s.start()
    s.tool_start(0, "tooluse_Cr3Cm1sMaTcH0Fl1pPeD9Z", "transfer_funds")
    s.tool_input(0, "", '{"account": "ops", "amount": 1', '00}')
    s.messages[-1] = cut_crc(s.messages[-1])
    s.block_stop(0)
    s.stop("tool_use")
    s.metadata({"inputTokens": 140, "outputTokens": 26, "totalTokens": 166}, 530)
    return Capture(
        description="A bad message CRC on the call's last input fragment.",
        source=f"{FRAMING} ('CRC rules'; botocore ChecksumMismatch); {CLIENTS} (vercel fix "
        f"#18996); {SYNTHETIC}",
        shape="contentBlockDelta message whose message CRC is off by one bit",
        proves="a bad CRC is malformed_chunk: the response is never assembled",
        body=s.body(),
        expect=dead_letter(
            "malformed_chunk",
            [missing(call(0, "tooluse_Cr3Cm1sMaTcH0Fl1pPeD9Z", "transfer_funds",
                          '{"account": "ops", "amount": 1', False))],
            model=None,
            response_id=None,
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=1517,
            frames_after_end=0,
            detail=(
                "event-stream message 5 (at byte 783 of the body): its message CRC is 0xc5f075ce "
                "but its bytes give 0xc5f075cf (a byte of its headers or payload was damaged)"
            ),
            declared_tools=None,
        ),
    )


@case
def tool_delta_without_start() -> Capture:
    # A toolUse delta for block 1, which never had a toolUse start (before or after).
    #   dead letter malformed_chunk, no calls.
    s = Stream()
    s.start()
    s.text(0, "Checking.")
    s.block_stop(0)
    s.tool_input(1, '{"city": "Oslo"}')
    s.block_stop(1)
    s.stop("tool_use")
    s.metadata({"inputTokens": 77, "outputTokens": 15, "totalTokens": 92}, 310)
    return Capture(
        description="A toolUse delta for a block that never had a toolUse start.",
        source=f"{RULES} (a toolUse delta on a block without toolUse start -> "
        f"malformed_chunk); {SYNTHETIC}",
        shape="delta.toolUse for an unstarted block",
        proves="input for a call that never started is malformed_chunk, never a call",
        body=s.body(),
        expect=dead_letter("malformed_chunk", [],
            model=None,
            response_id=None,
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=1204,
            frames_after_end=0,
            detail=(
                "a toolUse delta for block 1, which never started a tool use: "
                "{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"{\\\"city\\\": "
                "\\\"Oslo\\\"}\"}},\"p\":\"abcdef\"}"
            ),
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Exceptions and errors
# --------------------------------------------------------------------------------------------


@case
def throttling_exception_after_text() -> Capture:
    # throttlingException after two text deltas (no block stop, no messageStop).
    #   finish error, finish_reason null, error_code the exception type verbatim, error_message
    #   the payload's message, retryable; content kept; usage null.
    #   chunks: start 1 + 2 text + exception 1 = 4.
    s = Stream()
    s.start()
    s.text(0, "The quarterly", " numbers show")
    s.exception("throttlingException",
                message="Too many tokens, please wait before trying again.")
    return Capture(
        description="throttlingException after some text.",
        source=f"{REF} (exceptions: throttlingException 429); {CLIENTS} (botocore: the code "
        f"is the :exception-type); {STRANDS} (ModelThrottledException); {SYNTHETIC}",
        shape="exception message :exception-type throttlingException mid-text",
        proves="an exception ends the body as a retryable provider error with its type as code",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="throttlingException",
            error_message="Too many tokens, please wait before trying again.",
            retryable=True,
            content="The quarterly numbers show",
            usage=None,
            chunks=4,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=693,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "The quarterly numbers show",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def service_unavailable_after_call() -> Capture:
    # serviceUnavailableException after a whole call.
    #   retryable; the call withheld.  chunks: start 1 + toolUse start 1 + 2 input + stop 1
    #   + exception 1 = 6.
    s = Stream()
    s.start()
    s.tool(0, "tooluse_Sv5Un4Av3Ai2La1Bl0Ee9Q", "get_stock", "", '{"symbol": "AMZN"}')
    s.exception("serviceUnavailableException", message="Bedrock is unable to process your "
                "request.")
    return Capture(
        description="serviceUnavailableException after a whole call.",
        source=f"{REF} (exceptions: serviceUnavailableException 503); {SYNTHETIC}",
        shape="exception serviceUnavailableException after a toolUse block",
        proves="an exception withholds the calls so far; serviceUnavailable is retryable",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="serviceUnavailableException",
            error_message="Bedrock is unable to process your request.",
            retryable=True,
            content=None,
            withheld=[call(0, "tooluse_Sv5Un4Av3Ai2La1Bl0Ee9Q", "get_stock",
                           '{"symbol": "AMZN"}')],
            usage=None,
            chunks=6,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=1098,
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


@case
def internal_server_exception_then_messages() -> Capture:
    # internalServerException after a text delta, then (a relay flushing its buffer) a
    # messageStop and a metadata.  The exception ends the body: those two are not read.
    #   retryable; finish error (not stop); usage null; frames_after_end 2.
    #   chunks: start 1 + text 1 + exception 1 = 3.
    s = Stream()
    s.start()
    s.text(0, "Let me think")
    s.exception("internalServerException",
                message="The server encountered an internal error while processing the "
                "request.")
    s.stop("end_turn")
    s.metadata({"inputTokens": 40, "outputTokens": 3, "totalTokens": 43}, 120)
    return Capture(
        description="internalServerException, then a messageStop and a metadata after it.",
        source=f"{REF} (exceptions: internalServerException 500, 'Retry your request'); "
        f"{SYNTHETIC}",
        shape="exception internalServerException followed by messageStop + metadata",
        proves="an exception ends the body: messages after it are counted, not read",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="internalServerException",
            error_message="The server encountered an internal error while processing the "
            "request.",
            retryable=True,
            content="Let me think",
            usage=None,
            chunks=3,
            frames_after_end=2,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=877,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Let me think",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def model_stream_error_after_reasoning() -> Capture:
    # modelStreamErrorException (message, originalStatusCode, originalMessage) after a
    # reasoning delta.
    #   retryable; error_message = message only; reasoning kept, its details too.
    #   chunks: start 1 + reasoning 1 + exception 1 = 3.
    s = Stream()
    s.start()
    s.reasoning(0, "First, list the files.")
    s.exception("modelStreamErrorException", message="Model Stream Error",
                originalMessage="The model stream failed.", originalStatusCode=500)
    return Capture(
        description="modelStreamErrorException after a reasoning delta.",
        source=f"{REF} (modelStreamErrorException 424: message, originalStatusCode, "
        f"originalMessage); {VERCEL}__fixtures__/model-stream-error-exception.eventstream."
        "base64.txt (its payload)",
        shape="exception modelStreamErrorException with originalStatusCode 500",
        proves="modelStreamError is retryable; error_message is the payload's message",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="modelStreamErrorException",
            error_message="Model Stream Error",
            retryable=True,
            content=None,
            reasoning="First, list the files.",
            usage=None,
            chunks=3,
            choices=choice(None, None, "First, list the files.",
                           [{"index": 0, "text": "First, list the files."}]),
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=563,
            refusal=None,
        ),
    )


@case
def validation_exception_after_text() -> Capture:
    # validationException mid-stream (the message strands maps to ContextWindowOverflow).
    #   not retryable.  chunks: start 1 + text 1 + exception 1 = 3.
    s = Stream()
    s.start()
    s.text(0, "Summary:")
    s.exception("validationException",
                message="The model returned the following errors: Input is too long for "
                "requested model.")
    return Capture(
        description="validationException after some text.",
        source=f"{REF} (validationException 400); {STRANDS} ('Input is too long for requested "
        f"model' -> ContextWindowOverflowException); {SYNTHETIC}",
        shape="exception validationException mid-stream",
        proves="validationException is an error that is not retryable",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="validationException",
            error_message="The model returned the following errors: Input is too long for "
            "requested model.",
            retryable=False,
            content="Summary:",
            usage=None,
            chunks=3,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=513,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Summary:",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def model_stream_error_first_message() -> Capture:
    # Vercel's fixture: the body is one modelStreamErrorException message, its headers in the
    # fixture's order (:message-type, :exception-type, :content-type); payload keys sorted.
    # Nothing tells ConverseStream from InvokeModelWithResponseStream here (§6): read as
    # bedrock-converse (also under auto: the lead's rule).
    #   finish error, retryable, content null, usage null; chunks 1.
    s = Stream()
    s.raw(encode_message({":message-type": "exception",
                          ":exception-type": "modelStreamErrorException",
                          ":content-type": "application/json"},
                         payload({"message": "Model Stream Error",
                                  "originalMessage": "The model stream failed.",
                                  "originalStatusCode": 500})))
    return Capture(
        description="A body that is one modelStreamErrorException message.",
        source=f"{VERCEL}__fixtures__/model-stream-error-exception.eventstream.base64.txt "
        f"(header order kept, payload keys sorted); {OPEN} ('Exception-first bodies')",
        shape="Vercel fixture: single exception message, headers :message-type first",
        proves="an exception as the first message is an assembled provider error; header "
        "order does not matter",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="modelStreamErrorException",
            error_message="Model Stream Error",
            retryable=True,
            content=None,
            usage=None,
            chunks=1,
            finish_reasons={},
            repairs=corpus_build.repairs(),
            bytes=221,
            refusal=None,
            choices=[],
        ),
    )


@case
def error_message_after_text() -> Capture:
    # A :message-type error message (code and message in headers, empty payload) after a text
    # delta, then a messageStop that is not read.
    #   finish error, error_code the :error-code, error_message the :error-message, not
    #   retryable; frames_after_end 1.  chunks: start 1 + text 1 + error 1 = 3.
    s = Stream()
    s.start()
    s.text(0, "Working")
    s.error("InternalFailure", "An internal error occurred.")
    s.stop("end_turn")
    return Capture(
        description="An error message (:message-type error) after some text.",
        source=f"{FRAMING} (':message-type: error', botocore ERROR_EVENT_MESSAGE); "
        f"{BOTOCORE_TESTS}; {OPEN} (no real :error-code known); {SYNTHETIC}",
        shape=":message-type error with :error-code / :error-message headers",
        proves="an error message ends the body as a non-retryable error with its header code",
        body=s.body(),
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="InternalFailure",
            error_message="An internal error occurred.",
            retryable=False,
            content="Working",
            usage=None,
            chunks=3,
            frames_after_end=1,
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            bytes=587,
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
        ),
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

#: The lists of call objects, each in ordinal order.
LISTS = ("tool_calls", "withheld_tool_calls", "server_tool_calls", "calls")

#: What every assembled expectation of this corpus states (dead letters state Ollama's keys,
#: ``outcome``, ``wire``, ``reason`` and ``calls``); the tests require every other key of the
#: record too (``corpus_build.EVERY_KEY``).
ASSEMBLED_KEYS = ("wire", "finish", "finish_reason", "truncated", "error_code", "error_message",
                  "retryable", "content", "reasoning", "tool_calls", "withheld_tool_calls",
                  "server_tool_calls", "usage", "response_id", "model", "chunks",
                  "frames_after_end")
SERVER_KEYS = ("index", "type", "id", "name", "arguments", "status")


def incomplete(capture: Capture) -> list[str]:
    """What ``capture.expect`` leaves unsaid that every capture must say (empty: nothing)."""
    expect = capture.expect
    lacking = corpus_build.unstated(
        expect, assembled_keys=ASSEMBLED_KEYS,
        assembled_lists={**corpus_build.CLIENT_CALLS, "server_tool_calls": SERVER_KEYS},
        ordinals=LISTS,
    ) + corpus_build.unfinished(expect)
    if expect.get("wire") != WIRE:
        lacking.append("wire")
    if (expect.get("outcome") == "assembled" and expect.get("reasoning") is not None
            and "choices" not in expect):
        lacking.append("choices (a capture with reasoning states its reasoning_details)")
    _, between = whole_messages(capture.body)
    if not between and expect.get("reason") != "stream_closed":
        lacking.append("reason (a body ending inside a message is stream_closed)")
    return lacking


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the wire's rules")


INTRO = """\
# Bedrock ConverseStream corpus (`wire: bedrock-converse`)

Raw bodies of Amazon Bedrock `POST /model/{modelId}/converse-stream` responses
(`application/vnd.amazon.eventstream`; `NAME.eventstream`, byte-exact) and the record the
assembler must produce for each (`NAME.json`: `options` to run it with, `wire` included;
`expect` = keys of the record that must be equal). Generated by `_make.py`, which documents each
case in the comment above it (how each value follows from the rules, and `chunks` counted
message by message); regenerate with
`.venv/bin/python tests/core/corpus_wires/bedrock-converse/_make.py`. Every expected value was
worked out by hand from the wire's rules (below) and the reference
(`shared/reference/wires-beyond-sse.md` §1, §2, §5 "bedrock-converse" and §6), not by running
the assembler.

The bodies are written with the final encoder (`toolwire.core.framing.eventstream`: `event`,
`exception`, `error`, `encode_message`), which was checked byte-exact against a real recording.
Each event message carries `:event-type`, `:content-type: application/json`, `:message-type:
event`; its payload is the JSON of the event's members (the type only in the header), keys
sorted, compact, non-ASCII raw, with Bedrock's padding member `"p"`: a prefix of
`abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0`, here `1 + (19 * n) % 52` characters
long for the n-th event message of a body (0-based). Exception payloads are the exception's
members (`{"message": ...}`, modelStreamErrorException also `originalStatusCode` and
`originalMessage`) without padding; an `error` message has `:error-code` and `:error-message`
headers and an empty payload. Each capture's `source` names the recording (repository @ commit
and path, as the reference lists them) whose shape it follows, or says "synthetic shape".

## The wire's rules

- Messages are read in order. `:message-type: event` with `:event-type` `messageStart`,
  `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`, `messageStop` or `metadata`;
  any other event type is ignored (still counted in `chunks`). `chunks` = the messages read up
  to and including the one that ends the body; messages after the end are not read and count
  in `frames_after_end`.
- `response_id` and `model` are null (Converse bodies name neither). One choice, 0.
- `delta.text` pieces join into `content` (null when none or all empty);
  `delta.reasoningContent.text` pieces into `reasoning` (null when none).
- Each reasoning block gives a `choices[0].reasoning_details` entry, in the order the blocks
  first appeared: `{"index": <contentBlockIndex>, "text": <joined>, "signature": <sig>}`, fields
  in arrival order (index first); a redacted-only block is `{"index", "redactedContent": <base64
  verbatim>}`; no signature key without a signature. No reasoning blocks: no
  `reasoning_details`.
- `contentBlockStart.start.toolUse{toolUseId, name, type?}` with `type` absent or `tool_use`
  starts a client call at the next ordinal; `id` = toolUseId, `name` = name, `type`
  `function`; arguments = its block's `delta.toolUse.input` strings joined, `"{}"` if empty;
  `arguments_json` true when they are one complete JSON value.
- `type: server_tool_use` is a `server_tool_calls` entry (`index` its ordinal among server
  calls, `type` `server_tool_use`, `id`, `name`, `arguments` its joined input or `""`,
  `status` null). `toolResult` starts and deltas, citation and image deltas are ignored.
- An empty or non-string `toolUseId`/`name` leaves the call without it: the response is the
  dead letter `missing_identity`.
- `messageStop.stopReason` is `finish_reason` verbatim: `end_turn`, `stop_sequence`,
  `tool_use` -> `tool_calls` with client calls, else `stop`; `max_tokens`,
  `model_context_window_exceeded` -> `length` (truncated, calls withheld, no error code);
  `guardrail_intervened`, `content_filtered` -> `content_filter`; `malformed_model_output`,
  `malformed_tool_use` -> `error`; anything else -> `other`; for these last three the calls are
  withheld and `error_code` is the reason upper-cased. `additionalModelResponseFields` is not
  in the record.
- `usage` = `metadata.usage` verbatim; no metadata: null. `metrics` and `trace` are not in the
  record.
- The body is complete once `messageStop` came. `metadata` after `messageStop` ends the body
  on it; `metadata` before it: the body ends on `messageStop`. A body ending after
  `messageStop` without metadata is complete. A body ending before `messageStop`, or inside a
  message, is the dead letter `stream_closed` ("the body ended before messageStop").
- An `exception` message ends the body as a provider error: assembled, finish `error`,
  `finish_reason` null, `error_code` the `:exception-type` verbatim, `error_message` the
  payload's `message` (at most 1000 characters), `retryable` for throttling,
  serviceUnavailable, internalServer, modelStreamError and modelTimeout exceptions, not for
  the others; calls withheld. An `error` message: `error_code` its `:error-code`,
  `error_message` its `:error-message`, not retryable. Messages after either are not read.
- A payload that is not a JSON object, a `contentBlockIndex` that is not a non-negative
  integer, `delta`/`start`/`toolUse` not objects, `text`/`input` not strings, a `toolUse`
  delta on a block without a toolUse start, a bad prelude or message CRC: `malformed_chunk`.
  `"p"` is ignored.

Every assembled expectation states `outcome`, `wire`, `finish`, `finish_reason`, `truncated`,
`error_code`, `error_message`, `retryable`, `content`, `reasoning`, `tool_calls`,
`withheld_tool_calls`, `server_tool_calls`, `usage`, `response_id`, `model`, `chunks` and
`frames_after_end`, and `choices` when there is reasoning; every dead letter states `outcome`,
`wire`, `reason` and `calls` (with `missing`), as the Ollama corpus does.
`tests/core/test_corpus_bedrock_converse.py` checks the detail of each `stream_closed` one.

"""

DECISIONS = """\
## Decisions

Where the rules or the sources leave a value open, these captures pin the following choices
(the capture that pins each is named).

1. **Padding.** Deterministic, `1 + (19 * n) % 52` characters for the n-th event message (real
   bodies are random); exceptions carry none (their payload is the exception's members).
2. **No messageStart needed.** Vercel's tool-call fixture has none; the body is read all the
   same (`metadata_before_message_stop`). A text block may open with `contentBlockStart` and
   `start: {}` (Vercel's no-args fixture): it starts nothing (`tool_input_empty_string`).
3. **Arguments of a tool without input.** Both shapes §6 leaves open give `"{}"`: only
   `input: ""` (`tool_input_empty_string`) and no delta at all (`tool_block_without_delta`).
4. **Dead letters list their calls as far as read**: the bad CRC on the last input fragment
   leaves the call with the fragments before it, `arguments_json` false (`bad_message_crc`);
   stream_closed bodies list their whole calls with `missing: []` (as the openai-responses
   corpus's `non_json_frame` lists a call cut mid-arguments). The messages completed before a
   bad one are read whatever the slicing, as the framer hands them over with its error.
5. **Messages after the end** are counted whatever they are: a repeated metadata and an
   unknown event after metadata (`messages_after_metadata`: 2), a messageStop and a metadata
   after an exception (`internal_server_exception_then_messages`: 2), a messageStop after an
   error message (`error_message_after_text`: 1). The first metadata's usage is the record's.
6. **Exception-first bodies** are read as bedrock-converse, also under `auto` (the lead's rule:
   nothing tells them from bedrock-invoke) (`model_stream_error_first_message`, whose headers
   keep the Vercel fixture's order: `:message-type` first).
7. **Unknown stop reason**: `pause_turn` (not in `StopReason`) -> `other`, `PAUSE_TURN`
   (`unknown_stop_reason_is_other`).
8. **Reasoning of an unfinished response**: an exception after reasoning keeps `reasoning`
   and its `reasoning_details`, `finish_reason` null (`model_stream_error_after_reasoning`).
9. **Key order of reasoning_details entries** is not checked by the corpus (records compare
   as dicts); `tests/core/test_corpus_bedrock_converse.py` pins it on hand-made bodies.
10. **Null is not a string.** `delta.text: null` and `delta.toolUse.input: null` are
    `malformed_chunk` as any other non-string (the test file's hand-made bodies).
11. **Pinned as the builder gives them.** `bytes`, `detail`, `repairs`, `finish_reasons`,
    `refusal`, `choices` and the `chunks` of dead letters were not pinned while the rules left
    them to the builder; every expectation now states them.

## Not covered here

- CRLF: the body is binary; no line ends to rewrite.
- `--wire auto` is not a capture option: the test runs every capture under `auto` too and
  requires the same record.
- A JSON error body before the stream (HTTP 4xx/5xx, `{"message": ...}`): not a stream.
- `modelTimeoutException` (invoke models only), image deltas, `performanceConfig`,
  `serviceTier`, `cacheDetails`: the test file's hand-made bodies cover the exception and an
  image delta; the rest no capture carries.
"""


def readme(captures: list[Capture]) -> str:
    return (INTRO + corpus_build.EVERY_KEY + "\n".join(corpus_build.capture_table(captures))
            + "\n\n" + DECISIONS)


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures), suffix=SUFFIX)


if __name__ == "__main__":
    main()
