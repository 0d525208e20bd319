"""Captured bodies published as a gateway would publish them live (``toolwire publish``,
the demo).

The invariants: every capture is read before anything is published, so a typo never leaves
half the files sent; a capture's bytes reach the topic unchanged (:mod:`._slicing`), through
the very :class:`~toolwire.publish.ChunkPublisher` path live traffic takes, so a capture
exercises what production runs; and each run makes new requests (fresh request ids), so that
replaying a capture is a new response rather than a duplicate the pipeline would drop.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolwire.core import Options, new_assembler
from toolwire.core.wires import AUTO, DEFAULT_WIRE
from toolwire.publish._coalescing import DEFAULT_COALESCE_BYTES
from toolwire.publish._publisher import DEFAULT_CONNECT_TIMEOUT, ChunkPublisher, PublishReport
from toolwire.publish._slicing import split_events, split_fixed
from toolwire.stream.messages import RequestMeta


def body_wire(body: bytes) -> str:
    """The wire a captured body is written in, as ``toolwire assemble --wire auto`` tells it
    (the default when nothing does): the header a gateway would have sent with it.

    The assembler's own ``auto`` decides, on the body's first events only, so a capture is
    named by the same rules the offline assembly reads it with — a JSON body that is no SSE
    included (its wire's framing names it; the worker then dead-letters it).
    """
    asm = new_assembler(Options(wire=AUTO))
    for piece in split_events(body):
        asm.feed(piece)
        if asm.wire.name != AUTO or asm.failure is not None:
            break
    return asm.wire.name if asm.wire.name != AUTO else DEFAULT_WIRE


async def _iterate(pieces: Iterable[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def load_captures(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[Path, bytes]]:
    """Read every capture before connecting: a typo must not leave half the files published."""
    return [(Path(p), Path(p).read_bytes()) for p in paths]


def _request_ids(
    files: Sequence[Path], session: str, request: str | None
) -> list[str]:
    if request is not None:
        if len(files) != 1:
            raise ValueError("a request id can only be given for a single capture")
        return [request]
    # Random suffix: replaying the same capture twice must make two requests, not a
    # duplicate that the pipeline's dedupe would swallow.
    return [f"{session}-{f.stem}-{secrets.token_hex(4)}" for f in files]


async def publish_loaded(
    bootstrap: str,
    topic: str,
    loaded: Sequence[tuple[Path, bytes]],
    *,
    session: str,
    request: str | None,
    provider: str | None,
    model: str | None,
    tools: Sequence[str] | None,
    slice_size: int | None,
    end: bool,
    progress: Callable[[PublishReport], object] | None,
    connect_timeout: float,
    security: Mapping[str, Any] | None = None,
    coalesce_ms: float = 0.0,
    coalesce_bytes: int = DEFAULT_COALESCE_BYTES,
    wire: str = DEFAULT_WIRE,
) -> list[PublishReport]:
    ids = _request_ids([path for path, _ in loaded], session, request)
    metas = [
        RequestMeta(request_id=rid, session_id=session, provider=provider, model=model,
                    declared_tools=None if tools is None else tuple(tools),
                    wire=body_wire(body) if wire == AUTO else wire)
        for rid, (_, body) in zip(ids, loaded, strict=True)
    ]
    if slice_size is not None and slice_size <= 0:
        raise ValueError(f"slice size must be positive, got {slice_size}")
    reports: list[PublishReport] = []
    async with ChunkPublisher(bootstrap, topic, connect_timeout=connect_timeout,
                              security=security, coalesce_ms=coalesce_ms,
                              coalesce_bytes=coalesce_bytes) as publisher:
        for meta, (_, body) in zip(metas, loaded, strict=True):
            pieces = (split_events(body, meta.wire) if slice_size is None
                      else split_fixed(body, slice_size))
            report = await publisher.publish_stream(meta, _iterate(pieces), end=end)
            reports.append(report)
            if progress is not None:
                progress(report)
    return reports


async def publish_captures(
    bootstrap: str,
    topic: str,
    paths: Sequence[str | os.PathLike[str]],
    *,
    session: str,
    request: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    tools: Sequence[str] | None = None,
    slice_size: int | None = None,
    end: bool = True,
    progress: Callable[[PublishReport], object] | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    security: Mapping[str, Any] | None = None,
    coalesce_ms: float = 0.0,
    coalesce_bytes: int = DEFAULT_COALESCE_BYTES,
    wire: str = DEFAULT_WIRE,
) -> list[PublishReport]:
    """Publish each captured body as one request of ``session``, in order.

    One SSE event per message by default (what a server flushing per event produces), or
    ``slice_size``-byte slices. The request id defaults to ``<session>-<file stem>-<8 hex>``;
    ``request`` fixes it and is only allowed with one capture. ``end=False`` leaves out the
    end marker. ``progress`` is called with each report as soon as that request is delivered.
    ``wire``: the wire header (a registered wire, or ``auto``: each body's own, told by
    its first event as ``toolwire assemble --wire auto`` tells it).
    ``security``, ``coalesce_ms``, ``coalesce_bytes``: as for :class:`ChunkPublisher`. A
    capture's slices are replayed without pauses, so with coalescing they all arrive within
    the first window and join into messages of up to ``coalesce_bytes``.

    Raises OSError for an unreadable file (before anything is published), ValueError for
    bad arguments, :class:`PublishError` when the broker or the topic is not there.
    """
    loaded = load_captures(paths)
    return await publish_loaded(
        bootstrap, topic, loaded, session=session, request=request, provider=provider,
        model=model, tools=tools, slice_size=slice_size, end=end, progress=progress,
        connect_timeout=connect_timeout, security=security, coalesce_ms=coalesce_ms,
        coalesce_bytes=coalesce_bytes, wire=wire,
    )
