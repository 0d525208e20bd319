"""The Faust app's configuration, from :class:`toolwire.settings.Settings` alone."""

from __future__ import annotations

import faust

from toolwire.settings import Settings


def broker_url(bootstrap: str) -> str:
    """Faust's form of a bootstrap list: ``kafka://h1:9092;kafka://h2:9092``."""
    hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
    if not hosts:
        raise ValueError("no Kafka bootstrap servers: set KAFKA_BOOTSTRAP_SERVERS "
                         "(or run 'toolwire broker start' and use 'toolwire worker')")
    return ";".join(h if "://" in h else f"kafka://{h}" for h in hosts)


def build_faust_app(settings: Settings) -> faust.App:
    """The app with every setting Toolwire relies on; builds nothing else, writes nothing."""
    datadir = settings.state_dir / "worker"
    return faust.App(
        settings.app_id,
        broker=broker_url(settings.bootstrap or "127.0.0.1:9092"),
        store="memory://",
        datadir=str(datadir),
        # At-least-once with deterministic keys and dedupe: Faust's exactly_once has open bugs
        # (faust-streaming #440, #177, #323, #517).
        processing_guarantee="at_least_once",
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        table_standby_replicas=0,
        consumer_auto_offset_reset="earliest",
        key_serializer="raw",
        value_serializer="raw",
        broker_session_timeout=settings.session_timeout_seconds,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_seconds / 3),
        web_enabled=False,
        web_bind="127.0.0.1",  # 'faust worker' may start the web server anyway: never on 0.0.0.0
        # Sending to a missing topic would otherwise retry for 20 minutes before failing.
        producer_request_timeout=30,
        # Every record is built to fit max_record_bytes (framing included); the producer
        # must accept at least that.
        producer_max_request_size=max(settings.max_record_bytes, 1_000_000),
    )
