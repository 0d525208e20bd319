"""SSE framing from arbitrary byte slices of a response body: events, each its data and name.

Gateways publish the body as it was read: a slice may end mid-line, between ``\\r`` and ``\\n``
or inside a multi-byte UTF-8 character. The framer works on bytes (so a split character is never
decoded half-way) and keeps only the unterminated tail between slices, so the cost of a slice is
proportional to the slice, never to what came before.

The framer knows SSE and nothing of what an event means: it has no end sentinel (a ``[DONE]``
payload is data like any other). Where a body ends (``data: [DONE]``, an end object, an error
event) is the wire's decision (:mod:`toolwire.core.wires`), which then closes the framer
(:meth:`Framer.close`).

An event is its data as ``bytes``. An event that had an ``event:`` line is a
:class:`NamedEvent`, a ``bytes`` subclass carrying ``.name`` (:func:`event_name`). Why not
``(name, data)`` pairs: the common event (Chat Completions names none) then costs nothing beyond
its payload, where a pair would cost a tuple per event and an unpack in every wire's loop; a
wire tells the two apart with one ``type`` check, and the list is a ``list[bytes]`` either way.
As in the SSE specification, ``event: message`` (or an empty name) is the default type: no name.
A framer built with ``names=False`` (for a wire that dispatches on the JSON's own ``type``:
:attr:`toolwire.core.wires.Wire.reads_event_names`) drops the names and gives plain data.

The common event, one ``data:`` line and its blank line, is read a whole slice at a time
(:meth:`Framer._simple_events`); any other line sends the slice through the reading line by
line, which is the reference: the two give the same events and the same bound, however the body
is sliced (``tests/core/test_framing.py`` holds them to a reading of the specification).

A body whose first non-blank character is ``[`` or ``{`` is JSON, not SSE (Gemini's
``streamGenerateContent`` without ``?alt=sse`` sends a JSON array; a non-streaming response or
an error body is an object). Read as SSE, its lines are all unknown fields, dropped one by one,
and the body would look empty. The framer tells it where it reads the body's opening (the BOM
check, once per body), never on the lines of an SSE body: it sets :attr:`Framer.json_body` (the
opening character) and raises :class:`~toolwire.core.errors.MalformedChunk`, on every wire (each
is SSE).
"""

from __future__ import annotations

import re
from typing import Final

from toolwire.core.errors import MalformedChunk
from toolwire.core.framing._base import EventFramer, LineOversize

BOM: Final = b"\xef\xbb\xbf"
#: The SSE default event type: an ``event:`` line naming it (or naming nothing) is no name.
_DEFAULT_TYPES: Final = (b"", b"message")
#: A CR that is not the first half of a CRLF: a line end of its own.
_LONE_CR: Final = re.compile(rb"\r(?!\n)")
#: JSON's whitespace: what may come before the ``[`` or ``{`` of a JSON body.
_JSON_SPACE: Final = b" \t\r\n"
#: How each opening reads, for the dead letter's detail.
_JSON_OPENINGS: Final = {
    b"[": "a JSON array, as Gemini's streamGenerateContent sends without ?alt=sse",
    b"{": "a JSON object, as a non-streaming response or an error body is"}


class NamedEvent(bytes):
    """The data of an event that had an ``event:`` line other than the default ``message``.

    orjson reads ``bytes`` itself, not a subclass: a wire decodes ``bytes(event)``.
    """

    name: str

    def __new__(cls, data: bytes, name: str) -> NamedEvent:
        event = super().__new__(cls, data)
        event.name = name
        return event

    def __repr__(self) -> str:
        return f"NamedEvent({bytes(self)!r}, {self.name!r})"


def event_name(event: bytes) -> str | None:
    """The name of an event the framer returned (``None``: the default type, ``message``)."""
    return event.name if type(event) is NamedEvent else None


