"""The AWS event-stream framer: the same messages and the same error however the body is sliced,
both CRCs and every header rule checked, the bound at the prelude, a JSON body told from its
opening, and the publisher's cut after each message."""

from __future__ import annotations

import binascii
import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.errors import MalformedChunk
from toolwire.core.framing import LineOversize
from toolwire.core.framing.eventstream import (
    MAX_HEADERS_BYTES,
    EventMessage,
    EventStreamFramer,
    HeaderValue,
    MalformedMessage,
    encode_message,
    error,
    event,
    exception,
)

LIMIT = 1 << 20

#: The first message of langchain-aws ``test_agent_loop_streaming[v0].yaml.gz``, as the
#: reference quotes it (``/work/shared/reference/wires-beyond-sse.md``, section 1).
REAL = bytes.fromhex(
    "00 00 00 83 00 00 00 52 16 01 25 f3 0b 3a 65 76 65 6e 74 2d 74 79 70 65 07 00 0c 6d"
    "65 73 73 61 67 65 53 74 61 72 74 0d 3a 63 6f 6e 74 65 6e 74 2d 74 79 70 65 07 00 10"
    "61 70 70 6c 69 63 61 74 69 6f 6e 2f 6a 73 6f 6e 0d 3a 6d 65 73 73 61 67 65 2d 74 79"
    "70 65 07 00 05 65 76 65 6e 74 7b 22 70 22 3a 22 61 62 63 64 65 66 22 2c 22 72 6f 6c"
    "65 22 3a 22 61 73 73 69 73 74 61 6e 74 22 7d 0c d6 29 ac")
REAL_PAYLOAD = b'{"p":"abcdef","role":"assistant"}'
REAL_HEADERS = {":event-type": "messageStart", ":content-type": "application/json",
                ":message-type": "event"}

MESSAGES = [
    REAL,
    event("contentBlockStart", b'{"contentBlockIndex":0,"p":"abc","start":{"toolUse":'
                               b'{"name":"get_weather","toolUseId":"t1"}}}'),
    event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"toolUse":{"input":'
                               b'"{\\"city\\":\\"Paris\\"}"}},"p":"abcdefgh"}'),
    encode_message({}, b""),  # no headers, no payload: 16 bytes
    encode_message({"flag": True, "off": False, "n": -7, "blob": b"\x00\xff"}, b"\x00\x01"),
    event("messageStop", b'{"p":"ab","stopReason":"tool_use"}'),
    exception("throttlingException", b'{"message":"Too many requests"}'),
    error("InternalFailure", "boom"),
]
BODY = b"".join(MESSAGES)


def expected() -> list[tuple[bytes, dict[str, HeaderValue]]]:
    return [(bytes(m), m.headers) for m in EventStreamFramer(LIMIT).feed(BODY)
            if isinstance(m, EventMessage)]


def framed(*slices: bytes, limit: int = LIMIT) -> tuple[list[tuple[bytes, dict[str, HeaderValue]]],
                                                         bytes | None]:
    framer = EventStreamFramer(limit)
    events = [event for piece in slices for event in framer.feed(piece)]
    assert all(type(e) is EventMessage for e in events)
    return [(bytes(e), e.headers) for e in events if isinstance(e, EventMessage)], framer.finish()


def raw_message(headers: bytes, payload: bytes, *, total: int | None = None,
                headers_length: int | None = None) -> bytes:
    """A message built by hand from raw header bytes, with correct CRCs (lengths may lie)."""
    size = 16 + len(headers) + len(payload) if total is None else total
    prelude = struct.pack(">II", size, len(headers) if headers_length is None else headers_length)
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", binascii.crc32(body))


def header(name: bytes, kind: int, value: bytes = b"") -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


def flip(data: bytes, at: int, bit: int = 0) -> bytes:
    return data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:]


def failure(*slices: bytes, limit: int = LIMIT) -> tuple[str, list[bytes]]:
    """The detail of the MalformedChunk the slices raise, with the messages before it (those
    fed before its slice, and those it carries)."""
    framer = EventStreamFramer(limit)
    seen: list[bytes] = []
    with pytest.raises(MalformedMessage) as raised:
        for piece in slices:
            seen += framer.feed(piece)
    assert isinstance(raised.value, MalformedChunk)
    assert raised.value.reason == "malformed_chunk"
    return raised.value.detail, seen + raised.value.events


# --- decoding ------------------------------------------------------------------------------


