"""Bounds on what one response may cost.

Every bound is a setting with a safe default, so a hostile or broken upstream can cost a worker
at most a known amount of memory before its response is dead-lettered as ``oversize``. They are
read from ``TOOLWIRE_MAX_*`` by :mod:`toolwire.settings` (the core reads no environment).
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
#: JSON text shorter than this nests a value at most 252 levels deep (every level opens and
#: closes a bracket, and the value sits inside at least one object), which orjson writes back
#: out with two levels to spare (it writes 254): a value read from such a text needs no check
#: that the record can carry it.
SHALLOW_JSON_BYTES = 2 * 253


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-response bounds; exceeding any of them dead-letters the response as ``oversize``."""

    #: Raw body bytes of one response (all slices together).
    max_response_bytes: int = 16 * MiB
    #: One SSE line, and the data of one SSE event (several ``data:`` lines joined).
    max_line_bytes: int = 4 * MiB
    #: Arguments of one call (UTF-8 bytes).
    max_arguments_bytes: int = 4 * MiB
    #: Provider fields of one call (``extra_content``, ``provider_specific_fields``...), as
    #: compact JSON bytes, all fields together.
    max_provider_fields_bytes: int = 64 * 1024
    #: Calls of one response, all choices together.
    max_calls: int = 128
    #: Choices of one response (``n`` in the request).
    max_choices: int = 16
