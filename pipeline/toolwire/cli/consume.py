"""``toolwire consume``: print what Toolwire published, as JSON lines."""

from __future__ import annotations

import argparse
import asyncio
import sys

from toolwire.cli.common import (
    EXIT_OK,
    Failure,
    Subparsers,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
    positive_int,
    positive_seconds,
)

PROG = "toolwire consume"


def add(sub: Subparsers) -> None:
    p = sub.add_parser(
        "consume", help="print the records on the assembled or dead-letter topic",
        description=(
            "Print records as JSON lines (the record, plus '_kafka' with topic, partition, "
            "offset, key and headers). It reads without a consumer group, so it never moves "
            "any consumer's offsets, and stops after --idle-timeout seconds without a record "
            "or after --max records."),
    )
    p.add_argument("kind", choices=["assembled", "deadletter"], help="which topic")
    p.add_argument("--from-beginning", action="store_true",
                   help="start at the oldest record (default: only new ones)")
    p.add_argument("--idle-timeout", type=positive_seconds, default=5.0, metavar="SECONDS",
                   help="stop after this long without a record (5)")
    p.add_argument("--max", type=positive_int, default=None, metavar="N",
                   help="stop after N records")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolwire.tools.consume import consume, print_json_line, topic_for

    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    bootstrap = find_broker(PROG)
    topic = topic_for(args.kind, settings)
    try:
        count = asyncio.run(consume(bootstrap, topic, from_beginning=args.from_beginning,
                                    idle_timeout=args.idle_timeout, max_records=args.max,
                                    emit=print_json_line, security=security))
    except LookupError as exc:
        raise Failure(str(exc), PROG) from None
    except Exception as exc:  # KafkaError, OSError: the broker could not be read
        raise kafka_failure(PROG, exc, bootstrap, settings, security) from None
    print(f"{PROG}: {count} record(s) from {topic}", file=sys.stderr)
    return EXIT_OK
