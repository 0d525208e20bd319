"""The SSE framer: events from arbitrary byte slices, per the SSE rules the providers use."""

from __future__ import annotations

import pytest

from toolwire.core.errors import Oversize
from toolwire.core.framing import Framer


def frame(*slices: bytes, limit: int = 1 << 20) -> tuple[list[bytes], bool]:
    framer = Framer(limit)
    events: list[bytes] = []
    for piece in slices:
        events.extend(framer.feed(piece))
    return events, framer.finish()


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


def test_snapshot_restore_mid_line() -> None:
    framer = Framer(1 << 20)
    assert framer.feed(b"data: a\n\ndata: b") == [b"a"]
    restored = Framer.restore(framer.snapshot(), 1 << 20)
    assert restored.feed(b"c\n\ndata: [DONE]\n\n") == [b"bc"]
    assert restored.finish()
