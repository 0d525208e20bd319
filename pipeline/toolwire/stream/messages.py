"""The message contract of the input topic, and what the processor asks to publish.

Header names here are the ones ``topics/llm.sse.chunks.json`` documents; a test keeps the two in
step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

H_REQUEST_ID: Final = "request-id"
H_CHUNK_SEQ: Final = "chunk-seq"
H_PROVIDER: Final = "provider"
H_MODEL: Final = "model"
H_DECLARED_TOOLS: Final = "declared-tools"
#: On the last message of a request: ``eof``, ``error`` or ``cancelled``.
H_END: Final = "end-of-stream"
#: Operator and sweeper messages travel in the input topic, in order with the chunks they
#: concern and on their partition, so that every state change happens on the owning worker.
H_CONTROL: Final = "toolwire-control"
H_IDEMPOTENCY_KEY: Final = "idempotency-key"
#: On a replayed request (``toolwire dlq replay``): the request id of the original.
H_REPLAY_OF: Final = "toolwire-replay-of"
H_OUTCOME: Final = "toolwire-outcome"

END_MARKERS: Final = frozenset({"eof", "error", "cancelled"})
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
    ASSEMBLED = "assembled"
    DEADLETTER = "deadletter"
    CHUNKS = "chunks"  # control messages the sweeper sends to itself


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
    #: The same output built again to fit a smaller limit (bytes), when the broker refused it
    #: as too large (an output topic whose ``max.message.bytes`` is below
    #: ``TOOLWIRE_MAX_RECORD_BYTES``): a dead letter cut to fit, an assembled record turned
    #: into an ``oversize`` dead letter. ``None`` for outputs that cannot be cut (control).
    refit: Callable[[int], Output] | None = field(default=None, compare=False, repr=False)
