"""Streamed-JSON-array framing (Gemini's ``streamGenerateContent`` without ``?alt=sse``).

Without ``?alt=sse`` (the REST default, what clients such as llm-gemini read) Gemini streams its
chunks as the elements of ONE JSON array, written as they are generated: ``[{…}\\n,\\r\\n{…}\\n]``,
each element pretty-printed. An event is one element of that array: its exact bytes from its
``{`` to its closing ``}``, without the whitespace and comma around it, given as soon as that
closing byte has arrived (not when the comma after it does), so the wire reads the same chunk
objects it reads from the ``data:`` events of the SSE form.

The invariant every framer keeps: **the same elements however the body is sliced**. A gateway
publishes the body as it was read, so a slice may end anywhere: inside a string, between a
backslash and the byte it escapes, inside the BOM or inside a UTF-8 character. And the cost of a
slice is proportional to the slice: between slices the framer keeps only the unfinished element
and its scan state (nesting depth, inside a string or not, a backslash pending), so no byte is
scanned twice by the reference scan and a 4 MiB element arriving one byte at a time costs no
more than it does whole. An element over ``max_line_bytes`` raises
:class:`~toolwire.core.framing.LineOversize` with the elements completed before it, as soon as
the bytes held for it pass the bound, wherever the slices end.

What is checked (a :class:`~toolwire.core.errors.MalformedChunk` otherwise): an optional UTF-8
BOM, JSON whitespace, ``[``, elements separated by single commas, ``]``, then only whitespace;
each element must open with ``{``. An element's end is found by its nesting depth (``{}`` and
``[]`` outside strings, strings and their backslash escapes skipped); its JSON is not validated
beyond that: the wire parses it and says what is wrong with it.

How an element's end is found, fast: the reference is the depth scan (:meth:`_advance`), which
jumps from one structural byte to the next with compiled patterns (string contents are skipped in
C) and keeps its state across slices. Gemini's layout allows a shortcut: an element's closing
brace is the only ``}`` at the start of a line. The framer takes the next ``\\n}`` as the
candidate end and accepts it when orjson reads the candidate as one whole JSON value (which,
starting with ``{``, is then an object whose closing brace is that ``}``: exactly where the depth
scan would stop). What orjson read is not thrown away: the element is given as a
:class:`ReadElement`, its bytes with the value beside them, so that the wire does not read the
same JSON a second time. A candidate that does not read is not an error: the depth scan
decides, and a body whose candidates keep failing (another layout) stops being offered them.
The shortcut only ever agrees with the reference, so the elements never depend on it.

:meth:`JSONArrayFramer.finish`: ``None`` when the array was closed by its ``]`` (or the framer
was closed by its wire, or no byte arrived at all); otherwise the body ended before the array
did, a body cut short: the bytes of the element left unfinished, or ``b""`` when none was in
progress (between elements, or before the ``[``). The wire decides what that means.
"""

from __future__ import annotations

import contextlib
import re
from typing import Final, NoReturn

import orjson

from toolwire.core.errors import MalformedChunk
from toolwire.core.framing._base import EventFramer, FramingDamage, LineOversize
from toolwire.core.framing.sse import BOM

#: JSON's whitespace: what may surround the array's ``[``, ``,`` and ``]``.
_SPACE: Final = b" \t\r\n"
# The three patterns below match the empty string: their ``match`` is never ``None``.
_skip_space: Final = re.compile(rb"[ \t\r\n]*+").match
#: Outside strings: everything up to the next bracket (whole strings included), or up to the
#: opening quote of a string the slice ends inside.
_outside: Final = re.compile(
    rb'[^"{}\[\]]*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"[^"{}\[\]]*+)*+', re.DOTALL).match
