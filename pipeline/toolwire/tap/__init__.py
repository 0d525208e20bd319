"""Getting the bytes in: what a client-side tap needs to publish a response body as the
chunks topic expects it (issue 21).

- :mod:`._decoding`: a body's ``Content-Encoding`` decoded incrementally, one persistent
  decoder per stream, within a bound;
- :mod:`._tee`: tee transports for httpx2 and httpx clients, sync and async, and the same tee
  as a response event hook, which push every streamed response to the chunks topic as the
  client reads it (:class:`Httpx2TeeTransport`, :class:`HttpxTeeTransport`, :class:`TeeHook`).

Nothing happens at import.
"""

from toolwire.tap._decoding import (
    SUPPORTED_DECODERS,
    ContentDecoder,
    DecodedTooLarge,
    DecodingError,
    decoder_for,
    parse_codings,
)
from toolwire.tap._tee import (
    SESSION,
    Httpx2TeeTransport,
    HttpxTeeTransport,
    StreamOpener,
    Tap,
    Tee,
    TeeHook,
    request_fields,
    wire_of,
)

__all__ = ["SESSION", "SUPPORTED_DECODERS", "ContentDecoder", "DecodedTooLarge",
           "DecodingError", "Httpx2TeeTransport", "HttpxTeeTransport", "StreamOpener", "Tap", "Tee",
           "TeeHook", "decoder_for",
           "parse_codings", "request_fields", "wire_of"]
