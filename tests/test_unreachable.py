"""Every command that talks to Kafka, run as a user runs it against a cluster that is not
there (a closed port on 127.0.0.1): it exits 1 (the worker 75, its supervisor's restart
status) within seconds with one line on stderr that
names the address and says what to fix, and leaves nothing behind: no traceback, no
``Unclosed AIOKafka…`` warning, no task destroyed pending, no exception ignored.

No broker is started here (that is the point), so nothing is marked ``broker``. The helper
every client is opened with (:func:`toolwire.kafka.open_client`) is checked in process too.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError

from toolwire.kafka import KafkaUnreachable, open_client, start_client

#: What stderr must never hold: a traceback, a client left open (aiokafka's warnings), a task
#: or an exception the interpreter gave up on, a coroutine never awaited.
NOISE = ("Traceback", "Unclosed", "Task was destroyed", "Exception ignored",
         "ResourceWarning", "never awaited", "Unable connect to")
#: Each case's bound: a closed port is refused at once, so this is interpreter start-up,
#: imports (Faust for the worker) and the command's own work.
CASE_SECONDS = 20.0
ADVICE = "start the broker, or point KAFKA_BOOTSTRAP_SERVERS at a running one"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: bound once to get it, then closed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def bootstrap() -> str:
    return f"127.0.0.1:{closed_port()}"


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without its Kafka and Toolwire settings, warnings shown."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TOOLWIRE_", "KAFKA_")) and k != "PYTHONASYNCIODEBUG"}
    env.update(PYTHONWARNINGS="always", TOOLWIRE_STATE_DIR=str(tmp_path / "state"), **extra)
    return env


def run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str],
                                                                  float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "toolwire.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    return done, time.monotonic() - started


def assert_quiet(stderr: str) -> None:
    for noise in NOISE:
        assert noise not in stderr, f"{noise!r} in stderr:\n{stderr}"


#: (prog as it names itself, the arguments after ``toolwire``). Every timeout is the
#: command's own flag, short; a closed port needs none of them to run out.
COMMANDS: list[tuple[str, list[str]]] = [
    ("toolwire status", ["status", "--timeout", "5"]),
    ("toolwire topics", ["topics", "apply", "--timeout", "5"]),
    ("toolwire dlq list", ["dlq", "list"]),
    ("toolwire dlq show", ["dlq", "show", "0:0"]),
    ("toolwire dlq replay", ["dlq", "replay", "0:0"]),
    ("toolwire dlq replay", ["dlq", "replay", "--reason", "unknown_tool"]),
    ("toolwire dlq release", ["dlq", "release", "session-1"]),
    ("toolwire consume", ["consume", "assembled", "--idle-timeout", "1"]),
    ("toolwire publish", ["publish", "{capture}", "--session", "s", "--timeout", "5"]),
    ("toolwire tap serve", ["tap", "serve", "--upstream", "http://127.0.0.1:9",
                            "--listen", "127.0.0.1:0", "--broker-timeout", "5"]),
    ("toolwire worker", ["worker", "--loglevel", "warning"]),
    ("toolwire demo", ["demo", "--timeout", "5"]),
]


@pytest.mark.parametrize(("prog", "args"), COMMANDS,
                         ids=["-".join(a for a in args[:2] if not a.startswith("{"))
                              + ("-selected" if "--reason" in args else "")
                              for _, args in COMMANDS])
def test_a_command_says_the_cluster_cannot_be_reached_and_leaves_nothing_open(
        prog: str, args: list[str], bootstrap: str, tmp_path: Path) -> None:
    if args[0] == "tap":
        pytest.importorskip("httpx2")
        pytest.importorskip("uvicorn")
    capture = tmp_path / "capture.sse"
    capture.write_bytes(b'data: {"choices":[]}\n\ndata: [DONE]\n\n')
    argv = [a.format(capture=capture) for a in args]
    done, took = run(argv, environment(tmp_path, KAFKA_BOOTSTRAP_SERVERS=bootstrap), tmp_path)
    # The worker's cluster may be cut off for a while (a partition, brokers restarting): it
    # exits with the status its supervisor restarts it on, not for good.
    worker = prog == "toolwire worker"
    assert done.returncode == (75 if worker else 1), done.stderr
    assert took < CASE_SECONDS, f"{prog} took {took:.1f}s"
    assert_quiet(done.stderr)
    lines = done.stderr.splitlines()
    # The demo says what it is doing first; every other command prints the error alone.
    if prog != "toolwire demo":
        assert len(lines) == 1, done.stderr
    error = lines[-1]
    expected = f"cannot reach Kafka at {bootstrap} (connection refused): {ADVICE}"
    if worker:
        expected += "; exiting 75 for the process supervisor to start the worker again"
    assert error == f"{prog}: {'failed: ' if prog == 'toolwire demo' else ''}{expected}"
    assert done.stdout == ""


def test_topics_apply_names_its_bootstrap_flag(bootstrap: str, tmp_path: Path) -> None:
    done, _ = run(["topics", "apply", "--timeout", "5", "--bootstrap", bootstrap],
                  environment(tmp_path), tmp_path)
    assert done.returncode == 1, done.stderr
    assert_quiet(done.stderr)
    assert done.stderr.splitlines() == [
        f"toolwire topics: cannot reach Kafka at {bootstrap} (connection refused): start the "
        "broker, or point --bootstrap at a running one"]


def test_every_bootstrap_server_is_named_with_its_failure(tmp_path: Path) -> None:
    first, second = f"127.0.0.1:{closed_port()}", f"127.0.0.1:{closed_port()}"
    done, _ = run(["status", "--timeout", "5"],
                  environment(tmp_path, KAFKA_BOOTSTRAP_SERVERS=f"{first},{second}"), tmp_path)
    assert done.returncode == 1, done.stderr
    assert_quiet(done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"toolwire status: cannot reach Kafka at {first},{second} (")
    assert f"{first}: connection refused" in line and f"{second}: connection refused" in line


def test_broker_status_of_an_external_cluster_answers_not_ready(bootstrap: str,
                                                                tmp_path: Path) -> None:
    done, took = run(["broker", "status"],
                     environment(tmp_path, KAFKA_BOOTSTRAP_SERVERS=bootstrap), tmp_path)
    assert done.returncode == 1, done.stderr
    assert took < CASE_SECONDS
    assert_quiet(done.stderr)
    assert orjson.loads(done.stdout) == {"bootstrap": bootstrap, "cluster_id": None,
                                         "external": True, "ready": False}


# --------------------------------------------------------------------------- the helper


@pytest.fixture
def no_unclosed_clients() -> Iterator[list[str]]:
    """The ResourceWarnings aiokafka gives for clients collected open, and the loop's
    exception-handler reports; the test fails if any."""
    reports: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield reports
        gc.collect()
    reports += [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert reports == []


def _handled(loop: asyncio.AbstractEventLoop, reports: list[str]) -> None:
    loop.set_exception_handler(lambda _, context: reports.append(str(context.get("message"))))


@pytest.mark.parametrize("factory", [AIOKafkaConsumer, AIOKafkaProducer, AIOKafkaAdminClient],
                         ids=["consumer", "producer", "admin"])
def test_a_failed_start_closes_the_client(factory: Any, bootstrap: str,
                                          no_unclosed_clients: list[str]) -> None:
    async def attempt() -> None:
        _handled(asyncio.get_running_loop(), no_unclosed_clients)
        async with open_client(factory, bootstrap, start_timeout=10, request_timeout_ms=5000):
            raise AssertionError("started against a closed port")

    with pytest.raises(KafkaUnreachable) as raised:
        asyncio.run(attempt())
    assert isinstance(raised.value, KafkaConnectionError)  # what aiokafka raises, refined
    assert str(raised.value) == f"cannot reach Kafka at {bootstrap} (connection refused)"
    assert raised.value.bootstrap == bootstrap and raised.value.why == "connection refused"


class _Client:
    """A client whose ``start`` fails (or never ends) and that records being closed."""

    def __init__(self, start: str = "fails", **options: Any) -> None:
        self.how = start
        self.options = options
        self.stopped = 0

    async def start(self) -> None:
        if self.how == "hangs":
            await asyncio.Event().wait()
        if self.how == "fails":
            raise ValueError("refused")

    async def stop(self) -> None:
        self.stopped += 1


def test_every_way_out_closes_the_client() -> None:
    made: list[_Client] = []

    def factory(**options: Any) -> _Client:
        made.append(_Client(**options))
        return made[-1]

    async def body_fails() -> None:
        async with open_client(factory, "host:1", start="ok"):
            raise LookupError("the block's own error")

    with pytest.raises(LookupError):
        asyncio.run(body_fails())

    async def start_fails() -> None:
        async with open_client(factory, "host:1", start="fails"):
            raise AssertionError("unreachable")

    with pytest.raises(ValueError, match="refused"):  # not a connection error: left as it is
        asyncio.run(start_fails())

    async def start_hangs() -> None:
        async with open_client(factory, "host:1", start="hangs", start_timeout=0.2):
            raise AssertionError("unreachable")

    with pytest.raises(KafkaUnreachable, match=r"cannot reach Kafka at host:1 \(no answer "
                                               r"within 0\.2s\)"):
        asyncio.run(start_hangs())

    async def cancelled() -> None:
        made.append(_Client("hangs"))
        task = asyncio.create_task(start_client(made[-1], "host:1"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())

    async def ok() -> None:
        async with open_client(factory, "host:1", start="ok") as client:
            assert client.options == {"bootstrap_servers": "host:1"}

    asyncio.run(ok())
    assert [c.stopped for c in made] == [1, 1, 1, 1, 1]
