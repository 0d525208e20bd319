"""AWS event-stream framing (``application/vnd.amazon.eventstream``: Bedrock's streams).

A body is messages back to back, nothing between them. One message, big-endian throughout::

    total length u32 | headers length u32 | prelude CRC u32 | headers | payload | message CRC u32

The prelude CRC is the CRC-32 (zlib's) of bytes 0-7, the message CRC that of every byte
before it; :data:`OVERHEAD` (16) bytes are neither headers nor payload. A header is a name
(u8 length, UTF-8), a value type (u8) and its value (:data:`HeaderValue`: types 0/1 bool,
2/3/4/5 signed byte/short/int/long, 6 byte array and 7 string with a u16 length, 8 timestamp in
ms, 9 UUID). An event is one message: :class:`EventMessage`, its payload with its headers.

**The invariant** every framer keeps: the same messages, and the same error, however the body
is sliced (a slice may end anywhere, even one byte at a time), because where a proxy or the
network cut a body is noise. The cost of a slice is proportional to the slice: only the
unfinished message is held between slices, in one ``bytearray`` that grows by appending and is
parsed only once it holds what the next step needs (12 bytes for a prelude, then the whole
message), so a 4 MiB message arriving a byte at a time is linear, not quadratic. A slice of
whole messages is read in place (``struct.unpack_from``, CRCs over ``memoryview`` slices): no
loop runs per byte.

**What is checked, and why.** Both CRCs, as botocore does: a flipped bit in a tool call's
arguments must not reach an executor. The prelude CRC as soon as a message's first 12 bytes are
held, before waiting for the rest (a damaged length would otherwise have the framer wait for,
and hold, a message that never comes); then the lengths (a total under 16, headers longer than
the message leaves them, headers over botocore's 128 KiB); then the bound: a message longer
than ``max_line_bytes`` raises :class:`~toolwire.core.framing.LineOversize` at its prelude,
with the messages before it, never after buffering it. The message CRC once the whole message
is held; then its headers: one running past the headers section, an unknown value type, a
duplicate name (botocore's ``DuplicateHeader``), a name or string value that is not UTF-8.
Each is a :class:`MalformedMessage` (a :class:`~toolwire.core.errors.MalformedChunk`) whose
detail names the message by its ordinal (1-based, from the body's start) and its offset in the
body, and says what is wrong; like ``LineOversize`` it carries the messages completed before it
in the same slice (``events``), so that where the slice ended does not decide whether they are
read. After either, nothing more is framed: any later input raises the same again.

**A JSON body.** A request refused before the stream begins gets an ordinary JSON body with a
4xx/5xx status (``{"message":"The provided model identifier is invalid."}``). The rule, the
simplest that gives one answer however the body is sliced: the body's *first byte* decides.
An event-stream body opens with a message's total length, whose first byte is 0x00 or 0x01 (a
message is far under 32 MiB); a first byte that is JSON whitespace, ``{`` or ``[`` would be a
message of over 150 MiB, so such a body is not event-stream and is not framed as one. The
framer reads on to its first non-whitespace byte and raises there, before any 12 bytes: if
that byte is ``{`` or ``[``, the detail says the body is JSON and
:attr:`~toolwire.core.framing.EventFramer.json_body` is set to it; otherwise the detail says
the body opens with whitespace. Until that byte comes, the whitespace is held (at most
``max_line_bytes`` of it) and is what ``finish`` gives back. A body whose first byte is
anything else is framed as messages and fails, if it does, on its prelude CRC.

:meth:`EventStreamFramer.finish` is ``None`` when the body ended between messages, else the
bytes of the message it ended inside: the body was cut short, which the wire reports
(botocore drops those bytes silently; a response missing its end must not look complete).

After :meth:`~toolwire.core.framing.EventFramer.close` what follows is framed only to be
counted: the first damaged message ends the count (it is not read, so it is no dead letter),
as an overlong one does.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Mapping
from typing import Final, NoReturn

from toolwire.core.framing._base import EventFramer, FramingDamage, LineOversize

__all__ = ["MAX_HEADERS_BYTES", "OVERHEAD", "EventMessage", "EventStreamFramer", "HeaderValue",
           "MalformedMessage", "encode_message", "error", "event", "exception"]

#: A header value as the framer gives it: ``bool`` (types 0/1), ``int`` (byte, short, int,
#: long, and a timestamp in ms since the epoch), ``bytes`` (a byte array, and a UUID's 16
#: bytes), ``str`` (a string).
HeaderValue = bool | int | bytes | str

#: Bytes of a message that are not headers or payload: the prelude (total length, headers
#: length, prelude CRC) and the message CRC.
OVERHEAD: Final = 16


class EventMessage(bytes):
    """The payload of one event-stream message, with its headers (``.headers``).

    A ``bytes`` subclass, as :class:`~toolwire.core.framing.NamedEvent` is: the wire reads
    the payload as any event's data, and the headers beside it. orjson reads ``bytes``
    itself, not a subclass: a wire decodes ``bytes(message)``.
    """

    headers: dict[str, HeaderValue]

    def __new__(cls, payload: bytes, headers: dict[str, HeaderValue]) -> EventMessage:
        message = super().__new__(cls, payload)
        message.headers = headers
        return message

    def __repr__(self) -> str:
        return f"EventMessage({bytes(self)!r}, {self.headers!r})"

    def header(self, name: str) -> str | None:
        """A string header's value (``:event-type``, ``:message-type``...), else ``None``."""
        value = self.headers.get(name)
        return value if type(value) is str else None


