"""Cutting a response body into message values without changing a byte.

The invariant: ``b"".join(pieces) == body``, exactly, for every body and every way of cutting
it. The processor re-frames any slicing, so the cut points are free; what is not free is the
bytes: a capture replayed through :func:`split_events` or :func:`split_fixed` must reach the
pipeline as the very bytes the provider sent (CR, CRLF or LF line ends, a BOM, bytes after
``[DONE]``), or a replay would test something other than what production saw.
"""

from __future__ import annotations

from toolwire.core.framing import EventFramer, Framer
from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES


def split_events(body: bytes, wire: str = DEFAULT_WIRE) -> list[bytes]:
    """Cut ``body`` after each of its events, losing and changing nothing, where the framing
    of ``wire`` says its events end (SSE: after each event's blank line; NDJSON: after each
    line; event-stream: after each message; a JSON array: after each element): a replay one
    event per message is what a server flushing event by event sends.

    ``b"".join(split_events(body)) == body`` holds exactly: the pipeline sees the very bytes
    of the capture, with CR, CRLF or LF line ends, a BOM and any bytes after the end left as
    they are (see :meth:`toolwire.core.framing.EventFramer.split`).
    """
    return framing_of(wire, body).split(body)


def framing_of(wire: str, body: bytes = b"") -> type[EventFramer]:
    """The framing a body of ``wire`` is cut by: the one of the wire's framings its opening
    proves (Gemini's JSON array), else the wire's own (``auto``: any framing a wire reads
    whose opening the body has, else SSE, as ``auto`` reads)."""
    named = SUPPORTED_WIRES.get(wire)
    wires = list(SUPPORTED_WIRES.values()) if named is None else [named]
    head = body[:64]
    for reader in wires:
        for framing in (reader.framing, *reader.other_framings):
            if framing is not Framer and framing.opens(head):
                return framing
    return named.framing if named is not None else Framer


def split_fixed(body: bytes, size: int) -> list[bytes]:
    """``size``-byte slices (the last may be shorter): the worst case a gateway can produce.

    Slices ignore lines, CRLF pairs and UTF-8 characters on purpose; the pipeline must cope.
    """
    if size <= 0:
        raise ValueError(f"slice size must be positive, got {size}")
    return [body[i:i + size] for i in range(0, len(body), size)]

