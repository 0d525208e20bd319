"""What the worker keeps in its changelogged tables: the value types and their byte codecs.

This module is the only one that encodes or reads table bytes. Every value carries its format:
JSON values a ``"v"`` field and a ``"k"`` (kind) field, stored chunks a leading format byte, so
that a later release reads what an earlier one wrote (the changelogs outlive any deployment) and
nothing depends on how a JSON encoder orders keys. Values written before formats were versioned
(plain JSON objects, "version 0") are still read.

Tables (every key belongs to the partition of the response or session it describes):

- ``chunks``: ``<request digest>.s<n hex>`` → :class:`Segment`: the chunks one response
  received between two commits, written once at the commit (see
  :mod:`toolwire.stream.writebehind`), so a response touched many times between two commits
  costs one changelog record and its bytes stay linear; deleted once decided. (The release
  before segments wrote one ``<request digest>.<seq hex>`` → :class:`StoredChunk` per message;
  those are still read.)
- ``responses``: request id → :class:`OpenResponse` while open (with its wire), then a
  :class:`DoneMarker` kept for the dedupe window, so chunks replayed after a crash publish
  nothing twice.
- ``quarantine``: session id → :class:`QuarantineEntry` until an operator's release.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES
from toolwire.stream.writebehind import WriteBehind

#: Version of the JSON values written by this release (2: open responses name their segments;
#: 3: open responses name their wire, and one of an earlier version is read as the default
#: wire, the only one there was).
VERSION: Final = 3
#: Leading byte of a stored chunk: the body follows.
_CHUNK_BODY: Final = 0x01
#: Leading byte of a chunk kept by size only (after an ``oversize`` failure): ASCII decimal.
_CHUNK_SIZE: Final = 0x02
#: Leading byte of a segment: a 4-byte header length, a JSON header, then the bodies.
_SEGMENT: Final = 0x03
#: Leading byte of a segment compressed with zlib: the same layout once decompressed. The
#: in-memory store keeps every open response's segments, so they are kept small (SSE JSON
#: compresses about three to one); tiny segments are left as they are.
_SEGMENT_ZLIB: Final = 0x04
_COMPRESS_FROM: Final = 256
#: A decompressed segment larger than this is refused rather than allocated (no stored chunk
#: is larger than a changelog record, and a response's segment holds one commit's chunks).
MAX_SEGMENT_BYTES: Final = 64 * 1024 * 1024


class StateError(ValueError):
    """A table value this release cannot read (written by a newer one, or corrupt)."""


@dataclass(frozen=True, slots=True)
class OpenResponse:
    """A response being assembled: enough to rebuild it from its stored chunks."""

    session: str
    partition: int
    provider: str | None
    model: str | None
    tools: tuple[str, ...] | None
    first_offset: int
    opened: float
    #: Chunks stored in the segments (the next sequence number a rebuild expects), and the
    #: number of segments; ``None`` for a response of the release that stored one key per
    #: chunk (its chunks are then read one by one until the first missing one).
    stored: int | None = None
    segments: int | None = None
    #: The wire its first message named: a rebuild reads the stored chunks under it (the
    #: first message, which named it, is not read again).
    wire: str = DEFAULT_WIRE


@dataclass(frozen=True, slots=True)
class DoneMarker:
    """A decided (and published) response, remembered for the dedupe window."""

    done: float
    partition: int
    outcome: str
    #: Chunks the response had stored: they are deleted once this marker is durable, and
    #: again (idempotently) when the marker expires, so a crash between the two leaks none.
    chunks: int = 0
    #: Segments the response had stored (deleted the same way); ``None`` for a marker of the
    #: release that stored one key per chunk.
    segments: int | None = None


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """Why a session is held, and since when."""

    reason: str
    request_id: str | None
    since: float


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """One input message of an open response: its body, or only its size."""

    body: bytes | None
    size: int

    @classmethod
    def of(cls, body: bytes) -> StoredChunk:
        return cls(body, len(body))

    @classmethod
    def skipped(cls, size: int) -> StoredChunk:
        return cls(None, size)


@dataclass(frozen=True, slots=True)
class Segment:
    """The chunks ``first``, ``first + 1``, ... of one response, stored under one key."""

    first: int
    chunks: tuple[StoredChunk, ...]

    @property
    def size(self) -> int:
        return sum(len(c.body) for c in self.chunks if c.body is not None)


ResponseState = OpenResponse | DoneMarker


def _digest(request_id: str) -> str:
    digest = hashlib.blake2b(request_id.encode(), digest_size=9).digest()
    return base64.urlsafe_b64encode(digest).decode()


def chunk_key(request_id: str, seq: int) -> str:
    """A short, fixed-size key: the request id is hashed once, not repeated in every key."""
    return f"{_digest(request_id)}.{seq:x}"


def segment_key(request_id: str, n: int) -> str:
    """The key of a response's ``n``-th segment (apart from the older per-chunk keys)."""
    return f"{_digest(request_id)}.s{n:x}"


# -- codecs ------------------------------------------------------------------------------------

