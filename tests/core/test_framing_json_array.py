"""The streamed-JSON-array framer (Gemini's ``streamGenerateContent`` without ``?alt=sse``).

Each element of the array is an event, its exact bytes, given as soon as its closing byte has
arrived; the same elements however the body is sliced, checked against a reading byte by byte
(:func:`reference`) on a realistic Gemini body and on bodies hypothesis draws in any layout
(which also drives the framer's shortcut into every way it can be wrong: it never decides).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.errors import MalformedChunk
from toolwire.core.framing import BOM, LineOversize, NamedEvent
from toolwire.core.framing.json_array import JSONArrayFramer, ReadElement

# -- a realistic body ----------------------------------------------------------------------

CHUNKS: list[dict[str, Any]] = [
    {"candidates": [{"content": {"role": "model", "parts": [
        {"text": 'Sure: {"a": [1, 2]}, then ] and } and , and \\ and a quote \\"x\\" '}]},
        "index": 0}],
     "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4, "totalTokenCount": 13},
     "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"},
    {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Ünïcödé — 東京 🌧 \"quoted\" back\\slash\n}\n,\r\n{ not the end"}]},
        "index": 0}],
     "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"},
    {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {
            "city": "Tromsø }]", "days": [1, 2, {"nested": ["x", {"y": None}]}],
            "filter": {"q": "a\\\\\"b", "empty": {}, "none": []}}}},
        {"functionCall": {"name": "noop", "args": {}}}]},
        "finishReason": "STOP", "index": 0}],
     "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 20, "totalTokenCount": 29},
     "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"},
]
#: As Gemini writes them: pretty-printed; one with ``\\u`` escapes (ASCII only), the others not.
ELEMENTS = [json.dumps(chunk, indent=2, ensure_ascii=index == 1).encode()
            for index, chunk in enumerate(CHUNKS)]
BODY = b"[" + b"\n,\r\n".join(ELEMENTS) + b"\n]"


def framed(*slices: bytes, limit: int = 1 << 24) -> tuple[list[bytes], bytes | None]:
    framer = JSONArrayFramer(limit)
    events = [event for piece in slices for event in framer.feed(piece)]
    return events, framer.finish()


def cut(body: bytes, points: list[int]) -> list[bytes]:
    """``body`` cut at ``points`` (any order, repeats allowed)."""
    bounds = [0, *sorted(points), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def one_byte(body: bytes) -> list[bytes]:
    return [body[i:i + 1] for i in range(len(body))]


def reference(body: bytes) -> tuple[list[tuple[int, int]], str, int | None]:
    """A reading byte by byte: the spans of the elements, how the body ends (``closed`` by its
    ``]``, still ``open``, or ``error``), and where an element left unfinished starts."""
    if BOM.startswith(body):
        return [], "open" if body else "closed", None
    pos = len(BOM) if body.startswith(BOM) else 0
    spans: list[tuple[int, int]] = []
    state = "before"
    while pos < len(body):
        byte = body[pos:pos + 1]
        if byte in (b" ", b"\t", b"\r", b"\n"):
            pos += 1
        elif state == "before":
            if byte != b"[":
                return spans, "error", None
            state, pos = "first", pos + 1
        elif state == "after" and byte in (b",", b"]"):
            state, pos = ("next" if byte == b"," else "closed"), pos + 1
        elif state == "first" and byte == b"]":
            state, pos = "closed", pos + 1
        elif state in ("first", "next") and byte == b"{":
            start, depth, in_string, escape = pos, 0, False, False
            while pos < len(body):
                char = body[pos]
                if in_string:
                    if escape:
                        escape = False
                    elif char == 0x5C:
                        escape = True
                    elif char == 0x22:
                        in_string = False
                elif char == 0x22:
                    in_string = True
                elif char in b"{[":
                    depth += 1
                elif char in b"}]":
                    depth -= 1
                    if depth == 0:
                        break
                pos += 1
            if pos == len(body):
                return spans, "open", start
            pos += 1
            spans.append((start, pos))
            state = "after"
        else:
            return spans, "error", None
    return spans, "closed" if state == "closed" else "open", None


def check_against_reference(body: bytes, slices: list[bytes], limit: int = 1 << 24) -> None:
    """The framer reads ``slices`` (``body``) as :func:`reference` does: each element given
    as soon as its closing byte has arrived, malformed framing raised, an element over
    ``limit`` (or the bytes held for one) raised with the elements before it, and
    :meth:`~JSONArrayFramer.finish` the unfinished element, ``b""`` or ``None``."""
    spans, ending, unfinished = reference(body)
    elements = [body[a:b] for a, b in spans]
    lengths = [b - a for a, b in spans]
    if unfinished is not None:
        lengths.append(len(body) - unfinished)
    over = next((i for i, length in enumerate(lengths) if length > limit), None)
    framer = JSONArrayFramer(limit)
    events: list[bytes] = []
    arrived = 0
    try:
        for piece in slices:
            events += framer.feed(piece)
            arrived += len(piece)
            assert events == [body[a:b] for a, b in spans if b <= arrived]
    except LineOversize as overlong:
        assert over is not None and events + overlong.events == elements[:over]
        return
    except MalformedChunk:
        assert ending == "error" and over is None
        return
    assert over is None, "an overlong element not raised"
    assert ending != "error", "malformed framing not raised"
    assert events == elements
    last = framer.finish()
    assert framer.finish() == last
    if ending == "closed":
        assert last is None and not framer.pending()
    elif unfinished is None:
        assert last == (None if not body else b"") and not framer.pending()
    else:
        assert last == body[unfinished:] and framer.pending()


# -- the elements, however the body is sliced -------------------------------------------------

def test_a_gemini_body_gives_its_elements_byte_for_byte() -> None:
    events, last = framed(BODY)
    assert events == ELEMENTS and last is None
    assert [orjson.loads(bytes(event)) for event in events] == CHUNKS
    assert b"\\u00dc" in events[1] and "Tromsø".encode() in events[2]  # escaped, and not
    assert [BODY[a:b] for a, b in reference(BODY)[0]] == ELEMENTS
    assert all(b"\n}" not in element[:-1] for element in ELEMENTS)  # Gemini's layout


def test_the_same_elements_cut_anywhere_into_two() -> None:
    for point in range(len(BODY) + 1):
        assert framed(BODY[:point], BODY[point:]) == (ELEMENTS, None), point


def test_the_same_elements_one_byte_at_a_time() -> None:
    check_against_reference(BODY, one_byte(BODY))
    assert framed(*one_byte(BODY)) == (ELEMENTS, None)


def test_an_element_is_given_when_its_closing_brace_arrives() -> None:
    framer = JSONArrayFramer(1 << 20)
    end = BODY.index(ELEMENTS[0]) + len(ELEMENTS[0])
    assert framer.feed(BODY[:end]) == [ELEMENTS[0]]  # before its comma
    assert framer.pending() is False and framer.finish() == b""
    assert framer.feed(BODY[end:]) == ELEMENTS[1:]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(BODY)), max_size=24))
def test_the_same_elements_however_the_gemini_body_is_sliced(points: list[int]) -> None:
    check_against_reference(BODY, cut(BODY, points))


_TEXT = st.text(st.one_of(st.sampled_from(list('{}[]",:\\\n\r\t /u')),
                          st.characters(blacklist_categories=("Cs",))), max_size=10)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10 ** 12), 10 ** 12)
    | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children,
                                                                      max_size=4),
    max_leaves=16)
_OBJECTS = st.dictionaries(_TEXT, _VALUES, max_size=5)
_SPACE = st.text(st.sampled_from(" \t\r\n"), max_size=3)


@st.composite
def arrays(draw: st.DrawFn) -> tuple[bytes, list[bytes], list[Any]]:
    """A JSON array of objects in a drawn layout: the body, its elements' bytes, the objects."""
    objects = draw(st.lists(_OBJECTS, max_size=6))
    indent = draw(st.sampled_from([None, 0, 1, 2, "\t", "compact"]))
    ascii_only = draw(st.booleans())
    crlf = draw(st.booleans())
    elements = []
    for value in objects:
        if indent == "compact":
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only)
        else:
            text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
        if crlf:  # a CR in an element's layout: the shortcut's candidates are wrong
            text = text.replace("\n", "\r\n")
        elements.append(text.encode())
    gemini = draw(st.booleans())
    parts = [BOM if draw(st.booleans()) else b"", draw(_SPACE).encode(), b"[",
             draw(_SPACE).encode()]
    for index, element in enumerate(elements):
        if index:
            parts.append(b"\n,\r\n" if gemini else
                         (draw(_SPACE) + "," + draw(_SPACE)).encode())
        parts.append(element)
    parts += [draw(_SPACE).encode(), b"]", draw(_SPACE).encode()]
    return b"".join(parts), elements, objects


