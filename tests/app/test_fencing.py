"""The zombie fence without a broker (:mod:`toolwire.app.fencing`, fix 5 of
:mod:`toolwire.app.fixes`): while the group session is in doubt — no answered heartbeat for
the session timeout less one heartbeat interval — every write holds until the coordinator
answers; a coordinator that answers "not a member" stops the worker, and so does a write that
cannot wait. The network-fault tests (``tests/net``) show it on a real cluster: a partitioned
worker stops at the heal, a worker cut off from a coordinator that moves does not."""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import SimpleNamespace
from typing import Any, NoReturn

import pytest
from aiokafka.consumer.group_coordinator import GroupCoordinator

from toolwire.app import fixes
from toolwire.app.fencing import Expelled, Fence, SessionExpired
from toolwire.app.health import Health
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


class Coordinator:
    """The coordinator's answers as fix 5 notes them, arriving while a hold sleeps: each
    sleep of the fence advances the clock and may deliver the next scripted answer."""

    def __init__(self, clock: Clock, contact: dict[str, float], expelled: dict[str, float],
                 answers: dict[float, str]) -> None:
        self.clock, self.contact, self.expelled = clock, contact, expelled
        self.answers = dict(answers)  # seconds from now -> "confirmed" | "expelled"
        self.start = clock.now
        self.sleeps = 0

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)  # let other waiters run, as a real sleep does
        self.sleeps += 1
        self.clock.now += seconds
        for at, answer in sorted(self.answers.items()):
            if self.clock.now - self.start >= at:
                del self.answers[at]
                target = self.contact if answer == "confirmed" else self.expelled
                target["app"] = self.clock.now
        assert self.sleeps < 10_000, "the hold never ended"


def fence(contact: dict[str, float], clock: Clock, expelled: dict[str, float] | None = None,
          **kwargs: Any) -> Fence:
    return Fence("app", session_timeout=30.0, heartbeat_interval=3.0, contact=contact,
                 expelled={} if expelled is None else expelled, fail=stop, clock=clock,
                 **kwargs)


def test_the_fence_is_open_before_the_first_join_and_while_heartbeats_are_answered() -> None:
    clock, contact = Clock(), {}
    guard = fence(contact, clock)
    guard.check()  # no generation yet: no partition to protect
    asyncio.run(guard.hold())
    contact["app"] = clock.now
    clock.now += 27.0  # the limit: session timeout less one heartbeat interval
    guard.check()
    asyncio.run(guard.hold())
    assert guard.silence() == 27.0 and not guard.in_doubt() and guard.holds == 0


def test_a_write_that_cannot_wait_stops_a_worker_unheard_for_longer_than_the_limit() -> None:
    clock, contact = Clock(), {"app": 1000.0, "another-group": 1100.0}
    guard = fence(contact, clock)
    clock.now += 27.5
    with pytest.raises(Stopped) as stopped:
        guard.check()
    fault = stopped.value.args[0]
    assert isinstance(fault, PublishFault) and isinstance(fault.error, SessionExpired)
    assert "no heartbeat of group 'app' was answered for 28 s" in fault.cause
    assert "joins the group again" in fault.fix
    contact["app"] = clock.now  # a heartbeat answered: open again
    guard.check()


def test_a_hold_waits_out_a_silence_and_ends_with_the_first_confirmation() -> None:
    """A whole-cluster outage, or a coordinator moving: the coordinator's first answer after
    40 s of silence confirms the member; the write goes on, nothing was written meanwhile, the
    probes said "not ready" (but live) for the whole hold."""
    clock, contact, expelled = Clock(), {"app": 1000.0}, {}
    health = Health(stall_seconds=60.0, clock=clock)
    health.started()
    seen: list[tuple[bool, bool]] = []

    def on_hold(held: bool) -> None:
        health.held(held)
        seen.append((health.liveness()[0], health.readiness()[0]))

    coordinator = Coordinator(clock, contact, expelled, {12.0: "confirmed"})
    guard = fence(contact, clock, expelled, on_hold=on_hold, sleep=coordinator.sleep)
    clock.now += 28.0
    coordinator.start = clock.now
    asyncio.run(guard.hold())
    assert seen == [(True, False), (True, True)]
    assert health.readiness() == (True, "ready")
    assert guard.holds == 1 and 12.0 <= guard.held_seconds <= 12.5
    assert not guard.in_doubt()
    guard.check()


