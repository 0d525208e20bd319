"""What the worker keeps in its changelogged tables: the value types and their byte codecs.

This module is the only one that encodes or reads table bytes. Every value carries its format:
JSON values a ``"v"`` field and a ``"k"`` (kind) field, stored chunks a leading format byte, so
that a later release reads what an earlier one wrote (the changelogs outlive any deployment) and
nothing depends on how a JSON encoder orders keys. Values written before formats were versioned
(plain JSON objects, "version 0") are still read.

Tables (all keys belong to the partition of the event that writes them):

- ``chunks``: ``<request digest>.<seq hex>`` → :class:`StoredChunk`; deleted once decided.
- ``responses``: request id → :class:`OpenResponse` while open, then a :class:`DoneMarker`
  kept for the dedupe window, so chunks replayed after a crash publish nothing twice.
- ``quarantine``: session id → :class:`QuarantineEntry` until an operator's release.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

#: Version of the JSON values written by this release.
VERSION: Final = 1
#: Leading byte of a stored chunk: the body follows.
_CHUNK_BODY: Final = 0x01
#: Leading byte of a chunk kept by size only (after an ``oversize`` failure): ASCII decimal.
_CHUNK_SIZE: Final = 0x02


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


@dataclass(frozen=True, slots=True)
class DoneMarker:
    """A decided (and published) response, remembered for the dedupe window."""

    done: float
    partition: int
    outcome: str
    #: Chunks the response had stored: they are deleted once this marker is durable, and
    #: again (idempotently) when the marker expires, so a crash between the two leaks none.
    chunks: int = 0


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


ResponseState = OpenResponse | DoneMarker


def chunk_key(request_id: str, seq: int) -> str:
    """A short, fixed-size key: the request id is hashed once, not repeated in every key."""
    digest = hashlib.blake2b(request_id.encode(), digest_size=9).digest()
    return f"{base64.urlsafe_b64encode(digest).decode()}.{seq:x}"


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


def encode_response(state: ResponseState) -> bytes:
    if isinstance(state, DoneMarker):
        return orjson.dumps({"v": VERSION, "k": "done", "done": state.done,
                             "partition": state.partition, "outcome": state.outcome,
                             "chunks": state.chunks})
    return orjson.dumps({
        "v": VERSION, "k": "open", "session": state.session, "partition": state.partition,
        "provider": state.provider, "model": state.model,
        "tools": None if state.tools is None else list(state.tools),
        "first_offset": state.first_offset, "opened": state.opened})


def decode_response(raw: bytes) -> ResponseState:
    value = _json(raw)
    kind = value.get("k")
    if kind is None and value.get("v") is None:  # version 0: a done marker had "done"
        kind = "done" if "done" in value else "open"
    if kind == "done":
        return DoneMarker(done=float(value["done"]), partition=int(value["partition"]),
                          outcome=str(value["outcome"]), chunks=int(value.get("chunks") or 0))
    if kind == "open":
        tools = value.get("tools")
        return OpenResponse(session=str(value["session"]), partition=int(value["partition"]),
                            provider=value.get("provider"), model=value.get("model"),
                            tools=None if tools is None else tuple(str(t) for t in tools),
                            first_offset=int(value["first_offset"]),
                            opened=float(value.get("opened") or 0.0))
    raise StateError(f"unknown response state kind {kind!r}")


def encode_quarantine(entry: QuarantineEntry) -> bytes:
    return orjson.dumps({"v": VERSION, "k": "quarantine", "reason": entry.reason,
                         "request_id": entry.request_id, "since": entry.since})


def decode_quarantine(raw: bytes) -> QuarantineEntry:
    value = _json(raw)
    return QuarantineEntry(reason=str(value["reason"]), request_id=value.get("request_id"),
                           since=float(value["since"]))


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
    """A typed view over a text-keyed byte mapping (a Faust table, or a dict in tests)."""

    def __init__(self, table: MutableMapping[str, bytes]) -> None:
        self.table = table

    def __contains__(self, key: str) -> bool:
        return key in self.table

    def __delitem__(self, key: str) -> None:
        del self.table[key]

    def __len__(self) -> int:
        return len(self.table)

    def keys(self) -> Iterator[str]:
        return iter(list(self.table))

    def discard(self, key: str) -> None:
        if key in self.table:
            del self.table[key]


class Chunks(_View):
    def get(self, request_id: str, seq: int) -> StoredChunk | None:
        raw = self.table.get(chunk_key(request_id, seq))
        return None if raw is None else decode_chunk(raw)

    def put(self, request_id: str, seq: int, chunk: StoredChunk) -> None:
        self.table[chunk_key(request_id, seq)] = encode_chunk(chunk)

    def drop(self, request_id: str, seq: int) -> None:
        self.discard(chunk_key(request_id, seq))


class Responses(_View):
    def get(self, request_id: str) -> ResponseState | None:
        raw = self.table.get(request_id)
        return None if raw is None else decode_response(raw)

    def put(self, request_id: str, state: ResponseState) -> None:
        self.table[request_id] = encode_response(state)

    def items(self) -> Iterator[tuple[str, ResponseState]]:
        for key in list(self.table):
            raw = self.table.get(key)
            if raw is not None:
                yield key, decode_response(raw)


class Quarantine(_View):
    def get(self, session: str) -> QuarantineEntry | None:
        raw = self.table.get(session)
        return None if raw is None else decode_quarantine(raw)

    def put(self, session: str, entry: QuarantineEntry) -> None:
        self.table[session] = encode_quarantine(entry)
