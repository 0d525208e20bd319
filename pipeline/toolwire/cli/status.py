"""``toolwire status``: offsets, lag, open responses, quarantine and recent dead letters."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

import orjson

from toolwire.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    Subparsers,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
    positive_seconds,
)

if TYPE_CHECKING:
    from toolwire.kafka import GroupStatus

PROG = "toolwire status"


def add(sub: Subparsers) -> None:
    p = sub.add_parser(
        "status", help="offsets, lag, open responses, quarantine and recent dead letters",
        description=(
            "Per topic and partition: the end offset, the worker group's committed offset and "
            "the lag in messages and seconds (the age of the oldest unprocessed chunk); the "
            "responses open and the sessions quarantined (read from the tables' changelogs); "
            "dead letters of the last hour by reason. It needs no running worker and moves no "
            "consumer's offsets. A partition whose oldest unprocessed chunk waits longer than "
            "TOOLWIRE_STALL_TIMEOUT seconds while workers are live is named as not progressing "
            "(a worker up but stuck, or the group that far behind: check the workers' /healthz)."),
        epilog="exit status: 0 the group has a live member (a partition not progressing is "
               "reported, not an error), 1 it has none (or Kafka could not be read), 2 usage.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    p.add_argument("--timeout", type=positive_seconds, default=15.0, metavar="SECONDS",
                   help="how long to wait for Kafka per request (15)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolwire.kafka import group_status

    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    bootstrap = find_broker(PROG)
    try:
        status = asyncio.run(group_status(bootstrap, settings, security, args.timeout))
    except Exception as exc:  # KafkaError, OSError, TimeoutError
        raise kafka_failure(PROG, exc, bootstrap, settings, security) from None
    return report(status, as_json=args.json)


def report(status: GroupStatus, *, as_json: bool = False) -> int:
    """Print a :class:`~toolwire.kafka.GroupStatus` (text, or one JSON object); the exit
    status: 0 with a live member, 1 without."""
    if as_json:
        print(orjson.dumps(status.as_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        print(f"group {status.group}: {status.state}, {status.members} live member(s)")
        print(f"{'topic':<40} {'part':>4} {'end':>10} {'committed':>10} {'lag':>8} "
              f"{'lag s':>8}")
        for p in status.positions:
            committed = "-" if p.committed is None else str(p.committed)
            lag = "-" if p.lag_messages is None else str(p.lag_messages)
            age = "-" if p.lag_seconds is None else f"{p.lag_seconds:.1f}"
            print(f"{p.topic:<40} {p.partition:>4} {p.end_offset:>10} {committed:>10} "
                  f"{lag:>8} {age:>8}")
        for stall in status.not_progressing:
            print(stall.describe())
        print(f"open responses: {status.open_responses}")
        print(f"quarantined sessions: {len(status.quarantined_sessions)}"
              + (f" ({', '.join(status.quarantined_sessions[:10])}"
                 + (", …" if len(status.quarantined_sessions) > 10 else "") + ")"
                 if status.quarantined_sessions else ""))
        reasons = ", ".join(f"{r} {n}" for r, n in status.dead_letters.items()) or "none"
        print(f"dead letters in the last hour: {reasons}")
    return EXIT_OK if status.members > 0 else EXIT_NEGATIVE
