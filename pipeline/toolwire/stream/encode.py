"""Decisions become messages here, and only here: headers, provenance, raw chunks, size.

A record that cannot be written out (orjson refuses a value it read) or that is larger than the
producer and the topics accept would crash the worker at publication and be lost. So every
record leaves through :class:`Encoder`: an assembled record that does not fit is refused (the
processor dead-letters it as ``oversize``), and a dead letter always fits — long strings are
cut (``fields_truncated``) and raw chunks are copied only as far as the room allows
(``raw_chunks_truncated``). Both flags are in the dead-letter contract. Whatever its cause
(a decision, a malformed message, an internal error, a sweep), every dead letter gets the same
provenance and the same Kafka Connect style ``toolwire.errors.*`` headers.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast

import orjson

from toolwire.config.settings import Settings
from toolwire.core.records import AssembledRecord, DeadLetterDecision, DeadLetterRecord
from toolwire.core.wires import DEFAULT_WIRE
from toolwire.stream.messages import (
    H_IDEMPOTENCY_KEY,
    H_OUTCOME,
    H_REQUEST_ID,
    H_WORKER,
    Draft,
    Origin,
    Output,
    Sink,
    idempotency_key,
)

#: Bytes a record may take beyond its value: Kafka's record and batch framing.
FRAMING_BYTES: Final = 512
#: Successive caps on the length of any string of a dead letter that does not fit.
_STRING_CAPS: Final = (4096, 256, 64)
#: Fields never cut: what the record is, and whom it belongs to (the input contract bounds
#: the ids, and a cut id would name another request).
_KEPT_WHOLE: Final = ("outcome", "reason", "provenance", "request_id", "session_id", "wire")
#: Per raw chunk: ``{"seq":<n>,"value_b64":""},`` with a seq of up to 11 characters.
_RAW_ITEM_BYTES: Final = 36
#: Room kept for the raw-chunk fields themselves.
_RAW_FIELDS_BYTES: Final = 64


def dumps(value: Any) -> bytes | None:
    """orjson's bytes, or ``None`` where orjson refuses (too deep, a value it cannot write)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


def message_size(value: bytes, key: bytes | None, headers: Mapping[str, bytes]) -> int:
    """What a record costs against the producer's request limit, framing included."""
    return (len(value) + (0 if key is None else len(key)) + FRAMING_BYTES
            + sum(len(k) + len(v) + 8 for k, v in headers.items()))


def response_headers(request_id: str | None, outcome: str, worker: str) -> dict[str, bytes]:
    """Headers every output record carries: request, idempotency key, outcome, worker."""
    if not request_id:
        return {H_OUTCOME: outcome.encode(), H_WORKER: worker.encode()}
    return {H_REQUEST_ID: request_id.encode(),
            H_IDEMPOTENCY_KEY: idempotency_key(request_id).encode(),
            H_OUTCOME: outcome.encode(), H_WORKER: worker.encode()}


class Encoder:
    """Builds every output message of one worker."""

    def __init__(self, settings: Settings, wall: Callable[[], float]) -> None:
        self.settings = settings
        self.wall = wall
        #: Bytes one message of each output topic may take: ``TOOLWIRE_MAX_RECORD_BYTES``, or
        #: less once the topic's own ``max.message.bytes`` is known to be smaller (see
        #: :meth:`learn`): a record the broker would refuse is never built.
        self.limits: dict[Sink, int] = {Sink.ASSEMBLED: settings.max_record_bytes,
                                        Sink.DEADLETTER: settings.max_record_bytes}

    def learn(self, sink: Sink, max_message_bytes: int) -> int:
        """The topic of ``sink`` accepts messages of at most ``max_message_bytes``: records are
        built to fit it from now on. Returns the limit in force."""
        limit = self.limits[sink] = min(self.settings.max_record_bytes, max_message_bytes)
        return limit

    def assembled(self, record: AssembledRecord, session: str, request_id: str,
                  limit: int | None = None) -> Output | None:
        """The assembled record's message, or ``None`` when it cannot be published (too
        large for ``limit``, by default the assembled topic's)."""
        value = dumps(record)
        if value is None:
            return None
        key = session.encode()
        headers = response_headers(request_id, "assembled", self.settings.worker_name)
        if message_size(value, key, headers) > (limit or self.limits[Sink.ASSEMBLED]):
            return None
        return Output(Sink.ASSEMBLED, key, value, headers, settles=request_id)

    def dead_letter(self, decision: DeadLetterDecision, origin: Origin,
                    raw: Sequence[tuple[int, bytes | None]], *,
                    settles: str | None = None, limit: int | None = None) -> Output:
        """The one builder of dead-letter messages: within ``limit`` bytes (by default the
        dead-letter topic's), with the draft it was built from (to build it again within a
        smaller one)."""
        now = self.wall()
        settings = self.settings
        request_id, session = decision["request_id"], decision["session_id"]
        headers = response_headers(request_id, "dead_letter", settings.worker_name)
        headers.update({
            "toolwire.errors.reason": decision["reason"].encode(),
            "toolwire.errors.topic": settings.topic_chunks.encode(),
            "toolwire.errors.partition": str(origin.partition).encode(),
            "toolwire.errors.offset.first": str(origin.first_offset).encode(),
            "toolwire.errors.offset.last": (b"" if origin.last_offset is None
                                            else str(origin.last_offset).encode()),
            "toolwire.errors.worker": settings.worker_name.encode(),
            "toolwire.errors.time": f"{now:.3f}".encode(),
        })
        key = session.encode() if session else None
        # The wire travels beside the declared tools, for the replay to send it again; only
        # when it is not the default, so that the dead letters of Chat Completions bodies stay
        # byte for byte what they were before wires were named (absent means the default).
        wire = {} if origin.wire == DEFAULT_WIRE else {"wire": origin.wire}
        letter = cast(DeadLetterRecord, {**decision, **wire, "provenance": {
            "source_topic": settings.topic_chunks, "partition": origin.partition,
            "first_offset": origin.first_offset, "last_offset": origin.last_offset,
            "worker": settings.worker_name, "time": now}})
        room = (limit or self.limits[Sink.DEADLETTER]) - message_size(b"", key, headers)
        value, reason = fit_dead_letter(letter, raw, room, settings.deadletter_raw_bytes)
        if reason != decision["reason"]:
            headers["toolwire.errors.reason"] = reason.encode()
        return Output(Sink.DEADLETTER, key, value, headers, settles=settles,
                      draft=Draft(decision, origin, tuple(raw)))


