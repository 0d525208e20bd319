"""One long Anthropic Messages stream of any length, for ``ops/bench/wires.py``.

The stream is one response as the Messages API sends it (``event:`` + ``data:`` frames):
``message_start``, a ``ping``, a ``thinking`` block (``thinking_delta``s, one
``signature_delta``), a ``text`` block (``text_delta``s), then four ``tool_use`` blocks whose
``input_json_delta`` fragments (the first one ``""``) build their arguments, each closed by
``content_block_stop``; ``message_delta`` (stop reason ``tool_use``, cumulative usage) and
``message_stop``. The deltas are shared out over the six blocks so that the stream has exactly
the number of events asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

TOOLS: Final = 4
WIRE: Final = "anthropic-messages"
#: Events that are not content deltas: message_start, ping, message_delta, message_stop, and
#: per block its start and stop (thinking also its signature_delta).
FIXED: Final = 4 + 2 * (TOOLS + 2) + 1


def _frame(payload: dict[str, Any]) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (str(payload["type"]).encode(), orjson.dumps(payload))


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return _frame({"type": "content_block_delta", "index": index, "delta": delta})


def _block(index: int, block: dict[str, Any]) -> bytes:
    return _frame({"type": "content_block_start", "index": index, "content_block": block})


def _stop(index: int) -> bytes:
    return _frame({"type": "content_block_stop", "index": index})


def stream(events: int) -> bytes:
    """One response of exactly ``events`` events (at least ``FIXED`` + 3 per tool)."""
    deltas = events - FIXED
    blocks = TOOLS + 2
    share = [deltas // blocks + (n < deltas % blocks) for n in range(blocks)]
    usage = {"input_tokens": 812, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "output_tokens": 1}
    frames = [
        _frame({"type": "message_start", "message": {
            "id": "msg_bench", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-6", "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": usage}}),
        b'event: ping\ndata: {"type": "ping"}\n\n',
        _block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        *[_delta(0, {"type": "thinking_delta", "thinking": " weighing"})] * share[0],
        _delta(0, {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkB7"}),
        _stop(0),
        _block(1, {"type": "text", "text": ""}),
        *[_delta(1, {"type": "text_delta", "text": " word"})] * share[1],
        _stop(1),
    ]
    for n in range(TOOLS):
        index = n + 2
        pieces = ["", '{"rows":['] + ['"r",'] * (share[index] - 3) + ['"r"]}']
        frames.append(_block(index, {"type": "tool_use", "id": f"toolu_bench_{n}",
                                     "name": "write_rows", "input": {}}))
        frames += [_delta(index, {"type": "input_json_delta", "partial_json": p})
                   for p in pieces]
        frames.append(_stop(index))
    frames.append(_frame({"type": "message_delta",
                          "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                          "usage": {**usage, "output_tokens": events}}))
    frames.append(_frame({"type": "message_stop"}))
    if len(frames) != events:
        raise AssertionError(f"built {len(frames)} events, not {events}")
    return b"".join(frames)


#: The streams of this wire, and how many client calls each one's record holds.
STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "anthropic-messages": (stream, lambda events: TOOLS),
}
