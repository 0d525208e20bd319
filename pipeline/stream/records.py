"""Encoding of output records so that every one of them can be published.

A record that cannot be written out (orjson refuses a value it read) or that is larger than the
producer and the topics accept would crash the worker at publication and be lost. So every
record leaves through here: an assembled record that does not fit becomes an ``oversize`` dead
letter (the processor's decision), and a dead letter is always made to fit — long strings are
cut (``fields_truncated``) and raw chunks are copied only as far as the room allows
(``raw_chunks_truncated``). Both flags are in the dead-letter contract.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

#: Bytes a record may take beyond its value: Kafka's record and batch framing.
FRAMING_BYTES: Final = 512
#: Successive caps on the length of any string of a dead letter that does not fit.
_STRING_CAPS: Final = (4096, 256, 64)
#: Fields never cut: what the record is, and whom it belongs to.
_KEPT_WHOLE: Final = ("outcome", "reason", "provenance", "request_id", "session_id")
#: Per raw chunk: ``{"seq":<n>,"value_b64":""},`` with a seq of up to 11 characters.
_RAW_ITEM_BYTES: Final = 36


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


def fit_dead_letter(letter: dict[str, Any], raw: Sequence[tuple[int, bytes]],
                    room: int, raw_budget: int) -> bytes:
    """The dead letter's bytes within ``room``, with as many raw chunks as fit.

    ``letter`` has every field but the raw chunks. Fields are cut only when the letter alone
    does not fit; raw chunks are taken in order and stop at the first that does not fit, so
    a consumer replaying them never replays a body with a hole in the middle.
    """
    detail_suffix = ""
    body = dumps(letter)
    if body is None:
        # Only ``usage`` and ``held_record`` carry values from the wire that are not text.
        letter = {**letter, "usage": None}
        if letter.pop("held_record", None) is not None:
            letter["reason"] = "internal_error"
        detail_suffix = " (usage and held record dropped: not writable as JSON)"
        letter["detail"] = str(letter.get("detail", "")) + detail_suffix
        body = dumps(letter)
    for cap in _STRING_CAPS:
        if body is not None and len(body) + 40 <= room:
            break
        # Ids are kept whole: the input contract bounds them, and a cut id would name another.
        keep: dict[str, Any] = {k: letter[k] for k in _KEPT_WHOLE if k in letter}
        letter = {**_cap_strings(letter, cap), **keep, "fields_truncated": True}
        if cap == _STRING_CAPS[-1]:
            letter["calls"] = []
            letter["usage"] = None
            if "held_record" in letter:
                letter.pop("held_record")
                letter["reason"] = "oversize"
        letter["detail"] = (str(letter.get("detail", ""))[:512]
                            + " (long fields cut to fit the record size limit)")
        body = dumps(letter)
    if body is None or len(body) + 40 > room:
        raise ValueError(f"a dead letter does not fit in {room} bytes even without its fields; "
                         "raise TOOLWIRE_MAX_RECORD_BYTES")
    budget = min(raw_budget, room - len(body) - 40)
    kept: list[dict[str, Any]] = []
    for seq, value in raw:
        cost = _b64_size(len(value)) + _RAW_ITEM_BYTES
        if cost > budget or len(value) > raw_budget:
            break
        budget -= cost
        raw_budget -= len(value)
        kept.append({"seq": seq, "value_b64": base64.b64encode(value).decode()})
    letter["raw_chunks"] = kept
    letter["raw_chunks_truncated"] = len(kept) < len(raw)
    return orjson.dumps(letter)