def _cap_strings(value: Any, cap: int) -> Any:
    """A copy with every string longer than ``cap`` cut to ``cap`` characters (keys kept)."""
    if type(value) is str:
        return value if len(value) <= cap else value[:cap]
    if type(value) is dict:
        return {k: _cap_strings(v, cap) for k, v in value.items()}
    if type(value) is list:
        return [_cap_strings(v, cap) for v in value]
    return value


def _b64_size(n: int) -> int:
    return 4 * ((n + 2) // 3)


def fit_dead_letter(letter: DeadLetterRecord, raw: Sequence[tuple[int, bytes | None]],
                    room: int, raw_budget: int) -> tuple[bytes, str]:
    """The dead letter's bytes within ``room`` with as many raw chunks as fit, and its reason.

    ``letter`` has every field but the raw chunks. Fields are cut only when the letter alone
    does not fit; raw chunks are taken in order and stop at the first that does not fit, so
    a consumer replaying them never replays a body with a hole in the middle. A ``None`` body
    (a chunk kept by size only) ends the copy too.
    """
    draft: dict[str, Any] = dict(letter)
    draft["raw_chunks"], draft["raw_chunks_truncated"] = [], False
    body = dumps(draft)
    if body is None:
        # Only ``usage`` and ``held_record`` carry values from the wire that are not text.
        draft["usage"] = None
        if draft.pop("held_record", None) is not None:
            draft["reason"] = "internal_error"
        draft["detail"] = (f"{draft['detail']} (usage and held record dropped: "
                           "not writable as JSON)")
        body = dumps(draft)
    for cap in _STRING_CAPS:
        if body is not None and len(body) + _RAW_FIELDS_BYTES <= room:
            break
        kept: dict[str, Any] = {k: draft[k] for k in _KEPT_WHOLE if k in draft}
        draft = {**_cap_strings(draft, cap), **kept, "fields_truncated": True}
        if cap == _STRING_CAPS[-1]:
            draft["calls"] = []
            if "usage" in draft:
                draft["usage"] = None
            if draft.pop("held_record", None) is not None:
                draft["reason"] = "oversize"
        draft["detail"] = (f"{str(letter['detail'])[:512]} "
                           "(long fields cut to fit the record size limit)")
        body = dumps(draft)
    if body is None or len(body) + _RAW_FIELDS_BYTES > room:
        raise ValueError(f"a dead letter does not fit in {room} bytes even with its fields "
                         "cut: raise TOOLWIRE_MAX_RECORD_BYTES")
    room_left = room - len(body) - _RAW_FIELDS_BYTES
    raw_left = raw_budget
    kept_raw: list[dict[str, Any]] = []
    for seq, value in raw:
        if value is None:  # a chunk whose bytes were not kept: the copy ends before it
            break
        cost = _b64_size(len(value)) + _RAW_ITEM_BYTES
        if cost > room_left or len(value) > raw_left:
            break
        room_left -= cost
        raw_left -= len(value)
        kept_raw.append({"seq": seq, "value_b64": base64.b64encode(value).decode()})
    draft["raw_chunks"] = kept_raw
    draft["raw_chunks_truncated"] = len(kept_raw) < len(raw)
    return orjson.dumps(draft), str(draft["reason"])
