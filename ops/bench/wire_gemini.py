"""Long Gemini streams of any length, for ``ops/bench/wires.py``.

Streams (one response each, the shapes of the corpus ``tests/core/corpus_wires/gemini``):

* ``gemini-api``: the Gemini API's framing (CRLF, ``", "`` separators, ``usageMetadata``,
  ``modelVersion`` and ``responseId`` on every chunk): text chunks, a thought chunk every 10th
  event, a whole ``functionCall`` part (id, args, ``thoughtSignature``) every 100th, and the
  last chunk with ``finishReason: STOP``.
* ``gemini-api-json-array``: the same chunks as ``streamGenerateContent`` streams them without
  ``?alt=sse`` (the REST default, issue 22): the elements of one JSON array, each
  pretty-printed (two-space indent), ``[{…}\\n,\\r\\n{…}\\n]`` (as
  ``tests/core/test_gemini_json_array.py`` writes its twins).
* ``vertex-streamed-text``: Vertex AI's framing (LF, compact): one streamed call
  (``streamFunctionCallArguments``) whose ``content`` argument arrives in string pieces at one
  JSON path, the shape of the wire's own example; closed by ``{}``.
* ``vertex-partial-args``: the same framing, the worst case for the JSON paths: a new array
  element every fourth piece, so half the pieces bring a path never seen before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

import orjson

MODEL = "gemini-3-flash-preview"
RESPONSE_ID = "Bn7oaQs1Lw3Ny5Pa7Rc9Te1"
SIGNATURE = "EowBCogBAb4+9vu" + "Qm9vbGVhbiBzaWduYXR1cmU" * 4


def _usage(candidates: int) -> dict[str, object]:
    return {"promptTokenCount": 412, "candidatesTokenCount": candidates,
            "totalTokenCount": 412 + candidates + 96, "thoughtsTokenCount": 96,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 412}]}


def _gemini_api_chunks(events: int) -> list[dict[str, object]]:
    """The ``events`` chunks of a Gemini API response."""
    chunks: list[dict[str, object]] = []
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
        chunks.append({"candidates": [candidate], "usageMetadata": _usage(n + 1),
                       "modelVersion": MODEL, "responseId": RESPONSE_ID})
    return chunks


def gemini_api(events: int) -> bytes:
    """A Gemini API response of ``events`` chunks, as SSE (``?alt=sse``)."""
    return b"".join(
        b"data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ": ")).encode()
        + b"\r\n\r\n" for chunk in _gemini_api_chunks(events))


def gemini_api_json_array(events: int) -> bytes:
    """The same response as a streamed JSON array (without ``?alt=sse``): ``events``
    pretty-printed elements, ``[{…}\\n,\\r\\n{…}\\n]``."""
    elements = [json.dumps(chunk, indent=2, ensure_ascii=False)
                for chunk in _gemini_api_chunks(events)]
    return ("[" + "\n,\r\n".join(elements) + "\n]").encode()


def _vertex_chunk(parts: list[dict[str, object]], finish: str | None = None) -> bytes:
    """One Vertex chunk (compact JSON, as Vertex AI sends it) of one candidate."""
    candidate: dict[str, object] = {"content": {"role": "model", "parts": parts}}
    if finish is not None:
        candidate["finishReason"] = finish
    return orjson.dumps({"candidates": [candidate], "usageMetadata": {"trafficType": "ON_DEMAND"},
                         "modelVersion": MODEL, "createTime": "2026-05-19T14:59:42Z",
                         "responseId": RESPONSE_ID})


def vertex_partial_args(events: int) -> bytes:
    """A Vertex response whose one streamed call takes ``events`` chunks in all."""
    payloads = [_vertex_chunk([{"functionCall": {"name": "write_items", "willContinue": True},
                        "thoughtSignature": SIGNATURE}])]
    for n in range(events - 3):
        if n % 4 == 3:  # a new element
            piece: dict[str, object] = {"jsonPath": f"$.items[{n // 4}].qty", "numberValue": n}
        else:  # a piece of the current element's note
            piece = {"jsonPath": f"$.items[{n // 4}].note", "stringValue": f"part {n} ",
                     "willContinue": n % 4 != 2}
        payloads.append(_vertex_chunk([{"functionCall": {"partialArgs": [piece],
                                                          "willContinue": True}}]))
    payloads.append(_vertex_chunk([{"functionCall": {}}]))
    payloads.append(_vertex_chunk([{"text": ""}], "STOP"))
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


def vertex_streamed_text(events: int) -> bytes:
    """A Vertex response whose one streamed call writes a file: its ``path`` in one piece,
    then its ``content`` in ``events - 4`` string pieces at one path (the shape of the
    wire's own example, ``$.location`` "Bos" then the rest)."""
    def piece(path: str, text: str, more: bool) -> bytes:
        return _vertex_chunk([{"functionCall": {"partialArgs": [
            {"jsonPath": path, "stringValue": text, "willContinue": more}],
            "willContinue": True}}])

    payloads = [_vertex_chunk([{"functionCall": {"name": "write_file", "willContinue": True},
                        "thoughtSignature": SIGNATURE}]),
                piece("$.path", "src/report.md", False)]
    pieces = events - 4
    payloads += [piece("$.content", f"line {n} of the report\\n", n < pieces - 1)
                 for n in range(pieces)]
    payloads.append(_vertex_chunk([{"functionCall": {}}]))
    payloads.append(_vertex_chunk([{"text": ""}], "STOP"))
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


#: The streams of this wire, and how many client calls each one's record holds.
STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "gemini-api": (gemini_api, lambda events: events // 100),
    "gemini-api-json-array": (gemini_api_json_array, lambda events: events // 100),
    "vertex-streamed-text": (vertex_streamed_text, lambda events: 1),
    "vertex-partial-args": (vertex_partial_args, lambda events: 1),
}