#: Inside a string: up to its closing quote, or up to a backslash that is the slice's last byte.
_inside: Final = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL).match
#: Gemini's layout (see the module docstring): the separator between two elements, and the
#: closing brace of an element, the only ``}`` that opens a line.
_SEPARATOR: Final = b"\n,\r\n"
_line_brace: Final = re.compile(rb"\n\}").search
#: The shortcut is given up for a body after this many candidates that did not read.
_MISSES: Final = 4
#: For :func:`_state_after`: keep quotes and brackets only, brackets as ``{`` and ``}``.
_STRUCTURE: Final = bytes.maketrans(b"[]", b"{}")
_NOT_STRUCTURE: Final = bytes(sorted(set(range(256)) - set(b'"{}[]')))
#: Slices shorter than this go straight to the depth scan (the counting costs more).
_COUNTED: Final = 64
#: Nesting the counting reads through (deeper: the depth scan).
_PASSES: Final = 24

_QUOTE: Final = 0x22
_COMMA: Final = 0x2C
_OPEN_BRACKET: Final = 0x5B
_CLOSE_BRACKET: Final = 0x5D
_OPEN_BRACE: Final = 0x7B

# Where the framer is in the array.
_BEFORE: Final = 0  # before the ``[`` (a BOM may still be arriving)
_FIRST: Final = 1  # after the ``[``: the first element, or ``]``
_NEXT: Final = 2  # after a comma: an element
_AFTER: Final = 3  # after an element: a comma, or ``]``
_ELEMENT: Final = 4  # inside an element: its bytes are held
_CLOSED: Final = 5  # after the ``]``: whitespace only
_FAILED: Final = 6  # an error was raised: nothing more is read


class ReadElement(bytes):
    """An element whose JSON the framer has already read (the shortcut's check): its bytes, as
    any element's, with :attr:`value` beside them for the wire to take instead of reading the
    bytes again. Only the shortcut gives these; an element the depth scan found is plain
    ``bytes``, and a wire reads it as before."""

    #: What orjson read from the element's bytes.
    value: object

    def __repr__(self) -> str:
        return f"ReadElement({bytes(self)!r})"


def _show(byte: int) -> str:
    """One byte of the body, as a dead letter's detail names it."""
    return repr(chr(byte)) if 0x20 < byte < 0x7F else f"the byte 0x{byte:02X}"


def _state_after(chunk: bytes, depth: int, in_string: bool) -> tuple[int, bool] | None:
    """The depth scan's state after ``chunk`` (its depth, and whether it ends inside a string),
    when the element certainly does not end inside it; ``None`` when it may, or when the
    counting cannot tell (an escaped quote, a bracket inside a string, deep nesting): then the
    depth scan reads it.

    Without a backslash before a quote every quote is a string's start or end, and when no
    bracket lies between the two quotes of any string, the brackets outside strings are the
    chunk's brackets: their sequence, with every ``{}`` pair removed, is ``a`` closers then ``b``
    openers, and the depth never reaches zero when ``a`` is less than ``depth``. All of it in C: one
    ``translate`` of the chunk, then a few ``replace`` on a string a fifth of its size. Used for
    the part of an element that ends a slice, which the shortcut cannot place.
    """
    if b"\\" in chunk and (b'\\"' in chunk or chunk[-1] == 0x5C):
        return None
    marks = chunk.translate(_STRUCTURE, _NOT_STRUCTURE)
    if in_string:
        marks = b'"' + marks  # the string the chunk starts inside
    in_string = bool(marks.count(b'"') & 1)
    if in_string:  # the chunk ends inside a string: what follows its quote is its text
        marks = marks[:marks.rindex(b'"')]
    marks = marks.replace(b'""', b"")
    if b'"' in marks:  # a bracket inside a string
        return None
    passes = 0
    while b"{}" in marks:
        passes += 1
        if passes > _PASSES:
            return None
        marks = marks.replace(b"{}", b"")
    closers = len(marks) - len(marks.lstrip(b"}"))
    if closers >= depth:
        return None  # the element ends inside the chunk
    return depth - closers + (len(marks) - closers), in_string


