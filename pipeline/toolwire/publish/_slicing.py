"""Cutting a response body into message values without changing a byte.

The invariant: ``b"".join(pieces) == body``, exactly, for every body and every way of cutting
it. The processor re-frames any slicing, so the cut points are free; what is not free is the
bytes: a capture replayed through :func:`split_events` or :func:`split_fixed` must reach the
pipeline as the very bytes the provider sent (CR, CRLF or LF line ends, a BOM, bytes after
``[DONE]``), or a replay would test something other than what production saw.
"""

from __future__ import annotations


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


def split_fixed(body: bytes, size: int) -> list[bytes]:
    """``size``-byte slices (the last may be shorter): the worst case a gateway can produce.

    Slices ignore lines, CRLF pairs and UTF-8 characters on purpose; the pipeline must cope.
    """
    if size <= 0:
        raise ValueError(f"slice size must be positive, got {size}")
    return [body[i:i + size] for i in range(0, len(body), size)]

