"""Hostile requests for the input topic, and valid ones from the corpus: seeded, pure, no Kafka.

A *request* is what one gateway sends for one response: a list of Kafka messages (key, value,
headers) following — or deliberately breaking — the input contract of
``topics/llm.sse.chunks.json``. Each request comes with the records it must end as
(:class:`Outcome`): usually exactly one dead letter with a named reason, sometimes an assembled
record (a hostile input the contract accepts, e.g. an empty key or a replayed chunk).

Where an outcome depends on the body, it is computed with :func:`toolwire.core.assemble` under
the same limits the worker runs with (:data:`LIMITS`, :func:`worker_env`), and checked against
the reason(s) the contract names for that kind (:attr:`Outcome.intended`): a disagreement
between the two is a finding of its own (see :func:`disagreements`).

Every request gets its own session key (so a quarantine of one holds no other) unless its kind
is about keys or sessions. Every request id and every value that must be found again without a
request id carries a unique tag, so outputs can be matched back to requests.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from tests.core.captures import CAPTURES, Capture
from tests.core.sse import body, call, chunk
from toolwire.config.settings import Settings
from toolwire.core import Limits, Options, Provenance, assemble
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_CONTROL,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REQUEST_ID,
    MAX_CHUNK_SEQ,
    MAX_ID_BYTES,
    MAX_TOOLS_BYTES,
)

#: Small limits, so that every size attack stays small and fast; the corpus fits well within.
LIMITS: Final = Limits(max_response_bytes=786_432, max_line_bytes=65_536,
                       max_arguments_bytes=8_192, max_calls=8, max_choices=4)
#: One output message at most (value, key, headers, framing): the worker's default.
MAX_RECORD_BYTES: Final = Settings().max_record_bytes
#: A Kafka message of the input carries at most this many body bytes.
SLICE_BYTES: Final = 64 * 1024
#: The orjson writer's nesting limit: a value nested deeper cannot be written back out.
ORJSON_WRITE_DEPTH: Final = 254

ASSEMBLED: Final = "assembled"

Header = tuple[str, bytes | None]


def worker_env() -> dict[str, str]:
    """The ``TOOLWIRE_MAX_*`` variables that give a worker :data:`LIMITS`."""
    return {"TOOLWIRE_MAX_RESPONSE_BYTES": str(LIMITS.max_response_bytes),
            "TOOLWIRE_MAX_LINE_BYTES": str(LIMITS.max_line_bytes),
            "TOOLWIRE_MAX_ARGUMENTS_BYTES": str(LIMITS.max_arguments_bytes),
            "TOOLWIRE_MAX_CALLS": str(LIMITS.max_calls),
            "TOOLWIRE_MAX_CHOICES": str(LIMITS.max_choices)}


@dataclass(frozen=True)
class Message:
    """One Kafka message of the input topic. A header value of ``None`` is a null header value
    and a ``value`` of ``None`` a null value, both of which Kafka allows."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]

    def size(self) -> int:
        return (len(self.key or b"") + len(self.value or b"")
                + sum(len(k) + len(v or b"") for k, v in self.headers))


@dataclass(frozen=True)
class Outcome:
    """One record a request must produce."""

    #: The dead-letter reason, or :data:`ASSEMBLED` for an assembled record.
    reason: str
    #: The reasons the contract allows for this kind (``reason`` is among them unless the core
    #: disagrees with the contract; see :func:`disagreements`).
    intended: frozenset[str]
    #: The ``request_id`` the record (and its ``request-id`` header) carries; ``None`` when the
    #: message had no usable request id: then it is found by ``raw`` (a malformed_message).
    request_id: str | None
    #: The key of the output message (the session), or ``None``.
    session: str | None
    #: For ``request_id is None``: the value of the malformed message, unique per request.
    raw: bytes | None = None
    #: The whole record, when it is known (minus provenance and raw copies), else ``None``.
    record: dict[str, Any] | None = None
    #: session_quarantined only: the record that was held back.
    held: dict[str, Any] | None = None


@dataclass(frozen=True)
class Request:
    kind: str
    hostile: bool
    #: All messages of the request go to the partition of this key (see :func:`partition_of`).
    route: bytes
    messages: tuple[Message, ...]
    outcomes: tuple[Outcome, ...]
    #: What varies within the kind (a capture's name, a header value), for messages.
    note: str = ""


def partition_of(route: bytes, partitions: int) -> int:
    """Where every message of a request goes: one partition, in order."""
    return zlib.crc32(route) % partitions


def header_text(raw: bytes | None) -> str | None:
    """A header as the processor reads it (``InputMessage.header``)."""
    return None if raw is None else raw.decode("utf-8", "replace")


# --------------------------------------------------------------------------- bodies


def good_body(call_id: str = "call_1", name: str = "get_weather") -> bytes:
    return body(chunk(call(0, call_id, name, '{"city":')),
                chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))


def event(obj: Any) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else orjson.dumps(obj)) + b"\n\n"


DONE: Final = b"data: [DONE]\n\n"


def nested(depth: int, leaf: bytes = b"1", kind: str = "list") -> bytes:
    """JSON text nested ``depth`` levels deep (lists, or objects ``{"a":...}``)."""
    if kind == "list":
        return b"[" * depth + leaf + b"]" * depth
    return b'{"a":' * depth + leaf + b"}" * depth


def events_of(data: bytes) -> list[bytes]:
    parts = data.split(b"\n\n")
    out = [p + b"\n\n" for p in parts[:-1]]
    return out + ([parts[-1]] if parts[-1] else [])


def cut(data: bytes, sizes: Iterable[int]) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    for size in sizes:
        if i >= len(data):
            break
        out.append(data[i:i + size])
        i += size
    if i < len(data):
        out.append(data[i:])
    return out