class JSONArrayFramer(EventFramer):
    """Turns body slices into the elements of a streamed JSON array (see the module docstring).

    Malformed framing raises :class:`~toolwire.core.errors.MalformedChunk`; the framer then
    reads nothing more.
    """

    __slots__ = ("_bom", "_depth", "_elements", "_escape", "_held", "_in_string", "_max",
                 "_misses", "_state")

    name = "json-array"
    #: A body that opens with ``[`` is a JSON array: no SSE or NDJSON body opens so.
    proves = True

    def __init__(self, max_line_bytes: int, names: bool = False) -> None:
        super().__init__(max_line_bytes, names)  # elements have no names
        self._max = max_line_bytes
        self._state = _BEFORE
        #: Bytes of a BOM still arriving; ``None`` once the opening is past the BOM.
        self._bom: bytes | None = b""
        #: Elements begun so far (for the details of dead letters).
        self._elements = 0
        #: The unfinished element, from its ``{``.
        self._held = bytearray()
        #: The depth scan's state at the end of :attr:`_held`.
        self._depth = 0
        self._in_string = False
        self._escape = False
        #: Candidate ends that did not read (the shortcut is given up at :data:`_MISSES`).
        self._misses = 0

    # -- framing ---------------------------------------------------------------------------

    def _frame(self, data: bytes) -> list[bytes]:
        events: list[bytes] = []
        try:
            self._scan(data, events)
        except FramingDamage as damage:  # the elements before it are the wire's to read
            damage.events = events
            raise
        return events

    def _count(self, data: bytes) -> None:
        """After the wire's end, elements are only counted; whatever ends the count (an
        element over the bound, malformed framing, content after the ``]``) ends it quietly:
        nothing after the wire's end is read."""
        events: list[bytes] = []
        try:
            self._scan(data, events)
        except (LineOversize, MalformedChunk):
            self.close(count=False)
        self.after_close += len(events)

    def _scan(self, data: bytes, events: list[bytes]) -> None:
        """Frame one slice, appending to ``events`` the elements it completes (they are
        also what an error raised carries)."""
        state = self._state
        pos = 0
        if state == _ELEMENT:
            pos = self._resume(data, events)
            if pos < 0:
                return
            state = self._state
        elif state == _BEFORE:
            data, pos = self._open(data)
            if pos < 0:
                return
            state = _FIRST
        elif state == _FAILED:
            return
        limit = self._max
        size = len(data)
        count = self._elements
        find = data.find
        rfind = data.rfind
        loads = orjson.loads
        unreadable = orjson.JSONDecodeError
        # The shortcut (see the module docstring), while the body takes it: the next CR (a
        # position below ``pos`` is stale; ``size``: none left), the next ``\n}`` (``None``
        # once none is left), and from where it is looked for at all (``size``: no more).
        shortcut = 0 if self._misses < _MISSES else size
        cr = -1
        found: re.Match[bytes] | None = None
        # The counting (:func:`_state_after`) is tried once a slice: it reads the slice's rest.
        uncounted = True
        while True:
            if pos >= size:
                break
            byte = data[pos]
            if byte <= 0x20:
                pos = _skip_space(data, pos).end()  # type: ignore[union-attr]
                if pos >= size:
                    break
                byte = data[pos]
            if state == _AFTER:
                if byte == _COMMA:
                    state = _NEXT
                    pos += 1
                    continue
                if byte == _CLOSE_BRACKET:
                    state = _CLOSED
                    pos += 1
                    continue
                self._elements = count
                if byte == _OPEN_BRACE:
                    self._fail(f"a comma is missing between elements {count} and "
                               f"{count + 1} of the JSON array")
                self._fail(f"after element {count} of the JSON array comes {_show(byte)}, "
                           "not a comma or the closing ']'")
            if state == _CLOSED:
                self._fail(f"content after the end of the JSON array: {_show(byte)}")
            if byte != _OPEN_BRACE:
                self._elements = count
                self._unexpected(state, byte)
                state = _CLOSED  # an empty array: ``[]``
                pos += 1
                continue
            count += 1
            if shortcut <= pos:
                # The candidate end: the last ``}`` before Gemini's separator (``\n,\r\n``,
                # the only CR of the layout), else the next ``}`` that opens a line.
                if cr < pos:
                    cr = find(b"\r", pos)
                    if cr < 0:
                        cr = size
                if cr < size:
                    stop = rfind(b"}", pos, cr) + 1
                else:
                    if found is None or found.start() < pos:
                        found = _line_brace(data, pos)
                    if found is None:
                        shortcut = size
                        stop = 0
                    else:
                        stop = found.start() + 2
                if pos < stop and stop - pos <= limit:
                    element = data[pos:stop]
                    try:
                        value = loads(element)
                    except unreadable:
                        self._misses += 1
                        if self._misses >= _MISSES:
                            shortcut = size
                    else:
                        read = ReadElement(element)
                        read.value = value
                        events.append(read)
                        if data[stop:stop + 4] == _SEPARATOR:
                            pos = stop + 4
                            state = _NEXT
                        else:
                            pos = stop
                            state = _AFTER
                        continue
            # The reference: the element's end by its nesting depth.
            self._depth = 0
            self._in_string = False
            self._escape = False
            rest = size - pos
            held = None
            if uncounted and rest >= _COUNTED:
                uncounted = False
                held = _state_after(data[pos + 1:], 1, False)
            if held is not None:
                self._depth, self._in_string = held
                end = -1
            else:
                end = self._advance(data, pos)
            if end < 0:
                self._elements = count
                self._state = _ELEMENT
                self._held = bytearray(data[pos:] if pos else data)
                if rest > limit:
                    self._oversize(events)
                return
            if end - pos > limit:
                self._elements = count
                self._oversize(events)
            events.append(data[pos:end])
            pos = end
            state = _AFTER
        self._state = state
        self._elements = count

    def _open(self, data: bytes) -> tuple[bytes, int]:
        """The body's opening: an optional BOM, whitespace, ``[``. Returns the slice and the
        position after its ``[``, or ``-1`` while the ``[`` has not arrived."""
        pos = 0
        if self._bom is not None:
            data = self._bom + data
            if len(data) < len(BOM) and BOM.startswith(data):
                self._bom = data  # a BOM may be arriving
                return data, -1
            self._bom = None
            if data.startswith(BOM):
                pos = len(BOM)
        pos = _skip_space(data, pos).end()  # type: ignore[union-attr]
        if pos >= len(data):
            return data, -1
        if data[pos] != _OPEN_BRACKET:
            self._fail("the body is not a JSON array: its first non-blank character is "
                       f"{_show(data[pos])}, not '['")
        self._state = _FIRST
        return data, pos + 1

    def _resume(self, data: bytes, events: list[bytes]) -> int:
        """The next slice of the element held: where in ``data`` the element ends (its
        elements after it are the caller's), or ``-1`` when it goes on past ``data``."""
        held = self._held
        limit = self._max
        if self._misses < _MISSES:
            # The shortcut, as in :meth:`_scan`; a ``\n}`` may be cut by the slice's start.
            cr = data.find(b"\r")
            if cr >= 0:
                stop = data.rfind(b"}", 0, cr) + 1
            else:
                shift = 1 if held[-1] == 0x0A else 0
                found = _line_brace(b"\n" + data if shift else data)
                stop = 0 if found is None else found.start() + 2 - shift
            if stop > 0 and len(held) + stop <= limit:
                element = bytes(held) + data[:stop]
                try:
                    orjson.loads(element)
                except orjson.JSONDecodeError:
                    self._misses += 1
                else:
                    events.append(element)
                    self._held = bytearray()
                    if data[stop:stop + 4] == _SEPARATOR:
                        self._state = _NEXT
                        return stop + 4
                    self._state = _AFTER
                    return stop
        counted = None
        if len(data) >= _COUNTED and not self._escape:
            counted = _state_after(data, self._depth, self._in_string)
        if counted is not None:
            self._depth, self._in_string = counted
            end = -1
        else:
            end = self._advance(data, 0)
        if end < 0:
            held += data
            if len(held) > limit:
                self._oversize(events)
            return -1
        if len(held) + end > limit:
            self._oversize(events)
        held += data[:end]
        events.append(bytes(held))
        self._held = bytearray()
        self._state = _AFTER
        return end

    def _advance(self, data: bytes, pos: int) -> int:
        """The depth scan from ``pos``, in the state kept: the position just after the
        element's closing byte, or ``-1`` when ``data`` ends first (the state is then kept).

        One step per structural byte (brackets, and the quotes of a string cut by the slice's
        end); runs of anything else, whole strings included, are skipped by one pattern in C.
        """
        size = len(data)
        depth = self._depth
        in_string = self._in_string
        if self._escape:  # the last slice ended on a backslash inside a string
            self._escape = False
            pos += 1
        while pos < size:
            if in_string:
                pos = _inside(data, pos).end()  # type: ignore[union-attr]
                if pos >= size:
                    break
                if data[pos] == _QUOTE:
                    in_string = False
                    pos += 1
                    continue
                self._escape = True  # a backslash, the slice's last byte
                break
            pos = _outside(data, pos).end()  # type: ignore[union-attr]
            if pos >= size:
                break
            byte = data[pos]
            pos += 1
            if byte == _QUOTE:
                in_string = True
            elif byte in (_OPEN_BRACE, _OPEN_BRACKET):
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    self._depth = 0
                    self._in_string = False
                    return pos
        self._depth = depth
        self._in_string = in_string
        return -1

    # -- errors ----------------------------------------------------------------------------

    def _unexpected(self, state: int, byte: int) -> None:
        """Where an element or the ``]`` may come, ``byte`` came: raise, unless it is the
        ``]`` of an empty array."""
        count = self._elements
        if byte == _CLOSE_BRACKET:
            if state == _FIRST:
                return
            self._fail(f"the JSON array has a comma before its closing ']' (after element "
                       f"{count})")
        if byte == _COMMA:
            if state == _FIRST:
                self._fail("the JSON array has a comma before its first element")
            self._fail(f"the JSON array has a doubled comma after element {count}")
        self._fail(f"element {count + 1} of the JSON array is not an object: it starts with "
                   f"{_show(byte)}")

    def _fail(self, detail: str) -> NoReturn:
        """Malformed framing: the framer reads nothing more."""
        self._state = _FAILED
        self.close(count=False)
        raise FramingDamage(detail)

    def _oversize(self, events: list[bytes]) -> NoReturn:
        self._state = _FAILED
        self._held = bytearray()
        raise LineOversize(f"an element of the JSON array is longer than {self._max} bytes",
                           events)

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> bytes | None:
        """The body ended. ``None`` when the array was closed by its ``]``, the framer was
        closed (by its wire, or after an error) or no byte arrived; otherwise the body ended
        before its array did (cut short): the bytes of the element left unfinished, or ``b""``
        when none was in progress. Asking again gives the same answer."""
        state = self._state
        if self.closed or state in (_CLOSED, _FAILED):
            return None
        if state == _ELEMENT:
            return bytes(self._held)
        if state == _BEFORE and self._bom == b"":
            return None  # nothing arrived
        return b""

    def _release(self) -> None:
        self._held = bytearray()

    def pending(self) -> bool:
        """Whether bytes of an unfinished element are held."""
        return not self.closed and self._state == _ELEMENT

    @classmethod
    def opens(cls, head: bytes) -> bool | None:
        """A body whose first non-blank character (after an optional BOM) is ``[`` is a JSON
        array; another character says it is not; only whitespace or part of a BOM so far: not
        yet known."""
        if len(head) < len(BOM) and BOM.startswith(head):
            return None
        first = head[len(BOM):] if head.startswith(BOM) else head
        first = first.lstrip(_SPACE)[:1]
        return None if not first else first == b"["

    @staticmethod
    def split(body: bytes) -> list[bytes]:
        """``body`` cut right after each element's closing byte, losing and changing nothing
        (``b"".join(split(body)) == body``): the comma and whitespace after an element, and
        the array's ``]``, open the next piece (the last holds the ``]``); what comes before
        the first element (a BOM, the ``[``) opens the first. Never raises: from malformed
        framing on, the rest of the body is one piece."""
        framer = JSONArrayFramer(len(body) + 1)
        events: list[bytes] = []
        with contextlib.suppress(MalformedChunk):
            framer._scan(body, events)
        pieces: list[bytes] = []
        start = 0
        for element in events:
            # Between two elements come only a comma, whitespace (or the BOM and the ``[``):
            # the next ``{`` is the element's first byte.
            end = body.index(b"{", start) + len(element)
            pieces.append(body[start:end])
            start = end
        if start < len(body):
            pieces.append(body[start:])
        return pieces


__all__ = ["JSONArrayFramer", "ReadElement"]
