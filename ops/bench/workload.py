"""The input of the benchmarks: responses built from real provider captures, as messages.

Every response is a capture of the core corpus (``tests/core/corpus/*.sse``, read as data;
the bundled samples when there is no checkout) cut one SSE event per message with
:func:`toolwire.publish.split_events`, stretched or cut to the wanted number of events by
repeating its middle events (the first event and the last two — finish and ``[DONE]`` — are
kept), with its own session and request id, numbered ``chunk-seq`` 0, 1, … and closed by an
``end-of-stream: eof`` marker, exactly as :class:`toolwire.publish.ChunkPublisher` sends it.
Only captures whose stretched body still assembles (``toolwire.core.assemble``) are used.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from toolwire.core import Options, assemble
from toolwire.publish import split_events
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_REQUEST_ID

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "core" / "corpus"
SAMPLES = ROOT / "pipeline" / "toolwire" / "samples"

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Message:
    """One input message; ``end`` marks a response's end marker."""

    key: bytes
    value: bytes
    headers: Headers
    request: str
    end: bool = False

    def size(self) -> int:
        """Key and value bytes (what the state-write ratios compare against)."""
        return len(self.key) + len(self.value)


@dataclass(frozen=True, slots=True)
class Response:
    request: str
    session: str
    #: Body messages then the end marker.
    messages: tuple[Message, ...]
    capture: str

    @property
    def events(self) -> int:
        return len(self.messages) - 1


@cache
def captures() -> tuple[tuple[str, tuple[bytes, ...]], ...]:
    """(name, events) of every capture that can be stretched: at least four events, and
    assembled (not dead-lettered) both as it is and stretched to 144 events."""
    directory = CORPUS if CORPUS.is_dir() else SAMPLES
    out = []
    for path in sorted(directory.glob("*.sse")):
        body = path.read_bytes()
        events = tuple(split_events(body))
        if len(events) < 4 or assemble(body, Options())["outcome"] != "assembled":
            continue
        if assemble(b"".join(stretch(events, 144)), Options())["outcome"] != "assembled":
            continue
        out.append((path.stem, events))
    if not out:
        raise RuntimeError(f"no usable captures in {directory}")
    return tuple(out)


def stretch(events: tuple[bytes, ...], count: int) -> list[bytes]:
    """``count`` events: the first, the middle ones repeated (or cut), the last two."""
    head, middle, tail = events[:1], events[1:-2], events[-2:]
    if count < 3:
        raise ValueError("a stretched response has at least 3 events")
    return [*head, *itertools.islice(itertools.cycle(middle), count - 3), *tail]


def grouped(events: tuple[bytes, ...], count: int) -> list[bytes]:
    """The whole capture in exactly ``count`` messages (several events per message):
    the first event, the middle ones split evenly, the last two together."""
    if count < 3:
        raise ValueError("at least 3 messages")
    head, middle, tail = events[:1], list(events[1:-2]), events[-2:]
    parts = count - 2
    size = -(-len(middle) // parts) if middle else 0
    pieces = [b"".join(middle[i * size:(i + 1) * size]) for i in range(parts)]
    pieces = [p for p in pieces if p]
    while len(pieces) < parts:  # fewer middle events than parts: split the largest piece
        big = max(range(len(pieces)), key=lambda i: len(pieces[i]))
        piece = pieces[big]
        pieces[big:big + 1] = [piece[:len(piece) // 2], piece[len(piece) // 2:]]
    return [b"".join(head), *pieces, b"".join(tail)]


def messages_of(request: str, session: str, bodies: list[bytes]) -> tuple[Message, ...]:
    key = session.encode()
    base = ((H_REQUEST_ID, request.encode()),)
    out = [Message(key, body, (*base, (H_CHUNK_SEQ, str(seq).encode())), request)
           for seq, body in enumerate(bodies)]
    out.append(Message(key, b"", (*base, (H_CHUNK_SEQ, str(len(bodies)).encode()),
                                  (H_END, b"eof")), request, end=True))
    return tuple(out)


def responses(count: int, events: int, prefix: str) -> list[Response]:
    """``count`` responses of ``events`` events each (one event per message)."""
    return _responses(count, prefix, lambda capture: stretch(capture, events))


def small_responses(count: int, prefix: str, parts: int = 3) -> list[Response]:
    """``count`` responses of ``parts`` body messages each, the whole capture grouped."""
    return _responses(count, prefix, lambda capture: grouped(capture, parts))


def _responses(count: int, prefix: str, cut: Callable[[tuple[bytes, ...]], list[bytes]]
               ) -> list[Response]:
    """``count`` responses cycling through the captures, each cut into messages by ``cut``."""
    usable = captures()
    out = []
    for i in range(count):
        name, capture = usable[i % len(usable)]
        request, session = f"{prefix}r{i:06d}", f"{prefix}s{i:06d}"
        out.append(Response(request, session, messages_of(request, session, cut(capture)),
                            name))
    return out


def flat(rs: list[Response]) -> list[Message]:
    """Every message, response after response."""
    return [m for r in rs for m in r.messages]


def partition_of(key: bytes, partitions: int) -> int:
    """Stable spread of keys (the harness chooses partitions itself: no client hashing
    differences between producers)."""
    return zlib.crc32(key) % partitions


@dataclass(frozen=True, slots=True)
class Timed:
    at: float
    message: Message


def live_schedule(rate: float, seconds: float, prefix: str, *, events: int = 40,
                  stream_seconds: float = 1.0) -> tuple[list[Timed], int]:
    """Streams of ``events`` events lasting ``stream_seconds``, started at a steady rate so
    that ``rate`` events/s flow for ``seconds``; the end marker goes with the last event.
    Returns the schedule (sorted by time) and the number of streams."""
    streams = max(1, round(rate * seconds / events))
    every = events / rate
    gap = stream_seconds / max(1, events - 1)
    timed: list[Timed] = []
    for i, response in enumerate(responses(streams, events, prefix)):
        start = i * every
        for j, message in enumerate(response.messages):
            timed.append(Timed(start + min(j, events - 1) * gap, message))
    timed.sort(key=lambda t: t.at)
    return timed, streams