class Framer(EventFramer):
    """Turns body slices into SSE events (the joined ``data:`` lines of each, and its name).

    A JSON body raises :class:`~toolwire.core.errors.MalformedChunk` from :meth:`feed`, with
    :attr:`json_body` set to its opening character.
    """

    name = "sse"

    __slots__ = ("_data", "_data_len", "_event", "_head", "_max_line", "_opening", "_skip_lf",
                 "_tail", "_tail_len")

    def __init__(self, max_line_bytes: int, names: bool = True) -> None:
        super().__init__(max_line_bytes, names)
        self._max_line = max_line_bytes
        #: Pieces of the current unterminated line (joined only when its end arrives).
        self._tail: list[bytes] = []
        self._tail_len = 0
        #: ``data:`` values of the event being read (dispatched at the blank line).
        self._data: list[bytes] = []
        self._data_len = 0
        #: The previous slice ended with ``\r``: a leading ``\n`` now completes that CRLF.
        self._skip_lf = False
        #: Bytes seen before the BOM check could decide (``None`` once decided).
        self._head: bytes | None = b""
        #: The body's first non-blank character is still to come (BOM check, JSON check).
        self._opening = True
        #: The ``event:`` name of the event being read, when it has one.
        self._event: str | None = None

    def _frame(self, data: bytes) -> list[bytes]:
        if self._opening:
            data = self._open(data)
            if not data:
                return []
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
                if not data:
                    return []
        if b"\r" in data:
            if data[-1:] == b"\r":
                self._skip_lf = True
            if _LONE_CR.search(data) is None:
                # CRLF only (Gemini's framing): deleting each CR is one pass, three times
                # faster than replacing each pair
                data = data.translate(None, b"\r")
            else:  # a lone CR (old Mac framing, or a CRLF cut at the slice's end)
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in data:
            self._extend_tail(data, [])
            return []
        lines = data.split(b"\n")
        last = lines.pop()
        if self._tail:
            self._tail.append(lines[0])
            lines[0] = b"".join(self._tail)
            self._tail = []
            self._tail_len = 0
            if len(lines[0]) > self._max_line:
                raise LineOversize(f"an SSE line is longer than {self._max_line} bytes", [])
        events = self._lines(lines)
        if last:
            self._extend_tail(last, events)
        return events

    def _open(self, data: bytes) -> bytes:
        """The body's opening: drop a BOM, and tell a JSON body by its first non-blank byte.

        Returns what is left to frame (nothing while a BOM may still be arriving). Whitespace
        before the first non-blank byte is framed as usual (blank lines), so the check never
        holds bytes back and gives the same answer however the body is sliced.
        """
        if self._head is not None:
            data = self._head + data
            if len(data) < len(BOM) and BOM.startswith(data):
                self._head = data
                return b""
            self._head = None
            if data.startswith(BOM):
                data = data[len(BOM):]
        first = data.lstrip(_JSON_SPACE)[:1]
        if first:
            self._opening = False
            kind = _JSON_OPENINGS.get(first)
            if kind is not None:
                self.json_body = first.decode()
                self.close(count=False)
                raise MalformedChunk(f"the body is not SSE ({kind}): its first non-blank "
                                     f"character is {self.json_body!r}")
        return data

    def _extend_tail(self, piece: bytes, events: list[bytes]) -> None:
        self._tail.append(piece)
        self._tail_len += len(piece)
        if self._tail_len > self._max_line:
            raise LineOversize(f"an SSE line is longer than {self._max_line} bytes", events)

    def _lines(self, lines: list[bytes]) -> list[bytes]:
        if not self.names and max(map(len, lines)) <= self._max_line:
            # The names are not kept: their lines are nothing (no line is over the bound,
            # which the reading line by line below would raise at its place)
            lines = [line for line in lines if line[:6] != b"event:"]
        events = self._simple_events(lines)
        if events:
            lines = lines[2 * len(events):]
            if not lines:
                return events
        data = self._data
        data_len = self._data_len
        limit = self._max_line
        event = self._event
        for line in lines:
            if not line:
                if data:
                    payload = data[0] if len(data) == 1 else b"\n".join(data)
                    data.clear()
                    data_len = 0
                    events.append(payload if event is None else NamedEvent(payload, event))
                event = None
                continue
            if line[:6] == b"data: ":  # the common case first: one slice, not two
                value = line[6:]
            elif line[:5] == b"data:":
                value = line[5:]
            else:
                if len(line) > limit:
                    raise LineOversize(f"an SSE line is longer than {limit} bytes", events)
                if line[:6] == b"event:" and self.names:
                    name = line[6:].strip()
                    event = None if name in _DEFAULT_TYPES else name.decode("utf-8", "replace")
                # Comments (":"), "id:", "retry:", unknown fields: nothing we use.
                continue
            # Counted as lines (field name included), as a line still arriving is counted:
            # the bound then does not depend on where the body was sliced.
            data_len += len(line)
            if data_len > limit:
                # One line over the bound is named as it is when it arrives in pieces: the
                # record must not depend on where the body was sliced.
                raise LineOversize(f"an SSE line is longer than {limit} bytes"
                                   if len(line) > limit else
                                   f"an SSE event's data lines are longer than {limit} bytes",
                                   events)
            data.append(value)
        self._data_len = data_len
        self._event = event
        return events

    def _simple_events(self, lines: list[bytes]) -> list[bytes]:
        """The events of the common form, ``data: …`` then a blank line, from a slice's
        complete lines, all at once; ``[]`` unless every pair of lines is one (then the lines
        are read one by one, as the form they have needs).

        Why: read line by line, two lines per event cost more than their JSON does (events of
        a few hundred bytes); a list comprehension over the data lines costs a fifth of that.
        """
        if self._data or self._event is not None:
            return []  # an event is under way: its lines need reading as lines
        pairs = len(lines) & ~1
        if not pairs or any(lines[1:pairs:2]):  # not every second line is blank
            return []
        heads = lines[0:pairs:2]
        events = [line[6:] for line in heads if line[:6] == b"data: "]
        if len(events) != len(heads) or max(map(len, heads)) > self._max_line:
            return []  # other fields, or an event over the bound (read as lines, it raises)
        return events

    def _release(self) -> None:
        self._tail = []
        self._tail_len = 0
        self._data = []
        self._data_len = 0
        self._event = None

    def pending(self) -> bool:
        """Whether bytes of an unfinished event are held (the body ended mid-event)."""
        return not self.closed and bool(self._tail or self._data)

    def finish(self) -> bytes | None:
        """The body ended: the data of a last event left unterminated, or ``None`` if none is.

        Its last line counts even without a line end (many servers close the stream right after
        ``data: [DONE]\\n``, without the blank line). The framer does not dispatch it: whether
        it is the wire's explicit end, or a body cut short, is the wire's decision. Asking
        again gives the same answer.
        """
        if self.closed:
            return None
        if self._tail:
            line = b"".join(self._tail)
            self._tail = []
            self._tail_len = 0
            if line[:5] == b"data:":
                self._data.append(line[6:] if line[5:6] == b" " else line[5:])
        data = self._data
        if not data:
            return None
        payload = data[0] if len(data) == 1 else b"\n".join(data)
        return payload if self._event is None else NamedEvent(payload, self._event)

    @staticmethod
    def split(body: bytes) -> list[bytes]:
        return split_events(body)


