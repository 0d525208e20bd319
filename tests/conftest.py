"""Shared fixtures: one real Kafka broker per test run for tests marked ``broker``."""

from tests.broker_fixture import kafka_bootstrap  # noqa: F401
