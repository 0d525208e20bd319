"""``toolwire dlq``: list, show and replay dead letters; release a quarantined session."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from typing import Any

import orjson

from toolwire.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    Failure,
    Subparsers,
    UsageError,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
    positive_seconds,
)
from toolwire.core.records import REASONS

PROG = "toolwire dlq"


def add(sub: Subparsers) -> None:
    p = sub.add_parser("dlq", help="list, show and replay dead letters; release sessions",
                       description=(
                           "Operate the dead-letter topic: list dead letters, show one with "
                           "its raw chunks and the record they give today, replay them after "
                           "a fix, and release a quarantined session. A dead letter is named "
                           "by its place on the dead-letter topic, PARTITION:OFFSET, as 'list' "
                           "prints it."),
                       epilog="exit status: 0 ok, 1 nothing found or Kafka failed, 2 usage.")
    actions = p.add_subparsers(dest="dlq_command", metavar="ACTION")
    p.set_defaults(parser=p)
    since = argparse.ArgumentParser(add_help=False)
    since.add_argument("--since", metavar="WHEN",
                       help="only dead letters from then on: 90s, 15m, 2h, 7d ago, or an "
                            "ISO 8601 time (default: all the topic keeps)")
    since.add_argument("--reason", choices=REASONS, help="only this reason")

    listing = actions.add_parser("list", parents=[since], help="one line per dead letter",
                                 description="One line per dead letter: place, time, reason, "
                                             "session, request and detail.")
    listing.add_argument("--session", help="only this session")
    listing.add_argument("--json", action="store_true", help="JSON lines, for scripts")
    listing.set_defaults(handler=run_list)

    show = actions.add_parser(
        "show", help="one dead letter: decision, provenance, raw chunks, today's record",
        description="Print one dead letter: the decision and its provenance, the raw chunks "
                    "decoded, and beside them the record 'toolwire assemble' gives for that "
                    "body with this release, the request's wire and declared tools and these "
                    "settings (what a replay would publish, under the replay's request id). A "
                    "dead letter of a wire this release does not read has no such record. A dead "
                    "letter written before declared tools were recorded says so "
                    "(declared_tools_known: false): its record is then not checked against "
                    "them.")
    show.add_argument("ref", metavar="PARTITION:OFFSET")
    show.set_defaults(handler=run_show)

    replay = actions.add_parser(
        "replay", parents=[since],
        help="re-publish dead letters' raw chunks to the input topic, after a fix",
        description="Re-publish the raw chunks of dead letters to the input topic as new "
                    "requests marked 'toolwire-replay-of: <original request id>'. The new "
                    "request id is derived from the dead letter's place, so replaying the same "
                    "dead letter twice publishes one response. The replay carries the request's "
                    "declared tools as the dead letter recorded them, so it is checked against "
                    "them again (a dead letter too old to record them is replayed unchecked, "
                    "with a warning), and its wire header when it was not openai-chat (a dead "
                    "letter of a wire this release does not read is refused). A quarantined "
                    "session holds the replay too: release it first, or pass --release.")
    replay.add_argument("refs", nargs="*", metavar="PARTITION:OFFSET",
                        help="dead letters to replay (or select with --reason/--since)")
    replay.add_argument("--rate", type=positive_seconds, default=500.0, metavar="MSG/S",
                        help="at most this many messages per second (500)")
    replay.add_argument("--release", action="store_true",
                        help="release each session just before its first replay")
    replay.set_defaults(handler=run_replay)

    release = actions.add_parser(
        "release", help="let a quarantined session continue",
        description=(
            "After a response of a session is dead-lettered, later responses of that session "
            "go to the dead-letter topic as session_quarantined, so a session store never sees "
            "the session continue past a broken turn. Release it once the session is repaired: "
            "the worker that owns the session applies the release in order with its chunks."),
    )
    release.add_argument("session", help="the session id (the key of its chunks)")
    release.set_defaults(handler=run_release)


def _since(args: argparse.Namespace, prog: str) -> float | None:
    from toolwire.tools.dlq import parse_since

    if args.since is None:
        return None
    try:
        return parse_since(args.since)
    except ValueError as exc:
        raise UsageError(str(exc), prog) from None


def _select(args: argparse.Namespace, prog: str) -> list[Any]:
    """Dead letters matching --since, --reason (and --session where the command has it)."""
    from toolwire.tools.dlq import read_dead_letters

    settings = load_settings(prog)
    security = kafka_security(prog, settings)
    bootstrap = find_broker(prog)
    since = _since(args, prog)
    session = getattr(args, "session", None)

    async def collect() -> list[Any]:
        return [letter async for letter in read_dead_letters(
                    bootstrap, settings.topic_deadletter, since=since, security=security)
                if (args.reason is None or letter.reason == args.reason)
                and (session is None or letter.record.get("session_id") == session)]

    try:
        return asyncio.run(collect())
    except LookupError as exc:
        raise Failure(str(exc), prog) from None
    except Exception as exc:  # KafkaError, OSError
        raise kafka_failure(prog, exc, bootstrap, settings, security) from None


def run_list(args: argparse.Namespace) -> int:
    prog = f"{PROG} list"
    letters = _select(args, prog)
    for letter in letters:
        record = letter.record
        if args.json:
            sys.stdout.buffer.write(orjson.dumps({
                "ref": letter.ref, "time": letter.timestamp, "reason": letter.reason,
                "session_id": record.get("session_id"), "request_id": record.get("request_id"),
                "detail": record.get("detail"),
                "raw_chunks_truncated": record.get("raw_chunks_truncated")}) + b"\n")
        else:
            when = datetime.fromtimestamp(letter.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")
            detail = str(record.get("detail") or "")
            print(f"{letter.ref:<12} {when} {letter.reason:<20} "
                  f"session={record.get('session_id')} request={record.get('request_id')} "
                  f"{detail[:80]}{'…' if len(detail) > 80 else ''}")
    print(f"{prog}: {len(letters)} dead letter(s)", file=sys.stderr)
    return EXIT_OK if letters else EXIT_NEGATIVE


def run_show(args: argparse.Namespace) -> int:
    from toolwire.config.settings import limits_from_env
    from toolwire.core import Options, Provenance, decide, new_assembler
    from toolwire.core.records import Decision
    from toolwire.tools.dlq import (
        DeadLetterNotFound,
        NotReplayable,
        fetch_dead_letter,
        parse_ref,
        replay_request_id,
    )

    prog = f"{PROG} show"
    try:
        parse_ref(args.ref)
    except ValueError as exc:
        raise UsageError(str(exc), prog) from None
    settings = load_settings(prog)
    security = kafka_security(prog, settings)
    bootstrap = find_broker(prog)
    try:
        letter = asyncio.run(fetch_dead_letter(bootstrap, settings.topic_deadletter, args.ref,
                                               security=security))
    except DeadLetterNotFound as exc:
        raise Failure(str(exc), prog) from None
    except Exception as exc:  # KafkaError, OSError
        raise kafka_failure(prog, exc, bootstrap, settings, security) from None
    record = letter.record
    body = letter.raw_body()
    notes: list[str] = []
    known = letter.declared_tools_known
    try:
        tools = letter.declared_tools
    except NotReplayable as exc:
        tools, known = None, False
        notes.append(f"{exc}; record_today is not checked against declared tools, and a "
                     "replay is refused")
    else:
        if not known:
            notes.append("the request's declared tools are unknown (this dead letter does "
                         "not record them): record_today is not checked against them, and "
                         "neither would a replay be")
    try:
        wire: str | None = letter.wire
    except NotReplayable as exc:
        wire = None
        notes.append(f"{exc}; there is no record_today, and a replay is refused")
    provider = record.get("provider")
    provider = None if provider is None else str(provider)
    # As the worker would assemble the replay (its assembler built by new_assembler, as the
    # worker's is): the same wire, the same declared tools and the same id synthesis, in the
    # assembler (its split rule) and the decision, seeded by the request id, so the replay's
    # id gives the ids the replay would carry.
    today: Decision | None = None
    if wire is not None:
        options = Options(declared_tools=tools, strict=settings.strict,
                          synthesize_ids=settings.synthesizes_ids(provider),
                          end_without_done=settings.ends_without_done(provider),
                          limits=limits_from_env(), wire=wire)
        asm = new_assembler(options)
        asm.feed(body)
        today = decide(asm, options, Provenance(
            request_id=replay_request_id(letter, settings.topic_deadletter),
            session_id=record.get("session_id"), provider=provider, model=record.get("model"),
            declared_tools=tools))
    shown = {k: v for k, v in record.items() if k != "raw_chunks"}
    out = {
        "ref": letter.ref,
        "dead_letter": shown,
        "headers": dict(letter.headers),
        "raw_chunks": [{"seq": c["seq"], "text": _text(c["value_b64"])}
                       for c in record.get("raw_chunks") or ()],
        "declared_tools_known": known,
        "record_today": today,
        "replay_would_differ": today is None or (today.get("outcome"), today.get("reason"))
                               != (record.get("outcome"), record.get("reason")),
    }
    if notes:
        out["notes"] = notes
    print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    for note in notes:
        print(f"{prog}: {letter.ref}: {note}", file=sys.stderr)
    return EXIT_OK


def _text(value_b64: str) -> str:
    import base64

    return base64.b64decode(value_b64).decode("utf-8", "backslashreplace")


def run_replay(args: argparse.Namespace) -> int:
    from toolwire.tools.dlq import NotReplayable, fetch_dead_letter, parse_ref, replay

    prog = f"{PROG} replay"
    if not args.refs and args.reason is None and args.since is None:
        raise UsageError("name dead letters (PARTITION:OFFSET ...) or select them with "
                         "--reason and/or --since", prog)
    for ref in args.refs:
        try:
            parse_ref(ref)
        except ValueError as exc:
            raise UsageError(str(exc), prog) from None
    settings = load_settings(prog)
    security = kafka_security(prog, settings)
    bootstrap = find_broker(prog)
    if args.refs:
        try:
            letters = [asyncio.run(fetch_dead_letter(bootstrap, settings.topic_deadletter, ref,
                                                     security=security)) for ref in args.refs]
        except LookupError as exc:
            raise Failure(str(exc), prog) from None
        except Exception as exc:  # KafkaError, OSError
            raise kafka_failure(prog, exc, bootstrap, settings, security) from None
    else:
        letters = _select(args, prog)
    if not letters:
        raise Failure("no dead letter matches", prog)
    for letter in letters:
        if not letter.declared_tools_known:
            print(f"{prog}: {letter.ref} does not record its request's declared tools (an "
                  "older dead letter): its replay is not checked against them",
                  file=sys.stderr)
    last = [0.0]
    started = time.monotonic()

    def progress(sent: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0 or sent == total:
            last[0] = now
            width = 30
            filled = int(width * sent / total) if total else width
            print(f"\r{prog}: [{'#' * filled}{'.' * (width - filled)}] {sent}/{total} "
                  f"messages, {now - started:.0f} s", end="", file=sys.stderr, flush=True)

    try:
        requests = asyncio.run(replay(bootstrap, settings.topic_chunks, letters,
                                      settings.topic_deadletter, rate=args.rate,
                                      release_first=args.release, security=security,
                                      progress=progress))
    except NotReplayable as exc:
        raise Failure(str(exc), prog) from None
    except Exception as exc:  # KafkaError, OSError
        raise kafka_failure(prog, exc, bootstrap, settings, security) from None
    print(file=sys.stderr)
    for letter, request in zip(letters, requests, strict=True):
        print(f"{letter.ref} replayed as request {request}")
    return EXIT_OK


def run_release(args: argparse.Namespace) -> int:
    from toolwire.tools.dlq import release

    prog = f"{PROG} release"
    settings = load_settings(prog)
    security = kafka_security(prog, settings)
    bootstrap = find_broker(prog)
    try:
        partition, offset = asyncio.run(release(bootstrap, settings.topic_chunks, args.session,
                                                security=security))
    except Exception as exc:  # KafkaError, OSError: the release was not written
        raise kafka_failure(prog, exc, bootstrap, settings, security) from None
    print(f"release of session {args.session} sent to {settings.topic_chunks} "
          f"partition {partition} offset {offset}; its worker applies it in order")
    return EXIT_OK