@settings(max_examples=400, deadline=None)
@given(arrays(), st.lists(st.integers(0, 1 << 16), max_size=16))
def test_the_same_elements_for_any_array_however_sliced(
        drawn: tuple[bytes, list[bytes], list[Any]], points: list[int]) -> None:
    body, elements, objects = drawn
    points = [point % (len(body) + 1) for point in points]
    assert [body[a:b] for a, b in reference(body)[0]] == elements
    check_against_reference(body, cut(body, points))
    events, last = framed(*cut(body, points))
    assert events == elements and last is None
    assert [orjson.loads(bytes(event)) for event in events] == [
        json.loads(element) for element in elements]
    assert [json.loads(element) for element in elements] == objects


@settings(max_examples=200, deadline=None)
@given(arrays(), st.integers(0, 1 << 16), st.integers(1, 400))
def test_any_array_cut_short_or_sliced_small(drawn: tuple[bytes, list[bytes], list[Any]],
                                             end: int, size: int) -> None:
    """A body cut anywhere (an array left open), in slices of a drawn size."""
    body = drawn[0][:end % (len(drawn[0]) + 1)]
    check_against_reference(body, [body[i:i + size] for i in range(0, len(body), size)])


def test_the_shortcut_never_decides_an_element() -> None:
    """Bodies where ``\\n}`` and CRs mislead the shortcut: strings holding a raw newline and
    CR (no JSON, the wire will say), compact elements before a CR, a CRLF layout."""
    tricky = [
        b'[{"a": "x\n}\n,\r\n{"}\n,\r\n{"b": 1\n}\n]',
        b'[{"a":1},{"b":2}\n,\r\n{"c":3\n}\n]',
        b'[{"a": {\n}\n}, {"b": [\n]\n}\n]',
        b'[' + json.dumps(CHUNKS[2], indent=2).replace("\n", "\r\n").encode() + b'\r\n,\r\n'
        + ELEMENTS[0] + b'\n]',
        b'[' + b'\n,\r\n'.join([b'{"s": "\\\\"}', b'{"t": "\\"}\\n}"}', b'{"u": ["\\\\\\""]}'])
        + b'\n]',
        b'[' + b'\n,\r\n'.join([b'{"n": "}\n}"\n}'] * 9) + b'\n]',  # more misses than allowed
    ]
    for body in tricky:
        spans, ending, _ = reference(body)
        assert ending == "closed" and spans, body
        for slices in ([body], one_byte(body), *([body[:i], body[i:]]
                                                 for i in range(len(body)))):
            check_against_reference(body, slices)


