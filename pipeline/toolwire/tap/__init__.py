"""Getting the bytes in: what a client-side tap needs to publish a response body as the
chunks topic expects it (issue 21).

- :mod:`._decoding`: a body's ``Content-Encoding`` decoded incrementally, one persistent
  decoder per stream, within a bound;
- :mod:`._tee`: tee transports for httpx2 and httpx clients, sync and async, and the same tee
  as a response event hook, which push every streamed response to the chunks topic as the
  client reads it (:class:`Httpx2TeeTransport`, :class:`HttpxTeeTransport`, :class:`TeeHook`);
- :mod:`._proxy`: the tee proxy behind ``toolwire tap serve``, for every other client
  (:class:`TeeProxy`, its ``--upstream`` routes read by :func:`parse_upstreams`).

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
from toolwire.tap._proxy import TeeProxy, Upstream, parse_upstreams
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
           "DecodingError", "Httpx2TeeTransport", "HttpxTeeTransport", "StreamOpener", "Tap",
           "Tee", "TeeHook", "TeeProxy", "Upstream", "decoder_for", "parse_codings",
           "parse_upstreams", "request_fields", "wire_of"]
