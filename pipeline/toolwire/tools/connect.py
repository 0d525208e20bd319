"""Which Kafka cluster a command talks to.

``KAFKA_BOOTSTRAP_SERVERS`` wins and nothing is started; otherwise the local broker that
``toolwire broker start`` (or the demo) runs. Only commands that own their broker start one.
"""

from __future__ import annotations

from toolwire.broker.local import BrokerError, configured_bootstrap, ensure_broker, status

NO_BROKER = ("no Kafka broker: set KAFKA_BOOTSTRAP_SERVERS=host:port for an existing cluster, "
             "or start the local one with 'toolwire broker start'")


def resolve_bootstrap(*, start: bool = False) -> tuple[str, bool]:
    """``(bootstrap, started_by_us)``; raises :class:`BrokerError` saying what to do."""
    configured = configured_bootstrap()
    if configured:
        return configured, False
    local = status()
    if local is not None and local.get("ready"):
        return str(local["bootstrap"]), False
    if start:
        return ensure_broker()
    raise BrokerError(NO_BROKER)
