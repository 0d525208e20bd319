"""``toolwire worker``: run one worker in this process."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from typing import Any

from toolwire.cli.common import (
    CommandError,
    Failure,
    Subparsers,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
    unreachable,
)
from toolwire.config.settings import Settings

PROG = "toolwire worker"
#: How long the check before Faust starts waits for the cluster to answer.
REACH_TIMEOUT = 15.0
#: The status of a worker that cannot reach its cluster: the supervisor's restart status
#: (``toolwire.app.publishing.EXIT_FAULT``, not imported here: it pulls in Faust).
EXIT_UNREACHABLE = 75


class Unreachable(CommandError):
    """The cluster did not answer: temporary (a partition, brokers restarting), so the
    worker exits with the status its supervisor restarts on, not 1 — a worker restarted
    after a fault while its brokers are cut off must not end up stopped for good."""

    status = EXIT_UNREACHABLE


def add(sub: Subparsers) -> None:
    p = sub.add_parser(
        "worker", help="run a Toolwire worker",
        description=(
            "Run one worker: it consumes the chunks topic, assembles responses, publishes "
            "them to the assembled topic or the dead-letter topic, and keeps its state in "
            "changelogged tables. Start several for more throughput (up to the partition "
            "count). The same app as 'faust -A toolwire.app worker'. Uses "
            "KAFKA_BOOTSTRAP_SERVERS, else the local broker of 'toolwire broker start'. "
            "Settings come from TOOLWIRE_* variables (see the README); on a secured cluster "
            "(TOOLWIRE_SECURITY_PROTOCOL) the login is checked first and a refused one exits 1 "
            "naming the setting to fix; a cluster that does not answer within 15 s exits 75, "
            "the status a supervisor restarts it on (a partition or a broker restart is "
            "temporary), with a line naming the address. "
            "Stop it with Ctrl-C or SIGTERM."),
    )
    p.add_argument("--loglevel", "-l", default="info",
                   choices=["debug", "info", "warning", "error"], help="log level (info)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolwire.app import create_app

    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    bootstrap = find_broker(PROG)
    if settings.secured:
        check_login(bootstrap, settings, security)
    else:
        check_reachable(bootstrap, settings, security)
    worker = create_app(dataclasses.replace(settings, bootstrap=bootstrap))
    level = {"warning": "warn"}.get(args.loglevel, args.loglevel)  # Faust's own spelling
    return worker.run(loglevel=level)


def check_reachable(bootstrap: str, settings: Settings, security: dict[str, Any],
                    timeout: float = REACH_TIMEOUT) -> None:
    """One metadata request before Faust starts: a cluster that does not answer then stops
    the worker at once with one line naming the address and what to fix, instead of Faust's
    traceback of "unable to bootstrap".

    Every bootstrap server is asked at once, and the first answer will do: aiokafka tries
    them one after the other, so a server that drops packets silently (a broker cut off by a
    partition) would take the whole ``timeout`` and a worker restarted then would exit
    although the others answer (seen in the network-fault tests, ``tests/net``)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from toolwire.kafka import KafkaUnreachable, open_client

    async def reach_one(address: str) -> None:
        async with open_client(AIOKafkaAdminClient, address, start_timeout=timeout,
                               client_id="toolwire-worker-check",
                               request_timeout_ms=int(timeout * 1000), **security):
            pass

    async def reach() -> None:
        addresses = list(dict.fromkeys(a.strip() for a in bootstrap.split(",") if a.strip()))
        if len(addresses) <= 1:
            await reach_one(bootstrap)
            return
        tasks = [asyncio.ensure_future(reach_one(address)) for address in addresses]
        failures: list[BaseException] = []
        try:
            for attempt in asyncio.as_completed(tasks):
                try:
                    await attempt
                    return
                except Exception as exc:
                    failures.append(exc)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        refused = [f for f in failures if not isinstance(f, KafkaUnreachable)]
        if refused:
            raise refused[0]  # a login or protocol fault says more than a silence
        raise KafkaUnreachable(bootstrap, "; ".join(
            f"{f.bootstrap}: {f.why}" for f in failures if isinstance(f, KafkaUnreachable)))

    try:
        asyncio.run(reach())
    except Exception as exc:  # KafkaUnreachable, KafkaError, OSError
        failure = kafka_failure(PROG, exc, bootstrap, settings, security)
        if unreachable(exc):
            raise Unreachable(f"{failure}; exiting {EXIT_UNREACHABLE} for the process "
                              "supervisor to start the worker again", PROG) from None
        raise failure from None


def check_login(bootstrap: str, settings: Settings, security: dict[str, Any]) -> None:
    """One TLS handshake, SASL login and metadata request before Faust starts: a wrong
    password, CA or protocol then stops the worker at once with a message naming the setting
    to fix, instead of surfacing as Faust's "unable to bootstrap"."""
    from toolwire.config.security import SecurityError, verify

    try:
        asyncio.run(verify(bootstrap, security, settings))
    except SecurityError as exc:
        raise Failure(str(exc), PROG) from None
