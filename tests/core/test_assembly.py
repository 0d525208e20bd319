"""Assembly rules that the corpus shows in context, pinned here one by one."""

from __future__ import annotations

import pytest

from tests.core.sse import body, call, chunk
from toolwire.core import Limits, Options, assemble, new_assembler


def calls(record: dict[str, object]) -> list[tuple[object, ...]]:
    tool_calls = record["tool_calls"]
    assert isinstance(tool_calls, list)
    return [(c["index"], c["id"], c["name"], c["arguments"]) for c in tool_calls]


def test_ollama_index_reuse_starts_a_new_call_after_the_highest_index() -> None:
    record = assemble(body(
        chunk(call(0, "call_a", "read", '{"p":1}')),
        chunk(call(0, "call_b", "write", '{"q":2}')),
        chunk(call(0, "call_c", "list", "{}"), finish="tool_calls"),
    ))
    assert calls(record) == [(0, "call_a", "read", '{"p":1}'), (1, "call_b", "write", '{"q":2}'),
                             (2, "call_c", "list", "{}")]
    assert record["repairs"]["index_reuse_splits"] == 2  # type: ignore[index]
    assert record["repairs"]["identity_conflicts"] == 0  # type: ignore[index]


def test_a_later_wire_index_that_a_split_already_took_gets_a_fresh_index() -> None:
    record = assemble(body(
        chunk(call(0, "call_a", "read", "{}")),
        chunk(call(0, "call_b", "write", "{}")),  # split: becomes index 1
        chunk(call(1, "call_c", "list", "{}"), finish="tool_calls"),  # wire 1 is taken
    ))
    assert calls(record) == [(0, "call_a", "read", "{}"), (1, "call_b", "write", "{}"),
                             (2, "call_c", "list", "{}")]


def test_new_identity_before_any_arguments_is_a_conflict_not_a_split() -> None:
    record = assemble(body(
        chunk(call(0, "call_a", "read", "")),
        chunk(call(0, "call_b", "write", "{}"), finish="tool_calls"),
    ))
    assert calls(record) == [(0, "call_b", "write", "{}")]
    assert record["repairs"]["identity_conflicts"] == 2  # type: ignore[index]
    strict = assemble(body(
        chunk(call(0, "call_a", "read", "")),
        chunk(call(0, "call_b", "write", "{}"), finish="tool_calls"),
    ), Options(strict=True))
    assert (strict["outcome"], strict["reason"]) == ("dead_letter", "identity_conflict")


def test_missing_identity_dead_letters_the_whole_response_with_every_call() -> None:
    record = assemble(body(
        chunk(call(0, "call_a", "read", "{}"), call(1, arguments="{}")),
        chunk(finish="tool_calls"),
    ))
    assert record["outcome"] == "dead_letter"
    assert record["reason"] == "missing_identity"
    assert [(c["index"], c["missing"]) for c in record["calls"]] == [(0, []), (1, ["id", "name"])]
    assert "tool_calls" not in record  # never half a tool turn


def test_truncation_is_reported_not_failed_even_without_identity() -> None:
    record = assemble(body(chunk(call(0, arguments='{"a":')), chunk(finish="length")))
    assert record["outcome"] == "assembled"
    assert (record["truncated"], record["error_code"], record["retryable"]) == (True, None, False)
    assert record["tool_calls"] == []
    assert record["withheld_tool_calls"][0]["arguments"] == '{"a":'


def test_provider_error_finish_is_an_error_code_with_calls_withheld() -> None:
    record = assemble(body(chunk(call(0, "c", "n", "{}")), chunk(finish="content_filter")))
    assert (record["error_code"], record["retryable"], record["truncated"]) == (
        "CONTENT_FILTER", False, False)
    assert record["tool_calls"] == [] and len(record["withheld_tool_calls"]) == 1


def test_empty_response_is_the_only_retryable_case() -> None:
    record = assemble(body(chunk(finish="stop")))
    assert (record["error_code"], record["retryable"]) == ("EMPTY_RESPONSE", True)


