"""The SSE framer: events from arbitrary byte slices, per the SSE rules the providers use.

The framer has no end sentinel: ``[DONE]`` is data to it. Most tests here frame a Chat
Completions body as the assembler reads it, the framer's events up to the end the chat wire
sees (``frame``); the tests at the end hold the framer alone to having no end of its own.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core import Limits, Options, assemble, new_assembler
from toolwire.core.errors import MalformedChunk, Oversize
from toolwire.core.framing import BOM, Framer, LineOversize, NamedEvent, event_name
from toolwire.core.wires._shared import DONE
from toolwire.core.wires.chat_completions import ChatCompletions


def frame(*slices: bytes, limit: int = 1 << 20) -> tuple[list[bytes], bool]:
    """The events of a chat body before its end, and whether it ended explicitly: the chat
    wire ends on a ``[DONE]`` event (the rest is not read) or on one left unterminated."""
    framer = Framer(limit)
    events: list[bytes] = []
    for piece in slices:
        for event in framer.feed(piece):
            if event == DONE:
                framer.close()
                return events, True
            events.append(event)
    return events, ChatCompletions().ends(framer.finish())


def bytewise(body: bytes) -> list[bytes]:
    return [body[i:i + 1] for i in range(len(body))]


def test_lf_events_and_done() -> None:
    body = b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'
    assert frame(body) == ([b'{"a":1}', b'{"b":2}'], True)
    assert frame(*bytewise(body)) == ([b'{"a":1}', b'{"b":2}'], True)


@pytest.mark.parametrize("eol", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_ends_even_split_between_cr_and_lf(eol: bytes) -> None:
    body = b'data: {"a":1}' + eol + eol + b"data: [DONE]" + eol + eol
    assert frame(body) == ([b'{"a":1}'], True)
    assert frame(*bytewise(body)) == ([b'{"a":1}'], True)
    cut = body.index(eol) + 1  # a slice ends right after "\r"
    assert frame(body[:cut], body[cut:]) == ([b'{"a":1}'], True)


def test_cr_at_end_of_slice_then_new_line_is_one_line_end_not_two() -> None:
    # "\r" then "\n" in the next slice is one CRLF: the event must not end early.
    events, _ = frame(b"data: a\r", b"\ndata: b\r\n\r\n")
    assert events == [b"a\nb"]


def test_comments_fields_and_multiline_data() -> None:
    body = (b": keep-alive\n\nevent: message\nid: 7\nretry: 1000\ndata: {\"x\":\ndata: 1}\n\n"
            b"data:no-space\n\ndata: [DONE]\n\n")
    assert frame(body) == ([b'{"x":\n1}', b"no-space"], True)


def test_bom_is_ignored_even_when_split() -> None:
    body = b"\xef\xbb\xbfdata: x\n\ndata: [DONE]\n\n"
    assert frame(body) == ([b"x"], True)
    assert frame(*bytewise(body)) == ([b"x"], True)


def test_split_inside_a_multibyte_character_is_rejoined_before_decoding() -> None:
    body = 'data: {"t":"東京🌧"}\n\n'.encode()
    cut = body.index("京".encode()) + 1
    events, _ = frame(body[:cut], body[cut:])
    assert events[0].decode() == '{"t":"東京🌧"}'


def test_bytes_after_done_are_ignored() -> None:
    assert frame(b"data: [DONE]\n\ndata: x\n\n") == ([], True)


def test_done_without_closing_blank_line_still_ends_the_stream() -> None:
    assert frame(b"data: a\n\ndata: [DONE]\n") == ([b"a"], True)
    assert frame(b"data: a\n\ndata: [DONE]") == ([b"a"], True)


def test_body_cut_mid_event_is_not_done_and_not_dispatched() -> None:
    assert frame(b'data: a\n\ndata: {"cut') == ([b"a"], False)


def test_an_overlong_line_is_oversize_even_in_small_slices() -> None:
    framer = Framer(64)
    with pytest.raises(Oversize):
        for _ in range(100):
            framer.feed(b"data: xxxxxxxx")


def test_a_line_cut_between_slices_is_joined() -> None:
    framer = Framer(1 << 20)
    assert framer.feed(b"data: a\n\ndata: b") == [b"a"]
    assert framer.pending()
    assert framer.feed(b"c\n\ndata: [DONE]\n\n") == [b"bc", b"[DONE]"]
    assert not framer.pending()


# -- the framer alone: events and their names, no end of its own -------------------------------


def test_done_is_only_data_to_the_framer() -> None:
    framer = Framer(1 << 20)
    assert framer.feed(b"data: [DONE]\n\ndata: x\n\n") == [b"[DONE]", b"x"]
    assert not framer.closed
    assert framer.finish() is None  # nothing left unterminated
    assert framer.feed(b"data: y\n\n") == [b"y"]


def test_the_chat_wire_ends_on_done_and_reads_nothing_after_it() -> None:
    asm = new_assembler()
    asm.feed(b'data: {"choices":[]}\n\ndata: [DONE]\n\ndata: not json\n\n')
    assert asm.failure is None and asm.ended and asm.framer.closed
    assert asm.events == 1
    asm.feed(b"data: later\n\n")  # ignored too
    assert asm.failure is None and asm.end()


def test_finish_gives_the_unterminated_event_and_lets_the_wire_decide() -> None:
    framer = Framer(1 << 20)
    assert framer.feed(b"data: a\n\ndata: [DONE]") == [b"a"]
    assert framer.finish() == b"[DONE]"
    assert framer.finish() == b"[DONE]"  # asking again gives the same answer
    cut = Framer(1 << 20)
    cut.feed(b'event: error\ndata: {"cut')
    last = cut.finish()
    assert (last, event_name(last or b"")) == (b'{"cut', "error")
    assert Framer(1 << 20).finish() is None


def test_events_carry_their_names_and_unnamed_ones_are_plain_bytes() -> None:
    body = (b"event: response.created\ndata: 1\n\n"
            b"data: 2\n\n"
            b"event: message\ndata: 3\n\n"  # the SSE default type: no name
            b"event:\ndata: 4\n\n"
            b"event: error \n: a comment\ndata: 5\n\n"
            b"event: ignored\n\n"  # no data: not dispatched, and its name is not kept
            b"data: 6\n\n")
    for slices in ([body], [body[i:i + 1] for i in range(len(body))]):
        framer = Framer(1 << 20)
        events = [e for piece in slices for e in framer.feed(piece)]
        assert events == [b"1", b"2", b"3", b"4", b"5", b"6"]
        assert [event_name(e) for e in events] == ["response.created", None, None, None,
                                                    "error", None]
        assert [type(e) for e in events] == [NamedEvent, bytes, bytes, bytes, NamedEvent,
                                             bytes]


def test_an_overlong_line_carries_the_events_before_it() -> None:
    framer = Framer(64)
    with pytest.raises(LineOversize) as raised:
        framer.feed(b"data: a\n\ndata: [DONE]\n\ndata: " + b"x" * 100 + b"\n\n")
    assert raised.value.events == [b"a", b"[DONE]"]
    assert raised.value.reason == "oversize"


@pytest.mark.parametrize("tail", [b"\n\n", b""], ids=["terminated", "unterminated"])
def test_an_overlong_line_after_the_end_is_not_read_however_the_body_is_sliced(
        tail: bytes) -> None:
    body = (b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
            b"data: [DONE]\n\ndata: " + b"x" * 300 + tail)
    options = Options(limits=Limits(max_line_bytes=200))
    whole = assemble(body, options)
    assert whole["outcome"] == "assembled" and whole["content"] == "hi"
    assert assemble([body[i:i + 7] for i in range(0, len(body), 7)], options) == whole


def test_an_overlong_line_fails_the_response_after_the_events_before_it() -> None:
    """The events before it count in the dead letter wherever the slices were cut (the detail
    may say the line or the event's data: which bound is hit first depends on the cut)."""
    body = (b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: ' + b"x" * 300
            + b"\n\ndata: [DONE]\n\n")
    options = Options(limits=Limits(max_line_bytes=200))
    whole = assemble(body, options)
    assert whole["outcome"] == "dead_letter"
    assert (whole["reason"], whole["chunks"]) == ("oversize", 1)
    sliced = assemble([body[i:i + 7] for i in range(0, len(body), 7)], options)
    assert {**sliced, "detail": None} == {**whole, "detail": None}


def _json_body(*slices: bytes) -> tuple[str | None, int | None, str | None]:
    """How the framer took the body for JSON (its opening), at which slice it said so, why."""
    framer = Framer(1 << 20)
    for at, piece in enumerate(slices):
        try:
            framer.feed(piece)
        except MalformedChunk as raised:
            assert framer.json_body is not None and framer.closed
            assert framer.feed(b"data: x\n\n") == []  # nothing after it is read
            return framer.json_body, at, raised.detail
    assert framer.json_body is None
    return framer.json_body, None, None


@pytest.mark.parametrize(("body", "opening", "kind"), [
    (b'[{\n  "candidates": []\n}\n,\r\n{\n  "candidates": []\n}\n]', "[", "a JSON array"),
    (b'\xef\xbb\xbf \r\n\n\t{"error": {"code": 503, "status": "UNAVAILABLE"}}', "{",
     "a JSON object"),
    (b"[", "[", "a JSON array"),
], ids=["gemini-array", "bom-blank-lines-object", "one-byte"])
def test_a_json_body_is_told_at_its_first_non_blank_character_however_sliced(
        body: bytes, opening: str, kind: str) -> None:
    """A body whose first non-blank character is ``[`` or ``{`` is JSON, not SSE: told at the
    slice holding that character, with the same detail, however the body is sliced."""
    first = len(body) - len(body.removeprefix(BOM).lstrip(b" \t\r\n"))
    whole = _json_body(body)
    assert whole[:2] == (opening, 0)
    assert whole[2] is not None and whole[2].startswith(f"the body is not SSE ({kind}")
    for cut in range(len(body) + 1):
        assert _json_body(body[:cut], body[cut:]) == (opening, int(cut <= first), whole[2])
    assert _json_body(*bytewise(body)) == (opening, first, whole[2])


@pytest.mark.parametrize("body", [
    b'data: {"candidates": []}\n\n[{"not": "the first line"}]\n',
    b': keep-alive\n\n{"a": 1}\ndata: x\n\n',
    b'  data: [1]\n\n',  # a field named "  data": ignored, but not JSON
    b"\xef\xbb\xbf\r\n\r\n",
    b"",
], ids=["data-first", "comment-first", "indented-field", "bom-and-blank-only", "empty"])
def test_a_body_is_json_only_when_its_first_non_blank_character_says_so(body: bytes) -> None:
    assert _json_body(body) == (None, None, None)
    for cut in range(len(body) + 1):
        assert _json_body(body[:cut], body[cut:]) == (None, None, None)
    assert _json_body(*bytewise(body)) == (None, None, None)


def _spec_events(body: bytes, limit: int) -> list[tuple[bytes, str | None]] | str:
    """The events of a whole body read line by line as the SSE specification reads them:
    the reference the framer's fast path (whole pairs of lines at once) is held to; or
    ``"oversize"`` when a line, or an event's data lines together, pass ``limit`` bytes."""
    lines = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    lines.pop()  # the unterminated rest: not an event
    events: list[tuple[bytes, str | None]] = []
    data: list[bytes] = []
    name: str | None = None
    data_lines = 0  # the bytes of the event's data lines, field names included
    for line in lines:
        if not line:
            if data:
                events.append((b"\n".join(data), name))
            data, name, data_lines = [], None, 0
            continue
        field, colon, value = line.partition(b":")
        value = value[1:] if value[:1] == b" " else value
        if len(line) > limit:  # however it is sliced: a line still arriving is counted
            return "oversize"
        if field == b"data" and colon:
            data.append(value)
            data_lines += len(line)
            if data_lines > limit:
                return "oversize"
        elif field == b"event" and colon:
            name = None if value.strip() in (b"", b"message") else value.strip().decode()
    return events


_LINES = [b"data: {\"a\":1}", b"data: x", b"data:y", b"data: ", b"data:", b"", b"", b"",
          b"event: delta", b"event: message", b": ping", b"id: 7", b"retry: 10",
          b"data: " + b"z" * 40, b"x" * 45]
_ENDS = [b"\n", b"\n", b"\r\n", b"\r"]
#: A line with its end, drawn at once (a body of a hundred lines is drawn fast).
_LINE = st.sampled_from([line + end for line in _LINES for end in _ENDS])
#: The lines of a body: up to 30 (a few hundred bytes) or 32 to 90 (about 400 to 1,500 bytes),
#: half of the examples each (a list's size is drawn small, so long bodies need their own arm).
_BODY = st.one_of(st.lists(_LINE, max_size=30), st.lists(_LINE, min_size=32, max_size=90))


def _cuts(size: int) -> st.SearchStrategy[list[int]]:
    """1 to 40 offsets anywhere in a body of ``size`` bytes, both ends included, each drawn
    from the start (``k``: offset ``k``) or from the end (``-1 - k``: offset ``size - k``), since
    drawn integers lean towards 0: the tail is cut as often as the head."""
    offset = st.integers(-1 - size, size).map(lambda n: n if n >= 0 else size + 1 + n)
    return st.lists(offset, min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(_BODY, st.sampled_from([1 << 20, 44, 46, 60]), st.booleans(), st.data())
def test_the_events_are_the_spec_s_however_the_body_is_sliced(
        lines: list[bytes], limit: int, names: bool, data: st.DataObject) -> None:
    """Whatever the slicing (anywhere in the body, however long), the line ends, the bound,
    and whether names are kept: without them, the same events as plain data (``bytes`` itself,
    no name)."""
    body = b"data: first\n" + b"".join(lines)
    points = sorted(set(data.draw(_cuts(len(body)), label="cuts")))
    framer = Framer(limit, names=names)
    got: list[tuple[bytes, str | None]] | str = []
    try:
        for start, stop in zip([0, *points], [*points, len(body)], strict=True):
            events = framer.feed(body[start:stop])
            assert names or all(type(event) is bytes for event in events)
            got += [(bytes(e), event_name(e)) for e in events]
    except LineOversize:
        got = "oversize"
    expected = _spec_events(body, limit)
    if not names and expected != "oversize":
        expected = [(payload, None) for payload, _ in expected]
    assert got == expected
