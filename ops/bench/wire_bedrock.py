"""Long Amazon Bedrock streams of any length, for ``ops/bench/wires.py`` (issue 22).

Both wires are AWS event-stream bodies, messages back to back (``event`` from
``toolwire.core.framing.eventstream``: ``:event-type``, ``:content-type``, ``:message-type``
headers, both CRCs). Every payload is compact JSON with sorted keys and the ``"p"`` padding
field Bedrock adds, a cut of ``abcdefghij…`` of random length (1 to 60, seeded, so the bodies
are the same on every run).

``bedrock-converse`` (ConverseStream, Claude's shape): ``messageStart``, a text block (deltas
only: text blocks have no ``contentBlockStart``), then four tool blocks, each
``contentBlockStart.start.toolUse{toolUseId, name}``, its arguments as ``toolUse.input``
string fragments (the first ``""``, as Claude sends), ``contentBlockStop``; ``messageStop``
(``tool_use``) and ``metadata`` (usage and ``latencyMs``). The deltas are shared out over the
five blocks so that the stream has exactly the number of events asked for.

``bedrock-converse-parallel``: many small calls in one turn (``get_weather`` for city after
city, the shape of parallel tool use): a text block, then one tool block per 100 events of the
stream, as ``gemini-api`` and ``ollama-chat`` have (start, ``""``, four fragments of
``{"city": …, "unit": "celsius"}``, stop): 96 calls at 9,600 events, under the assembler's
bound of 128 calls a response (a call every 20 events was a dead letter, ``oversize``).

``bedrock-invoke`` (InvokeModelWithResponseStream, an Anthropic model): every event a
``chunk`` whose payload is ``{"bytes": "<base64>", "p": …}``, the bytes one compact Anthropic
Messages event: ``message_start`` (``msg_bdrk_`` id), a text block, four ``tool_use`` blocks
(``toolu_bdrk_`` ids) whose ``input_json_delta`` fragments build the arguments (the first
``""``), ``message_delta`` (``tool_use``) and ``message_stop`` with
``amazon-bedrock-invocationMetrics``. No ``ping``: none appears in Bedrock's recordings.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from typing import Any, Final

import orjson

from toolwire.core.framing.eventstream import event

TOOLS: Final = 4
#: A call of the parallel stream every this many events.
PARALLEL_EVERY: Final = 100
MODEL: Final = "anthropic.claude-sonnet-4-6-v1:0"
_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


class _Padding:
    """Bedrock's ``"p"`` field: a random-length cut of the alphabet, the same on every run."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def __call__(self) -> str:
        return _ALPHABET[:self._random.randint(1, 60)]


