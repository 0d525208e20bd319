"""Prometheus metrics of a worker, written with ``prometheus-client`` (never by hand).

Every name starts with ``toolwire_``; label values are bounded: reasons and repair kinds are
fixed sets, providers are the first :data:`MAX_PROVIDERS` names seen (later ones count as
``other``), provider error codes outside a known set count as ``OTHER``. No request or session
id is ever a label.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from toolwire.core.identity import REPAIR_NAMES
from toolwire.status import PartitionPosition
from toolwire.stream.observe import Settled

#: Distinct ``provider`` label values; any further provider is counted as ``other``.
MAX_PROVIDERS: Final = 32
#: Error codes kept as label values (the provider's finish reason upper-cased, or ours).
KNOWN_ERROR_CODES: Final = frozenset({
    "CONTENT_FILTER", "EMPTY_RESPONSE", "FUNCTION_CALL", "INSUFFICIENT_SYSTEM_RESOURCE",
    "ERROR", "SAFETY", "RECITATION", "MAX_TOKENS", "OTHER",
})
#: Processor event counts exposed as their own counters: stats key → (name, help).
EVENT_COUNTERS: Final = {
    "chunks_applied": ("toolwire_chunks_applied_total",
                       "Input messages applied to an open response."),
    "duplicates_skipped": ("toolwire_duplicate_chunks_total",
                           "Chunks skipped as already applied (replays after a crash)."),
    "late_after_decision": ("toolwire_late_chunks_total",
                            "Chunks that arrived after their response was decided."),
    "end_after_decision": ("toolwire_late_end_markers_total",
                           "End markers that arrived after their response was decided."),
    "malformed_messages": ("toolwire_malformed_messages_total",
                           "Input messages that broke the input contract."),
    "internal_errors": ("toolwire_internal_errors_total",
                        "Faults no rule names; each failed its whole response."),
    "streams_abandoned": ("toolwire_streams_abandoned_total",
                          "Responses swept after the stream TTL without an end."),
    "responses_opened": ("toolwire_responses_opened_total", "Responses opened."),
    "responses_rebuilt": ("toolwire_responses_rebuilt_total",
                          "Open responses rebuilt from the changelogs after a restart."),
    "sessions_quarantined": ("toolwire_sessions_quarantined_total",
                             "Sessions put in quarantine."),
    "sessions_released": ("toolwire_sessions_released_total",
                          "Sessions released from quarantine by an operator."),
    "control_malformed": ("toolwire_control_messages_ignored_total",
                          "Control messages ignored as unreadable or unknown."),
    "state_flushes": ("toolwire_state_flushes_total",
                      "Flushes of the write-behind cache (one before each commit)."),
    "state_writes": ("toolwire_state_writes_total",
                     "Table writes (changelog records) made by those flushes."),
    "recovery_flow_resumed": ("toolwire_recovery_flow_resumed_total",
                              "Table recoveries found with their consumer flow stopped and "
                              "resumed (a faust-streaming stall, see toolwire.app.fixes)."),
}
_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                           30.0, 60.0, 300.0, 600.0)


class _Bounded:
    """Maps label values to a bounded set: the first ``limit`` seen, then ``other``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        if not value:
            return "unknown"
        value = value[:64]
        with self.lock:
            if value in self.seen:
                return value
            if len(self.seen) < self.limit:
                self.seen.add(value)
                return value
        return "other"


