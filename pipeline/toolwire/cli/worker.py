"""``toolwire worker``: run one worker in this process."""

from __future__ import annotations

import argparse
import dataclasses

from toolwire.cli.common import Subparsers, find_broker, load_settings

PROG = "toolwire worker"


def add(sub: Subparsers) -> None:
    p = sub.add_parser(
        "worker", help="run a Toolwire worker",
        description=(
            "Run one worker: it consumes the chunks topic, assembles responses, publishes "
            "them to the assembled topic or the dead-letter topic, and keeps its state in "
            "changelogged tables. Start several for more throughput (up to the partition "
            "count). The same app as 'faust -A toolwire.app worker'. Uses "
            "KAFKA_BOOTSTRAP_SERVERS, else the local broker of 'toolwire broker start'. "
            "Settings come from TOOLWIRE_* variables (see the README). Stop it with Ctrl-C "
            "or SIGTERM."),
    )
    p.add_argument("--loglevel", "-l", default="info",
                   choices=["debug", "info", "warning", "error"], help="log level (info)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolwire.app import create_app

    settings = load_settings(PROG)
    bootstrap = find_broker(PROG)
    worker = create_app(dataclasses.replace(settings, bootstrap=bootstrap))
    level = {"warning": "warn"}.get(args.loglevel, args.loglevel)  # Faust's own spelling
    return worker.run(loglevel=level)
