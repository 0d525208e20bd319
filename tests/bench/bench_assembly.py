"""Benchmark of the assembly core: µs per chunk, framing and parsing included.

Prints figures measured in one run: the assembler on raw bytes fed in 1 KB slices, beside the
floor of ``orjson.loads`` on each payload alone, and µs per chunk at growing stream lengths
(which must stay flat: the cost of a chunk must not depend on what came before).

    python tests/bench/bench_assembly.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import orjson

from toolwire.core import assemble

SLICE = 1024


def stream(chunks: int) -> tuple[bytes, list[bytes]]:
    """Two interleaved calls, arguments in 8-character fragments; ``chunks`` chunks in all."""
    events: list[bytes] = []

    def event(obj: object) -> None:
        events.append(orjson.dumps(obj))

    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1764400000,
            "model": "deepseek-chat"}
    for i in range(2):
        event({**head, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": f"call_0{i}_bench", "type": "function",
             "function": {"name": f"tool_{i}", "arguments": ""}}]}, "finish_reason": None}]})
    text = '{"path": "/srv/data/file.txt", "content": "' + "x" * (chunks * 8) + '"}'
    pos = 0
    while len(events) < chunks - 1:
        for i in range(2):
            fragment = text[pos:pos + 8]
            event({**head, "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": "", "function": {"name": "", "arguments": fragment}}]},
                "finish_reason": None}]})
        pos += 8
    event({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": 10, "completion_tokens": chunks,
                     "total_tokens": 10 + chunks}})
    body = b"".join(b"data: " + e + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return body, events


def _loads_each(payloads: list[bytes]) -> None:
    """The floor: decode each payload and drop it, as the assembler does (freeing included)."""
    loads = orjson.loads
    for payload in payloads:
        loads(payload)


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def openai_baseline(events: list[bytes]) -> Callable[[], object] | None:
    """openai-python's ChatCompletionStreamState on the same chunks, if openai is installed.

    It gets parsed chunk objects (its own framing is not timed), so it is a lower bound of its
    cost; openai is not a dependency of Toolwire: ``pip install openai`` to see this line.
    """
    try:
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError:
        return None

    def run() -> None:
        state: ChatCompletionStreamState[object] = ChatCompletionStreamState()
        for event in events:
            state.handle_chunk(ChatCompletionChunk.model_validate(orjson.loads(event)))

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="runs per figure (best is kept)")
    args = parser.parse_args(argv)

    print(f"python {sys.version.split()[0]}, orjson {orjson.__version__}, slices of {SLICE} B, "
          f"best of {args.repeat}")
    print(f"{'chunks':>7} {'bytes':>9} {'assemble µs/chunk':>18} {'orjson floor':>13} {'ratio':>6}")
    per_chunk: dict[int, float] = {}
    for n in (150, 600, 2400, 9600):
        body, events = stream(n)
        slices = [body[i:i + SLICE] for i in range(0, len(body), SLICE)]
        record = assemble(slices)
        assert record["outcome"] == "assembled" and len(record["tool_calls"]) == 2, record
        t = best_of(args.repeat, lambda slices=slices: assemble(slices))
        floor = best_of(args.repeat, lambda events=events: _loads_each(events))
        per_chunk[n] = t / len(events) * 1e6
        print(f"{len(events):>7} {len(body):>9} {per_chunk[n]:>18.2f} "
              f"{floor / len(events) * 1e6:>13.2f} {t / floor:>6.1f}")
    _, events = stream(600)
    baseline = openai_baseline(events)
    if baseline is None:
        print("openai-python baseline: not installed (pip install openai to compare)")
    else:
        t = best_of(3, baseline) / len(events) * 1e6
        print(f"openai-python ChatCompletionStreamState, 600 chunks (parsed, framing not timed): "
              f"{t:.1f} µs/chunk = {t / per_chunk[600]:.0f}x Toolwire")
    mean = statistics.mean(per_chunk.values())
    spread = max(abs(v - mean) / mean for v in per_chunk.values()) * 100
    print(f"flatness: largest deviation from the mean µs/chunk = {spread:.1f} % (goal within 30 %)")
    print(f"goal ≤ 3 µs/chunk at 600 chunks: {per_chunk[600]:.2f} µs "
          f"({'met' if per_chunk[600] <= 3 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
