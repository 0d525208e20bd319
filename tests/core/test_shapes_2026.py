"""The 2026 Chat Completions rules below the corpus: the pieces each rule rests on.

The corpus (``tests/core/corpus_wires/openai-chat``) proves each rule on whole captures; these
tests pin the parts a capture cannot reach: the completeness scan against a real JSON parser for
every cut, the provider-error reading and the bounds of provider fields.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core import Limits, Options, Provenance, assemble
from toolwire.core.completeness import Completeness
from toolwire.core.decide import SYNTHESIZED_PREFIX, synthesized_id
from toolwire.core.framing import Framer, NamedEvent, event_name
from toolwire.core.wires.chat_completions import provider_error, provider_error_event

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\{}[]:, \n\u00e9'),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet='k"\\{}', max_size=3), inner, max_size=4),
    max_leaves=12)


def _parses(text: str) -> bool:
    """The oracle: the standard library's parser, not the one the scan confirms with."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(value=JSON_VALUES, extra=st.sampled_from(["", " ", "}", "{}", ",1", "\\"]),
       cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_completeness_agrees_with_a_parser_at_every_cut(value: object, extra: str,
                                                         cuts: list[int]) -> None:
    text = json.dumps(value, ensure_ascii=False) + extra
    points = sorted({min(c, len(text)) for c in cuts} | {len(text)})
    scan = Completeness()
    for point in points:
        prefix = text[:point]
        # Scalars past the parse limit are answered "not complete" without parsing: tool
        # arguments are objects, and such a value never starts a split.
        if prefix.lstrip()[:1] not in ("{", "[") and len(prefix) > 256:
            continue
        assert scan.complete(prefix) == _parses(prefix), prefix


def test_completeness_scans_each_character_once() -> None:
    """A stream that asks on every one-character fragment (LM Studio) stays linear."""
    scan = Completeness()
    text = '{"content": "' + "x" * 50_000
    for end in range(len(text) - 2000, len(text)):
        assert not scan.complete(text[:end])
    assert scan.complete(text + '"}')


def _body(*payloads: object, done: bool = True, raw: bytes = b"") -> bytes:
    out = b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads) + raw
    return out + (b"data: [DONE]\n\n" if done else b"")