def encode_chunk(chunk: StoredChunk) -> bytes:
    if chunk.body is not None:
        return bytes((_CHUNK_BODY,)) + chunk.body
    return bytes((_CHUNK_SIZE,)) + str(chunk.size).encode()


def decode_chunk(raw: bytes) -> StoredChunk:
    if raw[:1] == bytes((_CHUNK_BODY,)):
        return StoredChunk.of(raw[1:])
    if raw[:1] == bytes((_CHUNK_SIZE,)) and raw[1:].isdigit():
        return StoredChunk.skipped(int(raw[1:]))
    raise StateError(f"unknown stored chunk format byte {raw[:1]!r}")


def encode_segment(segment: Segment) -> bytes:
    """Format byte, header length, header ``[first, size, kept, size, kept, ...]``, bodies;
    compressed (another format byte) when that is worth it."""
    header: list[int] = [segment.first]
    for chunk in segment.chunks:
        header += (chunk.size, 0 if chunk.body is None else 1)
    head = orjson.dumps(header)
    body = b"".join((len(head).to_bytes(4, "big"), head,
                     *(c.body for c in segment.chunks if c.body is not None)))
    if len(body) >= _COMPRESS_FROM:
        packed = zlib.compress(body, 1)
        if len(packed) < len(body):
            return bytes((_SEGMENT_ZLIB,)) + packed
    return bytes((_SEGMENT,)) + body


def decode_segment(raw: bytes) -> Segment:
    if raw[:1] == bytes((_SEGMENT_ZLIB,)):
        try:
            inflate = zlib.decompressobj()
            body = inflate.decompress(raw[1:], MAX_SEGMENT_BYTES)
        except zlib.error as exc:
            raise StateError(f"compressed segment does not decompress: {exc}") from None
        if inflate.unconsumed_tail or not inflate.eof:
            raise StateError("compressed segment is truncated or larger than "
                             f"{MAX_SEGMENT_BYTES} bytes")
        raw = bytes((_SEGMENT,)) + body
    if raw[:1] != bytes((_SEGMENT,)) or len(raw) < 5:
        raise StateError(f"not a segment (format byte {raw[:1]!r})")
    end = 5 + int.from_bytes(raw[1:5], "big")
    try:
        header = orjson.loads(raw[5:end])
    except orjson.JSONDecodeError:
        raise StateError("segment header is not JSON") from None
    if (type(header) is not list or len(header) % 2 != 1
            or not all(type(n) is int and n >= 0 for n in header)):
        raise StateError("segment header is not [first, size, kept, ...]")
    chunks: list[StoredChunk] = []
    at = end
    for size, kept in zip(header[1::2], header[2::2], strict=True):
        if kept:
            chunks.append(StoredChunk.of(raw[at:at + size]))
            at += size
        else:
            chunks.append(StoredChunk.skipped(size))
    if at != len(raw):
        raise StateError(f"segment bodies are {len(raw) - end} bytes, header says {at - end}")
    return Segment(header[0], tuple(chunks))


def encode_response(state: ResponseState) -> bytes:
    if isinstance(state, DoneMarker):
        return _kept(orjson.dumps({"v": VERSION, "k": "done", "done": state.done,
                             "partition": state.partition, "outcome": state.outcome,
                             "chunks": state.chunks, "segments": state.segments}))
    return _kept(orjson.dumps({
        "v": VERSION, "k": "open", "session": state.session, "partition": state.partition,
        "provider": state.provider, "model": state.model,
        "tools": None if state.tools is None else list(state.tools),
        "first_offset": state.first_offset, "opened": state.opened,
        "stored": state.stored, "segments": state.segments, "wire": state.wire}))


def decode_response(raw: bytes) -> ResponseState:
    value = _json(raw)
    kind = value.get("k")
    if kind is None and value.get("v") is None:  # version 0: a done marker had "done"
        kind = "done" if "done" in value else "open"
    if kind == "done":
        return DoneMarker(done=float(value["done"]), partition=int(value["partition"]),
                          outcome=str(value["outcome"]), chunks=int(value.get("chunks") or 0),
                          segments=_optional_int(value.get("segments")))
    if kind == "open":
        tools = value.get("tools")
        # An "identity" key (the calls' identity so far, written by releases before this one
        # at every flush and read by none) is ignored: a rebuild replays the chunks.
        wire = value.get("wire", DEFAULT_WIRE)  # absent before version 3: Chat Completions
        if type(wire) is not str or wire not in SUPPORTED_WIRES:
            # Written by a release that reads more wires (adding a wire changes no format):
            # refused here, before its chunks are read under the wrong rules.
            raise StateError(f"open response of wire {wire!r}, which this release does not "
                             f"read (it reads {', '.join(map(repr, SUPPORTED_WIRES))}): "
                             "run the newer release")
        return OpenResponse(session=str(value["session"]), partition=int(value["partition"]),
                            provider=value.get("provider"), model=value.get("model"),
                            tools=None if tools is None else tuple(str(t) for t in tools),
                            first_offset=int(value["first_offset"]),
                            opened=float(value.get("opened") or 0.0),
                            stored=_optional_int(value.get("stored")),
                            segments=_optional_int(value.get("segments")), wire=wire)
    raise StateError(f"unknown response state kind {kind!r}")


