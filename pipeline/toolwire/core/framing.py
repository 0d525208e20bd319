"""SSE framing from arbitrary byte slices of a response body.

Gateways publish the body as it was read: a slice may end mid-line, between ``\\r`` and ``\\n``
or inside a multi-byte UTF-8 character. The framer works on bytes (so a split character is never
decoded half-way) and keeps only the unterminated tail between slices, so the cost of a slice is
proportional to the slice, never to what came before.
"""

from __future__ import annotations

from typing import Final

from toolwire.core.errors import Oversize

BOM: Final = b"\xef\xbb\xbf"
DONE: Final = b"[DONE]"


class ErrorEvent(bytes):
    """The data of an event named ``error`` (``event: error``): a provider error, not a chunk.

    Groq ends a failed tool call with such a frame instead of ``[DONE]``. Marking the payload by
    its type keeps the framer's output a list of bytes on the hot path (one ``type`` check).
    """

    __slots__ = ()


class Framer:
    """Turns body slices into SSE event payloads (the joined ``data:`` lines of each event)."""

    __slots__ = ("_data", "_data_len", "_event", "_head", "_max_line", "_skip_lf", "_tail",
                 "_tail_len", "done")

    def __init__(self, max_line_bytes: int) -> None:
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
        #: The ``event:`` name of the event being read, when it has one.
        self._event: bytes | None = None
        #: The body ended explicitly (``data: [DONE]``, or :meth:`close`); the rest is ignored.
        self.done = False

    def feed(self, data: bytes) -> list[bytes]:
        """Return the payloads of the events that this slice completes, in order."""
        if self.done or not data:
            return []
        if self._head is not None:
            data = self._head + data
            if len(data) < len(BOM) and BOM.startswith(data):
                self._head = data
                return []
            self._head = None
            if data.startswith(BOM):
                data = data[len(BOM):]
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
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in data:
            self._extend_tail(data)
            return []
        lines = data.split(b"\n")
        last = lines.pop()
        if self._tail:
            self._tail.append(lines[0])
            lines[0] = b"".join(self._tail)
            self._tail = []
            self._tail_len = 0
            if len(lines[0]) > self._max_line:
                raise Oversize(f"an SSE line is longer than {self._max_line} bytes")
        if last:
            self._extend_tail(last)
        return self._lines(lines)

    def _extend_tail(self, piece: bytes) -> None:
        self._tail.append(piece)
        self._tail_len += len(piece)
        if self._tail_len > self._max_line:
            raise Oversize(f"an SSE line is longer than {self._max_line} bytes")

    def _lines(self, lines: list[bytes]) -> list[bytes]:
        events: list[bytes] = []
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
                    if payload == DONE:
                        self.close()
                        event = None
                        break
                    if event is not None and event == b"error":
                        payload = ErrorEvent(payload)
                    events.append(payload)
                event = None
                continue
            if line[:6] == b"data: ":  # the common case first: one slice, not two
                value = line[6:]
            elif line[:5] == b"data:":
                value = line[5:]
            else:
                if len(line) > limit:
                    raise Oversize(f"an SSE line is longer than {limit} bytes")
                if line[:6] == b"event:":
                    # Only the name "error" matters (a provider error frame); the chunks
                    # themselves are told apart by their JSON, never by the event name.
                    event = line[6:].strip()
                # Comments (":"), "id:", "retry:", unknown fields: nothing we use.
                continue
            data_len += len(value) + 1
            if data_len > limit:
                raise Oversize(f"an SSE event's data is longer than {limit} bytes")
            data.append(value)
        self._data_len = data_len
        self._event = event
        return events

    def close(self) -> None:
        """End the body here (an explicit end the wire sent): later input is ignored."""
        self.done = True
        self._tail = []
        self._tail_len = 0
        self._data = []
        self._data_len = 0
        self._event = None

    def pending(self) -> bool:
        """Whether bytes of an unfinished event are held (the body ended mid-event)."""
        return bool(self._tail or self._data)

    def finish(self) -> bool:
        """The body ended: whether it ended with ``data: [DONE]``.

        Many servers close the stream right after ``data: [DONE]\\n`` without the blank line;
        that is still an explicit end. Any other unfinished event is a body cut short, which is
        not parsed (half a JSON object is a dropped connection, not a malformed chunk).
        """
        if self.done:
            return True
        lines = [b"".join(self._tail)] if self._tail else []
        self._tail = []
        self._tail_len = 0
        data = self._data
        for line in lines:
            if line[:5] == b"data:":
                data.append(line[6:] if line[5:6] == b" " else line[5:])
        self.done = data == [DONE]
        return self.done

    # -- state -------------------------------------------------------------------------------

    def snapshot(self) -> list[object]:
        """Compact, JSON-able state; bytes are carried as latin-1 text so they restore exactly."""
        return [
            b"".join(self._tail).decode("latin-1"),
            [d.decode("latin-1") for d in self._data],
            self._skip_lf,
            None if self._head is None else self._head.decode("latin-1"),
            self.done,
            None if self._event is None else self._event.decode("latin-1"),
        ]

    @classmethod
    def restore(cls, state: list[object], max_line_bytes: int) -> Framer:
        tail, data, skip_lf, head, done, *rest = state
        event = rest[0] if rest else None  # state written before event names were kept
        assert isinstance(tail, str) and isinstance(data, list)
        framer = cls(max_line_bytes)
        if tail:
            framer._tail = [tail.encode("latin-1")]
            framer._tail_len = len(framer._tail[0])
        framer._data = [str(d).encode("latin-1") for d in data]
        framer._data_len = sum(len(d) + 1 for d in framer._data)
        framer._skip_lf = bool(skip_lf)
        framer._head = None if head is None else str(head).encode("latin-1")
        framer.done = bool(done)
        framer._event = None if event is None else str(event).encode("latin-1")
        return framer
