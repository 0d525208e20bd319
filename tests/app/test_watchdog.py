"""Fix 5: a table recovery whose consumer flow was left stopped is resumed, and only then."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolwire.app.fixes import RecoveryWatchdog


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

    def need_recovery(self) -> bool:
        return self.remaining > 0

    def active_remaining(self) -> dict[str, int]:
        return {"chunks-changelog/0": self.remaining}


@dataclass
class Consumer:
    flow_active: bool = False
    resumed: int = 0

    def resume_flow(self) -> None:
        self.flow_active = True
        self.resumed += 1


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
    return RecoveryWatchdog(app, stalled_after=15.0, clock=lambda: now[0]), now


def test_a_stopped_flow_during_recovery_is_resumed_after_the_grace_period() -> None:
    app = App()
    dog, now = watch(app)
    assert not dog.check()  # first seen
    now[0] = 14.0
    assert not dog.check() and app.consumer.resumed == 0
    now[0] = 15.5
    assert dog.check()
    assert app.consumer.flow_active and app.consumer.resumed == 1
    assert app.flow_control.resumed == 1 and dog.resumed == 1


def test_nothing_is_touched_when_the_state_clears_within_the_grace_period() -> None:
    app = App()
    dog, now = watch(app)
    dog.check()
    now[0] = 10.0
    app.consumer.flow_active = True  # the recovery resumed it itself
    assert not dog.check()
    app.consumer.flow_active = False
    now[0] = 20.0
    assert not dog.check()  # a new period starts: not stalled for 15 s yet
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
        for t in (0.0, 30.0, 60.0):
            now[0] = t
            assert not dog.check(), change
        assert app.consumer.resumed == 0, change
