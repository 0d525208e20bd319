"""Where namespaces cannot be built the network-fault tests are skipped, saying why — except
under ``TOOLWIRE_REQUIRE_NETNS=1`` (CI), where that is a failure: CI asserts that they ran."""

from __future__ import annotations

import pytest

from tests.net import netns


def test_a_machine_without_namespaces_skips_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns, "unusable", lambda: "not root (uid 1000)")
    monkeypatch.delenv(netns.REQUIRE_VARIABLE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"needs root .*not root"):
        netns.require_root()


def test_where_they_must_run_a_machine_without_namespaces_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns, "unusable", lambda: "not root (uid 1000)")
    monkeypatch.setenv(netns.REQUIRE_VARIABLE, "1")
    with pytest.raises(pytest.fail.Exception, match="must run here"):
        netns.require_root()
