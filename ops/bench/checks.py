"""The mixed workload's correctness check: every response's record, read back from the output
topics, must be what ``toolwire.core.assemble(body, options)`` makes of the body that was
published, with its capture's options (its wire among them) — as the broker tests compare with
``toolwire assemble``.

Only what the pipeline alone knows is left out of the comparison (provenance, raw copies, the
request and session ids, Kafka's topic, key and headers); the topic is checked too: assembled
records on the assembled topic, the others on the dead-letter topic.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka_io
import orjson
from workload import Response

from toolwire.stream.messages import H_REQUEST_ID

#: Keys only the pipeline knows (the same as the broker tests leave out).
NOT_COMPARED = frozenset({"provenance", "raw_chunks", "raw_chunks_truncated", "request_id",
                          "session_id"})


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in NOT_COMPARED}


@dataclass
class Check:
    expected: int = 0
    equal: int = 0
    #: request -> what differs (a few keys), or the topic it was found on.
    differ: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    per_wire: dict[str, list[int]] = field(default_factory=dict)  # wire -> [equal, expected]

    @property
    def wrong(self) -> int:
        return len(self.differ) + len(self.missing) + len(self.duplicated)

    def add(self, other: Check) -> None:
        self.expected += other.expected
        self.equal += other.equal
        self.differ.update(other.differ)
        self.missing.extend(other.missing)
        self.duplicated.extend(other.duplicated)
        for wire, (eq, n) in other.per_wire.items():
            mine = self.per_wire.setdefault(wire, [0, 0])
            mine[0] += eq
            mine[1] += n

    def notes(self) -> dict[str, Any]:
        return {"expected": self.expected, "equal": self.equal,
                "per_wire_equal_of": {w: f"{eq} of {n}" for w, (eq, n) in
                                      sorted(self.per_wire.items())},
                "differ": dict(list(self.differ.items())[:10]),
                "missing": self.missing[:10], "duplicated": self.duplicated[:10]}


async def read_records(bootstrap: str, topics: Sequence[str], requests: set[str],
                       timeout: float = 120.0) -> list[tuple[str, str, dict[str, Any]]]:
    """(topic, request id, record) of every record of ``topics`` (up to their end offsets
    now) whose ``request-id`` header is one of ``requests``."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    async for r in kafka_io.records_to_end(bootstrap, topics, timeout):
        raw = dict(r.headers).get(H_REQUEST_ID)
        request = raw.decode(errors="replace") if raw is not None else None
        if request in requests:
            out.append((r.topic, request, orjson.loads(r.value)))
    return out


def check(bootstrap: str, outputs: Sequence[str], responses: Sequence[Response]) -> Check:
    """Read the records of ``responses`` from ``outputs`` (assembled topic, dead-letter
    topic) and compare each with ``assemble(body, options)`` of its response."""
    by_request = {r.request: r for r in responses}
    found = asyncio.run(read_records(bootstrap, outputs, set(by_request)))
    result = Check(expected=len(by_request))
    counts = Counter(request for _, request, _ in found)
    result.duplicated = sorted(r for r, n in counts.items() if n > 1)
    result.missing = sorted(set(by_request) - set(counts))
    for response in by_request.values():
        result.per_wire.setdefault(response.wire, [0, 0])[1] += 1
    seen: set[str] = set()
    for topic, request, record in found:
        if request in seen:
            continue
        seen.add(request)
        response = by_request[request]
        want = dict(response.expected())
        want_topic = outputs[0] if want["outcome"] == "assembled" else outputs[1]
        if topic != want_topic:
            result.differ[request] = f"{response.capture}: on {topic}, expected {want_topic}"
            continue
        got, exp = comparable(record), comparable(orjson.loads(orjson.dumps(want)))
        if got != exp:
            keys = sorted(k for k in got.keys() | exp.keys() if got.get(k) != exp.get(k))
            result.differ[request] = f"{response.capture}: {', '.join(keys[:6])}"
            continue
        result.equal += 1
        result.per_wire[response.wire][0] += 1
    return result
