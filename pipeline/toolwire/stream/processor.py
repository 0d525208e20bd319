"""Per-message logic of a worker: chunks of many interleaved responses in, records out.

Everything durable lives in three mutable mappings that Faust backs with changelogged tables
(their value types and codecs are in :mod:`toolwire.stream.state`); everything else (the open
assemblers) is a cache that can be rebuilt from them after a crash or a rebalance. Nothing is
written per chunk: the chunks a response received since the last commit are held in memory and
written by :meth:`Processor.flush`, before the offsets are committed, as one segment under a
new key (changelog bytes grow linearly with the input), with the response's metadata; the
other table writes are held the same way (see :mod:`toolwire.stream.writebehind`).

A decided response is *pending* until its record is published: only then does
:meth:`Processor.settle` write its done marker and delete its chunks, so a record that fails
to publish is decided again after a restart rather than lost.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field, replace
from functools import partial

import orjson

from toolwire.config.settings import Settings
from toolwire.core import Assembler, Options, Provenance, decide
from toolwire.core.decide import dead_letter
from toolwire.core.errors import Oversize
from toolwire.core.records import AssembledRecord, DeadLetterDecision, Decision, message_fault
from toolwire.stream.encode import Encoder, Origin, dumps
from toolwire.stream.messages import (
    CONTROL_RELEASE,
    CONTROL_SWEEP,
    END_MARKERS,
    H_CHUNK_SEQ,
    H_CONTROL,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REQUEST_ID,
    MAX_CHUNK_SEQ,
    MAX_ID_BYTES,
    MAX_TOOLS_BYTES,
    InputMessage,
    Output,
    Sink,
)
from toolwire.stream.observe import NoObserver, Observer, Settled
from toolwire.stream.state import (
    Chunks,
    DoneMarker,
    OpenResponse,
    Quarantine,
    QuarantineEntry,
    Responses,
    Segment,
    StateError,
    StoredChunk,
)
from toolwire.stream.writebehind import Write, WriteBehind

log = logging.getLogger("toolwire.processor")


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
    tools: frozenset[str] | None
    first_offset: int
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
    def origin(self) -> Origin:
        return Origin(self.partition, self.first_offset, self.last_offset)

    @property
    def provenance(self) -> Provenance:
        # The declared tools travel into every dead letter, so that a replay (and the record
        # ``toolwire dlq show`` computes) checks the same tools as the original did.
        return Provenance(request_id=self.request_id, session_id=self.session_id,
                          provider=self.provider, model=self.model,
                          declared_tools=self.tools)


class Processor:
    """Applies input messages in partition order; returns what to publish."""

    def __init__(self, settings: Settings, chunks: MutableMapping[str, bytes],
                 responses: MutableMapping[str, bytes], quarantine: MutableMapping[str, bytes],
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 observer: Observer | None = None) -> None:
        self.settings = settings
        self.observer: Observer = observer or NoObserver()
        self.tables = (WriteBehind("chunks", chunks), WriteBehind("responses", responses),
                       WriteBehind("quarantine", quarantine))
        self.chunks = Chunks(self.tables[0])
        self.responses = Responses(self.tables[1])
        self.quarantine = Quarantine(self.tables[2])
        self.clock = clock
        self.wall = wall
        self.encoder = Encoder(settings, wall)
        self.live: dict[str, Live] = {}
        #: Monotonic time of the last message of each open response (restored ones: when first
        #: noticed after the restart, so they too are swept one TTL later).
        self.last_seen: dict[str, float] = {}
        #: Decided responses in decision order: request id → (wall time, partition).
        self.done_at: dict[str, tuple[float, int]] = {}
        #: Set when partitions are assigned: the next sweep scans the tables for restored state.
        self.rescan = True
        #: Completed producer drains (each acknowledges everything produced before it began).
        self.drains = 0
        #: Responses (open or pending) with chunks or metadata not yet flushed.
        self.touched: dict[str, Live] = {}
        #: Bytes of the chunks not yet flushed, all responses together.
        self.unflushed_bytes = 0
        #: Stored chunks waiting for their replacement to be durable before they are deleted.
        self.retiring: list[Retiring] = []
        #: Decided responses whose record is not yet published: request id → (live, record).
        self.pending: dict[str, tuple[Live, Decision]] = {}
        self.stats: Counter[str] = Counter()

    # -- input -------------------------------------------------------------------------------

    def handle(self, msg: InputMessage) -> list[Output]:
        """What to publish for one input message; call :meth:`settle` once it is published."""
        self.stats["messages"] += 1
        self.observer.consumed(len(msg.value))
        control = msg.header(H_CONTROL)
        if control is not None:
            return self._control(msg, control)
        fault, request_id, session_id, seq = _read_envelope(msg)
        if fault is not None:
            if request_id is not None:
                failed = self._malformed_in_response(msg, request_id, fault)
                if failed is not None:
                    return failed
            return self._malformed_message(msg, session_id, request_id, fault)
        assert request_id is not None and session_id is not None and seq is not None
        try:
            return self._chunk(msg, request_id, session_id, seq)
        except Exception as exc:
            # Whatever failed, the response fails whole, with its raw chunks: never drop this
            # chunk and go on assembling the rest (that would publish a call missing a part).
            log.error("request %s: internal error on %s[%d]@%d: %s", request_id, msg.topic,
                      msg.partition, msg.offset, type(exc).__name__, exc_info=True,
                      extra={"request_id": request_id, "session_id": session_id,
                             "partition": msg.partition, "offset": msg.offset})
            self.stats["internal_errors"] += 1
            return self._fail_internal(msg, request_id, session_id, seq, exc)

    def _chunk(self, msg: InputMessage, request_id: str, session_id: str,
               seq: int) -> list[Output]:
        live = self.live.get(request_id)  # an open response in memory is not decided
        if live is None:
            state = None if request_id in self.pending else self.responses.get(request_id)
            if request_id in self.pending or isinstance(state, DoneMarker):
                kind = "end_after_decision" if msg.header(H_END) else "late_after_decision"
                self.stats[kind] += 1
                log.debug("request %s: chunk %d after the decision (%s)", request_id, seq, kind)
                return []
            if state is not None:
                live = self._rebuild(request_id, state)
            else:
                live = self._open(request_id, session_id, msg)
        if seq < live.next_seq:
            if seq == live.next_seq - 1 and msg.headers.get(H_END) is not None:
                # The end marker was applied, but its record never published (the worker
                # stopped first): decide again, now, rather than wait for the sweep.
                self.stats["end_replayed"] += 1
                return self._end(live, msg)
            self.stats["duplicates_skipped"] += 1
            return []
        self.last_seen[request_id] = self.clock()
        live.last_offset = msg.offset
        if msg.timestamp is not None:
            live.last_timestamp = msg.timestamp
            if live.first_timestamp is None:
                live.first_timestamp = msg.timestamp
        if seq > live.next_seq:
            return self._finish(live, dead_letter(
                live.assembler, live.provenance, "sequence_gap",
                f"expected chunk {live.next_seq}, got chunk {seq}: chunks were lost"),
                extra_raw=[(seq, msg.value)])
        asm = live.assembler
        size = len(msg.value)
        unstorable = self._unstorable(size)
        if unstorable is not None:
            # Its changelog record would exceed the producer's limit and stop the worker:
            # the response fails as oversize, and only the message's size is kept.
            if asm.failure is None:
                asm.failure = Oversize(unstorable)
            self._keep(live, StoredChunk.skipped(size))
            live.next_seq += 1
            asm.skip(size)
        else:
            if (asm.failure is None
                    or asm.body_bytes + size <= self.settings.deadletter_raw_bytes):
                # After a failure the rest of the body is still kept for the dead letter's raw
                # chunks (a replay after a fix needs the whole body), but no more than a dead
                # letter can carry: a poisoned stream must not cost its partition more.
                self._keep(live, StoredChunk.of(msg.value))
            else:
                self._keep(live, StoredChunk.skipped(size))
            live.next_seq += 1
            asm.feed(msg.value)
        self.stats["chunks_applied"] += 1
        if msg.headers.get(H_END) is not None:
            return self._end(live, msg)
        # Even after ``[DONE]`` or a failure the response waits for the gateway's end marker:
        # its record then covers the whole body, exactly as ``toolwire assemble`` gives it.
        return []

    def _keep(self, live: Live, chunk: StoredChunk) -> None:
        """Hold a chunk until the next flush writes it with the others of its response."""
        live.unflushed.append(chunk)
        size = 0 if chunk.body is None else len(chunk.body)
        live.unflushed_bytes += size
        self.unflushed_bytes += size
        self.touched[live.request_id] = live

    def _untouch(self, live: Live) -> None:
        """Forget what ``live`` holds unflushed (it is decided, or no longer ours)."""
        self.touched.pop(live.request_id, None)
        self.unflushed_bytes -= live.unflushed_bytes
        live.unflushed = []
        live.unflushed_bytes = 0

    def _end(self, live: Live, msg: InputMessage) -> list[Output]:
        """The gateway's end marker: decide the response."""
        asm = live.assembler
        end = msg.header(H_END)
        if end not in END_MARKERS:
            return self._finish(live, dead_letter(
                asm, live.provenance, "malformed_message",
                f"unknown {H_END} marker {_quote(msg.headers[H_END])} "
                "(expected eof, error or cancelled)"))
        if end != "eof" and asm.failure is None and not asm.end():
            return self._finish(live, dead_letter(
                asm, live.provenance, "stream_closed",
                f"the gateway ended the body with {end!r} before data: [DONE]"))
        return self._finish(live, self._decide(live))

    def _assembler(self, provider: str | None) -> Assembler:
        """A new assembler for a response of ``provider``: every path that builds one (open,
        rebuild, internal failure) must agree on id synthesis, or a response rebuilt after a
        crash would be assembled under other rules than before it."""
        return Assembler(self.settings.limits,
                         synthesize_ids=self.settings.synthesizes_ids(provider))

    def _open(self, request_id: str, session_id: str, msg: InputMessage) -> Live:
        provider = msg.header(H_PROVIDER) or None
        live = Live(request_id=request_id, session_id=session_id, partition=msg.partition,
                    provider=provider, model=msg.header(H_MODEL) or None,
                    tools=_tools(msg.header(H_DECLARED_TOOLS)),
                    first_offset=msg.offset, assembler=self._assembler(provider),
                    opened=self.wall())
        self.live[request_id] = live
        self.touched[request_id] = live  # its metadata is written at the next flush
        self.stats["responses_opened"] += 1
        return live

    def _rebuild(self, request_id: str, state: OpenResponse) -> Live:
        """Continue a response after a crash or rebalance: replay its stored chunks."""
        live = Live(request_id=request_id, session_id=state.session, partition=state.partition,
                    provider=state.provider, model=state.model,
                    tools=None if state.tools is None else frozenset(state.tools),
                    first_offset=state.first_offset, assembler=self._assembler(state.provider),
                    opened=state.opened)
        chunks = list(self.chunks.stored(request_id, state))
        for stored in chunks:
            if stored.body is None:
                if live.assembler.failure is None:  # failed by this message's own size
                    live.assembler.failure = Oversize(self._unstorable(stored.size)
                                                      or "an input message too large to keep")
                live.assembler.skip(stored.size)
            else:
                live.assembler.feed(stored.body)
            live.next_seq += 1
        if state.segments is None:
            # Written by the release that stored one key per chunk: the next flush rewrites
            # them as this response's first segment, and the old keys go once it is durable.
            for stored in chunks:
                self._keep(live, stored)
            if chunks:
                self.retiring.append(Retiring(request_id, state.partition, 0, len(chunks)))
        else:
            if state.stored is not None and state.stored != len(chunks):
                raise StateError(f"request {request_id}: {len(chunks)} chunks in its segments, "
                                 f"its metadata says {state.stored}")
            live.stored, live.segments = len(chunks), state.segments
        self.live[request_id] = live
        self.last_seen.setdefault(request_id, self.clock())
        self.stats["responses_rebuilt"] += 1
        log.info("request %s: rebuilt from %d stored chunks", request_id, live.next_seq,
                 extra={"request_id": request_id, "session_id": live.session_id})
        return live

    def _unstorable(self, size: int) -> str | None:
        """Why an input message of ``size`` bytes cannot be kept in a table, if it cannot."""
        if size + _CHUNK_RECORD_OVERHEAD <= self.settings.max_record_bytes:
            return None
        return (f"an input message of {size} bytes is larger than one stored chunk may be "
                f"(TOOLWIRE_MAX_RECORD_BYTES={self.settings.max_record_bytes}): the gateway "
                "must send the body in smaller slices")

    def _fail_internal(self, msg: InputMessage, request_id: str, session_id: str, seq: int,
                       exc: Exception) -> list[Output]:
        """The dead letter of a response whose handling raised, covering all its chunks."""
        detail = (f"{type(exc).__name__} while handling chunk {seq} "
                  "(a Toolwire fault or input no rule names; see the worker log)")
        live = self.live.get(request_id)
        if live is not None:
            kept = (live.stored <= seq < live.stored + len(live.unflushed)
                    and live.unflushed[seq - live.stored].body is not None)
            extra = [] if kept else [(seq, msg.value)]
            return self._finish(live, dead_letter(live.assembler, live.provenance,
                                                  "internal_error", detail), extra_raw=extra)
        # It failed before the response was open in memory: fail it from this message alone,
        # and mark it decided so that its later chunks are not assembled without this one.
        # Its headers are sound (the envelope was read), and the declared tools among them
        # must reach the dead letter: a replay without them would skip the check.
        provider = msg.header(H_PROVIDER) or None
        live = Live(request_id=request_id, session_id=session_id, partition=msg.partition,
                    provider=provider, model=msg.header(H_MODEL) or None,
                    tools=_tools(msg.header(H_DECLARED_TOOLS)), first_offset=msg.offset,
                    assembler=self._assembler(provider), last_offset=msg.offset)
        return self._finish(live, dead_letter(live.assembler, live.provenance,
                                              "internal_error", detail),
                            extra_raw=[(seq, msg.value)])

    # -- decision and publication ------------------------------------------------------------

    def _decide(self, live: Live) -> Decision:
        options = Options(declared_tools=live.tools, strict=self.settings.strict,
                          synthesize_ids=self.settings.synthesizes_ids(live.provider),
                          limits=self.settings.limits)
        return decide(live.assembler, options, live.provenance)

    def _finish(self, live: Live, record: Decision,
                extra_raw: list[tuple[int, bytes]] | None = None) -> list[Output]:
        """The record (or its dead letter) to publish; the state is dropped by :meth:`settle`.

        The done marker is written only once the record is published: a record that fails
        to publish leaves the response open, so the replay after a restart decides it again
        instead of finding it "done" and publishing nothing.
        """
        session = live.session_id
        output: Output | None = None
        if record["outcome"] == "assembled":
            if session in self.quarantine:
                held = record
                record = dead_letter(live.assembler, live.provenance, "session_quarantined",
                                     "an earlier response of this session was dead-lettered; "
                                     f"release it with: toolwire dlq release {session}")
                record["held_record"] = held
            else:
                output = self.encoder.assembled(record, session, live.request_id)
                if output is None:
                    record = self._oversize(live, record)
                else:
                    output = replace(output, refit=partial(self._refit_assembled, live,
                                                           record, extra_raw))
        if record["outcome"] == "dead_letter":
            stored = [*self.chunks.segments(live.request_id, live.segments), *live.unflushed]
            # A chunk kept by size only ends the raw copy there (it is then flagged truncated).
            raw = [(seq, chunk.body) for seq, chunk in enumerate(stored)]
            output = self.encoder.dead_letter(record, live.origin, [*raw, *(extra_raw or [])],
                                              settles=live.request_id)
            self._quarantine(live.partition, session, record)
        assert output is not None
        self.live.pop(live.request_id, None)
        self.last_seen.pop(live.request_id, None)
        self.pending[live.request_id] = (live, record)
        return [output]

    def _quarantine(self, partition: int, session: str | None,
                    record: DeadLetterDecision) -> None:
        if session and session not in self.quarantine:
            self.quarantine.put(partition, session, QuarantineEntry(
                reason=record["reason"], request_id=record["request_id"], since=self.wall()))
            self.stats["sessions_quarantined"] += 1

    def settle(self, output: Output) -> None:
        """``output`` is published: forget the response it decided, keep its done marker.

        Runs in the same event as :meth:`handle` (the table writes need its partition).
        """
        if output.settles is None:
            return
        live, record = self.pending.pop(output.settles)
        outcome = record["outcome"]
        done = self.wall()
        # Written through, not held to the next commit: until it is durable, a crash makes the
        # restarted worker decide (and publish) the response again.
        self.responses.put_now(live.request_id, DoneMarker(
            done=done, partition=live.partition, outcome=outcome, segments=live.segments))
        # Chunks never flushed are simply dropped; stored ones are deleted only once the done
        # marker is durable: the two go to different changelogs, and a crash that kept the
        # deletions but lost the marker would bring the response back open with no chunks.
        # A drain may already be under way: the second one from now began after the marker.
        self._untouch(live)
        if live.segments:
            self.retiring.append(Retiring(live.request_id, live.partition, live.segments, 0,
                                          durable_at=self.drains + 2))
        self.done_at[live.request_id] = (done, live.partition)
        self.stats["records_" + outcome] += 1
        if outcome == "dead_letter":
            log.info("request %s: dead letter %s", live.request_id, record.get("reason"),
                     extra={"request_id": live.request_id, "session_id": live.session_id})
        if record["outcome"] == "assembled":
            reason, repairs = None, record["repairs"]
            truncated, error_code = record["truncated"], record["error_code"]
        else:
            reason, repairs = record["reason"], record.get("repairs", {})
            truncated, error_code = False, None
        self.observer.settled(Settled(
            outcome=outcome, reason=reason, provider=live.provider, repairs=repairs,
            truncated=truncated, error_code=error_code, first_timestamp=live.first_timestamp,
            last_timestamp=live.last_timestamp, published=done))

    def drained(self) -> None:
        """The producer was drained: every table write made before the drain began is
        acknowledged by the broker."""
        self.drains += 1

    @property
    def cache_full(self) -> bool:
        """More is held for the next flush than ``TOOLWIRE_STATE_CACHE_BYTES`` allows."""
        chunks, responses, quarantine = self.tables  # asked after every message: no generator
        held = (self.unflushed_bytes + chunks.held_bytes + responses.held_bytes
                + quarantine.held_bytes)
        return held > self.settings.state_cache_bytes

    def flush(self) -> list[Write]:
        """Write what is held: per touched response one segment of its new chunks and its
        metadata; the held done markers, quarantine entries and deletions; and the deletions
        whose replacement is now durable. Call it before committing input offsets."""
        for request_id, live in self.touched.items():
            if live.unflushed:
                segment = Segment(live.stored, tuple(live.unflushed))
                self.chunks.put_segment(live.partition, request_id, live.segments, segment)
                live.segments += 1
                live.stored += len(live.unflushed)
                live.unflushed = []
                live.unflushed_bytes = 0
            self.responses.put(request_id, self._open_state(live))
        self.touched.clear()
        self.unflushed_bytes = 0
        waiting: list[Retiring] = []
        for entry in self.retiring:
            if entry.durable_at is None:
                # Its replacement is written by this flush, and drained right after it.
                entry.durable_at = self.drains + 1
                waiting.append(entry)
            elif self.drains >= entry.durable_at:
                for n in range(entry.segments):
                    self.chunks.drop_segment(entry.partition, entry.request_id, n)
                for seq in range(entry.legacy_chunks):
                    self.chunks.drop(entry.partition, entry.request_id, seq)
            else:
                waiting.append(entry)
        self.retiring = waiting
        writes = [write for table in self.tables for write in table.flush()]
        self.stats["state_flushes"] += 1
        self.stats["state_writes"] += len(writes)
        return writes

    def _open_state(self, live: Live) -> OpenResponse:
        return OpenResponse(
            session=live.session_id, partition=live.partition, provider=live.provider,
            model=live.model, tools=None if live.tools is None else tuple(sorted(live.tools)),
            first_offset=live.first_offset, opened=live.opened, stored=live.stored,
            segments=live.segments,
            identity={f"{c.choice}:{c.index}": [c.id, c.name]
                      for c in live.assembler.calls.values()})

    def unsettled(self) -> None:
        """Publication failed: forget what was decided; the tables still hold it as open."""
        self.pending.clear()

    def _oversize(self, live: Live, record: Decision,
                  limit: int | None = None) -> DeadLetterDecision:
        size = len(dumps(record) or b"")
        limit = limit or self.encoder.limits[Sink.ASSEMBLED]
        where = (f"TOOLWIRE_MAX_RECORD_BYTES={limit}" if limit == self.settings.max_record_bytes
                 else f"the assembled topic's max.message.bytes ({limit})")
        detail = (f"the assembled record is {size} bytes, over {where}" if size else
                  "the assembled record cannot be written as JSON")
        self.stats["records_too_large"] += 1
        return dead_letter(live.assembler, live.provenance, "oversize", detail)

    def _refit_assembled(self, live: Live, record: AssembledRecord,
                         extra_raw: list[tuple[int, bytes]] | None, limit: int) -> Output:
        """The broker refused this assembled record as too large for its topic (whose
        ``max.message.bytes`` is below ``TOOLWIRE_MAX_RECORD_BYTES``): the response ends as
        an ``oversize`` dead letter instead — never skipped — with its session quarantined,
        as any dead letter's is."""
        fitted = self.encoder.assembled(record, live.session_id, live.request_id, limit)
        if fitted is not None:
            return replace(fitted, refit=partial(self._refit_assembled, live, record,
                                                 extra_raw))
        letter = self._oversize(live, record, limit)
        stored = [*self.chunks.segments(live.request_id, live.segments), *live.unflushed]
        raw = [(seq, chunk.body) for seq, chunk in enumerate(stored)]
        # Within the smaller of the two topics' limits: a refusal means this cluster's limits
        # are small, and one more refusal of the dead letter would cost a round trip.
        output = self.encoder.dead_letter(letter, live.origin, [*raw, *(extra_raw or [])],
                                          settles=live.request_id,
                                          limit=min(limit, self.encoder.limits[Sink.DEADLETTER]))
        self._quarantine(live.partition, live.session_id, letter)
        self.pending[live.request_id] = (live, letter)
        return output

    def _malformed_in_response(self, msg: InputMessage, request_id: str,
                               fault: str) -> list[Output] | None:
        """A malformed message of a response that is open fails that response now.

        Left open, the response could only end one TTL later as ``stream_abandoned`` (its
        chunk is missing, so it can never assemble), with its session free to go on past it
        meanwhile. It gets one dead letter instead, ``malformed_message``, with its raw chunks
        and this message's bytes as the next one (a replay after the gateway is fixed needs
        them all), and its session is quarantined as for any dead letter. ``None`` when the
        request names no open response (never seen, pending, or decided): the message is then
        dead-lettered on its own, as before.
        """
        try:
            live = self.live.get(request_id)  # open in memory: never pending
            if live is None:
                if request_id in self.pending:
                    return None
                state = self.responses.get(request_id)
                if not isinstance(state, OpenResponse):
                    return None  # unknown, or decided (a done marker)
                live = self._rebuild(request_id, state)
            live.last_offset = msg.offset
            if msg.timestamp is not None:
                live.last_timestamp = msg.timestamp
                if live.first_timestamp is None:
                    live.first_timestamp = msg.timestamp
            self.stats["malformed_messages"] += 1
            self.stats["responses_failed_by_malformed_message"] += 1
            log.info("request %s: a malformed message at %s[%d]@%d fails the open response",
                     request_id, msg.topic, msg.partition, msg.offset,
                     extra={"request_id": request_id, "session_id": live.session_id,
                            "partition": msg.partition, "offset": msg.offset})
            return self._finish(live, dead_letter(
                live.assembler, live.provenance, "malformed_message",
                f"{fault} (a message of this open response, at offset {msg.offset}: "
                "the response fails with it)"),
                extra_raw=[(live.next_seq, msg.value)])
        except Exception:
            # Its table state could not be read or rebuilt: the message is still dead-lettered
            # on its own (the response, missing this chunk, cannot assemble past the gap).
            log.error("request %s: internal error while failing it for a malformed message",
                      request_id, exc_info=True, extra={"request_id": request_id})
            self.stats["internal_errors"] += 1
            return None

    def _malformed_message(self, msg: InputMessage, session: str | None,
                           request_id: str | None, detail: str) -> list[Output]:
        """A message that breaks the input contract cannot join a response: dead-letter it."""
        record = message_fault("malformed_message", detail, request_id, session)
        # Its declared tools, if its header can be read, so a replay checks them too.
        record["declared_tools"] = _readable_tools(msg.headers.get(H_DECLARED_TOOLS))
        self.stats["malformed_messages"] += 1
        self._quarantine(msg.partition, session, record)
        self._message_dead_letter("malformed_message", msg)
        return [self.encoder.dead_letter(record, Origin(msg.partition, msg.offset, msg.offset),
                                         [(-1, msg.value)])]

    def _message_dead_letter(self, reason: str, msg: InputMessage) -> None:
        """Count a dead letter of one message (no response to settle) with the others."""
        self.observer.settled(Settled(
            outcome="dead_letter", reason=reason, provider=msg.header(H_PROVIDER) or None,
            repairs={}, truncated=False, error_code=None, first_timestamp=None,
            last_timestamp=None, published=self.wall()))

    def oldest_open(self) -> float | None:
        """Wall time at which the oldest response open in memory was opened."""
        return min((live.opened for live in self.live.values()), default=None)

    def message_failed(self, msg: InputMessage, exc: BaseException) -> Output:
        """The agent's last resort when :meth:`handle` itself raised: a dead letter of this
        one message (schema-valid, bounded), built without touching the tables."""
        record = message_fault("internal_error",
                               f"{type(exc).__name__} in the processor (see the worker log)",
                               None, None)
        record["declared_tools"] = _readable_tools(msg.headers.get(H_DECLARED_TOOLS))
        self.stats["internal_errors"] += 1
        self._message_dead_letter("internal_error", msg)
        return self.encoder.dead_letter(record, Origin(msg.partition, msg.offset, msg.offset),
                                        [(-1, msg.value)])

    # -- control: release and sweep ----------------------------------------------------------

    def _control(self, msg: InputMessage, control: str) -> list[Output]:
        self.stats["control_messages"] += 1
        if control == CONTROL_RELEASE:
            session = msg.key.decode("utf-8", "replace") if msg.key else ""
            if session in self.quarantine:
                self.quarantine.release(msg.partition, session)
                self.stats["sessions_released"] += 1
                log.info("session %s released from quarantine", session,
                         extra={"session_id": session})
            else:
                log.info("release of session %s: it was not quarantined", session)
            return []
        if control == CONTROL_SWEEP:
            requests = _sweep_requests(msg.value)
            if requests is None:
                self.stats["control_malformed"] += 1
                log.warning("ignored a sweep message with an unreadable value at %s[%d]@%d "
                            '(expected {"requests": [request ids]})', msg.topic,
                            msg.partition, msg.offset)
                return []
            outputs: list[Output] = []
            for request_id in requests:
                # Each response on its own: one that fails cannot stop the sweep of the others.
                try:
                    outputs.extend(self._sweep_one(request_id))
                except Exception as exc:
                    log.error("request %s: internal error while sweeping: %s", request_id,
                              type(exc).__name__, exc_info=True)
                    self.stats["internal_errors"] += 1
                    outputs.extend(self._sweep_failed(request_id, exc))
            return outputs
        self.stats["control_malformed"] += 1
        log.warning("ignored unknown control message %r at offset %d", control, msg.offset)
        return []

    def _sweep_one(self, request_id: str) -> list[Output]:
        live = self.live.get(request_id)  # open in memory: its metadata may not be flushed
        if live is None:
            return self._sweep_stored(request_id)
        return self._sweep_open(request_id, live)

    def _sweep_stored(self, request_id: str) -> list[Output]:
        state = self.responses.get(request_id)
        if state is None or request_id in self.pending:
            return []
        if isinstance(state, DoneMarker):
            if self.wall() - state.done >= self.settings.dedupe_window_seconds:
                for seq in range(state.chunks):  # any a crash left behind (idempotent)
                    self.chunks.drop(state.partition, request_id, seq)
                for n in range(state.segments or 0):
                    self.chunks.drop_segment(state.partition, request_id, n)
                self.responses.delete(state.partition, request_id)
                self.done_at.pop(request_id, None)
                self.stats["dedupe_markers_expired"] += 1
            return []
        return self._sweep_open(request_id, self._rebuild(request_id, state))

    def _sweep_open(self, request_id: str, live: Live) -> list[Output]:
        idle = self.clock() - self.last_seen.get(request_id, self.clock())
        if idle < self.settings.stream_ttl_seconds:
            return []  # a chunk arrived after the sweeper looked
        if live.assembler.failure is not None or live.assembler.done:
            # The body was complete (or already failed); only the end marker never came.
            return self._finish(live, self._decide(live))
        self.stats["streams_abandoned"] += 1
        return self._finish(live, dead_letter(
            live.assembler, live.provenance, "stream_abandoned",
            f"no chunk for {idle:.0f} s (TTL {self.settings.stream_ttl_seconds:g} s)"))

    def _sweep_failed(self, request_id: str, exc: Exception) -> list[Output]:
        """Dead-letter a response whose sweep raised; if even that fails, stop sweeping it."""
        live = self.live.get(request_id)
        try:
            if live is not None:
                return self._finish(live, dead_letter(
                    live.assembler, live.provenance, "internal_error",
                    f"{type(exc).__name__} while sweeping (see the worker log)"))
        except Exception:
            log.error("request %s: its dead letter failed too", request_id, exc_info=True)
        failed = self.live.pop(request_id, None)
        if failed is not None:
            self._untouch(failed)
        self.last_seen.pop(request_id, None)
        return []

    def sweep(self, assigned: set[int] | None = None) -> list[Output]:
        """Control messages that ask the owning worker to sweep idle or expired state.

        Runs from a timer, outside any event: it changes nothing itself (a table write needs
        the partition of an event) but sends one message per partition to the input topic.
        """
        if self.rescan:
            self._scan_tables()
        now, wall = self.clock(), self.wall()
        due: dict[int, list[str]] = {}
        for request_id, seen in self.last_seen.items():
            if now - seen >= self.settings.stream_ttl_seconds:
                live = self.live.get(request_id)
                partition = live.partition if live else self._partition_of(request_id)
                if partition is not None:
                    due.setdefault(partition, []).append(request_id)
        for request_id, (done, partition) in self.done_at.items():
            if wall - done < self.settings.dedupe_window_seconds:
                break  # decision order: the rest are younger
            due.setdefault(partition, []).append(request_id)
        return [Output(Sink.CHUNKS, None, orjson.dumps({"requests": ids}),
                       {H_CONTROL: CONTROL_SWEEP.encode()}, partition=p)
                for p, ids in sorted(due.items()) if assigned is None or p in assigned]

    def _partition_of(self, request_id: str) -> int | None:
        state = self.responses.get(request_id)
        return None if state is None else state.partition

    def _scan_tables(self) -> None:
        """Learn the open responses and dedupe markers restored from the changelogs."""
        self.rescan = False
        now = self.clock()
        found = []
        for request_id, state in self.responses.items():
            if isinstance(state, DoneMarker):
                found.append((state.done, request_id, state.partition))
            elif request_id not in self.last_seen:
                self.last_seen[request_id] = now
        for done, request_id, partition in sorted(found):
            self.done_at.setdefault(request_id, (done, partition))

    def forget(self, partitions: set[int]) -> None:
        """Partitions were revoked: their state now belongs to another worker."""
        for request_id in [r for r, live in self.live.items() if live.partition in partitions]:
            self._untouch(self.live.pop(request_id))
            self.last_seen.pop(request_id, None)
        for request_id in [r for r, live in self.touched.items() if live.partition in partitions]:
            self._untouch(self.touched[request_id])
        for request_id in [r for r, (_, p) in self.done_at.items() if p in partitions]:
            del self.done_at[request_id]
        # What was committed was flushed first; the rest the new owner re-reads. Stored chunks
        # still to delete are deleted by the new owner when their done markers expire.
        for table in self.tables:
            table.drop(partitions)
        self.retiring = [e for e in self.retiring if e.partition not in partitions]
        stale = [r for r in self.last_seen if self._partition_of(r) in partitions]
        for request_id in stale:
            del self.last_seen[request_id]
        self.rescan = True


