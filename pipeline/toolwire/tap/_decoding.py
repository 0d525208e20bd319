"""Content decoders for a tee: a body's wire bytes (``Content-Encoding``) in, its bytes out.

A transport sees a response's bytes as they came over the wire: compressed when the server
compressed them (Anthropic sends gzip, OpenRouter br or gzip, and httpx2 asks for zstd on
Python 3.14). The chunks topic holds the body itself, so the tee decodes before it publishes.

Invariants:

- **One decoder per stream, fed in order.** A compressed body is one stream of compressed
  data, not one member per network read: a fresh decoder per read fails on the second read
  (Envoy AI Gateway's bug). So each decoder keeps its state across :meth:`decode` calls, and
  the bytes it returns are the same however the input was sliced.
- **Bounded output.** A few compressed bytes can expand to gigabytes. Every decoder holds its
  total output to ``max_bytes`` and raises :class:`DecodedTooLarge` before it builds more
  than that (zlib and brotli are asked for at most what is left; zstd writes in pieces of
  :data:`PIECE_BYTES` into a sink that stops it), so a hostile body costs a known amount of
  memory.
- **Faults are raised, never swallowed.** Corrupt input raises :class:`DecodingError`; the
  tee ends the stream with ``error`` rather than publish a body it could not read.

The registry, :data:`SUPPORTED_DECODERS`, maps each coding name to its decoder's class, as
httpx's ``_decoders.py`` does; :func:`decoder_for` reads a ``Content-Encoding`` value (a list
of codings, applied in order) and says ``None`` for a coding it does not know, so that the tee
publishes those bytes as they are, with their ``content-encoding`` header, for the worker to
dead-letter by name.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from typing import IO, Any, ClassVar, Final, cast

import brotli
import zstandard

__all__ = ["PIECE_BYTES", "SUPPORTED_DECODERS", "ContentDecoder", "DecodedTooLarge",
           "DecodingError", "decoder_for", "parse_codings"]

#: What a decoder builds at most in one step (zstd's write size; zlib's and brotli's own
#: steps are bounded by what is left of ``max_bytes``).
PIECE_BYTES: Final = 64 * 1024
#: The decoded body a stream may reach by default: the worker's own bound on a response
#: (``TOOLWIRE_MAX_RESPONSE_BYTES``'s default), past which it would be ``oversize`` anyway.
DEFAULT_MAX_BYTES: Final = 16 * 1024 * 1024


class DecodingError(ValueError):
    """The body is not what its ``Content-Encoding`` says (corrupt or cut compressed data)."""


class DecodedTooLarge(DecodingError):
    """The decoded body grew past the decoder's bound."""


class ContentDecoder(ABC):
    """Decodes one body, slice by slice; :meth:`flush` at its end."""

    #: The coding's name (``Content-Encoding`` token).
    name: ClassVar[str]

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.max_bytes = max_bytes
        #: Bytes returned so far.
        self.produced = 0

    @abstractmethod
    def decode(self, data: bytes) -> bytes:
        """The bytes ``data`` completes (possibly none yet)."""

    def flush(self) -> bytes:
        """The body is over: what is left, or :class:`DecodingError` if it was cut short."""
        return b""

    def _room(self) -> int:
        return self.max_bytes - self.produced

    def _count(self, out: bytes) -> bytes:
        self.produced += len(out)
        if self.produced > self.max_bytes:
            raise DecodedTooLarge(f"the decoded {self.name} body is larger than "
                                  f"{self.max_bytes} bytes")
        return out


class IdentityDecoder(ContentDecoder):
    name = "identity"

    def decode(self, data: bytes) -> bytes:
        return self._count(bytes(data))


class _ZlibDecoder(ContentDecoder):
    """zlib's streams (gzip, deflate): asked for at most what is left plus one byte, so a bomb
    stops at the bound."""

    wbits: ClassVar[int]

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(max_bytes)
        self._z: Any = zlib.decompressobj(self.wbits)

    def decode(self, data: bytes) -> bytes:
        out = []
        pending = bytes(data)
        while pending:
            try:
                piece = self._z.decompress(pending, self._room() + 1)
            except zlib.error as exc:
                raise DecodingError(f"invalid {self.name} data: {exc}") from None
            out.append(self._count(piece))
            if self._z.eof:
                pending = self._z.unused_data
                if pending and not self._next_member(pending):
                    break
                if pending:
                    self._z = zlib.decompressobj(self.wbits)
            else:
                pending = self._z.unconsumed_tail
        return b"".join(out)

    def _next_member(self, rest: bytes) -> bool:
        """Whether bytes after the end of the stream start another member (gzip may hold
        several); anything else after the end is an error."""
        raise DecodingError(f"{len(rest)} bytes after the end of the {self.name} data")

    def flush(self) -> bytes:
        if not self._z.eof and (self.produced or self._started()):
            raise DecodingError(f"the {self.name} data ended before its end")
        return b""

    def _started(self) -> bool:
        return False


class GZipDecoder(_ZlibDecoder):
    """``gzip``: one or more gzip members, one after another (RFC 1952 allows several)."""

    name = "gzip"
    wbits = 16 + zlib.MAX_WBITS

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(max_bytes)
        self._seen = False

    def decode(self, data: bytes) -> bytes:
        if data:
            self._seen = True
        return super().decode(data)

    def _next_member(self, rest: bytes) -> bool:
        return True

    def _started(self) -> bool:
        return self._seen


