"""The recovery watchdog (``toolwire.app.watchdog``): a table recovery that receives nothing
has its reading restarted, and only then; still nothing a period later, and the worker must
stop (``Verdict.STUCK``: the service exits with the supervisor's restart status)."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolwire.app.watchdog import RecoveryWatchdog, Verdict


@dataclass
class Signal:
    value: bool = False

    def is_set(self) -> bool:
        return self.value


@dataclass
class Recovery:
    in_recovery: bool = True
    remaining: int = 40
    signal_recovery_start: Signal = field(default_factory=Signal)
    _recovery_started_at: float | None = 0.0
    _active_events_received_at: dict[str, float] = field(default_factory=dict)
    active_tps: set[str] = field(default_factory=lambda: {"chunks-changelog/0"})
    active_offsets: dict[str, int] = field(default_factory=lambda: {"chunks-changelog/0": 17})

    def need_recovery(self) -> bool:
        return self.remaining > 0

    def active_remaining(self) -> dict[str, int]:
        return {"chunks-changelog/0": self.remaining}


@dataclass
class Consumer:
    flow_active: bool = False
    resumed: int = 0
    can_resume_flow: Signal = field(default_factory=Signal)
    suspend_flow: Signal = field(default_factory=lambda: Signal(True))
    _active_partitions: set[str] = field(default_factory=set)
    _paused_partitions: set[str] = field(default_factory=lambda: {"chunks-changelog/0"})

    def resume_flow(self) -> None:
        self.flow_active = True
        self.resumed += 1

    def resume_partitions(self, tps: set[str]) -> None:
        self._active_partitions |= tps
        self._paused_partitions -= tps


@dataclass
class FlowControl:
    resumed: int = 0

    def resume(self) -> None:
        self.resumed += 1


@dataclass
class Tables:
    recovery: Recovery = field(default_factory=Recovery)


@dataclass
class App:
    tables: Tables = field(default_factory=Tables)
    consumer: Consumer = field(default_factory=Consumer)
    flow_control: FlowControl = field(default_factory=FlowControl)


def watch(app: App) -> tuple[RecoveryWatchdog, list[float]]:
    now = [0.0]
    return RecoveryWatchdog(app, stalled_after=30.0, clock=lambda: now[0]), now


def test_a_recovery_that_receives_nothing_has_its_reading_restarted_then_is_stuck() -> None:
    app = App()
    dog, now = watch(app)
    now[0] = 29.0
    assert dog.check() is Verdict.QUIET and app.consumer.resumed == 0
    now[0] = 31.0
    assert dog.check() is Verdict.RESTARTED
    assert app.consumer.flow_active and app.consumer.resumed == 1
    assert app.flow_control.resumed == 1
    assert app.consumer._active_partitions == {"chunks-changelog/0"}
    assert dog.restart_offsets() == {"chunks-changelog/0": 17}  # where the recovery got to
    now[0] = 40.0
    assert dog.check() is Verdict.QUIET  # give the restarted reading a period
    now[0] = 62.0
    assert dog.check() is Verdict.STUCK  # still nothing: the worker must stop
    assert app.consumer.resumed == 1  # not restarted again in this process


def test_a_restarted_recovery_that_receives_again_is_left_alone_and_can_restart_later() -> None:
    app = App()
    dog, now = watch(app)
    now[0] = 31.0
    assert dog.check() is Verdict.RESTARTED
    app.tables.recovery._active_events_received_at["chunks-changelog/0"] = 50.0
    now[0] = 62.0
    assert dog.check() is Verdict.QUIET  # the restart helped
    now[0] = 81.0
    assert dog.check() is Verdict.RESTARTED  # a new stall, 31 s after the last record
    assert dog.resumed == 2


def test_restart_offsets_seek_an_unread_changelog_to_its_start() -> None:
    app = App()
    app.tables.recovery.active_offsets = {"chunks-changelog/0": -1}
    app.tables.recovery.active_tps = {"chunks-changelog/0", "responses-changelog/0"}
    dog, _ = watch(app)
    assert dog.restart_offsets() == {"chunks-changelog/0": 0, "responses-changelog/0": 0}


def test_a_recovery_receiving_records_is_left_alone() -> None:
    app = App()
    dog, now = watch(app)
    for t in (10.0, 35.0, 60.0, 85.0):
        app.tables.recovery._active_events_received_at["chunks-changelog/0"] = t - 5.0
        now[0] = t
        assert dog.check() is Verdict.QUIET
    assert app.consumer.resumed == 0


def test_a_rebalance_in_progress_or_a_recovery_caught_up_is_left_alone() -> None:
    for change in ("rebalance", "caught_up", "not_recovering"):
        app = App()
        if change == "rebalance":
            app.tables.recovery.signal_recovery_start.value = True
        elif change == "caught_up":
            app.tables.recovery.remaining = 0
        else:
            app.tables.recovery.in_recovery = False
        dog, now = watch(app)
        for t in (0.0, 40.0, 80.0):
            now[0] = t
            assert dog.check() is Verdict.QUIET, change
        assert app.consumer.resumed == 0, change
