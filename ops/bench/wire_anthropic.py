"""µs per event of the Anthropic Messages wire on one long stream, from 150 to 9,600 events.

Why this exists: issue 13 holds every wire to the Chat Completions goal, ≤ 3 µs per event and
flat as the stream grows (a cost that grows with the stream shows as a rising figure).

The stream is one response as the Messages API sends it (``event:`` + ``data:`` frames):
``message_start``, a ``ping``, a ``thinking`` block (``thinking_delta``s, one
``signature_delta``), a ``text`` block (``text_delta``s), then four ``tool_use`` blocks whose
``input_json_delta`` fragments (the first one ``""``) build their arguments, each closed by
``content_block_stop``; ``message_delta`` (stop reason ``tool_use``, cumulative usage) and
``message_stop``. The deltas are shared out over the six blocks so that the stream has exactly
the number of events asked for. Each size is assembled whole (``toolwire.core.assemble``:
framing, orjson, the wire's walk, the decision); the figure is the fastest of N timed runs
(``timeit``, collector off while timing), after one untimed run whose record is checked.

Run: ``.venv/bin/python ops/bench/wire_anthropic.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import timeit
from typing import Any, Final

import orjson

from toolwire.core import Options, assemble

SIZES: Final = (150, 300, 600, 1200, 2400, 4800, 9600)
TOOLS: Final = 4
WIRE: Final = "anthropic-messages"
OPTIONS: Final = Options(wire=WIRE)
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


def fastest_ns(body: bytes, repeats: int) -> float:
    """The fastest whole assembly of ``body``, in ns, after one checked untimed run."""
    record = assemble(body, OPTIONS)
    if record["outcome"] != "assembled" or len(record["tool_calls"]) != TOOLS:
        raise AssertionError(f"the bench stream did not assemble: {record}")
    runs = timeit.repeat(lambda: assemble(body, OPTIONS), repeat=repeats, number=1)
    return min(runs) * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description="µs per event of the Anthropic Messages wire")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(f"{WIRE}, one response per size, fastest of {args.repeats} runs "
          "(assemble: framing + orjson + walk + decision)")
    print(f"{'events':>7} {'bytes':>9} {'µs total':>10} {'µs/event':>9}")
    for size in SIZES:
        body = stream(size)
        took = fastest_ns(body, args.repeats) / 1000
        print(f"{size:>7} {len(body):>9} {took:>10.1f} {took / size:>9.2f}")


if __name__ == "__main__":
    main()
