"""``toolwire``: one command line for every job, one argument style, one set of exit codes.

Each command lives in a module of this package with ``add(subparsers)``, which registers its
parser and its handler. A handler returns an exit status or raises :class:`~.common.Failure`
(status 1, the command's negative outcome) or :class:`~.common.UsageError` (status 2); this
module prints their message as ``toolwire COMMAND: message`` on stderr; an interrupt is 130.
Nothing else in the package parses arguments, and only one other exit status exists: the
worker's 75 (``EX_TEMPFAIL``, :data:`toolwire.app.publishing.EXIT_FAULT`), a fault it cannot
get past in its process, for the supervisor to restart it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from toolwire.cli import (
    assemble,
    broker,
    consume,
    demo,
    dlq,
    publish,
    status,
    tap,
    topics,
    worker,
)
from toolwire.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, CommandError, Handler
from toolwire.core.wires import SUPPORTED_WIRES

__all__ = ["main"]

COMMANDS = (assemble, worker, publish, consume, status, dlq, topics, broker, demo, tap)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwire",
        description=(
            "Toolwire turns streamed LLM responses (the wires "
            f"{', '.join(SUPPORTED_WIRES)}) into complete, trustworthy tool calls, and "
            "quarantines what cannot be trusted on a dead-letter topic."),
        epilog=("exit status of every command: 0 ok, 1 the command's negative outcome "
                "(a dead letter, a failure it explains), 2 usage error, 130 interrupted; "
                "the worker also exits 75 on a fault its supervisor should restart it for. "
                "'toolwire COMMAND --help' explains each command."),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse: 0 after --help, 2 on a usage error
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        (getattr(args, "parser", None) or parser).print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return handler(args)
    except CommandError as exc:
        print(f"{exc.prog or 'toolwire ' + str(args.command)}: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"toolwire {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
