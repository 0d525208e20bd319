"""Health a worker reports to its probes, and the HTTP server that answers them.

A :class:`Health` is written by the worker's event loop (started, recovering, progressed,
backlog, failed) and read by the server's threads. :func:`serve` answers, on one port:

- ``GET /metrics``: the Prometheus exposition of a registry;
- ``GET /healthz`` (liveness): 200 ``ok``, or 503 with the reason once the worker failed
  (it is about to exit) or while it has unread input on its assigned partitions and handled no
  message for ``stall_seconds``: the supervisor should restart it;
- ``GET /readyz`` (readiness): 200 ``ok`` once the app started and while no table recovery or
  rebalance is in progress, 503 with the reason otherwise: route no work to it yet.

A worker with nothing to read is live however long it is idle: only unread input makes silence
a stall. Recovery does not count towards a stall either (the agent is paused while the tables
are restored): the stall clock starts again when recovery ends, so a long restore never gets
a worker killed and restarted into the same restore.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("toolwire.health")

#: Paths :func:`serve` answers.
METRICS_PATH = "/metrics"
LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
_TEXT = "text/plain; charset=utf-8"


class Health:
    """Thread-safe state a worker reports to its probes (written by the event loop, read by the
    HTTP thread)."""

    def __init__(self, stall_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not stall_seconds > 0:
            raise ValueError(f"stall_seconds must be positive, got {stall_seconds!r}")
        self.stall_seconds = stall_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._started_at: float | None = None
        self._recovering = False
        self._recovered_at: float | None = None
        self._held = False
        self._failure: str | None = None
        self._progress_at: float | None = None
        self._backlog_since: float | None = None

    # -- written by the worker ---------------------------------------------------------------

    def started(self) -> None:
        """The worker's app started (before: not ready, but live)."""
        with self._lock:
            if self._started_at is None:
                self._started_at = self._clock()

    def recovering(self, active: bool) -> None:
        """Table recovery or a rebalance in progress: not ready. The stall clock stops while
        it lasts and starts again when it ends."""
        with self._lock:
            if self._recovering and not active:
                self._recovered_at = self._clock()
            self._recovering = active

    def held(self, active: bool) -> None:
        """The zombie fence holds every write until the group coordinator answers: not ready
        (another worker may own the partitions), but live — a restart meets the same silence.
        The stall clock stops while it lasts, like a recovery's."""
        with self._lock:
            if self._held and not active:
                self._recovered_at = self._clock()
            self._held = active

    def progressed(self) -> None:
        """The agent finished handling one input message."""
        with self._lock:
            self._progress_at = self._clock()

    def backlog(self, waiting: bool) -> None:
        """Set periodically: whether assigned input partitions have messages not yet handled."""
        with self._lock:
            if not waiting:
                self._backlog_since = None
            elif self._backlog_since is None:
                self._backlog_since = self._clock()

    def failed(self, cause: str) -> None:
        """A fatal fault: not live from now on (the process is about to exit). The first cause
        is kept."""
        with self._lock:
            if self._failure is None:
                self._failure = cause or "unknown fault"

    # -- read by the probes ------------------------------------------------------------------

    def liveness(self) -> tuple[bool, str]:
        """(live, reason text)."""
        with self._lock:
            if self._failure is not None:
                return False, f"failed: {self._failure}"
            if self._started_at is None:
                return True, "starting"
            if self._recovering:
                return True, "recovering"
            if self._held:
                return True, "held: waiting for the group coordinator to answer"
            if self._backlog_since is None:
                return True, "live: no unread input"
            now = self._clock()
            since = max(t for t in (self._backlog_since, self._progress_at, self._started_at,
                                    self._recovered_at) if t is not None)
            waited = now - since
            if waited >= self.stall_seconds:
                return False, (
                    f"stalled: unread input on assigned partitions and no message handled for "
                    f"{waited:.0f} s (TOOLWIRE_STALL_TIMEOUT={self.stall_seconds:g} s)")
            return True, "live: handling input"

    def readiness(self) -> tuple[bool, str]:
        """(ready, reason text): ready once started, while not recovering and not failed."""
        with self._lock:
            if self._failure is not None:
                return False, f"failed: {self._failure}"
            if self._started_at is None:
                return False, "starting"
            if self._recovering:
                return False, "recovering: table recovery or rebalance in progress"
            if self._held:
                return False, ("held: no heartbeat answered for the session timeout; writing "
                               "nothing until the group coordinator answers")
            return True, "ready"

    def seconds_since_progress(self) -> float | None:
        """Seconds since the agent last handled a message; ``None`` before the first one."""
        with self._lock:
            if self._progress_at is None:
                return None
            return max(0.0, self._clock() - self._progress_at)


class HealthServer(ThreadingHTTPServer):
    """The probe and metrics server of one worker, serving from a daemon thread."""

    daemon_threads = True

    def __init__(self, health: Health, registry: CollectorRegistry, bind: str,
                 port: int) -> None:
        self.address_family = _family(bind, port)
        self.health = health
        self.registry = registry
        super().__init__((bind, port), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, name="toolwire-health",
                                        daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        """The port listened on (the one the OS chose, when asked for port 0)."""
        return int(self.server_address[1])

    def close(self) -> None:
        """Stop serving and release the port."""
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)


def serve(health: Health, registry: CollectorRegistry, bind: str, port: int) -> HealthServer:
    """Serve ``/metrics``, ``/healthz`` and ``/readyz`` on ``bind:port`` from a daemon thread
    (``bind`` is ``settings.metrics_bind``: loopback unless configured)."""
    server = HealthServer(health, registry, bind, port)
    log.debug("probes and metrics at %s:%d", bind, server.port)
    return server


def _family(bind: str, port: int) -> socket.AddressFamily:
    """IPv6 for an IPv6 address (``::``), IPv4 otherwise, as the address resolves."""
    try:
        infos = socket.getaddrinfo(bind or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return socket.AF_INET
    return infos[0][0] if infos else socket.AF_INET


class _Handler(BaseHTTPRequestHandler):
    server: HealthServer
    #: A client that connects and sends nothing does not hold a thread for long.
    timeout = 10
    server_version = "toolwire"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        path = urlsplit(self.path).path
        health = self.server.health
        try:
            if path == METRICS_PATH:
                status, kind, data = 200, CONTENT_TYPE_LATEST, generate_latest(
                    self.server.registry)
            elif path in (LIVENESS_PATH, READINESS_PATH):
                ok, reason = (health.liveness() if path == LIVENESS_PATH
                              else health.readiness())
                status, kind = (200 if ok else 503), _TEXT
                data = ("ok\n" if ok else f"{reason}\n").encode()
            else:
                status, kind = 404, _TEXT
                data = (f"not found: {path} (try {METRICS_PATH}, {LIVENESS_PATH} or "
                        f"{READINESS_PATH})\n").encode()
        except Exception as exc:  # a probe must answer, even when a collector breaks
            log.warning("%s failed: %s: %s", path, type(exc).__name__, exc)
            status, kind, data = 500, _TEXT, f"error: {type(exc).__name__}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """No request lines on stderr (probes come every few seconds)."""
