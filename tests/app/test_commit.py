"""The at-least-once commit: its steps in their order, and what each mode does when a
step fails (before offsets: retry, then stop the worker; the sweep's: leave it to the next)."""

from __future__ import annotations

import asyncio

import pytest

from toolwire.app import commit as commit_module
from toolwire.app.commit import RESEND_ATTEMPTS, Checkpoint


class Script:
    """A held state, producer and changelog that record what the commit asks of them."""

    def __init__(self, failures: list[int] | None = None, drain_fails: bool = False) -> None:
        self.steps: list[str] = []
        self.failures = list(failures or [])
        self.drain_fails = drain_fails
        self.fatal: list[BaseException] = []

    def flush(self) -> None:
        self.steps.append("flush")

    async def drain(self) -> None:
        self.steps.append("drain")
        if self.drain_fails:
            raise RuntimeError("3 produced messages not sent in 60 s")

    def resend(self) -> int:
        failed = self.failures.pop(0) if self.failures else 0
        self.steps.append(f"resend:{failed}")
        return failed

    def drained(self) -> None:
        self.steps.append("drained")

    def retire(self) -> None:
        self.steps.append("retire")

    def checkpoint(self, *, with_fatal: bool = True, gated: bool = False) -> Checkpoint:
        return Checkpoint(self, self.drain, self.resend,
                          fatal=self.fatal.append if with_fatal else None,
                          gate=self.gate if gated else None)

    async def gate(self) -> None:
        self.steps.append("gate")
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit_module, "RESEND_BACKOFF", (0.0,) * RESEND_ATTEMPTS)


def test_the_steps_run_in_their_order() -> None:
    script = Script()
    assert asyncio.run(script.checkpoint().commit()) is True
    assert script.steps == ["flush", "drain", "resend:0", "drained", "retire"]


def test_the_gate_comes_before_every_write_and_a_closed_one_writes_nothing() -> None:
    """The zombie fence's hold (toolwire.app.fencing) is awaited before the flush; a gate that
    stops the worker (here: raises) leaves the held writes unflushed."""
    script = Script()
    assert asyncio.run(script.checkpoint(gated=True).commit()) is True
    assert script.steps == ["gate", "flush", "drain", "resend:0", "drained", "retire"]

    async def stopped() -> None:
        raise RuntimeError("expelled")

    closed = Script()
    gated = Checkpoint(closed, closed.drain, closed.resend, gate=stopped)
    with pytest.raises(RuntimeError, match="expelled"):
        asyncio.run(gated.commit())
    assert closed.steps == []


def test_failed_changelog_writes_are_sent_again_and_drained_before_the_drain_counts() -> None:
    script = Script(failures=[2, 1])
    assert asyncio.run(script.checkpoint().commit()) is True
    assert script.steps == ["flush", "drain", "resend:2", "drain", "resend:1", "drain",
                            "resend:0", "drained", "retire"]


def test_writes_that_keep_failing_stop_the_worker_and_count_no_drain() -> None:
    script = Script(failures=[1] * RESEND_ATTEMPTS)
    assert asyncio.run(script.checkpoint().commit()) is False
    assert script.steps == ["flush", "drain", *["resend:1", "drain"] * RESEND_ATTEMPTS]
    assert len(script.fatal) == 1 and "still fail after 8 attempts" in str(script.fatal[0])
    without = Script(failures=[1] * RESEND_ATTEMPTS)
    with pytest.raises(RuntimeError, match="not committing offsets past them"):
        asyncio.run(without.checkpoint(with_fatal=False).commit())
    assert "drained" not in without.steps


def test_failed_writes_are_sent_again_for_the_whole_retry_timeout() -> None:
    """A broker isolated from its cluster leads its partitions until the controller fences it
    (10 s and more): the commit keeps re-sending past its 8 attempts while its retry timeout
    (the publish's, 60 s in a worker) lasts, then gives up."""
    script = Script(failures=[1] * 12)
    # A second passes with each drain.
    patient = Checkpoint(script, script.drain, script.resend, fatal=script.fatal.append,
                         retry_timeout=20.0, clock=lambda: script.steps.count("drain"))
    assert asyncio.run(patient.commit()) is True
    assert script.steps.count("resend:1") == 12 and script.fatal == []
    hopeless = Script(failures=[1] * 100)
    bounded = Checkpoint(hopeless, hopeless.drain, hopeless.resend,
                         fatal=hopeless.fatal.append, retry_timeout=20.0,
                         clock=lambda: hopeless.steps.count("drain"))
    assert asyncio.run(bounded.commit()) is False
    assert hopeless.steps.count("resend:1") == 20 and len(hopeless.fatal) == 1
    assert "after 20 attempts in 20 s" in str(hopeless.fatal[0])


def test_a_failed_drain_before_offsets_raises() -> None:
    script = Script(drain_fails=True)
    with pytest.raises(RuntimeError, match="not sent"):
        asyncio.run(script.checkpoint().commit())
    assert script.steps == ["flush", "drain"]


def test_the_sweeps_commit_stops_at_a_failed_step_and_leaves_the_rest() -> None:
    drain_failed = Script(drain_fails=True)
    assert asyncio.run(drain_failed.checkpoint().commit(offsets=False)) is False
    assert drain_failed.steps == ["flush", "drain"]
    resend_failed = Script(failures=[3])
    assert asyncio.run(resend_failed.checkpoint().commit(offsets=False)) is False
    assert resend_failed.steps == ["flush", "drain", "resend:3"]  # no retry, no count
    assert resend_failed.fatal == []
    sound = Script()
    assert asyncio.run(sound.checkpoint().commit(offsets=False)) is True
    assert sound.steps == ["flush", "drain", "resend:0", "drained", "retire"]
