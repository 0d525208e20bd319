"""The message contract of the input topic, and what the processor asks to publish.

Header names here are the ones ``topics/llm.sse.chunks.json`` documents; a test keeps the two in
step.

The contract is written down here once, for both directions: every header name and end marker
is defined in this module, and :class:`RequestMeta` is the one builder of a chunk message's
headers. The gateways' publisher (:mod:`toolwire.publish`) and ``toolwire dlq replay`` both send
exactly what it builds, so what the processor reads and what Toolwire writes cannot drift apart,
and a new header of the contract is added in one place, beside the name the processor reads.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Final, NamedTuple

from toolwire.core.records import DeadLetterDecision
from toolwire.core.wires import AUTO, DEFAULT_WIRE, SUPPORTED_WIRES, UnknownWire

H_REQUEST_ID: Final = "request-id"
H_CHUNK_SEQ: Final = "chunk-seq"
H_PROVIDER: Final = "provider"
H_MODEL: Final = "model"
H_DECLARED_TOOLS: Final = "declared-tools"
#: The wire the body is written in (:data:`toolwire.core.wires.SUPPORTED_WIRES`); absent:
#: :data:`~toolwire.core.wires.DEFAULT_WIRE`, which every body was before the header existed.
H_WIRE: Final = "wire"
#: The coding the body is still in, when a tap could not decode it (``toolwire.tap`` decodes
#: gzip, deflate, br and zstd before it publishes): absent, empty or ``identity`` for a
#: decoded body, the only kind a worker assembles.
H_CONTENT_ENCODING: Final = "content-encoding"
#: The W3C trace context of the request the body answers, as the client sent it (a tap keeps
#: it so that a trace can follow a response from the client to the worker and past it).
H_TRACEPARENT: Final = "traceparent"
#: On the last message of a request: ``eof``, ``error`` or ``cancelled``.
H_END: Final = "end-of-stream"
#: Operator and sweeper messages travel in the input topic, in order with the chunks they
#: concern and on their partition, so that every state change happens on the owning worker.
H_CONTROL: Final = "toolwire-control"
H_IDEMPOTENCY_KEY: Final = "idempotency-key"
#: On a replayed request (``toolwire dlq replay``): the request id of the original.
H_REPLAY_OF: Final = "toolwire-replay-of"
H_OUTCOME: Final = "toolwire-outcome"
#: On every output record: the worker process that published it (hostname:pid), so that each
#: copy of a record published twice names its process.
H_WORKER: Final = "toolwire-worker"

#: The values of ``end-of-stream``: the body ended; the gateway's read of it failed; the
#: gateway's task was cancelled.
END_EOF: Final = "eof"
END_ERROR: Final = "error"
END_CANCELLED: Final = "cancelled"
END_MARKERS: Final = frozenset({END_EOF, END_ERROR, END_CANCELLED})
#: ``chunk-seq`` is ASCII decimal from 0 to this (a signed 32-bit integer's maximum).
MAX_CHUNK_SEQ: Final = 2**31 - 1
#: The key and the ``request-id``, ``provider`` and ``model`` headers: at most this many bytes
#: of UTF-8 (they become keys, headers and record fields downstream).
MAX_ID_BYTES: Final = 1024
#: The ``declared-tools`` header: at most this many bytes.
MAX_TOOLS_BYTES: Final = 64 * 1024
CONTROL_RELEASE: Final = "release"
CONTROL_SWEEP: Final = "sweep"


def idempotency_key(request_id: str) -> str:
    """Deterministic per request: a consumer that sees it twice has seen the same response."""
    return hashlib.sha256(b"toolwire/response/" + request_id.encode()).hexdigest()[:32]


# -- writing the envelope: key and headers, built once for every sender ------------------------

#: A Kafka message's headers, in the order they are sent.
Headers = list[tuple[str, bytes]]


@dataclass(frozen=True)
class RequestMeta:
    """Who a stream belongs to: becomes the key and the headers of every message of it.

    The one builder of the headers of a chunk message (:meth:`message_headers`): the
    publisher and ``toolwire dlq replay`` send what it builds and nothing else, so a header
    the contract gains is added here, as a field and a line of :meth:`headers`.
    """

    request_id: str
    session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    #: ``None``: unknown (any tool name is accepted downstream). An empty sequence: the request
    #: declared no tools, so downstream every tool call is an unknown tool.
    declared_tools: Sequence[str] | None = None
    #: Set by ``toolwire dlq replay`` only: the request id of the dead-lettered original.
    replay_of: str | None = None
    #: The wire the body is written in: a name of :data:`~toolwire.core.wires.SUPPORTED_WIRES`
    #: (not ``auto``: the gateway knows which API it called, and a worker that guessed could
    #: guess otherwise on a rebuild or a replay).
    wire: str = DEFAULT_WIRE
    #: The coding the body is still in (``Content-Encoding``), set by a tap only when it
    #: could not decode it, so that the worker dead-letters the body naming the coding
    #: instead of reading compressed bytes as SSE.
    content_encoding: str | None = None
    #: The request's ``traceparent`` header, as the client sent it (a tap sets it).
    traceparent: str | None = None

    def __post_init__(self) -> None:
        # The processor dead-letters a message without a request id; better to refuse it here,
        # where the caller can still fix it, than to publish a stream that can never assemble.
        if not self.request_id:
            raise ValueError("request_id must not be empty")
        # Likewise a wire the worker would dead-letter as malformed_message (this release's
        # registry: a gateway and its publisher are one release).
        if type(self.wire) is not str or self.wire not in SUPPORTED_WIRES:
            raise UnknownWire(self.wire, list(SUPPORTED_WIRES))
        if isinstance(self.declared_tools, str):
            raise TypeError("declared_tools is a sequence of names, not one string")
        for name in self.declared_tools or ():
            if "," in name or not name.strip():
                raise ValueError(
                    f"declared tool name {name!r} cannot travel in the comma-separated "
                    f"{H_DECLARED_TOOLS} header"
                )

    @property
    def key(self) -> str:
        """The partitioning key: all requests of a session stay together and in order."""
        return self.session_id or self.request_id

    def headers(self) -> Headers:
        """Headers shared by every message of the request.

        They go on every message, not only the first, so a consumer that starts mid-stream
        (or a human reading the topic) still sees whose chunk it is; they are a few bytes.

        ``wire`` is sent only when it is not the default: its absence means the default, so
        the messages of a Chat Completions body (and of its replay) stay byte for byte what
        they were before the header existed, and a worker of that release still reads them.
        """
        out: Headers = [(H_REQUEST_ID, self.request_id.encode())]
        if self.replay_of is not None:
            out.append((H_REPLAY_OF, self.replay_of.encode()))
        if self.provider is not None:
            out.append((H_PROVIDER, self.provider.encode()))
        if self.model is not None:
            out.append((H_MODEL, self.model.encode()))
        if self.declared_tools is not None:
            out.append((H_DECLARED_TOOLS, ",".join(self.declared_tools).encode()))
        if self.wire != DEFAULT_WIRE:
            out.append((H_WIRE, self.wire.encode()))
        if self.content_encoding is not None:
            out.append((H_CONTENT_ENCODING, self.content_encoding.encode()))
        if self.traceparent is not None:
            out.append((H_TRACEPARENT, self.traceparent.encode()))
        return out

    @cached_property
    def _shared(self) -> tuple[tuple[str, bytes], ...]:
        # Built once per request: the declared tools alone may be 64 KiB to join and encode.
        return tuple(self.headers())

    def message_headers(self, seq: int, end: str | None = None) -> Headers:
        """The headers of message ``seq`` (0-based) of the request: the shared ones, then
        ``chunk-seq``, then on the last message only ``end-of-stream`` (one of
        :data:`END_MARKERS`)."""
        out: Headers = [*self._shared, (H_CHUNK_SEQ, str(seq).encode())]
        if end is not None:
            out.append((H_END, end.encode()))
        return out


def control_headers(command: str) -> Headers:
    """The headers of a control message (:data:`CONTROL_RELEASE`, :data:`CONTROL_SWEEP`)."""
    return [(H_CONTROL, command.encode())]


@dataclass(frozen=True, slots=True)
class InputMessage:
    """One Kafka message of the input topic, as the agent received it (value undecoded)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: dict[str, bytes] = field(default_factory=dict)
    timestamp: float | None = None

    def header(self, name: str) -> str | None:
        raw = self.headers.get(name)
        if raw is None:
            return None
        return raw.decode("utf-8", "replace")


