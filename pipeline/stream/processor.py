"""Per-message logic of a worker: chunks of many interleaved responses in, records out.

Everything durable lives in three mutable mappings that Faust backs with changelogged tables;
everything else (the open assemblers) is a cache that can be rebuilt from them after a crash or
a rebalance. What the processor writes per chunk is the chunk itself, once, under a short key:
changelog bytes grow linearly with the input, never with the square of it.

Tables (all keys belong to the partition of the event that writes them):

- ``chunks``: ``<request digest>.<seq hex>`` → ``0x01`` + the raw value. Deleted when decided.
- ``responses``: request id → metadata while open; a small done-marker once decided, kept for
  the dedupe window so that chunks replayed after a crash do not publish the response twice.
- ``quarantine``: session id → why and since when; deleted by an operator's release.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass

import orjson

from pipeline.core import Assembler, Options, Provenance, Record, decide
from pipeline.core.decide import dead_letter
from pipeline.settings import Settings
from pipeline.stream.messages import (
    CONTROL_RELEASE,
    CONTROL_SWEEP,
    END_MARKERS,
    H_CHUNK_SEQ,
    H_CONTROL,
    H_DECLARED_TOOLS,
    H_END,
    H_IDEMPOTENCY_KEY,
    H_MODEL,
    H_OUTCOME,
    H_PROVIDER,
    H_REQUEST_ID,
    MAX_CHUNK_SEQ,
    MAX_ID_BYTES,
    MAX_TOOLS_BYTES,
    InputMessage,
    Output,
    Sink,
    idempotency_key,
)
from pipeline.stream.records import dumps, fit_dead_letter, message_size

log = logging.getLogger("toolwire.processor")

#: Prefix of every stored chunk value, so an empty body slice is never an empty (null-like) value.
STORED = b"\x01"
#: Prefix of a chunk that arrived after the response failed as oversize: only its size is kept
#: (the record counts its bytes, as ``toolwire assemble`` does), never its possibly huge body.
SKIPPED = b"\x02"


def chunk_key(request_id: str, seq: int) -> str:
    """A short, fixed-size key: the request id is hashed once, not repeated in every key."""
    digest = hashlib.blake2b(request_id.encode(), digest_size=9).digest()
    return f"{base64.urlsafe_b64encode(digest).decode()}.{seq:x}"


@dataclass
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


class Processor:
    """Applies input messages in partition order; returns what to publish."""

    def __init__(self, settings: Settings, chunks: MutableMapping[str, bytes],
                 responses: MutableMapping[str, bytes], quarantine: MutableMapping[str, bytes],
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.chunks = chunks
        self.responses = responses
        self.quarantine = quarantine
        self.clock = clock
        self.wall = wall
        self.live: dict[str, Live] = {}
        #: Monotonic time of the last message of each open response (restored ones: when first
        #: noticed after the restart, so they too are swept one TTL later).
        self.last_seen: dict[str, float] = {}
        #: Decided responses in decision order: request id → (wall time, partition).
        self.done_at: dict[str, tuple[float, int]] = {}
        #: Set when partitions are assigned: the next sweep scans the tables for restored state.
        self.rescan = True
        #: Decided responses whose record is not yet published: request id → (live, outcome).
        self.pending: dict[str, tuple[Live, str]] = {}
        self.stats: Counter[str] = Counter()

    # -- input -------------------------------------------------------------------------------

    def handle(self, msg: InputMessage) -> list[Output]:
        """What to publish for one input message; call :meth:`settle` once it is published."""
        self.stats["messages"] += 1
        control = msg.header(H_CONTROL)
        if control is not None:
            return self._control(msg, control)
        fault, request_id, session_id, seq = self._read_envelope(msg)
        if fault is not None:
            return self._malformed_message(msg, session_id, request_id, fault)
        assert request_id is not None and session_id is not None and seq is not None
        try:
            return self._chunk(msg, request_id, session_id, seq)
        except Exception as exc:
            # Whatever failed, the response fails whole, with its raw chunks: never drop this
            # chunk and go on assembling the rest (that would publish a call missing a part).
            log.error("request %s: internal error on %s[%d]@%d: %s", request_id, msg.topic,
                      msg.partition, msg.offset, type(exc).__name__, exc_info=True)
            self.stats["internal_errors"] += 1
            return self._fail_internal(msg, request_id, session_id, seq, exc)

    def _read_envelope(self, msg: InputMessage
                       ) -> tuple[str | None, str | None, str | None, int | None]:
        """(fault, request id, session id, seq) of a chunk message; fault ``None`` when sound.

        The headers and key are checked strictly, since they become keys, record fields and
        headers downstream: UTF-8, bounded length, and a ``chunk-seq`` of ASCII digits within
        ``0..MAX_CHUNK_SEQ`` (``str.isdigit`` would let ``²`` through, and a 5,000-digit value
        would fail ``int``).
        """
        faults: list[str] = []
        request_id = _text(msg.headers.get(H_REQUEST_ID), H_REQUEST_ID, faults)
        key = _text(msg.key, "key", faults)
        session_id = key or request_id
        raw_seq = msg.headers.get(H_CHUNK_SEQ)
        seq: int | None = None
        if raw_seq is None:
            faults.append(f"missing header {H_CHUNK_SEQ}")
        elif _SEQ.fullmatch(raw_seq) is None or int(raw_seq) > MAX_CHUNK_SEQ:
            faults.append(f"header {H_CHUNK_SEQ}={_quote(raw_seq)} is not a whole number "
                          f"from 0 to {MAX_CHUNK_SEQ} in ASCII digits")
        else:
            seq = int(raw_seq)
        if not request_id and msg.headers.get(H_REQUEST_ID) is None:
            faults.insert(0, f"missing header {H_REQUEST_ID}")
        elif not request_id and not any(H_REQUEST_ID in f for f in faults):
            faults.insert(0, f"empty header {H_REQUEST_ID}")
        for name, bound in ((H_PROVIDER, MAX_ID_BYTES), (H_MODEL, MAX_ID_BYTES),
                            (H_DECLARED_TOOLS, MAX_TOOLS_BYTES)):
            value = msg.headers.get(name)
            if value is not None and len(value) > bound:
                faults.append(f"header {name} is {len(value)} bytes (at most {bound})")
        if faults:
            return "; ".join(faults), request_id or None, session_id or None, seq
        return None, request_id, session_id, seq

    def _chunk(self, msg: InputMessage, request_id: str, session_id: str,
               seq: int) -> list[Output]:
        marker = self.responses.get(request_id)
        if request_id in self.pending or (marker is not None and marker.startswith(b'{"done"')):
            kind = "end_after_decision" if msg.header(H_END) else "late_after_decision"
            self.stats[kind] += 1
            log.debug("request %s: chunk %d after the decision (%s)", request_id, seq, kind)
            return []
        live = self.live.get(request_id)
        if live is None:
            if marker is not None:
                live = self._rebuild(request_id, marker)
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
        if seq > live.next_seq:
            return self._finish(live, dead_letter(
                live.assembler, self._provenance(live), "sequence_gap",
                f"expected chunk {live.next_seq}, got chunk {seq}: chunks were lost"),
                extra_raw=[(seq, msg.value)])
        asm = live.assembler
        failure = asm.failure
        if failure is None or (failure.reason != "oversize" and asm.body_bytes + len(msg.value)
                               <= self.settings.limits.max_response_bytes):
            # After any failure but size, the rest of the body is still kept for the dead
            # letter's raw chunks (a replay after a fix needs the whole body).
            self.chunks[chunk_key(request_id, seq)] = STORED + msg.value
        else:
            self.chunks[chunk_key(request_id, seq)] = SKIPPED + str(len(msg.value)).encode()
        live.next_seq += 1
        self.stats["chunks_applied"] += 1
        asm.feed(msg.value)
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
            return self._finish(live, dead_letter(
                asm, self._provenance(live), "malformed_message",
                f"unknown {H_END} marker {_quote(msg.headers[H_END])} "
                "(expected eof, error or cancelled)"))
        if end != "eof" and asm.failure is None and not asm.end():
            return self._finish(live, dead_letter(
                asm, self._provenance(live), "stream_closed",
                f"the gateway ended the body with {end!r} before data: [DONE]"))
        return self._finish(live, self._decide(live))

    def _fail_internal(self, msg: InputMessage, request_id: str, session_id: str, seq: int,
                       exc: Exception) -> list[Output]:
        """The dead letter of a response whose handling raised, covering all its chunks."""
        detail = (f"{type(exc).__name__} while handling chunk {seq} "
                  "(a Toolwire fault or input no rule names; see the worker log)")
        live = self.live.get(request_id)
        if live is not None:
            stored = self.chunks.get(chunk_key(request_id, seq))
            extra = [] if stored is not None and stored.startswith(STORED) else [(seq, msg.value)]
            return self._finish(live, dead_letter(live.assembler, self._provenance(live),
                                                  "internal_error", detail), extra_raw=extra)
        # It failed before the response was open in memory: fail it from this message alone,
        # and mark it decided so that its later chunks are not assembled without this one.
        live = Live(request_id=request_id, session_id=session_id, partition=msg.partition,
                    provider=None, model=None, tools=None, first_offset=msg.offset,
                    assembler=Assembler(self.settings.limits), last_offset=msg.offset)
        return self._finish(live, dead_letter(live.assembler, self._provenance(live),
                                              "internal_error", detail),
                            extra_raw=[(seq, msg.value)])

    def _open(self, request_id: str, session_id: str, msg: InputMessage) -> Live:
        tools_text = msg.header(H_DECLARED_TOOLS)
        tools = (frozenset(t.strip() for t in tools_text.split(",") if t.strip())
                 if tools_text is not None else None)
        live = Live(request_id=request_id, session_id=session_id, partition=msg.partition,
                    provider=msg.header(H_PROVIDER), model=msg.header(H_MODEL), tools=tools,
                    first_offset=msg.offset, assembler=Assembler(self.settings.limits))
        self.responses[request_id] = orjson.dumps({
            "session": session_id, "partition": msg.partition, "provider": live.provider,
            "model": live.model, "tools": None if tools is None else sorted(tools),
            "first_offset": msg.offset, "opened": self.wall()})
        self.live[request_id] = live
        self.stats["responses_opened"] += 1
        return live

    def _rebuild(self, request_id: str, marker: bytes) -> Live:
        """Continue a response after a crash or rebalance: replay its stored chunks."""
        meta = orjson.loads(marker)
        tools = meta.get("tools")
        live = Live(request_id=request_id, session_id=meta["session"],
                    partition=meta["partition"], provider=meta.get("provider"),
                    model=meta.get("model"), tools=None if tools is None else frozenset(tools),
                    first_offset=meta["first_offset"],
                    assembler=Assembler(self.settings.limits))
        while (stored := self.chunks.get(chunk_key(request_id, live.next_seq))) is not None:
            if stored.startswith(SKIPPED):
                live.assembler.skip(int(stored[len(SKIPPED):]))
            else:
                live.assembler.feed(stored[len(STORED):])
            live.next_seq += 1
        self.live[request_id] = live
        self.last_seen.setdefault(request_id, self.clock())
        self.stats["responses_rebuilt"] += 1
        log.info("request %s: rebuilt from %d stored chunks", request_id, live.next_seq)
        return live

    # -- decision and publication ------------------------------------------------------------

    def _provenance(self, live: Live) -> Provenance:
        return Provenance(request_id=live.request_id, session_id=live.session_id,
                          provider=live.provider, model=live.model)

    def _decide(self, live: Live) -> Record:
        options = Options(declared_tools=live.tools, strict=self.settings.strict,
                          limits=self.settings.limits)
        return decide(live.assembler, options, self._provenance(live))

    def _finish(self, live: Live, record: Record,
                extra_raw: Iterable[tuple[int, bytes]] = ()) -> list[Output]:
        """The record (or its dead letter) to publish; the state is dropped by :meth:`settle`.

        The done marker is written only once the record is published: a record that fails
        to publish leaves the response open, so the replay after a restart decides it again
        instead of finding it "done" and publishing nothing.
        """
        session = live.session_id
        if record["outcome"] == "assembled" and session in self.quarantine:
            held = record
            record = dead_letter(live.assembler, self._provenance(live), "session_quarantined",
                                 "an earlier response of this session was dead-lettered; "
                                 f"release it with: toolwire dlq release {session}")
            record["held_record"] = held
        output = self._assembled(live, record) if record["outcome"] == "assembled" else None
        if output is None:
            if record["outcome"] == "assembled":
                record = self._oversize(live, record)
            output = self._dead_letter(live, record, extra_raw)
            if session not in self.quarantine:
                self.quarantine[session] = orjson.dumps({
                    "reason": record["reason"], "request_id": live.request_id,
                    "since": self.wall()})
                self.stats["sessions_quarantined"] += 1
        self.live.pop(live.request_id, None)
        self.last_seen.pop(live.request_id, None)
        self.pending[live.request_id] = (live, record["outcome"])
        return [output]

    def settle(self, output: Output) -> None:
        """``output`` is published: forget the response it decided, keep its done marker.

        Runs in the same event as :meth:`handle` (the table writes need its partition).
        """
        if output.settles is None:
            return
        live, outcome = self.pending.pop(output.settles)
        for seq in range(live.next_seq):
            self.chunks.pop(chunk_key(live.request_id, seq), None)
        done = self.wall()
        self.responses[live.request_id] = orjson.dumps({"done": done, "partition": live.partition,
                                                        "outcome": outcome})
        self.done_at[live.request_id] = (done, live.partition)
        self.stats["records_" + outcome] += 1

    def unsettled(self) -> None:
        """Publication failed: forget what was decided; the tables still hold it as open."""
        for request_id in list(self.pending):
            self.pending.pop(request_id)

    def _oversize(self, live: Live, record: Record) -> Record:
        size = len(dumps(record) or b"")
        detail = (f"the assembled record is {size} bytes, over TOOLWIRE_MAX_RECORD_BYTES="
                  f"{self.settings.max_record_bytes}" if size else
                  "the assembled record cannot be written as JSON")
        self.stats["records_too_large"] += 1
        return dead_letter(live.assembler, self._provenance(live), "oversize", detail)

    def _headers(self, request_id: str, outcome: str) -> dict[str, bytes]:
        return {H_REQUEST_ID: request_id.encode(),
                H_IDEMPOTENCY_KEY: idempotency_key(request_id).encode(),
                H_OUTCOME: outcome.encode()}

    def _assembled(self, live: Live, record: Record) -> Output | None:
        """The assembled record's message, or ``None`` when it cannot be published."""
        value = dumps(record)
        if value is None:
            return None
        key = live.session_id.encode()
        headers = self._headers(live.request_id, "assembled")
        if message_size(value, key, headers) > self.settings.max_record_bytes:
            return None
        return Output(Sink.ASSEMBLED, key, value, headers, settles=live.request_id)

    def _dead_letter(self, live: Live, record: Record,
                     extra_raw: Iterable[tuple[int, bytes]] = ()) -> Output:
        stored = ((seq, self.chunks.get(chunk_key(live.request_id, seq)))
                  for seq in range(live.next_seq))
        raw = [(seq, value[len(STORED):]) for seq, value in stored
               if value is not None and value.startswith(STORED)]
        output = self._dead_letter_output(
            record, live.session_id, live.request_id, live.partition,
            live.first_offset, live.last_offset, [*raw, *extra_raw])
        return Output(output.sink, output.key, output.value, output.headers,
                      settles=live.request_id)

    def _dead_letter_output(self, record: Record, session: str | None, request_id: str | None,
                            partition: int, first_offset: int, last_offset: int | None,
                            raw: list[tuple[int, bytes]]) -> Output:
        """The one place a dead letter's message is built: provenance, headers, fit."""
        now = self.wall()
        provenance = {"source_topic": self.settings.topic_chunks, "partition": partition,
                      "first_offset": first_offset, "last_offset": last_offset,
                      "worker": self.settings.worker_name, "time": now}
        headers = self._headers(request_id or "", "dead_letter") if request_id else {
            H_OUTCOME: b"dead_letter"}
        headers.update({
            "toolwire.errors.reason": str(record["reason"]).encode(),
            "toolwire.errors.topic": self.settings.topic_chunks.encode(),
            "toolwire.errors.partition": str(partition).encode(),
            "toolwire.errors.offset.first": str(first_offset).encode(),
            "toolwire.errors.offset.last": str("" if last_offset is None else last_offset).encode(),
            "toolwire.errors.worker": self.settings.worker_name.encode(),
            "toolwire.errors.time": f"{now:.3f}".encode(),
        })
        key = None if session is None else session.encode()
        room = self.settings.max_record_bytes - message_size(b"", key, headers)
        value = fit_dead_letter({**record, "provenance": provenance}, raw, room,
                                self.settings.deadletter_raw_bytes)
        if b'"reason":"' + str(record["reason"]).encode() not in value:
            # Fitting changed the reason (a held record too large to carry): say so in headers.
            reason = orjson.loads(value)["reason"]
            headers["toolwire.errors.reason"] = str(reason).encode()
        return Output(Sink.DEADLETTER, key, value, headers)

    def _malformed_message(self, msg: InputMessage, session: str | None,
                           request_id: str | None, detail: str) -> list[Output]:
        """A message that breaks the input contract cannot join a response: dead-letter it."""
        record: Record = {"outcome": "dead_letter", "reason": "malformed_message",
                          "detail": detail, "request_id": request_id, "session_id": session,
                          "calls": []}
        self.stats["malformed_messages"] += 1
        if session and session not in self.quarantine:
            self.quarantine[session] = orjson.dumps({
                "reason": "malformed_message", "request_id": request_id, "since": self.wall()})
            self.stats["sessions_quarantined"] += 1
        return [self._dead_letter_output(record, session, request_id, msg.partition, msg.offset,
                                         msg.offset, [(-1, msg.value)])]

    def message_failed(self, msg: InputMessage, exc: BaseException) -> Output:
        """The last resort of the agent when :meth:`handle` itself raised: a dead letter of
        this one message (schema-valid, bounded), built without touching the tables."""
        record: Record = {"outcome": "dead_letter", "reason": "internal_error",
                          "detail": f"{type(exc).__name__} in the processor (see the worker log)",
                          "request_id": None, "session_id": None, "calls": []}
        return self._dead_letter_output(record, None, None, msg.partition, msg.offset,
                                        msg.offset, [(-1, msg.value)])

    # -- control: release and sweep ----------------------------------------------------------

    def _control(self, msg: InputMessage, control: str) -> list[Output]:
        self.stats["control_messages"] += 1
        if control == CONTROL_RELEASE:
            session = msg.key.decode("utf-8", "replace") if msg.key else ""
            if session in self.quarantine:
                del self.quarantine[session]
                self.stats["sessions_released"] += 1
                log.info("session %s released from quarantine", session)
            else:
                log.info("release of session %s: it was not quarantined", session)
            return []
        if control == CONTROL_SWEEP:
            requests = _sweep_requests(msg.value)
            if requests is None:
                self.stats["control_malformed"] += 1
                log.warning("ignored a sweep message with an unreadable value at %s[%d]@%d "
                            "(expected {\"requests\": [request ids]})", msg.topic,
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
        log.warning("ignored unknown control message %r at offset %d", control, msg.offset)
        return []

    def _sweep_one(self, request_id: str) -> list[Output]:
        marker = self.responses.get(request_id)
        if marker is None or request_id in self.pending:
            return []
        if marker.startswith(b'{"done"'):
            done = orjson.loads(marker)["done"]
            if self.wall() - done >= self.settings.dedupe_window_seconds:
                del self.responses[request_id]
                self.done_at.pop(request_id, None)
                self.stats["dedupe_markers_expired"] += 1
            return []
        live = self.live.get(request_id) or self._rebuild(request_id, marker)
        idle = self.clock() - self.last_seen.get(request_id, self.clock())
        if idle < self.settings.stream_ttl_seconds:
            return []  # a chunk arrived after the sweeper looked
        if live.assembler.failure is not None or live.assembler.done:
            # The body was complete (or already failed); only the end marker never came.
            return self._finish(live, self._decide(live))
        self.stats["streams_abandoned"] += 1
        return self._finish(live, dead_letter(
            live.assembler, self._provenance(live), "stream_abandoned",
            f"no chunk for {idle:.0f} s (TTL {self.settings.stream_ttl_seconds:g} s)"))

    def _sweep_failed(self, request_id: str, exc: Exception) -> list[Output]:
        """Dead-letter a response whose sweep raised; if even that fails, stop sweeping it."""
        live = self.live.get(request_id)
        try:
            if live is not None:
                return self._finish(live, dead_letter(
                    live.assembler, self._provenance(live), "internal_error",
                    f"{type(exc).__name__} while sweeping (see the worker log)"))
        except Exception:
            log.error("request %s: its dead letter failed too", request_id, exc_info=True)
        self.live.pop(request_id, None)
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
        marker = self.responses.get(request_id)
        return None if marker is None else int(orjson.loads(marker)["partition"])

    def _scan_tables(self) -> None:
        """Learn the open responses and dedupe markers restored from the changelogs."""
        self.rescan = False
        now = self.clock()
        found = []
        for request_id, marker in list(self.responses.items()):
            meta = orjson.loads(marker)
            if "done" in meta:
                found.append((meta["done"], request_id, meta["partition"]))
            elif request_id not in self.last_seen:
                self.last_seen[request_id] = now
        for done, request_id, partition in sorted(found):
            self.done_at.setdefault(request_id, (done, partition))

    def forget(self, partitions: set[int]) -> None:
        """Partitions were revoked: their state now belongs to another worker."""
        for request_id in [r for r, live in self.live.items() if live.partition in partitions]:
            del self.live[request_id]
            self.last_seen.pop(request_id, None)
        for request_id in [r for r, (_, p) in self.done_at.items() if p in partitions]:
            del self.done_at[request_id]
        stale = [r for r in self.last_seen if self._partition_of(r) in partitions]
        for request_id in stale:
            del self.last_seen[request_id]
        self.rescan = True


_SEQ = re.compile(rb"[0-9]{1,10}")


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