# -- BOM, empty arrays ------------------------------------------------------------------------

def test_a_bom_is_skipped_even_cut_inside() -> None:
    body = BOM + b"\r\n" + BODY
    for point in range(len(BOM) + 3):
        assert framed(body[:point], body[point:]) == (ELEMENTS, None)
    assert framed(*one_byte(body)) == (ELEMENTS, None)
    assert framed(BOM[:1], BOM[1:2], BOM[2:], b"[]") == ([], None)


@pytest.mark.parametrize("body", [b"[]", b"[ ]", b"\r\n[\r\n]\r\n", BOM + b"[\t]"])
def test_an_empty_array_has_no_elements(body: bytes) -> None:
    assert framed(body) == ([], None)
    assert framed(*one_byte(body)) == ([], None)


# -- malformed framing ------------------------------------------------------------------------

MALFORMED = [
    (b'{"candidates": []}',
     "the body is not a JSON array: its first non-blank character is '{', not '['"),
    (b"  data: {}", "its first non-blank character is 'd', not '['"),
    (b"\xef\xbb[{}]", "its first non-blank character is the byte 0xEF, not '['"),
    (b" " + BOM + b"[{}]", "its first non-blank character is the byte 0xEF, not '['"),
    (b"[1, 2]", "element 1 of the JSON array is not an object: it starts with '1'"),
    (b'[{"a": 1}, "x"]', "element 2 of the JSON array is not an object: it starts with '\"'"),
    (b"[{}, [{}]]", "element 2 of the JSON array is not an object: it starts with '['"),
    (b'[{"candidates": []} {"candidates": []}]',
     "a comma is missing between elements 1 and 2 of the JSON array"),
    (b'[{"a": 1}\n x]', "after element 1 of the JSON array comes 'x', not a comma or the "
                         "closing ']'"),
    (b"[{}}]", "after element 1 of the JSON array comes '}', not a comma or the closing ']'"),
    (b"[{},\r\n,{}]", "the JSON array has a doubled comma after element 1"),
    (b"[{}, {},]", "the JSON array has a comma before its closing ']' (after element 2)"),
    (b"[ , {}]", "the JSON array has a comma before its first element"),
    (b'[{"candidates": []}] trailing', "content after the end of the JSON array: 't'"),
    (b"[{}]]", "content after the end of the JSON array: ']'"),
    (b"[]\n[]", "content after the end of the JSON array: '['"),
    (b"[{}]\n\x00", "content after the end of the JSON array: the byte 0x00"),
    (b"[{}]\x0c", "content after the end of the JSON array: the byte 0x0C"),
    (BODY + b"\n{}", "content after the end of the JSON array: '{'"),
]