class WorkerMetrics:
    """The metrics of one worker: an :class:`~toolwire.stream.observe.Observer` of its
    processor, plus gauges read at scrape time."""

    def __init__(self, stats: Mapping[str, int], gauges: Callable[[], Mapping[str, float]],
                 registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.provider = _Bounded(MAX_PROVIDERS)
        r = self.registry
        self.messages = Counter("toolwire_messages_consumed", "Input messages consumed.",
                                registry=r)
        self.bytes = Counter("toolwire_consumed", "Input value bytes consumed.",
                             unit="bytes", registry=r)
        self.assembled = Counter("toolwire_responses_assembled",
                                 "Responses published as assembled records.", ["provider"],
                                 registry=r)
        self.dead_letters = Counter("toolwire_dead_letters", "Dead letters published.",
                                    ["reason", "provider"], registry=r)
        self.truncated = Counter("toolwire_truncated_responses",
                                 "Assembled responses the provider truncated (length).",
                                 ["provider"], registry=r)
        self.provider_errors = Counter("toolwire_provider_errors",
                                       "Assembled responses with an error code.",
                                       ["provider", "code"], registry=r)
        self.repairs = Counter("toolwire_identity_repairs",
                               "What the assembler did instead of trusting the wire.",
                               ["provider", "kind"], registry=r)
        self.last_chunk_latency = Histogram(
            "toolwire_last_chunk_to_publish_seconds",
            "Produce time of a response's last chunk to its record acknowledged.",
            buckets=_LATENCY_BUCKETS, registry=r)
        self.first_chunk_latency = Histogram(
            "toolwire_first_chunk_to_publish_seconds",
            "Produce time of a response's first chunk to its record acknowledged.",
            buckets=_LATENCY_BUCKETS, registry=r)
        r.register(_StatsCollector(stats, gauges))
        self.end_offset = Gauge("toolwire_topic_end_offset",
                                "End offset of each partition of Toolwire's topics.",
                                ["topic", "partition"], registry=r)
        self.committed_offset = Gauge("toolwire_consumer_committed_offset",
                                      "The worker group's committed offset on the input topic.",
                                      ["partition"], registry=r)
        self.lag_messages = Gauge("toolwire_consumer_lag_messages",
                                  "Input messages not yet processed.", ["partition"],
                                  registry=r)
        self.lag_seconds = Gauge("toolwire_consumer_lag_seconds",
                                 "Age of the oldest input message not yet processed.",
                                 ["partition"], registry=r)
        self.live_members = Gauge("toolwire_group_members",
                                  "Live members of the worker group.", registry=r)

    def positions(self, members: int, positions: Iterable[PartitionPosition]) -> None:
        """Topic metrics, from a :func:`toolwire.status.group_status` of the group."""
        self.live_members.set(members)
        for p in positions:
            partition = str(p.partition)
            self.end_offset.labels(p.topic, partition).set(p.end_offset)
            if p.lag_messages is None:
                continue
            if p.committed is not None:
                self.committed_offset.labels(partition).set(p.committed)
            self.lag_messages.labels(partition).set(p.lag_messages)
            if p.lag_seconds is not None:
                self.lag_seconds.labels(partition).set(p.lag_seconds)

    # -- Observer ------------------------------------------------------------------------------

    def consumed(self, size: int) -> None:
        self.messages.inc()
        self.bytes.inc(size)

    def settled(self, response: Settled) -> None:
        provider = self.provider(response.provider)
        if response.outcome == "assembled":
            self.assembled.labels(provider).inc()
            if response.truncated:
                self.truncated.labels(provider).inc()
            if response.error_code:
                code = (response.error_code if response.error_code in KNOWN_ERROR_CODES
                        else "OTHER")
                self.provider_errors.labels(provider, code).inc()
        else:
            self.dead_letters.labels(response.reason or "unknown", provider).inc()
        for kind in REPAIR_NAMES:
            count = response.repairs.get(kind, 0)
            if count:
                self.repairs.labels(provider, kind).inc(count)
        if response.last_timestamp is not None:
            self.last_chunk_latency.observe(max(0.0, response.published
                                                - response.last_timestamp))
        if response.first_timestamp is not None:
            self.first_chunk_latency.observe(max(0.0, response.published
                                                 - response.first_timestamp))


class _StatsCollector(Collector):
    """The processor's event counts and state gauges, read when Prometheus scrapes."""

    def __init__(self, stats: Mapping[str, int],
                 gauges: Callable[[], Mapping[str, float]]) -> None:
        self.stats = stats
        self.gauges = gauges

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        for key, (name, help) in EVENT_COUNTERS.items():
            yield CounterMetricFamily(name.removesuffix("_total"), help,
                                      value=self.stats.get(key, 0))
        values = self.gauges()
        yield GaugeMetricFamily("toolwire_open_responses", "Responses open in this worker.",
                                value=values.get("open_responses", 0))
        yield GaugeMetricFamily("toolwire_quarantined_sessions",
                                "Sessions in quarantine on this worker's partitions.",
                                value=values.get("quarantined_sessions", 0))
        entries = GaugeMetricFamily("toolwire_state_entries",
                                    "Entries of the worker's tables.", labels=["table"])
        for table in ("chunks", "responses", "quarantine"):
            entries.add_metric([table], values.get(f"entries.{table}", 0))
        yield entries
        oldest = GaugeMetricFamily(
            "toolwire_oldest_open_response_timestamp_seconds",
            "Unix time at which the oldest response open on this worker was opened "
            "(no sample when none is open).")
        if values.get("oldest_open") is not None:
            oldest.add_metric([], values["oldest_open"])
        yield oldest
