"""The Kafka clients and admin reads that the worker and the operator tools share.

- :mod:`~toolwire.kafka.clients`: :func:`open_client`, the one way a client is made, started
  (bounded) and closed on every path, a failed start included; :class:`KafkaUnreachable`,
  what a start that reaches no bootstrap server raises.
- :mod:`~toolwire.kafka.group`: a consumer group's status (:func:`group_status`: offsets, lag,
  members, the tables' changelogs, recent dead letters) and its members' partitions
  (:func:`group_members`).
- :mod:`~toolwire.kafka.topics`: what the broker says about topics (partition counts,
  configs, :func:`topic_max_message_bytes`).

It sits below both the worker (:mod:`toolwire.app`) and the operator's commands
(:mod:`toolwire.tools`, :mod:`toolwire.cli`), and imports neither: only the settings and the
stream's message and state codecs.
"""

from __future__ import annotations

from toolwire.kafka.clients import KafkaUnreachable, close_client, open_client, start_client
from toolwire.kafka.group import GroupStatus, PartitionPosition, Stall, group_members, group_status
from toolwire.kafka.topics import (
    TopicError,
    changelog_configs,
    partition_counts,
    topic_configs,
    topic_max_message_bytes,
)

__all__ = [
    "GroupStatus",
    "KafkaUnreachable",
    "PartitionPosition",
    "Stall",
    "TopicError",
    "changelog_configs",
    "close_client",
    "group_members",
    "group_status",
    "open_client",
    "partition_counts",
    "start_client",
    "topic_configs",
    "topic_max_message_bytes",
]
