"""The Faust app's configuration, from :class:`toolwire.config.settings.Settings` alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import faust
from faust.transport.drivers.aiokafka import Producer as AIOKafkaProducerDriver

from toolwire.config.security import faust_credentials
from toolwire.config.settings import Settings


def broker_url(bootstrap: str) -> str:
    """Faust's form of a bootstrap list: ``kafka://h1:9092;kafka://h2:9092``."""
    hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
    if not hosts:
        raise ValueError("no Kafka bootstrap servers: set KAFKA_BOOTSTRAP_SERVERS "
                         "(or run 'toolwire broker start' and use 'toolwire worker')")
    return ";".join(h if "://" in h else f"kafka://{h}" for h in hosts)


class IdempotentProducer(AIOKafkaProducerDriver):
    """Faust's producer with ``acks=all`` and idempotence always on.

    Faust turns idempotence on only inside transactions (``processing_guarantee=exactly_once``,
    which has open bugs); without it a retried send after a broker failover can write a record
    twice, or reorder a changelog.
    """

    def _settings_extra(self) -> Mapping[str, Any]:
        return {**super()._settings_extra(), "acks": "all", "enable_idempotence": True}


def build_faust_app(settings: Settings) -> faust.App:
    """The app with every setting Toolwire relies on; builds nothing else, writes nothing."""
    app = _faust_app(settings)
    transport: Any = app.transport  # built lazily, without I/O
    transport.Producer = IdempotentProducer
    return app


def heartbeat_interval(settings: Settings) -> float:
    """Seconds between the consumer's heartbeats: three or more per session timeout."""
    return min(3.0, settings.session_timeout_seconds / 3)


def _faust_app(settings: Settings) -> faust.App:
    datadir = settings.state_dir / "worker"
    return faust.App(
        settings.app_id,
        broker=broker_url(settings.bootstrap or "127.0.0.1:9092"),
        # TLS and SASL (TOOLWIRE_SECURITY_PROTOCOL …): Faust's consumer, producer and topic
        # creation all connect with these.
        broker_credentials=faust_credentials(settings),
        store="memory://",
        datadir=str(datadir),
        # At-least-once with deterministic keys and dedupe: Faust's exactly_once has open bugs
        # (faust-streaming #440, #177, #323, #517).
        processing_guarantee="at_least_once",
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        producer_acks=-1,  # all in-sync replicas; idempotence: see IdempotentProducer
        table_standby_replicas=settings.standby_replicas or 0,
        consumer_auto_offset_reset="earliest",
        key_serializer="raw",
        value_serializer="raw",
        broker_session_timeout=settings.session_timeout_seconds,
        broker_heartbeat_interval=heartbeat_interval(settings),
        # A request to a broker cut off by a partition (no FIN, no reset) waits this long
        # before the consumer gives up on it and refreshes its metadata; until then the
        # partitions of that fetch stay unread even once their leaders moved. Faust's 90 s
        # made a worker wait about 50 s after an isolated broker came back; this is the
        # least Faust accepts (the session timeout) plus room for a JoinGroup answered only
        # when a member that died is expelled (one session timeout).
        broker_request_timeout=settings.session_timeout_seconds + 10.0,
        web_enabled=False,
        web_bind="127.0.0.1",  # 'faust worker' may start the web server anyway: never on 0.0.0.0
        # Sending to a missing topic would otherwise retry for 20 minutes before failing.
        producer_request_timeout=30,
        # Every record is built to fit max_record_bytes (framing included); the producer
        # must accept at least that.
        producer_max_request_size=max(settings.max_record_bytes, 1_000_000),
    )
