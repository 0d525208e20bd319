"""A worker's probes: the rules of :class:`toolwire.app.health.Health` on an injected clock, and
the real HTTP server on 127.0.0.1 answering ``/healthz``, ``/readyz`` and ``/metrics`` to real
requests."""

from __future__ import annotations

import inspect
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from toolwire.app.health import Health, HealthServer, serve
from toolwire.app.metrics import WorkerMetrics
from toolwire.config.settings import Settings

STALL = 120.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def health(clock: Clock) -> Health:
    h = Health(STALL, clock=clock)
    h.started()
    return h


# -- the rules ------------------------------------------------------------------------------

def test_before_start_live_but_not_ready(clock: Clock) -> None:
    h = Health(STALL, clock=clock)
    assert h.liveness()[0] is True
    assert h.readiness() == (False, "starting")
    h.backlog(True)
    clock.advance(10 * STALL)  # a slow start (joining, recovery) is no stall
    assert h.liveness()[0] is True
    h.started()
    assert h.readiness() == (True, "ready")
    assert h.liveness()[0] is True  # the stall clock starts with the app


def test_an_idle_worker_with_nothing_to_read_stays_live(health: Health, clock: Clock) -> None:
    health.progressed()
    health.backlog(False)
    clock.advance(100 * STALL)
    assert health.liveness()[0] is True
    assert health.seconds_since_progress() == 100 * STALL


def test_unread_input_without_progress_is_a_stall(health: Health, clock: Clock) -> None:
    health.progressed()
    clock.advance(1000)  # idle for long, nothing to read
    health.backlog(True)  # messages arrive: the stall clock starts now, not at the progress
    clock.advance(STALL - 1)
    health.backlog(True)  # set again periodically: the clock keeps its start
    assert health.liveness()[0] is True
    clock.advance(1)
    live, reason = health.liveness()
    assert live is False
    assert reason.startswith("stalled: unread input on assigned partitions and no message "
                             "handled for 120 s")
    assert "TOOLWIRE_STALL_TIMEOUT=120 s" in reason
    assert health.readiness()[0] is True  # readiness is about recovery, not progress
    health.progressed()  # a message handled: live again
    assert health.liveness()[0] is True
    clock.advance(STALL)
    assert health.liveness()[0] is False
    health.backlog(False)  # caught up: nothing waits, nothing is stalled
    assert health.liveness()[0] is True


def test_the_stall_counts_from_the_later_of_progress_and_backlog(
        health: Health, clock: Clock) -> None:
    health.backlog(True)
    clock.advance(STALL / 2)
    health.progressed()
    clock.advance(STALL - 1)  # 1.5 stall since the backlog, just under one since the progress
    assert health.liveness()[0] is True
    clock.advance(1)
    assert health.liveness()[0] is False


def test_recovery_is_not_ready_and_does_not_count_as_a_stall(
        health: Health, clock: Clock) -> None:
    health.backlog(True)
    health.recovering(True)
    assert health.readiness() == (False, "recovering: table recovery or rebalance in progress")
    clock.advance(10 * STALL)  # a long restore: the agent is paused, not stuck
    assert health.liveness() == (True, "recovering")
    health.recovering(False)
    assert health.readiness() == (True, "ready")
    assert health.liveness()[0] is True  # the stall clock starts again at the end of recovery
    clock.advance(STALL)
    assert health.liveness()[0] is False


def test_failed_is_neither_live_nor_ready_for_good(health: Health, clock: Clock) -> None:
    health.progressed()
    health.failed("KafkaTimeoutError: publish to llm.toolcalls.assembled")
    health.failed("a later fault")  # the first cause is the one reported
    assert health.liveness() == (False,
                                 "failed: KafkaTimeoutError: publish to llm.toolcalls.assembled")
    assert health.readiness()[0] is False
    health.progressed()
    health.backlog(False)
    health.recovering(False)
    assert health.liveness()[0] is False
    assert health.readiness()[0] is False


