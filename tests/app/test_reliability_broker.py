"""Failure tests with figures: crashes, a broker restart, a rebalance, poison, replication.

Each test runs real ``toolwire worker`` processes on a real broker while traffic flows, breaks
something at a chosen or random moment, and checks every downstream record against the record
:func:`toolwire.core.assemble` gives for its response. Each prints one line
``FIGURES {json}`` (what it measured, each figure with its goal) before its assertions;
``ops/reliability`` runs this file at full size and prints every figure in one table.

Sizes come from ``TOOLWIRE_RELIABILITY_*`` variables (:data:`tests.reliability.SIZES`: small
CI defaults, the full values ``ops/reliability`` sets). Nothing is skipped at either size.

1. **Crash replay** (:func:`test_crash_replay_with_random_sigkills`): ``CRASH_RESPONSES``
   responses of the core corpus (300; full 2,000), 96 open at once, on 4 partitions, paced
   over the kill phase, while the worker is SIGKILLed ``CRASH_KILLS`` times (3; full 20) at
   random moments and restarted at once (:func:`crash_moment`). One kill in four, the 2nd,
   6th, 10th, ..., comes while the restarted worker starts, joins the group or restores its
   tables: a random 0.5-5 s after the restart, but no later than its log saying it restores
   its tables; the others a random 0-4 s after the restarted worker published its first
   record (mid-processing). The CI's 3 kills take each branch, the recovery one once.
   Asserted: nothing lost, every record equal to its expected one, no idempotency key with
   two different contents, every duplicate explained by the kill of the process that
   published its first copy (each copy tied to its process: :func:`tests.reliability.tie`),
   no worker exiting by itself (every one checked before each kill), each kill of the
   recovery branch landing on a worker that had published nothing yet; and what the product
   did after each kill, per each restarted worker's log: it was given every input partition,
   restored its tables from the changelogs and resumed its input, and published nothing
   before its recovery; at the end the group's description has the last worker (by its
   log's member id) alone, with every partition.
   Duplicates have the goal 0 but are reported, not asserted: delivery is at least once and
   a kill between the broker's acknowledgement of a record and the changelog write of the
   response's done marker publishes it again (README, "How it works"); the figures name the
   kill behind each one and how long before it the first copy was published.
2. **Broker restart** (:func:`test_broker_restart_mid_replay`): a dedicated local broker
   (not the session's) is stopped by the pid in its ``broker.json`` a third into a replay
   and started again on the same ports and data dir; the worker is left to its supervisor
   (:class:`~tests.reliability.Supervised`: a worker that stops with status 75 on a publish
   fault it cannot get past is started again, at most :data:`BROKER_MAX_RESTARTS` times;
   any other exit is a death). Asserted: nothing lost or wrong, a worker is running and
   processes again, no death, and every duplicate has, between its copies, the broker's
   stop or start while the process that published its first copy ran, or that process's
   restart by the supervisor.
3. **Rebalance** (:func:`test_rebalance_takeover`, standby replicas unset and 1): two
   workers in one group on 4 partitions with ``TOOLWIRE_SESSION_TIMEOUT=6`` (Kafka's
   minimum session timeout; the tests' :class:`~tests.app.support.Deployment` sets it); a
   quarter into the replay one of them is SIGKILLed (``REBALANCE_KILLS`` times, 2; full 3:
   b, then a, in turn, :func:`rebalance_victim`, so that the CI's two kills kill each worker
   once); the other takes over (take-over time: the kill to the first record of a partition
   the killed worker owned, per its log, checked against the group's description); the
   killed worker is started again and the group's description (``describe_consumer_groups``)
   shows the partitions spread over both again.
   Asserted besides: nothing lost or wrong, no death, supervisor restarts within
   :data:`REBALANCE_MAX_RESTARTS`, every duplicate has the SIGKILL or the restart of the
   process that published its first copy between its copies (the restart of a killed worker
   is a clean rebalance); and what the product did per cycle: the take-over record was
   published by the survivor, the group's description shows the survivor (by its log's
   member id) alone with the killed worker's partitions and its log the assignment and
   table recovery of them; after the restart both members own partitions, the restarted
   one exactly those its log says it was assigned, and its log shows its recovery.
4. **Poison isolation** (:func:`test_poison_isolation`): after a short warm-up that is not
   measured, ``POISON_ROUNDS`` rounds (3; full 3), each with valid responses at a steady
   rate (20 a second; ``POISON_VALID`` per phase, 300; full 1,000), first alone, then with
   poisoning traffic on one partition, sent by a client of its own (every kind of
   :mod:`tests.hostile`: malformed chunks, lines, arguments, calls and responses over the
   worker's limits, deep JSON, bad headers and keys, requests that never end (first round);
   and single messages as large as the worker's ``max_response_bytes``), the worker running
   with :data:`tests.hostile.LIMITS` and a stream TTL of one phase plus 10 s; latency is the
   last chunk's send to the record's read. Goal, asserted: p99 with poison at most twice p99
   without, over every round's latencies together (the phases alternate; one round's p99 is
   its third-slowest response, which one pause of the machine decides). Asserted too: every
   hostile request ends as exactly the records :mod:`tests.hostile` expects (reason, key,
   record, raw chunks, headers, schema: the checks of :mod:`tests.app.test_hostile_broker`),
   and nothing else is published.
5. **Replication** (:func:`test_replication_survives_a_broker_crash`): a 3-node KRaft cluster
   (:mod:`tests.cluster`, 256 MiB heap per node), topics from ``toolwire topics apply`` with
   ``TOOLWIRE_REPLICATION_FACTOR=3`` and ``TOOLWIRE_MIN_INSYNC_REPLICAS=2``, a worker with the
   same settings, under its supervisor as in 2; the node coordinating the worker's group is
   SIGKILLed mid-replay. Asserted: nothing lost or wrong; no death, restarts within
   :data:`CLUSTER_MAX_RESTARTS`; every duplicate has the node's kill (while the first copy's
   process ran) or that process's restart by the supervisor between its copies; every
   topic, changelogs included, has replication factor 3 and ``min.insync.replicas=2``.

Besides: :func:`test_an_input_message_at_the_broker_limit_keeps_the_worker_up`, one input
message that a default broker accepts (about 1 MB) between two sound responses.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.app.support import Worker, WorkerExited
from tests.app.test_hostile_broker import Checker, Ledger, Out
from tests.cluster import Cluster
from tests.hostile import (
    LIMITS,
    Generator,
    Message,
    Outcome,
    Request,
    interleave,
    partition_of,
    worker_env,
)
from tests.reliability import (
    OUTAGE_ERRORS,
    Event,
    Figures,
    Planned,
    Process,
    Producer,
    RestartBudget,
    Seen,
    Send,
    Supervised,
    TunedDeployment,
    Verdict,
    Watcher,
    attribute,
    check_running,
    copies_of,
    corpus_responses,
    fence_holds,
    group_assignment,
    log_assignment,
    median,
    member_id,
    open_at_once,
    paced,
    percentile,
    processes,
    quiet_clients,
    recoveries,
    serious_errors,
    size,
    spread,
    start_local_broker_again,
    stop_local_broker,
    tie,
    tracebacks,
    verify,
    windowed,
)
from toolwire.broker import local
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_REQUEST_ID, Sink

pytestmark = pytest.mark.broker

PARTITIONS = 4
SEED = size("seed")
#: Responses open at once in every replay (``TOOLWIRE_RELIABILITY_OPEN``, at least 64).
OPEN = size("open")
#: Seconds a test keeps reading after the last expected record, so a late duplicate is seen.
IDLE = 4.0
#: Expected length of one kill cycle of the crash replay: the dead member's session (6 s),
#: the rejoin and table recovery, then up to 4 s of work. The input is paced over
#: ``kills * CYCLE`` seconds so that every kill lands on a worker with work to do.
CYCLE = 9.0

CRASH_RESPONSES = size("crash_responses")
CRASH_KILLS = size("crash_kills")
BROKER_RESPONSES = size("broker_responses")
REBALANCE_RESPONSES = size("rebalance_responses")
REBALANCE_KILLS = size("rebalance_kills")
POISON_VALID = size("poison_valid")
POISON_MESSAGES = size("poison_messages")
POISON_ROUNDS = size("poison_rounds")
CLUSTER_RESPONSES = size("cluster_responses")


@pytest.fixture(autouse=True)
def _quiet_clients() -> Iterator[None]:
    with quiet_clients():
        yield


def requests_of(plans: list[Planned]) -> set[str]:
    return {p.request for p in plans}


def stop_all(workers: list[Worker]) -> list[str]:
    """Stop (SIGTERM, by pid) every worker still running (those the test killed, or whose
    status-75 exit a supervisor answered, are gone already); return each one that had
    exited by itself, with its status and log tail, for the test to fail on once its
    figures are out (:func:`assert_no_deaths`)."""
    deaths = []
    for worker in workers:
        code = worker.exited_by_itself()
        if code is not None:
            deaths.append(str(WorkerExited(worker, code, "before the test stopped it")))
        worker.stop(expect_exited=True)
    return deaths


def assert_no_deaths(deaths: list[str]) -> None:
    assert deaths == [], f"{len(deaths)} worker(s) exited by themselves:\n" + "\n".join(deaths)


def common_figures(figures: Figures, verdict: Verdict, windows: list[dict[str, Any]],
                   deaths: list[str] | None = None) -> None:
    """``windows``: :func:`~tests.reliability.attribute` of the duplicates to the test's
    events (kills, broker stops and starts, supervisor restarts), each copy tied to the
    process that published it."""
    figures.equal("responses_lost", len(verdict.lost), 0)
    figures.equal("records_wrong", len(verdict.wrong), 0)
    figures.equal("idempotency_keys_with_different_content", len(verdict.conflicting), 0)
    figures.equal("identical_duplicates", verdict.duplicate_count, 0)
    figures.equal("duplicates_without_a_kill_between_copies", len(unexplained(windows)), 0)
    figures.report("duplicate_copies_tied_by", dict(Counter(
        how for w in windows for how in (w["first_tied_by"], w["again_tied_by"]))))
    if deaths is not None:
        figures.equal("workers_exited_by_themselves", len(deaths), 0)


def unexplained(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The duplicates with no event of the process that published the first copy (its
    kill, its restart, a broker stop or start it lived through) between their copies."""
    return [w for w in windows if w["event"] is None]


