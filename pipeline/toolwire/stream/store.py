"""The stored chunks of open responses: what is held in memory, what a flush writes, and what
is deleted once the entry that replaces it is durable.

Nothing is written per chunk: the chunks a response received since the last flush are held
here and written by :meth:`Store.flush`, before the offsets are committed, as one segment
under a new key (changelog bytes grow linearly with the input), with the response's metadata;
the other table writes are held the same way (see :mod:`toolwire.stream.writebehind`). An
open response missing from memory is rebuilt by replaying what :meth:`Store.read` gives back.

The invariant of the deletions: a stored chunk is deleted only once the entry that replaces it
is durable — the response's done marker, or, for the per-chunk keys of an earlier release, the
segment that now holds them. The two go to different changelogs, so a crash that kept the
deletions but lost the replacement would bring the response back open with no chunks (a
``sequence_gap``); the deletions therefore wait for a producer drain that began after the
replacement was flushed (:class:`Retiring`, :meth:`Store.drained`, :meth:`Store.retire`:
steps 4 and 5 of :meth:`toolwire.app.commit.Checkpoint.commit`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import MutableMapping
from dataclasses import dataclass, field, replace

from toolwire.core import Assembler, Options, Provenance
from toolwire.stream.messages import Origin
from toolwire.stream.observe import Event
from toolwire.stream.state import (
    Chunks,
    DoneMarker,
    OpenResponse,
    Quarantine,
    Responses,
    Segment,
    StateError,
    StoredChunk,
)
from toolwire.stream.writebehind import Write, WriteBehind

#: A stored chunk's changelog record beyond its body: key, format byte, Kafka framing.
_CHUNK_RECORD_OVERHEAD = 1024


@dataclass(slots=True)
class Retiring:
    """Stored chunks to delete once the entry that replaces them is durable: the response's
    done marker (or, for the per-chunk keys of an earlier release, the segment that now holds
    them). The two go to different changelogs, so the deletions wait for a producer drain that
    began after the replacement was flushed."""

    request_id: str
    partition: int
    segments: int
    legacy_chunks: int
    #: Completed drains after which the replacement is durable (``None``: not written yet).
    durable_at: int | None = None


@dataclass(slots=True)
class Live:
    """An open response in memory: rebuilt from the tables when missing."""

    request_id: str
    session_id: str
    partition: int
    provider: str | None
    model: str | None
    first_offset: int
    #: What it is read and decided under (its wire, declared tools, id synthesis, end rule):
    #: built once, when it is opened or rebuilt, for its assembler and its decision alike.
    options: Options
    assembler: Assembler
    next_seq: int = 0
    last_offset: int | None = None
    #: Wall time at which the response was opened (kept in its table entry across restarts).
    opened: float = 0.0
    #: Produce times of the first and the latest message seen (Kafka timestamps, seconds).
    first_timestamp: float | None = None
    last_timestamp: float | None = None
    #: Chunks received since the last flush (chunks ``stored``, ``stored + 1``, ...).
    unflushed: list[StoredChunk] = field(default_factory=list)
    unflushed_bytes: int = 0
    #: Chunks written in segments, and how many segments hold them.
    stored: int = 0
    segments: int = 0

    @property
    def tools(self) -> frozenset[str] | None:
        """The tools its request declared (kept in its table entry across restarts)."""
        return self.options.declared_tools

    @property
    def wire(self) -> str:
        """The wire its first message named (kept in its table entry across restarts)."""
        return self.options.wire

    @property
    def origin(self) -> Origin:
        return Origin(self.partition, self.first_offset, self.last_offset, self.wire)

    @property
    def provenance(self) -> Provenance:
        # The declared tools travel into every dead letter, so that a replay (and the record
        # ``toolwire dlq show`` computes) checks the same tools as the original did.
        return Provenance(request_id=self.request_id, session_id=self.session_id,
                          provider=self.provider, model=self.model,
                          declared_tools=self.tools)

    def seen_at(self, offset: int, timestamp: float | None) -> None:
        """A message of this response was read at ``offset``, produced at ``timestamp``."""
        self.last_offset = offset
        if timestamp is not None:
            self.last_timestamp = timestamp
            if self.first_timestamp is None:
                self.first_timestamp = timestamp

    def open_state(self) -> OpenResponse:
        """The table entry of this response while it is open."""
        return OpenResponse(
            session=self.session_id, partition=self.partition, provider=self.provider,
            model=self.model, tools=None if self.tools is None else tuple(sorted(self.tools)),
            first_offset=self.first_offset, opened=self.opened, stored=self.stored,
            segments=self.segments, wire=self.wire)


class Store:
    """The three tables behind their write-behind caches, and the bookkeeping of the stored
    chunks: held until a flush, read back for a rebuild, deleted after drains."""

    def __init__(self, chunks: MutableMapping[str, bytes],
                 responses: MutableMapping[str, bytes], quarantine: MutableMapping[str, bytes],
                 stats: Counter[str], *, max_record_bytes: int, cache_bytes: int) -> None:
        self.tables = (WriteBehind("chunks", chunks), WriteBehind("responses", responses),
                       WriteBehind("quarantine", quarantine))
        self.chunks = Chunks(self.tables[0])
        self.responses = Responses(self.tables[1])
        self.quarantine = Quarantine(self.tables[2])
        self.stats = stats
        self.max_record_bytes = max_record_bytes
        self.cache_bytes = cache_bytes
        #: Completed producer drains (each acknowledges everything produced before it began).
        self.drains = 0
        #: Responses (open or pending) with chunks or metadata not yet flushed.
        self.touched: dict[str, Live] = {}
        #: Bytes of the chunks not yet flushed, all responses together.
        self.unflushed_bytes = 0
        #: Stored chunks waiting for their replacement to be durable before they are deleted.
        self.retiring: list[Retiring] = []

    # -- holding -----------------------------------------------------------------------------

    def opened(self, live: Live) -> None:
        """A new response: its metadata is written at the next flush."""
        self.touched[live.request_id] = live

    def keep(self, live: Live, chunk: StoredChunk) -> None:
        """Hold a chunk until the next flush writes it with the others of its response."""
        live.unflushed.append(chunk)
        size = 0 if chunk.body is None else len(chunk.body)
        live.unflushed_bytes += size
        self.unflushed_bytes += size
        self.touched[live.request_id] = live

    def untouch(self, live: Live) -> None:
        """Forget what ``live`` holds unflushed (it is decided, or no longer ours)."""
        self.touched.pop(live.request_id, None)
        self.unflushed_bytes -= live.unflushed_bytes
        live.unflushed = []
        live.unflushed_bytes = 0

    def unstorable(self, size: int) -> str | None:
        """Why an input message of ``size`` bytes cannot be kept in a table, if it cannot."""
        if size + _CHUNK_RECORD_OVERHEAD <= self.max_record_bytes:
            return None
        return (f"an input message of {size} bytes is larger than one stored chunk may be "
                f"(TOOLWIRE_MAX_RECORD_BYTES={self.max_record_bytes}): the gateway "
                "must send the body in smaller slices")

    @property
    def cache_full(self) -> bool:
        """More is held for the next flush than ``TOOLWIRE_STATE_CACHE_BYTES`` allows."""
        chunks, responses, quarantine = self.tables  # asked after every message: no generator
        held = (self.unflushed_bytes + chunks.held_bytes + responses.held_bytes
                + quarantine.held_bytes)
        return held > self.cache_bytes

    # -- reading back ------------------------------------------------------------------------

    def read(self, request_id: str, state: OpenResponse) -> list[StoredChunk]:
        """The chunks an open response has stored, in order, to replay into a new assembler:
        those of its durable segments (:meth:`toolwire.stream.state.Chunks.durable_segments`;
        the chunks of a segment lost with its uncommitted flush come again from the input)."""
        if state.segments is not None:
            found = self.chunks.durable_segments(request_id, state.segments)
            if found < state.segments:
                self.stats[Event.STATE_SEGMENTS_REREAD] += state.segments - found
                state = replace(state, segments=found, stored=None)
        return list(self.chunks.stored(request_id, state))

    def adopt(self, live: Live, state: OpenResponse, chunks: list[StoredChunk]) -> None:
        """``live`` was rebuilt from ``chunks`` (what :meth:`read` gave for ``state``): take
        over their bookkeeping."""
        request_id = live.request_id
        if state.segments is None:
            # Written by the release that stored one key per chunk: the next flush rewrites
            # them as this response's first segment, and the old keys go once it is durable.
            for stored in chunks:
                self.keep(live, stored)
            if chunks:
                self.retiring.append(Retiring(request_id, state.partition, 0, len(chunks)))
        else:
            found = self.chunks.durable_segments(request_id, state.segments)
            if found == state.segments and state.stored is not None and (
                    state.stored != len(chunks)):
                raise StateError(f"request {request_id}: {len(chunks)} chunks in its segments, "
                                 f"its metadata says {state.stored}")
            live.stored, live.segments = len(chunks), found

    def raw(self, live: Live) -> list[tuple[int, bytes | None]]:
        """Every chunk of ``live``, stored or held, for its dead letter's raw copy (a chunk kept
        by size only ends the copy there: it is then flagged truncated)."""
        stored = [*self.chunks.segments(live.request_id, live.segments), *live.unflushed]
        return [(seq, chunk.body) for seq, chunk in enumerate(stored)]

    def partition_of(self, request_id: str) -> int | None:
        state = self.responses.get(request_id)
        return None if state is None else state.partition

    # -- decided -----------------------------------------------------------------------------

    def done(self, live: Live, outcome: str, done: float) -> None:
        """``live``'s record is published: write its done marker, drop what it holds, and
        delete its stored chunks once the marker is durable."""
        # Written through, not held to the next commit: until it is durable, a crash makes the
        # restarted worker decide (and publish) the response again.
        self.responses.put_now(live.request_id, DoneMarker(
            done=done, partition=live.partition, outcome=outcome, segments=live.segments))
        # Chunks never flushed are simply dropped; stored ones are deleted only once the done
        # marker is durable: the two go to different changelogs, and a crash that kept the
        # deletions but lost the marker would bring the response back open with no chunks.
        # A drain may already be under way: the second one from now began after the marker.
        self.untouch(live)
        if live.segments:
            self.retiring.append(Retiring(live.request_id, live.partition, live.segments, 0,
                                          durable_at=self.drains + 2))

    def expire(self, request_id: str, marker: DoneMarker) -> None:
        """The dedupe window of a decided response is over: delete its marker, and any stored
        chunks a crash left behind (idempotent)."""
        for seq in range(marker.chunks):
            self.chunks.drop(marker.partition, request_id, seq)
        for n in range(marker.segments or 0):
            self.chunks.drop_segment(marker.partition, request_id, n)
        self.responses.delete(marker.partition, request_id)

    # -- the commit's steps (see toolwire.app.commit) ----------------------------------------

    def flush(self) -> list[Write]:
        """Write what is held: per touched response one segment of its new chunks and its
        metadata; the held done markers, quarantine entries and deletions. Call it before
        committing input offsets."""
        for request_id, live in self.touched.items():
            if live.unflushed:
                segment = Segment(live.stored, tuple(live.unflushed))
                self.chunks.put_segment(live.partition, request_id, live.segments, segment)
                live.segments += 1
                live.stored += len(live.unflushed)
                live.unflushed = []
                live.unflushed_bytes = 0
            self.responses.put(request_id, live.open_state())
        self.touched.clear()
        self.unflushed_bytes = 0
        for entry in self.retiring:
            if entry.durable_at is None:
                # Its replacement is written by this flush, and drained right after it.
                entry.durable_at = self.drains + 1
        writes = [write for table in self.tables for write in table.flush()]
        self.stats[Event.STATE_FLUSHES] += 1
        self.stats[Event.STATE_WRITES] += len(writes)
        return writes

    def drained(self) -> None:
        """The producer was drained: every table write made before the drain began is
        acknowledged by the broker."""
        self.drains += 1

    def retire(self) -> None:
        """Delete the stored chunks whose replacement the drains so far made durable (held:
        the next flush writes the deletions)."""
        waiting: list[Retiring] = []
        for entry in self.retiring:
            if entry.durable_at is not None and self.drains >= entry.durable_at:
                for n in range(entry.segments):
                    self.chunks.drop_segment(entry.partition, entry.request_id, n)
                for seq in range(entry.legacy_chunks):
                    self.chunks.drop(entry.partition, entry.request_id, seq)
            else:
                waiting.append(entry)
        self.retiring = waiting

    # -- rebalance ---------------------------------------------------------------------------

    def forget(self, partitions: set[int]) -> None:
        """Partitions were revoked: drop what is held for them."""
        for request_id in [r for r, live in self.touched.items() if live.partition in partitions]:
            self.untouch(self.touched[request_id])
        # What was committed was flushed first; the rest the new owner re-reads. Stored chunks
        # still to delete are deleted by the new owner when their done markers expire.
        for table in self.tables:
            table.drop(partitions)
        self.retiring = [e for e in self.retiring if e.partition not in partitions]
