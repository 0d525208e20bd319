"""A three-node Kafka KRaft cluster with one node per network namespace.

Why: :mod:`tests.cluster` runs three nodes on loopback, where no network fault can come
between them. Here each node is a host of a :class:`~tests.net.netns.Network` and binds and
advertises its own namespace address, so :meth:`~tests.net.netns.Network.partition`,
:meth:`~tests.net.netns.Network.blackhole` and
:meth:`~tests.net.netns.Network.link_down` cut real replication, controller and client
traffic. Everything else is :class:`tests.cluster.Cluster`'s, reused unchanged: its
``server.properties`` (RF 3, ``min.insync.replicas`` 2, ``broker.session.timeout.ms`` 6 s,
small thread pools for two cores) with only the addresses replaced, its storage format, and
its stop and kill (by the pid of the ``Popen`` started here, which ``ip netns exec`` makes the
JVM's own). Jars and Java come from :func:`toolwire.broker.local.fetch` and its Java lookup
(the shared cache the session broker uses, so nothing is downloaded twice).

The test process is in the root namespace and cannot reach the nodes, so readiness and the
client work run in a client host (``python -m tests.net.cluster ready|roundtrip ...``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cluster import MAIN_CLASS, Cluster, Node, cluster_id
from tests.net.netns import Host, Network
from toolwire.broker import local

#: Every node has its own address, so every node can use Kafka's usual ports.
BROKER_PORT = 9092
CONTROLLER_PORT = 9093
#: The second listener of a cluster with a relay host, and the relays' first port there.
RELAYED_PORT = 9094
RELAY_BASE_PORT = 9100


@dataclass
class NetNode(Node):
    """A :class:`tests.cluster.Node` living in a host of the network."""

    host: Host | None = None

    @property
    def address(self) -> str:
        """The node's namespace address (what it binds and advertises)."""
        assert self.host is not None
        return self.host.address

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{self.broker_port}"


