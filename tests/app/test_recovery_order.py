"""The recovery race of faust-streaming 0.15.3, forced deterministically with a scripted
consumer: upstream's ``on_recovery_completed`` loses the records at the committed offset; ours,
which stops the consumer's flow around the resume and the seek, delivers every record.

The script plays what the crash test saw on a broker: after a restart the consumer's flow is
active (table recovery reads changelogs), the input partition is paused at its committed offset,
and the fetcher delivers a batch as soon as the partition is resumed — one record into the agent
queue per event-loop step, moving the read mark after each, exactly as Faust's fetch loop does
(``callback(message)``, then ``set_read_offset``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import SimpleNamespace
from typing import Any

import pytest

from toolwire.app.fixes import UPSTREAM_ON_RECOVERY_COMPLETED, on_recovery_completed_in_order

INPUT, CHANGELOG = ("chunks", 0), ("app-chunks-changelog", 0)
COMMITTED, END = 10, 40


class ScriptedConsumer:
    """Just enough of Faust's consumer and aiokafka's fetch position to show the race."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.paused = {INPUT}
        self.flow_active = True  # recovery reads the changelogs
        self.position = COMMITTED  # aiokafka's fetch position
        self.read_mark: int | None = None  # Faust's _read_offset
        self.queue: list[int] = []  # the agent's channel queue
        self.dropped: list[int] = []

    def assignment(self) -> set[tuple[str, int]]:
        return {INPUT, CHANGELOG}

    def resume_partitions(self, tps: set[tuple[str, int]]) -> None:
        self.paused -= tps

    def resume_flow(self) -> None:
        self.flow_active = True

    def stop_flow(self) -> None:
        self.flow_active = False

    async def perform_seek(self) -> None:
        await asyncio.sleep(0)  # the committed offsets come from the broker
        await asyncio.sleep(0)
        self.position = COMMITTED
        self.read_mark = COMMITTED

    async def fetch_once(self) -> bool:
        """One fetch and its delivery, as Faust's fetch loop does it; False when idle."""
        if not self.flow_active or INPUT in self.paused or self.position >= END:
            return False
        batch = list(range(self.position, min(self.position + self.batch, END)))
        self.position = batch[-1] + 1
        for offset in batch:
            if not self.flow_active:
                break  # Faust's fetch loop stops a batch when the flow stops
            if self.read_mark is None or offset >= self.read_mark:
                self.queue.append(offset)  # callback(message)
                await asyncio.sleep(0)
                if self.flow_active:  # the read marks do not move while the flow is stopped
                    self.read_mark = offset  # set_read_offset(tp, offset)
            else:
                self.dropped.append(offset)  # "DROPPED MESSAGE ROFF"
        return True


def _recovery(consumer: ScriptedConsumer) -> SimpleNamespace:
    async def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    async def wait(coro: Coroutine[Any, Any, None], timeout: float | None = None) -> None:
        await coro

    app = SimpleNamespace(
        consumer=consumer, consumer_generation_id=0,
        on_rebalance_complete=SimpleNamespace(send=nothing),
        flow_control=SimpleNamespace(resume=consumer.queue.clear),
        conf=SimpleNamespace(broker_request_timeout=30.0),
        _fetcher=SimpleNamespace(maybe_start=nothing),
        assignor=SimpleNamespace(assigned_standbys=lambda: set()),
        on_rebalance_end=lambda: None)
    quiet = SimpleNamespace(info=lambda *a: None, dev=lambda *a: None, warning=lambda *a: None)
    tables = SimpleNamespace(values=lambda: [], on_actives_ready=lambda: None,
                             on_standbys_ready=lambda: None)
    return SimpleNamespace(app=app, log=quiet, tables=tables, actives_for_table={},
                           standbys_for_table={}, _set_recovery_ended=lambda: None,
                           _wait=wait, _is_changelog_tp=lambda tp: tp == CHANGELOG,
                           completed=asyncio.Event())


async def _restart(method: Callable[..., Coroutine[Any, Any, None]],
                   batch: int = 5) -> ScriptedConsumer:
    consumer = ScriptedConsumer(batch)
    stop = asyncio.Event()

    async def fetcher() -> None:
        while not stop.is_set():
            if not await consumer.fetch_once():
                await asyncio.sleep(0)

    task = asyncio.create_task(fetcher())
    await method(_recovery(consumer), 0)
    for _ in range(200):  # let the fetcher run to the end of the partition
        await asyncio.sleep(0)
    stop.set()
    await task
    return consumer


def _delivered(consumer: ScriptedConsumer) -> list[int]:
    return sorted(set(consumer.queue))


def test_upstream_order_loses_the_records_at_the_committed_offset() -> None:
    """The race is real in the script: this is the defect the crash test caught."""
    consumer = asyncio.run(_restart(UPSTREAM_ON_RECOVERY_COMPLETED))
    missing = sorted(set(range(COMMITTED, END)) - set(_delivered(consumer)))
    assert missing and missing[0] == COMMITTED
    assert set(missing) <= set(consumer.dropped)


@pytest.mark.parametrize("batch", [1, 2, 5, 19])
def test_flow_stopped_around_resume_and_seek_delivers_every_record(batch: int) -> None:
    consumer = asyncio.run(_restart(on_recovery_completed_in_order, batch))
    assert _delivered(consumer) == list(range(COMMITTED, END))
    assert consumer.dropped == []
