"""``toolwire publish``: captured bodies to the input topic, as a gateway would send them."""

from __future__ import annotations

import argparse
import asyncio
import math
from typing import Any

from toolwire.cli.common import (
    EXIT_OK,
    Failure,
    HelpFormatter,
    Subparsers,
    UsageError,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
    positive_int,
    positive_seconds,
    tool_names,
    wire_name,
)
from toolwire.core.wires import AUTO, DEFAULT_WIRE, SUPPORTED_WIRES
from toolwire.stream.messages import (
    END_EOF,
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REQUEST_ID,
    H_WIRE,
)

PROG = "toolwire publish"

# The publisher's DEFAULT_COALESCE_BYTES, restated so that `--help` does not import aiokafka;
# a test keeps the two equal.
COALESCE_BYTES_HELP_DEFAULT = 65536


def milliseconds(text: str) -> float:
    """A window length: 0 is meaningful here (coalescing off), unlike a timeout."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a finite number of milliseconds >= 0, got {text}")
    return value

DESCRIPTION = f"""\
Publish captured LLM response bodies (any wire: --wire) to the input topic of the pipeline, exactly
as a gateway relaying the live stream would: one request per CAPTURE file, all in session S.

Each request becomes a run of Kafka messages:
  key      the session id (so every request of a session goes to one partition, in order)
  value    raw bytes of the body, unchanged: one SSE event per message by default, or
           fixed --slice BYTES slices (which may cut lines, CRLF pairs and UTF-8 characters)
  headers  {H_REQUEST_ID}, {H_CHUNK_SEQ} (0, 1, 2, ... without gaps), and {H_PROVIDER},
           {H_MODEL}, {H_DECLARED_TOOLS} (comma-separated) when given
followed by an end marker: an empty value with the next {H_CHUNK_SEQ} and {H_END}: {END_EOF}.
Concatenating the values of a request gives back the capture byte for byte.
With --coalesce-ms, consecutive slices are joined into fewer values (still the same bytes,
in order), as a gateway coalescing a live stream would send them.

One line is printed per request: request id, chunks, bytes, end marker, partition and the
first-last offsets, once the broker has acknowledged all of it."""

EPILOG = """\
broker: $KAFKA_BOOTSTRAP_SERVERS, else the local development broker (started if it is not
running; see `toolwire broker --help`). topic: $TOOLWIRE_TOPIC_CHUNKS (default llm.sse.chunks);
it must exist.
exit status: 0 all published, 1 a capture could not be read or the broker/topic is not
reachable, 2 usage error."""


def add(sub: Subparsers) -> None:
    p = sub.add_parser("publish", help="publish raw captures to the chunks topic, as a "
                                       "gateway would",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=HelpFormatter)
    p.add_argument("captures", nargs="+", metavar="CAPTURE",
                   help="file holding one raw response body (SSE bytes as received)")
    p.add_argument("--session", required=True, metavar="S",
                   help="session id: the message key of every request")
    p.add_argument("--request", metavar="R",
                   help="request id (only with one CAPTURE; default: S-<file stem>-<8 hex>, "
                        "fresh on every run so a replay is a new request)")
    p.add_argument("--provider", metavar="P", help=f"value of the {H_PROVIDER} header")
    p.add_argument("--model", metavar="M", help=f"value of the {H_MODEL} header")
    p.add_argument("--tools", type=tool_names, metavar="A,B",
                   help=f"tool names the request declared ({H_DECLARED_TOOLS} header); "
                        "an empty value declares none, leaving it out means unknown")
    p.add_argument("--wire", type=wire_name, default=DEFAULT_WIRE, metavar="NAME",
                   help=f"value of the {H_WIRE} header: the wire the captures are written in, "
                        f"one of {', '.join([*SUPPORTED_WIRES, AUTO])} (default {DEFAULT_WIRE}; "
                        f"{AUTO}: each capture's own, told by its first event)")
    p.add_argument("--slice", dest="slice_size", type=positive_int, metavar="BYTES",
                   help="cut each body into BYTES-sized slices instead of one SSE event per "
                        "message")
    p.add_argument("--coalesce-ms", type=milliseconds, default=0.0, metavar="MS",
                   help="join the slices of a request that arrive within MS milliseconds of "
                        "the first into one message (0, the default: one message per slice). "
                        "Fewer, fuller messages mean less per-message work for the broker and "
                        "the pipeline, at the cost of up to MS of added latency per window. "
                        "Captures are replayed without pauses, so here any MS > 0 joins a "
                        "request into messages of up to --coalesce-bytes")
    p.add_argument("--coalesce-bytes", type=positive_int, metavar="BYTES",
                   help="size cap of one coalesced message; a larger single slice goes alone, "
                        f"unsplit (default {COALESCE_BYTES_HELP_DEFAULT}). A bigger cap means "
                        "fewer messages, but a dead letter copies raw chunks whole, so its "
                        "copy of a long body stops in coarser steps")
    p.add_argument("--no-end", dest="end", action="store_false",
                   help=f"leave out the {H_END} marker, as if the gateway died mid-stream "
                        "(the pipeline expires the request after its TTL)")
    p.add_argument("--timeout", type=positive_seconds, default=30.0, metavar="SECONDS",
                   help="give up when the broker does not answer within this long (30)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolwire.publish import (
        BrokerUnreachable,
        PublishReport,
        load_captures,
        publish_loaded,
    )

    if args.request is not None and len(args.captures) != 1:
        raise UsageError(f"--request needs exactly one CAPTURE (got {len(args.captures)})",
                         PROG)
    if not args.session:
        raise UsageError("--session must not be empty", PROG)
    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    topic = settings.topic_chunks
    try:
        loaded = load_captures(args.captures)
    except OSError as exc:
        raise Failure(f"cannot read {exc.filename}: {exc.strerror}", PROG) from None

    def progress(report: PublishReport) -> None:
        print(report.line(), flush=True)

    coalescing: dict[str, Any] = {"coalesce_ms": args.coalesce_ms}
    if args.coalesce_bytes is not None:
        coalescing["coalesce_bytes"] = args.coalesce_bytes
    bootstrap = find_broker(PROG, start=True)
    try:
        asyncio.run(publish_loaded(
            bootstrap, topic, loaded, session=args.session, request=args.request,
            provider=args.provider, model=args.model,
            tools=args.tools,
            slice_size=args.slice_size, end=args.end, progress=progress,
            connect_timeout=args.timeout, security=security, wire=args.wire, **coalescing,
        ))
    except BrokerUnreachable as exc:  # what to fix; on a secured cluster, why (a login?)
        raise kafka_failure(PROG, exc, bootstrap, settings, security) from None
    except Exception as exc:  # PublishError, KafkaError: all "could not publish"
        raise Failure(str(exc) or type(exc).__name__, PROG) from None
    return EXIT_OK