def test_the_real_bedrock_message_decodes_to_its_headers_and_payload() -> None:
    assert len(REAL) == 131
    assert event("messageStart", REAL_PAYLOAD) == REAL  # the encoder writes it byte for byte
    [message] = EventStreamFramer(LIMIT).feed(REAL)
    assert isinstance(message, EventMessage)
    assert bytes(message) == REAL_PAYLOAD and message.headers == REAL_HEADERS
    assert list(message.headers) == [":event-type", ":content-type", ":message-type"]
    assert message.header(":event-type") == "messageStart"


def test_every_header_type_round_trips() -> None:
    uuid = bytes(range(16))
    raw = b"".join([
        header(b"t", 0), header(b"f", 1),
        header(b"byte", 2, struct.pack(">b", -128)),
        header(b"short", 3, struct.pack(">h", -2)),
        header(b"int", 4, struct.pack(">i", 2**31 - 1)),
        header(b"long", 5, struct.pack(">q", -(2**63))),
        header(b"bytes", 6, struct.pack(">H", 3) + b"\x00\x01\xff"),
        header(b"empty", 6, struct.pack(">H", 0)),
        header(b"str", 7, struct.pack(">H", 6) + "héllo".encode()),
        header(b"ts", 8, struct.pack(">q", 1_700_000_000_123)),
        header(b"uuid", 9, uuid),
        header("名前".encode(), 7, struct.pack(">H", 0)),
    ])
    [message] = EventStreamFramer(LIMIT).feed(raw_message(raw, b"payload"))
    assert isinstance(message, EventMessage) and bytes(message) == b"payload"
    assert message.headers == {"t": True, "f": False, "byte": -128, "short": -2,
                               "int": 2**31 - 1, "long": -(2**63), "bytes": b"\x00\x01\xff",
                               "empty": b"", "str": "héllo", "ts": 1_700_000_000_123,
                               "uuid": uuid, "名前": ""}
    types = {name: type(value) for name, value in message.headers.items()}
    assert types["t"] is bool and types["byte"] is int and types["uuid"] is bytes
    assert message.header("str") == "héllo" and message.header("int") is None


def test_what_the_encoder_writes_decodes_back() -> None:
    headers: dict[str, HeaderValue] = {"a": True, "b": False, "c": 5, "d": b"\x01", "e": "x"}
    [message] = EventStreamFramer(LIMIT).feed(encode_message(headers, b"{}"))
    assert isinstance(message, EventMessage)
    assert message.headers == headers and bytes(message) == b"{}"


# --- the invariant -------------------------------------------------------------------------


def test_the_same_messages_cut_anywhere_into_two() -> None:
    want = expected()
    assert len(want) == len(MESSAGES) and want[0] == (REAL_PAYLOAD, REAL_HEADERS)
    for cut in range(len(BODY) + 1):
        assert framed(BODY[:cut], BODY[cut:]) == (want, None), cut


def test_the_same_messages_one_byte_at_a_time() -> None:
    assert framed(*[BODY[i:i + 1] for i in range(len(BODY))]) == (expected(), None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(BODY)), max_size=20))
def test_the_same_messages_however_the_body_is_sliced(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(BODY)]
    assert framed(*[BODY[a:b] for a, b in itertools.pairwise(points)]) == (expected(), None)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.dictionaries(st.text(min_size=1, max_size=8),
                                          st.one_of(st.booleans(), st.integers(-2**31, 2**31 - 1),
                                                    st.binary(max_size=20),
                                                    st.text(max_size=20)),
                                          max_size=4),
                          st.binary(max_size=60)), min_size=1, max_size=6),
       st.lists(st.integers(0, 2000), max_size=10))
def test_any_messages_any_slicing(messages: list[tuple[dict[str, HeaderValue], bytes]],
                                  cuts: list[int]) -> None:
    body = b"".join(encode_message(h, p) for h, p in messages)
    points = [0, *sorted(c for c in cuts if c <= len(body)), len(body)]
    want = [(p, h) for h, p in messages]
    assert framed(*[body[a:b] for a, b in itertools.pairwise(points)]) == (want, None)


def test_a_megabyte_message_a_byte_at_a_time_is_linear() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    body = event("chunk", payload) + REAL
    framer = EventStreamFramer(2 * LIMIT)
    events: list[bytes] = []
    for i in range(len(body)):
        events += framer.feed(body[i:i + 1])
    assert [bytes(e) for e in events] == [payload, REAL_PAYLOAD]
    assert framer.finish() is None


# --- damage --------------------------------------------------------------------------------

SECOND = len(MESSAGES[0])  # where the second message begins
SECOND_MESSAGE = MESSAGES[1]


