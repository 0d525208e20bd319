"""Prometheus metrics of a worker, written with ``prometheus-client`` (never by hand).

Every name starts with ``toolwire_`` (besides prometheus-client's standard ``process_*``
metrics, on platforms that have them); label values are bounded: reasons and repair kinds are
fixed sets, providers are the first :data:`MAX_PROVIDERS` names seen (later ones count as
``other``), provider error codes outside a known set count as ``OTHER``, publish errors and
agent failure causes are the first :data:`MAX_ERRORS` seen. No request or session id is ever a
label.

Restarts: a restarted worker is a new process whose counters start at zero, so no counter
counts restarts. Each start shows as a new value of ``toolwire_worker_start_time_seconds``
(and of the standard ``process_start_time_seconds``, the same value where
:class:`~prometheus_client.ProcessCollector` reads ``/proc``):
``changes(toolwire_worker_start_time_seconds[15m])`` counts the restarts Prometheus saw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from toolwire.core.identity import REPAIR_NAMES
from toolwire.kafka import PartitionPosition
from toolwire.stream.observe import Event, Settled

if TYPE_CHECKING:  # toolwire.app imports this module: no import of the package at run time
    from toolwire.app.health import Health

#: Distinct ``provider`` label values; any further provider is counted as ``other``.
MAX_PROVIDERS: Final = 32
#: Distinct ``error`` label values (one set for publish retries and failures), and as many
#: ``cause`` values of agent failures.
MAX_ERRORS: Final = 16
#: Distinct ``topic`` label values of refitted records (the outputs).
MAX_TOPICS: Final = 8
#: When this module was first imported: the worker's start time where ``/proc`` is not read.
_IMPORTED_AT: Final = time.time()
#: Error codes kept as label values (the provider's finish reason upper-cased, or ours).
KNOWN_ERROR_CODES: Final = frozenset({
    "CONTENT_FILTER", "EMPTY_RESPONSE", "FUNCTION_CALL", "INSUFFICIENT_SYSTEM_RESOURCE",
    "ERROR", "SAFETY", "RECITATION", "MAX_TOKENS", "OTHER",
    # A refusal, and provider errors inside the stream (Groq, OpenRouter).
    "REFUSAL", "PROVIDER_ERROR", "TOOL_USE_FAILED",
})
#: Event counts (``Processor.stats``) exposed as their own counters: event → (name, help).
#: Keyed by the one enumeration of the counts, so a key cannot drift from what is counted.
EVENT_COUNTERS: Final[Mapping[Event, tuple[str, str]]] = {
    Event.CHUNKS_APPLIED: ("toolwire_chunks_applied_total",
                           "Input messages applied to an open response."),
    Event.DUPLICATES_SKIPPED: ("toolwire_duplicate_chunks_total",
                               "Chunks skipped as already applied (replays after a crash)."),
    Event.LATE_AFTER_DECISION: ("toolwire_late_chunks_total",
                                "Chunks that arrived after their response was decided."),
    Event.END_AFTER_DECISION: ("toolwire_late_end_markers_total",
                               "End markers that arrived after their response was decided."),
    Event.MALFORMED_MESSAGES: ("toolwire_malformed_messages_total",
                               "Input messages that broke the input contract."),
    Event.INTERNAL_ERRORS: ("toolwire_internal_errors_total",
                            "Faults no rule names; each failed its whole response."),
    Event.STREAMS_ABANDONED: ("toolwire_streams_abandoned_total",
                              "Responses swept after the stream TTL without an end."),
    Event.RESPONSES_OPENED: ("toolwire_responses_opened_total", "Responses opened."),
    Event.RESPONSES_REBUILT: ("toolwire_responses_rebuilt_total",
                              "Open responses rebuilt from the changelogs after a restart."),
    Event.SESSIONS_QUARANTINED: ("toolwire_sessions_quarantined_total",
                                 "Sessions put in quarantine."),
    Event.SESSIONS_RELEASED: ("toolwire_sessions_released_total",
                              "Sessions released from quarantine by an operator."),
    Event.CONTROL_MALFORMED: ("toolwire_control_messages_ignored_total",
                              "Control messages ignored as unreadable or unknown."),
    Event.FRAMES_AFTER_END: ("toolwire_frames_after_end_total",
                             "SSE events after a wire's end (a gateway's trailers): not read, "
                             "counted, never a fault."),
    Event.STATE_FLUSHES: ("toolwire_state_flushes_total",
                          "Flushes of the write-behind cache (one before each commit)."),
    Event.STATE_WRITES: ("toolwire_state_writes_total",
                         "Table writes (changelog records) made by those flushes."),
    Event.STATE_SEGMENTS_REREAD: ("toolwire_state_segments_reread_total",
                                  "Stored segments an open response's metadata counted but "
                                  "its changelog lacked after a restart (a flush whose commit "
                                  "never completed): its chunks are read again from the "
                                  "uncommitted input."),
    Event.RECOVERY_FLOW_RESUMED: ("toolwire_recovery_flow_resumed_total",
                                  "Table recoveries found with their consumer flow stopped and "
                                  "resumed (a faust-streaming stall, see toolwire.app.watchdog)."),
    Event.FENCE_HOLDS: ("toolwire_fence_holds_total",
                        "Times (outages, not writes) the worker held every write and commit "
                        "because no heartbeat of "
                        "its group was answered for the session timeout (a cluster or network "
                        "outage; see toolwire.app.fencing)."),
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
                 registry: CollectorRegistry | None = None, *,
                 health: Health | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.provider = _Bounded(MAX_PROVIDERS)
        self.error = _Bounded(MAX_ERRORS)
        self.cause = _Bounded(MAX_ERRORS)
        self.topic = _Bounded(MAX_TOPICS)
        self.health = health
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
        self.publish_retries = Counter(
            "toolwire_publish_retries",
            "Retriable publish errors that were retried (with backoff, within a bounded time), "
            "by exception class.", ["error"], registry=r)
        self.publish_failures = Counter(
            "toolwire_publish_failures",
            "Publishes that finally failed (retries exhausted, a fatal producer state, a "
            "refusal), by exception class; the worker then exits non-zero and is restarted.",
            ["error"], registry=r)
        self.records_refit = Counter(
            "toolwire_records_refit",
            "Records the broker refused as too large, published again cut to fit the topic's "
            "max.message.bytes, by output (topic: assembled or deadletter).", ["topic"],
            registry=r)
        self.agent_failures = Counter(
            "toolwire_agent_failures",
            "Fatal faults of the agent, by cause; the process exits right after (non-zero), so "
            "this shows only when Prometheus scraped in between: count restarts with "
            "changes(toolwire_worker_start_time_seconds[15m]).", ["cause"], registry=r)
        # Restarts: the standard process metrics (process_start_time_seconds where /proc is
        # read), and a start time of our own on every platform.
        process = ProcessCollector(registry=r)
        started = next((s.value for family in process.collect() for s in family.samples
                        if s.name == "process_start_time_seconds"), _IMPORTED_AT)
        self.start_time = Gauge(
            "toolwire_worker_start_time_seconds",
            "Unix time the worker process started; a restarted worker is a new process whose "
            "counters start at zero, so restarts show as changes of this value "
            "(changes(toolwire_worker_start_time_seconds[15m])).", registry=r)
        self.start_time.set(started)
        r.register(_HealthCollector(self))

    def positions(self, members: int, positions: Iterable[PartitionPosition]) -> None:
        """Topic metrics, from a :func:`toolwire.kafka.group_status` of the group."""
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

    # -- publishing and the agent --------------------------------------------------------------

    def publish_retried(self, error: str) -> None:
        """A retriable publish error (``error``: the exception class name) is retried."""
        self.publish_retries.labels(self.error(error)).inc()

    def publish_failed(self, error: str) -> None:
        """A publish finally failed (``error``: the exception class name)."""
        self.publish_failures.labels(self.error(error)).inc()

    def record_refit(self, sink: str) -> None:
        """A record refused as too large was published again, cut to fit; ``sink`` names the
        output it went to (``Sink.value``: ``assembled`` or ``deadletter``)."""
        self.records_refit.labels(self.topic(sink)).inc()

    def agent_failed(self, cause: str) -> None:
        """The agent hit a fatal fault (``cause``: short, e.g. the exception class name); the
        process exits right after."""
        self.agent_failures.labels(self.cause(cause)).inc()

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


class _HealthCollector(Collector):
    """Liveness, readiness and the time since progress of the worker's :class:`Health`, read
    when Prometheus scrapes (no samples without one)."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        health = self.metrics.health
        live = GaugeMetricFamily(
            "toolwire_worker_live",
            "1 while the worker's /healthz answers 200: not failed, and not holding unread input "
            "without handling a message for TOOLWIRE_STALL_TIMEOUT seconds; 0 otherwise.")
        ready = GaugeMetricFamily(
            "toolwire_worker_ready",
            "1 while the worker's /readyz answers 200: started, not recovering its tables or "
            "rebalancing, not failed; 0 otherwise.")
        since = GaugeMetricFamily(
            "toolwire_seconds_since_progress",
            "Seconds since the worker's agent last finished handling an input message (no "
            "sample before the first one); grows on an idle worker too: see "
            "toolwire_worker_live.")
        if health is not None:
            live.add_metric([], 1.0 if health.liveness()[0] else 0.0)
            ready.add_metric([], 1.0 if health.readiness()[0] else 0.0)
            seconds = health.seconds_since_progress()
            if seconds is not None:
                since.add_metric([], seconds)
        yield live
        yield ready
        yield since
