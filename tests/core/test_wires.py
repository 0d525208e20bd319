"""The wire registry, and the decision under each wire's own finish policy.

A wire is chosen by name and an unknown name is refused with the valid ones; ``auto`` is the
only wire while there is one. The decision applies the policy of the assembler's wire: another
policy (a tiny wire defined here) gives another decision on the same stream, and a toy wire
built only on the assembler's wire-neutral methods gets the same identity rule and bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import pytest

from tests.core.sse import body, call, chunk
from toolwire.core import Assembler, Limits, Options, assemble, decide, new_assembler
from toolwire.core.framing import Framer
from toolwire.core.identity import ABSENT
from toolwire.core.wires import (
    AUTO,
    DEFAULT_WIRE,
    SUPPORTED_WIRES,
    FinishPolicy,
    UnknownWire,
    Wire,
    resolve_wire,
    wire_named,
)
from toolwire.core.wires.chat_completions import ChatCompletions

#: The registered wires as an error message lists them.
VALID = ", ".join(repr(name) for name in SUPPORTED_WIRES)


def test_the_registry_names_every_wire() -> None:
    assert list(SUPPORTED_WIRES) == [
        "openai-chat", "anthropic-messages", "openai-responses", "gemini", "ollama-chat",
        "bedrock-converse", "bedrock-invoke"]
    assert DEFAULT_WIRE == "openai-chat"
    assert SUPPORTED_WIRES["openai-chat"] is ChatCompletions
    assert isinstance(wire_named("openai-chat"), ChatCompletions)
    assert wire_named("openai-chat") is not wire_named("openai-chat")  # one per response


@pytest.mark.parametrize("name", ["openai-realtime", "", "OPENAI-CHAT", 7])
def test_an_unknown_wire_name_is_refused_with_the_valid_ones(name: object) -> None:
    with pytest.raises(UnknownWire, match=f"expected one of {VALID}") as raised:
        wire_named(name)  # type: ignore[arg-type]
    assert isinstance(raised.value, ValueError)
    assert raised.value.valid == list(SUPPORTED_WIRES)
    refusals: list[Callable[[Any], object]] = [
        resolve_wire, lambda n: Options(wire=n), lambda n: new_assembler(Options(wire=n))]
    for refuse in refusals:
        with pytest.raises(UnknownWire, match=f"{VALID}, 'auto'"):
            refuse(name)


def test_auto_hands_the_body_to_the_wire_its_first_event_names() -> None:
    assert AUTO == "auto"
    asm = new_assembler(Options(wire="auto"))
    assert asm.wire.name == "auto"
    asm.feed(body(chunk(content="hi")))
    assert isinstance(asm.wire, ChatCompletions)
    stream = body(chunk(call(0, "call_1", "f", "{}"), finish="tool_calls"))
    assert assemble(stream, Options(wire="auto")) == assemble(stream)


def test_the_default_assembler_reads_chat_completions() -> None:
    assert isinstance(new_assembler().wire, ChatCompletions)


class LengthRuns(ChatCompletions):
    """Chat Completions under another policy: ``length`` may run, ``stop`` is a truncation,
    and another finish's code is lower-case."""

    __slots__ = ()

    name = "test-length-runs"
    policy = replace(ChatCompletions.policy,
                     finishes={"length": "tool_calls", "tool_calls": "tool_calls",
                               "stop": "length"},
                     error_code=str.lower, missing_end="no end marker")


def _decided(stream: bytes, wire: Wire) -> dict[str, object]:
    asm = Assembler(wire)
    asm.feed(stream)
    return dict(decide(asm))


def test_decide_applies_the_policy_of_the_assemblers_wire() -> None:
    cut = body(chunk(call(0, "call_1", "f", '{"a":1}')), chunk(finish="length"))
    chat, other = _decided(cut, ChatCompletions()), _decided(cut, LengthRuns())
    assert (chat["truncated"], len(chat["tool_calls"]), chat["error_code"]) == (  # type: ignore
        True, 0, None)
    assert (other["truncated"], len(other["tool_calls"]), other["error_code"]) == (  # type: ignore
        False, 1, None)

    stopped = body(chunk(call(0, "call_1", "f", "{}")), chunk(finish="stop"))
    assert _decided(stopped, ChatCompletions())["truncated"] is False
    assert _decided(stopped, LengthRuns())["truncated"] is True

    filtered = body(chunk(call(0, "call_1", "f", "{}")), chunk(finish="content_filter"))
    assert _decided(filtered, ChatCompletions())["error_code"] == "CONTENT_FILTER"
    assert _decided(filtered, LengthRuns())["error_code"] == "content_filter"

    unended = body(chunk(content="hi"), done=False)
    assert _decided(unended, LengthRuns())["detail"] == "no end marker"
    assert _decided(unended, ChatCompletions())["detail"] == (
        "the body ended without data: [DONE] (connection dropped or cut)")


