"""The dead-letter topic for operators: list, show, replay, and release a quarantined session.

A dead letter is referred to by where it is (``PARTITION:OFFSET`` on the dead-letter topic),
which is unique and stable. The release travels as a control message in the input topic, keyed
by the session like its chunks: it lands on the partition of the worker that owns the
session's quarantine entry, in order with the session's chunks, and that worker applies it (a
table can only be written from an event of its partition).

A replay re-publishes a dead letter's raw chunks to the input topic under a new request id
derived from the dead letter's place (so replaying the same dead letter twice gives the same
request, which the worker publishes once) and marked with ``toolwire-replay-of``. Its messages
are built by :class:`~toolwire.stream.messages.RequestMeta` (:func:`replay_meta`), the builder
the publisher uses, so a replay is a body as a gateway sends it, header for header. It carries the
original request's ``declared-tools`` as the dead letter recorded them: without them the worker
would skip the declared-tools check, and an ``unknown_tool`` dead letter replayed unchanged would
come out as an executable call. (A dead letter written before they were recorded has no
``declared_tools`` field; its replay is not checked against them, as before.) It carries the
original's ``wire`` the same way: a dead letter names its wire only when it is not the default
(so Chat Completions dead letters are what they were before wires were named), and a replay
sends the header only then; a wire this release does not read is not replayed under another.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES
from toolwire.kafka import open_client
from toolwire.stream.messages import (
    CONTROL_RELEASE,
    END_EOF,
    MAX_ID_BYTES,
    Headers,
    RequestMeta,
    control_headers,
)

_REF: Final = re.compile(r"(\d+):(\d+)")
_AGO: Final = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class DeadLetterNotFound(LookupError):
    """No dead letter at that reference."""


class NotReplayable(ValueError):
    """A dead letter whose raw chunks do not hold the whole body, or whose record cannot say
    what the request declared."""


@dataclass(frozen=True, slots=True)
class StoredDeadLetter:
    """One message of the dead-letter topic."""

    partition: int
    offset: int
    timestamp: float
    key: str | None
    headers: Mapping[str, str]
    record: dict[str, Any]

    @property
    def ref(self) -> str:
        return f"{self.partition}:{self.offset}"

    @property
    def reason(self) -> str:
        return str(self.record.get("reason") or self.headers.get("toolwire.errors.reason", "?"))

    @property
    def declared_tools_known(self) -> bool:
        """Whether the dead letter records the request's declared tools (``null`` included:
        then the request declared none). Dead letters written before they were recorded lack
        the field, and whether the request declared any is unknown."""
        return "declared_tools" in self.record

    @property
    def declared_tools(self) -> frozenset[str] | None:
        """The tool names the request declared, as recorded; ``None`` when it declared none or
        when that is unknown (see :attr:`declared_tools_known`). A value that is not a list of
        names raises :class:`NotReplayable`: guessing would decide which calls may run."""
        value = self.record.get("declared_tools")
        if value is None:
            return None
        if type(value) is not list or not all(
                type(name) is str and name.strip() == name and name and "," not in name
                for name in value):
            raise NotReplayable(f"dead letter {self.ref} has a declared_tools that is not a "
                                "list of tool names: what its request declared is unreadable")
        return frozenset(value)

    @property
    def wire(self) -> str:
        """The wire the original's body was written in: the record's ``wire``, or the default
        when it has none (a Chat Completions body, or a dead letter from before wires were
        named). A wire this release does not read raises :class:`NotReplayable`: replayed
        under another one, the body would be decided by the wrong rules."""
        value = self.record.get("wire", DEFAULT_WIRE)
        if type(value) is not str or value not in SUPPORTED_WIRES:
            raise NotReplayable(f"dead letter {self.ref} is of wire {value!r}, which this "
                                f"release does not read (it reads "
                                f"{', '.join(map(repr, SUPPORTED_WIRES))})")
        return value

    def raw_body(self) -> bytes:
        """The raw chunks, concatenated: the body as the gateway sent it (as far as kept)."""
        return b"".join(base64.b64decode(c["value_b64"])
                        for c in self.record.get("raw_chunks") or ())


def parse_ref(text: str) -> tuple[int, int]:
    """``PARTITION:OFFSET``; anything else raises :class:`ValueError` saying what is expected."""
    match = _REF.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a dead-letter reference: expected PARTITION:OFFSET "
                         "as 'toolwire dlq list' prints it, e.g. 3:1742")
    return int(match.group(1)), int(match.group(2))


def parse_since(text: str, now: float | None = None) -> float:
    """Unix time from ``90s``, ``15m``, ``2h``, ``7d`` (ago) or an ISO 8601 time."""
    now = time.time() if now is None else now
    match = _AGO.fullmatch(text.strip())
    if match is not None:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a time: expected 90s, 15m, 2h, 7d or an ISO 8601 "
                         "time such as 2026-11-30T08:00:00+00:00") from None
    return moment.timestamp()


def _stored(message: Any) -> StoredDeadLetter:
    try:
        record = orjson.loads(message.value) if message.value else {}
    except orjson.JSONDecodeError:
        record = {}
    if type(record) is not dict:
        record = {}
    return StoredDeadLetter(
        partition=message.partition, offset=message.offset,
        timestamp=message.timestamp / 1000,
        key=None if message.key is None else message.key.decode("utf-8", "replace"),
        headers={k: v.decode("utf-8", "replace") for k, v in message.headers or []},
        record=record)


async def read_dead_letters(bootstrap: str, topic: str, *, since: float | None = None,
                            security: Mapping[str, Any] | None = None,
                            timeout: float = 15.0) -> AsyncIterator[StoredDeadLetter]:
    """Every dead letter from ``since`` (Unix time; ``None``: the oldest kept) to the end of
    the topic as it is now, partition by partition."""
    async with open_client(AIOKafkaConsumer, bootstrap, start_timeout=timeout,
                           enable_auto_commit=False, client_id="toolwire-dlq",
                           **(security or {})) as consumer:
        cluster = await consumer._client.fetch_all_metadata()
        partitions = sorted(cluster.partitions_for_topic(topic) or ())
        if not partitions:
            raise LookupError(f"topic {topic} does not exist (run 'toolwire topics apply')")
        tps = [TopicPartition(topic, p) for p in partitions]
        ends = await consumer.end_offsets(tps)
        if since is None:
            starts = await consumer.beginning_offsets(tps)
        else:
            found = await consumer.offsets_for_times({tp: int(since * 1000) for tp in tps})
            starts = {tp: (found[tp].offset if found.get(tp) else ends[tp]) for tp in tps}
        consumer.assign(tps)
        for tp in tps:
            if starts[tp] >= ends[tp]:
                continue
            consumer.seek(tp, starts[tp])
            deadline = time.monotonic() + timeout
            done = False
            while not done and time.monotonic() < deadline:
                batch = await consumer.getmany(tp, timeout_ms=500, max_records=1000)
                for message in batch.get(tp, []):
                    if message.offset >= ends[tp]:
                        done = True
                        break
                    yield _stored(message)
                    done = message.offset >= ends[tp] - 1


async def fetch_dead_letter(bootstrap: str, topic: str, ref: str, *,
                            security: Mapping[str, Any] | None = None,
                            timeout: float = 15.0) -> StoredDeadLetter:
    """The dead letter at ``PARTITION:OFFSET``."""
    partition, offset = parse_ref(ref)
    async with open_client(AIOKafkaConsumer, bootstrap, start_timeout=timeout,
                           enable_auto_commit=False, client_id="toolwire-dlq",
                           **(security or {})) as consumer:
        tp = TopicPartition(topic, partition)
        cluster = await consumer._client.fetch_all_metadata()
        if partition not in (cluster.partitions_for_topic(topic) or ()):
            raise DeadLetterNotFound(f"{topic} has no partition {partition}")
        consumer.assign([tp])
        consumer.seek(tp, offset)
        batch = await consumer.getmany(tp, timeout_ms=int(timeout * 1000), max_records=1)
        messages = batch.get(tp) or []
        if not messages or messages[0].offset != offset:
            raise DeadLetterNotFound(f"no dead letter at {ref} on {topic} (expired or not "
                                     "written yet)")
        return _stored(messages[0])


def replay_request_id(letter: StoredDeadLetter, topic: str) -> str:
    """Deterministic per dead letter: a second replay of it is the same request."""
    digest = hashlib.sha256(f"{topic}:{letter.ref}".encode()).hexdigest()[:12]
    original = str(letter.record.get("request_id") or "unknown")
    suffix = f"~replay-{digest}"
    room = MAX_ID_BYTES - len(suffix)
    return original.encode()[:room].decode("utf-8", "ignore") + suffix


def replay_meta(letter: StoredDeadLetter, topic: str) -> RequestMeta:
    """The replay's request, as the dead letter recorded the original: the provider and model
    it names, the tools it declared, its wire, and the original's request id as
    ``replay_of``."""
    record = letter.record
    # A dead letter that names no session, key or request (a malformed message) replays under
    # the key "None", as it always has.
    session = record.get("session_id") or letter.key or record.get("request_id")
    tools = letter.declared_tools
    return RequestMeta(
        request_id=replay_request_id(letter, topic),
        session_id=str(session),
        provider=str(record["provider"]) if record.get("provider") else None,
        model=str(record["model"]) if record.get("model") else None,
        # Sorted, so that the same dead letter always gives the same messages. An empty list
        # (the request declared no tools) travels as an empty header: every call is unknown.
        declared_tools=None if tools is None else sorted(tools),
        replay_of=str(record.get("request_id") or ""),
        wire=letter.wire)


def replay_messages(letter: StoredDeadLetter, topic: str
                    ) -> tuple[bytes, list[tuple[bytes, Headers]]]:
    """(key, [(value, headers)]) that re-publish a dead letter's body as a new request: its
    raw chunks, then the end marker, as the publisher sends a body (:func:`replay_meta`)."""
    record = letter.record
    if record.get("raw_chunks_truncated"):
        raise NotReplayable(f"dead letter {letter.ref} kept only part of its raw chunks "
                            "(raw_chunks_truncated): a replay would not be the same body")
    chunks = [base64.b64decode(c["value_b64"]) for c in record.get("raw_chunks") or ()]
    if not chunks:
        raise NotReplayable(f"dead letter {letter.ref} has no raw chunks to replay")
    meta = replay_meta(letter, topic)
    messages = [(value, meta.message_headers(seq)) for seq, value in enumerate(chunks)]
    messages.append((b"", meta.message_headers(len(chunks), END_EOF)))
    return meta.key.encode(), messages


async def replay(bootstrap: str, topic: str, letters: Sequence[StoredDeadLetter],
                 deadletter_topic: str, *, rate: float = 500.0, release_first: bool = False,
                 security: Mapping[str, Any] | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 timeout: float = 15.0) -> list[str]:
    """Re-publish each dead letter's body; at most ``rate`` messages per second. Returns the
    new request ids. With ``release_first``, each session is released just before its first
    replay (in order, on its partition). ``timeout``: how long the producer may take to
    connect."""
    plans = [(letter, *replay_messages(letter, deadletter_topic)) for letter in letters]
    total = sum(len(messages) for _, _, messages in plans)
    requests: list[str] = []
    released: set[bytes] = set()
    sent = 0
    async with open_client(AIOKafkaProducer, bootstrap, start_timeout=timeout, acks="all",
                           enable_idempotence=True, **(security or {})) as producer:
        started = time.monotonic()
        for letter, key, messages in plans:
            if release_first and key not in released:
                await _send_release(producer, topic, key)
                released.add(key)
            futures = []
            for value, headers in messages:
                futures.append(await producer.send(topic, value, key=key, headers=headers))
                sent += 1
                ahead = sent / rate - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
            await asyncio.gather(*futures)
            requests.append(replay_request_id(letter, deadletter_topic))
            if progress is not None:
                progress(sent, total)
    return requests


async def release(bootstrap: str, topic: str, session: str, *,
                  security: Mapping[str, Any] | None = None,
                  timeout: float = 15.0) -> tuple[int, int]:
    """Send the release; return the (partition, offset) it was written at.

    ``security``: aiokafka connection options (:func:`toolwire.config.security.client_options`);
    ``timeout``: how long the producer may take to connect."""
    async with open_client(AIOKafkaProducer, bootstrap, start_timeout=timeout, acks="all",
                           **(security or {})) as producer:
        meta = await _send_release(producer, topic, session.encode())
    return meta.partition, meta.offset


async def _send_release(producer: AIOKafkaProducer, topic: str, key: bytes) -> Any:
    """Send the release of the session ``key`` and wait for it; its record metadata."""
    return await producer.send_and_wait(topic, b"", key=key,
                                        headers=control_headers(CONTROL_RELEASE))
