"""``toolwire tap serve``: the tee proxy (:class:`toolwire.tap.TeeProxy`) on a local port."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from typing import Any

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
    say,
)

PROG = "toolwire tap serve"
#: What the proxy prints on stderr once it takes requests (scripts and tests wait for it).
READY = "listening on"

DESCRIPTION = """\
A tee proxy for clients in any language and for gateways that route to an upstream base URL
(LiteLLM proxy's api_base, Kong, Envoy): point the client's base URL at the proxy, and the
proxy forwards every request to its upstream and streams the answer back unchanged (status,
headers, the body in the upstream's own slices, timing and Content-Encoding). Every 2xx
text/event-stream answer on a streaming path (/chat/completions, /messages, /responses,
:streamGenerateContent; and Ollama's application/x-ndjson /api/chat) is also published,
decoded, to the chunks topic, as the client-side tees publish it: request id from x-request-id
or request-id (else a new one, returned in the x-toolwire-request-id header), session from
--session-header, provider from the upstream's host, wire from the path, model and declared
tools from the request body, the request's traceparent kept.

  toolwire tap serve --upstream https://api.openai.com
  toolwire tap serve --upstream /openai=https://api.openai.com \\
                     --upstream /anthropic=https://api.anthropic.com

A client that goes away cancels its upstream request (its stream ends 'cancelled' unless the
wire's terminal event had come). The publishing never slows a client: a stream the broker
cannot take in time is ended with 'error' or dropped, counted and logged with its request id.
Bodies, headers and query strings are never logged."""

EPILOG = """\
broker: $KAFKA_BOOTSTRAP_SERVERS, else the running local development broker (it is not
started: `toolwire broker start`). topic: $TOOLWIRE_TOPIC_CHUNKS (default llm.sse.chunks); it
must exist. Connection security: the TOOLWIRE_SECURITY_* / TOOLWIRE_SASL_* settings, as for
every command.
exit status: 0 stopped (SIGINT/SIGTERM), 1 the broker or topic could not be reached or the
address is taken, 2 usage error."""


class _Stopped(Exception):
    """SIGTERM, once the server has shut down."""


def _stopped(signum: int, frame: object) -> None:
    raise _Stopped


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {port!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {number}")
    return host.strip("[]"), number


def add(sub: Subparsers) -> None:
    p = sub.add_parser("tap", help="get the bytes in: the tee proxy (tap serve)",
                       description="The tap's command line: 'toolwire tap serve --help'. The "
                                   "Python clients tee in-process instead (toolwire.tap).")
    tap_sub = p.add_subparsers(dest="tap_command", metavar="COMMAND")
    s = tap_sub.add_parser("serve", help="forward requests to an upstream and publish the "
                                         "streamed answers", description=DESCRIPTION,
                           epilog=EPILOG, formatter_class=HelpFormatter)
    s.add_argument("--listen", type=listen_address, default=("127.0.0.1", 8788),
                   metavar="HOST:PORT",
                   help="where to take requests (default 127.0.0.1:8788; port 0: any free "
                        "port, printed once ready). Binding beyond 127.0.0.1 exposes the "
                        "proxy, and the API keys its clients send, to the network")
    s.add_argument("--upstream", action="append", required=True, metavar="[/PREFIX=]URL",
                   help="where requests go: URL for every path, or /PREFIX=URL for the paths "
                        "under /PREFIX (taken off; the longest prefix wins). Repeatable")
    s.add_argument("--provider", metavar="P",
                   help="the provider header of every published body (default: by the "
                        "upstream's host, e.g. api.openai.com is openai)")
    s.add_argument("--session-header", default="x-session-id", metavar="NAME",
                   help="the request header that names the session (default x-session-id; "
                        "without it a body is keyed by its request id)")
    s.add_argument("--http2", action="store_true",
                   help="speak HTTP/2 to the upstreams that offer it (TLS only)")
    s.add_argument("--connect-timeout", type=positive_seconds, default=10.0, metavar="SECONDS",
                   help="give up on an upstream that does not accept the connection within "
                        "this long: 502 (10)")
    s.add_argument("--read-timeout", type=positive_seconds, default=600.0, metavar="SECONDS",
                   help="give up on an upstream silent for this long (600: a model may think "
                        "for minutes before its first byte)")
    s.add_argument("--max-connections", type=positive_int, default=1000, metavar="N",
                   help="open connections to the upstreams at most (1000): one per stream "
                        "in flight; a request over it waits for one to free")
    s.add_argument("--max-request-bytes", type=positive_int, default=32 * 1024 * 1024,
                   metavar="BYTES", help="refuse a larger request body with 413 (32 MiB)")
    s.add_argument("--grace", type=positive_seconds, default=30.0, metavar="SECONDS",
                   help="on SIGTERM, let open responses finish for this long (30)")
    s.add_argument("--broker-timeout", type=positive_seconds, default=10.0, metavar="SECONDS",
                   help="give up starting when Kafka does not answer within this long; later, "
                        "how long a stream's end may wait for the broker before it is "
                        "dropped (10)")
    s.set_defaults(handler=run)
    p.set_defaults(parser=p)


def run(args: argparse.Namespace) -> int:
    import httpx2
    import uvicorn

    from toolwire.publish import BrokerUnreachable, ChunkPublisher
    from toolwire.tap import TeeProxy, parse_upstreams

    try:
        upstreams = parse_upstreams(args.upstream)
    except ValueError as exc:
        raise UsageError(f"--upstream {exc}", PROG) from None
    settings = load_settings(PROG)
    security = kafka_security(PROG, settings)
    bootstrap = find_broker(PROG)
    host, port = args.listen
    try:
        sock = socket.create_server((host, port), family=(
            socket.AF_INET6 if ":" in host else socket.AF_INET))
    except OSError as exc:
        raise Failure(f"cannot listen on {host}:{port}: {exc.strerror or exc}", PROG) from None
    bound = sock.getsockname()[1]
    publisher = ChunkPublisher(bootstrap, settings.topic_chunks, security=security,
                               connect_timeout=args.broker_timeout)
    client = httpx2.AsyncClient(
        http2=args.http2, timeout=httpx2.Timeout(args.read_timeout,
                                                 connect=args.connect_timeout,
                                                 pool=args.read_timeout),
        limits=httpx2.Limits(max_connections=args.max_connections,
                             max_keepalive_connections=min(args.max_connections, 100)),
        follow_redirects=False, trust_env=False)
    app = TeeProxy(upstreams, publisher, client, provider=args.provider,
                   session_header=args.session_header or None,
                   max_request_bytes=args.max_request_bytes)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="toolwire tap: %(levelname)s %(name)s: %(message)s")
    config: Any = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning",
                                 timeout_graceful_shutdown=int(args.grace),
                                 proxy_headers=False, server_header=False)
    server = uvicorn.Server(config)

    async def serve() -> None:
        # The publisher runs in the server's loop: started first, so that a broker or topic
        # that cannot be reached fails the command before any request is taken.
        try:
            await publisher.start()
        except BrokerUnreachable:  # reported below, outside the loop (kafka_failure)
            await client.aclose()
            raise
        except Exception as exc:  # TopicNotFound: it says what to fix
            await client.aclose()
            raise Failure(str(exc) or type(exc).__name__, PROG) from None
        shown = f"[{host}]" if ":" in host else host
        routes = ", ".join((u.prefix or "/") + " -> " + u.url for u in upstreams)
        say("toolwire tap", f"{READY} http://{shown}:{bound} (upstreams: {routes}; topic "
                            f"{settings.topic_chunks} on {bootstrap})")
        try:
            await server.serve(sockets=[sock])
        finally:
            await publisher.stop()
            await client.aclose()
            stats = dict(publisher.push_stats)
            say("toolwire tap", "stopped; streams: " + (", ".join(
                f"{k} {v}" for k, v in sorted(stats.items())) or "none"))

    # uvicorn shuts down gracefully on SIGINT and SIGTERM, then raises the signal again for
    # the handler it found: this one, so that the publisher is stopped (its streams flushed)
    # and the command exits 0 instead of being killed by the default SIGTERM action.
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        asyncio.run(serve())
    except (_Stopped, KeyboardInterrupt):
        pass
    except BrokerUnreachable as exc:
        raise kafka_failure(PROG, exc, bootstrap, settings, security) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    return EXIT_OK