@pytest.mark.parametrize(("body", "detail"), MALFORMED)
def test_malformed_framing_is_named_the_same_however_sliced(body: bytes, detail: str) -> None:
    spans, ending, _ = reference(body)
    assert ending == "error"
    elements = [body[a:b] for a, b in spans]
    for slices in ([body], one_byte(body),
                   *([body[:i], body[i:]] for i in range(len(body) + 1))):
        framer = JSONArrayFramer(1 << 20)
        events: list[bytes] = []
        with pytest.raises(MalformedChunk) as raised:
            for piece in slices:
                events += framer.feed(piece)
        assert detail in raised.value.detail
        assert elements[:len(events)] == events  # those given before it were its elements
        assert framer.closed and framer.finish() is None and not framer.pending()
        assert framer.feed(b'{"late": 1}') == [] and framer.after_close == 0


# -- the bound --------------------------------------------------------------------------------

SMALL = b'{"a": 1}'
LARGE = b'{\n  "b": "' + b"x}" * 40 + b'"\n}'
OVER = [(b"[" + SMALL + b"\n,\r\n" + LARGE + b"\n,\r\n" + SMALL + b"\n]", 1),
        (b"[" + SMALL + b"," + LARGE.replace(b"\n", b"") + b"]", 1),
        (b"[" + LARGE + b"]", 0),
        (b"[" + SMALL + b", " + LARGE[:60], 1)]  # cut short, but past the bound already


@pytest.mark.parametrize(("body", "before"), OVER)
def test_an_element_over_the_bound_raises_wherever_it_is_cut(body: bytes, before: int) -> None:
    limit = 48
    for slices in ([body], one_byte(body),
                   *([body[:i], body[i:]] for i in range(len(body) + 1))):
        framer = JSONArrayFramer(limit)
        events: list[bytes] = []
        with pytest.raises(LineOversize) as raised:
            for piece in slices:
                events += framer.feed(piece)
        assert events + raised.value.events == [SMALL] * before
        assert str(raised.value) == "an element of the JSON array is longer than 48 bytes"
        assert raised.value.reason == "oversize"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(OVER[0][0])), max_size=10), st.integers(8, 120))
def test_the_bound_holds_however_sliced(points: list[int], limit: int) -> None:
    check_against_reference(OVER[0][0], cut(OVER[0][0], points), limit=limit)


def test_an_element_of_exactly_the_bound_is_within_it() -> None:
    for body in (b"[" + LARGE + b"]", b"[" + LARGE.replace(b"\n", b"") + b"]"):
        element = body[1:-1]
        for point in range(len(body) + 1):
            assert framed(body[:point], body[point:], limit=len(element)) == ([element], None)


# -- the end ----------------------------------------------------------------------------------

