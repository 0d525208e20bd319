"""Chat Completions as other providers send it: the end without ``[DONE]``, reasoning under
OpenRouter's name, and ``reasoning_details`` (the rules the corpus captures show, here at
their edges: hostile shapes, bounds, order and the end of a body)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.core.sse import body, call, chunk
from toolwire.core import Limits, Options, assemble, decide, new_assembler
from toolwire.core.wires import SUPPORTED_WIRES
from toolwire.core.wires.chat_completions import ChatCompletions

ENDING = Options(end_without_done=True)


def delta_chunk(delta: dict[str, Any], finish: str | None = None,
                index: int = 0) -> dict[str, Any]:
    return {"id": "gen-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def details(*entries: Any) -> dict[str, Any]:
    return delta_chunk({"reasoning_details": list(entries)})


def text(piece: Any, index: int = 0, **fields: Any) -> dict[str, Any]:
    return {"type": "reasoning.text", "text": piece, "index": index, **fields}


# -- the end without [DONE] ------------------------------------------------------------------


def test_a_finished_body_without_done_is_complete_only_with_the_option() -> None:
    finished = body(chunk(call(0, "call_1", "f", "{}")), chunk(finish="tool_calls"), done=False)
    assert assemble(finished)["reason"] == "stream_closed"
    record = assemble(finished, ENDING)
    assert record["outcome"] == "assembled"
    assert record["repairs"]["ended_without_done"] == 1
    # With [DONE] nothing is repaired, option or not.
    assert assemble(finished + b"data: [DONE]\n\n", ENDING)["repairs"]["ended_without_done"] == 0


@pytest.mark.parametrize(("name", "data"), [
    ("no event at all", b""),
    ("only comments", b": OPENROUTER PROCESSING\n\n"),
    ("a usage chunk and no choice", body({"id": "x", "choices": [], "usage": {"a": 1}},
                                         done=False)),
    ("one of two choices finished", body(chunk(content="a", finish="stop", choice=0),
                                         chunk(content="b", choice=1), done=False)),
    ("the finish chunk left unterminated",
     body(chunk(content="a", finish="stop"), done=False)[:-2]),
    ("a whole finish chunk, then half an event",
     body(chunk(content="a", finish="stop"), done=False) + b'data: {"id":'),
])
def test_a_body_that_did_not_finish_stays_stream_closed_with_the_option(
        name: str, data: bytes) -> None:
    record = assemble(data, ENDING)
    assert record.get("reason") == "stream_closed", name
    assert "TOOLWIRE_END_WITHOUT_DONE" not in record.get("detail", ""), name


def test_every_choice_must_finish_and_the_hint_says_so_without_the_option() -> None:
    two = body(chunk(content="a", finish="stop", choice=0),
               chunk(content="b", finish="length", choice=1), done=False)
    letter = assemble(two)
    assert "every choice had sent its finish reason" in letter["detail"]
    record = assemble(two, ENDING)
    assert record["outcome"] == "assembled" and record["truncated"] is True
    # Cut before choice 1 finished: no hint (the body is plainly cut).
    cut = body(chunk(content="a", finish="stop", choice=0), chunk(content="b", choice=1),
               done=False)
    assert "every choice" not in assemble(cut)["detail"]


def test_the_end_is_decided_once_and_asking_again_gives_the_same_record() -> None:
    data = body(details({"type": "reasoning.encrypted", "data": "sig", "id": "c1",
                         "index": 0}),
                chunk(call(0, "c1", "f", "{}")), chunk(finish="tool_calls"), done=False)
    asm = new_assembler(ENDING)
    asm.feed(data)
    first = decide(asm, ENDING)
    assert decide(asm, ENDING) == first
    assert first["repairs"]["ended_without_done"] == 1
    assert first["tool_calls"][0]["provider_fields"] == {
        "reasoning_details": [{"type": "reasoning.encrypted", "data": "sig", "id": "c1",
                               "index": 0}]}


def test_only_the_chat_wire_tells_a_finished_body_without_its_end() -> None:
    """The other wires define no such end: for them the option changes nothing."""
    finished = new_assembler()
    finished.feed(body(chunk(content="a", finish="stop"), done=False))
    assert ChatCompletions().finished(new_assembler()) is False  # no choice began
    assert ChatCompletions().finished(finished) is True
    others = [wire() for name, wire in SUPPORTED_WIRES.items() if name != ChatCompletions.name]
    assert others and [w.finished(finished) for w in others] == [False] * len(others)


# -- reasoning under another name -------------------------------------------------------------


@pytest.mark.parametrize(("delta", "reasoning"), [
    ({"reasoning": "r"}, "r"),
    ({"reasoning_content": "c", "reasoning": "r"}, "c"),
    ({"reasoning_content": None, "reasoning": "r"}, "r"),
    ({"reasoning_content": "", "reasoning": "r"}, None),
    ({"reasoning": 7}, None),
    ({"reasoning": {"text": "r"}}, None),
])
def test_one_reasoning_text_per_delta(delta: dict[str, Any], reasoning: str | None) -> None:
    record = assemble(body(delta_chunk({"content": "x", **delta}, "stop")))
    assert record["reasoning"] == reasoning


# -- reasoning_details --------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "why"), [
    ("text", "'reasoning_details' is not a list"),
    ({"type": "reasoning.text"}, "'reasoning_details' is not a list"),
    (["text"], "a 'reasoning_details' entry is not an object"),
    ([None], "a 'reasoning_details' entry is not an object"),
])
def test_a_malformed_reasoning_details_is_a_malformed_chunk(value: Any, why: str) -> None:
    record = assemble(body(delta_chunk({"reasoning_details": value}, "stop")))
    assert (record.get("reason"), why in record.get("detail", "")) == (
        "malformed_chunk", True)


def test_a_value_nested_too_deeply_to_carry_is_a_malformed_chunk() -> None:
    deep = b"[" * 300 + b"]" * 300
    data = (b'data: {"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"x",'
            b'"index":0,"data":' + deep + b"}]}}]}\n\ndata: [DONE]\n\n")
    record = assemble(data)
    assert record.get("reason") == "malformed_chunk"
    assert "nested too deeply" in record.get("detail", "")


def test_pieces_merge_by_type_and_index_and_blanks_never_erase() -> None:
    data = body(
        details(text("", signature="", format="f1"), text("A", index=1)),
        details(text("b", signature=None, format="other"), {"type": "reasoning.summary",
                                                            "summary": "S", "index": 0}),
        details(text(None), text(7), {"type": "reasoning.text", "signature": "sig",
                                      "index": 0}),
        details({"type": "reasoning.summary", "summary": "T", "index": 0, "extra": None}),
        details({"type": "reasoning.summary", "summary": "U", "index": 0, "extra": "e"}),
        details({"data": "no type, no index"}, {"type": 5, "index": "0", "data": "odd"}),
        delta_chunk({}, "stop"))
    got = assemble(data)["choices"][0]["reasoning_details"]
    assert got == [
        {"type": "reasoning.text", "text": "b", "index": 0, "signature": "sig", "format": "f1"},
        {"type": "reasoning.text", "text": "A", "index": 1},
        {"type": "reasoning.summary", "summary": "STU", "index": 0, "extra": "e"},
        # An entry without a usable type or index is keyed by what it has: both fall together.
        {"data": "no type, no index", "type": 5, "index": "0"},
    ]


def test_the_bound_counts_fields_but_not_the_text() -> None:
    limits = Limits(max_provider_fields_bytes=200)
    options = Options(limits=limits)
    long_text = body(*[details(text("x" * 100)) for _ in range(50)], delta_chunk({}, "stop"))
    record = assemble(long_text, options)
    assert record["outcome"] == "assembled"
    assert len(record["choices"][0]["reasoning_details"][0]["text"]) == 5000
    # Blank repeats hold one place each: they do not grow the count.
    blanks = body(*[details(text("", signature=None, data="")) for _ in range(200)],
                  delta_chunk({}, "stop"))
    assert assemble(blanks, options)["outcome"] == "assembled"
    # Many entries (or a large field) do.
    many = body(*[details(text("", index=i)) for i in range(20)], delta_chunk({}, "stop"))
    letter = assemble(many, options)
    assert (letter.get("reason"), letter.get("detail")) == (
        "oversize", "choice 0 has more than 200 bytes of reasoning_details (their text aside)")


def test_an_entry_joins_the_call_it_names_within_the_call_bound() -> None:
    signature = {"type": "reasoning.encrypted", "data": "s" * 150, "id": "c1", "index": 0}
    data = body(chunk(call(0, "c1", "f", "{}")), details(signature), chunk(finish="tool_calls"))
    fits = assemble(data, Options(limits=Limits(max_provider_fields_bytes=400)))
    assert fits["tool_calls"][0]["provider_fields"] == {
        "reasoning_details": [signature]}
    # The call's own bound: the entry fits the choice's (its id aside, as much) but with the
    # call's other provider field it does not.
    extra = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"},
             "extra_content": {"google": {"thought_signature": "t" * 150}}}
    data = body(delta_chunk({"tool_calls": [extra]}), details(signature),
                chunk(finish="tool_calls"))
    letter = assemble(data, Options(limits=Limits(max_provider_fields_bytes=300)))
    assert letter.get("reason") == "oversize"
    assert "provider fields" in letter.get("detail", "")
    assert orjson.dumps(letter)  # the dead letter can be written out


def test_an_entry_naming_no_call_stays_on_the_choice_only() -> None:
    stray = {"type": "reasoning.encrypted", "data": "s", "id": "other", "index": 0}
    data = body(details(stray), chunk(call(0, "c1", "f", "{}")), chunk(finish="tool_calls"))
    record = assemble(data)
    assert "provider_fields" not in record["tool_calls"][0]
    assert record["choices"][0]["reasoning_details"] == [stray]


def test_an_entry_joins_the_call_of_its_own_choice_only() -> None:
    signature = {"type": "reasoning.encrypted", "data": "s", "id": "c1", "index": 0}
    data = body(delta_chunk({"reasoning_details": [signature]}, index=1),
                chunk(call(0, "c1", "f", "{}"), finish="tool_calls", choice=0),
                delta_chunk({"content": "x"}, "stop", index=1))
    record = assemble(data)
    assert "provider_fields" not in record["tool_calls"][0]
    assert record["choices"][1]["reasoning_details"] == [signature]
    assert "reasoning_details" not in record["choices"][0]