def test_seconds_since_progress(clock: Clock) -> None:
    h = Health(STALL, clock=clock)
    assert h.seconds_since_progress() is None
    h.progressed()
    clock.advance(2.5)
    assert h.seconds_since_progress() == 2.5


def test_the_stall_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Health(0)


def test_the_stall_timeout_is_a_setting() -> None:
    assert Settings().stall_timeout_seconds == 120.0
    assert Settings.from_env({"TOOLWIRE_STALL_TIMEOUT": "30"}).stall_timeout_seconds == 30.0
    with pytest.raises(ValueError, match="TOOLWIRE_STALL_TIMEOUT='0'"):
        Settings.from_env({"TOOLWIRE_STALL_TIMEOUT": "0"})


# -- the server -----------------------------------------------------------------------------

@pytest.fixture
def served(health: Health) -> Iterator[tuple[HealthServer, WorkerMetrics]]:
    metrics = WorkerMetrics({}, dict, health=health)
    server = serve(health, metrics.registry, "127.0.0.1", 0)
    try:
        yield server, metrics
    finally:
        server.close()


def get(server: HealthServer, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of a real GET."""
    url = f"http://127.0.0.1:{server.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_probes_answer_200_ok(served: tuple[HealthServer, WorkerMetrics]) -> None:
    server, _ = served
    assert get(server, "/healthz") == (200, "text/plain; charset=utf-8", "ok\n")
    assert get(server, "/readyz") == (200, "text/plain; charset=utf-8", "ok\n")
    assert get(server, "/healthz?verbose=1")[0] == 200


def test_probes_answer_503_with_the_reason(served: tuple[HealthServer, WorkerMetrics],
                                           health: Health, clock: Clock) -> None:
    server, _ = served
    health.recovering(True)
    assert get(server, "/readyz") == (503, "text/plain; charset=utf-8",
                                      "recovering: table recovery or rebalance in progress\n")
    assert get(server, "/healthz")[0] == 200
    health.recovering(False)
    health.backlog(True)
    clock.advance(STALL + 5)
    status, _, text = get(server, "/healthz")
    assert status == 503 and text.startswith("stalled: unread input") and "125 s" in text
    health.failed("ProducerFenced: the producer was fenced")
    assert get(server, "/healthz") == (503, "text/plain; charset=utf-8",
                                       "failed: ProducerFenced: the producer was fenced\n")
    assert get(server, "/readyz")[0] == 503


def test_metrics_are_the_registrys_exposition(served: tuple[HealthServer, WorkerMetrics],
                                              health: Health, clock: Clock) -> None:
    server, metrics = served
    health.progressed()
    clock.advance(3)
    metrics.publish_retried("KafkaTimeoutError")
    metrics.publish_failed("MessageSizeTooLargeError")
    metrics.record_refit("deadletter")
    metrics.agent_failed("ProducerFenced")
    status, kind, text = get(server, "/metrics")
    assert (status, kind) == (200, CONTENT_TYPE_LATEST)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples[("toolwire_publish_retries_total", (("error", "KafkaTimeoutError"),))] == 1
    assert samples[("toolwire_publish_failures_total",
                    (("error", "MessageSizeTooLargeError"),))] == 1
    assert samples[("toolwire_records_refit_total", (("topic", "deadletter"),))] == 1
    assert samples[("toolwire_agent_failures_total", (("cause", "ProducerFenced"),))] == 1
    assert samples[("toolwire_worker_live", ())] == 1
    assert samples[("toolwire_worker_ready", ())] == 1
    assert samples[("toolwire_seconds_since_progress", ())] == 3
    assert samples[("toolwire_worker_start_time_seconds", ())] > 0
    assert ("toolwire_messages_consumed_total", ()) in samples
    health.failed("ProducerFenced")
    _, _, text = get(server, "/metrics")
    assert "toolwire_worker_live 0.0" in text and "toolwire_worker_ready 0.0" in text


def test_other_paths_are_404(served: tuple[HealthServer, WorkerMetrics]) -> None:
    server, _ = served
    status, _, text = get(server, "/")
    assert status == 404 and "/healthz" in text
    assert get(server, "/metrics/x")[0] == 404
    assert get(server, "/health")[0] == 404


def test_head_answers_without_a_body(served: tuple[HealthServer, WorkerMetrics]) -> None:
    server, _ = served
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/healthz", method="HEAD")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200 and response.read() == b""


def test_a_broken_collector_answers_500_and_the_probes_still_work(health: Health) -> None:
    metrics = WorkerMetrics({}, dict, health=health)

    class Broken:
        def collect(self) -> Iterator[object]:
            raise RuntimeError("boom")

    metrics.registry.register(Broken())  # type: ignore[arg-type]
    server = serve(health, metrics.registry, "127.0.0.1", 0)
    try:
        assert get(server, "/metrics") == (500, "text/plain; charset=utf-8",
                                           "error: RuntimeError\n")
        assert get(server, "/healthz")[0] == 200
    finally:
        server.close()


def test_the_server_binds_the_given_address_and_settings_default_to_loopback(
        served: tuple[HealthServer, WorkerMetrics]) -> None:
    server, _ = served
    assert server.server_address[0] == "127.0.0.1"
    assert Settings().metrics_bind == "127.0.0.1"
    assert Settings.from_env({}).metrics_bind == "127.0.0.1"
    # Not reachable on another address of the host (when it has one).
    other = _non_loopback_address()
    if other is not None:
        with pytest.raises(OSError), socket.create_connection((other, server.port), timeout=2):
            pass


def test_close_releases_the_port(health: Health) -> None:
    server = serve(health, WorkerMetrics({}, dict).registry, "127.0.0.1", 0)
    port = server.port
    server.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    again = serve(health, WorkerMetrics({}, dict).registry, "127.0.0.1", port)
    again.close()


def test_the_serving_thread_is_a_daemon(served: tuple[HealthServer, WorkerMetrics]) -> None:
    server, _ = served
    assert server.daemon_threads and server._thread.daemon


def test_request_lines_are_not_logged(tmp_path: object) -> None:
    """A process serving probes prints nothing on stderr for the requests it answers."""
    code = (
        "import urllib.request\n"
        "from toolwire.app.health import Health, serve\n"
        "from toolwire.app.metrics import WorkerMetrics\n"
        "h = Health(5); h.started()\n"
        "s = serve(h, WorkerMetrics({}, dict, health=h).registry, '127.0.0.1', 0)\n"
        "for path in ('/healthz', '/readyz', '/metrics'):\n"
        "    urllib.request.urlopen(f'http://127.0.0.1:{s.port}{path}', timeout=5).read()\n"
        "s.close()\n"
        "print('done')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n" and done.stderr == ""


def test_the_api_the_worker_codes_against() -> None:
    assert str(inspect.signature(Health.__init__)) == (
        "(self, stall_seconds: 'float', clock: 'Callable[[], float]' = <built-in function "
        "monotonic>) -> 'None'")
    assert str(inspect.signature(serve)) == (
        "(health: 'Health', registry: 'CollectorRegistry', bind: 'str', port: 'int') "
        "-> 'HealthServer'")
    assert issubclass(HealthServer, __import__("http.server").server.ThreadingHTTPServer)
    for name in ("started", "recovering", "progressed", "backlog", "failed", "liveness",
                 "readiness", "seconds_since_progress"):
        assert callable(getattr(Health, name)), name
    assert "health" in inspect.signature(WorkerMetrics).parameters
    assert inspect.signature(WorkerMetrics).parameters["health"].kind is (
        inspect.Parameter.KEYWORD_ONLY)


def _non_loopback_address() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: picks the outgoing address
            address: str = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address
