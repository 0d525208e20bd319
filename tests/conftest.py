"""Shared fixtures: one real Kafka broker per test run for tests marked ``broker``; and the
figures of every test that printed some, again at the end of the run."""

from tests.broker_fixture import kafka_bootstrap  # noqa: F401

pytest_plugins = ["tests.figures_summary"]
