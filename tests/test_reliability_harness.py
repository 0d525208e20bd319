"""The reliability harness itself, without a broker (issue 23's four blind spots).

- :func:`tests.reliability.attribute` ties each copy of a duplicate to the process that
  published it and explains it only by an event *of that process* between the copies: a
  time window alone explains nothing (synthetic :class:`tests.reliability.Seen` copies).
- :func:`tests.reliability.tie`: by provenance (a dead letter's ``worker``), by the only
  process running, by the owner of the partition per the workers' logs.
- The workers' log readers (assignments, recoveries) on a log as Faust writes it.
- :class:`tests.app.support.Worker` refuses to kill or stop a process that exited by
  itself (unless told it may have), :func:`tests.app.support.check_workers` looks at every
  worker, and :class:`tests.reliability.Supervised` restarts a status-75 exit within its
  bound only: stand-in processes (``python -c``) instead of real workers.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.app.support import Deployment, Worker, WorkerExited, check_workers, stop_workers
from tests.reliability import (
    BY_LIFE,
    BY_OWNER,
    BY_PROVENANCE,
    Event,
    Process,
    RestartBudget,
    Seen,
    Supervised,
    attribute,
    check_running,
    copies_of,
    explains,
    log_assignments,
    rebalances,
    recoveries,
    tie,
)

A, B = "host:101", "host:202"


def copy(at: float, offset: int, *, worker: str | None = None, request: str = "r1",
         partition: int = 0) -> Seen:
    """One output record of ``request`` written at ``at``: a dead letter naming ``worker``
    in its provenance, or (``worker=None``) an assembled record, which names none."""
    record: dict[str, Any] = {"request_id": request, "outcome": "assembled"}
    headers = {"request-id": request.encode()}
    if worker is not None:
        record = {"request_id": request, "outcome": "dead_letter", "reason": "x",
                  "provenance": {"worker": worker, "partition": partition, "time": at}}
        headers["toolwire.errors.worker"] = worker.encode()
    value = orjson.dumps(record)
    return Seen("out", 0, offset, b"s1", value, headers, at, at + 0.01, record)


def one(windows: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(windows) == 1, windows
    return windows[0]


# --------------------------------------------------------------------------- attribution


def test_a_duplicate_by_one_process_with_no_event_between_its_copies_is_unexplained() -> None:
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=A)]
    # Events outside the copies, and one of the same process before the first copy.
    events = [Event(9.0, "kill 0", worker=A, kind="kill"), Event(13.0, "kill 2", worker=A,
                                                                 kind="kill")]
    window = one(attribute({"r1": copies}, events))
    assert window["event"] is None
    assert window["first_worker"] == A and window["again_worker"] == A
    assert window["first_tied_by"] == BY_PROVENANCE
    assert "no event of host:101" in window["why"]
    assert math.isnan(window["published_before_event_s"])


def test_a_duplicate_with_a_kill_of_its_publisher_between_the_copies_is_explained() -> None:
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=B)]
    events = [Event(10.5, "kill 1", worker=A, kind="kill")]
    window = one(attribute({"r1": copies}, events))
    assert window["event"] == "kill 1"
    assert window["why"] is None
    assert window["published_before_event_s"] == 0.5
    assert window["again_after_event_s"] == 1.5
    assert (window["first_worker"], window["again_worker"]) == (A, B)


def test_a_duplicate_whose_only_event_is_another_process_restart_is_unexplained() -> None:
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=A)]
    events = [Event(11.0, "supervisor restart 1 (exit 75 of host:202)", worker=B,
                    kind="restart")]
    window = one(attribute({"r1": copies}, events))
    assert window["event"] is None
    assert "only ['supervisor restart 1" in window["why"]


def test_a_restart_of_the_first_copy_publisher_explains_it() -> None:
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=B)]
    events = [Event(11.0, "restart of B", worker=B, kind="restart"),
              Event(11.5, "restart of A", worker=A, kind="restart")]
    assert one(attribute({"r1": copies}, events))["event"] == "restart of A"


def test_a_kill_cannot_explain_a_copy_its_victim_published_after_it() -> None:
    """A killed process publishes nothing after its kill: both copies tied to it mean the
    tie or the kill is wrong, not an explanation."""
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=A)]
    window = one(attribute({"r1": copies}, [Event(11.0, "kill", worker=A, kind="kill")]))
    assert window["event"] is None


def test_a_time_window_alone_explains_nothing_when_the_copy_names_no_process() -> None:
    """An assembled copy names no worker: with no processes to tie it by, its duplicate is
    unexplained, whatever falls between the copies."""
    copies = [copy(10.0, 1), copy(12.0, 2)]
    window = one(attribute({"r1": copies}, [Event(11.0, "kill", worker=A, kind="kill"),
                                            (11.2, "broker stop")]))
    assert window["event"] is None
    assert window["first_worker"] is None
    assert window["why"].startswith("the first copy is tied to no process")


def test_a_broker_event_explains_the_duplicates_of_processes_it_found_running() -> None:
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=A)]
    running = [Process(A, started=5.0, ended=None)]
    gone = [Process(A, started=5.0, ended=10.5)]  # (it could not have published again)
    events = [(11.0, "broker stop")]  # a plain (time, label) pair: an event of the cluster
    assert one(attribute({"r1": copies}, events, processes=running))["event"] == "broker stop"
    assert one(attribute({"r1": copies}, events, processes=gone))["event"] is None


def test_a_rebalance_explains_only_the_partitions_it_moved_away_from_the_publisher() -> None:
    first, again = copy(10.0, 1, worker=A, partition=2), copy(12.0, 2, worker=B, partition=2)
    moved = Event(11.0, "rebalance", worker=A, kind="rebalance", partitions={0, 1})
    assert one(attribute({"r1": [first, again]}, [moved]))["event"] is None
    moved_too = Event(11.0, "rebalance", worker=A, kind="rebalance", partitions={2})
    assert one(attribute({"r1": [first, again]}, [moved_too]))["event"] == "rebalance"
    # The input partition given by the plans wins over a copy's own.
    assert one(attribute({"r1": [first, again]}, [moved_too],
                         partitions={"r1": 0}))["event"] is None


def test_each_pair_of_copies_is_explained_on_its_own() -> None:
    copies = [copy(10.0, 1, worker=A), copy(12.0, 2, worker=B), copy(14.0, 3, worker=B)]
    windows = attribute({"r1": copies}, [Event(11.0, "kill a", worker=A, kind="kill")])
    assert [w["event"] for w in windows] == ["kill a", None]


def test_an_event_is_still_a_time_and_a_label() -> None:
    event = Event(3.0, "kill", worker=A, kind="kill")
    at, label = event
    assert (at, label) == (3.0, "kill") == (event.at, event.label)
    assert sorted([(4.0, "later"), event, (1.0, "earlier")])[1] is event
    assert Event(1.0, "stop").kind == "cluster" and Event.of((1.0, "x")).worker is None
    assert not explains(Event(1.0, "x", worker=B, kind="kill"), tie(copy(0.5, 1, worker=A), []),
                        tie(copy(2.0, 2, worker=B), []), 0, {})


# --------------------------------------------------------------------------- ties


def test_a_copy_is_tied_by_provenance_then_by_life_then_by_its_partition_owner() -> None:
    a = Process(A, started=0.0, ended=10.0, owned=((1.0, frozenset({0, 1})),
                                                   (6.0, frozenset({0}))))
    b = Process(B, started=5.0, ended=None, owned=((6.0, frozenset({1, 2, 3})),))
    assert tie(copy(3.0, 1, worker=B), [a, b]) == (B, BY_PROVENANCE)
    assert tie(copy(3.0, 1), [a, b]) == (A, BY_LIFE)  # b not started yet
    assert tie(copy(11.0, 1), [a, b]) == (B, BY_LIFE)  # a ended
    assert tie(copy(7.0, 1), [a, b], partition=1) == (B, BY_OWNER)
    assert tie(copy(7.0, 1), [a, b], partition=0) == (A, BY_OWNER)
    # Several running, and none (or both) owning it, or its partition unknown: not tied.
    assert tie(copy(5.5, 1), [a, b], partition=2).worker is None
    assert tie(copy(7.0, 1), [a, b]).worker is None
    assert tie(copy(20.0, 1), [a]).worker is None


def test_assembled_copies_of_two_workers_are_tied_by_the_owner_of_their_partition() -> None:
    """Two workers running: the first copy by the one that owned the partition and was
    killed, the second by the one that took it over."""
    a = Process(A, started=0.0, ended=10.5, owned=((1.0, frozenset({0, 1})),))
    b = Process(B, started=0.0, ended=None, owned=((1.0, frozenset({2, 3})),
                                                   (16.0, frozenset({0, 1, 2, 3}))))
    copies = [copy(10.0, 1), copy(17.0, 2)]
    kill = Event(10.5, "kill a", worker=A, kind="kill")
    window = one(attribute({"r1": copies}, [kill], processes=[a, b], partitions={"r1": 1}))
    assert (window["first_worker"], window["again_worker"]) == (A, B)
    assert window["first_tied_by"] == BY_OWNER and window["again_tied_by"] == BY_LIFE
    assert window["event"] == "kill a"
    # The same copies on b's partition: b published both, and no event of b came between.
    window = one(attribute({"r1": copies}, [kill], processes=[a, b], partitions={"r1": 2}))
    assert window["first_worker"] == B and window["event"] is None


def test_copies_of_names_each_copy_publisher() -> None:
    conflicts = {"r1": [copy(10.0, 1, worker=A), copy(12.0, 2)]}
    [entry] = copies_of(conflicts, [(11.0, "kill")], processes=[Process(B, 11.0)])
    assert [(c["worker"], c["tied_by"]) for c in entry["copies"]] == [
        (A, BY_PROVENANCE), (B, BY_LIFE)]
    assert entry["events_between"] == ["kill"]


# --------------------------------------------------------------------------- worker logs


def stamp(at: float) -> str:
    whole = int(at)
    millis = round((at - whole) * 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(whole)) + f",{millis:03d}"


def faust_log(path: Path, start: float, topic: str = "g.chunks") -> Path:
    """A worker log as Faust and the product write it: join, assignment table, recovery,
    a rebuilt response, a revocation and a second assignment."""
    lines = [
        f"[{stamp(start)}] [42] [INFO] Revoking previously assigned partitions set() for "
        "group g ",
        f"[{stamp(start + 1)}] [42] [INFO] Joined group 'g' (generation 3) with member_id "
        "faust-0.15.3-aaaa ",
        f"[{stamp(start + 1.5)}] [42] [INFO] Setting newly assigned partitions ",
        "+Topic Partition Set-------------+------------+",
        "| topic                          | partitions |",
        "+--------------------------------+------------+",
        "| g-chunks-changelog             | {0-3}      |",
        f"| {topic:<30} | {{0-1, 3}}   |",
        "+--------------------------------+------------+ for group g ",
        f"[{stamp(start + 2)}] [42] [INFO] [^---Recovery]: Restoring state from changelog "
        "topics... ",
        f"[{stamp(start + 2.5)}] [42] [INFO] [^---Recovery]: Recovery complete ",
        f"[{stamp(start + 2.6)}] [42] [INFO] [^---Recovery]: Worker ready ",
        f"[{stamp(start + 2.7)}] [42] [INFO] worker host:42 started: event loop x ",
        f"[{stamp(start + 3)}] [42] [INFO] request r7: rebuilt from 4 stored chunks ",
        f"[{stamp(start + 5)}] [42] [INFO] Revoking previously assigned partitions "
        f"frozenset({{TopicPartition(topic='{topic}', partition=0)}}) for group g ",
        f"[{stamp(start + 6)}] [42] [INFO] Setting newly assigned partitions ",
        "+Topic Partition Set-------------+------------+",
        f"| {topic:<30} | {{3}}        |",
        "+--------------------------------+------------+ for group g ",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_log_readers_find_assignments_and_recoveries(tmp_path: Path) -> None:
    start = float(int(time.time()))
    log = faust_log(tmp_path / "w.log", start)
    assert log_assignments(log, "g.chunks") == [
        (start, frozenset()), (start + 1.5, frozenset({0, 1, 3})),
        (start + 5, frozenset()), (start + 6, frozenset({3}))]
    assert log_assignments(log, "g.chunks", revocations=False) == [
        (start + 1.5, frozenset({0, 1, 3})), (start + 6, frozenset({3}))]

    class Logged:
        pass

    worker: Any = Logged()
    worker.log = log
    first, second = recoveries(worker, "g.chunks")
    assert first.member_id == "faust-0.15.3-aaaa" and first.generation == 3
    assert first.partitions == {0, 1, 3} and first.recovered and first.rebuilt == 1
    assert (first.restoring_at, first.recovered_at) == (start + 2, start + 2.5)
    assert second.partitions == {3} and not second.recovered
    proc = Process(A, start, None, tuple(log_assignments(log, "g.chunks", revocations=False)))
    assert proc.owns(0, start + 5.5) is True  # until the next assignment, not the revocation
    assert proc.owns(0, start + 7) is False and proc.owns(0, start) is None
    [moved] = rebalances([proc])
    assert moved.worker == A and moved.partitions == frozenset({0, 1}) and moved.at == start + 6
    # A member expelled without being told logs no new assignment: the partitions it still
    # holds by its log moved away from it when another process's log takes them over.
    other = Process("vm:2", start, None, ((start + 4, frozenset({1, 2})),))
    events = rebalances([proc, other])
    taken = [e for e in events if "taken over" in e.label]
    assert [(e.at, e.worker, e.partitions) for e in taken] == [(start + 4, A, frozenset({1}))]
    assert len(events) == 2  # and A's own move of 0 (1 already taken) at its next assignment


# --------------------------------------------------------------------------- processes


def stand_in(code: int) -> tuple[str, ...]:
    """A launcher whose ``worker`` exits at once with ``code`` (a worker that dies)."""
    return ("-c", f"import sys; print('stand-in exiting {code}'); sys.exit({code})")


SLEEPER = ("-c", "import time; time.sleep(60)")


def wait_exited(worker: Worker, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while worker.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert worker.process.poll() is not None


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    return Deployment("127.0.0.1:9", tmp_path)


def test_kill_and_stop_refuse_a_worker_that_exited_by_itself(deployment: Deployment) -> None:
    dead = Worker(deployment, "dead", stand_in(3))
    wait_exited(dead)
    with pytest.raises(WorkerExited, match="exited by itself with status 3") as raised:
        dead.kill()
    assert raised.value.status == 3 and "stand-in exiting 3" in str(raised.value)
    dead.kill()  # reported once; then it is a process that ended
    dead.stop()

    told = Worker(deployment, "told", stand_in(4))
    wait_exited(told)
    told.stop(expect_exited=True)
    assert told.ended == "exited" and told.ended_at is not None
    check_workers([told])

    other = Worker(deployment, "other", stand_in(5))
    wait_exited(other)
    with pytest.raises(WorkerExited, match="status 5"):
        other.stop()


def test_check_workers_looks_at_every_worker_not_just_the_last(
        deployment: Deployment) -> None:
    killed = Worker(deployment, "killed", SLEEPER)
    died = Worker(deployment, "died", stand_in(1))
    last = Worker(deployment, "last", SLEEPER)
    late = Worker(deployment, "late", stand_in(2))
    try:
        killed.kill()
        wait_exited(died)
        with pytest.raises(WorkerExited, match="status 1") as raised:
            check_workers([killed, died, last], when="at the test's checkpoint")
        assert "died-" in str(raised.value) and "at the test's checkpoint" in str(raised.value)
        assert killed.ended == "killed" and last.running
    finally:
        wait_exited(late)
        with pytest.raises(WorkerExited, match="status 2"):  # stops all, then names the death
            stop_workers([killed, late, last])
    assert not last.running and last.ended == "stopped"


def test_supervised_restarts_status_75_within_its_bound_only(deployment: Deployment) -> None:
    supervised = Supervised(deployment, "s", 2, reason="test", launcher=stand_in(75))
    try:
        deadline = time.monotonic() + 30
        while supervised.failure is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert supervised.failure is not None, supervised.exits
        assert supervised.restarts == 2 and len(supervised.restart_times) == 2
        assert supervised.exits == [75, 75, 75]
        assert [e.kind for e in supervised.events] == ["restart", "restart"]
        assert [e.worker for e in supervised.events] == [w.name for w in supervised.workers[:2]]
        assert len(supervised.budget.refused) == 1
        with pytest.raises(AssertionError, match="once more than the scenario allows"):
            supervised.check()
        with pytest.raises(AssertionError, match="at most 2 restarts allowed"):
            check_running(supervisors=[supervised])
    finally:
        supervised.close()
    check_workers(supervised.workers)  # every exit was a 75 it answered


def test_a_check_right_after_an_exit_75_restarts_it_rather_than_report_a_death(
        deployment: Deployment) -> None:
    # The watcher never looks (an hour between looks): only check() can see the exit.
    supervised = Supervised(deployment, "c", 1, reason="test", launcher=stand_in(75),
                            watch_every=3600)
    try:
        first = supervised.worker
        first.process.wait(timeout=20)
        supervised.check("right after its exit")  # not a WorkerExited: the 75 is restarted
        assert supervised.exits == [75] and supervised.restarts == 1
        assert supervised.worker is not first and supervised.events[0].worker == first.name
        supervised.worker.process.wait(timeout=20)
        with pytest.raises(AssertionError, match="once more than the scenario allows"):
            supervised.check("after the second exit")
        with pytest.raises(AssertionError, match="once more"):  # counted once, not again
            supervised.check("again")
        assert supervised.exits == [75, 75] and len(supervised.budget.refused) == 1
    finally:
        supervised.close()


def test_supervised_leaves_another_exit_as_a_death(deployment: Deployment) -> None:
    supervised = Supervised(deployment, "d", 5, launcher=stand_in(1))
    try:
        deadline = time.monotonic() + 20
        while not supervised.exits and time.monotonic() < deadline:
            time.sleep(0.05)
        assert supervised.exits == [1] and supervised.restarts == 0
        with pytest.raises(WorkerExited, match="status 1"):
            supervised.check()
    finally:
        supervised.close()


def test_a_shared_budget_bounds_the_scenario_and_a_kill_is_no_restart(
        deployment: Deployment) -> None:
    budget = RestartBudget(1, "one for the scenario")
    sleeping = Supervised(deployment, "k", budget=budget, launcher=SLEEPER)
    try:
        killed = sleeping.kill()
        assert killed.ended == "killed" and sleeping.restarts == 0
        sleeping.check()
        assert budget.take(1.0, A) and not budget.take(2.0, B) and budget.exceeded
    finally:
        sleeping.close()
        stop_workers(sleeping.workers)
