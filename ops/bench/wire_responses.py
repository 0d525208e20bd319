"""One long OpenAI Responses stream of any length, for ``ops/bench/wires.py``.

The stream is one response as OpenAI sends it (``event:`` + ``data:`` frames, a
``sequence_number`` and an ``obfuscation`` pad on every delta): ``response.created``,
``response.in_progress``, a reasoning item with summary deltas, a message with text deltas and
four parallel ``function_call`` items with argument deltas (each with its ``.done`` event and
``output_item.done``), then ``response.completed``. The deltas are shared out over the items so
that the whole stream has the number of events asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

CALLS: Final = 4


class _Stream:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def emit(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(self.frames), **fields}
        self.frames.append(b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload)
                           + b"\n\n")

    def delta(self, kind: str, index: int, item_id: str, text: str, **fields: Any) -> None:
        self.emit(kind, item_id=item_id, output_index=index, **fields, delta=text,
                  obfuscation="Qx7kP2")


def stream(events: int) -> bytes:
    """One response of exactly ``events`` events (at least 40)."""
    fixed = 2 + 5 + 5 + 3 * CALLS + 1  # the events that are not deltas
    deltas = events - fixed
    share = [deltas // (CALLS + 2) + (1 if n < deltas % (CALLS + 2) else 0)
             for n in range(CALLS + 2)]
    s = _Stream()
    response: dict[str, Any] = {"id": "resp_bench", "object": "response", "status": "in_progress",
                "model": "gpt-5", "output": [], "usage": None}
    s.emit("response.created", response=response)
    s.emit("response.in_progress", response=response)
    s.emit("response.output_item.added", output_index=0,
           item={"id": "rs_bench", "type": "reasoning", "summary": []})
    s.emit("response.reasoning_summary_part.added", item_id="rs_bench", output_index=0,
           summary_index=0, part={"type": "summary_text", "text": ""})
    for _ in range(share[0]):
        s.delta("response.reasoning_summary_text.delta", 0, "rs_bench", " thinking",
                summary_index=0)
    s.emit("response.reasoning_summary_text.done", item_id="rs_bench", output_index=0,
           summary_index=0, text="")
    s.emit("response.reasoning_summary_part.done", item_id="rs_bench", output_index=0,
           summary_index=0, part={"type": "summary_text", "text": ""})
    s.emit("response.output_item.done", output_index=0,
           item={"id": "rs_bench", "type": "reasoning", "summary": []})
    s.emit("response.output_item.added", output_index=1,
           item={"id": "msg_bench", "type": "message", "status": "in_progress",
                 "content": [], "role": "assistant"})
    s.emit("response.content_part.added", item_id="msg_bench", output_index=1, content_index=0,
           part={"type": "output_text", "annotations": [], "text": ""})
    for _ in range(share[1]):
        s.delta("response.output_text.delta", 1, "msg_bench", " word", content_index=0,
                logprobs=[])
    s.emit("response.output_text.done", item_id="msg_bench", output_index=1, content_index=0,
           text="", logprobs=[])
    s.emit("response.content_part.done", item_id="msg_bench", output_index=1, content_index=0,
           part={"type": "output_text", "annotations": [], "text": ""})
    s.emit("response.output_item.done", output_index=1,
           item={"id": "msg_bench", "type": "message", "status": "completed", "content": [],
                 "role": "assistant"})
    for n in range(CALLS):
        index, item_id, call_id = n + 2, f"fc_bench_{n}", f"call_bench_{n}"
        pieces = ['{"rows":['] + ['"r",'] * (share[n + 2] - 2) + ['"r"]}']
        item = {"id": item_id, "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": call_id, "name": "write_rows"}
        s.emit("response.output_item.added", output_index=index, item=item)
        for piece in pieces:
            s.delta("response.function_call_arguments.delta", index, item_id, piece)
        arguments = "".join(pieces)
        s.emit("response.function_call_arguments.done", item_id=item_id, output_index=index,
               name="write_rows", arguments=arguments)
        s.emit("response.output_item.done", output_index=index,
               item={**item, "status": "completed", "arguments": arguments})
    s.emit("response.completed", response={
        **response, "status": "completed",
        "usage": {"input_tokens": 10, "output_tokens": events, "total_tokens": events + 10}})
    assert len(s.frames) == events, (len(s.frames), events)
    return b"".join(s.frames)


#: The streams of this wire, and how many client calls each one's record holds.
STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "openai-responses": (stream, lambda events: CALLS),
}
