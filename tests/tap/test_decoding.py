"""The tap's content decoders: every coding a provider sends, sliced anywhere, gives the body
back byte for byte; corrupt, cut or hostile input is an error, never a crash or a flood."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib
from pathlib import Path

import brotli
import httpx
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.corpus_properties import cuts, slices
from tests.tap.server import Stream, serving
from toolwire.tap import (
    SUPPORTED_DECODERS,
    DecodedTooLarge,
    DecodingError,
    decoder_for,
    parse_codings,
)

CORPORA = Path(__file__).parents[1] / "core"
#: Real bodies of every wire: the corpora's captures.
BODIES = [p.read_bytes() for p in sorted(CORPORA.glob("corpus*/**/*.sse"))]


def raw_deflate(data: bytes) -> bytes:
    z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return z.compress(data) + z.flush()


def zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


#: coding name -> how a server compresses a body with it.
COMPRESS = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstd,
}


def decode(coding: str | None, pieces: list[bytes], max_bytes: int = 1 << 24) -> bytes:
    decoder = decoder_for(coding, max_bytes)
    assert decoder is not None
    return b"".join(decoder.decode(p) for p in pieces) + decoder.flush()


def test_the_corpora_are_there() -> None:
    assert len(BODIES) > 150


def test_every_coding_of_the_registry_is_tested() -> None:
    assert set(SUPPORTED_DECODERS) == {*COMPRESS, "identity"}


@pytest.mark.parametrize("coding", sorted(COMPRESS))
def test_every_body_decodes_whole_and_one_byte_at_a_time(coding: str) -> None:
    for body in BODIES[::7]:
        data = COMPRESS[coding](body)
        assert decode(coding, [data]) == body
        assert decode(coding, [data[i:i + 1] for i in range(len(data))]) == body


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_slicing_of_any_compressed_body_gives_the_body(data: st.DataObject) -> None:
    coding = data.draw(st.sampled_from(sorted(COMPRESS)), label="coding")
    body = data.draw(st.sampled_from(BODIES), label="body")
    compressed = COMPRESS[coding](body)
    pieces = slices(compressed, data.draw(cuts(len(compressed)), label="cuts"))
    assert decode(coding, pieces) == body


def test_raw_deflate_is_read_as_servers_send_it() -> None:
    body = BODIES[0]
    assert decode("deflate", [raw_deflate(body)]) == body
    data = raw_deflate(body)
    assert decode("deflate", [data[:1], data[1:2], data[2:]]) == body


def test_several_members_and_frames_follow_each_other() -> None:
    a, b = BODIES[0], BODIES[1]
    assert decode("gzip", [gzip.compress(a) + gzip.compress(b)]) == a + b
    joined = zstd(a) + zstd(b)
    assert decode("zstd", [joined[:10], joined[10:]]) == a + b


def test_codings_apply_in_order_and_are_undone_in_reverse() -> None:
    body = BODIES[2]
    assert decode("gzip, br", [brotli.compress(gzip.compress(body))]) == body
    assert decode(" GZIP ,identity", [gzip.compress(body)]) == body
    assert parse_codings("gzip, identity, BR") == ["gzip", "br"]


@pytest.mark.parametrize("value", [None, "", "identity", " Identity "])
def test_no_coding_is_the_body_itself(value: str | None) -> None:
    assert decode(value, [b"data: x\n\n", b"data: y"]) == b"data: x\n\ndata: y"


@pytest.mark.parametrize("value", ["compress", "gzip, lzma", "br;q=1", "exi"])
def test_a_coding_no_decoder_reads_has_none(value: str) -> None:
    assert decoder_for(value) is None


@pytest.mark.parametrize("coding", sorted(COMPRESS))
def test_corrupt_data_is_an_error(coding: str) -> None:
    decoder = decoder_for(coding)
    assert decoder is not None
    with pytest.raises(DecodingError):
        decoder.decode(b"\x00\x01 this is no " + coding.encode() + b" data \xff" * 20)
        decoder.flush()


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_body_cut_short_is_an_error_at_its_end(coding: str) -> None:
    data = COMPRESS[coding](BODIES[3] * 4)
    decoder = decoder_for(coding)
    assert decoder is not None
    decoder.decode(data[:len(data) // 2])
    with pytest.raises(DecodingError, match="ended before its end"):
        decoder.flush()


def test_bytes_after_the_end_of_deflate_data_are_an_error() -> None:
    with pytest.raises(DecodingError, match="after the end"):
        decode("deflate", [zlib.compress(b"body") + b"trailing"])


@pytest.mark.parametrize("coding", sorted(COMPRESS))
def test_a_bomb_stops_at_the_bound_without_building_the_body(coding: str) -> None:
    """50 MiB of zeros compress to kilobytes; with a 1 MiB bound the decoder raises, and what it
    held at its peak stays within a few times the bound."""
    bomb = COMPRESS[coding](bytes(50 * 1024 * 1024))
    assert len(bomb) < 300_000
    decoder = decoder_for(coding, max_bytes=1 << 20)
    assert decoder is not None
    tracemalloc.start()
    try:
        with pytest.raises(DecodedTooLarge, match="larger than 1048576 bytes"):
            for i in range(0, len(bomb), 4096):
                decoder.decode(bomb[i:i + 4096])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * (1 << 20), peak


def test_the_bound_is_a_decoded_size_exactly() -> None:
    body = bytes(range(256)) * 64  # 16 KiB
    assert decode("gzip", [gzip.compress(body)], max_bytes=len(body)) == body
    with pytest.raises(DecodedTooLarge):
        decode("gzip", [gzip.compress(body)], max_bytes=len(body) - 1)
    with pytest.raises(ValueError, match="max_bytes"):
        decoder_for("gzip", max_bytes=0)


@pytest.mark.parametrize("coding", [None, "br", "deflate", "gzip", "zstd"])
def test_a_compressed_stream_over_real_http_decodes_as_the_readme_says(
        coding: str | None) -> None:
    """The README's recipe, over a real HTTP server on 127.0.0.1: ``aiter_raw`` gives the
    compressed bytes in network pieces, one decoder per response gives the body back."""
    body = max(BODIES, key=len)
    stream = Stream(body, coding=coding, piece=37)

    async def read(url: str) -> tuple[bytes, bytes]:
        async with httpx.AsyncClient() as client, client.stream(
                "POST", f"{url}/v1/chat/completions", json={"stream": True}) as response:
            decoder = decoder_for(response.headers.get("content-encoding"))
            assert decoder is not None
            raw, out = [], []
            async for piece in response.aiter_raw():
                raw.append(piece)
                out.append(decoder.decode(piece))
            out.append(decoder.flush())
            return b"".join(raw), b"".join(out)

    with serving(stream) as url:
        raw, decoded = asyncio.run(read(url))
    assert decoded == body
    assert raw == stream.wire_bytes()
    assert (raw == body) is (coding is None)
