"""What a framer is: the one seam between a body's bytes and its wire's events.

A wire reads events; how its API cuts a body into events (SSE's blank lines, NDJSON's line
ends) is the framer's, and the wire names its framer (:attr:`toolwire.core.wires.Wire.framing`),
so the assembler builds whichever the wire reads through and knows none of them.

Every framer keeps the invariant the SSE framer always kept: **the same events however the body
is sliced** (a slice may end anywhere, inside a line, a CRLF pair or a UTF-8 character), and
the same bound: an event over ``max_line_bytes`` raises :class:`LineOversize` with the events
completed before it, whichever slice it arrives in. The cost of a slice is proportional to the
slice: only the unfinished event is kept between slices.

A framer knows no end sentinel: where a body ends is its wire's decision, which then closes the
framer (:meth:`EventFramer.close`); what follows is framed only to be counted.

:meth:`EventFramer.split` is the same knowledge, offline: where a body's events end, so that a
publisher replaying a capture one event per message (``toolwire publish``) cuts it where the
provider's server would have flushed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from toolwire.core.errors import MalformedChunk, Oversize


class LineOversize(Oversize):
    """A line (or one event's data) over the bound, with the events completed before it.

    The wire may have ended the body before the overlong line; the assembler lets it read
    :attr:`events` first, so the outcome does not depend on where the body was sliced.
    """

    def __init__(self, detail: str, events: list[bytes]) -> None:
        super().__init__(detail)
        self.events = events


class FramingDamage(MalformedChunk):
    """Bytes that break the framing (a bad event-stream CRC, a JSON array's missing comma),
    with the events completed before them in the same slice (:attr:`events`), as
    :class:`LineOversize` carries them.

    The wire may have ended the body on one of those events, and what follows its end is not
    read: the assembler applies :attr:`events` first, and drops the damage when the wire
    ended, so the record is the same however the body was sliced.
    """

    def __init__(self, detail: str, events: list[bytes] | None = None) -> None:
        super().__init__(detail)
        self.events: list[bytes] = [] if events is None else events


class EventFramer(ABC):
    """Turns body slices into the events of one wire's API (see the module docstring)."""

    __slots__ = ("after_close", "closed", "counting", "json_body", "names")

    #: The registry name (``sse``, ``ndjson``).
    name: ClassVar[str]
    #: Whether an opening this framing :meth:`opens` proves the body is framed so (an
    #: event-stream prelude with its CRC, a JSON array's ``[``), or only allows it (NDJSON's
    #: ``{``, which any JSON body opens with): then the first event must be recognized too.
    proves: ClassVar[bool] = False

    def __init__(self, max_line_bytes: int, names: bool = True) -> None:
        #: Whether events keep their names (SSE's ``event:`` lines); framings without names
        #: ignore it.
        self.names = names
        #: The wire ended the body (:meth:`close`): the rest is not read.
        self.closed = False
        #: After :meth:`close`, the rest is still framed to count its events (never read):
        #: :attr:`after_close`, until a line over the bound ends the count.
        self.counting = False
        #: Events framed after :meth:`close`, counted, never read.
        self.after_close = 0
        #: The body's first non-blank character when it is JSON where the framing expects
        #: none (SSE: ``[`` or ``{``); ``None`` otherwise. Read by ``auto``.
        self.json_body: str | None = None

    def feed(self, data: bytes) -> list[bytes]:
        """The events this slice completes, in order.

        An overlong line raises :class:`LineOversize`, carrying the events before it.
        """
        if self.closed or not data:
            if self.counting and data:
                self._count(data)
            return []
        return self._frame(data)

    @abstractmethod
    def _frame(self, data: bytes) -> list[bytes]:
        """The events of one slice of the body before its end."""

    def _count(self, data: bytes) -> None:
        """Frame input after the end only to count its events (OpenRouter's ``[DONE]`` after
        ``response.completed``): the state carries on from before the end, so the count
        does not depend on where the body was sliced."""
        try:
            self.after_close += len(self._frame(data))
        except LineOversize as overlong:  # nothing after it is framed, whatever the slicing
            self.after_close += len(overlong.events)
            self.close(count=False)

    @abstractmethod
    def finish(self) -> bytes | None:
        """The body ended: the data of an event left unterminated, or ``None``. Asking again
        gives the same answer; the wire decides what it means."""

    def close(self, count: bool = True) -> None:
        """End the body here (the wire saw its end): later input is not read. With
        ``count``, it is framed to count its events (:attr:`after_close`); without, the
        framer lets go of what it holds."""
        self.closed = True
        self.counting = count
        if not count:
            self._release()

    @abstractmethod
    def _release(self) -> None:
        """Let go of the unfinished event held (the body is over and not counted)."""

    @abstractmethod
    def pending(self) -> bool:
        """Whether bytes of an unfinished event are held."""

    @classmethod
    def opens(cls, head: bytes) -> bool | None:
        """Whether a body that begins with ``head`` is framed this way, by its opening bytes
        alone (``None``: too few bytes yet to say). How a wire that reads more than one
        framing (Gemini: SSE, or a JSON array without ``?alt=sse``), and ``auto``, tell a
        body's framing before framing it. A framing that cannot tell says no."""
        return False

    @staticmethod
    @abstractmethod
    def split(body: bytes) -> list[bytes]:
        """``body`` cut after each event, losing and changing nothing
        (``b"".join(split(body)) == body``)."""
