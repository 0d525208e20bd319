"""Fixtures of the network-fault tests: a fresh :class:`~tests.net.netns.Network` per test.

The tests here build namespaces, so they need root; elsewhere they are skipped, saying why
(:func:`~tests.net.netns.require_root`). Leftovers of a run that was killed before it could
clean up are removed once per session (:func:`~tests.net.netns.sweep_stale`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.net.netns import Network, require_root, sweep_stale


@pytest.fixture(scope="session")
def netns_ready() -> None:
    """Skip unless namespaces work here; sweep a crashed run's namespaces first."""
    require_root()
    sweep_stale()


@pytest.fixture
def net(netns_ready: None) -> Iterator[Network]:
    """An empty network (add hosts with ``net.host(name)``), removed after the test."""
    with Network() as network:
        yield network