def assert_explained(windows: list[dict[str, Any]]) -> None:
    """Delivery is at least once, but only across a crash: a response published twice
    with no kill or restart of the process that published it first, nor a broker stop or
    start it lived through, between the copies is a bug."""
    assert unexplained(windows) == [], (
        f"{len(unexplained(windows))} response(s) published twice with no kill, stop or "
        f"restart of the first copy's publisher between the copies: {unexplained(windows)[:5]}")


def ties_of(seen: list[Seen], procs: list[Process], verdict: Verdict) -> list[str | None]:
    """The process (``hostname:pid``) that published each record of ``seen``, in order."""
    return [tie(s, procs, verdict.partitions.get(s.request_id or "")).worker for s in seen]


def wait_recovered(worker: Worker, topic: str, timeout: float = 90.0) -> None:
    """Until the worker's log says it restored its tables and resumed its input after its
    last assignment (or ``timeout``; the caller asserts what it found)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = recoveries(worker, topic)
        if found and found[-1].recovered:
            return
        if worker.process.poll() is not None:
            return
        time.sleep(0.2)


def common_asserts(verdict: Verdict) -> None:
    assert verdict.lost == [], f"responses lost: {verdict.summary()}"
    assert verdict.wrong == [], f"records differ from assemble(): {verdict.summary()}"
    assert verdict.conflicting == [], f"one idempotency key, different content: " \
                                      f"{verdict.summary()}"
    assert verdict.bad_keys == [], verdict.summary()
    assert verdict.stray == 0, verdict.summary()


def lost_details(verdict: Verdict, plans: list[Planned], producer: Producer,
                 *moments: float) -> list[dict[str, Any]]:
    """Where each lost response was: its partition, its size, when its end was sent
    (relative to each of ``moments``)."""
    by_request = {p.request: p for p in plans}
    out = []
    for request in verdict.lost[:20]:
        plan = by_request[request]
        sent = producer.end_sent.get(request)
        out.append({"request": request, "partition": plan.partition,
                    "messages": len(plan.messages),
                    "end_sent_relative_s": None if sent is None
                    else [round(sent - m, 3) for m in moments]})
    return out


def worker_errors(workers: list[Worker]) -> list[str]:
    """The first [ERROR] lines of the workers' logs, less those of a broker outage."""
    return [e[:300] for w in workers for e in serious_errors(w, OUTAGE_ERRORS)][:10]


def wait_all(watcher: Watcher, plans: list[Planned], timeout: float) -> None:
    """Until every planned response has a record (or ``timeout``), then ``IDLE`` more."""
    watcher.wait_requests(requests_of(plans), timeout)
    time.sleep(IDLE)


# --------------------------------------------------------------------------- 1. crash replay


DUPLICATE_WINDOW = (
    "each duplicate's first copy was published shortly before a SIGKILL (see "
    "published_before_event_s) and again by the restarted worker: the kill fell after the "
    "broker acknowledged the record and before the settlement of the response (its chunk "
    "deletions and its done marker, sent to the changelogs right after that ack: "
    "Processor.settle) reached the broker, so the restarted worker restored the response as "
    "open with all its chunks, re-read its end chunk from the last committed offset and "
    "decided it again, identically")
CONFLICT_WINDOW = (
    "the kill fell in the middle of the settlement: the chunk deletions (chunks changelog) "
    "reached the broker, the done marker (responses changelog) did not; the restarted worker "
    "restored the response as open but without its chunks, and its first re-read chunk "
    "(seq > 0) was dead-lettered as sequence_gap, a second record, with different content, "
    "under the same idempotency key (and a quarantine of the session)")


#: The two moments of a crash-replay kill (the branches of its schedule).
MID_PROCESSING = "mid-processing"
IN_RECOVERY = "after the restart, before or during recovery"
#: Lines of a starting worker's log, in the order they come, naming what it is doing.
STARTUP_PHASES = (("(Re-)joining group", "joining the group"),
                  ("Restoring state from changelog topics", "restoring its tables"),
                  ("Recovery complete", "recovered"))


def crash_moment(k: int) -> str:
    """The moment of kill ``k`` (from 1): one kill in four, the 2nd, 6th, 10th, ..., comes
    while the restarted worker starts, joins the group or restores its tables; every other
    one while it processes. The first is mid-processing (the first worker was waited for);
    the CI's three kills have one of each branch and one more mid-processing."""
    return IN_RECOVERY if k % 4 == 2 else MID_PROCESSING


def startup_phase(worker: Worker) -> str:
    """What a starting worker is doing, by the last phase its log names."""
    text = worker.log.read_text(errors="replace")
    phase = "starting"
    for line, name in STARTUP_PHASES:
        if line in text:
            phase = name
    return phase