class DeflateDecoder(_ZlibDecoder):
    """``deflate``: the zlib format (RFC 1950), or, as servers often send, raw deflate (RFC
    1951): told by the first bytes, as httpx does."""

    name = "deflate"
    wbits = zlib.MAX_WBITS

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(max_bytes)
        self._head = b""  # the first bytes, until the format is known
        self._known = False

    def decode(self, data: bytes) -> bytes:
        if self._known:
            return super().decode(data)
        self._head += bytes(data)
        if len(self._head) < 2:
            return b""
        self._known = True
        if (self._head[0] & 0x0F != 8 or (self._head[0] << 8 | self._head[1]) % 31
                or self._head[0] >> 4 > 7):
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)  # no zlib header: raw deflate
        head, self._head = self._head, b""
        return super().decode(head)

    def _started(self) -> bool:
        return self._known or bool(self._head)


class BrotliDecoder(ContentDecoder):
    """``br``: asked for at most what is left plus one byte; the rest of a step is drained
    with empty input, as the decoder requires."""

    name = "br"

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(max_bytes)
        self._d = brotli.Decompressor()
        self._seen = False

    def decode(self, data: bytes) -> bytes:
        if data:
            self._seen = True
        out = []
        pending = bytes(data)
        try:
            while True:
                piece = self._d.process(pending, output_buffer_limit=self._room() + 1)
                out.append(self._count(piece))
                pending = b""
                if self._d.can_accept_more_data():
                    break
        except brotli.error as exc:
            raise DecodingError(f"invalid br data: {exc}") from None
        return b"".join(out)

    def flush(self) -> bytes:
        if self._seen and not self._d.is_finished():
            raise DecodingError("the br data ended before its end")
        return b""


class _Sink:
    """Where zstd writes its output, piece by piece: it stops the decoder at the bound."""

    def __init__(self, decoder: ZStandardDecoder) -> None:
        self.decoder = decoder
        self.pieces: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.pieces.append(self.decoder._count(bytes(data)))
        return len(data)


class ZStandardDecoder(ContentDecoder):
    """``zstd``: one or more frames, written out in pieces of :data:`PIECE_BYTES` into a sink
    that counts them (its decompression object has no output bound of its own).

    Its stream writer cannot tell a frame cut short from one still arriving, so a cut zstd
    body is not a :class:`DecodingError` here: it decodes to a body cut short, which the
    worker reads as one (``stream_closed``)."""

    name = "zstd"

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(max_bytes)
        self._sink = _Sink(self)
        # Only ``write`` of the sink is called: the writer neither reads nor closes it.
        self._writer = zstandard.ZstdDecompressor().stream_writer(
            cast(IO[bytes], self._sink), write_size=PIECE_BYTES, write_return_read=True,
            closefd=False)

    def decode(self, data: bytes) -> bytes:
        try:
            self._writer.write(bytes(data))
        except zstandard.ZstdError as exc:
            raise DecodingError(f"invalid zstd data: {exc}") from None
        out, self._sink.pieces = self._sink.pieces, []
        return b"".join(out)


#: Every coding a tee decodes, by its ``Content-Encoding`` name.
SUPPORTED_DECODERS: Final[dict[str, type[ContentDecoder]]] = {
    "identity": IdentityDecoder,
    "gzip": GZipDecoder,
    "x-gzip": GZipDecoder,
    "deflate": DeflateDecoder,
    "br": BrotliDecoder,
    "zstd": ZStandardDecoder,
}


def parse_codings(content_encoding: str | None) -> list[str]:
    """The codings a ``Content-Encoding`` value lists, in the order they were applied
    (lower-cased; ``identity`` and empty items left out)."""
    if not content_encoding:
        return []
    return [c for c in (part.strip().lower() for part in content_encoding.split(","))
            if c and c != "identity"]


class _Chain(ContentDecoder):
    """Several codings: the last one applied is undone first."""

    name = "chain"

    def __init__(self, decoders: list[ContentDecoder], max_bytes: int) -> None:
        super().__init__(max_bytes)
        self._decoders = decoders

    def decode(self, data: bytes) -> bytes:
        for decoder in self._decoders:
            data = decoder.decode(data)
        return self._count(data)

    def flush(self) -> bytes:
        data = b""
        for decoder in self._decoders:
            data = decoder.decode(data) + decoder.flush() if data else decoder.flush()
        return self._count(data)


def decoder_for(content_encoding: str | None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> ContentDecoder | None:
    """The decoder of a body sent with ``content_encoding`` (``None``: a coding no decoder
    reads, whose bytes must go out as they are, with the header)."""
    codings = parse_codings(content_encoding)
    classes = [SUPPORTED_DECODERS.get(c) for c in codings]
    if any(cls is None for cls in classes):
        return None
    decoders = [cls(max_bytes) for cls in reversed(classes) if cls is not None]
    if not decoders:
        return IdentityDecoder(max_bytes)
    if len(decoders) == 1:
        return decoders[0]
    return _Chain(decoders, max_bytes)
