"""NDJSON framing (``application/x-ndjson``: Ollama's native ``/api/chat``): one event per line.

An event is one non-blank line, without its line end (``\\n``, or ``\\r\\n``: a ``\\r`` before
the ``\\n`` is dropped, whether or not the two arrived in one slice). Blank lines are nothing.
The framer keeps only the unterminated last line between slices, and a line over the bound
raises :class:`~toolwire.core.framing.LineOversize` with the lines completed before it, named
the same whether it arrives whole or in pieces.

A last line without its line end is not an event: :meth:`NDJSONFramer.finish` gives it to the
wire, which decides (Ollama ends every line, so it is a body cut short).
"""

from __future__ import annotations

from toolwire.core.framing._base import EventFramer, LineOversize


class NDJSONFramer(EventFramer):
    """Turns body slices into NDJSON lines."""

    __slots__ = ("_max_line", "_tail", "_tail_len")

    name = "ndjson"

    def __init__(self, max_line_bytes: int, names: bool = False) -> None:
        super().__init__(max_line_bytes, names)  # NDJSON has no names; JSON is its events
        self._max_line = max_line_bytes
        self._tail: list[bytes] = []
        self._tail_len = 0

    def _frame(self, data: bytes) -> list[bytes]:
        if b"\n" not in data:
            self._extend(data, [])
            return []
        lines = data.split(b"\n")
        last = lines.pop()
        if self._tail:
            self._tail.append(lines[0])
            lines[0] = b"".join(self._tail)
            self._tail = []
            self._tail_len = 0
        limit = self._max_line
        events: list[bytes] = []
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if len(line) > limit:
                raise LineOversize(f"an NDJSON line is longer than {limit} bytes", events)
            if line.strip():
                events.append(line)
        if last:
            self._extend(last, events)
        return events

    def _extend(self, piece: bytes, events: list[bytes]) -> None:
        self._tail.append(piece)
        self._tail_len += len(piece)
        # A CR that may be the first half of a CRLF is not counted against the bound.
        if self._tail_len - (piece[-1:] == b"\r") > self._max_line:
            raise LineOversize(f"an NDJSON line is longer than {self._max_line} bytes",
                               events)

    def finish(self) -> bytes | None:
        if self.closed or not self._tail:
            return None
        line = b"".join(self._tail).rstrip(b"\r")
        return line if line.strip() else None

    def _release(self) -> None:
        self._tail = []
        self._tail_len = 0

    def pending(self) -> bool:
        return not self.closed and any(piece.strip() for piece in self._tail)

    @classmethod
    def opens(cls, head: bytes) -> bool | None:
        """A body whose first non-blank character is ``{`` may be NDJSON (or any JSON body:
        :attr:`proves` is false, the first line must be recognized); blank so far: not yet
        known."""
        first = head.lstrip(b" \t\r\n")[:1]
        return None if not first else first == b"{"

    @staticmethod
    def split(body: bytes) -> list[bytes]:
        """``body`` cut after each line end (``\n``); blank lines stay with the line before
        them, and blank lines at the very start with the first line, so that no piece holds
        only blank lines."""
        pieces: list[bytes] = []
        pos = 0
        size = len(body)
        while pos < size:
            newline = body.find(b"\n", pos)
            end = size if newline < 0 else newline + 1
            line = body[pos:end]
            if pieces and (not line.strip() or not pieces[-1].strip()):
                pieces[-1] += line
            else:
                pieces.append(line)
            pos = end
        return pieces
