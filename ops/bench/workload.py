"""The input of the benchmarks: responses built from real provider captures, as messages.

Every response is a capture of the core corpus (``tests/core/corpus_wires/openai-chat/*.sse``,
read as data; the bundled samples when there is no checkout) cut one SSE event per message with
:func:`toolwire.publish.split_events`, stretched or cut to the wanted number of events by
repeating its middle events (the first event and the last two — finish and ``[DONE]`` — are
kept), with its own session and request id, numbered ``chunk-seq`` 0, 1, … and closed by an
``end-of-stream: eof`` marker, exactly as :class:`toolwire.publish.ChunkPublisher` sends it.
Only captures whose stretched body still assembles (``toolwire.core.assemble``) are used.

The mixed-wire workload (:func:`mixed_responses`, :func:`live_schedule` with
``wire_mix=True``) draws its responses from the four corpora, each
``tests/core/corpus_wires/<wire>/`` (openai-chat, anthropic-messages, openai-responses,
gemini), read as data with :func:`toolwire.tools.captures.load` — the wires in turn (response
*i* is of wire *i* mod 4), each stretched the same way and published with the headers
:class:`toolwire.stream.messages.RequestMeta` builds for its capture's options (``wire``, not
sent for openai-chat; ``declared-tools`` when the capture declares tools). Each response keeps
its options, so the harness can compare the worker's record with
``toolwire.core.assemble(body, options)``.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from toolwire.core import Decision, Options, Provenance, assemble
from toolwire.core.wires import DEFAULT_WIRE
from toolwire.publish import split_events
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_REQUEST_ID, RequestMeta
from toolwire.tools.captures import load

ROOT = Path(__file__).resolve().parents[2]
CORPUS_WIRES = ROOT / "tests" / "core" / "corpus_wires"
#: The core corpus: the default wire's (Chat Completions), in its folder like every wire's.
CORPUS = CORPUS_WIRES / DEFAULT_WIRE
SAMPLES = ROOT / "pipeline" / "toolwire" / "samples"
#: The wires of the mixed workload, in the order they take turns.
MIXED_WIRES = ("openai-chat", "anthropic-messages", "openai-responses", "gemini")
#: The numbers of events the mixed workload's responses are stretched to (preloaded, live):
#: a capture is used only if it assembles at both.
MIXED_SIZES = (144, 40)
#: The workloads the harness knows (``--workload``).
WORKLOADS = ("chat", "mixed")

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
    #: The capture's options (its wire among them); ``None``: the chat workload's default.
    options: Options | None = None

    @property
    def events(self) -> int:
        return len(self.messages) - 1

    @property
    def wire(self) -> str:
        return DEFAULT_WIRE if self.options is None else self.options.wire

    def body(self) -> bytes:
        """The body as published: every message's value, end marker aside."""
        return b"".join(m.value for m in self.messages if not m.end)

    def expected(self) -> Decision:
        """What ``toolwire.core.assemble`` makes of the published body with the capture's
        options: the record the worker must give. The request id goes in as provenance, as
        the worker passes it: ids a wire synthesizes (Gemini's, when a call has none) are
        seeded by it."""
        return assemble(self.body(), self.options or Options(),
                        Provenance(request_id=self.request, session_id=self.session))


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


def messages_of(request: str, session: str, bodies: list[bytes],
                base: Headers | None = None) -> tuple[Message, ...]:
    """``base``: the headers every message carries (default: the request id alone)."""
    key = session.encode()
    base = ((H_REQUEST_ID, request.encode()),) if base is None else base
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


@dataclass(frozen=True, slots=True)
class WireCapture:
    name: str
    events: tuple[bytes, ...]
    options: Options


@cache
def mixed_captures() -> dict[str, tuple[WireCapture, ...]]:
    """Per wire of :data:`MIXED_WIRES`, the captures of its corpus that the mixed workload
    uses: not strict (a deployment setting) and no synthesized ids (a provider's setting), at
    least four events, assembled (not dead-lettered) with their options both as they are and
    stretched to each of :data:`MIXED_SIZES`."""
    out: dict[str, tuple[WireCapture, ...]] = {}
    for wire in MIXED_WIRES:
        folder = CORPUS_WIRES / wire
        if not folder.is_dir():
            raise RuntimeError(f"the mixed workload needs the {wire} corpus ({folder})")
        usable = []
        for capture in load(folder):
            options = capture.options
            if options.wire != wire or options.strict or options.synthesize_ids:
                continue
            events = tuple(split_events(capture.body))
            if len(events) < 4 or assemble(capture.body, options)["outcome"] != "assembled":
                continue
            if all(assemble(b"".join(stretch(events, n)), options)["outcome"] == "assembled"
                   for n in MIXED_SIZES):
                usable.append(WireCapture(capture.name, events, options))
        if not usable:
            raise RuntimeError(f"no usable {wire} captures in {folder}")
        out[wire] = tuple(usable)
    return out


def mixed_responses(count: int, events: int, prefix: str) -> list[Response]:
    """``count`` responses of ``events`` events each, the four wires in turn (response ``i``
    is of wire ``i % 4``, each wire cycling through its own captures), each with the headers
    ``RequestMeta`` builds for its capture's options (the ``wire`` header among them)."""
    if events not in MIXED_SIZES:
        raise ValueError(f"mixed responses are checked at {MIXED_SIZES} events, not {events}")
    per_wire = mixed_captures()
    out = []
    for i in range(count):
        wire = MIXED_WIRES[i % len(MIXED_WIRES)]
        wc = per_wire[wire][(i // len(MIXED_WIRES)) % len(per_wire[wire])]
        request, session = f"{prefix}r{i:06d}", f"{prefix}s{i:06d}"
        tools = (None if wc.options.declared_tools is None
                 else tuple(sorted(wc.options.declared_tools)))
        meta = RequestMeta(request_id=request, session_id=session, declared_tools=tools,
                           wire=wire)
        messages = messages_of(request, session, stretch(wc.events, events),
                               tuple(meta.headers()))
        out.append(Response(request, session, messages, f"{wire}/{wc.name}", wc.options))
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
                  stream_seconds: float = 1.0, wire_mix: bool = False,
                  made: list[Response] | None = None) -> tuple[list[Timed], int]:
    """Streams of ``events`` events lasting ``stream_seconds``, started at a steady rate so
    that ``rate`` events/s flow for ``seconds``; the end marker goes with the last event.
    ``wire_mix``: the streams of the mixed workload (:func:`mixed_responses`) instead of the
    chat captures. ``made``, if given, receives the responses. Returns the schedule (sorted by
    time) and the number of streams."""
    streams = max(1, round(rate * seconds / events))
    every = events / rate
    gap = stream_seconds / max(1, events - 1)
    timed: list[Timed] = []
    rs = (mixed_responses if wire_mix else responses)(streams, events, prefix)
    if made is not None:
        made.extend(rs)
    for i, response in enumerate(rs):
        start = i * every
        for j, message in enumerate(response.messages):
            timed.append(Timed(start + min(j, events - 1) * gap, message))
    timed.sort(key=lambda t: t.at)
    return timed, streams
