"""µs per event of the gemini wire on one long stream, growing from 150 to 9,600 events.

Why: issue 13 holds every wire to the Chat Completions goal, ≤ 3 µs per event and flat as the
stream grows (a cost per event that grows with the stream would be a quadratic walk). The
figure is ``toolwire.core.assemble(body, Options(wire="gemini"))`` on the whole raw body, so
framing, orjson, the walk and the decision with its record are all inside it, divided by the
number of events; beside it, the floor of ``orjson.loads`` on each payload alone, measured in
the same run.

Streams (one response each, the shapes of the corpus ``tests/core/corpus_wires/gemini``):

* ``gemini-api``: the Gemini API's framing (CRLF, ``", "`` separators, ``usageMetadata``,
  ``modelVersion`` and ``responseId`` on every chunk): text chunks, a thought chunk every 10th
  event, a whole ``functionCall`` part (id, args, ``thoughtSignature``) every 100th, and the
  last chunk with ``finishReason: STOP``.
* ``vertex-partial-args``: Vertex AI's framing (LF, compact): one streamed call whose
  ``partialArgs`` pieces each add a string piece or a new array element, closed by ``{}``.

Timing: ``time.perf_counter_ns`` around one whole assembly; best of ``--repeats`` (the run least
disturbed by other work), the median beside it; ``gc.collect()`` before each timed run.

    .venv/bin/python ops/bench/wire_gemini.py [--repeats N]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from functools import partial

import orjson

from toolwire.core import Options, assemble

SIZES = (150, 600, 2400, 9600)
OPTIONS = Options(wire="gemini")
GOAL_US = 3.0
MODEL = "gemini-3-flash-preview"
RESPONSE_ID = "Bn7oaQs1Lw3Ny5Pa7Rc9Te1"
SIGNATURE = "EowBCogBAb4+9vu" + "Qm9vbGVhbiBzaWduYXR1cmU" * 4


def _usage(candidates: int) -> dict[str, object]:
    return {"promptTokenCount": 412, "candidatesTokenCount": candidates,
            "totalTokenCount": 412 + candidates + 96, "thoughtsTokenCount": 96,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 412}]}


def gemini_api(events: int) -> tuple[bytes, list[bytes]]:
    """A Gemini API response of ``events`` chunks: the body and each chunk's payload."""
    payloads = []
    for n in range(events):
        if n % 100 == 99:
            part: dict[str, object] = {
                "functionCall": {"name": "get_weather", "args": {"city": f"City {n}",
                                                                 "unit": "celsius"},
                                 "id": f"call_{n:07d}"},
                "thoughtSignature": SIGNATURE}
        elif n % 10 == 0:
            part = {"text": f"Considering step {n} of the plan.", "thought": True}
        else:
            part = {"text": f"Token run {n} of the answer, "}
        candidate: dict[str, object] = {"content": {"parts": [part], "role": "model"},
                                        "index": 0}
        if n == events - 1:
            candidate["finishReason"] = "STOP"
        chunk = {"candidates": [candidate], "usageMetadata": _usage(n + 1),
                 "modelVersion": MODEL, "responseId": RESPONSE_ID}
        payloads.append(json.dumps(chunk, ensure_ascii=False, separators=(",", ": ")).encode())
    return b"".join(b"data: " + p + b"\r\n\r\n" for p in payloads), payloads


def vertex_partial_args(events: int) -> tuple[bytes, list[bytes]]:
    """A Vertex response whose one streamed call takes ``events`` chunks in all."""
    def chunk(parts: list[dict[str, object]], finish: str | None = None) -> bytes:
        candidate: dict[str, object] = {"content": {"role": "model", "parts": parts}}
        if finish is not None:
            candidate["finishReason"] = finish
        return orjson.dumps({"candidates": [candidate], "usageMetadata": {"trafficType":
                                                                           "ON_DEMAND"},
                             "modelVersion": MODEL, "createTime": "2026-05-19T14:59:42Z",
                             "responseId": RESPONSE_ID})

    payloads = [chunk([{"functionCall": {"name": "write_items", "willContinue": True},
                        "thoughtSignature": SIGNATURE}])]
    for n in range(events - 3):
        if n % 4 == 3:  # a new element
            piece: dict[str, object] = {"jsonPath": f"$.items[{n // 4}].qty", "numberValue": n}
        else:  # a piece of the current element's note
            piece = {"jsonPath": f"$.items[{n // 4}].note", "stringValue": f"part {n} ",
                     "willContinue": n % 4 != 2}
        payloads.append(chunk([{"functionCall": {"partialArgs": [piece], "willContinue": True}}]))
    payloads.append(chunk([{"functionCall": {}}]))
    payloads.append(chunk([{"text": ""}], "STOP"))
    return b"".join(b"data: " + p + b"\n\n" for p in payloads), payloads


def _best(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best and median nanoseconds of ``run`` over ``repeats`` timed calls."""
    run()  # warm caches, untimed
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    return min(times), statistics.median(times)


def _loads_each(payloads: list[bytes]) -> None:
    for payload in payloads:
        orjson.loads(payload)


def measure(name: str, make: Callable[[int], tuple[bytes, list[bytes]]], repeats: int) -> None:
    print(f"\n{name}: µs per event (best of {repeats}; median in brackets)")
    print(f"{'events':>7} {'bytes':>10} {'toolwire':>18} {'orjson floor':>18} {'ratio':>6}")
    for size in SIZES:
        body, payloads = make(size)
        record = assemble(body, OPTIONS)
        assert record["outcome"] == "assembled", record
        best, median = _best(partial(assemble, body, OPTIONS), repeats)
        floor, floor_median = _best(partial(_loads_each, payloads), repeats)
        per, per_median = best / size / 1000, median / size / 1000
        print(f"{size:>7} {len(body):>10} {per:>8.2f} [{per_median:>6.2f}] "
              f"{floor / size / 1000:>8.2f} [{floor_median / size / 1000:>6.2f}] "
              f"{best / floor:>6.2f}" + ("" if per <= GOAL_US else f"  over {GOAL_US} µs"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    gc.freeze()
    measure("gemini-api", gemini_api, args.repeats)
    measure("vertex-partial-args", vertex_partial_args, args.repeats)


if __name__ == "__main__":
    main()
