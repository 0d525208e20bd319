"""``toolwire topics``: show the topic contracts, or create the topics they describe."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import orjson

from toolwire.cli.common import (
    EXIT_OK,
    Failure,
    HelpFormatter,
    Subparsers,
    UsageError,
    find_broker,
    kafka_failure,
    kafka_security,
    load_settings,
    positive_int,
    positive_seconds,
)
from toolwire.kafka import TopicError, changelog_configs
from toolwire.tools.topics import (
    ENV_PARTITIONS,
    ENV_REPLICATION,
    ENV_TOPICS_DIR,
    Contract,
    TopicMismatch,
    apply_topics,
    load_contracts,
)

PROG = "toolwire topics"


def add(sub: Subparsers) -> None:
    parser = sub.add_parser(
        "topics", help="show the topic contracts, or create missing topics (apply)",
        description=(
            "The Kafka topics Toolwire reads and writes, as documented by the contracts in "
            "topics/*.json: `show` prints them, `apply` creates the missing topics and checks "
            "that existing ones agree (partition count, cleanup.policy). Existing topics are "
            "never changed."),
        epilog=(
            "environment:\n"
            f"  {ENV_TOPICS_DIR}  directory of the contracts (default: topics/ of the checkout)\n"
            "  TOOLWIRE_TOPIC_CHUNKS, TOOLWIRE_TOPIC_ASSEMBLED, TOOLWIRE_TOPIC_DEADLETTER\n"
            "      topic names (default: the names in the contracts)\n"
            f"  {ENV_PARTITIONS}  partitions of all three topics (default: 6); give the workers\n"
            "      the same value: their tables' changelog topics must have as many\n"
            "      partitions as the chunks topic\n"
            f"  {ENV_REPLICATION}  replication factor of new topics (default: 1)\n"
            "  TOOLWIRE_MIN_INSYNC_REPLICAS  min.insync.replicas of new topics (default: the\n"
            "      broker's)\n"
            "  KAFKA_BOOTSTRAP_SERVERS  the broker (default: start or reuse a local one)\n"
            "  TOOLWIRE_SECURITY_PROTOCOL, TOOLWIRE_SASL_*, TOOLWIRE_SSL_*  how to connect to a\n"
            "      secured cluster (see the README)\n"
            "exit status: 0 done, 1 a topic disagrees with its contract or the broker failed,\n"
            "  2 usage or contract error"),
        formatter_class=HelpFormatter,
    )
    parser.set_defaults(parser=parser)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", type=Path, default=None, metavar="DIR",
                        help=f"directory of the contract files (default: ${ENV_TOPICS_DIR}, "
                             "else topics/ of the checkout)")
    actions = parser.add_subparsers(dest="topics_command", metavar="{show,apply}")
    show = actions.add_parser("show", parents=[common],
                              help="print the contracts as this deployment applies them",
                              description="Print each topic's effective contract: name and "
                                          "partitions after the environment's overrides.")
    show.add_argument("--json", action="store_true",
                      help="print the full contracts, schemas included, as JSON")
    show.set_defaults(handler=run_show)
    apply = actions.add_parser(
        "apply", parents=[common],
        help="create missing topics; check existing ones against their contracts",
        description="Create the topics that do not exist (partitions, replication factor, "
                    "cleanup.policy, retention.ms from the contracts) and check that existing "
                    "ones have the contract's partition count and cleanup.policy. Nothing is "
                    "created when any topic disagrees. The worker's changelog topics "
                    "(TOOLWIRE_APP_ID-...-changelog) must have the chunks topic's partition "
                    "count; one whose segment.ms, segment.bytes or delete.retention.ms differ "
                    "from the worker's (TOOLWIRE_CHANGELOG_*) gets a line with the "
                    "kafka-configs.sh command that changes them (not an error).")
    apply.add_argument("--bootstrap", default=None, metavar="HOST:PORT",
                       help="Kafka bootstrap servers (default: $KAFKA_BOOTSTRAP_SERVERS, "
                            "else the local development broker, started if needed)")
    apply.add_argument("--replication-factor", type=positive_int, default=None, metavar="N",
                       help=f"replication factor of new topics (default: ${ENV_REPLICATION}, "
                            "else 1)")
    apply.add_argument("--timeout", type=positive_seconds, default=30.0, metavar="SECONDS",
                       help="how long to wait for the broker per operation (default: 30)")
    apply.set_defaults(handler=run_apply)


def _contracts(directory: Path | None) -> list[Contract]:
    try:
        return list(load_contracts(directory, load_settings(PROG)))
    except ValueError as exc:  # ContractError
        raise UsageError(str(exc), PROG) from None


def run_show(args: argparse.Namespace) -> int:
    contracts = _contracts(args.dir)
    if args.json:
        print(orjson.dumps([c.to_json() for c in contracts],
                           option=orjson.OPT_INDENT_2).decode())
        return EXIT_OK
    for c in contracts:
        print(f"{c.name} ({c.role.value}): {c.partitions} partitions, "
              f"cleanup.policy={c.cleanup_policy}, retention {_human_ms(c.retention_ms)}")
        print(f"  key: {c.key['description']}")
        for h in c.headers:
            print(f"  header {h.name}{'' if h.required else ' (optional)'}")
        print(f"  value: {c.value['encoding']}"
              + (" with a JSON Schema (show --json)" if c.schema is not None else ""))
    return EXIT_OK


def run_apply(args: argparse.Namespace) -> int:
    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    contracts = _contracts(args.dir)
    replication = args.replication_factor or settings.replication_factor
    bootstrap = args.bootstrap or find_broker(PROG, start=True)
    try:
        lines = asyncio.run(apply_topics(bootstrap, contracts, replication_factor=replication,
                                         app_id=settings.app_id,
                                         changelog=changelog_configs(settings),
                                         timeout=args.timeout,
                                         security=security))
    except TopicMismatch as exc:
        raise Failure(f"\n{PROG}: ".join(exc.problems), PROG) from None
    except TopicError as exc:
        raise Failure(str(exc), PROG) from None
    except Exception as exc:  # KafkaError, OSError, TimeoutError
        raise kafka_failure(PROG, exc, bootstrap, settings, security,
                            source="--bootstrap" if args.bootstrap else None) from None
    for line in lines:
        print(line)
    return EXIT_OK


def _human_ms(ms: int) -> str:
    if ms < 0:
        return "forever"
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        if ms % size == 0:
            n = ms // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{ms} ms"
