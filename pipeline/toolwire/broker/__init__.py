"""Local Apache Kafka broker for development and tests (see :mod:`toolwire.broker.local`)."""

from toolwire.broker.local import (
    BrokerError,
    BrokerInfo,
    LocalBroker,
    configured_bootstrap,
    default_state_dir,
    ensure_broker,
    fetch,
    start,
    status,
    stop,
)

__all__ = [
    "BrokerError",
    "BrokerInfo",
    "LocalBroker",
    "configured_bootstrap",
    "default_state_dir",
    "ensure_broker",
    "fetch",
    "start",
    "status",
    "stop",
]
