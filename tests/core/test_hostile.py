"""Hostile input: whatever bytes or JSON arrive, the assembler returns a record — never raises.

A crash here would be a crashed worker in production (or an ``internal_error`` dead letter);
every malformed shape must instead be a dead letter with a reason, or a repaired response.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core import Limits, Options, assemble

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
                      st.text(max_size=8), st.just(""))
JSON_ANY = st.recursive(JSON_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)


def field(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A wire field: usually well-typed, sometimes anything at all."""
    return st.one_of(value, JSON_ANY)


FUNCTION = st.fixed_dictionaries({}, optional={
    "name": field(st.sampled_from(["get_weather", "", "search"])),
    "arguments": field(st.sampled_from(['{"a":', "1}", "", '"x"'])),
})
TOOL_CALL = st.fixed_dictionaries({}, optional={
    "index": field(st.integers(0, 3)),
    "id": field(st.sampled_from(["call_1", "call_2", ""])),
    "type": field(st.just("function")),
    "function": field(FUNCTION),
})
DELTA = st.fixed_dictionaries({}, optional={
    "content": field(st.text(max_size=5)),
    "reasoning_content": field(st.text(max_size=5)),
    "tool_calls": field(st.lists(field(TOOL_CALL), max_size=3)),
    "function_call": JSON_ANY,
})
CHOICE = st.fixed_dictionaries({}, optional={
    "index": field(st.integers(0, 2)),
    "delta": field(DELTA),
    "finish_reason": field(st.sampled_from(["stop", "tool_calls", "length", "", "content_filter"])),
})
CHUNK = st.fixed_dictionaries({}, optional={
    "id": field(st.just("chatcmpl-1")),
    "model": field(st.just("m")),
    "choices": field(st.lists(field(CHOICE), max_size=3)),
    "usage": field(st.dictionaries(st.text(max_size=4), st.integers(0, 9), max_size=2)),
})


def check(record: dict[str, Any]) -> None:
    assert record["outcome"] in ("assembled", "dead_letter")
    if record["outcome"] == "dead_letter":
        assert record["reason"] and record["detail"]
    else:
        for call in record["tool_calls"]:
            assert call["id"] and call["name"], "an empty identity reached downstream"
    orjson.dumps(record)  # always serializable


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=st.lists(CHUNK, max_size=6), done=st.booleans(), strict=st.booleans())
def test_any_shape_of_chunks_gives_a_record(chunks: list[Any], done: bool, strict: bool) -> None:
    body = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks)
    body += b"data: [DONE]\n\n" if done else b""
    check(assemble(body, Options(strict=strict, declared_tools=frozenset({"get_weather"}))))


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=400))
def test_any_bytes_give_a_record(body: bytes) -> None:
    check(assemble(body))
    check(assemble(b"data: " + body + b"\n\ndata: [DONE]\n\n"))


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 64), pieces=st.integers(1, 50))
def test_hostile_sizes_are_bounded(size: int, pieces: int) -> None:
    limits = Limits(max_response_bytes=2048, max_line_bytes=512, max_arguments_bytes=256,
                    max_calls=4, max_choices=2)
    call = {"index": 0, "id": "c", "function": {"name": "n", "arguments": "x" * size}}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
    body = b"".join(b"data: " + orjson.dumps(chunk) + b"\n\n" for _ in range(pieces))
    record = assemble(body + b"data: [DONE]\n\n", Options(limits=limits))
    check(record)
    if len(body) > 2048 or size * pieces > 256:
        assert record["reason"] == "oversize"
