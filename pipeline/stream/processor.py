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
import time
from collections import Counter
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

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
    InputMessage,
    Output,
    Sink,
    idempotency_key,
)

log = logging.getLogger("toolwire.processor")

#: Prefix of every stored chunk value, so an empty body slice is never an empty (null-like) value.
STORED = b"\x01"
#: Prefix of a chunk that arrived after the response already failed: only its size is kept
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
        self.stats: Counter[str] = Counter()

    # -- input -------------------------------------------------------------------------------

    def handle(self, msg: InputMessage) -> list[Output]:
        self.stats["messages"] += 1
        control = msg.header(H_CONTROL)
        if control is not None:
            return self._control(msg, control)
        request_id = msg.header(H_REQUEST_ID)
        seq_text = msg.header(H_CHUNK_SEQ)
        session_id = msg.key.decode("utf-8", "replace") if msg.key else request_id
        if not request_id or seq_text is None or not seq_text.isdigit():
            return self._malformed_message(msg, session_id, request_id)
        seq = int(seq_text)
        marker = self.responses.get(request_id)
        if marker is not None and marker.startswith(b'{"done"'):
            kind = "end_after_decision" if msg.header(H_END) else "late_after_decision"
            self.stats[kind] += 1
            log.debug("request %s: chunk %d after the decision (%s)", request_id, seq, kind)
            return []
        live = self.live.get(request_id)
        if live is None:
            if marker is not None:
                live = self._rebuild(request_id, marker)
            else:
                live = self._open(request_id, session_id or request_id, msg)
        if seq < live.next_seq:
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
        if asm.failure is None:
            self.chunks[chunk_key(request_id, seq)] = STORED + msg.value
        else:
            self.chunks[chunk_key(request_id, seq)] = SKIPPED + str(len(msg.value)).encode()
        live.next_seq += 1
        self.stats["chunks_applied"] += 1
        asm.feed(msg.value)
        end = msg.header(H_END)
        if end is not None:
            if end not in END_MARKERS:
                return self._finish(live, dead_letter(
                    asm, self._provenance(live), "malformed_message",
                    f"unknown {H_END} marker {end!r} (expected eof, error or cancelled)"))
            if end != "eof" and asm.failure is None and not asm.end():
                return self._finish(live, dead_letter(
                    asm, self._provenance(live), "stream_closed",
                    f"the gateway ended the body with {end!r} before data: [DONE]"))
            return self._finish(live, self._decide(live))
        # Even after ``[DONE]`` or a failure the response waits for the gateway's end marker:
        # its record then covers the whole body, exactly as ``toolwire assemble`` gives it.
        return []

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
        """Publish the record (or its dead letter), quarantine if needed, then drop the state."""
        session = live.session_id
        if record["outcome"] == "assembled" and session in self.quarantine:
            held = record
            record = dead_letter(live.assembler, self._provenance(live), "session_quarantined",
                                 "an earlier response of this session was dead-lettered; "
                                 f"release it with: toolwire dlq release {session}")
            record["held_record"] = held
        if record["outcome"] == "assembled":
            output = self._assembled(live, record)
        else:
            output = self._dead_letter(live, record, extra_raw)
            if session not in self.quarantine:
                self.quarantine[session] = orjson.dumps({
                    "reason": record["reason"], "request_id": live.request_id,
                    "since": self.wall()})
                self.stats["sessions_quarantined"] += 1
        for seq in range(live.next_seq):
            del self.chunks[chunk_key(live.request_id, seq)]
        done = self.wall()
        self.responses[live.request_id] = orjson.dumps({"done": done, "partition": live.partition,
                                                        "outcome": record["outcome"]})
        self.done_at[live.request_id] = (done, live.partition)
        self.live.pop(live.request_id, None)
        self.last_seen.pop(live.request_id, None)
        self.stats["records_" + record["outcome"]] += 1
        return [output]

    def _headers(self, request_id: str, outcome: str) -> dict[str, bytes]:
        return {H_REQUEST_ID: request_id.encode(),
                H_IDEMPOTENCY_KEY: idempotency_key(request_id).encode(),
                H_OUTCOME: outcome.encode()}

    def _assembled(self, live: Live, record: Record) -> Output:
        return Output(Sink.ASSEMBLED, live.session_id.encode(), orjson.dumps(record),
                      self._headers(live.request_id, "assembled"))

    def _dead_letter(self, live: Live, record: Record,
                     extra_raw: Iterable[tuple[int, bytes]] = ()) -> Output:
        stored = ((seq, self.chunks.get(chunk_key(live.request_id, seq)))
                  for seq in range(live.next_seq))
        raw = [(seq, value[len(STORED):]) for seq, value in stored
               if value is not None and value.startswith(STORED)]
        return self._dead_letter_output(
            record, live.session_id, live.request_id, live.partition,
            live.first_offset, live.last_offset, [*raw, *extra_raw])

    def _dead_letter_output(self, record: Record, session: str | None, request_id: str | None,
                            partition: int, first_offset: int, last_offset: int | None,
                            raw: list[tuple[int, bytes]]) -> Output:
        now = self.wall()
        provenance = {"source_topic": self.settings.topic_chunks, "partition": partition,
                      "first_offset": first_offset, "last_offset": last_offset,
                      "worker": self.settings.worker_name, "time": now}
        budget = self.settings.deadletter_raw_bytes
        kept: list[dict[str, Any]] = []
        for seq, value in raw:
            if len(value) > budget:
                break
            budget -= len(value)
            kept.append({"seq": seq, "value_b64": base64.b64encode(value).decode()})
        letter = {**record, "provenance": provenance, "raw_chunks": kept,
                  "raw_chunks_truncated": len(kept) < len(raw)}
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
        return Output(Sink.DEADLETTER, None if session is None else session.encode(),
                      orjson.dumps(letter), headers)

    def _malformed_message(self, msg: InputMessage, session: str | None,
                           request_id: str | None) -> list[Output]:
        """A message that breaks the input contract cannot join a response: dead-letter it."""
        missing = [h for h, v in ((H_REQUEST_ID, request_id),
                                  (H_CHUNK_SEQ, msg.header(H_CHUNK_SEQ))) if not v]
        detail = (f"missing header(s) {', '.join(missing)}" if missing else
                  f"header {H_CHUNK_SEQ}={msg.header(H_CHUNK_SEQ)!r} is not a whole number")
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
            try:
                requests = orjson.loads(msg.value)["requests"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                log.warning("ignored a sweep message with an unreadable value at offset %d",
                            msg.offset)
                return []
            outputs: list[Output] = []
            for request_id in requests:
                outputs.extend(self._sweep_one(str(request_id)))
            return outputs
        log.warning("ignored unknown control message %r at offset %d", control, msg.offset)
        return []

    def _sweep_one(self, request_id: str) -> list[Output]:
        marker = self.responses.get(request_id)
        if marker is None:
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
