"""Cutting captures into messages: nothing lost or changed, every cut after a whole event."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.captures import CAPTURES, Capture
from toolwire.core.errors import MalformedChunk
from toolwire.core.framing import Framer
from toolwire.publish import split_events, split_fixed

EOLS = (b"\n", b"\r\n", b"\r")


def normalized(data: bytes) -> bytes:
    """LF line ends only; CRLF first, so that CR CRLF stays two line ends."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def ends_with_blank_line(piece: bytes) -> bool:
    return normalized(piece).endswith(b"\n\n")


def event_count(body: bytes) -> int:
    """Independent oracle: blocks of non-blank lines, separated by one or more blank lines."""
    return sum(1 for block in re.split(rb"\n{2,}", normalized(body)) if block.strip(b"\n"))


def assert_well_cut(body: bytes, pieces: list[bytes]) -> None:
    assert b"".join(pieces) == body
    assert all(pieces), "no empty piece"
    for piece, after in itertools.pairwise(pieces):
        assert ends_with_blank_line(piece), piece
        assert not (piece.endswith(b"\r") and after.startswith(b"\n")), "cut inside a CRLF"
    # The project's own framer agrees: after every piece but the last, no event is half read
    # (a body that opens as JSON is no SSE to it at all: it refuses it at once, as it must).
    framer = Framer(1 << 20)
    for piece in pieces[:-1]:
        try:
            framer.feed(piece)
        except MalformedChunk:
            assert body.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1] in (b"[", b"{"), body
            assert framer.json_body is not None
            return
        assert not framer.pending(), piece


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_every_corpus_capture_round_trips_byte_for_byte(capture: Capture) -> None:
    body = capture.body
    pieces = split_events(body)
    assert_well_cut(body, pieces)
    assert len(pieces) == max(event_count(body), 1)


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_one_message_per_event_gives_the_same_payloads_as_the_whole_body(
    capture: Capture,
) -> None:
    body = capture.body
    whole, sliced = Framer(1 << 20), Framer(1 << 20)
    expected = whole.feed(body)
    got = [payload for piece in split_events(body) for payload in sliced.feed(piece)]
    assert got == expected
    assert sliced.finish() == whole.finish()


@pytest.mark.parametrize("eol", EOLS, ids=["LF", "CRLF", "CR"])
def test_events_are_counted_with_each_line_end(eol: bytes) -> None:
    lines = [
        [b'data: {"a":1}'],
        [b": keep-alive"],
        [b"event: message", b"id: 7", b'data: {"x":', b"data: 1}"],
        [b"data: [DONE]"],
    ]
    events = [eol.join(event) + eol + eol for event in lines]
    body = b"".join(events)
    assert split_events(body) == events
    # The same body without the last blank line: the tail is still a piece of its own.
    assert split_events(body[: -len(eol)]) == [*events[:-1], events[-1][: -len(eol)]]


@pytest.mark.parametrize("name", ["crlf_framing", "cr_only_framing"])
def test_corpus_crlf_and_cr_captures_split_like_their_lf_twin(name: str) -> None:
    body = next(c.body for c in CAPTURES if c.name == name)
    assert len(split_events(body)) == len(split_events(normalized(body)))
    assert len(split_events(body)) == event_count(body) > 2


def test_edge_cases() -> None:
    assert split_events(b"") == []
    assert split_events(b"\n\n") == [b"\n\n"]
    assert split_events(b"data: x") == [b"data: x"]
    # blank lines before the first event stay with it; extra ones stay with the event before
    assert split_events(b"\n\ndata: a\n\n\n\ndata: b\n\n") == [b"\n\ndata: a\n\n\n\n",
                                                                 b"data: b\n\n"]
    # CR then CRLF is two line ends: a blank line, and the cut comes after the LF
    assert split_events(b"data: a\r\r\ndata: b\r\r") == [b"data: a\r\r\n", b"data: b\r\r"]
    # a lone CR line end followed by a line is not a blank line
    assert split_events(b"data: a\rdata: b\n\n") == [b"data: a\rdata: b\n\n"]
    # the BOM stays in the first piece
    assert split_events(b"\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [b"\xef\xbb\xbfdata: a\n\n",
                                                                   b"data: b\n\n"]


def test_split_fixed() -> None:
    assert split_fixed(b"", 7) == []
    assert split_fixed(b"abcdefgh", 3) == [b"abc", b"def", b"gh"]
    assert split_fixed(b"abcdef", 3) == [b"abc", b"def"]
    for capture in CAPTURES:
        pieces = split_fixed(capture.body, 7)
        assert b"".join(pieces) == capture.body
        assert len(pieces) == math.ceil(len(capture.body) / 7)
        assert all(len(p) == 7 for p in pieces[:-1])
    with pytest.raises(ValueError):
        split_fixed(b"abc", 0)


# --------------------------------------------------------------------------- property

#: A line's text: never empty (that would be a blank line) and never a line end.
line_text = st.binary(min_size=1, max_size=12).map(
    lambda b: b.replace(b"\r", b"x").replace(b"\n", b"y"))


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, int]:
    """A body built from events with random line ends; returns it and its number of events."""
    parts: list[bytes] = []

    def eol() -> None:
        end = draw(st.sampled_from(EOLS))
        if end == b"\n" and parts and parts[-1].endswith(b"\r"):
            end = b"\r\n"  # CR then LF would be one line end, not the two drawn
        parts.append(end)

    for _ in range(draw(st.integers(0, 2))):
        eol()
    events = draw(st.integers(0, 6))
    for _ in range(events):
        for text in draw(st.lists(line_text, min_size=1, max_size=4)):
            parts.append(text)
            eol()
        for _ in range(draw(st.integers(1, 3))):
            eol()
    tail = draw(st.lists(line_text, max_size=3))
    for i, text in enumerate(tail):
        parts.append(text)
        if i < len(tail) - 1 or draw(st.booleans()):
            eol()
    body = b"".join(parts)
    return body, events + bool(tail)


@given(bodies())
def test_property_random_bodies_split_into_their_events(case: tuple[bytes, int]) -> None:
    body, events = case
    pieces = split_events(body)
    assert_well_cut(body, pieces)
    if events:
        assert len(pieces) == events
    else:
        assert len(pieces) == (1 if body else 0)  # only blank lines: kept whole


@given(st.binary(max_size=200))
def test_property_any_bytes_round_trip(body: bytes) -> None:
    pieces = split_events(body)
    assert b"".join(pieces) == body
    assert all(pieces)
    for piece in pieces[:-1]:
        assert ends_with_blank_line(piece)