def kill_in_recovery(worker: Worker, seconds: float) -> str:
    """Wait ``seconds`` after a worker's start, or less: until its log says it restores its
    tables (so a kill of this branch never lands after its recovery, even when recovery is
    short); return its phase at that moment. The caller kills it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        phase = startup_phase(worker)
        if phase != "starting" and phase != "joining the group":
            return phase
        time.sleep(0.02)
    return startup_phase(worker)


def first_processing(watcher: Watcher, since: float, plans: list[Planned],
                     timeout: float = 180.0) -> Seen | None:
    """The first record written at or after ``since`` (``None`` if every response had its
    record already, or none came within ``timeout``)."""
    everything = requests_of(plans)
    watcher.wait_for(lambda seen: any(s.created >= since for s in seen)
                     or everything <= {s.request_id for s in seen}, timeout)
    return watcher.first_after(since)


def crash_recoveries(workers: list[Worker], topic: str, moments: list[dict[str, Any]],
                     kills: list[Event], seen: list[Seen], ties: list[str | None]
                     ) -> list[dict[str, Any]]:
    """What each worker's log says it did once started (all but the first follow a kill):
    the input partitions it was assigned (it was alone in the group: all of them), whether
    it restored its tables from the changelogs and resumed its input, the responses it
    rebuilt from stored chunks, and its first record against its recovery."""
    out = []
    killed = {e.worker: e for e in kills}
    branch = {m["worker"]: m["moment"] for m in moments}
    for n, worker in enumerate(workers):
        found = recoveries(worker, topic)
        last = found[-1] if found else None
        kill = killed.get(worker.name)
        mine = [s.created for s, by in zip(seen, ties, strict=True) if by == worker.name]
        recovered_at = min((r.recovered_at for r in found if r.recovered_at is not None),
                           default=None)
        out.append({
            "worker": worker.label, "name": worker.name, "restarted": n > 0,
            "killed": kill is not None,
            "moment": branch.get(worker.label),
            "assigned": None if last is None else sorted(last.partitions),
            "restored_tables": last is not None and last.restoring_at is not None,
            "recovered": last is not None and last.recovered,
            "recovered_before_kill": last is not None and last.recovered_at is not None
            and (kill is None or last.recovered_at <= kill.at),
            "rebuilt_responses": sum(r.rebuilt for r in found),
            "records": len(mine),
            "first_record_after_recovery_s": None if not mine or recovered_at is None
            else round(min(mine) - recovered_at, 3)})
    return out


@pytest.mark.timeout(300 + CRASH_KILLS * 25 + CRASH_RESPONSES * 0.3)
def test_crash_replay_with_random_sigkills(kafka_bootstrap: str, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    dep = TunedDeployment(kafka_bootstrap, tmp_path, partitions=PARTITIONS)
    asyncio.run(dep.create_topics())
    plans = corpus_responses(CRASH_RESPONSES, prefix="c", partitions=PARTITIONS, rng=rng)
    order = windowed(plans, OPEN, rng)
    producer = Producer(kafka_bootstrap, dep.chunks, paced(order, CRASH_KILLS * CYCLE))
    watcher = Watcher(kafka_bootstrap, [dep.assembled, dep.deadletter], PARTITIONS)
    workers: list[Worker] = []
    kills: list[Event] = []
    moments: list[dict[str, Any]] = []
    to_processing: list[float] = []
    deaths: list[str] = []
    try:
        worker = Worker(dep, "w0")
        workers.append(worker)
        worker.wait_ready()
        producer.start()
        started, restarted = time.time(), False
        for k in range(1, CRASH_KILLS + 1):
            moment = crash_moment(k)
            if moment == IN_RECOVERY:  # while it joins the group or restores its tables
                phase = kill_in_recovery(worker, rng.uniform(0.5, 5.0))
            else:
                first = first_processing(watcher, started, plans)
                if first is not None and restarted:
                    to_processing.append(first.created - started)
                time.sleep(rng.uniform(0.0, 4.0))
                phase = startup_phase(worker)
            # Every worker so far: the earlier ones killed by this test, this one running
            # (Worker.kill fails too on a process that had exited by itself).
            check_running(workers, when=f"before kill {k}")
            killed_at = time.time()
            worker.kill()
            kills.append(Event.kill(killed_at, f"kill {k}", worker))
            moments.append({"kill": k, "moment": moment, "phase": phase,
                            "after_start_s": round(killed_at - started, 2),
                            "records_so_far": len(watcher.seen()),
                            "worker": worker.label})
            started, restarted = time.time(), True
            worker = Worker(dep, f"w{k}")
            workers.append(worker)
        first = first_processing(watcher, started, plans)
        if first is not None:
            to_processing.append(first.created - started)
        producer.finish(timeout=300 + CRASH_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + CRASH_RESPONSES * 0.15)
        check_running(workers, when="after the replay")
        # Who the broker says holds the input now: the last worker (by the member id its
        # log gives), alone, with every partition.
        settled_s, group_after = spread(kafka_bootstrap, dep.name, dep.chunks, 1, PARTITIONS,
                                        60)
        group_state = "Stable" if settled_s is not None else "not settled in 60 s"
        last_member = member_id(worker)
    finally:
        producer.abort()
        deaths = stop_all(workers)
        watcher.close()

    seen = watcher.seen()
    verdict = verify(seen, plans, dep.output_topics)
    procs = processes(workers, dep.chunks)
    windows = attribute(verdict.duplicates, kills, processes=procs,
                        partitions=verdict.partitions)
    ties = ties_of(seen, procs, verdict)
    for note in moments:  # what the killed process had published (its records, by tie)
        name = next(w.name for w in workers if w.label == note["worker"])
        note["records_by_it_before_kill"] = sum(1 for by in ties if by == name)
    lives = crash_recoveries(workers, dep.chunks, moments, kills, seen, ties)
    # Each restarted worker that was not killed before it got that far: the product's log
    # says it was given every input partition (alone in the group), restored its tables
    # from the changelogs and resumed its input, before it published anything.
    went_on = [r for r in lives[1:] if not (r["killed"] and r["moment"] == IN_RECOVERY)]
    in_recovery = [m for m in moments if m["moment"] == IN_RECOVERY]
    published_early = [r for r in lives if r["first_record_after_recovery_s"] is not None
                       and r["first_record_after_recovery_s"] < -0.001]
    figures = Figures("crash_replay")
    figures.report("responses", len(plans))
    figures.report("input_messages", len(order))
    figures.report("partitions", PARTITIONS)
    figures.at_least("open_at_once_max", open_at_once(order), 64)
    figures.report("sigkills", len(kills))
    taken = Counter(m["moment"] for m in moments)
    figures.report("kills_mid_processing", taken[MID_PROCESSING])
    figures.report("kills_in_recovery", taken[IN_RECOVERY])
    figures.equal("kills_in_recovery_of_a_worker_that_had_published",
                  sum(1 for m in in_recovery if m["records_by_it_before_kill"]), 0)
    common_figures(figures, verdict, windows, deaths)
    if windows:
        figures.report("duplicate_published_before_kill_max_s",
                       max(w["published_before_event_s"] for w in windows), "s")
    figures.equal("restarted_workers_assigned_every_partition",
                  sum(1 for r in went_on if r["assigned"] == list(range(PARTITIONS))),
                  len(went_on))
    figures.equal("restarted_workers_that_restored_their_tables",
                  sum(1 for r in went_on if r["restored_tables"] and r["recovered"]),
                  len(went_on))
    figures.equal("workers_that_published_before_their_recovery", len(published_early), 0)
    figures.report("responses_rebuilt_from_stored_chunks",
                   sum(r["rebuilt_responses"] for r in lives))
    figures.equal("group_after (members, partitions of the last worker)",
                  [len(group_after), sorted(group_after.get(last_member or "", ()))],
                  [1, list(range(PARTITIONS))])
    figures.report("restarts_measured", len(to_processing))
    figures.report("restart_to_first_processing_max_s",
                   max(to_processing, default=float("nan")), "s")
    figures.report("restart_to_first_processing_median_s", median(to_processing), "s")
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.report("fence_holds (writes held until the coordinator answered)",
                   sum(fence_holds(w) for w in workers))
    figures.note("kills", moments)
    figures.note("workers", lives)
    figures.note("group_after", {"state": group_state, "last_worker_member": last_member,
                                 "members": {m: sorted(p) for m, p in group_after.items()}})
    figures.note("duplicates", windows[:40])
    figures.note("duplicate_window", DUPLICATE_WINDOW if windows else "no duplicates")
    figures.note("different_contents", copies_of(verdict.conflicts, kills, processes=procs,
                                                 partitions=verdict.partitions)[:20])
    figures.note("lost", lost_details(verdict, plans, producer, *(t for t, _ in kills)))
    figures.note("worker_errors", worker_errors(workers))
    if verdict.conflicts:
        figures.note("different_contents_window", CONFLICT_WINDOW)
    figures.emit()

    common_asserts(verdict)
    assert_explained(windows)
    assert_no_deaths(deaths)
    assert open_at_once(order) >= 64
    assert all(m["records_by_it_before_kill"] == 0 for m in in_recovery), \
        f"a kill of the recovery branch hit a worker that was processing already: {moments}"
    assert all(r["assigned"] == list(range(PARTITIONS)) for r in went_on), \
        f"a restarted worker was not given every input partition: {lives}"
    assert all(r["restored_tables"] and r["recovered"] for r in went_on), \
        f"a restarted worker's log shows no table recovery from the changelogs: {lives}"
    assert published_early == [], f"a worker published before its recovery: {published_early}"
    assert last_member is not None and group_after == {
        last_member: set(range(PARTITIONS))}, (
        f"the group after the replay is not the last worker alone with every partition "
        f"({group_state}, last worker's member {last_member}): {group_after}")
    assert to_processing, "no restart was seen processing"
    assert sum(tracebacks(w) for w in workers) == 0, workers[-1].tail(80)


# --------------------------------------------------------------------------- 2. broker restart


#: Restarts (status 75) the broker-restart scenario allows its worker: one, for its one
#: outage. The broker is away for a few seconds (up to about 20 on a loaded machine), within
#: the worker's publish retries (60 s) and commit retries; it may stop once for a fault it
#: cannot get past in its process: the outage breaking its idempotent producer's sequence
#: (OutOfOrderSequenceNumber, toolwire.app.publishing), or the coordinator, back, answering
#: that its member is gone. The restarted worker, with a fresh producer and session, must
#: then meet a broker that is back. A session merely silent for longer than
#: TOOLWIRE_SESSION_TIMEOUT while the broker is away does not stop it: the zombie fence
#: (toolwire.app.fencing) holds its writes until the coordinator, loaded again, answers its
#: heartbeat. More would be a crash loop.
BROKER_MAX_RESTARTS = 1


@pytest.mark.timeout(300 + BROKER_RESPONSES * 0.3)
def test_broker_restart_mid_replay(tmp_path: Path) -> None:
    """The broker goes away and comes back on the same address; the worker is not touched."""
    rng = random.Random(SEED + 2)
    state_dir = tmp_path / "broker"
    info = local.start(state_dir, heap="512m")
    workers: list[Worker] = []
    deaths: list[str] = []
    supervised: Supervised | None = None
    producer: Producer | None = None
    watcher: Watcher | None = None
    try:
        dep = TunedDeployment(info.bootstrap, tmp_path / "dep", partitions=PARTITIONS)
        asyncio.run(dep.create_topics())
        plans = corpus_responses(BROKER_RESPONSES, prefix="b", partitions=PARTITIONS, rng=rng)
        order = windowed(plans, OPEN, rng)
        producer = Producer(info.bootstrap, dep.chunks,
                            paced(order, max(12.0, BROKER_RESPONSES * 0.08)))
        watcher = Watcher(info.bootstrap, [dep.assembled, dep.deadletter], PARTITIONS)
        supervised = Supervised(dep, "w", BROKER_MAX_RESTARTS,
                                reason="one broker outage: at most one fault it cannot "
                                       "get past in its process")
        supervised.worker.wait_ready()
        producer.start()
        assert watcher.wait_for(lambda seen: len(seen) >= len(plans) // 3, timeout=120), \
            "the replay did not get a third of the way"
        check_running(supervisors=[supervised], when="before the broker stop")
        stopped_at = time.time()
        before = stop_local_broker(state_dir)
        gone_at = time.time()
        time.sleep(2.0)  # the broker stays away for a moment
        again, how = start_local_broker_again(state_dir, before)
        ready_at = time.time()
        first = watcher.first_after(ready_at, timeout=180)
        check_running(supervisors=[supervised], when="after the broker came back")
        producer.finish(timeout=240 + BROKER_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + BROKER_RESPONSES * 0.15)
        check_running(supervisors=[supervised], when="after the replay")
        supervised.close()
        workers = supervised.workers
        alive = supervised.alive
        seen = watcher.seen()
        # The broker's stop and start: events of every process then running (a publish
        # retried across the outage may land twice); a restart by the supervisor: an
        # event of the process that exited only.
        events = sorted([Event(stopped_at, "broker stop"), Event(ready_at, "broker start"),
                         *supervised.events])
    finally:
        if producer is not None:
            producer.abort()
        if supervised is not None:
            supervised.close()
            workers = supervised.workers
        deaths = stop_all(workers)
        if watcher is not None:
            watcher.close()
        local.stop(state_dir)

    verdict = verify(seen, plans, dep.output_topics)
    procs = processes(workers, dep.chunks)
    windows = attribute(verdict.duplicates, events, processes=procs,
                        partitions=verdict.partitions)
    during = [s for s in seen if stopped_at <= s.created < ready_at]
    figures = Figures("broker_restart")
    figures.report("responses", len(plans))
    figures.report("records_before_the_stop", sum(1 for s in seen if s.created < stopped_at))
    common_figures(figures, verdict, windows, deaths)
    figures.equal("worker_survived", "yes" if alive else "no", "yes")
    figures.equal("same_ports", "yes" if (again.broker_port, again.controller_port)
                  == (before.broker_port, before.controller_port) else "no", "yes")
    figures.report("broker_down_s", ready_at - stopped_at, "s")
    figures.report("broker_stop_s (SIGTERM -> exited)", gone_at - stopped_at, "s")
    figures.report("broker_start_s (launch -> answering)", ready_at - gone_at - 2.0, "s")
    figures.report("records_written_while_down", len(during))
    figures.report("recovery_s (broker ready -> first record decided after it)",
                   float("nan") if first is None else first.created - ready_at, "s")
    assert supervised is not None
    budget = supervised.budget
    figures.at_most("worker_restarts (status 75, by the supervisor)",
                    len(budget.taken) + len(budget.refused), BROKER_MAX_RESTARTS)
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.report("fence_holds (writes held until the coordinator answered)",
                   sum(fence_holds(w) for w in workers))
    figures.note("restart", how)
    assert producer is not None
    figures.note("lost", lost_details(verdict, plans, producer, stopped_at, ready_at))
    figures.note("events", [(round(t - stopped_at, 3), label) for t, label in events])
    figures.note("restarts", budget.describe())
    figures.note("duplicates", windows[:40])
    figures.note("different_contents", copies_of(verdict.conflicts, events, processes=procs,
                                                 partitions=verdict.partitions)[:20])
    figures.note("worker_errors", worker_errors(workers))
    figures.emit()

    common_asserts(verdict)
    assert_explained(windows)
    assert_no_deaths(deaths)
    assert supervised.failure is None, supervised.failure
    assert alive, f"the worker died with the broker:\n{workers[-1].tail(60)}"
    assert first is not None, "the worker never published again after the broker came back"
    assert sum(tracebacks(w) for w in workers) == 0, workers[-1].tail(80)


# --------------------------------------------------------------------------- 3. rebalance


#: The two workers of the rebalance test, by the tag each is started (and restarted) with.
REBALANCE_WORKERS = ("a", "b")


def rebalance_victim(cycle: int) -> str:
    """The worker SIGKILLed in ``cycle`` (from 0): b, then a, in turn, so that the CI's two
    kills kill each once (whether the victim led the group, computing the assignment, is
    noted per cycle)."""
    return "b" if cycle % 2 == 0 else "a"


def leads_group(worker: Worker) -> bool:
    """Whether the worker's log says it was elected leader at its last join."""
    text = worker.log.read_text(errors="replace")
    return text.rfind("Elected group leader") > text.rfind("(Re-)joining group")


