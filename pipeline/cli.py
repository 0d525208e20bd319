"""``toolwire`` command line: one sub-command per job, each with ``--help`` that explains it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import orjson

from pipeline.core import Options, Provenance, assemble
from pipeline.settings import limits_from_env

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
        limits = limits_from_env()
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


#: Commands whose module parses its own arguments: ``toolwire NAME ...`` is ``main([...])``.
DELEGATED = {
    "publish": ("pipeline.publish.publisher",
                "publish raw captures to the chunks topic, as a gateway would"),
    "topics": ("pipeline.topics", "show the topic contracts, or create missing topics (apply)"),
    "broker": ("pipeline.broker.local",
               "start, stop or inspect the local single-node Kafka broker"),
    "demo": ("pipeline.demo", "run the whole pipeline on a local broker with bundled samples"),
}


def _run_delegated(name: str, argv: list[str]) -> int:
    import importlib

    module = importlib.import_module(DELEGATED[name][0])
    main: Callable[[list[str]], int] = module.main
    return main(argv)


def _add_worker(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "worker", help="run a Toolwire worker (the Faust app pipeline.app)",
        description=(
            "Run one worker: it consumes the chunks topic, assembles responses, publishes "
            "them to the assembled topic or the dead-letter topic, and keeps its state in "
            "changelogged tables. Start several for more throughput (up to the partition "
            "count). The same as 'faust -A pipeline.app worker'. Uses KAFKA_BOOTSTRAP_SERVERS, "
            "else the local broker of 'toolwire broker start'. Stop it with Ctrl-C or SIGTERM."),
    )
    p.add_argument("--loglevel", "-l", default="info",
                   choices=["debug", "info", "warning", "error"], help="log level (info)")
    p.set_defaults(handler=_run_worker)


def _run_worker(args: argparse.Namespace) -> int:
    import dataclasses

    from pipeline.app import create_app
    from pipeline.broker.local import BrokerError
    from pipeline.connect import resolve_bootstrap
    from pipeline.settings import Settings

    try:
        settings = Settings.from_env()
        bootstrap, _ = resolve_bootstrap()
    except (BrokerError, ValueError) as exc:
        print(f"toolwire worker: {exc}", file=sys.stderr)
        return 1
    worker = create_app(dataclasses.replace(settings, bootstrap=bootstrap))
    level = {"warning": "warn"}.get(args.loglevel, args.loglevel)  # Faust's own spelling
    return worker.run(loglevel=level)


def _add_consume(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument("--idle-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="stop after this long without a record (5)")
    p.add_argument("--max", type=int, default=None, metavar="N", help="stop after N records")
    p.set_defaults(handler=_run_consume)


def _run_consume(args: argparse.Namespace) -> int:
    import asyncio

    from pipeline.broker.local import BrokerError
    from pipeline.connect import resolve_bootstrap
    from pipeline.consume import consume, print_json_line, topic_for
    from pipeline.settings import Settings

    try:
        settings = Settings.from_env()
        bootstrap, _ = resolve_bootstrap()
        topic = topic_for(args.kind, settings)
        count = asyncio.run(consume(bootstrap, topic, from_beginning=args.from_beginning,
                                    idle_timeout=args.idle_timeout, max_records=args.max,
                                    emit=print_json_line))
    except (BrokerError, LookupError, ValueError) as exc:
        print(f"toolwire consume: {exc}", file=sys.stderr)
        return 1
    print(f"toolwire consume: {count} record(s) from {topic}", file=sys.stderr)
    return 0


def _add_dlq(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dlq", help="operate the dead-letter quarantine",
                       description="Operate the dead-letter quarantine of sessions.")
    dsub = p.add_subparsers(dest="dlq_command", metavar="ACTION", required=True)
    r = dsub.add_parser(
        "release", help="let a quarantined session continue",
        description=(
            "After a response of a session is dead-lettered, later responses of that session "
            "go to the dead-letter topic as session_quarantined, so a session store never sees "
            "the session continue past a broken turn. Release it once the session is repaired: "
            "the worker that owns the session applies the release in order with its chunks."),
    )
    r.add_argument("session", help="the session id (the key of its chunks)")
    r.set_defaults(handler=_run_release)


def _run_release(args: argparse.Namespace) -> int:
    import asyncio

    from pipeline.broker.local import BrokerError
    from pipeline.connect import resolve_bootstrap
    from pipeline.dlq import release
    from pipeline.settings import Settings

    try:
        settings = Settings.from_env()
        bootstrap, _ = resolve_bootstrap()
        partition, offset = asyncio.run(release(bootstrap, settings.topic_chunks, args.session))
    except (BrokerError, ValueError) as exc:
        print(f"toolwire dlq release: {exc}", file=sys.stderr)
        return 1
    print(f"release of session {args.session} sent to {settings.topic_chunks} "
          f"partition {partition} offset {offset}; its worker applies it in order")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwire",
        description=(
            "Toolwire turns streamed LLM chat-completion chunks into complete, trustworthy "
            "tool calls, and quarantines what cannot be trusted on a dead-letter topic."),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_assemble(sub)
    _add_worker(sub)
    _add_consume(sub)
    _add_dlq(sub)
    for name, (_, help) in DELEGATED.items():
        sub.add_parser(name, help=help)  # listed in --help; parsed by its own module
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        return _run_delegated(argv[0], argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