def test_writes_waiting_in_one_outage_are_one_hold() -> None:
    """A publish, a flush and a commit waiting at the same moment: one hold for the operator
    (the counter, the log, "not ready" once), lasting from the first wait to the last."""
    clock, contact = Clock(), {"app": 1000.0}
    seen: list[bool] = []
    coordinator = Coordinator(clock, contact, {}, {12.0: "confirmed"})
    guard = fence(contact, clock, on_hold=seen.append, sleep=coordinator.sleep)
    clock.now += 28.0
    coordinator.start = clock.now

    async def three() -> None:
        await asyncio.gather(guard.hold(), guard.hold(), guard.hold())

    asyncio.run(three())
    assert guard.holds == 1 and seen == [True, False]
    assert 12.0 <= guard.held_seconds <= 13.0
    asyncio.run(guard.hold())  # after the outage: no hold
    assert guard.holds == 1


def test_a_hold_ends_in_a_stop_when_the_coordinator_says_the_member_is_gone() -> None:
    """A partitioned worker healed after its group moved on: the first answer is "not a
    member"; the worker stops without writing, and stays stopped even if a join completed
    after that answer (its cache is for partitions it may not own)."""
    clock, contact, expelled = Clock(), {"app": 1000.0}, {}
    coordinator = Coordinator(clock, contact, expelled, {60.0: "expelled", 61.0: "confirmed"})
    guard = fence(contact, clock, expelled, sleep=coordinator.sleep)
    clock.now += 28.0
    coordinator.start = clock.now
    with pytest.raises(Stopped) as stopped:
        asyncio.run(guard.hold())
    fault = stopped.value.args[0]
    assert isinstance(fault, PublishFault) and isinstance(fault.error, Expelled)
    assert "no longer a member" in fault.cause and "TOOLWIRE_SESSION_TIMEOUT" in fault.fix
    contact["app"] = clock.now + 5  # a join completed later
    clock.now += 6
    for write in (guard.check, lambda: asyncio.run(guard.hold())):
        with pytest.raises(Stopped):
            write()


def test_a_hold_no_answer_ends_stops_the_worker_after_its_timeout() -> None:
    clock, contact, expelled = Clock(), {"app": 1000.0}, {}
    coordinator = Coordinator(clock, contact, expelled, {})
    guard = fence(contact, clock, expelled, sleep=coordinator.sleep, max_hold=20.0)
    clock.now += 28.0
    with pytest.raises(Stopped) as stopped:
        asyncio.run(guard.hold())
    fault = stopped.value.args[0]
    assert isinstance(fault.error, SessionExpired)
    assert "TOOLWIRE_FENCE_HOLD_TIMEOUT=20 s" in fault.cause
    assert 20.0 < guard.held_seconds <= 20.5


