"""``toolwire dlq``: operate the dead-letter quarantine."""

from __future__ import annotations

import argparse
import asyncio

from toolwire.cli.common import (
    EXIT_OK,
    Subparsers,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
)

PROG = "toolwire dlq release"


def add(sub: Subparsers) -> None:
    p = sub.add_parser("dlq", help="operate the dead-letter quarantine",
                       description="Operate the dead-letter quarantine of sessions.")
    actions = p.add_subparsers(dest="dlq_command", metavar="ACTION")
    p.set_defaults(parser=p)
    r = actions.add_parser(
        "release", help="let a quarantined session continue",
        description=(
            "After a response of a session is dead-lettered, later responses of that session "
            "go to the dead-letter topic as session_quarantined, so a session store never sees "
            "the session continue past a broken turn. Release it once the session is repaired: "
            "the worker that owns the session applies the release in order with its chunks."),
    )
    r.add_argument("session", help="the session id (the key of its chunks)")
    r.set_defaults(handler=run_release)


def run_release(args: argparse.Namespace) -> int:
    from toolwire.dlq import release

    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    bootstrap = find_broker(PROG)
    try:
        partition, offset = asyncio.run(release(bootstrap, settings.topic_chunks, args.session,
                                                security=security))
    except Exception as exc:  # KafkaError, OSError: the release was not written
        raise kafka_failure(PROG, exc, bootstrap, settings, security) from None
    print(f"release of session {args.session} sent to {settings.topic_chunks} "
          f"partition {partition} offset {offset}; its worker applies it in order")
    return EXIT_OK
