"""The NDJSON framer: one event per line, the same events and the same bound however the body
is sliced, and the publisher's cut after each line."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.framing import SUPPORTED_FRAMINGS, LineOversize, NDJSONFramer
from toolwire.core.wires import SUPPORTED_WIRES

BODY = (b'{"message":{"content":"a"},"done":false}\n'
        b'\n'
        b'{"message":{"content":"b"},"done":false}\r\n'
        b'{"done":true,"done_reason":"stop"}\n')
EVENTS = [b'{"message":{"content":"a"},"done":false}', b'{"message":{"content":"b"},"done":false}',
          b'{"done":true,"done_reason":"stop"}']


def framed(*slices: bytes, limit: int = 1 << 20) -> tuple[list[bytes], bytes | None]:
    framer = NDJSONFramer(limit)
    events = [event for piece in slices for event in framer.feed(piece)]
    return events, framer.finish()


def test_lines_are_events_blank_lines_nothing_crlf_one_line_end() -> None:
    assert framed(BODY) == (EVENTS, None)
    assert framed(*[BODY[i:i + 1] for i in range(len(BODY))]) == (EVENTS, None)
    cut = BODY.index(b"\r\n") + 1  # a slice ends between CR and LF
    assert framed(BODY[:cut], BODY[cut:]) == (EVENTS, None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(BODY)), max_size=12))
def test_the_same_events_however_the_body_is_sliced(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(BODY)]
    slices = [BODY[a:b] for a, b in itertools.pairwise(points)]
    assert framed(*slices) == (EVENTS, None)


def test_an_unterminated_last_line_is_left_to_the_wire() -> None:
    events, last = framed(BODY + b'{"done":tr')
    assert events == EVENTS and last == b'{"done":tr'
    assert framed(b"   ")[1] is None  # blank: nothing left


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 80))
def test_a_line_over_the_bound_is_named_the_same_whole_or_in_pieces(size: int) -> None:
    body = b'{"a":1}\n' + b'{"b":"' + b"x" * 64 + b'"}\n'
    details = set()
    for slices in ([body], [body[i:i + size] for i in range(0, len(body), size)]):
        framer = NDJSONFramer(32)
        seen: list[bytes] = []
        with pytest.raises(LineOversize) as raised:
            for piece in slices:
                seen += framer.feed(piece)
        assert seen + raised.value.events == [b'{"a":1}']
        details.add(str(raised.value))
    assert details == {"an NDJSON line is longer than 32 bytes"}


def test_a_crlf_line_of_exactly_the_bound_is_within_it_however_cut() -> None:
    line = b"x" * 16
    for cut in range(1, 19):
        body = line + b"\r\n"
        assert framed(body[:cut], body[cut:], limit=16) == ([line], None)


def test_after_close_lines_are_counted_never_read() -> None:
    framer = NDJSONFramer(1 << 20)
    assert framer.feed(b'{"done":true}\n') == [b'{"done":true}']
    framer.close()
    assert framer.feed(b'{"late":1}\n{"la') == [] and framer.feed(b'te":2}\n') == []
    assert framer.after_close == 2 and framer.finish() is None and not framer.pending()


@pytest.mark.parametrize("body", [BODY, b"\n\n" + BODY, BODY + b"tail", b"", b"\n"])
def test_split_cuts_after_each_line_and_keeps_every_byte(body: bytes) -> None:
    pieces = NDJSONFramer.split(body)
    assert b"".join(pieces) == body
    for piece in pieces:
        assert len(framed(piece)[0]) + (framed(piece)[1] is not None) <= 1
    if body.strip():
        assert all(piece.strip() for piece in pieces)


def test_every_wire_names_a_registered_framing() -> None:
    for wire in SUPPORTED_WIRES.values():
        assert SUPPORTED_FRAMINGS[wire.framing.name] is wire.framing, wire.name