class Sink(Enum):
    """The topic an output goes to."""

    ASSEMBLED = "assembled"
    DEADLETTER = "deadletter"
    #: The input topic: the control messages the sweeper sends to itself.
    INPUT = "chunks"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a response's input was read: its partition and the offsets it spans, and the
    wire its body is written in (which a replay must name again)."""

    partition: int
    first_offset: int
    last_offset: int | None
    wire: str = DEFAULT_WIRE


@dataclass(frozen=True, slots=True)
class Draft:
    """What a dead letter's message was built from: enough to build it again within a smaller
    limit (:meth:`toolwire.stream.outbox.Outbox.refit`)."""

    decision: DeadLetterDecision
    origin: Origin
    raw: tuple[tuple[int, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class Output:
    """A message to publish: which topic, key, value, headers and (for control) partition."""

    sink: Sink
    key: bytes | None
    value: bytes
    headers: dict[str, bytes]
    partition: int | None = None
    #: The request this record decides: once published, the processor settles it.
    settles: str | None = None
    #: A dead letter's draft, for a refit when the broker refuses it as too large (an output
    #: topic whose ``max.message.bytes`` is below ``TOOLWIRE_MAX_RECORD_BYTES``). An assembled
    #: record is built again from its pending response; a control message cannot be.
    draft: Draft | None = field(default=None, compare=False, repr=False)

    @property
    def refittable(self) -> bool:
        """Whether a smaller version of this message can be built (every decision's can)."""
        return self.draft is not None or (self.sink is Sink.ASSEMBLED
                                          and self.settles is not None)


# -- reading the envelope: key and headers, checked against the contract ----------------------

_SEQ: Final = re.compile(rb"[0-9]{1,10}")
#: A ``wire`` value longer than this is no wire name: quoted this far in the fault.
_WIRE_SHOWN: Final = 64


class Envelope(NamedTuple):
    """What a chunk message's key and headers say; ``fault`` ``None`` when they are sound
    (then ``request_id``, ``session_id`` and ``seq`` are all set)."""

    fault: str | None
    request_id: str | None
    session_id: str | None
    seq: int | None
    #: The wire the ``wire`` header names (the default without it); the default too when the
    #: header names no wire this worker reads (then ``fault`` says so).
    wire: str = DEFAULT_WIRE


def read_envelope(msg: InputMessage) -> Envelope:
    """(fault, request id, session id, seq) of a chunk message; fault ``None`` when sound.

    The headers and key are checked strictly, since they become keys, record fields and
    headers downstream: UTF-8, bounded length, and a ``chunk-seq`` of ASCII digits within
    ``0..MAX_CHUNK_SEQ`` (``str.isdigit`` would let ``²`` through, and a 5,000-digit value
    would fail ``int``). A ``wire`` header must name a wire of this worker's registry (see
    :func:`read_wire`).
    """
    faults: list[str] = []
    raw_request = msg.headers.get(H_REQUEST_ID)
    request_id = _text(raw_request, H_REQUEST_ID, faults)
    key = _text(msg.key, "key", faults)
    session_id = key or request_id
    if raw_request is None:
        faults.insert(0, f"missing header {H_REQUEST_ID}")
    elif raw_request == b"":
        faults.insert(0, f"empty header {H_REQUEST_ID}")
    raw_seq = msg.headers.get(H_CHUNK_SEQ)
    seq: int | None = None
    if raw_seq is None:
        faults.append(f"missing header {H_CHUNK_SEQ}")
    elif _SEQ.fullmatch(raw_seq) is None or int(raw_seq) > MAX_CHUNK_SEQ:
        faults.append(f"header {H_CHUNK_SEQ}={quote(raw_seq)} is not a whole number "
                      f"from 0 to {MAX_CHUNK_SEQ} in ASCII digits")
    else:
        seq = int(raw_seq)
    for name, bound in ((H_PROVIDER, MAX_ID_BYTES), (H_MODEL, MAX_ID_BYTES),
                        (H_DECLARED_TOOLS, MAX_TOOLS_BYTES)):
        value = msg.headers.get(name)
        if value is not None and len(value) > bound:
            faults.append(f"header {name} is {len(value)} bytes (at most {bound})")
    wire = read_wire(msg.headers.get(H_WIRE), faults)
    encoding = msg.headers.get(H_CONTENT_ENCODING)
    if encoding is not None and encoding.strip().lower() not in (b"", b"identity"):
        faults.append(f"header {H_CONTENT_ENCODING}={quote(encoding)}: the body is still "
                      "encoded (a coding the tap could not decode), and only a decoded body "
                      "can be read")
    if faults:
        return Envelope("; ".join(faults), request_id or None, session_id or None, seq, wire)
    return Envelope(None, request_id, session_id, seq, wire)


def read_wire(raw: bytes | None, faults: list[str]) -> str:
    """The wire the ``wire`` header names: the default when it is absent (every body before
    the header existed was Chat Completions).

    Any other value that is not a registered name is a fault (appended to ``faults``), naming
    the header, the value and the valid names, and the default is returned for the record's
    sake only: reading a body under another wire's rules would decide calls by the wrong
    rules. That includes ``auto`` (which ``toolwire assemble`` accepts): the gateway knows
    which API it called, and a worker that detected the wire could detect another one when it
    rebuilds the response or when the dead letter is replayed. An empty value (or a null one)
    names no wire either.
    """
    if raw is None:
        return DEFAULT_WIRE
    name = raw.decode("utf-8", "replace") if len(raw) <= _WIRE_SHOWN else None
    if name in SUPPORTED_WIRES:
        return name
    why = (" (auto is for toolwire assemble: a gateway names the wire it read)"
           if name == AUTO else "")
    faults.append(f"header {H_WIRE}: {UnknownWire(wire_as_sent(raw), list(SUPPORTED_WIRES))}"
                  f"{why}")
    return DEFAULT_WIRE


def wire_as_sent(raw: bytes | None) -> str:
    """The ``wire`` header of a message dead-lettered on its own, for its dead letter: its text
    as sent (bounded), registered or not, and the default without the header. A replay sends
    it again, so a message refused for a wire this release does not read is replayed under
    that wire by a release that reads it, and refused by one that does not, never read as
    the default instead."""
    if raw is None:
        return DEFAULT_WIRE
    if len(raw) <= _WIRE_SHOWN:
        return raw.decode("utf-8", "replace")
    return raw[:_WIRE_SHOWN].decode("utf-8", "replace") + "…"


def declared_tools(text: str | None) -> frozenset[str] | None:
    """The ``declared-tools`` header's names; ``None`` without the header (no check), and
    the empty set for an empty one (the request declared no tools: every call is unknown)."""
    if text is None:
        return None
    return frozenset(t.strip() for t in text.split(",") if t.strip())


def readable_tools(raw: bytes | None) -> list[str] | None:
    """A malformed message's declared tools for its dead letter, sorted, when its header is
    within the contract's bound and UTF-8; else ``None``, as for a message without one."""
    if raw is None or len(raw) > MAX_TOOLS_BYTES:
        return None
    try:
        tools = declared_tools(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    return None if tools is None else sorted(tools)


def quote(raw: bytes, limit: int = 40) -> str:
    """A header value quoted for a detail: bounded, never raising."""
    text = raw[:limit].decode("utf-8", "replace")
    return repr(text) + ("…" if len(raw) > limit else "")


def _text(raw: bytes | None, name: str, faults: list[str]) -> str | None:
    """A header or key as text, or a fault when it is not bounded UTF-8."""
    if raw is None:
        return None
    if len(raw) > MAX_ID_BYTES:
        faults.append(f"{name} is {len(raw)} bytes (at most {MAX_ID_BYTES})")
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        faults.append(f"{name} is not UTF-8: {quote(raw)}")
        return None