def encode_quarantine(entry: QuarantineEntry) -> bytes:
    return _kept(orjson.dumps({"v": VERSION, "k": "quarantine", "reason": entry.reason,
                               "request_id": entry.request_id, "since": entry.since}))


def _kept(value: bytes) -> bytes:
    """A copy of exactly its size, for a value that stays in memory: the bytes ``orjson.dumps``
    returns keep the whole buffer it wrote into (4 KiB at least, measured with orjson 3.x),
    which for 10,000 done markers of about 120 bytes would be 40 MiB instead of 1."""
    return memoryview(value).tobytes()


def decode_quarantine(raw: bytes) -> QuarantineEntry:
    value = _json(raw)
    return QuarantineEntry(reason=str(value["reason"]), request_id=value.get("request_id"),
                           since=float(value["since"]))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise StateError(f"table value is not JSON: {exc}") from None
    if type(value) is not dict:
        raise StateError("table value is not a JSON object")
    version = value.get("v", 0)
    if type(version) is not int or version > VERSION:
        raise StateError(f"table value of format version {version!r}; this release reads "
                         f"up to {VERSION}: run the newer release")
    return value


# -- typed views of the byte tables ----------------------------------------------------------

class _View:
    """A typed view over one table's write-behind cache."""

    def __init__(self, table: WriteBehind) -> None:
        self.table = table

    def __contains__(self, key: str) -> bool:
        return key in self.table

    def __len__(self) -> int:
        return len(self.table)

    def keys(self) -> Iterator[str]:
        return self.table.keys()


class Chunks(_View):
    """Segments, and the per-chunk entries of the release before them (read and deleted)."""

    def get(self, request_id: str, seq: int) -> StoredChunk | None:
        raw = self.table.get(chunk_key(request_id, seq))
        return None if raw is None else decode_chunk(raw)

    def drop(self, partition: int, request_id: str, seq: int) -> None:
        self.table.delete(partition, chunk_key(request_id, seq))

    def segment(self, request_id: str, n: int) -> Segment | None:
        raw = self.table.get(segment_key(request_id, n))
        return None if raw is None else decode_segment(raw)

    def put_segment(self, partition: int, request_id: str, n: int, segment: Segment) -> None:
        self.table.put(partition, segment_key(request_id, n), encode_segment(segment))

    def drop_segment(self, partition: int, request_id: str, n: int) -> None:
        self.table.delete(partition, segment_key(request_id, n))

    def stored(self, request_id: str, state: OpenResponse) -> Iterator[StoredChunk]:
        """The chunks an open response has stored, in order, whichever layout it has."""
        if state.segments is None:
            seq = 0
            while (chunk := self.get(request_id, seq)) is not None:
                yield chunk
                seq += 1
            return
        yield from self.segments(request_id, state.segments)

    def segments(self, request_id: str, count: int) -> Iterator[StoredChunk]:
        seq = 0
        for n in range(count):
            segment = self.segment(request_id, n)
            if segment is None or segment.first != seq:
                raise StateError(f"request {request_id}: segment {n} of {count} is "
                                 f"missing or does not start at chunk {seq}")
            yield from segment.chunks
            seq += len(segment.chunks)

    def durable_segments(self, request_id: str, count: int) -> int:
        """How many of the first ``count`` segments are stored, counted up to the first one
        missing. A flush writes a response's new segment and its metadata to two changelogs;
        a worker that stopped before the commit after it (a crash, a fault, a fence) can
        leave the metadata durable and the segment not. That segment's chunks came from
        input that was never committed, so the restarted worker reads them again: the
        response is rebuilt from the segments before it. A segment that is there but does
        not start where the one before it ended is not that case (see :meth:`segments`)."""
        for n in range(count):
            if self.segment(request_id, n) is None:
                return n
        return count


class Responses(_View):
    def get(self, request_id: str) -> ResponseState | None:
        raw = self.table.get(request_id)
        return None if raw is None else decode_response(raw)

    def put(self, request_id: str, state: ResponseState) -> None:
        self.table.put(state.partition, request_id, encode_response(state))

    def put_now(self, request_id: str, state: ResponseState) -> None:
        self.table.put_now(state.partition, request_id, encode_response(state))

    def delete(self, partition: int, request_id: str) -> None:
        self.table.delete(partition, request_id)

    def items(self) -> Iterator[tuple[str, ResponseState]]:
        for key in list(self.table.keys()):
            raw = self.table.get(key)
            if raw is not None:
                yield key, decode_response(raw)


class Quarantine(_View):
    def get(self, session: str) -> QuarantineEntry | None:
        raw = self.table.get(session)
        return None if raw is None else decode_quarantine(raw)

    def put(self, partition: int, session: str, entry: QuarantineEntry) -> None:
        self.table.put(partition, session, encode_quarantine(entry))

    def release(self, partition: int, session: str) -> None:
        self.table.delete(partition, session)