def test_finish_says_whether_the_array_was_closed() -> None:
    first = BODY.index(ELEMENTS[1])
    assert framed(BODY) == (ELEMENTS, None)  # closed by its ``]``
    assert framed(b"") == ([], None)  # nothing arrived
    assert framed(BODY[:first + 10]) == (ELEMENTS[:1], ELEMENTS[1][:10])  # inside an element
    assert framed(*one_byte(BODY[:first + 10])) == (ELEMENTS[:1], ELEMENTS[1][:10])
    assert framed(BODY[:first]) == (ELEMENTS[:1], b"")  # between elements, after the comma
    assert framed(BODY[:first - 4]) == (ELEMENTS[:1], b"")  # between, before the comma
    assert framed(b"[") == ([], b"") and framed(b"[ \n") == ([], b"")
    assert framed(b" \r\n") == ([], b"") and framed(BOM[:2]) == ([], b"")  # before the ``[``
    assert framed(BOM) == ([], b"")
    framer = JSONArrayFramer(1 << 20)
    framer.feed(BODY[:first + 10])
    assert framer.pending() and framer.finish() == framer.finish() == ELEMENTS[1][:10]
    framer.close()
    assert framer.finish() is None and not framer.pending()


def test_after_close_elements_are_counted_never_read() -> None:
    first = BODY.index(ELEMENTS[1]) + 20
    framer = JSONArrayFramer(1 << 20)
    assert framer.feed(BODY[:first]) == ELEMENTS[:1]
    framer.close()
    assert framer.feed(BODY[first:]) == []
    assert framer.after_close == 2 and framer.finish() is None and not framer.pending()
    # what follows the ``]``, garbage included, ends the count quietly
    assert framer.feed(b"  \n") == [] and framer.feed(b"garbage, {}") == []
    assert framer.after_close == 2 and not framer.counting


LONGER = BODY[:-2] + b'\n,\r\n{"after": [1]}, {"b": "}"}\n]\n'


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, len(LONGER)), max_size=8), st.integers(1, 5))
def test_the_count_after_close_does_not_depend_on_the_slicing(points: list[int],
                                                              end: int) -> None:
    """The wire ends the body on element ``end``: the elements after it in that slice, and
    those counted after the close, are the elements after it, however the body is sliced."""
    total = len(reference(LONGER)[0])
    framer = JSONArrayFramer(1 << 20)
    seen = after = 0
    for piece in cut(LONGER, points):
        events = framer.feed(piece)
        if not framer.closed and seen + len(events) >= end:
            after = seen + len(events) - end
            framer.close()
        seen += len(events)
    assert total == 5
    assert after + framer.after_close == total - end and framer.finish() is None


def test_an_overlong_element_after_close_ends_the_count() -> None:
    framer = JSONArrayFramer(16)
    assert framer.feed(b'[{"a":1}, {"b":2}') == [b'{"a":1}', b'{"b":2}']
    framer.close()
    assert framer.feed(b', {"c":3}, {"long": "' + b"x" * 40 + b'"}, {"d":4}]') == []
    assert framer.after_close == 1 and not framer.counting


# -- split, opens -----------------------------------------------------------------------------

def test_split_cuts_after_each_element_and_keeps_every_byte() -> None:
    pieces = JSONArrayFramer.split(BOM + BODY)
    assert b"".join(pieces) == BOM + BODY
    assert pieces[0] == BOM + b"[" + ELEMENTS[0]
    assert pieces[1:-1] == [b"\n,\r\n" + element for element in ELEMENTS[1:]]
    assert pieces[-1] == b"\n]"
    framer = JSONArrayFramer(1 << 20)  # each piece gives its element, as the server flushed
    assert [framer.feed(piece) for piece in pieces] == [[e] for e in ELEMENTS] + [[]]


@pytest.mark.parametrize(("body", "pieces"), [
    (b"", []),
    (b"[]", [b"[]"]),
    (b"garbage", [b"garbage"]),
    (b'[{"a":1}, 1, {"b":2}]', [b'[{"a":1}', b', 1, {"b":2}]']),
    (b'[{"a":1}] tail {"b":2}', [b'[{"a":1}', b'] tail {"b":2}']),
    (b'[{"a":1},{"b"', [b'[{"a":1}', b',{"b"']),
    (b'[{"a":"}"} ,\n{"b":[]}\n]\n', [b'[{"a":"}"}', b' ,\n{"b":[]}', b"\n]\n"]),
])
def test_split_boundaries(body: bytes, pieces: list[bytes]) -> None:
    assert JSONArrayFramer.split(body) == pieces