def _chunk(*entries: dict[str, Any], finish: str | None = None, **delta: object
           ) -> dict[str, Any]:
    d: dict[str, object] = dict(delta)
    if entries:
        d["tool_calls"] = list(entries)
    return {"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def test_the_error_event_name_is_kept_across_slices() -> None:
    framer = Framer(1 << 20)
    assert framer.feed(b"event: err") == []
    assert framer.feed(b"or\n") == []
    events = framer.feed(b'data: {"error":{}}\n\ndata: {"a":1}\n\n')
    assert [type(e) for e in events] == [NamedEvent, bytes]
    assert [event_name(e) for e in events] == ["error", None]


@pytest.mark.parametrize(("error", "code", "retryable"), [
    ({"code": "tool_use_failed", "type": "invalid_request_error"}, "TOOL_USE_FAILED", False),
    ({"code": 400, "message": "Token limit reached"}, "PROVIDER_ERROR", False),
    ({"code": 429, "message": "slow down"}, "PROVIDER_ERROR", True),
    ({"code": 503}, "PROVIDER_ERROR", True),
    ({"type": "overloaded_error"}, "OVERLOADED_ERROR", True),
    ({"code": "rate_limit_exceeded"}, "RATE_LIMIT_EXCEEDED", True),
    ({"status": 502, "code": ""}, "PROVIDER_ERROR", True),
    ("upstream exploded", "PROVIDER_ERROR", False),
])
def test_provider_error_codes_and_retries(error: object, code: str, retryable: bool) -> None:
    read = provider_error(error)
    assert (read.code, read.retryable) == (code, retryable)


def test_an_error_event_as_the_framer_marks_it_is_read_as_json() -> None:
    read = provider_error_event(NamedEvent(b'{"error":{"code":"tool_use_failed"}}', "error"))
    assert read.code == "TOOL_USE_FAILED"


def test_an_error_event_that_is_not_json_keeps_its_text() -> None:
    read = provider_error_event(b"upstream timed out")
    assert (read.code, read.message, read.retryable) == ("PROVIDER_ERROR",
                                                         "upstream timed out", False)


def test_a_long_error_message_is_cut() -> None:
    record = assemble(_body({"error": {"message": "x" * 5000}}, done=False))
    assert record["outcome"] == "assembled"
    assert record["error_message"] == "x" * 1000


def test_provider_fields_over_their_bound_are_oversize() -> None:
    opening = {"index": 0, "id": "call_1", "type": "function",
               "function": {"name": "f", "arguments": "{}"},
               "extra_content": {"google": {"thought_signature": "s" * 2000}}}
    limits = Limits(max_provider_fields_bytes=1000)
    record = assemble(_body(_chunk(opening, finish="tool_calls")), Options(limits=limits))
    assert record["outcome"] == "dead_letter"
    assert record["reason"] == "oversize"
    assert "provider fields" in record["detail"]


def test_provider_fields_nested_too_deeply_to_write_are_malformed() -> None:
    deep = b"[" * 300 + b"]" * 300  # orjson reads this deep but writes at most 254 levels
    entry = (b'{"index":0,"id":"call_1","function":{"name":"f","arguments":"{}"},'
             b'"provider_specific_fields":' + deep + b"}")
    body = (b'data: {"choices":[{"index":0,"delta":{"tool_calls":[' + entry + b"]}}]}\n\n"
            b"data: [DONE]\n\n")
    record = assemble(body)
    assert record["outcome"] == "dead_letter"
    assert record["reason"] == "malformed_chunk"
    assert "'provider_specific_fields' is nested too deeply" in record["detail"]


def test_a_later_null_provider_field_never_erases_it() -> None:
    first = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{"},
             "extra_content": {"sig": "a"}}
    later = {"index": 0, "function": {"arguments": "}"}, "extra_content": None}
    record = assemble(_body(_chunk(first), _chunk(later, finish="tool_calls")))
    assert record["outcome"] == "assembled"
    assert record["tool_calls"][0]["provider_fields"] == {"extra_content": {"sig": "a"}}


def test_a_synthesized_id_depends_on_request_choice_and_index_only() -> None:
    ids = {synthesized_id(seed, c, i) for seed in ("r1", "r2") for c in (0, 1) for i in (0, 1)}
    assert len(ids) == 8
    assert all(i.startswith(SYNTHESIZED_PREFIX) and len(i) == len(SYNTHESIZED_PREFIX) + 24
               for i in ids)
    assert synthesized_id("r1", 0, 0) == synthesized_id("r1", 0, 0)


def test_the_pipeline_seed_is_the_request_id_not_the_response_id() -> None:
    body = _body(_chunk({"index": 0, "function": {"name": "f", "arguments": "{}"}},
                        finish="tool_calls"))
    options = Options(synthesize_ids=True)
    offline = assemble(body, options)
    piped = assemble(body, options, Provenance(request_id="req-7"))
    assert offline["outcome"] == piped["outcome"] == "assembled"
    assert offline["tool_calls"][0]["id"] == synthesized_id("chatcmpl-t", 0, 0)
    assert piped["tool_calls"][0]["id"] == synthesized_id("req-7", 0, 0)


def test_synthesis_off_leaves_an_id_less_call_a_dead_letter() -> None:
    body = _body(_chunk({"index": 0, "function": {"name": "f", "arguments": "{}"}},
                        finish="tool_calls"))
    record = assemble(body)
    assert record["outcome"] == "dead_letter"
    assert record["reason"] == "missing_identity"
    assert record["calls"][0]["missing"] == ["id"]