#: Restarts (status 75) the rebalance scenario allows all its supervisors together: one per
#: kill cycle. A cycle has two table recoveries (the survivor's take-over, then both
#: workers' when the killed one is back); the watchdog stops a worker whose recovery stays
#: stalled (faust-streaming #176, #629: about one rebalance test in eight on a loaded
#: machine, see toolwire.app.watchdog), and the rebalance its restart causes cleared the
#: stall every time. More than one a cycle would be a recovery that a restart does not
#: clear: a crash loop.
REBALANCE_MAX_RESTARTS = REBALANCE_KILLS


def takeover_check(bootstrap: str, group: str, topic: str, survivor: Worker,
                   owned: set[int], killed_at: float) -> dict[str, Any]:
    """What the product did once a worker was killed: the group's description (alone) has
    one member, the survivor's (by the member id its log gives), and it owns the killed
    worker's partitions; the survivor's log shows the assignment that gave them to it and
    the recovery of their tables that followed."""
    alone_s, alone = spread(bootstrap, group, topic, 1, PARTITIONS, 60)
    wait_recovered(survivor, topic, timeout=60)
    member = member_id(survivor)
    given = [r for r in recoveries(survivor, topic) if r.at >= killed_at and owned <= r.partitions]
    return {"alone_s": alone_s, "survivor": survivor.label, "survivor_member": member,
            "survivor_alone": {m[-8:]: sorted(p) for m, p in alone.items()}
            if alone_s is not None else None,
            "took_over_per_group": alone_s is not None and member is not None
            and list(alone) == [member] and owned <= alone[member],
            "took_over_per_its_log": bool(given),
            "recovered_them": any(r.recovered for r in given)}


def comeback_check(bootstrap: str, group: str, topic: str, restarted: Worker,
                   survivor: Worker) -> dict[str, Any]:
    """What the product did once the killed worker was started again: the group's
    description has both members, the restarted one's (by its log's member id) owning
    partitions, the very partitions its log says it was assigned, and it restored their
    tables and resumed its input."""
    back_s, after = spread(bootstrap, group, topic, 2, PARTITIONS, 120)
    wait_recovered(restarted, topic, timeout=90)
    member, other = member_id(restarted), member_id(survivor)
    found = recoveries(restarted, topic)
    last = found[-1] if found else None
    return {"back_s": back_s, "restarted": restarted.label, "restarted_member": member,
            "after_restart": {m[-8:]: sorted(p) for m, p in after.items()},
            "restarted_owns_per_group": sorted(after.get(member or "", ())),
            "restarted_owns_per_its_log": None if last is None else sorted(last.partitions),
            "both_members_per_group": back_s is not None and set(after) == {member, other},
            "restarted_recovered": last is not None and last.recovered}


