"""One long Ollama ``/api/chat`` stream of any length, for ``ops/bench/wires.py``.

``ollama-chat``: NDJSON as Ollama writes it (Go's field order, compact, one object a line):
thinking lines first (a tenth of the events), then text lines, a line with one whole call
(``call_`` id, ``function.index``, an arguments object) every 100th event, and the
``done: true`` line with ``done_reason`` and the metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import orjson

MODEL = "qwen3:8b"
CREATED = "2026-12-02T05:00:00.000000Z"


def _line(message: dict[str, object], done: bool = False) -> bytes:
    body: dict[str, object] = {"model": MODEL, "created_at": CREATED,
                               "message": {"role": "assistant", **message}, "done": done}
    if done:
        body.update(done_reason="stop", total_duration=4_200_000_000,
                    load_duration=52_000_000, prompt_eval_count=412,
                    prompt_eval_duration=180_000_000, eval_count=1_024,
                    eval_duration=3_900_000_000)
    return orjson.dumps(body) + b"\n"


def ollama_chat(events: int) -> bytes:
    """A response of ``events`` lines, the done line included."""
    lines = []
    calls = 0
    for n in range(events - 1):
        if n % 100 == 99:
            lines.append(_line({"content": "", "tool_calls": [{
                "id": f"call_{calls:08d}", "function": {
                    "index": calls, "name": "lookup_rows",
                    "arguments": {"table": "orders", "rows": [n, n + 1, n + 2],
                                  "filter": {"status": "open"}}}}]}))
            calls += 1
        elif n < events // 10:
            lines.append(_line({"content": "", "thinking": f"step {n}: check the rows "}))
        else:
            lines.append(_line({"content": f"token {n} "}))
    lines.append(_line({"content": ""}, done=True))
    return b"".join(lines)


STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "ollama-chat": (ollama_chat, lambda events: (events - 1) // 100),
}