class Lines(Wire):
    """A toy wire: each event is ``[id, name, arguments, finish]`` for call 0 of choice 0,
    and ``end`` ends the body. Everything else is the assembler's."""

    __slots__ = ()

    name = "test-lines"
    policy = FinishPolicy(finishes={"done": "stop", "cut": "length"},
                          missing_end="no end line")

    def apply(self, asm: Assembler, events: list[bytes]) -> None:
        for event in events:
            if event == b"end":
                asm.end_body()
                return
            offered_id, name, arguments, finish = orjson.loads(event)
            asm.events += 1
            choice = asm.choices.get(0) or asm.new_choice(0)
            asm.apply_call(event, 0, choice, 0, offered_id, ABSENT if name is None else name,
                           arguments)
            if finish:
                choice.finish_reason = finish

    def ends(self, last: bytes | None) -> bool:
        return last == b"end"


def _lines(*events: object, end: bool = True) -> bytes:
    out = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    return out + (b"data: end\n" if end else b"")


def test_a_toy_wire_gets_the_identity_rule_repairs_and_policy_from_the_core() -> None:
    record = _decided(_lines(["call_1", "f", '{"a":', None], ["", "", "1}", None],
                             [None, None, "", "done"]), Lines())
    assert record["outcome"] == "assembled"
    assert [(c["id"], c["name"], c["arguments"]) for c in record["tool_calls"]] == [  # type: ignore
        ("call_1", "f", '{"a":1}')]
    assert record["repairs"]["empty_identity_ignored"] == 2  # type: ignore[index]
    assert record["repairs"]["null_identity_ignored"] == 1  # type: ignore[index]
    cut = _decided(_lines(["call_1", "f", '{"a":', "cut"]), Lines())
    assert (cut["truncated"], cut["tool_calls"]) == (True, [])
    assert _decided(_lines(["call_1", "f", "{}", "done"], end=False), Lines())["detail"] == (
        "no end line")


def test_a_toy_wire_is_bounded_by_the_core() -> None:
    asm = Assembler(Lines(), Limits(max_arguments_bytes=4))
    asm.feed(_lines(["call_1", "f", "12345", "done"]))
    assert asm.failure is not None and asm.failure.reason == "oversize"


def test_the_record_names_its_wire_and_its_unified_finish() -> None:
    """Every record says which wire it was read as and its finish unified over the wires,
    beside the verbatim finish_reason."""
    from toolwire.core import assemble

    stop = assemble(body(chunk(content="hi", finish="stop")))
    assert (stop["wire"], stop["finish_reason"], stop.get("finish")) == (
        "openai-chat", "stop", "stop")
    calls = assemble(body(chunk(call(0, "c1", "f", "{}"), finish="tool_calls")))
    assert calls.get("finish") == "tool_calls" and calls.get("server_tool_calls") == []
    no_reason = assemble(body(chunk(call(0, "c1", "f", "{}"))))
    assert no_reason["finish_reason"] is None and no_reason.get("finish") == "tool_calls"
    cut = assemble(body(chunk(call(0, "c1", "f", '{"a":'), finish="length")))
    assert cut.get("finish") == "length" and cut.get("truncated") is True
    odd = assemble(body(chunk(content="x", finish="insufficient_system_resource")))
    assert odd.get("finish") == "other"
    assert odd.get("error_code") == "INSUFFICIENT_SYSTEM_RESOURCE"
    letter = assemble(body(chunk(call(0, "", "", "{}"), finish="tool_calls")))
    assert letter["outcome"] == "dead_letter" and letter["wire"] == "openai-chat"