#: Wrong JSON values for every wire field of a chunk (each breaks the field's type).
WRONG_TYPES: Final[dict[str, tuple[Any, ...]]] = {
    "choices": ("x", "", 0, 1, True, False, {}, {"0": {}}, 1.5),
    "choice": ("x", 1, None, True, [], [{}]),
    "choice.index": (-1, "0", 1.5, True, False, [], {}),
    "delta": ("x", "", 0, 7, True, False, [], [1], 1.5),
    "tool_calls": ("x", "", 0, 3, True, False, {}, {"index": 0}),
    "tool_call": ("x", 1, None, True, [], [{}]),
    "index": (-1, "0", 1.5, True, False, [], {}, "x"),
    "function": ("x", "", 1, 0, True, False, [], ["a"]),
    "arguments": (1, 0, True, False, [], {}, ["a"], {"a": 1}, 1.5),
    "usage": ("x", "", 1, 0, True, False, [], [1]),
}


def wrong_type_chunk(field_name: str, value: Any) -> dict[str, Any]:
    """A tool-call chunk with ``value`` in place of the field ``field_name``."""
    fn: dict[str, Any] = {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    tc: dict[str, Any] = {"index": 0, "id": "call_w", "type": "function", "function": fn}
    delta: dict[str, Any] = {"role": "assistant", "tool_calls": [tc]}
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
    top: dict[str, Any] = {"id": "chatcmpl-w", "object": "chat.completion.chunk",
                           "model": "m", "choices": [choice]}
    match field_name:
        case "choices":
            top["choices"] = value
        case "choice":
            top["choices"] = [value]
        case "choice.index":
            choice["index"] = value
        case "delta":
            choice["delta"] = value
        case "tool_calls":
            delta["tool_calls"] = value
        case "tool_call":
            delta["tool_calls"] = [value]
        case "index":
            tc["index"] = value
        case "function":
            tc["function"] = value
        case "arguments":
            fn["arguments"] = value
        case "usage":
            top["usage"] = value
        case _:
            raise ValueError(field_name)
    return top


#: ``chunk-seq`` values outside the contract (``None``: the header with a null value).
BAD_SEQS: Final[tuple[bytes | None, ...]] = (
    b"-1", b"+0", b" 0", b"0 ", "²".encode(), "⁰".encode(), "\uff10".encode(), "\u0660".encode(),
    b"1" * 5000, b"0" * 11, str(MAX_CHUNK_SEQ + 1).encode(), b"99999999999", b"0x0",
    b"0.0", b"", b"\xff", b"1e3", None)

#: Ways of each envelope kind (the catalogue sends every one of them).
NO_ID_WAYS: Final = ("missing", "empty", "invalid_utf8", "too_long", "null")
BAD_ENVELOPE_WAYS: Final = ("key_invalid_utf8", "key_too_long", "provider_too_long",
                            "model_too_long", "declared_tools_too_long")
SOUND_ENVELOPE_WAYS: Final = (
    "key_empty", "key_none", "key_at_limit", "request_id_at_limit", "request_id_nul",
    "provider_invalid_utf8", "provider_empty", "model_empty", "provider_null", "model_null",
    "many_unknown_headers", "null_value_end", "end_cancelled_after_done")
END_WAYS: Final = ("unknown", "empty", "invalid_utf8", "null", "error_before_done",
                   "cancelled_before_done", "on_a_middle_message")
ABANDON_WAYS: Final = ("mid_body", "after_done", "after_failure", "seq_all_zero")
SEQ_DISORDER_WAYS: Final = ("gap", "starts_at_1", "swapped", "repeat_then_gap", "max_first",
                            "repeated", "leading_zeros")
#: A bad delta (a number, a list, a string) or a sound one, next to ~300 levels of nesting.
DELTAS_NEXT_TO_DEEP: Final = (b"5", b"[1]", b'"x"', b'{"content":"ok"}')


def nulled(messages: Iterable[Message], name: str) -> list[Message]:
    """The messages with the header ``name`` sent with a null value."""
    return [Message(m.key, m.value, tuple((k, None if k == name else v) for k, v in m.headers))
            for m in messages]


#: Corpus events of one ``data: {...}`` line each (a prefix of one is never a whole chunk).
SINGLE_LINE_EVENTS: Final = [
    e.rstrip(b"\n") for c in CAPTURES for e in events_of(c.body)
    if e.startswith(b"data: {") and b"\r" not in e and b"\n" not in e.rstrip(b"\n")]


# --------------------------------------------------------------------------- the generator


@dataclass
class Generator:
    """Hostile and valid requests from one seed; request ids are unique per generator."""

    seed: int
    #: Request ids start with this (so that several generators can share topics).
    prefix: str = "h"
    #: Include requests that never end (they need a worker with a short stream TTL).
    abandon: bool = True
    rng: random.Random = field(init=False)
    count: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- helpers -------------------------------------------------------------------------

    def ids(self, kind: str) -> tuple[str, str]:
        """(request id, session) unique to one request."""
        self.count += 1
        request_id = f"{self.prefix}{self.count:05d}.{kind}"
        return request_id, f"s.{request_id}"

    def slices(self, data: bytes, most: int = 12) -> list[bytes]:
        """The body as a gateway might forward it: whole, per event, or cut anywhere into
        1 to ``most`` messages (plus one per 64 KiB)."""
        way = self.rng.randrange(3)
        if way == 0 and 1 < data.count(b"\n\n") <= most:
            pieces = events_of(data)
        else:
            n = self.rng.randint(1, most)
            points = sorted(self.rng.sample(range(1, len(data)), min(n - 1, len(data) - 1)))
            pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)],
                                                strict=True)]
        out: list[bytes] = []
        for piece in pieces:
            out += [piece[i:i + SLICE_BYTES] for i in range(0, len(piece), SLICE_BYTES)]
        return out or [b""]

    def messages(self, request_id: bytes | None, key: bytes | None, pieces: Sequence[bytes | None],
                 *, provider: bytes | None = b"hostile-provider",
                 model: bytes | None = b"hostile-model", tools: bytes | None = None,
                 end: bytes | None = b"eof", seqs: Sequence[bytes | None] | None = None,
                 separate_end: bool | None = None, extra: Sequence[Header] = ()
                 ) -> list[Message]:
        """Messages per the contract (unless told otherwise): every header on every message,
        ``chunk-seq`` 0, 1, 2, ..., the end marker on the last message or on an extra empty
        one."""
        pieces = list(pieces)
        if end is not None:
            if separate_end is None:
                separate_end = self.rng.random() < 0.5
            if separate_end or not pieces:
                pieces.append(b"")
        if seqs is None:
            seqs = [str(i).encode() for i in range(len(pieces))]
        out = []
        for i, (piece, seq) in enumerate(zip(pieces, seqs, strict=True)):
            headers: list[Header] = []
            if request_id is not None:
                headers.append((H_REQUEST_ID, request_id))
            if seq is not None:
                headers.append((H_CHUNK_SEQ, seq))
            if provider is not None:
                headers.append((H_PROVIDER, provider))
            if model is not None:
                headers.append((H_MODEL, model))
            if tools is not None:
                headers.append((H_DECLARED_TOOLS, tools))
            headers += extra
            if end is not None and i == len(pieces) - 1:
                headers.append((H_END, end))
            out.append(Message(key, piece, tuple(headers)))
        return out

    def body_outcome(self, request_id: str, session: str, pieces: Iterable[bytes | None],
                     intended: Iterable[str], *, tools: bytes | None = None,
                     provider: bytes | None = b"hostile-provider",
                     model: bytes | None = b"hostile-model") -> Outcome:
        """What the pipeline publishes for a body with a sound envelope ended by ``eof``."""
        tool_set = None
        if tools is not None:
            text = tools.decode("utf-8", "replace")
            tool_set = frozenset(t.strip() for t in text.split(",") if t.strip())
        provenance = Provenance(request_id=request_id, session_id=session,
                                provider=header_text(provider), model=header_text(model))
        record = assemble([p or b"" for p in pieces],
                          Options(declared_tools=tool_set, limits=LIMITS), provenance)
        return outcome_of(record, request_id, session, frozenset(intended))

    def request(self, kind: str, route: str | bytes, messages: Iterable[Message],
                *outcomes: Outcome, hostile: bool = True, note: str = "") -> Request:
        return Request(kind, hostile, route.encode() if isinstance(route, str) else route,
                       tuple(messages), outcomes, note)

    def simple(self, kind: str, data: bytes, intended: Iterable[str], *,
               tools: bytes | None = None, pieces: list[bytes] | None = None,
               most: int = 12) -> Request:
        """A hostile body in a sound envelope, ended by ``eof``."""
        request_id, session = self.ids(kind)
        pieces = self.slices(data, most) if pieces is None else pieces
        msgs = self.messages(request_id.encode(), session.encode(), pieces, tools=tools)
        return self.request(kind, session, msgs, self.body_outcome(
            request_id, session, [m.value for m in msgs], intended, tools=tools))

    # -- body kinds ----------------------------------------------------------------------

    def random_bytes(self) -> Request:
        data = self.rng.randbytes(self.rng.randint(1, 3000))
        return self.simple("random_bytes", data, {"stream_closed", "malformed_chunk", "oversize"})

    def random_bytes_in_data(self) -> Request:
        junk = self.rng.randbytes(self.rng.randint(8, 600))
        return self.simple("random_bytes_in_data", b"data: " + junk + b"\n\n" + DONE,
                           {"malformed_chunk"})

    def truncated_json(self) -> Request:
        payload = self.rng.choice(SINGLE_LINE_EVENTS)
        cut_at = self.rng.randint(len(b"data: {"), len(payload) - 1)
        data = payload[:cut_at] + b"\n\n" + good_body()
        return self.simple("truncated_json", data, {"malformed_chunk"})

    def truncated_body(self) -> Request:
        data = good_body()
        cut_at = self.rng.randint(1, data.index(DONE) - 1)
        return self.simple("truncated_body", data[:cut_at], {"stream_closed"})

    def wrong_type(self, field_name: str | None = None, value: Any = None) -> Request:
        if field_name is None:
            field_name = self.rng.choice(sorted(WRONG_TYPES))
            value = self.rng.choice(WRONG_TYPES[field_name])
        bad = event(wrong_type_chunk(field_name, value))
        data = self.rng.choice([bad + DONE, good_body()[:-len(DONE)] + bad + DONE])
        return self.simple(f"wrong_type.{field_name}", data, {"malformed_chunk"}, most=2)

    def identity_wrong_type(self) -> Request:
        data = body(chunk(call(0, 123, "get_weather", "{}")),
                    chunk(call(0, ["x"], {"n": 1}, ""), finish="tool_calls"))
        return self.simple("identity_wrong_type", data, {"missing_identity"})

    def ignored_wrong_types(self) -> Request:
        """Fields that are not text where the contract ignores what is not text."""
        first = chunk(call(0, "call_i", "get_weather", "{}"), content=[1])
        first.update({"id": 7, "model": {"m": 1}})
        first["choices"][0]["finish_reason"] = 5
        first["choices"][0]["delta"].update({"role": 9, "reasoning_content": {"x": 1}})
        return self.simple("ignored_wrong_types", body(first, chunk(finish="tool_calls")),
                           {ASSEMBLED})

    def line_too_long(self, way: int | None = None) -> Request:
        over = LIMITS.max_line_bytes + self.rng.randint(1, 2000)
        way = self.rng.randrange(3) if way is None else way
        if way == 0:  # one data line
            data = event({"choices": [{"delta": {"content": "x" * over}}]}) + DONE
        elif way == 1:  # a comment line (ignored, but still a line)
            data = b": " + b"k" * over + b"\n\n" + good_body()
        else:  # an event of many short data lines
            line = b"data: " + b"y" * 1000 + b"\n"
            data = line * (over // 1000 + 1) + b"\n" + DONE
        return self.simple(f"line_too_long.{way}", data, {"oversize"})

    def arguments_too_long(self, way: int | None = None) -> Request:
        way = self.rng.randrange(3) if way is None else way
        limit = LIMITS.max_arguments_bytes
        if way == 0:  # ASCII, in a few fragments
            parts = ["a" * (limit // 3 + 1)] * 3
        elif way == 1:  # fewer characters than the limit, more UTF-8 bytes
            parts = ["é" * (limit // 4 + 1)] * 2
        else:  # over the limit by one byte, in many fragments
            parts = ["b" * 64] * (limit // 64) + ["c"]
        first = chunk(call(0, "call_a", "get_weather", ""))
        data = body(first, *(chunk(call(0, arguments=p)) for p in parts),
                    chunk(finish="tool_calls"))
        return self.simple(f"arguments_too_long.{way}", data, {"oversize"})

    def response_too_long(self) -> Request:
        line = b": keepalive " + b"." * 1000 + b"\n"
        data = good_body()[:-len(DONE)]
        data += line * (LIMITS.max_response_bytes // len(line) + 2) + DONE
        return self.simple("response_too_long", data, {"oversize"},
                           pieces=[data[i:i + SLICE_BYTES]
                                   for i in range(0, len(data), SLICE_BYTES)])

    def too_many_calls(self, way: int | None = None) -> Request:
        calls = [call(i, f"call_{i}", "get_weather", "{}") for i in range(LIMITS.max_calls + 1)]
        way = self.rng.randrange(2) if way is None else way
        if way == 0:
            data = body(chunk(*calls), chunk(finish="tool_calls"))
        else:
            data = body(*(chunk(c) for c in calls), chunk(finish="tool_calls"))
        return self.simple(f"too_many_calls.{way}", data, {"oversize"})

    def too_many_choices(self) -> Request:
        chunks = [chunk(content="hi", choice=i) for i in range(LIMITS.max_choices + 1)]
        return self.simple("too_many_choices", body(*chunks), {"oversize"})

    def record_too_large(self) -> Request:
        """A sound body whose record cannot fit one Kafka message: its text appears twice in
        the record (``content`` and ``choices``), so ~600 KB of body is a 1.2 MB record."""
        text = "z" * 60_000
        data = body(*(chunk(content=text) for _ in range(10)), chunk(finish="stop"))
        request_id, session = self.ids("record_too_large")
        msgs = self.messages(request_id.encode(), session.encode(), events_of(data))
        outcome = self.body_outcome(request_id, session, [m.value for m in msgs], {"oversize"})
        return self.request("record_too_large", session, msgs, outcome)

    def many_tiny_fragments(self, over: bool = False) -> Request:
        """One call of thousands of 1-byte (or 3-byte) argument fragments, many events per
        message: assembled, or oversize when the fragments add up past the arguments limit."""
        size = 3 if over else 1
        count = (LIMITS.max_arguments_bytes // size + 10 if over
                 else self.rng.randint(500, 3000))
        text = "".join(self.rng.choice("abcdefgh") for _ in range(size * count))
        args = '{"k":"' + text + '"}'
        frags = [args[i:i + size] for i in range(0, len(args), size)]
        first = event(chunk(call(0, "call_t", "get_weather", "")))
        evs = [event({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": f}}]}}]}) for f in frags]
        evs.append(event(chunk(finish="tool_calls")) + DONE)
        per = self.rng.randint(50, 200)
        pieces = [first] + [b"".join(evs[i:i + per]) for i in range(0, len(evs), per)]
        kind = "many_tiny_fragments" + (".over_limit" if over else "")
        request_id, session = self.ids(kind)
        msgs = self.messages(request_id.encode(), session.encode(), pieces)
        outcome = self.body_outcome(request_id, session, [m.value for m in msgs],
                                    {"oversize"} if over else {ASSEMBLED})
        return self.request(kind, session, msgs, outcome, note=f"{len(frags)} fragments")

    def deep_unknown_field(self, delta: bytes | None = None) -> Request:
        """~300 levels of nesting in an unknown field next to a bad (or sound) delta."""
        depth = self.rng.randint(290, 310)
        kind = self.rng.choice(["list", "dict"])
        delta = delta or self.rng.choice(DELTAS_NEXT_TO_DEEP)
        payload = (b'{"id":"d","x_vendor":' + nested(depth, kind=kind)
                   + b',"choices":[{"index":0,"delta":' + delta
                   + b',"finish_reason":"stop"}]}')
        intended = {ASSEMBLED} if delta.startswith(b"{") else {"malformed_chunk"}
        name = "deep_unknown_field." + ("good_delta" if delta.startswith(b"{") else "bad_delta")
        return self.simple(name, event(payload) + DONE, intended)

    def deep_beyond_parser(self) -> Request:
        payload = b'{"x":' + nested(1100) + b',"choices":[]}'
        return self.simple("deep_beyond_parser", event(payload) + DONE, {"malformed_chunk"})

    def deep_usage(self, depth: int | None = None) -> Request:
        """Nesting inside ``usage``, which the record carries verbatim: too deep to write back
        out inside a record (one level deeper, two in a held record) is a malformed chunk."""
        if depth is None:
            depth = self.rng.randint(290, 320)
        usage = b'{"a":' + nested(depth - 1) + b"}"  # an object of ``depth`` levels
        payload = (b'{"id":"u","choices":[{"index":0,"delta":{"content":"hi"},'
                   b'"finish_reason":"stop"}],"usage":' + usage + b"}")
        # Either way the core refuses usage it could not write back out inside a record.
        intended = {"malformed_chunk"}
        label = "at_writer_limit" if depth == ORJSON_WRITE_DEPTH else "deep"
        return self.simple(f"deep_usage.{label}", event(payload) + DONE, intended)

    def invalid_utf8(self, where: int | None = None) -> Request:
        bad = self.rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80",
                               b"\xf8\x88\x80\x80\x80"])
        where = self.rng.randrange(4) if where is None else where
        if where == 0:  # inside content
            payload = b'{"choices":[{"index":0,"delta":{"content":"a' + bad + b'b"}}]}'
        elif where == 1:  # inside arguments
            payload = (b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c",'
                       b'"function":{"name":"n","arguments":"' + bad + b'"}}]}}]}')
        elif where == 2:  # a key
            payload = b'{"choices":[{"index":0,"delta":{"x' + bad + b'":1}}]}'
        else:  # the last byte of the payload
            payload = b'{"choices":[]}' + bad
        return self.simple(f"invalid_utf8.{where}", good_body()[:-len(DONE)] + event(payload)
                           + DONE, {"malformed_chunk"})

    def invalid_utf8_ignored(self) -> Request:
        """Invalid UTF-8 where SSE ignores it (comments, other fields): a sound response."""
        junk = self.rng.randbytes(40).replace(b"\n", b"").replace(b"\r", b"")
        data = b": " + junk + b"\xff\n" + b"event: \xfe\xff\nid: \xc0\n" + good_body()
        return self.simple("invalid_utf8_ignored", data, {ASSEMBLED})

    def utf8_split(self) -> Request:
        """Multi-byte characters cut between messages, inside the character: sound."""
        data = body(chunk(call(0, "call_ü", "wetter_für", '{"Ort":"Zürich 東京 🌧"}')),
                    chunk(finish="tool_calls"))
        points = [i + self.rng.randint(1, 2 if b >= 0xE0 else 1)
                  for i, b in enumerate(data) if b >= 0xC0]
        pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
        return self.simple("utf8_split", data, {ASSEMBLED}, pieces=pieces)

    def nul_bytes(self, way: int | None = None) -> Request:
        way = self.rng.randrange(4) if way is None else way
        if way == 0:  # a raw NUL inside a JSON string
            data = event(b'{"choices":[{"index":0,"delta":{"content":"a\x00b"}}]}') + DONE
            intended = {"malformed_chunk"}
        elif way == 1:  # escaped NULs in identity and arguments: text like any other
            data = body(chunk(call(0, "call_\u0000", "get_\u0000weather", '{"a":"\u0000"}')),
                        chunk(finish="tool_calls"))
            intended = {ASSEMBLED}
        elif way == 2:  # NUL lines and NULs in comments: not SSE fields
            data = b"\x00\x00\n: \x00\n" + good_body()
            intended = {ASSEMBLED}
        else:  # nothing but NULs
            data = b"\x00" * self.rng.randint(1, 5000)
            intended = {"stream_closed"}
        return self.simple(f"nul_bytes.{way}", data, intended)

    def missing_identity(self) -> Request:
        data = self.rng.choice([
            body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls")),
            body(chunk(call(0, "", "get_weather", "{}")), chunk(finish="tool_calls")),
            body(chunk(call(0, "call_m", None, "{}")), chunk(finish="tool_calls")),
        ])
        return self.simple("missing_identity", data, {"missing_identity"})

    def unknown_tool(self) -> Request:
        tools = self.rng.choice([b"search,read_file", b"", b"get_weather\xff", b",,, ,"])
        return self.simple("unknown_tool", good_body(), {"unknown_tool"}, tools=tools)

    def stream_closed(self) -> Request:
        data = good_body()[:-len(DONE)]
        return self.simple("stream_closed", data, {"stream_closed"})

    # -- chunk-seq kinds -------------------------------------------------------------------

    def seq_malformed(self, seq: bytes | str | None = "random") -> Request:
        """One message with the whole body and a chunk-seq that breaks the contract."""
        if seq == "random":
            seq = self.rng.choice([*BAD_SEQS, b"<missing>"])
        assert not isinstance(seq, str)
        request_id, session = self.ids("seq_malformed")
        msg = self.messages(request_id.encode(), session.encode(), [good_body()],
                            separate_end=False)[0]
        headers = [(k, v) for k, v in msg.headers if k != H_CHUNK_SEQ]
        if seq != b"<missing>":
            headers.insert(1, (H_CHUNK_SEQ, seq))
        return self.request(
            "seq_malformed", session, [Message(msg.key, msg.value, tuple(headers))],
            Outcome("malformed_message", frozenset({"malformed_message"}), request_id, session),
            note=repr(seq)[:40])

    def seq_disorder(self, way: str | None = None) -> Request:
        """Sound seq values in an order the contract dead-letters (or skips)."""
        way = way or self.rng.choice(SEQ_DISORDER_WAYS)
        request_id, session = self.ids(f"seq.{way}")
        data = good_body()
        pieces = cut(data, iter(lambda: self.rng.randint(40, 110), None))
        msgs = self.messages(request_id.encode(), session.encode(), pieces)
        n = len(msgs)
        assert n >= 4
        seqs: list[bytes] = [str(i).encode() for i in range(n)]
        order = list(range(n))
        intended = {"sequence_gap"}
        expected: Outcome | None = None
        if way == "gap":
            del order[self.rng.randrange(1, n - 1)]  # a later message shows the gap
        elif way == "starts_at_1":
            seqs = [str(i + 1).encode() for i in range(n)]
        elif way == "swapped":
            i = self.rng.randrange(0, n - 1)
            order[i], order[i + 1] = order[i + 1], order[i]
        elif way == "repeat_then_gap":
            i = self.rng.randrange(1, n - 2)  # i + 2 exists, and shows the gap
            order = [*order[:i + 1], i, *order[i + 2:]]
        elif way == "max_first":
            seqs[0] = str(MAX_CHUNK_SEQ).encode()
        elif way == "leading_zeros":
            seqs = [str(i).zfill(self.rng.randint(2, 10)).encode() for i in range(n)]
            intended = {ASSEMBLED}
        else:  # repeated: replays with other bytes are skipped, the first copy counts
            intended = {ASSEMBLED}
            expected = self.body_outcome(request_id, session, [m.value for m in msgs],
                                         intended)
        out: list[Message] = []
        for i in order:
            m = msgs[i]
            headers = tuple((k, seqs[i] if k == H_CHUNK_SEQ else v) for k, v in m.headers)
            out.append(Message(m.key, m.value, headers))
            if way == "repeated" and i < n - 1 and self.rng.random() < 0.5:
                junk = self.rng.randbytes(self.rng.randint(0, 50))
                out.append(Message(m.key, junk, tuple(h for h in headers if h[0] != H_END)))
        if expected is None:
            applied = [msgs[i].value for i in range(n)] if intended == {ASSEMBLED} else []
            expected = (self.body_outcome(request_id, session, applied, intended)
                        if applied else
                        Outcome("sequence_gap", frozenset(intended), request_id, session))
        return self.request(f"seq.{way}", session, out, expected)

    # -- envelope kinds (headers and keys) -------------------------------------------------

    def no_request_id(self, way: str | None = None) -> Request:
        """A message without a usable request-id: a malformed_message found by its value."""
        way = way or self.rng.choice(NO_ID_WAYS)
        _, session = self.ids(f"request_id.{way}")
        tag = f"tag {self.count} {self.seed}".encode()
        value = event({"tag": tag.decode()})
        msg = self.messages(b"x", session.encode(), [value], separate_end=False)[0]
        headers = [h for h in msg.headers if h[0] != H_REQUEST_ID]
        raw_id: bytes | None = {"empty": b"", "invalid_utf8": b"req-\xff" + tag,
                                "too_long": b"r" * (MAX_ID_BYTES + 1), "null": None,
                                "missing": b""}[way]
        if way != "missing":
            headers.insert(0, (H_REQUEST_ID, raw_id))
        return self.request(
            f"request_id.{way}", session, [Message(msg.key, value, tuple(headers))],
            Outcome("malformed_message", frozenset({"malformed_message"}), None, session,
                    raw=value))

    def bad_envelope(self, way: str | None = None) -> Request:
        """A key or header the contract refuses, with a usable request id."""
        way = way or self.rng.choice(BAD_ENVELOPE_WAYS)
        request_id, session = self.ids(way)
        key = session.encode()
        provider, model, tools = b"p", b"m", None
        if way == "key_invalid_utf8":
            key, session = b"s-\xff\xfe" + request_id.encode(), request_id
        elif way == "key_too_long":
            key, session = b"k" * (MAX_ID_BYTES + 1), request_id
        elif way == "provider_too_long":
            provider = b"p" * (MAX_ID_BYTES + 1)
        elif way == "model_too_long":
            model = "é".encode() * (MAX_ID_BYTES // 2 + 1)
        else:
            tools = b"t," * (MAX_TOOLS_BYTES // 2 + 1)
        msgs = self.messages(request_id.encode(), key, [good_body()], provider=provider,
                             model=model, tools=tools, separate_end=False)
        return self.request(way, key, msgs, Outcome(
            "malformed_message", frozenset({"malformed_message"}), request_id, session))

    def sound_envelope(self, way: str | None = None) -> Request:
        """Odd but contract-abiding keys and headers: the response is assembled. A provider
        or model header with a null value (Kafka allows it) gives what an absent one gives:
        the contract's "when absent the record says null" and "when absent or empty the
        model the chunks name is used". (A null declared-tools is left out: it may be read
        as absent, skipping the check, or as empty, declaring no tool.)"""
        way = way or self.rng.choice(SOUND_ENVELOPE_WAYS)
        request_id, session = self.ids(way)
        key: bytes | None = session.encode()
        provider: bytes | None = b"p"
        model: bytes | None = b"m"
        extra: list[Header] = []
        end = b"eof"
        pieces: list[bytes | None] = list(self.slices(good_body()))
        if way in ("key_empty", "key_none"):
            key, session = (b"" if way == "key_empty" else None), request_id
        elif way == "key_at_limit":
            key = ("ключ" + request_id).encode()
            key += b"k" * (MAX_ID_BYTES - len(key))
            session = key.decode()
        elif way == "request_id_at_limit":
            request_id = request_id + "·" * ((MAX_ID_BYTES - len(request_id)) // 2)
            request_id += "x" * (MAX_ID_BYTES - len(request_id.encode()))
        elif way == "request_id_nul":
            request_id += "\x00nul"
        elif way == "provider_invalid_utf8":
            provider = b"prov\xff\xfe"
        elif way == "provider_empty":
            provider = b""
        elif way == "model_empty":
            model = b""
        elif way == "many_unknown_headers":
            extra = [(f"x-junk-{i}", self.rng.randbytes(8)) for i in range(300)]
            extra += [("Request-Id", b"other"), ("chunk-seq ", b"7"), ("", b"")]
        elif way == "null_value_end":
            pieces.append(None)
        elif way == "end_cancelled_after_done":
            end = b"cancelled"
        assert len(request_id.encode()) <= MAX_ID_BYTES
        msgs = self.messages(request_id.encode(), key, pieces, provider=provider, model=model,
                             end=end, extra=extra, separate_end=False)
        if way == "provider_empty":
            provider = None  # an empty provider header counts as absent: the record says null
        if way.endswith("_null"):
            name = H_PROVIDER if way == "provider_null" else H_MODEL
            msgs = nulled(msgs, name)
            provider, model = (None, model) if name == H_PROVIDER else (provider, None)
        outcome = self.body_outcome(request_id, session, [m.value for m in msgs], {ASSEMBLED},
                                    provider=provider, model=model)
        route = key or request_id.encode()
        return self.request(way, route, msgs, outcome)

    def end_marker(self, way: str | None = None) -> Request:
        """The end-of-stream header: unknown values, early ends, give-ups before [DONE]."""
        way = way or self.rng.choice(END_WAYS)
        request_id, session = self.ids(f"end.{way}")
        data = good_body()
        marker: bytes | None = {"unknown": self.rng.choice([b"done", b"EOF", b"eof ", b"end"]),
                                "empty": b"", "invalid_utf8": b"eof\xff", "null": None,
                                "error_before_done": b"error",
                                "cancelled_before_done": b"cancelled"}.get(way, b"eof")
        if way in ("error_before_done", "cancelled_before_done"):
            data = data[:self.rng.randint(1, data.index(DONE))]
        pieces = cut(data, iter(lambda: self.rng.randint(20, 120), None))
        if way == "on_a_middle_message":
            k = self.rng.randrange(0, len(pieces) - 1)
            while b"[DONE]" in b"".join(pieces[:k + 1]):
                k -= 1
            msgs = self.messages(request_id.encode(), session.encode(), pieces, end=None)
            head = [*msgs[k].headers, (H_END, b"eof")]
            msgs[k] = Message(msgs[k].key, msgs[k].value, tuple(head))
            outcome = self.body_outcome(request_id, session, pieces[:k + 1],
                                        {"stream_closed"})
            return self.request(f"end.{way}", session, msgs, outcome)
        msgs = self.messages(request_id.encode(), session.encode(), pieces,
                             end=b"eof" if marker is None else marker, separate_end=False)
        if marker is None:  # the header with a null value
            msgs = nulled(msgs, H_END)
        reason = ("stream_closed" if way.endswith("before_done") else "malformed_message")
        return self.request(f"end.{way}", session, msgs,
                            Outcome(reason, frozenset({reason}), request_id, session))

    def abandoned(self, way: str | None = None) -> Request:
        """No end marker ever comes (or every chunk after the first is a replay of it): the
        sweeper decides the response one TTL after its last chunk (the worker under test
        must run with a short ``TOOLWIRE_STREAM_TTL``)."""
        way = way or self.rng.choice(ABANDON_WAYS)
        request_id, session = self.ids(f"abandoned.{way}")
        data = good_body()
        intended = {"stream_abandoned"}
        if way == "mid_body":
            data = data[:self.rng.randint(1, data.index(DONE))]
        elif way == "after_done":
            intended = {ASSEMBLED}
        elif way == "after_failure":
            data = event(wrong_type_chunk("delta", 5)) + data
            intended = {"malformed_chunk"}
        pieces = cut(data, iter(lambda: self.rng.randint(30, 120), None))
        if way == "seq_all_zero":
            # Every message a replay of the first: skipped (the end marker is left out, since
            # an end marker on a replay of the last applied seq decides the response).
            msgs = self.messages(request_id.encode(), session.encode(), pieces, end=None,
                                 seqs=[b"0"] * len(pieces))
            applied = pieces[:1]
        else:
            msgs = self.messages(request_id.encode(), session.encode(), pieces, end=None)
            applied = pieces
        if intended == {"stream_abandoned"}:
            outcome = Outcome("stream_abandoned", frozenset(intended), request_id, session)
            assert b"[DONE]" not in b"".join(applied)
        else:
            outcome = self.body_outcome(request_id, session, applied, intended)
        return self.request(f"abandoned.{way}", session, msgs, outcome)

    def quarantine(self, way: str | None = None) -> Request:
        """Keys: a dead letter (or a malformed message) quarantines its session, and the next
        sound response of that session is held as session_quarantined."""
        way = way or self.rng.choice(["after_dead_letter", "after_malformed_message"])
        first_id, session = self.ids(f"quarantine.{way}")
        second_id = first_id + ".next"
        key = session.encode()
        if way == "after_dead_letter":
            broken = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))
            first = self.messages(first_id.encode(), key, self.slices(broken))
            first_outcome = self.body_outcome(first_id, session, [m.value for m in first],
                                              {"missing_identity"})
        else:
            msg = self.messages(first_id.encode(), key, [good_body()], separate_end=False)[0]
            first = [Message(key, msg.value, tuple(
                (k, b"\xc2\xb2" if k == H_CHUNK_SEQ else v) for k, v in msg.headers))]
            first_outcome = Outcome("malformed_message", frozenset({"malformed_message"}),
                                    first_id, session)
        second = self.messages(second_id.encode(), key, self.slices(good_body()))
        held = self.body_outcome(second_id, session, [m.value for m in second], {ASSEMBLED})
        return self.request(f"quarantine.{way}", session, [*first, *second], first_outcome, Outcome(
            "session_quarantined", frozenset({"session_quarantined"}), second_id, session,
            held=held.record))

    def control(self, way: str | None = None) -> Request:
        """Gateways must not set toolwire-control; such messages are not chunks, publish
        nothing and must not hurt the worker."""
        way = way or self.rng.choice(["unknown", "sweep_garbage", "sweep_many"])
        request_id, session = self.ids(f"control.{way}")
        value = {"unknown": b"x", "sweep_garbage": self.rng.randbytes(30),
                 "sweep_many": orjson.dumps({"requests": [f"nope-{i}" for i in range(5000)]})
                 }[way]
        control = b"sweep" if way.startswith("sweep") else b"r\xc3\xa9init\xff"
        msg = Message(session.encode(), value, ((H_REQUEST_ID, request_id.encode()),
                                                (H_CHUNK_SEQ, b"0"), (H_CONTROL, control)))
        return self.request(f"control.{way}", session, [msg])

    # -- catalogue ---------------------------------------------------------------------------

    def catalogue(self) -> list[Request]:
        """Every hostile kind at least once (every variant of the enumerable ones)."""
        out: list[Request] = []
        for field_name, values in WRONG_TYPES.items():
            out += [self.wrong_type(field_name, v) for v in values]
        out += [self.seq_malformed(s) for s in [*BAD_SEQS, b"<missing>"]]
        out += [self.no_request_id(w) for w in NO_ID_WAYS]
        out += [self.bad_envelope(w) for w in BAD_ENVELOPE_WAYS]
        out += [self.sound_envelope(w) for w in SOUND_ENVELOPE_WAYS]
        out += [self.end_marker(w) for w in END_WAYS]
        if self.abandon:
            out += [self.abandoned(w) for w in ABANDON_WAYS]
        out += [self.deep_usage(d) for d in (300, ORJSON_WRITE_DEPTH)]
        out += [self.seq_disorder(w) for w in SEQ_DISORDER_WAYS]
        out += [self.deep_unknown_field(d) for d in DELTAS_NEXT_TO_DEEP]
        out += [self.line_too_long(w) for w in range(3)]
        out += [self.arguments_too_long(w) for w in range(3)]
        out += [self.too_many_calls(w) for w in range(2)]
        out += [self.invalid_utf8(w) for w in range(4)]
        out += [self.nul_bytes(w) for w in range(4)]
        out += [self.quarantine(w) for w in ("after_dead_letter", "after_malformed_message")]
        out += [self.control(w) for w in ("unknown", "sweep_garbage", "sweep_many")]
        out += [self.response_too_long(), self.record_too_large(),
                self.many_tiny_fragments(), self.many_tiny_fragments(over=True)]
        enumerated = {Generator.wrong_type, Generator.seq_malformed, Generator.no_request_id,
                      Generator.bad_envelope, Generator.sound_envelope, Generator.end_marker,
                      Generator.abandoned, Generator.deep_usage, Generator.seq_disorder,
                      Generator.deep_unknown_field, Generator.line_too_long,
                      Generator.arguments_too_long, Generator.too_many_calls,
                      Generator.invalid_utf8, Generator.nul_bytes, Generator.quarantine,
                      Generator.control}
        out += [make(self) for make in FILL if make not in enumerated]
        return out

    def hostile(self, budget: int) -> list[Request]:
        """The catalogue, then random hostile requests until ``budget`` messages."""
        out = self.catalogue()
        fill = [make for make in FILL if self.abandon or make is not Generator.abandoned]
        while sum(len(r.messages) for r in out) < budget:
            out.append(self.rng.choice(fill)(self))
        return out

    def valid(self, budget: int) -> list[Request]:
        """Corpus captures (strict ones left out: strict is a worker setting) in random
        slicings and sound envelopes, until ``budget`` messages; each with the record
        :func:`toolwire.core.assemble` gives."""
        usable = [c for c in CAPTURES if not c.options.strict]
        out: list[Request] = []
        total = 0
        while total < budget:
            request = self.valid_request(self.rng.choice(usable))
            out.append(request)
            total += len(request.messages)
        return out

    def valid_request(self, capture: Capture) -> Request:
        request_id, session = self.ids("valid")
        request_id += "." + capture.name
        tools = (None if capture.options.declared_tools is None
                 else ",".join(sorted(capture.options.declared_tools)).encode())
        provider = self.rng.choice([b"deepseek", b"vllm", b"opencode-go"])
        msgs = self.messages(request_id.encode(), session.encode(), self.slices(capture.body),
                             provider=provider, model=b"model-x", tools=tools)
        record = assemble(capture.body, Options(declared_tools=capture.options.declared_tools,
                                                limits=LIMITS),
                          Provenance(request_id, session, provider.decode(), "model-x"))
        reason = str(dict(record).get("reason", ASSEMBLED))
        outcome = outcome_of(record, request_id, session, frozenset({reason}))
        return self.request("valid", session, msgs, outcome, hostile=False,
                            note=capture.name)


#: Kinds drawn at random to fill the budget (the heavy ones appear once, in the catalogue).
FILL: Final[tuple[Callable[[Generator], Request], ...]] = (
    Generator.random_bytes, Generator.random_bytes_in_data, Generator.truncated_json,
    Generator.truncated_body, Generator.wrong_type, Generator.identity_wrong_type,
    Generator.ignored_wrong_types, Generator.line_too_long, Generator.arguments_too_long,
    Generator.too_many_calls, Generator.too_many_choices, Generator.deep_unknown_field,
    Generator.deep_beyond_parser, Generator.deep_usage, Generator.invalid_utf8,
    Generator.invalid_utf8_ignored, Generator.utf8_split, Generator.nul_bytes,
    Generator.missing_identity, Generator.unknown_tool, Generator.stream_closed,
    Generator.seq_malformed, Generator.seq_disorder, Generator.no_request_id,
    Generator.bad_envelope, Generator.sound_envelope, Generator.end_marker,
    Generator.quarantine, Generator.control, Generator.abandoned,
)


def outcome_of(decided: Mapping[str, Any], request_id: str, session: str,
               intended: frozenset[str]) -> Outcome:
    """The outcome of a decided record as the pipeline publishes it: an assembled record
    that cannot be written as JSON, or that does not fit one output message, is an
    ``oversize`` dead letter (the record is then not known in advance)."""
    record = dict(decided)
    if record["outcome"] == "assembled":
        try:
            value = orjson.dumps(record)
        except TypeError:  # orjson.JSONEncodeError: nested deeper than orjson writes
            return Outcome("oversize", intended, request_id, session)
        # Headers (request-id, idempotency-key, outcome) and Kafka's framing: ~1 KB at most.
        if len(value) + len(session.encode()) + len(request_id.encode()) + 1024 \
                > MAX_RECORD_BYTES:
            return Outcome("oversize", intended, request_id, session)
        return Outcome(ASSEMBLED, intended, request_id, session, record=record)
    return Outcome(record["reason"], intended, request_id, session, record=record)


def disagreements(requests: Iterable[Request]) -> list[str]:
    """Outcomes where the core's reason is not one the contract names for that kind."""
    return [f"{r.kind} {o.request_id or o.raw!r}: core says {o.reason}, "
            f"contract says {sorted(o.intended)}"
            for r in requests for o in r.outcomes if o.reason not in o.intended]


def interleave(rng: random.Random, requests: Sequence[Request]
               ) -> list[tuple[Request, Message]]:
    """All messages, each request's in order, requests mixed at random (a uniform merge)."""
    slots = [i for i, r in enumerate(requests) for _ in r.messages]
    rng.shuffle(slots)
    positions = [0] * len(requests)
    out = []
    for i in slots:
        out.append((requests[i], requests[i].messages[positions[i]]))
        positions[i] += 1
    return out


def plan(seed: int, messages: int, *, abandon: bool = True
         ) -> tuple[list[Request], list[tuple[Request, Message]]]:
    """Hostile and valid requests of about ``messages`` messages in all (at least the whole
    catalogue), 60 % hostile, interleaved."""
    gen = Generator(seed, abandon=abandon)
    hostile = gen.hostile(messages * 6 // 10)
    valid = gen.valid(max(messages - sum(len(r.messages) for r in hostile), 20))
    requests = hostile + valid
    return requests, interleave(gen.rng, requests)