@pytest.mark.parametrize(("region", "at", "why"), [
    ("total length", 3, "prelude CRC"),
    ("headers length", 7, "prelude CRC"),
    ("prelude CRC", 9, "prelude CRC"),
])
def test_a_flipped_bit_in_the_prelude_is_caught_at_twelve_bytes(region: str, at: int,
                                                                why: str) -> None:
    damaged = flip(SECOND_MESSAGE, at)
    # Only the second message's first 12 bytes: reported before the message could be whole.
    detail, seen = failure(REAL + damaged[:12])
    assert f"event-stream message 2 (at byte {SECOND} of the body): its {why}" in detail, region
    assert [bytes(e) for e in seen] == [REAL_PAYLOAD]
    for cut in range(1, 12):  # the same however the 12 bytes come
        assert failure(REAL, damaged[:cut], damaged[cut:12])[0] == detail
    assert failure(REAL + damaged)[0] == detail


@pytest.mark.parametrize(("region", "offset"), [
    ("headers", 12 + 5),
    ("payload", len(SECOND_MESSAGE) - 10),
    ("message CRC", len(SECOND_MESSAGE) - 2),
])
def test_a_flipped_bit_in_the_message_is_caught_by_its_crc(region: str, offset: int) -> None:
    body = REAL + flip(SECOND_MESSAGE, offset, 3) + REAL
    detail, seen = failure(body)
    assert detail.startswith(f"event-stream message 2 (at byte {SECOND} of the body): its "
                             "message CRC is 0x"), region
    assert [bytes(e) for e in seen] == [REAL_PAYLOAD]
    for cut in (1, SECOND + 1, SECOND + 12, SECOND + offset, len(body) - 1):
        assert failure(body[:cut], body[cut:])[0] == detail
    # Cut short before its last byte, the damage is not known: the body ends inside it.
    events, last = framed(body[:SECOND + len(SECOND_MESSAGE) - 1])
    assert len(events) == 1 and last is not None


def test_a_flipped_bit_in_the_first_prelude_names_message_one() -> None:
    detail, seen = failure(flip(REAL, 5)[:12])
    assert detail.startswith("event-stream message 1 (at byte 0 of the body): its prelude CRC")
    assert seen == []


@pytest.mark.parametrize(("message", "why"), [
    (raw_message(b"", b"", total=15), "its total length is 15 bytes, under the 16"),
    (raw_message(b"", b"", total=20, headers_length=5), "its headers length (5 bytes) does "
                                                        "not fit in its total length (20 bytes"),
    (raw_message(b"", b"", total=16 + MAX_HEADERS_BYTES + 1,
                 headers_length=MAX_HEADERS_BYTES + 1), "is over the 131072 bytes (128 KiB)"),
])
def test_nonsensical_lengths_are_caught_at_the_prelude(message: bytes, why: str) -> None:
    detail, seen = failure(REAL + message[:12], limit=1 << 24)
    assert detail.startswith(f"event-stream message 2 (at byte {SECOND} of the body): ")
    assert why in detail and len(seen) == 1


@pytest.mark.parametrize(("headers", "why"), [
    (header(b"name", 7, b"\x00\x09abc"), "header 1 runs past the end of its headers section"),
    (header(b"name", 7, b"\x00"), "header 1 runs past"),
    (header(b"a", 0) + header(b"long", 5, b"\x00\x00"), "header 2 runs past"),
    (header(b"u", 9, b"\x00" * 15), "header 1 runs past"),
    (b"\x09abc", "header 1 runs past"),  # the name itself runs past
    (header(b"a", 0) + b"\x01a", "header 2 runs past"),  # a name, no value type
    (header(b"weird", 10), "header 'weird' has value type 10, which is none of AWS's 0 to 9"),
    (header(b"weird", 255), "value type 255"),
    (header(b"dup", 0) + header(b"dup", 7, b"\x00\x01x"), "header 'dup' appears twice"),
    (header(b"\xff\xfe", 0), "the name of header 1 is not UTF-8"),
    (header(b"s", 7, b"\x00\x02\xc3\x28"), "the string value of header 's' is not UTF-8"),
])
def test_a_header_that_breaks_a_rule_is_malformed(headers: bytes, why: str) -> None:
    body = REAL + raw_message(headers, b"{}")
    for cut in (len(body), SECOND + 12, len(body) - 1):
        detail, seen = failure(body[:cut], body[cut:])
        assert detail.startswith(f"event-stream message 2 (at byte {SECOND} of the body): ")
        assert why in detail and [bytes(e) for e in seen] == [REAL_PAYLOAD]