_SEQ = re.compile(rb"[0-9]{1,10}")
#: A stored chunk's changelog record beyond its body: key, format byte, Kafka framing.
_CHUNK_RECORD_OVERHEAD = 1024


def _read_envelope(msg: InputMessage) -> tuple[str | None, str | None, str | None, int | None]:
    """(fault, request id, session id, seq) of a chunk message; fault ``None`` when sound.

    The headers and key are checked strictly, since they become keys, record fields and
    headers downstream: UTF-8, bounded length, and a ``chunk-seq`` of ASCII digits within
    ``0..MAX_CHUNK_SEQ`` (``str.isdigit`` would let ``²`` through, and a 5,000-digit value
    would fail ``int``).
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
        faults.append(f"header {H_CHUNK_SEQ}={_quote(raw_seq)} is not a whole number "
                      f"from 0 to {MAX_CHUNK_SEQ} in ASCII digits")
    else:
        seq = int(raw_seq)
    for name, bound in ((H_PROVIDER, MAX_ID_BYTES), (H_MODEL, MAX_ID_BYTES),
                        (H_DECLARED_TOOLS, MAX_TOOLS_BYTES)):
        value = msg.headers.get(name)
        if value is not None and len(value) > bound:
            faults.append(f"header {name} is {len(value)} bytes (at most {bound})")
    if faults:
        return "; ".join(faults), request_id or None, session_id or None, seq
    return None, request_id, session_id, seq


def _tools(text: str | None) -> frozenset[str] | None:
    """The ``declared-tools`` header's names; ``None`` without the header (no check), and
    the empty set for an empty one (the request declared no tools: every call is unknown)."""
    if text is None:
        return None
    return frozenset(t.strip() for t in text.split(",") if t.strip())


def _readable_tools(raw: bytes | None) -> list[str] | None:
    """A malformed message's declared tools for its dead letter, sorted, when its header is
    within the contract's bound and UTF-8; else ``None``, as for a message without one."""
    if raw is None or len(raw) > MAX_TOOLS_BYTES:
        return None
    try:
        tools = _tools(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    return None if tools is None else sorted(tools)


def _quote(raw: bytes, limit: int = 40) -> str:
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
        faults.append(f"{name} is not UTF-8: {_quote(raw)}")
        return None


def _sweep_requests(value: bytes) -> list[str] | None:
    """The request ids of a sweep message, or ``None`` when its body is not the expected one."""
    try:
        body = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    requests = body.get("requests") if type(body) is dict else None
    if type(requests) is not list or not all(type(r) is str for r in requests):
        return None
    return requests
