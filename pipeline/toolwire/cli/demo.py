"""``toolwire demo``: the whole pipeline on this machine, with bundled samples."""

from __future__ import annotations

import argparse

from toolwire.cli.common import (
    Failure,
    Subparsers,
    bootstrap_advice,
    load_settings,
    positive_seconds,
)

PROG = "toolwire demo"


def add(sub: Subparsers) -> None:
    p = sub.add_parser(
        "demo", help="run the whole pipeline on a local broker with bundled samples",
        description=(
            "Run the whole pipeline on this machine: start the local Kafka broker (unless "
            "KAFKA_BOOTSTRAP_SERVERS names one), create the topics, start a worker, publish "
            "bundled sample responses (a normal call, parallel calls, \"\" and null identity "
            "continuations, identity never sent, a truncated call, a text answer), print what "
            "came out on the assembled and dead-letter topics, and stop what it started."),
        epilog="exit status: 0 every sample's record came out, 1 otherwise, 2 usage.",
    )
    p.add_argument("--timeout", type=positive_seconds, default=180.0, metavar="SECONDS",
                   help="how long to wait for the records (180)")
    p.add_argument("--keep-broker", action="store_true",
                   help="leave a broker the demo started running afterwards")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolwire.kafka import KafkaUnreachable
    from toolwire.tools.demo import DemoError, run_demo

    try:
        return run_demo(args.timeout, args.keep_broker)
    except DemoError as exc:
        message = str(exc)
        if isinstance(exc.__cause__, KafkaUnreachable):
            message += f": {bootstrap_advice(load_settings(PROG))}"
        raise Failure(f"failed: {message}", PROG) from None