class NetCluster(Cluster):
    """``size`` KRaft nodes, node ``i`` in host ``k<i>`` of ``net``; a context manager.

    ``client`` is the host that checks readiness (by default a host ``kc`` made for it).
    """

    def __init__(self, net: Network, root: Path, size: int = 3, heap: str = "256m",
                 min_insync: int = 2, client: Host | None = None,
                 relay: Host | None = None) -> None:
        """``relay``: a host for slow-link relays. Each node then has a second listener,
        ``RELAYED`` on :data:`RELAYED_PORT`, advertised as that host's address and port
        :meth:`relay_port` of the node, so that a client bootstrapped there (a relay per
        node, :mod:`tests.net.relay`) reaches every node through its relay only (a client
        follows the advertised addresses, so one relay in front of the bootstrap alone
        would be bypassed)."""
        super().__init__(root=root, size=size, heap=heap, min_insync=min_insync)
        self.net = net
        self.client = client
        self.relay = relay
        #: Seconds from the first JVM launched to every node answering with every broker.
        self.boot_seconds: float | None = None

    def __enter__(self) -> NetCluster:
        self.start()
        return self

    @staticmethod
    def relay_port(node_id: int) -> int:
        """The port node ``node_id``'s relay listens on in the relay host."""
        return RELAY_BASE_PORT + node_id

    @property
    def relayed_bootstrap(self) -> str:
        """The bootstrap of a client that must reach the cluster through the relays."""
        assert self.relay is not None
        return ",".join(f"{self.relay.address}:{self.relay_port(n.node_id)}"
                        for n in self.nodes)

    def host_of(self, node_id: int) -> Host:
        """The host node ``node_id`` runs in (what a fault is applied to)."""
        node = self.node(node_id)
        assert isinstance(node, NetNode) and node.host is not None
        return node.host

    def _properties(self, node: Node) -> str:
        """:class:`tests.cluster.Cluster`'s properties, with namespace addresses."""
        props = dict(line.split("=", 1) for line in super()._properties(node).splitlines()
                     if "=" in line and not line.startswith("#"))
        assert isinstance(node, NetNode)
        voters = ",".join(f"{n.node_id}@{n.address}:{n.controller_port}"
                          for n in self.nodes if isinstance(n, NetNode))
        props.update({
            "controller.quorum.voters": voters,
            "listeners": (f"PLAINTEXT://{node.address}:{node.broker_port},"
                          f"CONTROLLER://{node.address}:{node.controller_port}"),
            "advertised.listeners": f"PLAINTEXT://{node.address}:{node.broker_port}",
        })
        if self.relay is not None:
            props["listeners"] += f",RELAYED://{node.address}:{RELAYED_PORT}"
            props["advertised.listeners"] += (
                f",RELAYED://{self.relay.address}:{self.relay_port(node.node_id)}")
            props["listener.security.protocol.map"] += ",RELAYED:PLAINTEXT"
        lines = ["# Generated by tests/net/cluster.py."] + [f"{k}={v}" for k, v in props.items()]
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 150.0) -> None:
        """Hosts, format, launch each node in its host, wait until all answer; on failure
        every node started is stopped (the network removes the hosts)."""
        lib = local.fetch()
        java = local._java()  # the broker module's lookup of a Java 17+
        if self.client is None:
            self.client = self.net.host("kc")
        self.nodes = [NetNode(i + 1, BROKER_PORT, CONTROLLER_PORT, self.root / f"node-{i + 1}",
                              host=self.net.host(f"k{i + 1}")) for i in range(self.size)]
        ident = cluster_id()
        log4j = self.root / "log4j2.properties"
        self.root.mkdir(parents=True, exist_ok=True)
        log4j.write_text(local.LOG4J2)
        try:
            for node in self.nodes:
                node.directory.mkdir(parents=True, exist_ok=True)
                node.props.write_text(self._properties(node))
                self._format(java, lib, log4j, node, ident)  # no network: runs here
            t0 = time.monotonic()
            for node in self.nodes:
                self._launch(java, lib, log4j, node)
            self.wait_ready(timeout)
            self.boot_seconds = time.monotonic() - t0
        except BaseException:
            self.stop()
            raise

    def _launch(self, java: str, lib: Path, log4j: Path, node: Node) -> None:
        assert isinstance(node, NetNode) and node.host is not None
        cmd = [java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+ExitOnOutOfMemoryError",
               "-XX:+UseSerialGC", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={log4j}", f"-Dkafka.logs.dir={node.directory}",
               "-cp", f"{lib}/*", MAIN_CLASS, str(node.props)]
        with node.log.open("ab") as out:
            node.process = node.host.run(cmd, cwd=node.directory, stdout=out,
                                         stderr=subprocess.STDOUT, close_fds=True)

    def wait_ready(self, timeout: float) -> None:
        """Until every live node lists every live node, asked from the client host."""
        assert self.client is not None
        live = [n for n in self.nodes if n.alive()]
        checker = self.client.module(
            "tests.net.cluster", "ready", "--bootstrap", ",".join(n.bootstrap for n in live),
            "--brokers", str(len(live)), "--timeout", str(timeout),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout + 30
        try:
            while checker.poll() is None and time.monotonic() < deadline:
                dead = [n for n in self.nodes if n.process is not None and not n.alive()]
                if dead:
                    code = dead[0].process.returncode if dead[0].process else "?"
                    raise RuntimeError(f"node {dead[0].node_id} exited {code}:\n"
                                       f"{dead[0].tail()}")
                time.sleep(0.25)
        finally:
            self.client.stop(checker)
        if checker.returncode != 0:
            raise RuntimeError("the cluster was not ready in time:\n" + "\n".join(
                f"node {n.node_id}:\n{n.tail(15)}" for n in self.nodes))

    def run_client(self, host: Host, *args: str, timeout: float = 60.0) -> dict[str, Any]:
        """``python -m tests.net.cluster ARGS`` in ``host``; its JSON answer."""
        proc = host.module("tests.net.cluster", *args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            host.stop(proc)
        if proc.returncode != 0:
            raise RuntimeError(f"client {' '.join(args)} failed ({proc.returncode}):\n{err}")
        answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return answer


# --------------------------------------------------------------------------- client side


def _ready(bootstrap: str, brokers: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    nodes = bootstrap.split(",")
    while time.monotonic() < deadline:
        answers = [local.probe(n, timeout=3.0) for n in nodes]
        if all(a is not None and len(a.get("brokers", [])) == brokers for a in answers):
            print(json.dumps({"ready": True, "brokers": brokers}), flush=True)
            return 0
        time.sleep(0.5)
    return 1


async def _roundtrip(bootstrap: str, topic: str, count: int, timeout: float) -> dict[str, Any]:
    """Create ``topic`` (RF 3), produce ``count`` messages with acks=all, read them back,
    and describe the topic's replicas and ISR."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])
        deadline = time.monotonic() + timeout
        while True:  # the topic's metadata reaches every broker a little later
            described = await admin.describe_topics([topic])
            parts = described[0].get("partitions") or []
            if (parts and len(parts[0].get("isr", [])) == 3) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                enable_idempotence=True, request_timeout_ms=15000)
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(topic, f"message-{i}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    received: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        while len(received) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                received += [r.value.decode() for r in records if r.value is not None]
    finally:
        await consumer.stop()
    part = parts[0] if parts else {}
    brokers = sorted([b["node_id"], b["host"], b["port"]] for b in cluster["brokers"])
    return {"brokers": brokers, "received": received, "replicas": sorted(part.get("replicas", [])),
            "isr": sorted(part.get("isr", [])), "leader": part.get("leader")}


def main(argv: Sequence[str] | None = None) -> int:
    """The client side, run inside a host: ``ready`` or ``roundtrip``."""
    parser = argparse.ArgumentParser(prog="python -m tests.net.cluster")
    sub = parser.add_subparsers(dest="command", required=True)
    ready = sub.add_parser("ready", help="wait until every node lists --brokers brokers")
    ready.add_argument("--bootstrap", required=True)
    ready.add_argument("--brokers", type=int, required=True)
    ready.add_argument("--timeout", type=float, default=120.0)
    trip = sub.add_parser("roundtrip", help="create a topic with RF 3, produce and consume")
    trip.add_argument("--bootstrap", required=True)
    trip.add_argument("--topic", required=True)
    trip.add_argument("--count", type=int, default=5)
    trip.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    if args.command == "ready":
        return _ready(args.bootstrap, args.brokers, args.timeout)
    result = asyncio.run(_roundtrip(args.bootstrap, args.topic, args.count, args.timeout))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
