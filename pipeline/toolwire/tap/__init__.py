"""Getting the bytes in: what a client-side tap needs to publish a response body as the
chunks topic expects it (issue 21).

This first part decodes a body's ``Content-Encoding`` incrementally, one persistent decoder
per stream, within a bound (:mod:`._decoding`); the transports and the proxy that tee a
client's streams build on it. Nothing happens at import.
"""

from toolwire.tap._decoding import (
    SUPPORTED_DECODERS,
    ContentDecoder,
    DecodedTooLarge,
    DecodingError,
    decoder_for,
    parse_codings,
)

__all__ = ["SUPPORTED_DECODERS", "ContentDecoder", "DecodedTooLarge", "DecodingError",
           "decoder_for", "parse_codings"]
