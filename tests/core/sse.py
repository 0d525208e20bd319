"""Builds SSE bodies for unit tests (the corpus holds the realistic captures)."""

from __future__ import annotations

from typing import Any

import orjson


def call(index: int | None = 0, id: Any = "absent", name: Any = "absent",
         arguments: Any = "absent") -> dict[str, Any]:
    entry: dict[str, Any] = {} if index is None else {"index": index}
    if id != "absent":
        entry["id"] = id
    function: dict[str, Any] = {}
    if name != "absent":
        function["name"] = name
    if arguments != "absent":
        function["arguments"] = arguments
    if function:
        entry["function"] = function
    return entry


def chunk(*calls: dict[str, Any], finish: Any = None, content: Any = None, choice: int = 0,
          usage: Any = "absent") -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if calls:
        delta["tool_calls"] = list(calls)
    obj: dict[str, Any] = {"id": "chatcmpl-t", "object": "chat.completion.chunk",
                           "model": "test-model",
                           "choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}
    if usage != "absent":
        obj["usage"] = usage
    return obj


def body(*chunks: dict[str, Any] | bytes, done: bool = True) -> bytes:
    out = b"".join(b"data: " + (c if isinstance(c, bytes) else orjson.dumps(c)) + b"\n\n"
                   for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")