def test_a_malformed_message_carries_the_messages_before_it_and_ends_the_framing() -> None:
    framer = EventStreamFramer(LIMIT)
    with pytest.raises(MalformedMessage) as raised:
        framer.feed(REAL + MESSAGES[1] + flip(REAL, 100) + REAL)
    assert [bytes(e) for e in raised.value.events] == [REAL_PAYLOAD, bytes(expected()[1][0])]
    detail = raised.value.detail
    assert detail.startswith(f"event-stream message 3 (at byte {SECOND + len(MESSAGES[1])} ")
    with pytest.raises(MalformedMessage) as again:  # nothing after it is framed
        framer.feed(REAL)
    assert again.value.detail == detail and again.value.events == []
    assert framer.finish() is None and not framer.pending()


# --- a JSON body ---------------------------------------------------------------------------

JSON_ERROR = b'{"message":"The provided model identifier is invalid."}'


@pytest.mark.parametrize("body", [JSON_ERROR, b" \r\n\t" + JSON_ERROR, b"\n" * 20 + JSON_ERROR,
                                  b"{", b"  []"])
def test_a_json_body_is_told_at_its_first_non_blank_byte(body: bytes) -> None:
    opening = body.lstrip()[:1].decode()
    details = set()
    for cut in range(len(body) + 1):
        framer = EventStreamFramer(LIMIT)
        with pytest.raises(MalformedChunk) as raised:
            framer.feed(body[:cut])
            framer.feed(body[cut:])
        assert framer.json_body == opening
        details.add(raised.value.detail)
    one_by_one = EventStreamFramer(LIMIT)
    with pytest.raises(MalformedChunk) as raised:
        for i in range(len(body)):
            one_by_one.feed(body[i:i + 1])
    details.add(raised.value.detail)
    kind = {"{": "a JSON object, as an error response's body is", "[": "a JSON array"}[opening]
    assert details == {f"the body is not AWS event-stream but JSON ({kind}): its first "
                       f"non-blank character is {opening!r}"}


def test_whitespace_before_anything_else_is_not_event_stream() -> None:
    for body in (b"  " + REAL, b"\n\x00\x00\x00"):
        detail, seen = failure(body[:1], body[1:])
        assert detail.startswith("the body is not AWS event-stream: it opens with whitespace")
        assert seen == []
    framer = EventStreamFramer(LIMIT)  # only whitespace so far: held, a body cut short
    assert framer.feed(b"  \n") == [] and framer.pending() and framer.finish() == b"  \n"
    assert framer.json_body is None
    detail, _ = failure(b" " * 20, b" " * 20, limit=32)
    assert detail == "the body is not AWS event-stream: it opens with more than 32 bytes of " \
                     "whitespace"


def test_a_json_brace_later_in_the_body_is_only_a_bad_prelude() -> None:
    framer = EventStreamFramer(LIMIT)
    with pytest.raises(MalformedChunk) as raised:
        framer.feed(REAL + JSON_ERROR)
    assert "event-stream message 2" in raised.value.detail and framer.json_body is None


# --- the bound -----------------------------------------------------------------------------


def test_an_overlong_message_is_raised_at_its_prelude_with_the_messages_before_it() -> None:
    big = event("chunk", b"x" * 500)
    body = REAL + MESSAGES[2] + big
    limit = len(big) - 1
    for slices in ([body], [body[:SECOND + 3], body[SECOND + 3:]],
                   [body[i:i + 7] for i in range(0, len(body), 7)],
                   [body[:len(body) - len(big) + 12]]):  # only the big message's prelude
        framer = EventStreamFramer(limit)
        seen: list[bytes] = []
        with pytest.raises(LineOversize) as raised:
            for piece in slices:
                seen += framer.feed(piece)
        assert [bytes(e) for e in seen + raised.value.events] == [REAL_PAYLOAD,
                                                                  bytes(expected()[2][0])]
        assert str(raised.value) == f"an event-stream message is longer than {limit} bytes"
        with pytest.raises(LineOversize) as again:  # nothing after it is framed
            framer.feed(REAL)
        assert again.value.events == []
    assert framed(body, limit=len(big))[1] is None  # exactly the bound: within it


def test_a_damaged_prelude_is_malformed_not_overlong() -> None:
    detail, _ = failure(flip(REAL, 1)[:12], limit=20)
    assert "prelude CRC" in detail


# --- the end of the body -------------------------------------------------------------------