def test_an_expulsion_without_a_silence_stops_the_worker_and_an_older_one_does_not() -> None:
    clock = Clock()
    expelled = {"app": 990.0}  # noted before this fence (another worker's, in one process)
    contact = {"app": 1000.0}
    guard = fence(contact, clock, expelled)
    guard.check()
    expelled["app"] = clock.now + 1.0
    clock.now += 2.0
    with pytest.raises(Stopped):
        asyncio.run(guard.hold())


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
    """Fix 5 on aiokafka's own coordinator code: a heartbeat answered without error or with
    "rebalancing" notes a contact; one whose request failed, or whose coordinator moved,
    notes nothing; "unknown member" and "illegal generation" (aiokafka resets the generation)
    note an expulsion; starting the heartbeat task (what aiokafka does once a join and sync
    succeeded) notes a contact."""
    fixes.install("fence-test-input")
    # NoError, RebalanceInProgress, a failed request, NotCoordinator, UnknownMemberId,
    # IllegalGeneration.
    answers = iter([0, 27, None, 16, 25, 22])

    async def send_req(request: Any) -> Any:
        code = next(answers)
        if code is None:
            from aiokafka.errors import RequestTimedOutError
            raise RequestTimedOutError()
        return SimpleNamespace(error_code=code)

    def reset_generation() -> None:
        member.generation, member.member_id = -1, ""

    member = SimpleNamespace(group_id="fence-group", generation=4, member_id="m-1",
                             coordinator_id=1, _send_req=send_req,
                             reset_generation=reset_generation, request_rejoin=lambda: None,
                             coordinator_dead=lambda: None, _heartbeat_task=None,
                             _session_timeout_ms=20_000)
    fixes.CONTACT.pop("fence-group", None)
    fixes.EXPELLED.pop("fence-group", None)

    def beat() -> bool:
        return bool(asyncio.run(GroupCoordinator._do_heartbeat(member)))

    assert beat() is True
    first = fixes.CONTACT["fence-group"]
    assert beat() is True  # rebalancing keeps the member
    second = fixes.CONTACT["fence-group"]
    assert second >= first
    assert beat() is False and beat() is False
    assert fixes.CONTACT["fence-group"] == second and "fence-group" not in fixes.EXPELLED
    assert beat() is False  # unknown member
    assert fixes.EXPELLED["fence-group"] >= second and member.generation == -1
    noted = fixes.EXPELLED.pop("fence-group")
    assert beat() is False  # illegal generation, but the member had no generation any more
    assert "fence-group" not in fixes.EXPELLED
    member.generation = 5
    fixes.EXPELLED["fence-group"] = noted

    async def join_completed() -> None:
        member._heartbeat_routine = lambda: asyncio.sleep(0)
        GroupCoordinator._start_heartbeat_task(member)
        await member._heartbeat_task

    asyncio.run(join_completed())
    assert fixes.CONTACT["fence-group"] > second


def test_a_heartbeat_the_coordinator_never_answers_gives_up_and_looks_for_it_again() -> None:
    """A coordinator cut off from the cluster drops the heartbeat silently: the member stops
    waiting after a third of the session timeout (not the 30 s and more of the request
    timeout), notes neither a contact nor an expulsion, and looks for the coordinator again
    — the new one gives it a session from when it loaded the group."""
    fixes.install("fence-test-input")
    dead: list[bool] = []

    async def send_req(request: Any) -> Any:
        await asyncio.sleep(3600)

    member = SimpleNamespace(group_id="silent-group", generation=7, member_id="m-2",
                             coordinator_id=1, _send_req=send_req,
                             reset_generation=lambda: None, request_rejoin=lambda: None,
                             coordinator_dead=lambda: dead.append(True),
                             _heartbeat_task=None, _session_timeout_ms=3_000)
    fixes.CONTACT.pop("silent-group", None)
    fixes.EXPELLED.pop("silent-group", None)
    started = time.monotonic()
    assert asyncio.run(GroupCoordinator._do_heartbeat(member)) is False
    waited = time.monotonic() - started
    assert 0.9 <= waited < 3.0, waited
    assert fixes.heartbeat_wait(3.0) == 1.0 and fixes.heartbeat_wait(20.0) == 20.0 / 3
    assert dead == [True] and member.generation == 7
    assert "silent-group" not in fixes.CONTACT and "silent-group" not in fixes.EXPELLED


