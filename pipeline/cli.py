"""``toolwire`` command line: one sub-command per job, each with ``--help`` that explains it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import orjson

from pipeline.core import Limits, Options, Provenance, assemble

#: Exit statuses of ``toolwire assemble``: scripts tell the outcomes apart without parsing JSON.
EXIT_ASSEMBLED = 0
EXIT_DEAD_LETTER = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def _tool_names(text: str) -> frozenset[str]:
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(
            "give at least one tool name, e.g. --tools get_weather,search")
    return names


def _add_assemble(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "assemble",
        help="assemble one captured response body offline and print its record",
        description=(
            "Read the raw bytes of one streamed chat-completion HTTP body (SSE, exactly as "
            "received) and print one JSON record: the assembled response, or the dead letter "
            "that explains why it cannot be trusted. It is the same record the pipeline "
            "publishes, so any pipeline decision can be reproduced offline from a capture."),
        epilog=(
            "exit status: 0 assembled (also truncated or provider errors, see error_code), "
            "1 dead letter (see reason and detail), 2 usage error or unreadable input.\n"
            "limits: TOOLWIRE_MAX_RESPONSE_BYTES, TOOLWIRE_MAX_LINE_BYTES, "
            "TOOLWIRE_MAX_ARGUMENTS_BYTES, TOOLWIRE_MAX_CALLS, TOOLWIRE_MAX_CHOICES."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("capture", help="file with the raw body, or - for standard input")
    p.add_argument("--tools", type=_tool_names, metavar="A,B",
                   help="tool names the request declared; other names are dead-lettered "
                        "as unknown_tool")
    p.add_argument("--strict", action="store_true",
                   help="dead-letter any identity conflict (a call whose id or name changes "
                        "to another non-empty value) instead of keeping the last one")
    p.add_argument("--request", dest="request_id", help="request id to put in the record")
    p.add_argument("--session", dest="session_id", help="session id to put in the record")
    p.add_argument("--provider", help="provider name to put in the record")
    p.add_argument("--model", help="model name (default: the model the chunks name)")
    p.add_argument("--compact", action="store_true", help="print one line instead of indented JSON")
    p.set_defaults(handler=_run_assemble)


def _run_assemble(args: argparse.Namespace) -> int:
    try:
        if args.capture == "-":
            body = sys.stdin.buffer.read()
        else:
            with open(args.capture, "rb") as f:
                body = f.read()
    except OSError as exc:
        print(f"toolwire assemble: cannot read {args.capture}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    try:
        limits = Limits.from_env()
    except ValueError as exc:
        print(f"toolwire assemble: {exc}", file=sys.stderr)
        return EXIT_USAGE
    record = assemble(
        body,
        Options(declared_tools=args.tools, strict=args.strict, limits=limits),
        Provenance(request_id=args.request_id, session_id=args.session_id,
                   provider=args.provider, model=args.model),
    )
    option = 0 if args.compact else orjson.OPT_INDENT_2
    sys.stdout.buffer.write(orjson.dumps(record, option=option) + b"\n")
    sys.stdout.flush()
    return EXIT_ASSEMBLED if record["outcome"] == "assembled" else EXIT_DEAD_LETTER


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwire",
        description=(
            "Toolwire turns streamed LLM chat-completion chunks into complete, trustworthy "
            "tool calls, and quarantines what cannot be trusted on a dead-letter topic."),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_assemble(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