def _encode_header(name: str, value: HeaderValue) -> bytes:
    key = name.encode()
    head = struct.pack(">B", len(key)) + key
    if value is True:
        return head + b"\x00"
    if value is False:
        return head + b"\x01"
    if type(value) is int:
        return head + b"\x04" + struct.pack(">i", value)
    if type(value) is bytes:
        return head + b"\x06" + struct.pack(">H", len(value)) + value
    text = str(value).encode()
    return head + b"\x07" + struct.pack(">H", len(text)) + text


def encode_message(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One message as AWS writes it (headers in the order given; ``int`` as a 4-byte int):
    for captures, demo samples, tests and benchmarks."""
    encoded = b"".join(_encode_header(name, value) for name, value in headers.items())
    total = OVERHEAD + len(encoded) + len(payload)
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + encoded + payload
    return body + struct.pack(">I", binascii.crc32(body) & 0xFFFFFFFF)


def event(event_type: str, payload: bytes) -> bytes:
    """An ``event`` message as Bedrock sends it (``:event-type``, ``:content-type``
    ``application/json``, ``:message-type`` ``event``)."""
    return encode_message({":event-type": event_type, ":content-type": "application/json",
                           ":message-type": "event"}, payload)


def exception(exception_type: str, payload: bytes) -> bytes:
    """An ``exception`` message as Bedrock sends it (its payload is JSON with a message)."""
    return encode_message({":exception-type": exception_type,
                           ":content-type": "application/json",
                           ":message-type": "exception"}, payload)


def error(code: str, message: str) -> bytes:
    """An ``error`` message (code and message in headers, an empty payload)."""
    return encode_message({":error-code": code, ":error-message": message,
                           ":message-type": "error"}, b"")


#: botocore's bound on a message's headers (``InvalidHeadersLength``).
MAX_HEADERS_BYTES: Final = 128 * 1024
#: A prelude: total length, headers length, prelude CRC.
_PRELUDE: Final = struct.Struct(">III")
_PRELUDE_BYTES: Final = 12
_CRC: Final = struct.Struct(">I")
#: JSON's whitespace: what may come before the ``{`` or ``[`` of a JSON body.
_JSON_SPACE: Final = b" \t\r\n"
#: A first byte that cannot open an event-stream body but may open a JSON one.
_NOT_A_PRELUDE: Final = frozenset(b" \t\r\n{[")
#: How each JSON opening reads, for the dead letter's detail.
_JSON_OPENINGS: Final = {
    b"{": "a JSON object, as an error response's body is",
    b"[": "a JSON array"}
#: Header value types of a fixed size, with how to read them (types 0/1, 6, 7 are apart).
_FIXED: Final[dict[int, tuple[struct.Struct, int]]] = {
    2: (struct.Struct(">b"), 1),  # byte
    3: (struct.Struct(">h"), 2),  # short
    4: (struct.Struct(">i"), 4),  # int
    5: (struct.Struct(">q"), 8),  # long
    8: (struct.Struct(">q"), 8),  # timestamp, ms since the epoch
}
_UUID: Final = 9
_UUID_BYTES: Final = 16


def _crc32(data: bytes | bytearray | memoryview, start: int = 0) -> int:
    return binascii.crc32(data, start) & 0xFFFFFFFF


#: At most this many distinct headers sections are remembered per response (Bedrock sends a
#: handful: one per event type); others are parsed each time.
_KNOWN_SECTIONS: Final = 32


class MalformedMessage(FramingDamage):
    """A damaged event-stream message (or a body that is not event-stream), with the messages
    completed before it in the same slice (:attr:`events`: the wire may have ended the body
    on one of them, ``messageStop``)."""


class EventStreamFramer(EventFramer):
    """Turns body slices into event-stream messages (:class:`EventMessage`), both CRCs
    checked (see the module docstring)."""

    __slots__ = ("_buf", "_failed", "_known", "_max_line", "_need", "_offset", "_opening",
                 "_ordinal")

    name = "aws-eventstream"
    #: A prelude with a valid CRC is no accident: the opening proves the framing.
    proves = True

    def __init__(self, max_line_bytes: int, names: bool = False) -> None:
        super().__init__(max_line_bytes, names)  # headers are always kept: ``names`` is unused
        self._max_line = max_line_bytes
        #: The bytes held of the unfinished message (or, at the body's opening, whitespace).
        self._buf = bytearray()
        #: How many bytes the held message must reach before it is read further: 12 (its
        #: prelude), then its total length. 0 while the body's opening is read, and after a
        #: failure: every slice then takes the slow path.
        self._need = 0
        #: The body's first byte (and, after whitespace, its first other byte) is not seen yet.
        self._opening = True
        #: Messages completed so far: the one being read is ``_ordinal + 1``.
        self._ordinal = 0
        #: Headers sections already read, by their bytes: Bedrock sends the same three
        #: headers on every message of a type, so each section is parsed once per response
        #: (a third of the framing otherwise). The dicts are shared: read them, never write.
        self._known: dict[bytes, dict[str, HeaderValue]] = {}
        #: Where in the body the message being read begins.
        self._offset = 0
        #: What the framer raised (its kind and detail), which any further input raises again:
        #: nothing after damage, or an overlong message, is framed.
        self._failed: tuple[type[MalformedMessage | LineOversize], str] | None = None

    def _frame(self, data: bytes) -> list[bytes]:
        buf = self._buf
        if len(buf) + len(data) < self._need:  # a piece of a message: held, read later
            buf += data
            return []
        events: list[bytes] = []
        try:
            self._read(data, events)
        except (MalformedMessage, LineOversize) as failure:
            failure.events = events
            if self._failed is None:
                self._failed = type(failure), failure.detail
                self._buf = bytearray()
                self._need = 0  # every later slice takes the slow path, which raises again
            if self.closed and type(failure) is MalformedMessage:
                # Counting after the end: damage ends the count, and is no dead letter.
                self.close(count=False)
                return events
            raise
        return events

    def _read(self, data: bytes, events: list[bytes]) -> None:
        """Frame one slice that completes a step (the slow path of :meth:`_frame`)."""
        if self._failed is not None:
            kind, detail = self._failed
            raise kind(detail, events)
        pos = 0
        if self._opening:
            pos = self._open(data)
            if pos < 0:
                return
        buf = self._buf
        size = len(data)
        if buf:  # finish the held message first: its prelude, then its whole
            if self._need == _PRELUDE_BYTES:
                pos = _PRELUDE_BYTES - len(buf)
                buf += data[:pos]
                self._need = self._prelude(buf, 0, events)
            take = min(self._need - len(buf), size - pos)
            buf += data[pos:pos + take]
            pos += take
            if len(buf) < self._need:
                return
            whole = bytes(buf)
            self._buf = bytearray()
            self._scan(whole, 0, events)
        pos = self._scan(data, pos, events)
        if pos < size:
            self._buf += data[pos:]

    def _open(self, data: bytes) -> int:
        """Read the body's opening (see the module docstring): where its first message
        begins in ``data`` (0), or -1 while only whitespace has come."""
        buf = self._buf
        if not buf and data[0] not in _NOT_A_PRELUDE:
            self._opening = False
            self._need = _PRELUDE_BYTES
            return 0
        rest = data.lstrip(_JSON_SPACE)
        if not rest:
            buf += data
            if len(buf) > self._max_line:
                raise MalformedMessage(
                    "the body is not AWS event-stream: it opens with more than "
                    f"{self._max_line} bytes of whitespace")
            return -1
        self._opening = False
        first = rest[:1]
        kind = _JSON_OPENINGS.get(first)
        if kind is not None:
            self.json_body = first.decode()
            raise MalformedMessage(
                f"the body is not AWS event-stream but JSON ({kind}): its first non-blank "
                f"character is {self.json_body!r}")
        raise MalformedMessage(
            "the body is not AWS event-stream: it opens with whitespace, where a message's "
            "total length begins (0x00 or 0x01)")

    def _where(self) -> str:
        return f"event-stream message {self._ordinal + 1} (at byte {self._offset} of the body)"

    def _prelude(self, data: bytes | bytearray, pos: int, events: list[bytes]) -> int:
        """The total length of the message whose prelude is at ``pos``, once its CRC, its
        lengths and the bound are checked."""
        total, headers, crc = _PRELUDE.unpack_from(data, pos)
        if (_crc32(data[pos:pos + 8]) != crc or total < OVERHEAD or headers > total - OVERHEAD
                or headers > MAX_HEADERS_BYTES or total > self._max_line):
            self._reject_prelude(data, pos, events)
        return int(total)

    def _reject_prelude(self, data: bytes | bytearray, pos: int,
                        events: list[bytes]) -> NoReturn:
        """Raise what is wrong with the prelude at ``pos``."""
        total, headers, crc = _PRELUDE.unpack_from(data, pos)
        actual = _crc32(data[pos:pos + 8])
        where = self._where()
        if actual != crc:
            raise MalformedMessage(
                f"{where}: its prelude CRC is 0x{crc:08x} but its first 8 bytes give "
                f"0x{actual:08x} (its lengths were damaged, or the body is not AWS "
                "event-stream)")
        if total < OVERHEAD:
            raise MalformedMessage(
                f"{where}: its total length is {total} bytes, under the {OVERHEAD} of its "
                "prelude and message CRC alone")
        if headers > total - OVERHEAD:
            raise MalformedMessage(
                f"{where}: its headers length ({headers} bytes) does not fit in its total "
                f"length ({total} bytes, {OVERHEAD} of them prelude and message CRC)")
        if headers > MAX_HEADERS_BYTES:
            raise MalformedMessage(
                f"{where}: its headers length ({headers} bytes) is over the "
                f"{MAX_HEADERS_BYTES} bytes (128 KiB) AWS allows")
        raise LineOversize(f"an event-stream message is longer than {self._max_line} bytes",
                           events)

    def _scan(self, data: bytes, pos: int, events: list[bytes]) -> int:
        """Read the whole messages of ``data`` from ``pos`` into ``events``: where the first
        unfinished one begins (its prelude checked if it is all there)."""
        size = len(data)
        view = memoryview(data)
        max_line = self._max_line
        while size - pos >= _PRELUDE_BYTES:
            total, headers, crc = _PRELUDE.unpack_from(data, pos)
            if (_crc32(view[pos:pos + 8]) != crc or total < OVERHEAD
                    or headers > total - OVERHEAD or headers > MAX_HEADERS_BYTES
                    or total > max_line):
                self._reject_prelude(data, pos, events)
            end = pos + total
            if end > size:
                self._need = total
                return pos
            stored = _CRC.unpack_from(data, end - 4)[0]
            actual = _crc32(view[pos + 8:end - 4], crc)  # = crc32 of bytes 0..total-5
            if actual != stored:
                raise MalformedMessage(
                    f"{self._where()}: its message CRC is 0x{stored:08x} but its bytes give "
                    f"0x{actual:08x} (a byte of its headers or payload was damaged)")
            start = pos + _PRELUDE_BYTES
            payload = start + headers
            section = data[start:payload]
            parsed = self._known.get(section)
            if parsed is None:
                parsed = self._headers(data, start, payload) if headers else {}
                if len(self._known) < _KNOWN_SECTIONS:
                    self._known[section] = parsed
            events.append(EventMessage(data[payload:end - 4], parsed))
            self._ordinal += 1
            self._offset += total
            pos = end
        self._need = _PRELUDE_BYTES
        return pos

    def _headers(self, data: bytes, pos: int, end: int) -> dict[str, HeaderValue]:
        """The headers in ``data[pos:end]`` (a message's headers section, its CRC checked)."""
        headers: dict[str, HeaderValue] = {}
        length = end - pos
        index = 0
        while pos < end:
            index += 1
            kind_at = pos + 1 + data[pos]
            if kind_at >= end:
                raise self._header_past(index, length)
            try:
                name = data[pos + 1:kind_at].decode()
            except UnicodeDecodeError:
                raise MalformedMessage(
                    f"{self._where()}: the name of header {index} is not UTF-8") from None
            kind = data[kind_at]
            pos = kind_at + 1
            value: HeaderValue
            if kind == 7 or kind == 6:  # string (all Bedrock sends), byte array
                if pos + 2 > end:
                    raise self._header_past(index, length)
                value_end = pos + 2 + ((data[pos] << 8) | data[pos + 1])
                if value_end > end:
                    raise self._header_past(index, length)
                raw = data[pos + 2:value_end]
                pos = value_end
                if kind == 6:
                    value = raw
                else:
                    try:
                        value = raw.decode()
                    except UnicodeDecodeError:
                        raise MalformedMessage(
                            f"{self._where()}: the string value of header {name!r} is not "
                            "UTF-8") from None
            elif kind <= 1:
                value = kind == 0
            elif kind in _FIXED:
                reader, width = _FIXED[kind]
                if pos + width > end:
                    raise self._header_past(index, length)
                value = reader.unpack_from(data, pos)[0]
                pos += width
            elif kind == _UUID:
                if pos + _UUID_BYTES > end:
                    raise self._header_past(index, length)
                value = data[pos:pos + _UUID_BYTES]
                pos += _UUID_BYTES
            else:
                raise MalformedMessage(
                    f"{self._where()}: header {name!r} has value type {kind}, which is none "
                    "of AWS's 0 to 9")
            if name in headers:
                raise MalformedMessage(f"{self._where()}: header {name!r} appears twice")
            headers[name] = value
        return headers

    def _header_past(self, index: int, length: int) -> MalformedMessage:
        return MalformedMessage(
            f"{self._where()}: header {index} runs past the end of its headers section "
            f"({length} bytes)")

    def finish(self) -> bytes | None:
        """``None`` when the body ended between messages; else the bytes held of the
        message it ended inside (the body was cut short)."""
        if self.closed or not self._buf:
            return None
        return bytes(self._buf)

    def _release(self) -> None:
        self._buf = bytearray()

    def pending(self) -> bool:
        return not self.closed and bool(self._buf)

    @classmethod
    def opens(cls, head: bytes) -> bool | None:
        """Whether a body opening with ``head`` is event-stream: ``False`` as soon as its first
        byte is neither 0x00 nor 0x01 (a message is under 32 MiB), its total length is under
        16 or its headers do not fit; ``True`` once its first 12 bytes are a prelude with a
        valid CRC; ``None`` before that. Reads 12 bytes at most, however long ``head``."""
        size = len(head)
        if not size:
            return None
        if head[0] > 1:
            return False
        if size < 4:
            return None
        total = int.from_bytes(head[:4], "big")
        if total < OVERHEAD:
            return False
        if size < 8:
            return None
        if int.from_bytes(head[4:8], "big") > total - OVERHEAD:
            return False
        if size < _PRELUDE_BYTES:
            return None
        stored: int = _CRC.unpack_from(head, 8)[0]
        return _crc32(head[:8]) == stored

    @staticmethod
    def split(body: bytes) -> list[bytes]:
        """``body`` cut after each message, by its prelude (whose CRC is checked; the message
        CRC is not: this only cuts). Where a prelude is damaged or nonsensical, or the body
        ends inside a message, the rest is one last piece. Never raises."""
        pieces: list[bytes] = []
        pos = 0
        size = len(body)
        while size - pos >= _PRELUDE_BYTES:
            total, headers, crc = _PRELUDE.unpack_from(body, pos)
            if (_crc32(body[pos:pos + 8]) != crc or total < OVERHEAD
                    or headers > total - OVERHEAD or pos + total > size):
                break
            pieces.append(body[pos:pos + total])
            pos += total
        if pos < size:
            pieces.append(body[pos:])
        return pieces