def test_usage_keeps_the_last_non_null_object() -> None:
    record = assemble(body(
        chunk(content="hi", finish="stop", usage={"total_tokens": 1}),
        {"id": "x", "choices": [], "usage": {"total_tokens": 2}},
        {"id": "x", "choices": [], "usage": None},
    ))
    assert record["usage"] == {"total_tokens": 2}


@pytest.mark.parametrize(("payload", "why"), [
    (b"not json", "not JSON"),
    (b"[1,2]", "not a JSON object"),
    (b'{"choices":"x"}', "'choices' is not a list"),
    (b'{"choices":{"a":1}}', "'choices' is not a list"),
    (b'{"choices":[1]}', "a choice is not an object"),
    (b'{"choices":[{"delta":[1]}]}', "'delta' is not an object"),
    (b'{"choices":[{"delta":{"tool_calls":{"index":0}}}]}', "'tool_calls' is not a list"),
    (b'{"choices":[{"delta":{"tool_calls":7}}]}', "'tool_calls' is not a list"),
    (b'{"choices":[{"delta":{"tool_calls":["x"]}}]}', "a tool call is not an object"),
    (b'{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}', "'index' is not a non-negative"),
    (b'{"choices":[{"delta":{"tool_calls":[{"index":true}]}}]}', "'index' is not a non-negative"),
    (b'{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}', "'index' is not a non-negative"),
    (b'{"choices":[{"delta":{"tool_calls":[{"function":"f"}]}}]}', "'function' is not an object"),
    (b'{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"a":1}}}]}}]}',
     "'function.arguments' is not a string"),
    (b'{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":0}}]}}]}',
     "'function.arguments' is not a string"),
    (b'{"choices":[],"usage":5}', "'usage' is not an object"),
    (b'{"choices":[{"index":"a"}]}', "a choice 'index' is not a non-negative integer"),
    (b'\xff\xfe{}', "not JSON"),
])
def test_malformed_chunks_are_dead_lettered_with_the_reason(payload: bytes, why: str) -> None:
    record = assemble(body(chunk(content="ok"), payload, chunk(finish="stop")))
    assert (record["outcome"], record["reason"]) == ("dead_letter", "malformed_chunk")
    assert why in record["detail"]


def test_malformed_detail_quotes_at_most_200_bytes() -> None:
    record = assemble(body(b"x" * 5000))
    assert record["reason"] == "malformed_chunk"
    assert record["detail"].rsplit(": ", 1)[1] == "x" * 200 + "…"


@pytest.mark.parametrize(("limits", "stream"), [
    (Limits(max_calls=2), body(chunk(call(0, "a", "n"), call(1, "b", "n"), call(2, "c", "n")))),
    (Limits(max_arguments_bytes=10), body(*[chunk(call(0, "a", "n", "xxxx")) for _ in range(3)])),
    (Limits(max_response_bytes=100), body(*[chunk(content="x" * 50) for _ in range(3)])),
    (Limits(max_line_bytes=100), b"data: " + b"x" * 200),
    (Limits(max_choices=1), body(chunk(content="a", choice=0), chunk(content="b", choice=1))),
])
def test_limits_dead_letter_as_oversize(limits: Limits, stream: bytes) -> None:
    record = assemble(stream, Options(limits=limits))
    assert (record["outcome"], record["reason"]) == ("dead_letter", "oversize")


def test_input_after_a_dead_letter_is_counted_but_not_applied() -> None:
    asm = new_assembler()
    asm.feed(body(b"oops", done=False))
    asm.feed(body(chunk(content="later"), done=False))
    assert asm.failure is not None and asm.events == 0
    assert asm.body_bytes == len(body(b"oops", done=False)) + len(body(chunk(content="later"),
                                                                       done=False))


def test_arguments_are_never_decoded_per_fragment_and_concatenate_verbatim() -> None:
    fragments = ['{"q": "', "caf", "é \\u00e9", ' \\"x\\"', '"}']
    record = assemble(body(chunk(call(0, "c", "search", fragments[0])),
                           *[chunk(call(0, arguments=f)) for f in fragments[1:]],
                           chunk(call(0, arguments=None), finish="tool_calls")))
    assert record["tool_calls"][0]["arguments"] == "".join(fragments)
    assert record["tool_calls"][0]["arguments_json"] is True