def _share(total: int, parts: int) -> list[int]:
    return [total // parts + (n < total % parts) for n in range(parts)]


# -- ConverseStream -------------------------------------------------------------------------

class _Converse:
    """One ConverseStream body being written."""

    def __init__(self, seed: int) -> None:
        self.pad = _Padding(seed)
        self.messages: list[bytes] = []

    def add(self, event_type: str, **members: Any) -> None:
        members["p"] = self.pad()
        self.messages.append(event(event_type, orjson.dumps(members,
                                                            option=orjson.OPT_SORT_KEYS)))

    def text(self, index: int, pieces: int) -> None:
        """A text block of ``pieces`` deltas and its stop (no start: text blocks have none)."""
        for n in range(pieces):
            self.add("contentBlockDelta", contentBlockIndex=index,
                     delta={"text": f" token {n} of the plan,"})
        self.add("contentBlockStop", contentBlockIndex=index)

    def tool(self, index: int, tool_id: str, name: str, fragments: list[str]) -> None:
        self.add("contentBlockStart", contentBlockIndex=index,
                 start={"toolUse": {"toolUseId": tool_id, "name": name}})
        for fragment in fragments:
            self.add("contentBlockDelta", contentBlockIndex=index,
                     delta={"toolUse": {"input": fragment}})
        self.add("contentBlockStop", contentBlockIndex=index)

    def end(self, events: int, output_tokens: int) -> bytes:
        self.add("messageStop", stopReason="tool_use")
        self.add("metadata", usage={"inputTokens": 812, "outputTokens": output_tokens,
                                    "totalTokens": 812 + output_tokens,
                                    "cacheReadInputTokens": 0, "cacheWriteInputTokens": 0},
                 metrics={"latencyMs": 4210})
        if len(self.messages) != events:
            raise AssertionError(f"built {len(self.messages)} events, not {events}")
        return b"".join(self.messages)


def _tool_id(n: int) -> str:
    return f"tooluse_{n:04d}BenchQm9vbGVhbnNp"  # tooluse_ + 22 characters, as Bedrock's


def converse(events: int) -> bytes:
    """A ConverseStream response of exactly ``events`` messages: text, then four calls whose
    arguments (``{"rows":["r",…,"r"]}``) arrive in many fragments."""
    body = _Converse(seed=events)
    body.add("messageStart", role="assistant")
    # messageStart, messageStop, metadata; the text block's stop; each tool's start and stop
    share = _share(events - 4 - 2 * TOOLS, TOOLS + 1)
    body.text(0, share[0])
    for n in range(TOOLS):
        pieces = ["", '{"rows": ['] + [f'"row {k}", ' for k in range(share[n + 1] - 3)]
        body.tool(n + 1, _tool_id(n), "write_rows", [*pieces, '"last"]}'])
    return body.end(events, events)


def _parallel_calls(events: int) -> int:
    return events // PARALLEL_EVERY


def converse_parallel(events: int) -> bytes:
    """A ConverseStream response of exactly ``events`` messages: text, then one small
    ``get_weather`` call per :data:`PARALLEL_EVERY` events of the stream."""
    body = _Converse(seed=events + 1)
    calls = _parallel_calls(events)
    body.add("messageStart", role="assistant")
    body.text(0, events - 4 - 7 * calls)  # the fixed three, the text's stop, seven per call
    for n in range(calls):
        city = f"City {n}"
        body.tool(n + 1, _tool_id(n), "get_weather",
                  ["", '{"city": "', city[:3], f'{city[3:]}", "unit": ', '"celsius"}'])
    return body.end(events, events)


# -- InvokeModelWithResponseStream ---------------------------------------------------------

def invoke(events: int) -> bytes:
    """An InvokeModelWithResponseStream response of exactly ``events`` chunks (Anthropic
    events inside): text, then four ``tool_use`` blocks in ``input_json_delta`` fragments."""
    pad = _Padding(seed=events + 2)
    inner: list[dict[str, Any]] = [
        {"type": "message_start", "message": {
            "id": "msg_bdrk_01Bench7oaQs1Lw3Ny5Pa7Rc9", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-6", "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": {"input_tokens": 812, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": ""}}]
    # message_start, message_delta, message_stop; each block's start and stop
    share = _share(events - 3 - 2 * (TOOLS + 1), TOOLS + 1)
    inner += [{"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": f" token {n} of the plan,"}}
              for n in range(share[0])]
    inner.append({"type": "content_block_stop", "index": 0})
    for n in range(TOOLS):
        index = n + 1
        pieces = ["", '{"rows": ['] + [f'"row {k}", ' for k in range(share[index] - 3)]
        inner.append({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": f"toolu_bdrk_01Bench{n:04d}", "name": "write_rows",
            "input": {}}})
        inner += [{"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": piece}}
                  for piece in [*pieces, '"last"]}']]
        inner.append({"type": "content_block_stop", "index": index})
    inner.append({"type": "message_delta",
                  "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                  "usage": {"output_tokens": events}})
    inner.append({"type": "message_stop", "amazon-bedrock-invocationMetrics": {
        "inputTokenCount": 812, "outputTokenCount": events, "invocationLatency": 4210,
        "firstByteLatency": 380}})
    if len(inner) != events:
        raise AssertionError(f"built {len(inner)} events, not {events}")
    return b"".join(
        event("chunk", orjson.dumps(
            {"bytes": base64.b64encode(orjson.dumps(message)).decode(), "p": pad()},
            option=orjson.OPT_SORT_KEYS))
        for message in inner)


#: The streams of each wire, and how many client calls each one's record holds.
CONVERSE_STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "bedrock-converse": (converse, lambda events: TOOLS),
    "bedrock-converse-parallel": (converse_parallel, _parallel_calls),
}
INVOKE_STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "bedrock-invoke": (invoke, lambda events: TOOLS),
}
