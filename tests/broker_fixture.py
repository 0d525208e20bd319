"""Session-wide Kafka for tests marked ``broker``.

Import it from tests/conftest.py::

    from tests.broker_fixture import kafka_bootstrap  # noqa: F401

With ``KAFKA_BOOTSTRAP_SERVERS`` set, that broker is used as is. Otherwise one local broker
is started per test run (per xdist worker) in a pytest tmp dir and stopped at session end
by the pid it recorded; the jars come from the shared cache, so only the first run ever
pays for the Maven fetch.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolwire.broker.local import ensure_broker, stop


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a ready broker for the whole session."""
    state_dir = tmp_path_factory.mktemp("kafka") / "broker"
    bootstrap, started_by_us = ensure_broker(state_dir, heap="512m")
    try:
        yield bootstrap
    finally:
        if started_by_us:
            stop(state_dir)