def split_events(body: bytes) -> list[bytes]:
    """Cut ``body`` after each SSE event's blank line, losing and changing nothing.

    Replaying a capture one event per message reproduces what a server flushing event by
    event sends, so ``b"".join(split_events(body)) == body`` must hold exactly: the pipeline
    sees the very bytes of the capture, with CR, CRLF or LF line ends, a BOM and any bytes after
    ``[DONE]`` left as they are.

    A piece starts at the first line of an event; extra blank lines (which dispatch nothing)
    stay with the event before them, and blank lines at the very start with the first event,
    so that no message carries only blank lines. Whatever trails without a closing blank
    line is the last piece. ``\\r\\n`` is one line end, so no cut falls between ``\\r`` and
    ``\\n``.
    """
    pieces: list[bytes] = []
    start = 0
    pos = 0  # where the current line starts
    n = len(body)
    seen_content = False
    prev_blank = False
    while pos < n:
        cr = body.find(b"\r", pos)
        lf = body.find(b"\n", pos)
        if cr < 0 and lf < 0:
            eol = end = n  # an unterminated last line
        elif cr < 0 or 0 <= lf < cr:
            eol, end = lf, lf + 1
        else:
            eol = cr
            end = cr + 2 if body[cr + 1:cr + 2] == b"\n" else cr + 1
        blank = eol == pos
        if not blank:
            if prev_blank and seen_content:
                pieces.append(body[start:pos])
                start = pos
            seen_content = True
        prev_blank = blank
        pos = end
    if start < n:
        pieces.append(body[start:])
    return pieces
