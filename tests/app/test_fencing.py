"""The zombie fence without a broker (:mod:`toolwire.app.fencing`, fix 5 of
:mod:`toolwire.app.fixes`): a worker whose group session may have ended — no answered
heartbeat for the session timeout less one heartbeat interval — writes nothing: every publish
and every table write stops the worker instead. The network-fault test of a partitioned worker
(``tests/net``) shows it on a real cluster."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, NoReturn

import pytest
from aiokafka.consumer.group_coordinator import GroupCoordinator

from toolwire.app import fixes
from toolwire.app.fencing import Fence, SessionExpired
from toolwire.app.publishing import PublishFault
from toolwire.app.tables import TextKeys


class Stopped(Exception):
    """What the worker's ``fail`` does (it never returns): here, raise."""


def stop(exc: BaseException) -> NoReturn:
    raise Stopped(exc)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fence(contact: dict[str, float], clock: Clock) -> Fence:
    return Fence("app", session_timeout=30.0, heartbeat_interval=3.0, contact=contact,
                 fail=stop, clock=clock)


def test_the_fence_is_open_before_the_first_join_and_while_heartbeats_are_answered() -> None:
    clock, contact = Clock(), {}
    guard = fence(contact, clock)
    guard.check()  # no generation yet: no partition to protect
    contact["app"] = clock.now
    clock.now += 27.0  # the limit: session timeout less one heartbeat interval
    guard.check()
    assert guard.silence() == 27.0


def test_a_worker_unheard_for_longer_than_the_limit_stops_naming_why() -> None:
    clock, contact = Clock(), {"app": 1000.0, "another-group": 1100.0}
    guard = fence(contact, clock)
    clock.now += 27.5
    with pytest.raises(Stopped) as stopped:
        guard.check()
    fault = stopped.value.args[0]
    assert isinstance(fault, PublishFault) and isinstance(fault.error, SessionExpired)
    assert "no heartbeat of group 'app' was answered for 28 s" in fault.cause
    assert "joins the group again" in fault.fix
    contact["app"] = clock.now  # a join completed: open again
    guard.check()


class Table:
    """The part of a Faust table :class:`TextKeys` writes through."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.sent: list[tuple[int, bytes, bytes | None]] = []

    def send_changelog(self, partition: int, key: bytes, value: bytes | None,
                       **kwargs: Any) -> Any:
        self.sent.append((partition, key, value))
        return object()

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.data[key] = value

    def __delitem__(self, key: bytes) -> None:
        del self.data[key]


def test_no_table_write_passes_a_closed_fence() -> None:
    table, closed = Table(), [False]

    def guard() -> None:
        if closed[0]:
            raise Stopped("fenced")

    keys = TextKeys(table, guard=guard)
    keys.apply(3, "r1", b"open")
    keys["q"] = b"x"
    closed[0] = True
    for write in (lambda: keys.apply(3, "r1", b"done"), lambda: keys.apply(3, "r1", None),
                  lambda: keys.__setitem__("q", b"y"), lambda: keys.__delitem__("q")):
        with pytest.raises(Stopped):
            write()
    assert table.sent == [(3, b"r1", b"open")] and table.data == {b"r1": b"open", b"q": b"x"}


def test_answered_heartbeats_and_completed_joins_note_the_contact() -> None:
    """Fix 5 on aiokafka's own coordinator code: a heartbeat answered without error notes the
    time, one answered with an error does not, and starting the heartbeat task (what aiokafka
    does once a join and sync succeeded) does."""
    fixes.install("fence-test-input")
    answers = iter([0, 25])  # NoError, then IllegalGeneration (an expelled member)

    async def send_req(request: Any) -> Any:
        return SimpleNamespace(error_code=next(answers))

    member = SimpleNamespace(group_id="fence-group", generation=4, member_id="m-1",
                             coordinator_id=1, _send_req=send_req,
                             reset_generation=lambda: None, _heartbeat_task=None)
    fixes.CONTACT.pop("fence-group", None)
    assert asyncio.run(GroupCoordinator._do_heartbeat(member)) is True
    first = fixes.CONTACT["fence-group"]
    assert asyncio.run(GroupCoordinator._do_heartbeat(member)) is False
    assert fixes.CONTACT["fence-group"] == first

    async def join_completed() -> None:
        member._heartbeat_routine = lambda: asyncio.sleep(0)
        GroupCoordinator._start_heartbeat_task(member)
        await member._heartbeat_task

    asyncio.run(join_completed())
    assert fixes.CONTACT["fence-group"] > first