def test_a_coordinator_lookup_a_silent_broker_never_answers_is_retried_elsewhere() -> None:
    """aiokafka sends FindCoordinator to a random broker, which may be the cut-off one: the
    lookup gives up after a third of the client's request timeout with the retriable
    ``RequestTimedOutError`` (its lookup loop then updates metadata and asks again)."""
    from aiokafka.client import AIOKafkaClient, CoordinationType
    from aiokafka.errors import RequestTimedOutError

    fixes.install("fence-test-input")
    answers: list[Any] = []

    async def send(node_id: int, request: Any) -> Any:
        if not answers:
            await asyncio.sleep(3600)
        return answers.pop()

    client = SimpleNamespace(_request_timeout_ms=3_000, get_random_node=lambda: 2, send=send)
    started = time.monotonic()
    with pytest.raises(RequestTimedOutError) as raised:
        asyncio.run(AIOKafkaClient.coordinator_lookup(client, CoordinationType.GROUP, "g"))
    assert RequestTimedOutError.retriable and "not answered in 1.0 s" in str(raised.value)
    assert 0.9 <= time.monotonic() - started < 3.0
    answers.append(SimpleNamespace(error_code=0, coordinator_id=3))
    found = asyncio.run(AIOKafkaClient.coordinator_lookup(client, CoordinationType.GROUP, "g"))
    assert found == 3


def test_a_rejoin_after_a_silence_longer_than_the_session_counts_as_an_expulsion() -> None:
    """Healed after its group moved on, a member may never get a heartbeat answer: aiokafka
    rejoins, the coordinator answers the join "unknown member", and the member joins as a
    new one — seen in the network-fault test, where the held writes were then released. A
    rejoin that starts after such a silence is noted as an expulsion; one within the session
    (an ordinary rebalance) is not."""
    fixes.install("fence-test-input")
    member = SimpleNamespace(group_id="lapsed-group", generation=3, _session_timeout_ms=20_000,
                             _heartbeat_interval_ms=3_000)
    fixes.EXPELLED.pop("lapsed-group", None)
    fixes.CONTACT["lapsed-group"] = time.monotonic() - 5.0

    async def run() -> None:
        # The wrapper only reads the member's fields before calling aiokafka's rejoin, which
        # needs a real client: stop it there.
        with contextlib.suppress(AttributeError):
            await GroupCoordinator._do_rejoin_group(member, "sub")

    asyncio.run(run())
    assert "lapsed-group" not in fixes.EXPELLED
    fixes.CONTACT["lapsed-group"] = time.monotonic() - 18.0
    asyncio.run(run())
    assert fixes.EXPELLED["lapsed-group"] > fixes.CONTACT["lapsed-group"]
    # Also when an offset commit answered "unknown member" first (generation reset).
    fixes.EXPELLED.pop("lapsed-group")
    member.generation = -1
    asyncio.run(run())
    assert "lapsed-group" in fixes.EXPELLED


def test_the_livelock_check_skips_a_partition_whose_position_is_not_known_yet() -> None:
    """Fix 6 (in :mod:`toolwire.app.fixes` beside fix 5): aiokafka's ``position`` asserts
    right after a rebalance; Faust's livelock check let that crash the consumer service."""
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    fixes.install("fence-test-input")

    class State:
        highwater = 10

        @property
        def position(self) -> int:
            raise AssertionError  # aiokafka: position of a partition awaiting its reset

    assignment = SimpleNamespace(state_value=lambda tp: State())
    fetcher = SimpleNamespace(_subscriptions=SimpleNamespace(
        subscription=SimpleNamespace(assignment=assignment)))
    thread = SimpleNamespace(
        time_started=0.0, tp_stream_timeout_secs=120.0,
        consumer=SimpleNamespace(app=SimpleNamespace(
            monitor=object(), topics=SimpleNamespace(acks_enabled_for=lambda topic: True))),
        _ensure_consumer=lambda: SimpleNamespace(_fetcher=fetcher),
        _verify_aiokafka_event_path=lambda now, tp: False)
    tp = SimpleNamespace(topic="t", partition=0)
    assert AIOKafkaConsumerThread.verify_event_path(thread, 100.0, tp) is None