@settings(max_examples=200, deadline=None)
@given(arrays(), st.integers(0, 1 << 16), st.binary(max_size=6))
def test_split_round_trips_any_body(drawn: tuple[bytes, list[bytes], list[Any]], end: int,
                                    noise: bytes) -> None:
    body = drawn[0][:end % (len(drawn[0]) + 1)] + noise
    pieces = JSONArrayFramer.split(body)
    assert b"".join(pieces) == body and all(pieces)
    spans = reference(body)[0]
    assert [sum(map(len, pieces[:i + 1])) for i in range(len(spans))] == [b for _, b in spans]


def test_opens_tells_a_json_array_by_its_first_character() -> None:
    assert JSONArrayFramer.proves
    for head in (b"", b" ", b"\r\n\t", BOM[:1], BOM[:2], BOM, BOM + b"  \n"):
        assert JSONArrayFramer.opens(head) is None, head
    for head in (b"[", b" \r\n[{", BOM + b"[", BOM + b"\n[ ", BODY):
        assert JSONArrayFramer.opens(head) is True, head
    for head in (b"{", b"data: {}", b" {", b"\xef\xbbX", BOM + b"{", b" " + BOM + b"[",
                 b"\x00"):
        assert JSONArrayFramer.opens(head) is False, head
    body = BOM + BODY  # ``[`` at 3: every prefix before it is undecided
    assert [JSONArrayFramer.opens(body[:i]) for i in range(6)] == [None] * 4 + [True] * 2


def test_the_framer_is_named_and_has_no_event_names() -> None:
    framer = JSONArrayFramer(1 << 20, names=True)
    assert JSONArrayFramer.name == "json-array"
    events = framer.feed(BODY)
    assert len(events) == 3 and all(isinstance(event, bytes) for event in events)
    assert not any(isinstance(event, NamedEvent) for event in events)


def test_an_element_the_shortcut_read_carries_its_value_and_the_depth_scan_gives_bytes() -> None:
    """The shortcut's check reads each element's JSON once: the value travels with it
    (``ReadElement.value``) so the wire does not read it again; it is what the element's bytes
    read as. An element found by the depth scan (a layout without Gemini's line breaks) is
    plain bytes, which the wire reads itself."""
    events = JSONArrayFramer(1 << 20).feed(BODY)
    assert [type(event) for event in events] == [ReadElement] * 3
    for event in events:
        assert isinstance(event, ReadElement) and event.value == orjson.loads(bytes(event))
    compact = b"[" + b",".join(orjson.dumps(c) for c in CHUNKS) + b"]"
    plain = JSONArrayFramer(1 << 20).feed(compact)
    assert [type(event) for event in plain] == [bytes] * len(CHUNKS)
    assert [orjson.loads(event) for event in plain] == CHUNKS


# -- cost -------------------------------------------------------------------------------------

def test_a_1_mib_element_one_byte_at_a_time_is_linear() -> None:
    text = ('a "quoted" }] back\\slash, 東京 ' * 30000)[:1 << 18]
    element = json.dumps({"candidates": [{"content": {"parts": [{"text": text}]}}],
                          "args": {"deep": [[[{"x": "}"}]]]}}, indent=2,
                         ensure_ascii=False).encode()
    element = element[:-2] + b', "pad": "' + b"p" * ((1 << 20) - len(element)) + b'"\n}'
    assert len(element) > 1 << 20 and orjson.loads(element)["pad"][0] == "p"
    body = b"[" + element + b"\n]"
    framer = JSONArrayFramer(4 << 20)
    feed = framer.feed
    events: list[bytes] = []
    started = time.perf_counter()
    for index in range(len(body)):
        events += feed(body[index:index + 1])
    elapsed = time.perf_counter() - started
    assert events == [element] and framer.finish() is None
    assert elapsed < 10, f"{elapsed:.1f} s: not linear"
