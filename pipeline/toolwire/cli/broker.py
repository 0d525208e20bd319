"""``toolwire broker``: the local single-node Kafka broker for development and tests."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import orjson

from toolwire.broker.local import (
    DEFAULT_HEAP,
    DEFAULT_START_TIMEOUT,
    ENV_BOOTSTRAP,
    ENV_CACHE,
    ENV_STATE_DIR,
    LOG_NAME,
    BrokerError,
    default_state_dir,
    ensure_broker,
    kafka_version,
    probe,
    read_info,
    status,
    stop,
)
from toolwire.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    Failure,
    Subparsers,
    kafka_security,
    load_settings,
    positive_seconds,
)

PROG = "toolwire broker"


def add(sub: Subparsers) -> None:
    parser = sub.add_parser(
        "broker", help="start, stop or inspect the local single-node Kafka broker",
        description=(
            "Run a local single-node Apache Kafka (KRaft) broker on 127.0.0.1 for development "
            "and tests. The jars are fetched once from Maven Central with `mvn` (pinned in "
            "ops/kafka/pom.xml) and cached; Java 17+ runs the broker. If "
            f"{ENV_BOOTSTRAP} is set, that broker is used and nothing is started."),
        epilog=(
            f"State dir: --state-dir, else ${ENV_STATE_DIR}/broker, else ./.toolwire/broker. "
            f"Jar cache: ${ENV_CACHE} (default ~/.cache/toolwire)/kafka-<version>/lib. "
            "Exit status: 0 ok, 1 failure (status: the broker does not answer), 2 usage."),
    )
    parser.set_defaults(parser=parser)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state-dir", type=Path, default=None,
                        help="where broker.json, broker.log and the data live")
    actions = parser.add_subparsers(dest="broker_command", metavar="{start,stop,status}")
    start = actions.add_parser(
        "start", parents=[common],
        help="start a broker (or reuse the running one) and wait until it answers")
    start.add_argument("--heap", default=DEFAULT_HEAP,
                       help=f"JVM -Xmx/-Xms (default: {DEFAULT_HEAP})")
    start.add_argument("--timeout", type=positive_seconds, default=DEFAULT_START_TIMEOUT,
                       help=f"seconds to wait for readiness (default: {DEFAULT_START_TIMEOUT:g})")
    start.set_defaults(handler=run_start)
    actions.add_parser("stop", parents=[common],
                       help="stop the broker recorded in broker.json (by pid)"
                       ).set_defaults(handler=run_stop)
    actions.add_parser("status", parents=[common],
                       help="print JSON about the broker; exit 0 if it answers, 1 if not"
                       ).set_defaults(handler=run_status)


def _state_dir(args: argparse.Namespace) -> Path:
    return Path(args.state_dir or default_state_dir()).absolute()


def run_start(args: argparse.Namespace) -> int:
    env = load_settings(PROG).bootstrap.strip()
    if env:
        print(f"{PROG}: {ENV_BOOTSTRAP}={env} is set; using it, not starting a broker")
        return EXIT_OK
    state_dir = _state_dir(args)
    t0 = time.monotonic()
    try:
        bootstrap, started = ensure_broker(state_dir, args.heap, timeout=args.timeout)
    except BrokerError as exc:
        raise Failure(str(exc), PROG) from None
    info = read_info(state_dir)
    pid = info.pid if info else "?"
    if started:
        print(f"{PROG}: Kafka {kafka_version()} ready at {bootstrap} (pid {pid}, "
              f"{time.monotonic() - t0:.1f}s); log: {state_dir / LOG_NAME}")
    else:
        print(f"{PROG}: broker already running at {bootstrap} (pid {pid})")
    return EXIT_OK


def run_stop(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args)
    info = read_info(state_dir)
    t0 = time.monotonic()
    try:
        stopped = stop(state_dir)
    except BrokerError as exc:
        raise Failure(str(exc), PROG) from None
    if stopped:
        pid = info.pid if info else "?"
        print(f"{PROG}: broker stopped (pid {pid}, {time.monotonic() - t0:.1f}s)")
    else:
        print(f"{PROG}: no broker running for {state_dir}")
    return EXIT_OK


def run_status(args: argparse.Namespace) -> int:
    settings = load_settings(PROG)
    env = settings.bootstrap.strip()
    if env:
        cluster = probe(env, security=kafka_security(PROG, settings))
        _print_json({"external": True, "bootstrap": env, "ready": cluster is not None,
                     "cluster_id": (cluster or {}).get("cluster_id")})
        return EXIT_OK if cluster is not None else EXIT_NEGATIVE
    state_dir = _state_dir(args)
    result = status(state_dir)
    if result is None:
        _print_json({"running": False, "state_dir": str(state_dir)})
        return EXIT_NEGATIVE
    result["running"] = True
    _print_json(result)
    return EXIT_OK if result["ready"] else EXIT_NEGATIVE


def _print_json(value: dict[str, Any]) -> None:
    print(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())
