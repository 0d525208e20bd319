"""A three-node Kafka cluster with one node per namespace: it boots, and a client in a fourth
host creates a topic with RF 3, produces and consumes through the routed network."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.net.cluster import NetCluster
from tests.net.netns import Network

pytestmark = [pytest.mark.netns, pytest.mark.broker, pytest.mark.timeout(300)]


def test_three_nodes_in_namespaces_replicate_a_topic(
        net: Network, tmp_path: Path, record_property: Callable[[str, object], None]) -> None:
    """Every node advertises its own namespace address (what the client is told), the topic
    has three replicas all in sync, the messages come back in order, and every JVM is gone
    once the cluster is stopped."""
    client = net.host("client")
    with NetCluster(net, tmp_path / "cluster", client=client) as cluster:
        assert cluster.boot_seconds is not None
        record_property("boot_seconds", round(cluster.boot_seconds, 1))
        print(f"\nnetns cluster boot: {cluster.boot_seconds:.1f}s")
        answer = cluster.run_client(client, "roundtrip", "--bootstrap", cluster.bootstrap,
                                    "--topic", "netns-rf3", "--count", "5")
        assert answer["brokers"] == [[n.node_id, cluster.host_of(n.node_id).address, 9092]
                                     for n in cluster.nodes]
        assert answer["received"] == [f"message-{i}" for i in range(5)]
        assert answer["replicas"] == [1, 2, 3] and answer["isr"] == [1, 2, 3], answer
        processes = [n.process for n in cluster.nodes]
    assert all(p is not None and p.returncode is not None for p in processes)
    assert all(not cluster.host_of(n.node_id).pids() for n in cluster.nodes)