def test_a_policy_maps_each_reason_to_one_finish() -> None:
    policy = FinishPolicy(finishes={"completed": None, "max_output_tokens": "length"},
                          missing_end="-")
    assert policy.finish("completed", has_calls=True) == "tool_calls"
    assert policy.finish("completed", has_calls=False) == "stop"
    assert policy.finish("max_output_tokens", has_calls=True) == "length"
    assert policy.finish("something_new", has_calls=False) == "other"
    assert policy.finish(None, has_calls=False) == "stop"


@pytest.mark.parametrize(("first", "wire"), [
    (b'{"id":"x","object":"chat.completion.chunk","choices":[]}', "openai-chat"),
    (b'{"choices":[{"delta":{}}]}', "openai-chat"),
    (b'{"type":"message_start","message":{}}', "anthropic-messages"),
    (b'{"type":"ping"}', "anthropic-messages"),
    (b'{"type":"response.created","response":{}}', "openai-responses"),
    (b'{"candidates":[{"content":{"parts":[]}}]}', "gemini"),
    (b'{"promptFeedback":{"blockReason":"SAFETY"}}', "gemini"),
    (b'{"usageMetadata":{}}', "gemini"),
    (b'[DONE]', None),
    (b'{"type":"content_block_delta"}', None),
    (b'not json', None),
])
def test_auto_tells_the_wire_by_the_first_event(first: bytes, wire: str | None) -> None:
    from toolwire.core.wires._auto import Auto

    auto = Auto(SUPPORTED_WIRES, DEFAULT_WIRE)
    assert auto.chosen(first).name == (wire or DEFAULT_WIRE)
    # Each SSE wire says so itself, and no other SSE wire claims the same first event.
    claims = [w.name for w in SUPPORTED_WIRES.values() if w.framing is Framer
              and w.recognizes(first)]
    assert claims == ([] if wire is None else [wire])


#: A body of each wire that ends, and trailers a gateway sends after the end: the record's
#: ``frames_after_end`` counts the events among them (a comment is no event).
_ENDED: dict[str, tuple[bytes, bytes, int]] = {
    "openai-chat": (
        b'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
        b'"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        b'data: [DONE]\n\n: keep-alive\n\ndata: {"late":1}\n\n', 2),
    "anthropic-messages": (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"model":"claude","content":[],"usage":{"input_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
        b'"end_turn"}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
        b'data: [DONE]\n\n', 1),
    "openai-responses": (
        b'event: response.created\ndata: {"type":"response.created","sequence_number":0,'
        b'"response":{"id":"resp_1","model":"gpt-5","status":"in_progress","output":[]}}\n\n'
        b'event: response.completed\ndata: {"type":"response.completed","sequence_number":1,'
        b'"response":{"id":"resp_1","model":"gpt-5","status":"completed","output":[]}}\n\n',
        b'data: [DONE]\n\nevent: response.completed\ndata: {"type":"response.completed"}\n\n',
        2),
    "gemini": (
        b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}'
        b'\r\n\r\ndata: [DONE]\r\n\r\n', b'data: [DONE]\r\n\r\n', 1),
}


@pytest.mark.parametrize("wire", list(_ENDED))
def test_frames_after_the_end_are_counted_however_the_body_is_sliced(wire: str) -> None:
    ended, trailers, after = _ENDED[wire]
    alone = assemble(ended, Options(wire=wire))
    assert (alone["outcome"], alone["frames_after_end"]) == ("assembled", 0), alone
    body = ended + trailers
    for name in (wire, "auto"):
        whole = assemble(body, Options(wire=name))
        assert whole == {**alone, "frames_after_end": after, "bytes": len(body)}
        assert assemble([body[i:i + 1] for i in range(len(body))],
                        Options(wire=name)) == whole
        for cut in range(len(body) + 1):
            assert assemble([body[:cut], body[cut:]], Options(wire=name)) == whole, cut


def test_a_line_over_the_bound_after_the_end_ends_the_count_wherever_it_is_cut() -> None:
    ended, trailers, _ = _ENDED["openai-chat"]
    long = ended + trailers + b"data: " + b"x" * 300 + b"\n\ndata: [DONE]\n\n"
    options = Options(limits=Limits(max_line_bytes=200))
    whole = assemble(long, options)
    assert (whole["outcome"], whole["frames_after_end"]) == ("assembled", 2)
    for cut in range(len(ended) - 20, len(long) + 1):
        assert assemble([long[:cut], long[cut:]], options) == whole, cut
