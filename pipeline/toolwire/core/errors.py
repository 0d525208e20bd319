"""Why a response cannot be trusted.

A response ends in exactly one record; these exceptions carry the dead-letter reason out of the
stage that found the problem (framing, parsing, assembly) so the router can record it.
"""

from __future__ import annotations

from typing import Final

import orjson

from toolwire.core.records import Reason

#: The detail of a dead letter quotes at most this many bytes of the offending input.
DETAIL_BYTES: Final = 200


def excerpt(raw: bytes | str) -> str:
    """The first ``DETAIL_BYTES`` bytes of a payload, safe to print (invalid UTF-8 replaced)."""
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else raw
    text = data[:DETAIL_BYTES].decode("utf-8", "replace")
    return text + ("…" if len(data) > DETAIL_BYTES else "")


class DeadLetter(Exception):
    """A response that must go to the dead-letter topic, with a machine-readable reason."""

    reason: Reason = "internal_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class MalformedChunk(DeadLetter):
    reason = "malformed_chunk"


class Oversize(DeadLetter):
    reason = "oversize"


class InternalError(DeadLetter):
    """Applying a chunk raised something unforeseen (a Toolwire bug, or input no rule names).

    The whole response fails with it: dropping the chunk and going on would publish a call
    that lacks part of its arguments, which is worse than no call at all.
    """

    reason = "internal_error"


def malformed(payload: object, why: str) -> MalformedChunk:
    """The dead letter for a payload, quoting its first bytes so an operator can find it.

    A payload as received (``bytes``) is quoted as it is; a decoded one (a chunk, an event
    object) is written back out to be quoted. orjson refuses some values it read (nesting
    deeper than it writes), and building the reason must never raise itself.
    """
    if isinstance(payload, bytes):
        return MalformedChunk(f"{why}: {excerpt(payload)}")
    try:
        raw = orjson.dumps(payload)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return MalformedChunk(f"{why} (the chunk is nested too deeply to quote)")
    return MalformedChunk(f"{why}: {excerpt(raw)}")
