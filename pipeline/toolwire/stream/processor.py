"""Per-message logic of a worker: chunks of many interleaved responses in, records out.

Everything durable lives in three mutable mappings that Faust backs with changelogged tables
(their value types and codecs are in :mod:`toolwire.stream.state`); everything else (the open
assemblers) is a cache that can be rebuilt from them after a crash or a rebalance. The
:class:`Processor` is the worker's one entry point (its facade, listed in its docstring) over
three parts:

- :mod:`toolwire.stream.messages` reads a message's envelope against the input contract;
- :mod:`toolwire.stream.store` holds the table writes until a flush, rebuilds open responses
  from their stored chunks, and deletes those chunks only once their replacement is durable;
- :mod:`toolwire.stream.control` handles control messages and the sweep.

- :mod:`toolwire.stream.outbox` turns a decision into its message (held, cut to fit,
  quarantined), keeps it *pending* until it is published, and only then settles it (its done
  marker written, its chunks' deletion scheduled), so a record that fails to publish is decided
  again after a restart rather than lost.

What stays here is the life of a response: opened, fed message by message in sequence order,
decided by its end marker (or the sweep), and released to the outbox.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, MutableMapping

from toolwire.config.settings import Settings
from toolwire.core import Options, decide, new_assembler
from toolwire.core.decide import closed_detail, dead_letter
from toolwire.core.errors import Oversize
from toolwire.core.records import Decision, message_fault
from toolwire.stream.control import Control
from toolwire.stream.encode import Encoder
from toolwire.stream.messages import (
    END_MARKERS,
    H_CONTROL,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_WIRE,
    InputMessage,
    Origin,
    Output,
    Sink,
    declared_tools,
    quote,
    read_envelope,
    readable_tools,
    wire_as_sent,
)
from toolwire.stream.observe import Event, NoObserver, Observer, Settled
from toolwire.stream.outbox import Outbox, Pending
from toolwire.stream.state import DoneMarker, OpenResponse, StoredChunk
from toolwire.stream.store import Live, Store
from toolwire.stream.writebehind import Write, WriteBehind

log = logging.getLogger("toolwire.processor")


class Processor:
    """Applies input messages in partition order; returns what to publish.

    Its facade — everything the worker (:mod:`toolwire.app.service`) calls:

    - per input message, in its event: :meth:`handle`, then :meth:`settle` for each output
      once published (:meth:`unsettled` when publishing failed, :meth:`refit` when the broker
      refused it as too large); :meth:`message_failed` when :meth:`handle` itself raised;
    - the commit's steps (:class:`toolwire.app.commit.Checkpoint`): :meth:`flush`,
      :meth:`drained`, :meth:`retire`; and :attr:`cache_full`, after which the agent flushes
      early;
    - the sweep timer: :meth:`sweep`;
    - rebalances: :meth:`on_assigned`, :meth:`on_revoked`;
    - metrics and limits: :attr:`stats` (counts keyed by
      :class:`~toolwire.stream.observe.Event`), :meth:`gauges`, the ``observer`` given at
      construction, and :meth:`learn_limit`.

    :meth:`rebuild`, :meth:`decide`, :meth:`release` and :meth:`drop` serve
    :mod:`toolwire.stream.control` (its ``OpenResponses`` protocol), not the worker.
    """

    def __init__(self, settings: Settings, chunks: MutableMapping[str, bytes],
                 responses: MutableMapping[str, bytes], quarantine: MutableMapping[str, bytes],
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 observer: Observer | None = None,
                 stats: Counter[str] | None = None) -> None:
        self.settings = settings
        #: Event counts, keyed by :class:`~toolwire.stream.observe.Event` (the worker may hand
        #: in its own counter, to count its events beside these).
        self.stats: Counter[str] = Counter() if stats is None else stats
        self.clock = clock
        self.wall = wall
        self.store = Store(chunks, responses, quarantine, self.stats,
                           max_record_bytes=settings.max_record_bytes,
                           cache_bytes=settings.state_cache_bytes)
        self.encoder = Encoder(settings, wall)
        #: Open responses in memory (a cache: rebuilt from the tables when missing).
        self.live: dict[str, Live] = {}
        self.control = Control(settings, self.store, self, self.stats, clock, wall)
        self.outbox = Outbox(settings, self.store, self.control, self.encoder, self.stats,
                             observer or NoObserver(), wall)
        #: Decided responses whose record is not yet published, by request id.
        self.pending: dict[str, Pending] = self.outbox.pending

    @property
    def observer(self) -> Observer:
        """Who is told of each message consumed and each response settled (the metrics)."""
        return self.outbox.observer

    @observer.setter
    def observer(self, observer: Observer) -> None:
        # Set after construction when the observer itself reads this processor's counts.
        self.outbox.observer = observer

    # -- facade: input -----------------------------------------------------------------------

    def handle(self, msg: InputMessage) -> list[Output]:
        """What to publish for one input message; call :meth:`settle` once it is published."""
        self.stats[Event.MESSAGES] += 1
        self.observer.consumed(len(msg.value))
        control = msg.header(H_CONTROL)
        if control is not None:
            return self.control.handle(msg, control)
        fault, request_id, session_id, seq, wire = read_envelope(msg)
        if fault is not None:
            if request_id is not None:
                failed = self._malformed_in_response(msg, request_id, fault)
                if failed is not None:
                    return failed
            return self._malformed_message(msg, session_id, request_id, fault)
        assert request_id is not None and session_id is not None and seq is not None
        try:
            return self._body_message(msg, request_id, session_id, seq, wire)
        except Exception as exc:
            # Whatever failed, the response fails whole, with its raw chunks: never drop this
            # chunk and go on assembling the rest (that would publish a call missing a part).
            log.error("request %s: internal error on %s[%d]@%d: %s", request_id, msg.topic,
                      msg.partition, msg.offset, type(exc).__name__, exc_info=True,
                      extra={"request_id": request_id, "session_id": session_id,
                             "partition": msg.partition, "offset": msg.offset})
            self.stats[Event.INTERNAL_ERRORS] += 1
            return self._fail_internal(msg, request_id, session_id, seq, wire, exc)

    def message_failed(self, msg: InputMessage, exc: BaseException) -> Output:
        """The agent's last resort when :meth:`handle` itself raised: a dead letter of this
        one message (schema-valid, bounded), built without touching the tables."""
        record = message_fault("internal_error",
                               f"{type(exc).__name__} in the processor (see the worker log)",
                               None, None)
        record["declared_tools"] = readable_tools(msg.headers.get(H_DECLARED_TOOLS))
        self.stats[Event.INTERNAL_ERRORS] += 1
        self._message_dead_letter("internal_error", msg)
        return self.encoder.dead_letter(record, self._message_origin(msg), [(-1, msg.value)])

    def settle(self, output: Output) -> None:
        """``output`` is published: forget the response it decided, keep its done marker.

        Runs in the same event as :meth:`handle` (the table writes need its partition).
        """
        self.outbox.settle(output)

    def unsettled(self) -> None:
        """Publication failed: forget what was decided; the tables still hold it as open."""
        self.outbox.unsettled()

    def refit(self, output: Output, limit: int) -> Output:
        """``output`` built again within ``limit`` bytes, which the broker says its topic takes
        (see :meth:`toolwire.stream.outbox.Outbox.refit`)."""
        return self.outbox.refit(output, limit)

    # -- facade: the commit's steps (see toolwire.app.commit) --------------------------------

    @property
    def cache_full(self) -> bool:
        """More is held for the next flush than ``TOOLWIRE_STATE_CACHE_BYTES`` allows."""
        return self.store.cache_full

    def flush(self) -> list[Write]:
        """Write what is held: per touched response one segment of its new chunks and its
        metadata; the held done markers, quarantine entries and deletions. Call it before
        committing input offsets."""
        return self.store.flush()

    def drained(self) -> None:
        """The producer was drained: every table write made before the drain began is
        acknowledged by the broker."""
        self.store.drained()

    def retire(self) -> None:
        """Delete the stored chunks whose replacement is now durable (after :meth:`drained`)."""
        self.store.retire()

    # -- facade: the sweep timer and rebalances ----------------------------------------------

    def sweep(self, assigned: set[int] | None = None) -> list[Output]:
        """Control messages that ask the owning worker to sweep idle or expired state (see
        :meth:`toolwire.stream.control.Control.requests`): the timer sends them to the input
        topic and changes nothing itself."""
        return self.control.requests(assigned)

    def on_assigned(self) -> None:
        """Partitions were assigned: the next sweep scans the tables for restored state."""
        self.control.assigned()

    def on_revoked(self, partitions: set[int]) -> None:
        """Partitions were revoked: their state now belongs to another worker."""
        for request_id in [r for r, live in self.live.items() if live.partition in partitions]:
            self.drop(request_id)
        self.store.forget(partitions)
        self.control.forget(partitions)

    # -- facade: metrics and limits ----------------------------------------------------------

    def gauges(self) -> dict[str, float]:
        """The state the metrics read at scrape time: open responses (and when the oldest was
        opened), quarantined sessions, and the entries of each table."""
        store = self.store
        oldest = min((live.opened for live in self.live.values()), default=None)
        return {**({} if oldest is None else {"oldest_open": oldest}),
                "open_responses": len(self.live),
                "quarantined_sessions": len(store.quarantine),
                "entries.chunks": len(store.chunks),
                "entries.responses": len(store.responses),
                "entries.quarantine": len(store.quarantine)}

    def learn_limit(self, sink: Sink, limit: int) -> int:
        """An output topic accepts records of at most ``limit`` bytes: build its records to fit
        (the limit applied, at most ``TOOLWIRE_MAX_RECORD_BYTES``)."""
        return self.encoder.learn(sink, limit)

    @property
    def tables(self) -> tuple[WriteBehind, WriteBehind, WriteBehind]:
        """The three tables behind their write-behind caches (chunks, responses, quarantine)."""
        return self.store.tables

    # -- a response's life: its messages ----------------------------------------------------

    def _body_message(self, msg: InputMessage, request_id: str, session_id: str, seq: int,
                      wire: str) -> list[Output]:
        """One input message of a response: a slice of its body, ``chunk-seq`` ``seq``
        (the topic's "chunk": a Kafka message, not a provider event)."""
        live = self.live.get(request_id)  # an open response in memory is not decided
        if live is None:
            state = None if request_id in self.pending else self.store.responses.get(request_id)
            if request_id in self.pending or isinstance(state, DoneMarker):
                kind = (Event.END_AFTER_DECISION if msg.header(H_END)
                        else Event.LATE_AFTER_DECISION)
                self.stats[kind] += 1
                log.debug("request %s: chunk %d after the decision (%s)", request_id, seq, kind)
                return []
            if state is not None:
                live = self.rebuild(request_id, state)
            else:
                live = self._open(request_id, session_id, msg, wire)
        if seq < live.next_seq:
            if seq == live.next_seq - 1 and msg.headers.get(H_END) is not None:
                # The end marker was applied, but its record never published (the worker
                # stopped first): decide again, now, rather than wait for the sweep.
                self.stats[Event.END_REPLAYED] += 1
                return self._end(live, msg)
            self.stats[Event.DUPLICATES_SKIPPED] += 1
            return []
        self.control.seen(request_id)
        live.seen_at(msg.offset, msg.timestamp)
        if seq > live.next_seq:
            return self.release(live, dead_letter(
                live.assembler, live.provenance, "sequence_gap",
                f"expected chunk {live.next_seq}, got chunk {seq}: chunks were lost"),
                extra_raw=((seq, msg.value),))
        asm = live.assembler
        size = len(msg.value)
        unstorable = self.store.unstorable(size)
        if unstorable is not None:
            # Its changelog record would exceed the producer's limit and stop the worker:
            # the response fails as oversize, and only the message's size is kept.
            if asm.failure is None:
                asm.failure = Oversize(unstorable)
            self.store.keep(live, StoredChunk.skipped(size))
            live.next_seq += 1
            asm.skip(size)
        else:
            if (asm.failure is None
                    or asm.body_bytes + size <= self.settings.deadletter_raw_bytes):
                # After a failure the rest of the body is still kept for the dead letter's raw
                # chunks (a replay after a fix needs the whole body), but no more than a dead
                # letter can carry: a poisoned stream must not cost its partition more.
                self.store.keep(live, StoredChunk.of(msg.value))
            else:
                self.store.keep(live, StoredChunk.skipped(size))
            live.next_seq += 1
            asm.feed(msg.value)
        self.stats[Event.CHUNKS_APPLIED] += 1
        if msg.headers.get(H_END) is not None:
            return self._end(live, msg)
        # Even after ``[DONE]`` or a failure the response waits for the gateway's end marker:
        # its record then covers the whole body, exactly as ``toolwire assemble`` gives it.
        return []

    def _end(self, live: Live, msg: InputMessage) -> list[Output]:
        """The gateway's end marker: decide the response."""
        asm = live.assembler
        end = msg.header(H_END)
        if end not in END_MARKERS:
            return self.release(live, dead_letter(
                asm, live.provenance, "malformed_message",
                f"unknown {H_END} marker {quote(msg.headers[H_END])} "
                "(expected eof, error or cancelled)"))
        if end != "eof" and asm.failure is None and not asm.end():
            return self.release(live, dead_letter(
                asm, live.provenance, "stream_closed",
                closed_detail(asm, f"the gateway ended the {asm.wire.name} body with "
                                   f"{end!r} before its end event")))
        return self.release(live, self.decide(live))

    def _options(self, provider: str | None, wire: str,
                 tools: frozenset[str] | None) -> Options:
        """The options of a response of ``provider`` on ``wire``, built once per open
        response (:attr:`Live.options`): its assembler and its decision, on every path (open,
        rebuild, internal failure), read the same ones (id synthesis, the end rule, the
        wire), so a response rebuilt after a crash is assembled under the rules it began
        under."""
        return Options(declared_tools=tools, strict=self.settings.strict,
                       synthesize_ids=self.settings.synthesizes_ids(provider),
                       end_without_done=self.settings.ends_without_done(provider),
                       limits=self.settings.limits, wire=wire)

    def _live(self, request_id: str, session_id: str, msg: InputMessage, wire: str) -> Live:
        """A response whose first message is ``msg`` (its headers are sound, and name
        ``wire``)."""
        provider = msg.header(H_PROVIDER) or None
        options = self._options(provider, wire, declared_tools(msg.header(H_DECLARED_TOOLS)))
        return Live(request_id=request_id, session_id=session_id, partition=msg.partition,
                    provider=provider, model=msg.header(H_MODEL) or None,
                    first_offset=msg.offset, options=options,
                    assembler=new_assembler(options))

    def _open(self, request_id: str, session_id: str, msg: InputMessage, wire: str) -> Live:
        live = self._live(request_id, session_id, msg, wire)
        live.opened = self.wall()
        self.live[request_id] = live
        self.store.opened(live)  # its metadata is written at the next flush
        self.stats[Event.RESPONSES_OPENED] += 1
        return live

    def rebuild(self, request_id: str, state: OpenResponse) -> Live:
        """Continue a response after a crash or rebalance: replay its stored chunks."""
        options = self._options(state.provider, state.wire,
                                None if state.tools is None else frozenset(state.tools))
        live = Live(request_id=request_id, session_id=state.session, partition=state.partition,
                    provider=state.provider, model=state.model,
                    first_offset=state.first_offset, options=options,
                    assembler=new_assembler(options), opened=state.opened)
        chunks = self.store.read(request_id, state)
        for stored in chunks:
            if stored.body is None:
                if live.assembler.failure is None:  # failed by this message's own size
                    live.assembler.failure = Oversize(self.store.unstorable(stored.size)
                                                      or "an input message too large to keep")
                live.assembler.skip(stored.size)
            else:
                live.assembler.feed(stored.body)
            live.next_seq += 1
        self.store.adopt(live, state, chunks)
        self.live[request_id] = live
        self.control.noticed(request_id)
        self.stats[Event.RESPONSES_REBUILT] += 1
        log.info("request %s: rebuilt from %d stored chunks", request_id, live.next_seq,
                 extra={"request_id": request_id, "session_id": live.session_id})
        return live

    def drop(self, request_id: str) -> None:
        """Forget an open response without deciding it (its partition was revoked, or even
        its dead letter failed)."""
        failed = self.live.pop(request_id, None)
        if failed is not None:
            self.store.untouch(failed)
        self.control.ended(request_id)

    def _fail_internal(self, msg: InputMessage, request_id: str, session_id: str, seq: int,
                       wire: str, exc: Exception) -> list[Output]:
        """The dead letter of a response whose handling raised, covering all its chunks."""
        detail = (f"{type(exc).__name__} while handling message {seq} (chunk-seq) "
                  "(a Toolwire fault or input no rule names; see the worker log)")
        live = self.live.get(request_id)
        if live is not None:
            kept = (live.stored <= seq < live.stored + len(live.unflushed)
                    and live.unflushed[seq - live.stored].body is not None)
            extra = () if kept else ((seq, msg.value),)
            return self.release(live, dead_letter(live.assembler, live.provenance,
                                                 "internal_error", detail), extra_raw=extra)
        # It failed before the response was open in memory: fail it from this message alone,
        # and mark it decided so that its later chunks are not assembled without this one.
        # Its headers are sound (the envelope was read), and the declared tools among them
        # must reach the dead letter: a replay without them would skip the check.
        live = self._live(request_id, session_id, msg, wire)
        live.last_offset = msg.offset
        return self.release(live, dead_letter(live.assembler, live.provenance,
                                             "internal_error", detail),
                           extra_raw=((seq, msg.value),))

    # -- a response's life: decision and publication -----------------------------------------

    def decide(self, live: Live) -> Decision:
        return decide(live.assembler, live.options, live.provenance)

    def release(self, live: Live, decision: Decision,
                extra_raw: tuple[tuple[int, bytes], ...] = ()) -> list[Output]:
        """The response is decided: it is no longer open, and its message goes out through
        the outbox (:meth:`toolwire.stream.outbox.Outbox.release`), pending until published.

        The done marker is written only once the record is published (:meth:`settle`): a
        record that fails to publish leaves the response open, so the replay after a restart
        decides it again instead of finding it "done" and publishing nothing.
        """
        self.live.pop(live.request_id, None)
        self.control.ended(live.request_id)
        return [self.outbox.release(live, decision, extra_raw)]

    # -- messages that break the input contract ----------------------------------------------

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
                state = self.store.responses.get(request_id)
                if not isinstance(state, OpenResponse):
                    return None  # unknown, or decided (a done marker)
                live = self.rebuild(request_id, state)
            live.seen_at(msg.offset, msg.timestamp)
            self.stats[Event.MALFORMED_MESSAGES] += 1
            self.stats[Event.RESPONSES_FAILED_BY_MALFORMED_MESSAGE] += 1
            log.info("request %s: a malformed message at %s[%d]@%d fails the open response",
                     request_id, msg.topic, msg.partition, msg.offset,
                     extra={"request_id": request_id, "session_id": live.session_id,
                            "partition": msg.partition, "offset": msg.offset})
            return self.release(live, dead_letter(
                live.assembler, live.provenance, "malformed_message",
                f"{fault} (a message of this open response, at offset {msg.offset}: "
                "the response fails with it)"),
                extra_raw=((live.next_seq, msg.value),))
        except Exception:
            # Its table state could not be read or rebuilt: the message is still dead-lettered
            # on its own (the response, missing this chunk, cannot assemble past the gap).
            log.error("request %s: internal error while failing it for a malformed message",
                      request_id, exc_info=True, extra={"request_id": request_id})
            self.stats[Event.INTERNAL_ERRORS] += 1
            return None

    def _malformed_message(self, msg: InputMessage, session: str | None,
                           request_id: str | None, detail: str) -> list[Output]:
        """A message that breaks the input contract cannot join a response: dead-letter it."""
        record = message_fault("malformed_message", detail, request_id, session)
        # Its declared tools, if its header can be read, so a replay checks them too.
        record["declared_tools"] = readable_tools(msg.headers.get(H_DECLARED_TOOLS))
        self.stats[Event.MALFORMED_MESSAGES] += 1
        self.outbox.quarantine(msg.partition, session, record)
        self._message_dead_letter("malformed_message", msg)
        return [self.encoder.dead_letter(record, self._message_origin(msg), [(-1, msg.value)])]

    @staticmethod
    def _message_origin(msg: InputMessage) -> Origin:
        """Where a message dead-lettered on its own was read, and the wire it names, as sent
        (see :func:`~toolwire.stream.messages.wire_as_sent`)."""
        return Origin(msg.partition, msg.offset, msg.offset,
                      wire_as_sent(msg.headers.get(H_WIRE)))

    def _message_dead_letter(self, reason: str, msg: InputMessage) -> None:
        """Count a dead letter of one message (no response to settle) with the others."""
        self.observer.settled(Settled(
            outcome="dead_letter", reason=reason, provider=msg.header(H_PROVIDER) or None,
            repairs={}, truncated=False, error_code=None, first_timestamp=None,
            last_timestamp=None, published=self.wall()))