@pytest.mark.timeout(300 + REBALANCE_RESPONSES * 0.3 + REBALANCE_KILLS * 40)
@pytest.mark.parametrize("standby", [None, 1], ids=["standby-unset", "standby-1"])
def test_rebalance_takeover(kafka_bootstrap: str, tmp_path: Path, standby: int | None) -> None:
    """Two workers; ``REBALANCE_KILLS`` times (2; full 3), one of them (each in turn:
    :func:`rebalance_victim`) is SIGKILLed, the other takes over, and the killed one is
    started again. Each worker runs under its supervisor (:class:`Supervised`), as in
    production: a worker whose table recovery stays stalled (faust-streaming #176, #629; see
    ``toolwire.app.watchdog``) stops with status 75 and is started again, and its restart's
    rebalance starts the recovery again (a restart explains a duplicate of the process that
    restarted, as a kill does), within :data:`REBALANCE_MAX_RESTARTS` for the scenario."""
    rng = random.Random(SEED + 3)
    extra = {} if standby is None else {"TOOLWIRE_STANDBY_REPLICAS": str(standby)}
    dep = TunedDeployment(kafka_bootstrap, tmp_path, partitions=PARTITIONS, extra_env=extra)
    asyncio.run(dep.create_topics())
    plans = corpus_responses(REBALANCE_RESPONSES, prefix="r", partitions=PARTITIONS, rng=rng)
    # Probes: responses sent right after a kill to the killed worker's partitions, so a
    # take-over is seen however far the paced traffic has got by then.
    spare = corpus_responses(REBALANCE_KILLS * PARTITIONS * 8, prefix="p",
                             partitions=PARTITIONS, rng=rng)
    partition = {p.request: p.partition for p in plans + spare}
    order = windowed(plans, OPEN, rng)
    # Traffic lasts well past each kill (the first comes once a quarter is seen), so a
    # loaded machine cannot finish it before the killed worker's partitions move.
    producer = Producer(kafka_bootstrap, dep.chunks, paced(
        order, max(60.0, REBALANCE_RESPONSES * 0.1, REBALANCE_KILLS * 24.0)))
    watcher = Watcher(kafka_bootstrap, [dep.assembled, dep.deadletter], PARTITIONS)
    budget = RestartBudget(REBALANCE_MAX_RESTARTS, "one stalled recovery per kill cycle")
    supervisors: list[Supervised] = []
    cycles: list[dict[str, Any]] = []
    kills: list[Event] = []
    takeovers: list[float] = []
    spreads: list[float] = []
    deaths: list[str] = []
    try:
        live = {name: Supervised(dep, name, budget=budget) for name in REBALANCE_WORKERS}
        supervisors += live.values()
        for supervised in live.values():
            supervised.worker.wait_ready()
        settled_s, before = spread(kafka_bootstrap, dep.name, dep.chunks, 2, PARTITIONS, 90)
        assert settled_s is not None, f"the two workers never shared the partitions: {before}"
        producer.start()
        assert watcher.wait_for(lambda seen: len(seen) >= len(plans) // 4, timeout=120)
        for cycle in range(REBALANCE_KILLS):
            if cycle:  # some work between two kills
                since = time.time()
                watcher.first_after(since, timeout=60)
                time.sleep(rng.uniform(1.0, 3.0))
            name = rebalance_victim(cycle)
            other = next(n for n in REBALANCE_WORKERS if n != name)
            # Both workers (and every earlier one) running, or ended as the test expects.
            check_running(supervisors=supervisors, when=f"before kill {cycle + 1}")
            victim = live[name].worker
            leader = leads_group(victim)
            owned = log_assignment(victim.log, dep.chunks) or set()
            victim_member = member_id(victim)
            _, assigned = group_assignment(kafka_bootstrap, dep.name, dep.chunks)
            killed_at = time.time()
            live[name].kill()  # the test starts it again, not its supervisor
            kills.append(Event.kill(killed_at, f"kill {cycle + 1}", victim))
            probes = [next(p for p in spare if p.partition == owned_partition)
                      for owned_partition in sorted(owned)]
            spare = [p for p in spare if p not in probes]
            probing = Producer(kafka_bootstrap, dep.chunks,
                               [(0.0, m) for p in probes for m in p.messages])
            probing.start()
            probing.finish(timeout=60)
            plans += probes

            def from_victim(s: Seen, owned: set[int] = owned) -> bool:
                return partition.get(s.request_id or "") in owned

            takeover = watcher.first_after(killed_at, from_victim, timeout=120)
            survivor = live[other].worker
            taken = takeover_check(kafka_bootstrap, dep.name, dep.chunks, survivor, owned,
                                   killed_at)
            check_running(supervisors=supervisors, when=f"after kill {cycle + 1}")
            live[name] = Supervised(dep, f"{name}{cycle + 1}", budget=budget)
            supervisors.append(live[name])
            back = comeback_check(kafka_bootstrap, dep.name, dep.chunks, live[name].worker,
                                  live[other].worker)
            if takeover is not None:
                takeovers.append(takeover.created - killed_at)
            if back["back_s"] is not None:
                spreads.append(back["back_s"])
            cycles.append({
                "kill": cycle + 1, "victim": name, "killed_worker": victim.label,
                "killed_process": victim.name, "victim_led_the_group": leader,
                "owned": sorted(owned),
                # The victim's log and the broker agree on what it owned (by member id).
                "owned_matches_group": victim_member is not None
                and assigned.get(victim_member) == owned,
                "takeover_s": None if takeover is None
                else round(takeover.created - killed_at, 3),
                "takeover_record": None if takeover is None
                else (takeover.topic, takeover.partition, takeover.offset),
                "survivor_process": survivor.name, **taken, **back,
                "spread_back_s": None if back["back_s"] is None else round(back["back_s"], 3)})
        producer.finish(timeout=240 + REBALANCE_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + REBALANCE_RESPONSES * 0.15)
        check_running(supervisors=supervisors, when="after the replay")
        alive = all(s.alive for s in live.values())
    finally:
        producer.abort()
        for supervised in supervisors:
            supervised.close()
        workers = [w for s in supervisors for w in s.workers]
        deaths = stop_all(workers)
        watcher.close()

    seen = watcher.seen()
    verdict = verify(seen, plans, dep.output_topics)
    procs = processes(workers, dep.chunks)
    # Only the SIGKILLs and the supervisors' restarts, each of its own process: the restart
    # of a killed worker moves partitions back to it in a clean rebalance, which must not
    # publish anything twice (so tests.reliability.rebalances are not counted here).
    restarts = [e for s in supervisors for e in s.events]
    events = sorted([*kills, *restarts])
    windows = attribute(verdict.duplicates, events, processes=procs,
                        partitions=verdict.partitions)
    # The take-over record of each cycle, tied to its publisher: the survivor.
    by_offset = {(s.topic, s.partition, s.offset): s for s in seen}
    for c in cycles:
        record = by_offset.get(c["takeover_record"]) if c["takeover_record"] else None
        c["takeover_published_by"] = None if record is None else tie(
            record, procs, verdict.partitions.get(record.request_id or "")).worker
    label = "unset" if standby is None else str(standby)
    figures = Figures(f"rebalance_standby_{label}")
    figures.report("responses", len(plans))
    figures.report("session_timeout_s", float(dep.env()["TOOLWIRE_SESSION_TIMEOUT"]), "s")
    figures.report("standby_replicas", label)
    figures.report("sigkills", len(kills))
    figures.at_most("worker_restarts (status 75, by the supervisor)",
                    len(budget.taken) + len(budget.refused), REBALANCE_MAX_RESTARTS)
    common_figures(figures, verdict, windows, deaths)
    figures.report("takeover_max_s (kill -> first record of a killed worker's partition)",
                   max(takeovers, default=float("nan")), "s")
    figures.report("takeover_median_s", median(takeovers), "s")
    victims = Counter(c["victim"] for c in cycles)
    figures.report("kills_per_worker", ",".join(f"{n}x{victims[n]}" for n in sorted(victims)))
    figures.equal("takeovers_seen", len(takeovers), len(kills))
    figures.equal("takeover_records_published_by_the_survivor",
                  sum(1 for c in cycles if c["takeover_published_by"] == c["survivor_process"]),
                  len(kills))
    figures.equal("killed_partitions_owned_by_the_survivor_per_group",
                  sum(1 for c in cycles if c["took_over_per_group"]), len(kills))
    figures.equal("survivor_recovered_the_killed_partitions_per_its_log",
                  sum(1 for c in cycles if c["took_over_per_its_log"] and c["recovered_them"]),
                  len(kills))
    figures.equal("restarted_worker_owns_what_its_log_says_per_group",
                  sum(1 for c in cycles if c["restarted_owns_per_group"]
                      and c["restarted_owns_per_group"] == c["restarted_owns_per_its_log"]),
                  len(kills))
    figures.equal("restarted_worker_recovered_per_its_log",
                  sum(1 for c in cycles if c["restarted_recovered"]), len(kills))
    figures.equal("spread_back_after_restart",
                  "yes" if all(c["both_members_per_group"] for c in cycles) else "no", "yes")
    figures.report("spread_back_max_s (restart -> both members own partitions)",
                   max(spreads, default=float("nan")), "s")
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.report("fence_holds (writes held until the coordinator answered)",
                   sum(fence_holds(w) for w in workers))
    figures.note("assignment_before", {m[-8:]: sorted(p) for m, p in before.items()})
    figures.note("cycles", cycles)
    figures.note("restarts", budget.describe())
    figures.note("duplicates", windows[:40])
    figures.note("events", [(round(t - events[0][0], 3), label) for t, label in events])
    figures.note("different_contents", copies_of(verdict.conflicts, events, processes=procs,
                                                 partitions=verdict.partitions)[:20])
    figures.note("lost", lost_details(verdict, plans, producer, *(t for t, _ in events)))
    figures.note("worker_errors", worker_errors(workers))
    figures.emit()

    common_asserts(verdict)
    assert_explained(windows)
    assert_no_deaths(deaths)
    assert not budget.exceeded, budget.describe()
    assert all(c["owned"] and c["owned_matches_group"] for c in cycles), \
        f"a killed worker's log disagrees with the group: {cycles}"
    assert len(takeovers) == len(kills), f"no record of a killed worker's partitions: {cycles}"
    assert all(c["takeover_published_by"] == c["survivor_process"] for c in cycles), \
        f"a take-over record was not published by the survivor: {cycles}"
    assert all(c["took_over_per_group"] for c in cycles), \
        f"the group never showed the survivor alone with the killed worker's partitions: {cycles}"
    assert all(c["took_over_per_its_log"] and c["recovered_them"] for c in cycles), \
        f"the survivor's log shows no assignment and recovery of the killed partitions: {cycles}"
    assert all(c["both_members_per_group"] for c in cycles), \
        f"the partitions did not spread back over both workers: {cycles}"
    assert all(c["restarted_owns_per_group"]
               and c["restarted_owns_per_group"] == c["restarted_owns_per_its_log"]
               for c in cycles), \
        f"the restarted worker's log disagrees with the group, or it owns nothing: {cycles}"
    assert all(c["restarted_recovered"] for c in cycles), \
        f"a restarted worker's log shows no recovery after its assignment: {cycles}"
    assert alive, "a worker died"
    assert sum(tracebacks(w) for w in workers) == 0


# --------------------------------------------------------------------------- 4. poison


#: Valid responses per second in both phases of the poison test.
VALID_RATE = 20.0
#: Every poison message goes to this partition (a session named ``poison`` would).
POISON_PARTITION = partition_of(b"poison", PARTITIONS)
#: The poison test's stream TTL is one phase plus this: a hostile request's messages are
#: spread over its whole phase, and the requests that never end must be swept in the test.
POISON_TTL_MARGIN = 10.0
#: The goal of the poison test: p99 latency with poison at most this times p99 without.
POISON_P99_RATIO = 2.0


@dataclass(frozen=True)
class Poison:
    """The hostile traffic of one round: its requests, each with the records it must end as
    (:class:`tests.hostile.Outcome`), and their messages in the order they are sent."""

    requests: list[Request]
    sends: list[Send]

    def prompt(self) -> set[str | bytes]:
        """What identifies each record that comes without waiting for the stream TTL (every
        one but those of the requests that never end)."""
        return {identity(o) for r in self.requests if not r.kind.startswith("abandoned.")
                for o in r.outcomes}

    def every(self) -> set[str | bytes]:
        return {identity(o) for r in self.requests for o in r.outcomes}


def identity(outcome: Outcome) -> str | bytes:
    """What identifies an expected record: its request id, or the raw value of a malformed
    message without one (as :class:`tests.app.test_hostile_broker.Ledger` matches them)."""
    found = outcome.request_id if outcome.request_id is not None else outcome.raw
    assert found is not None, outcome
    return found


def poison_messages(budget: int, seed: int, partition: int, *, prefix: str = "p",
                    abandon: bool = True) -> Poison:
    """Everything :mod:`tests.hostile` generates (the whole catalogue, then random kinds up to
    ``budget`` messages; with ``abandon``, the requests that never end too), plus single Kafka
    messages as large as the worker's limits allow (``max_response_bytes`` of
    :data:`tests.hostile.LIMITS`): one SSE line of that size, one of random bytes, and one a
    byte over the limit; all of it on ``partition``, request ids starting with ``prefix``.
    Every request keeps the key the generator gave it (its own session, so that a quarantine
    of one holds no other, or the key that is the attack: none, empty, not UTF-8, too long,
    at the limit), so its records are the ones :mod:`tests.hostile` expects. (An input
    message at the *broker's* size limit has its own test:
    :func:`test_an_input_message_at_the_broker_limit_keeps_the_worker_up`.)
    """
    gen = Generator(seed, prefix=prefix, abandon=abandon)
    requests = gen.hostile(budget)
    order = interleave(gen.rng, requests)
    limit = LIMITS.max_response_bytes
    line = b'data: {"choices":[{"delta":{"content":"'
    tail = b'"}}]}\n\n'
    huge = [line + b"x" * (limit - len(line) - len(tail)) + tail, gen.rng.randbytes(limit),
            line + b"y" * (limit + 1 - len(line) - len(tail)) + tail]
    for n, value in enumerate(huge):
        request_id = f"{prefix}huge-{n}"
        session = f"s.{request_id}"
        message = Message(session.encode(), value, ((H_REQUEST_ID, request_id.encode()),
                                                    (H_CHUNK_SEQ, b"0"), (H_END, b"eof")))
        outcome = gen.body_outcome(request_id, session, [value],
                                   {"oversize", "malformed_chunk", "stream_closed"},
                                   provider=None, model=None)
        request = gen.request("huge_message", session, [message], outcome)
        requests.append(request)
        order.insert(gen.rng.randrange(len(order)), (request, message))
    return Poison(requests, [Send(m.key, m.value, m.headers, partition) for _, m in order])


def answered(seen: list[Seen]) -> set[str | bytes]:
    """What identifies each record seen (as :meth:`Poison.prompt`)."""
    out: set[str | bytes] = set()
    for s in seen:
        record = s.record or {}
        if record.get("request_id"):
            out.add(str(record["request_id"]))
            continue
        raw = record.get("raw_chunks") or []
        if record.get("reason") == "malformed_message" and len(raw) == 1:
            out.add(base64.b64decode(raw[0]["value_b64"]))
    return out


def round_done(valid: set[str], poison: set[str | bytes], worker: Worker,
               seen: list[Seen]) -> bool:
    """Whether every ``valid`` response has its record and every ``poison`` one (as
    :func:`answered` names them) too; or the worker is gone (nothing more will come)."""
    return ((valid <= {s.request_id for s in seen} and poison <= answered(seen))
            or worker.process.poll() is not None)


def latencies(seen: list[Seen], plans: list[Planned], sent: dict[str, float], *,
              written: bool = False) -> list[float]:
    """Per response: its last chunk's send → its record's read (the first copy); with
    ``written``, → the record's Kafka timestamp instead (when the worker wrote it: the
    same without the last hop to the test's reader)."""
    read: dict[str, float] = {}
    for s in seen:
        request = s.request_id
        if request is not None and request not in read:
            read[request] = s.created if written else s.received
    return [read[p.request] - sent[p.request] for p in plans
            if p.request in read and p.request in sent]


def slowest(seen: list[Seen], plans: list[Planned], producer: Producer | None,
            count: int = 3) -> list[str]:
    """The ``count`` slowest responses of a phase: when their end was sent (from the phase's
    start) and their latency."""
    if producer is None:
        return []
    read: dict[str, float] = {}
    for s in seen:
        if s.request_id is not None:
            read.setdefault(s.request_id, s.received)
    timed = sorted((read[p.request] - sent, sent - producer.started_at)
                   for p in plans if p.request in read
                   and (sent := producer.end_sent.get(p.request)) is not None)
    return [f"{at:.2f}: {latency:.3f}" for latency, at in timed[-count:]]


@dataclass
class PoisonRound:
    """One round of the poison test: a phase of valid traffic alone, then one with poison."""

    clean: list[Planned]
    mixed: list[Planned]
    poison: Poison
    schedule_clean: list[tuple[float, Send]]
    #: The valid traffic of the phase with poison, and the poison: two clients (two
    #: gateways), so that a valid message never waits behind a large poison message in the
    #: test's own producer — only in the worker, which is what is measured.
    schedule_mixed: list[tuple[float, Send]]
    schedule_poison: list[tuple[float, Send]]
    without: Producer | None = None
    with_poison: Producer | None = None
    poisoner: Producer | None = None


def p99_ratio(base: list[float], load: list[float]) -> float:
    if not base or not load:
        return float("nan")
    return percentile(load, 99) / percentile(base, 99)


@pytest.mark.timeout(300 + POISON_ROUNDS * (POISON_VALID * 0.5 + POISON_MESSAGES * 0.05))
def test_poison_isolation(kafka_bootstrap: str, tmp_path: Path) -> None:
    rng = random.Random(SEED + 4)
    seconds = max(10.0, POISON_VALID / VALID_RATE)
    ttl = seconds + POISON_TTL_MARGIN
    dep = TunedDeployment(kafka_bootstrap, tmp_path, partitions=PARTITIONS, ttl=ttl,
                          sweep_interval=1.0, extra_env=worker_env())
    asyncio.run(dep.create_topics())
    rounds: list[PoisonRound] = []
    for r in range(POISON_ROUNDS):
        clean = corpus_responses(POISON_VALID, prefix=f"a{r}.", partitions=PARTITIONS,
                                 rng=rng, limits=LIMITS)
        mixed = corpus_responses(POISON_VALID, prefix=f"m{r}.", partitions=PARTITIONS,
                                 rng=rng, limits=LIMITS)
        # The requests that never end in the first round only: they are swept one TTL
        # after their last chunk, while the next rounds run (or at the end, with one round).
        poison = poison_messages(POISON_MESSAGES, SEED + r, POISON_PARTITION,
                                 prefix=f"p{r}.", abandon=r == 0)
        rounds.append(PoisonRound(clean, mixed, poison, paced(windowed(clean, 16, rng), seconds),
                                  paced(windowed(mixed, 16, rng), seconds),
                                  paced(poison.sends, seconds)))
    warmup = corpus_responses(int(3 * VALID_RATE), prefix="w.", partitions=PARTITIONS,
                              rng=rng, limits=LIMITS)
    every: set[str | bytes] = set().union(*(rnd.poison.every() for rnd in rounds))
    watcher = Watcher(kafka_bootstrap, [dep.assembled, dep.deadletter], PARTITIONS)
    worker = Worker(dep, "w")
    try:
        worker.wait_ready()
        # A fresh worker's first seconds are slower (its producer meets each partition's
        # leader, its first changelog writes): warm it up with valid traffic, not measured.
        warm = Producer(kafka_bootstrap, dep.chunks, paced(windowed(warmup, 16, rng), 3.0))
        warm.start()
        warm.finish(timeout=120)
        watcher.wait_for(partial(round_done, requests_of(warmup), set(), worker), timeout=120)
        for rnd in rounds:
            rnd.without = Producer(kafka_bootstrap, dep.chunks, rnd.schedule_clean)
            rnd.without.start()
            rnd.without.finish(timeout=seconds + 120)
            watcher.wait_for(partial(round_done, requests_of(rnd.clean), set(), worker),
                             timeout=120)
            rnd.with_poison = Producer(kafka_bootstrap, dep.chunks, rnd.schedule_mixed)
            rnd.poisoner = Producer(kafka_bootstrap, dep.chunks, rnd.schedule_poison)
            rnd.poisoner.start()
            rnd.with_poison.start()
            rnd.with_poison.finish(timeout=seconds + 180)
            rnd.poisoner.finish(timeout=seconds + 180)
            # Every record of the round but the swept ones, before the next clean phase
            # (the poison's a little longer at most: the check below names what is missing).
            watcher.wait_for(partial(round_done, requests_of(rnd.mixed), set(), worker),
                             timeout=180)
            watcher.wait_for(partial(round_done, set(), rnd.poison.prompt(), worker),
                             timeout=30)
        watcher.wait_for(partial(round_done, set(), every, worker), timeout=ttl + 30)
        time.sleep(IDLE)
        alive = worker.process.poll() is None
    finally:
        stop_all([worker])
        watcher.close()

    seen = watcher.seen()
    topics = dep.output_topics
    clean_plans = [p for rnd in rounds for p in rnd.clean]
    mixed_plans = [p for rnd in rounds for p in rnd.mixed]
    verdict_clean = verify(seen, clean_plans, topics)
    verdict_mixed = verify(seen, mixed_plans, topics)
    measured: list[tuple[list[float], list[float]]] = []
    written: list[float] = []  # the same ratios, to the worker's write of each record
    for rnd in rounds:
        assert rnd.without is not None and rnd.with_poison is not None
        measured.append((latencies(seen, rnd.clean, rnd.without.end_sent),
                         latencies(seen, rnd.mixed, rnd.with_poison.end_sent)))
        written.append(p99_ratio(
            latencies(seen, rnd.clean, rnd.without.end_sent, written=True),
            latencies(seen, rnd.mixed, rnd.with_poison.end_sent, written=True)))
    ratios = [p99_ratio(base, load) for base, load in measured]
    base_all = [x for base, _ in measured for x in base]
    load_all = [x for _, load in measured for x in load]
    # The goal on the p99 of every round's latencies together, with poison and without (the
    # phases alternate, so a slow spell of the machine falls on both): one round's p99 is its
    # third-slowest response, which a single pause of the machine decides.
    ratio = p99_ratio(base_all, load_all)

    # Every poison request: exactly the records tests.hostile expects (one each, as a rule),
    # with the contract's headers and schema; nothing else but the valid responses' records.
    poison_requests = [r for rnd in rounds for r in rnd.poison.requests]
    ledger = Ledger(poison_requests)
    valid_ids = requests_of(clean_plans) | requests_of(mixed_plans) | requests_of(warmup)
    for s in seen:
        if s.request_id not in valid_ids:
            ledger.add(Out(Sink.ASSEMBLED if s.topic == dep.assembled else Sink.DEADLETTER,
                           s.key, s.value, tuple(s.headers.items())))
    checker = Checker.load()
    by_reason = checker.ledger(ledger)
    sends = [s for rnd in rounds for s in rnd.poison.sends]

    figures = Figures("poison_isolation")
    figures.report("rounds", len(rounds))
    figures.report("valid_responses_per_phase", POISON_VALID)
    figures.report("valid_rate_per_s", VALID_RATE)
    figures.report("poison_requests", len(poison_requests))
    figures.report("poison_messages", len(sends))
    figures.report("poison_mb", sum(s.size() for s in sends) / 1e6, "MB")
    figures.report("largest_poison_message_bytes", max(s.size() for s in sends))
    figures.equal("valid_lost", len(verdict_clean.lost) + len(verdict_mixed.lost), 0)
    figures.equal("valid_wrong", len(verdict_clean.wrong) + len(verdict_mixed.wrong), 0)
    figures.equal("poison_records_missing", len(ledger.missing()), 0)
    figures.equal("poison_records_unexpected", len(ledger.unexpected), 0)
    figures.equal("poison_record_problems", len(checker.problems), 0)
    figures.report("latency_p50_without_poison_s", percentile(base_all, 50), "s")
    figures.report("latency_p99_without_poison_s", percentile(base_all, 99), "s")
    figures.report("latency_p50_with_poison_s", percentile(load_all, 50), "s")
    figures.report("latency_p99_with_poison_s", percentile(load_all, 99), "s")
    figures.report("latency_p99_per_round_without_s",
                   [round(percentile(base, 99), 3) for base, _ in measured], "s")
    figures.report("latency_p99_per_round_with_s",
                   [round(percentile(load, 99), 3) for _, load in measured], "s")
    figures.report("p99_with_over_without_per_round", [round(x, 3) for x in ratios])
    figures.report("p99_with_over_without_median_of_rounds", statistics.median(ratios))
    figures.report("p99_with_over_without_per_round (to the worker's write)",
                   [round(x, 3) for x in written])
    figures.at_most("p99_with_over_without (every round together)", ratio, POISON_P99_RATIO)
    figures.equal("worker_survived", "yes" if alive else "no", "yes")
    figures.equal("worker_tracebacks", tracebacks(worker), 0)
    figures.note("slowest_per_round (s after the phase start: latency s)", [
        {"without": slowest(seen, rnd.clean, rnd.without),
         "with": slowest(seen, rnd.mixed, rnd.with_poison)} for rnd in rounds])
    figures.note("poison_records_by_reason", dict(sorted(by_reason.items())))
    figures.note("poison_record_problems", checker.problems[:20])
    figures.note("worker_errors", worker_errors([worker]))
    figures.emit()

    for verdict in (verdict_clean, verdict_mixed):
        assert verdict.lost == [], verdict.summary()
        assert verdict.wrong == [], verdict.summary()
        assert verdict.conflicting == [], verdict.summary()
    assert alive, f"the worker died:\n{worker.tail(60)}"
    assert tracebacks(worker) == 0, worker.tail(80)
    assert checker.problems == [], "poison records not the expected ones:\n" + "\n".join(
        checker.problems[:40])
    assert [(len(base), len(load)) for base, load in measured] == [
        (len(rnd.clean), len(rnd.mixed)) for rnd in rounds]
    assert ratio <= POISON_P99_RATIO, (
        f"p99 latency with poison over p99 without: {ratio:.2f} (every round together; per "
        f"round {[round(x, 2) for x in ratios]}), goal at most {POISON_P99_RATIO:g}")


#: An input value this large is accepted by a broker with Kafka's default
#: ``message.max.bytes`` (1,048,588 bytes per batch, headers and framing included).
BROKER_LIMIT_VALUE = 1_040_000


@pytest.mark.timeout(240)
def test_an_input_message_at_the_broker_limit_keeps_the_worker_up(kafka_bootstrap: str,
                                                                  tmp_path: Path) -> None:
    """One message the broker accepts, between two sound responses, default settings.

    The worker stores every applied chunk in its chunks table; the changelog record of a
    chunk this large is over the producer's ``max_request_size`` (1,000,000 bytes), so the
    sound response after it must still come out, and the worker must stay up.
    """
    rng = random.Random(SEED + 6)
    dep = TunedDeployment(kafka_bootstrap, tmp_path, partitions=1)
    asyncio.run(dep.create_topics())
    before, after = corpus_responses(2, prefix="L", partitions=1, rng=rng)
    line = b'data: {"choices":[{"delta":{"content":"'
    value = line + b"z" * (BROKER_LIMIT_VALUE - len(line) - 8) + b'"}}]}\n\n'
    huge = Send(b"huge-session", value, ((H_REQUEST_ID, b"huge"), (H_CHUNK_SEQ, b"0"),
                                         (H_END, b"eof")), 0)
    order = [*before.messages, huge, *after.messages]
    watcher = Watcher(kafka_bootstrap, [dep.assembled, dep.deadletter], 1)
    worker = Worker(dep, "w")
    try:
        worker.wait_ready()
        producer = Producer(kafka_bootstrap, dep.chunks, paced(order, 1.0),
                            max_request_size=2_000_000)
        producer.start()
        producer.finish(timeout=60)
        watcher.wait_for(lambda seen: {before.request, after.request, "huge"}
                         <= {s.request_id for s in seen} or worker.process.poll() is not None,
                         timeout=60)
        time.sleep(2)
        alive = worker.process.poll() is None
    finally:
        stop_all([worker])
        watcher.close()
    seen = watcher.seen()
    got = {s.request_id: s for s in seen}
    crash = [line for line in worker.log.read_text(errors="replace").splitlines()
             if "Crashed reason" in line or "MessageSizeTooLarge" in line][:1]
    figures = Figures("broker_limit_message")
    figures.report("input_value_bytes", len(value))
    figures.equal("worker_survived", "yes" if alive else "no", "yes")
    figures.equal("sound_response_after_it_published", "yes" if after.request in got else "no",
                  "yes")
    figures.equal("huge_message_dead_lettered", "yes" if "huge" in got else "no", "yes")
    figures.note("worker_crash", crash)
    figures.emit()

    assert alive, f"the worker died on one {len(value):,}-byte input message: {crash}"
    assert before.request in got and after.request in got
    assert got["huge"].topic == dep.deadletter


# --------------------------------------------------------------------------- 5. replication


async def _replication(bootstrap: str, topics: list[str]
                       ) -> dict[str, tuple[int, int, str | None]]:
    """topic → (fewest replicas of a partition, partitions, min.insync.replicas)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    await admin.start()
    try:
        described = await admin.describe_topics(topics)
        configs = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics])
    finally:
        await admin.close()
    isr: dict[str, str | None] = {}
    for response in configs:
        for resource in response.to_object()["resources"]:
            entries = {e["config_names"]: e["config_value"]
                       for e in resource["config_entries"]}
            isr[resource["resource_name"]] = entries.get("min.insync.replicas")
    return {t["topic"]: (min((len(p["replicas"]) for p in t["partitions"]), default=0),
                         len(t["partitions"]), isr.get(t["topic"]))
            for t in described if t["error_code"] == 0}


def longest_pause(seen: list[Seen], since: float, seconds: float) -> float:
    """The longest time without a new output record (Kafka timestamps) from ``since`` to
    ``seconds`` later, counting from the last record before ``since``."""
    times = sorted(s.created for s in seen)
    before = [t for t in times if t < since]
    window = [t for t in times if since <= t <= since + seconds]
    points = before[-1:] + window
    return max((b - a for a, b in itertools.pairwise(points)), default=float("nan"))


async def _coordinator(bootstrap: str, group: str) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        node: int = await admin.find_coordinator(group)
        return node
    finally:
        await admin.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(tmp_path / "cluster", size=3, heap="256m") as started:
        yield started


#: Restarts (status 75) the replication scenario allows its worker: one. One node of three
#: crashes, the group's coordinator; leaders move within the publish retries, but the crash
#: can break the idempotent producer's sequence of a batch in flight (OutOfOrderSequenceNumber,
#: seen on this cluster: toolwire.app.fixes, fix 1; toolwire.app.publishing), or leave the
#: group session unanswered for the session timeout, which stops the worker once; its restart
#: meets two live nodes of three, enough for min.insync.replicas=2.
CLUSTER_MAX_RESTARTS = 1


@pytest.mark.timeout(300 + CLUSTER_RESPONSES * 0.3)
def test_replication_survives_a_broker_crash(cluster: Cluster, tmp_path: Path) -> None:
    rng = random.Random(SEED + 5)
    dep = TunedDeployment(cluster.bootstrap, tmp_path / "dep", partitions=PARTITIONS,
                          extra_env={"TOOLWIRE_REPLICATION_FACTOR": "3",
                                     "TOOLWIRE_MIN_INSYNC_REPLICAS": "2"})
    applied = subprocess.run([sys.executable, "-m", "toolwire.cli", "topics", "apply"],
                             env=dep.env(), capture_output=True, text=True, timeout=120,
                             check=False)
    assert applied.returncode == 0, applied.stderr
    plans = corpus_responses(CLUSTER_RESPONSES, prefix="k", partitions=PARTITIONS, rng=rng)
    order = windowed(plans, OPEN, rng)
    producer = Producer(cluster.bootstrap, dep.chunks,
                        paced(order, max(15.0, CLUSTER_RESPONSES * 0.1)))
    watcher = Watcher(cluster.bootstrap, [dep.assembled, dep.deadletter], PARTITIONS)
    supervised = Supervised(dep, "w", CLUSTER_MAX_RESTARTS,
                            reason="one node crash: at most one fault it cannot get past in "
                                   "its process")
    deaths: list[str] = []
    try:
        supervised.worker.wait_ready(timeout=120)
        producer.start()
        assert watcher.wait_for(lambda seen: len(seen) >= len(plans) // 3, timeout=120)
        check_running(supervisors=[supervised], when="before the node crash")
        victim = asyncio.run(_coordinator(cluster.bootstrap, dep.name))
        stopped_at = time.time()
        cluster.kill(victim)
        first = watcher.first_after(stopped_at, timeout=120)
        check_running(supervisors=[supervised], when="after the node crash")
        producer.finish(timeout=240 + CLUSTER_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + CLUSTER_RESPONSES * 0.2)
        check_running(supervisors=[supervised], when="after the replay")
        supervised.close()
        alive = supervised.alive
        changelogs = [f"{dep.name}-{t}-changelog" for t in ("chunks", "responses", "quarantine")]
        topics = [dep.chunks, dep.assembled, dep.deadletter, *changelogs]
        replication = asyncio.run(_replication(cluster.bootstrap, topics))
        group_state, _ = group_assignment(cluster.bootstrap, dep.name, dep.chunks)
        # The node's crash: an event of every process then running; a restart by the
        # supervisor (a status-75 exit): an event of the process that exited only.
        events = sorted([Event(stopped_at, f"broker kill (node {victim})"),
                         *supervised.events])
    finally:
        producer.abort()
        supervised.close()
        workers = supervised.workers
        deaths = stop_all(workers)
        watcher.close()

    seen = watcher.seen()
    verdict = verify(seen, plans, dep.output_topics)
    procs = processes(workers, dep.chunks)
    windows = attribute(verdict.duplicates, events, processes=procs,
                        partitions=verdict.partitions)
    figures = Figures("replication")
    figures.report("responses", len(plans))
    figures.report("brokers", len(cluster.nodes))
    figures.report("stopped_broker (group coordinator, SIGKILL)", victim)
    common_figures(figures, verdict, windows, deaths)
    figures.equal("changelog_replication_factor_min",
                  min((replication.get(t, (0, 0, None))[0] for t in changelogs), default=0), 3)
    figures.equal("topic_replication_factor_min",
                  min((replication.get(t, (0, 0, None))[0] for t in topics), default=0), 3)
    figures.equal("changelogs_min_insync_replicas",
                  ",".join(sorted({str(replication.get(t, (0, 0, None))[2])
                                   for t in changelogs})), "2")
    figures.report("longest_output_pause_after_kill_s", longest_pause(seen, stopped_at, 60),
                   "s")
    figures.report("longest_output_pause_before_kill_s",
                   longest_pause(seen, stopped_at - 10, 10), "s")
    figures.equal("worker_survived", "yes" if alive else "no", "yes")
    budget = supervised.budget
    figures.at_most("worker_restarts (status 75, by the supervisor)",
                    len(budget.taken) + len(budget.refused), CLUSTER_MAX_RESTARTS)
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.report("fence_holds (writes held until the coordinator answered)",
                   sum(fence_holds(w) for w in workers))
    figures.note("replication", {t: list(v) for t, v in replication.items()})
    figures.note("group_state_after", group_state)
    figures.note("events", [(round(t - stopped_at, 3), label) for t, label in events])
    figures.note("restarts", budget.describe())
    figures.note("duplicates", windows[:40])
    figures.note("different_contents", copies_of(verdict.conflicts, events, processes=procs,
                                                 partitions=verdict.partitions)[:20])
    figures.note("lost", lost_details(verdict, plans, producer, stopped_at))
    figures.note("worker_errors", worker_errors(workers))
    figures.emit()

    common_asserts(verdict)
    assert_explained(windows)
    assert_no_deaths(deaths)
    assert supervised.failure is None, supervised.failure
    assert set(replication) == set(topics), f"not described: {set(topics) - set(replication)}"
    assert {t: v[0] for t, v in replication.items()} == dict.fromkeys(topics, 3)
    assert {t: v[1] for t, v in replication.items()} == dict.fromkeys(topics, PARTITIONS)
    assert {t: replication[t][2] for t in changelogs} == dict.fromkeys(changelogs, "2")
    assert alive, f"the worker died:\n{workers[-1].tail(60)}"
    assert first is not None, "nothing was published after the broker crash"
    assert sum(tracebacks(w) for w in workers) == 0, workers[-1].tail(80)
