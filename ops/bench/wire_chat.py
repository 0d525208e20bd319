"""One long Chat Completions stream of any length, for ``ops/bench/wires.py``.

The stream is one response as OpenAI sends it (``data:`` frames only, LF): the first chunk
with the role, text deltas, then four parallel tool calls, each opened by a delta with its
``index``, ``id``, ``type`` and name, its arguments in fragments (``{"rows":[`` … ``"r"]}``),
the last chunk with ``finish_reason: tool_calls``, the usage chunk (``stream_options``), and
``[DONE]``. The deltas are shared out over the text and the calls so that the stream has
exactly the number of events asked for (``[DONE]`` included).

``openrouter-reasoning`` is the same response as OpenRouter sends it with reasoning on (issue
24): most events are reasoning, each in ``delta.reasoning`` and again as a ``reasoning.text``
piece of ``reasoning_details`` (so every such event is merged into the choice's entry), then a
signature piece, a ``reasoning.encrypted`` entry naming the first call, and the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

CALLS: Final = 4
#: Events that are not deltas: the role chunk, the finish chunk, the usage chunk, [DONE].
FIXED: Final = 4


def _chunk(delta: dict[str, Any], finish: str | None = None,
           usage: dict[str, int] | None = None) -> bytes:
    payload: dict[str, Any] = {
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1764590400,
        "model": "gpt-4.1-2025-04-14", "system_fingerprint": "fp_bench",
        "choices": [] if usage is not None else
        [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    if usage is not None:
        payload["usage"] = usage
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _openrouter(delta: dict[str, Any], finish: str | None = None,
                usage: dict[str, int] | None = None) -> bytes:
    payload: dict[str, Any] = {
        "id": "gen-bench", "provider": "Google", "model": "google/gemini-3-pro-preview",
        "object": "chat.completion.chunk", "created": 1764590400,
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "",
                                           "reasoning": None, "reasoning_details": [],
                                           **delta},
                     "finish_reason": finish, "native_finish_reason": finish,
                     "logprobs": None}]}
    if usage is not None:
        payload["usage"] = usage
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _call(index: int, **fields: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, **fields}]}


def stream(events: int) -> bytes:
    """One response of exactly ``events`` events (at least ``FIXED`` + 3 per call + 1)."""
    deltas = events - FIXED
    share = [deltas // (CALLS + 1) + (n < deltas % (CALLS + 1)) for n in range(CALLS + 1)]
    frames = [_chunk({"role": "assistant", "content": "", "refusal": None})]
    frames += [_chunk({"content": " word"})] * share[0]
    for n in range(CALLS):
        pieces = ['{"rows":['] + ['"r",'] * (share[n + 1] - 3) + ['"r"]}']
        frames.append(_chunk(_call(n, id=f"call_bench_{n}", type="function",
                                   function={"name": "write_rows", "arguments": ""})))
        frames += [_chunk(_call(n, function={"arguments": piece})) for piece in pieces]
    frames.append(_chunk({}, "tool_calls"))
    frames.append(_chunk({}, usage={"prompt_tokens": 812, "completion_tokens": events,
                                    "total_tokens": 812 + events}))
    frames.append(b"data: [DONE]\n\n")
    if len(frames) != events:
        raise AssertionError(f"built {len(frames)} events, not {events}")
    return b"".join(frames)


def _text(piece: str) -> dict[str, Any]:
    return {"reasoning": piece, "reasoning_details": [
        {"type": "reasoning.text", "text": piece, "format": "google-gemini-v1", "index": 0}]}


def openrouter_stream(events: int) -> bytes:
    """OpenRouter's response of exactly ``events`` events: reasoning (two thirds of the
    deltas), a signature piece and a ``reasoning.encrypted`` entry naming the first call, then
    the calls in fragments; finish, usage, ``[DONE]``."""
    deltas = events - FIXED - 2
    reasoning = 2 * deltas // 3
    rest = deltas - reasoning
    share = [rest // CALLS + (n < rest % CALLS) for n in range(CALLS)]
    frames = [_openrouter({})]
    frames += [_openrouter(_text(" thought"))] * reasoning
    frames.append(_openrouter({"reasoning_details": [
        {"type": "reasoning.text", "signature": "EuYBCkQIBxgCKkB" * 8,
         "format": "google-gemini-v1", "index": 0}]}))
    frames.append(_openrouter({"reasoning_details": [
        {"type": "reasoning.encrypted", "data": "CiQB0e2Kb3f4" * 40, "id": "tool_bench_0",
         "format": "google-gemini-v1", "index": 0}]}))
    for n in range(CALLS):
        pieces = ['{"rows":['] + ['"r",'] * (share[n] - 3) + ['"r"]}']
        frames.append(_openrouter(_call(n, id=f"tool_bench_{n}", type="function",
                                        function={"name": "write_rows", "arguments": ""})))
        frames += [_openrouter(_call(n, function={"arguments": piece})) for piece in pieces]
    frames.append(_openrouter({}, "tool_calls"))
    frames.append(_openrouter({}, usage={"prompt_tokens": 812, "completion_tokens": events,
                                         "total_tokens": 812 + events}))
    frames.append(b"data: [DONE]\n\n")
    if len(frames) != events:
        raise AssertionError(f"built {len(frames)} events, not {events}")
    return b"".join(frames)


#: The streams of this wire, and how many client calls each one's record holds.
STREAMS: Final[dict[str, tuple[Callable[[int], bytes], Callable[[int], int]]]] = {
    "openai-chat": (stream, lambda events: CALLS),
    "openrouter-reasoning": (openrouter_stream, lambda events: CALLS),
}
