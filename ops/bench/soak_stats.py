"""The soak's arithmetic (``ops/bench/soak.py``, issue 23): which samples count, least-squares
slopes per hour, the first third against the last, and the goals. Pure functions, no I/O, so
that ``tests/test_bench_soak.py`` checks them without a broker.

A sample is excluded from the slopes while the run warms up, and from the start of each fault
(a worker killed, the broker stopped) until its lag was back to zero, and at least one minute
after the fault ended: a restarted worker's RSS, CPU and file descriptors start again from
nothing, its catch-up (the changelogs restored, the input that waited read at full speed) is
its own warm-up, and the lag of a fault is its own figure (the time back to zero). The first
soaks ended the window one minute after the fault whatever the lag: a restarted worker still
catching up at that minute (the 45-minute soak: 30,000 to 85,000 messages behind) put its
climb to its plateau into the slope, although every later sample of it was flat; that
window's figure is still reported beside (``caught_up=False``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: Seconds after a fault ends during which samples are left out of the slopes.
AFTER_FAULT = 60.0
HOUR = 3600.0
#: The goals of issue 23.
RSS_SLOPE_GOAL = 1.0            # MiB per hour, at most
CPU_FLAT_GOAL = 0.10            # |last third / first third - 1|, at most

Point = tuple[float, float]     # (seconds since the start, value)


@dataclass(frozen=True)
class Fault:
    kind: str                   # "kill" or "broker"
    started: float              # seconds since the start
    ended: float
    caught_up: float | None = None  # seconds from its start until the lag was back to zero


def excluded(t: float, warmup: float, faults: Iterable[Fault],
             after: float = AFTER_FAULT, *, caught_up: bool = True) -> str | None:
    """Why the sample at ``t`` is left out of the slopes (``None``: it counts); with
    ``caught_up=False`` each fault's window ends ``after`` seconds after it, lag or not."""
    if t < warmup:
        return "warm-up"
    for f in faults:
        back = f.started + f.caught_up if caught_up and f.caught_up is not None else 0.0
        if f.started <= t < max(f.ended + after, back):
            if back > f.ended + after:
                return f"{f.kind} at {f.started:.0f} s (until its lag was back to zero)"
            return f"{f.kind} at {f.started:.0f} s (until {after:.0f} s after it ended)"
    return None


def slope_per_hour(points: Sequence[Point]) -> float | None:
    """The least-squares slope of ``points`` (value per second → per hour); ``None`` with
    fewer than two distinct times."""
    if len(points) < 2:
        return None
    mt = sum(t for t, _ in points) / len(points)
    mv = sum(v for _, v in points) / len(points)
    sxx = sum((t - mt) ** 2 for t, _ in points)
    if sxx == 0:
        return None
    sxy = sum((t - mt) * (v - mv) for t, v in points)
    return sxy / sxx * HOUR


def within_slope_per_hour(groups: Mapping[object, Sequence[Point]]) -> float | None:
    """One slope common to every group, each with its own intercept (the within-group
    least-squares estimator): how fast a value grows inside one worker process, the drop at
    each restart left out. Groups of one point add nothing; ``None`` if no group has two
    distinct times."""
    sxx = sxy = 0.0
    for points in groups.values():
        if len(points) < 2:
            continue
        mt = sum(t for t, _ in points) / len(points)
        mv = sum(v for _, v in points) / len(points)
        sxx += sum((t - mt) ** 2 for t, _ in points)
        sxy += sum((t - mt) * (v - mv) for t, v in points)
    return sxy / sxx * HOUR if sxx > 0 else None


def thirds(values: Sequence[float]) -> tuple[float, float] | None:
    """Means of the first and of the last third of ``values`` (``None`` with fewer than
    three)."""
    n = len(values) // 3
    if n < 1:
        return None
    return sum(values[:n]) / n, sum(values[-n:]) / n


def change(pair: tuple[float, float] | None) -> float | None:
    """last / first - 1 of :func:`thirds`."""
    if pair is None or pair[0] == 0:
        return None
    return pair[1] / pair[0] - 1


@dataclass(frozen=True)
class Goal:
    name: str
    value: object
    goal: str
    met: bool


def goals(*, rss_slope: float | None, cpu_change: float | None,
          recovered: Sequence[float | None], drained: float | None, lost: int,
          wrong: int) -> list[Goal]:
    """The goals of issue 23, each met or not. ``rss_slope``: MiB/h within worker processes;
    ``cpu_change``: last third / first third - 1 of CPU per event; ``recovered``: seconds
    from each fault to lag back to zero (``None``: it never came back); ``drained``: seconds
    from the end of the input to lag exactly 0."""
    back = [r for r in recovered if r is not None]
    return [
        Goal("RSS slope within a worker process", _or_none(rss_slope), "<= 1 MiB/h",
             rss_slope is not None and rss_slope <= RSS_SLOPE_GOAL),
        Goal("CPU per event, last third / first third - 1", _or_none(cpu_change),
             "within +-10 %", cpu_change is not None and abs(cpu_change) <= CPU_FLAT_GOAL),
        Goal("faults whose lag came back to zero", f"{len(back)} of {len(recovered)}",
             "every fault", len(back) == len(recovered)),
        Goal("lag exactly 0 after the input ended", _or_none(drained), "yes",
             drained is not None),
        Goal("responses lost", lost, "0", lost == 0),
        Goal("records wrong (not equal to assemble)", wrong, "0", wrong == 0),
    ]


def _or_none(value: float | None) -> float | None:
    if value is None or math.isnan(value):
        return None
    return value
