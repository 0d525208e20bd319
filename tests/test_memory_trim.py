"""``toolwire.app.memory``: malloc_trim after a sweep (``TOOLWIRE_TRIM_AFTER_SWEEP``) and the
tracemalloc report."""

from __future__ import annotations

import logging
import tracemalloc

import pytest

from toolwire.app import memory
from toolwire.config.settings import Settings, known_variables


def test_the_setting_is_off_by_default_and_read_from_the_environment() -> None:
    assert "TOOLWIRE_TRIM_AFTER_SWEEP" in known_variables()
    assert Settings.from_env({}).trim_after_sweep is False
    assert Settings.from_env({"TOOLWIRE_TRIM_AFTER_SWEEP": "true"}).trim_after_sweep is True
    with pytest.raises(ValueError, match="TOOLWIRE_TRIM_AFTER_SWEEP='maybe'"):
        Settings.from_env({"TOOLWIRE_TRIM_AFTER_SWEEP": "maybe"})


def test_trim_calls_glibc_or_returns_false() -> None:
    function = memory._malloc_trim()
    released = memory.trim()
    assert isinstance(released, bool)
    if function is None:
        assert released is False
    else:  # freed blocks at the top of a heap are released
        blocks = [bytearray(256 * 1024) for _ in range(64)]
        del blocks
        memory.trim()


def test_trim_is_a_no_op_without_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)
    assert memory.trim() is False


def test_after_sweep_trims_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(memory, "trim", lambda: calls.append(1) or True)
    memory.after_sweep(Settings())
    assert calls == []
    memory.after_sweep(Settings(trim_after_sweep=True))
    assert calls == [1]


def test_after_sweep_reports_the_traced_heap(caplog: pytest.LogCaptureFixture) -> None:
    assert memory.traced() is None or tracemalloc.is_tracing()
    with caplog.at_level(logging.INFO, logger="toolwire.app.memory"):
        memory.after_sweep(Settings())
        assert "tracemalloc" not in caplog.text or tracemalloc.is_tracing()
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        try:
            heap = memory.traced()
            assert heap is not None and heap[1] >= heap[0] >= 0
            memory.after_sweep(Settings(trim_after_sweep=True))
        finally:
            if started:
                tracemalloc.stop()
    assert "memory after sweep: tracemalloc current" in caplog.text
    assert "malloc_trim released" in caplog.text
