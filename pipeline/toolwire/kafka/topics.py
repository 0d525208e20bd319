"""What the broker says about topics: partition counts and configs (the admin reads behind
``toolwire topics apply``), the ``max.message.bytes`` a worker builds its records to fit, and
the configs the worker gives its changelog topics.

The topic contracts, and making a broker agree with them, are the operator's
(:mod:`toolwire.tools.topics`); these reads are shared with the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from toolwire.config.settings import Settings
from toolwire.kafka.clients import open_client


class TopicError(RuntimeError):
    """The broker refused or did not finish an operation on a topic."""


def changelog_configs(settings: Settings) -> dict[str, str]:
    """Topic configs of the tables' changelog topics (Faust adds ``cleanup.policy=compact``):
    segments that roll, so that compaction runs, and tombstones kept for a bounded time, so
    that a restore reads about the live keys and the last hour's deletions, not the whole
    history (:class:`~toolwire.config.settings.Settings`, ``changelog_segment_seconds``). The
    worker creates its changelogs with them; ``toolwire topics apply`` reports the changelogs
    that differ (Kafka keeps an existing topic's configs)."""
    configs = {
        "segment.ms": str(int(settings.changelog_segment_seconds * 1000)),
        "segment.bytes": str(settings.changelog_segment_bytes),
        "delete.retention.ms": str(int(settings.changelog_tombstone_retention_seconds * 1000)),
    }
    if settings.min_insync_replicas is not None:
        configs["min.insync.replicas"] = str(settings.min_insync_replicas)
    return configs


async def partition_counts(admin: Any, names: Sequence[str]) -> dict[str, int]:
    """Partition count of each topic that the broker describes without error."""
    if not names:
        return {}
    return {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(list(names))
            if t["error_code"] == 0}


async def topic_configs(admin: Any, names: Sequence[str],
                        wanted: Sequence[str] = ("cleanup.policy", "retention.ms"),
                        ) -> dict[str, dict[str, str]]:
    """The ``wanted`` configs of each topic, as the broker spells them."""
    if not names:
        return {}
    responses = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, n, dict.fromkeys(wanted)) for n in names])
    configs: dict[str, dict[str, str]] = {}
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"] != 0:
                raise TopicError(f"describing the configs of topic {resource['resource_name']} "
                                 f"failed: {resource['error_message'] or resource['error_code']}")
            configs[resource["resource_name"]] = {
                e["config_names"]: e["config_value"] for e in resource["config_entries"]}
    return configs


async def topic_max_message_bytes(settings: Settings, topic: str,
                                  timeout: float = 15.0) -> int | None:
    """The effective ``max.message.bytes`` of ``topic`` (its own, or the broker's default),
    or ``None`` when the broker does not say: the worker builds records to fit it."""
    from toolwire.config.security import client_options

    async with open_client(AIOKafkaAdminClient, settings.bootstrap, start_timeout=timeout,
                           client_id="toolwire-limits",
                           request_timeout_ms=int(timeout * 1000),
                           **client_options(settings)) as admin:
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": None})])
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"] != 0:
                raise TopicError(f"describing topic {topic} failed: "
                                 f"{resource['error_message'] or resource['error_code']}")
            for entry in resource["config_entries"]:
                if entry["config_names"] == "max.message.bytes":
                    value = entry["config_value"]
                    return int(value) if value and str(value).isdigit() else None
    return None
