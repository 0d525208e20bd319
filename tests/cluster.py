"""A three-node Kafka KRaft cluster on loopback, for the replication test.

Three JVMs of the same Kafka that :mod:`toolwire.broker.local` fetches from Maven Central (its
:func:`~toolwire.broker.local.fetch` and Java lookup are reused; that module is not changed).
Every node is a combined broker and controller with a static quorum of the three
(``controller.quorum.voters``), binds 127.0.0.1 only, on free ports picked at start, and keeps
its data under ``<root>/node-<id>``. Replication defaults suit a 3-node cluster (internal topics
RF 3, ``min.insync.replicas`` 2); a dead node is fenced after ``broker.session.timeout.ms``
(6 s here, Kafka's default is 9 s) so that a test does not wait long for leaders to move.

Processes are only ever signalled by the pid of the ``Popen`` this module started.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from toolwire.broker import local

MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1 (held open together, then released)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def cluster_id() -> str:
    """A Kafka Uuid (22 characters of URL-safe base64, not starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class Node:
    """One combined broker + controller JVM."""

    node_id: int
    broker_port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def log(self) -> Path:
        return self.directory / "broker.log"

    @property
    def props(self) -> Path:
        return self.directory / "server.properties"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return f"({self.log} is missing)"
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Cluster:
    """``size`` KRaft nodes on loopback; use as a context manager (stops every node)."""

    root: Path
    size: int = 3
    heap: str = "256m"
    #: ``min.insync.replicas`` default of the brokers (the internal topics use it too).
    min_insync: int = 2
    nodes: list[Node] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        """Every node's listener (what a client is given: any of them answers)."""
        return ",".join(n.bootstrap for n in self.nodes)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- configuration ---------------------------------------------------------------------

    def _properties(self, node: Node) -> str:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        rf = str(min(3, self.size))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": (f"PLAINTEXT://127.0.0.1:{node.broker_port},"
                          f"CONTROLLER://127.0.0.1:{node.controller_port}"),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.broker_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(node.data),
            "num.partitions": "1",
            "default.replication.factor": rf,
            "min.insync.replicas": str(self.min_insync),
            "auto.create.topics.enable": "false",
            "delete.topic.enable": "true",
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": str(self.min_insync),
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": str(self.min_insync),
            # A dead node is fenced (and leaves every ISR) after this long.
            "broker.heartbeat.interval.ms": "1000",
            "broker.session.timeout.ms": "6000",
            # Small thread pools: three JVMs share two cores.
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.replica.fetchers": "1",
            "log.cleaner.threads": "1",
            "num.recovery.threads.per.data.dir": "1",
        }
        lines = ["# Generated by tests/cluster.py."] + [f"{k}={v}" for k, v in props.items()]
        return "\n".join(lines) + "\n"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 150.0) -> None:
        """Format and launch every node; return once all of them answer with ``size``
        live brokers. On failure, every node started is stopped and the error carries the
        log tails."""
        lib = local.fetch()
        java = local._java()  # the broker module's lookup of a Java 17+
        ports = free_ports(2 * self.size)
        self.nodes = [Node(i + 1, ports[2 * i], ports[2 * i + 1], self.root / f"node-{i + 1}")
                      for i in range(self.size)]
        ident = cluster_id()
        log4j = self.root / "log4j2.properties"
        self.root.mkdir(parents=True, exist_ok=True)
        log4j.write_text(local.LOG4J2)
        try:
            for node in self.nodes:
                node.directory.mkdir(parents=True, exist_ok=True)
                node.props.write_text(self._properties(node))
                self._format(java, lib, log4j, node, ident)
            for node in self.nodes:
                self._launch(java, lib, log4j, node)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _format(self, java: str, lib: Path, log4j: Path, node: Node, ident: str) -> None:
        cmd = [java, "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{lib}/*",
               STORAGE_TOOL, "format", "--cluster-id", ident, "--config", str(node.props)]
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"formatting node {node.node_id} failed "
                               f"({done.returncode}):\n{done.stdout}{done.stderr}")

    def _launch(self, java: str, lib: Path, log4j: Path, node: Node) -> None:
        cmd = [java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+ExitOnOutOfMemoryError",
               "-XX:+UseSerialGC", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={log4j}", f"-Dkafka.logs.dir={node.directory}",
               "-cp", f"{lib}/*", MAIN_CLASS, str(node.props)]
        with node.log.open("ab") as out:
            node.process = subprocess.Popen(cmd, cwd=node.directory, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True, close_fds=True)

    def wait_ready(self, timeout: float) -> None:
        """Until every live node answers a metadata request listing every live node."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [n for n in self.nodes if n.alive()]
            dead = [n for n in self.nodes if n.process is not None and not n.alive()]
            if dead:
                raise RuntimeError(f"node {dead[0].node_id} exited "
                                   f"{dead[0].process.returncode if dead[0].process else '?'}"
                                   f":\n{dead[0].tail()}")
            answers = [local.probe(n.bootstrap, timeout=5.0) for n in live]
            if all(a is not None and len(a.get("brokers", [])) == len(live) for a in answers):
                return
            time.sleep(0.5)
        raise RuntimeError("the cluster was not ready in time:\n" + "\n".join(
            f"node {n.node_id}:\n{n.tail(15)}" for n in self.nodes))

    def kill(self, node_id: int) -> None:
        """A crash of one node: SIGKILL by its pid."""
        node = self.node(node_id)
        if node.process is not None and node.process.poll() is None:
            os.kill(node.process.pid, signal.SIGKILL)
            node.process.wait(timeout=30)

    def stop_node(self, node: Node, timeout: float = 20.0) -> None:
        """SIGTERM (a clean shutdown), SIGKILL after ``timeout``; by pid only."""
        process = node.process
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def stop(self) -> None:
        """Stop every node this cluster started (all at once, then wait for each)."""
        running = [n for n in self.nodes if n.process is not None and n.process.poll() is None]
        for node in running:
            assert node.process is not None
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for node in running:
            assert node.process is not None
            try:
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.process.pid, signal.SIGKILL)
                node.process.wait(timeout=30)

    def describe(self) -> dict[str, Any]:
        """``node id → {"pid", "bootstrap", "alive"}``, for messages."""
        return {str(n.node_id): {"pid": None if n.process is None else n.process.pid,
                                 "bootstrap": n.bootstrap, "alive": n.alive()}
                for n in self.nodes}