def test_finish_gives_the_bytes_of_a_message_the_body_ended_inside() -> None:
    boundary = 0
    for message in MESSAGES:
        for inside in (1, 11, 12, 13, len(message) - 1):
            if inside >= len(message):
                continue
            cut = boundary + inside
            events, last = framed(BODY[:cut])
            assert len(events) == MESSAGES.index(message) and last == BODY[boundary:cut]
            framer = EventStreamFramer(LIMIT)
            for i in range(cut):
                framer.feed(BODY[i:i + 1])
            assert framer.pending() and framer.finish() == BODY[boundary:cut]
            assert framer.finish() == BODY[boundary:cut]  # asking again: the same
        boundary += len(message)
        framer = EventStreamFramer(LIMIT)
        framer.feed(BODY[:boundary])
        assert framer.finish() is None and not framer.pending()
    assert EventStreamFramer(LIMIT).finish() is None


def test_after_close_messages_are_counted_never_read() -> None:
    framer = EventStreamFramer(LIMIT)
    assert len(framer.feed(REAL + MESSAGES[1][:5])) == 1
    framer.close()
    assert framer.feed(MESSAGES[1][5:] + MESSAGES[2][:20]) == []
    assert framer.feed(MESSAGES[2][20:] + MESSAGES[3]) == []
    assert framer.after_close == 3 and framer.finish() is None and not framer.pending()
    # Damage after the end ends the count, and is no dead letter: the rest is not read.
    assert framer.feed(REAL + flip(REAL, 50) + REAL) == []
    assert framer.after_close == 4 and not framer.counting
    assert framer.feed(REAL) == [] and framer.after_close == 4


def test_close_without_count_lets_go() -> None:
    framer = EventStreamFramer(LIMIT)
    framer.feed(REAL[:40])
    framer.close(count=False)
    assert framer.feed(REAL) == [] and framer.after_close == 0
    assert framer.finish() is None and not framer.pending()


def test_an_overlong_message_after_close_ends_the_count() -> None:
    framer = EventStreamFramer(200)
    framer.close()
    framer.feed(REAL + event("chunk", b"x" * 300) + REAL)
    assert framer.after_close == 1 and not framer.counting


# --- split ---------------------------------------------------------------------------------


def test_split_cuts_after_each_message() -> None:
    assert EventStreamFramer.split(BODY) == MESSAGES
    assert EventStreamFramer.split(b"") == []


@pytest.mark.parametrize(("body", "whole"), [
    (BODY[:-1], len(MESSAGES) - 1),  # cut short
    (BODY + b"garbage that is not a message", len(MESSAGES)),
    (BODY[:SECOND] + flip(BODY[SECOND:], 2), 1),  # a damaged prelude
    (BODY[:SECOND] + raw_message(b"", b"", total=10) + REAL, 1),  # a nonsensical length
    (BODY[:SECOND] + raw_message(b"", b"", total=20, headers_length=5) + REAL, 1),
    (BODY[:SECOND] + b"\xff" * 11, 1),  # less than a prelude left
    (b"\x00\x00", 0),
    (JSON_ERROR, 0),
])
def test_split_never_loses_a_byte_and_leaves_the_rest_in_one_piece(body: bytes,
                                                                   whole: int) -> None:
    pieces = EventStreamFramer.split(body)
    assert pieces == [*MESSAGES[:whole], body[sum(map(len, MESSAGES[:whole])):]]
    assert b"".join(pieces) == body


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, len(BODY)))
def test_split_round_trips_any_bytes(noise: bytes, cut: int) -> None:
    body = BODY[:cut] + noise
    pieces = EventStreamFramer.split(body)
    assert b"".join(pieces) == body


# --- opens ---------------------------------------------------------------------------------


def test_opens_says_nothing_then_yes_on_a_valid_body() -> None:
    answers = [EventStreamFramer.opens(BODY[:n]) for n in range(len(BODY))]
    assert answers[:12] == [None] * 12 and set(answers[12:]) == {True}
    assert EventStreamFramer.proves


@pytest.mark.parametrize("head", [b"{", b'{"message":"x"}', b"[", b" ", b"data: {}\n\n",
                                  b"event: x\n", b"\x02", flip(REAL, 9)[:12],
                                  flip(REAL, 3)[:12], raw_message(b"", b"", total=15)[:4],
                                  raw_message(b"", b"", total=20, headers_length=5)[:8]])
def test_opens_rules_out_what_is_not_event_stream(head: bytes) -> None:
    assert EventStreamFramer.opens(head) is False
    assert EventStreamFramer.opens(head + BODY) is False  # more bytes do not change it


def test_the_framer_raises_what_opens_rules_out() -> None:
    for head in (b"{}", b"data: {}\n\n\n\n\n\n", flip(REAL, 9)):
        with pytest.raises(MalformedChunk):
            EventStreamFramer(LIMIT).feed(head)
