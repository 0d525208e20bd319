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
   random moments and restarted at once. Three kills in four come a random 0-4 s after the
   restarted worker published its first record (mid-processing); every fourth comes a random
   0.5-5 s after the restart, whatever it is doing (joining the group, restoring tables).
   Asserted: nothing lost, every record equal to its expected one, no idempotency key with
   two different contents, every duplicate explained by a kill between its copies.
   Duplicates have the goal 0 but are reported, not asserted: delivery is at least once and
   a kill between the broker's acknowledgement of a record and the changelog write of the
   response's done marker publishes it again (README, "How it works"); the figures name the
   kill behind each one and how long before it the first copy was published.
2. **Broker restart** (:func:`test_broker_restart_mid_replay`): a dedicated local broker
   (not the session's) is stopped by the pid in its ``broker.json`` a third into a replay
   and started again on the same ports and data dir; the worker is left to its supervisor
   (:class:`~tests.reliability.Supervised`: a worker that stops with status 75 on a publish
   fault it cannot get past is started again; any other exit is a death). Asserted: nothing
   lost or wrong, a worker is running and processes again; restarts are reported.
3. **Rebalance** (:func:`test_rebalance_takeover`, standby replicas unset and 1): two
   workers in one group on 4 partitions with ``TOOLWIRE_SESSION_TIMEOUT=6`` (Kafka's
   minimum session timeout; the tests' :class:`~tests.app.support.Deployment` sets it); a
   quarter into the replay one of them is SIGKILLed (``REBALANCE_KILLS`` times, 1; full 3,
   each worker in turn); the other takes over (take-over time: the kill to the first record
   of a partition the killed worker owned, per its log, checked against the group's
   description); the killed worker is started again and the group's description
   (``describe_consumer_groups``) shows the partitions spread over both again.
4. **Poison isolation** (:func:`test_poison_isolation`): valid responses at a steady rate,
   first alone, then with a poisoning session on one partition (every kind of
   :mod:`tests.hostile`: malformed chunks, lines, arguments, calls and responses over the
   worker's limits, deep JSON, bad headers; and single messages as large as the worker's
   ``max_response_bytes``), the worker running with :data:`tests.hostile.LIMITS`; latency is
   the last chunk's send to the record's read; goal: p99 with poison at most twice p99
   without.
5. **Replication** (:func:`test_replication_survives_a_broker_crash`): a 3-node KRaft cluster
   (:mod:`tests.cluster`, 256 MiB heap per node), topics from ``toolwire topics apply`` with
   ``TOOLWIRE_REPLICATION_FACTOR=3`` and ``TOOLWIRE_MIN_INSYNC_REPLICAS=2``, a worker with the
   same settings, under its supervisor as in 2; the node coordinating the worker's group is
   SIGKILLed mid-replay. Asserted: nothing lost or wrong; every topic, changelogs included,
   has replication factor 3 and ``min.insync.replicas=2``.

Besides: :func:`test_an_input_message_at_the_broker_limit_keeps_the_worker_up`, one input
message that a default broker accepts (about 1 MB) between two sound responses.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.app.support import Worker
from tests.cluster import Cluster
from tests.hostile import LIMITS, Generator, interleave, partition_of, worker_env
from tests.reliability import (
    OUTAGE_ERRORS,
    Figures,
    Planned,
    Producer,
    Seen,
    Send,
    Supervised,
    TunedDeployment,
    Verdict,
    Watcher,
    attribute,
    copies_of,
    corpus_responses,
    group_assignment,
    log_assignment,
    median,
    open_at_once,
    paced,
    percentile,
    quiet_clients,
    serious_errors,
    size,
    spread,
    start_local_broker_again,
    stop_local_broker,
    tracebacks,
    verify,
    windowed,
)
from toolwire.broker import local
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_REQUEST_ID

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
CLUSTER_RESPONSES = size("cluster_responses")


@pytest.fixture(autouse=True)
def _quiet_clients() -> Iterator[None]:
    with quiet_clients():
        yield


def requests_of(plans: list[Planned]) -> set[str]:
    return {p.request for p in plans}


def stop_all(workers: list[Worker]) -> None:
    """Stop (SIGTERM, by pid) every worker still running; killed ones are already gone."""
    for worker in workers:
        if worker.process.poll() is None:
            worker.stop()


def common_figures(figures: Figures, verdict: Verdict) -> None:
    figures.equal("responses_lost", len(verdict.lost), 0)
    figures.equal("records_wrong", len(verdict.wrong), 0)
    figures.equal("idempotency_keys_with_different_content", len(verdict.conflicting), 0)
    figures.equal("identical_duplicates", verdict.duplicate_count, 0)


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


def first_processing(watcher: Watcher, since: float, plans: list[Planned],
                     timeout: float = 180.0) -> Seen | None:
    """The first record written at or after ``since`` (``None`` if every response had its
    record already, or none came within ``timeout``)."""
    everything = requests_of(plans)
    watcher.wait_for(lambda seen: any(s.created >= since for s in seen)
                     or everything <= {s.request_id for s in seen}, timeout)
    return watcher.first_after(since)


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
    kills: list[tuple[float, str]] = []
    moments: list[dict[str, Any]] = []
    to_processing: list[float] = []
    try:
        worker = Worker(dep, "w0")
        workers.append(worker)
        worker.wait_ready()
        producer.start()
        started, restarted = time.time(), False
        for k in range(1, CRASH_KILLS + 1):
            if k % 4 == 0:  # a kill while it joins the group or restores its tables
                time.sleep(rng.uniform(0.5, 5.0))
                moment = "after the restart, before or during recovery"
            else:
                first = first_processing(watcher, started, plans)
                if first is not None and restarted:
                    to_processing.append(first.created - started)
                time.sleep(rng.uniform(0.0, 4.0))
                moment = "mid-processing"
            killed_at = time.time()
            worker.kill()
            kills.append((killed_at, f"kill {k}"))
            moments.append({"kill": k, "moment": moment,
                            "after_start_s": round(killed_at - started, 2),
                            "records_so_far": len(watcher.seen())})
            started, restarted = time.time(), True
            worker = Worker(dep, f"w{k}")
            workers.append(worker)
        first = first_processing(watcher, started, plans)
        if first is not None:
            to_processing.append(first.created - started)
        producer.finish(timeout=300 + CRASH_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + CRASH_RESPONSES * 0.15)
        alive = worker.process.poll() is None
    finally:
        producer.abort()
        stop_all(workers)
        watcher.close()

    verdict = verify(watcher.seen(), plans, dep.output_topics)
    windows = attribute(verdict.duplicates, kills)
    figures = Figures("crash_replay")
    figures.report("responses", len(plans))
    figures.report("input_messages", len(order))
    figures.report("partitions", PARTITIONS)
    figures.at_least("open_at_once_max", open_at_once(order), 64)
    figures.report("sigkills", len(kills))
    common_figures(figures, verdict)
    figures.equal("duplicates_without_a_kill_between_copies",
                  sum(1 for w in windows if w["event"] is None), 0)
    if windows:
        figures.report("duplicate_published_before_kill_max_s",
                       max(w["published_before_event_s"] for w in windows), "s")
    figures.report("restarts_measured", len(to_processing))
    figures.report("restart_to_first_processing_max_s",
                   max(to_processing, default=float("nan")), "s")
    figures.report("restart_to_first_processing_median_s", median(to_processing), "s")
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.note("kills", moments)
    figures.note("duplicates", windows[:40])
    figures.note("duplicate_window", DUPLICATE_WINDOW if windows else "no duplicates")
    figures.note("different_contents", copies_of(verdict.conflicts, kills)[:20])
    figures.note("lost", lost_details(verdict, plans, producer, *(t for t, _ in kills)))
    figures.note("worker_errors", worker_errors(workers))
    if verdict.conflicts:
        figures.note("different_contents_window", CONFLICT_WINDOW)
    figures.emit()

    common_asserts(verdict)
    assert [w for w in windows if w["event"] is None] == [], \
        "a response was published twice with no kill between the copies"
    assert open_at_once(order) >= 64
    assert len(kills) == CRASH_KILLS
    assert to_processing, "no restart was seen processing"
    assert alive, f"the last worker died:\n{workers[-1].tail()}"
    assert sum(tracebacks(w) for w in workers) == 0, workers[-1].tail(80)


# --------------------------------------------------------------------------- 2. broker restart


@pytest.mark.timeout(300 + BROKER_RESPONSES * 0.3)
def test_broker_restart_mid_replay(tmp_path: Path) -> None:
    """The broker goes away and comes back on the same address; the worker is not touched."""
    rng = random.Random(SEED + 2)
    state_dir = tmp_path / "broker"
    info = local.start(state_dir, heap="512m")
    workers: list[Worker] = []
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
        supervised = Supervised(dep, "w")
        supervised.worker.wait_ready()
        producer.start()
        assert watcher.wait_for(lambda seen: len(seen) >= len(plans) // 3, timeout=120), \
            "the replay did not get a third of the way"
        stopped_at = time.time()
        before = stop_local_broker(state_dir)
        gone_at = time.time()
        time.sleep(2.0)  # the broker stays away for a moment
        again, how = start_local_broker_again(state_dir, before)
        ready_at = time.time()
        first = watcher.first_after(ready_at, timeout=180)
        producer.finish(timeout=240 + BROKER_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + BROKER_RESPONSES * 0.15)
        supervised.close()
        workers = supervised.workers
        alive = supervised.alive
        seen = watcher.seen()
    finally:
        if producer is not None:
            producer.abort()
        if supervised is not None:
            supervised.close()
            workers = supervised.workers
        stop_all(workers)
        if watcher is not None:
            watcher.close()
        local.stop(state_dir)

    verdict = verify(seen, plans, dep.output_topics)
    windows = attribute(verdict.duplicates, [(stopped_at, "broker stop")])
    during = [s for s in seen if stopped_at <= s.created < ready_at]
    figures = Figures("broker_restart")
    figures.report("responses", len(plans))
    figures.report("records_before_the_stop", sum(1 for s in seen if s.created < stopped_at))
    common_figures(figures, verdict)
    figures.equal("worker_survived", "yes" if alive else "no", "yes")
    figures.equal("same_ports", "yes" if (again.broker_port, again.controller_port)
                  == (before.broker_port, before.controller_port) else "no", "yes")
    figures.report("broker_down_s", ready_at - stopped_at, "s")
    figures.report("broker_stop_s (SIGTERM -> exited)", gone_at - stopped_at, "s")
    figures.report("broker_start_s (launch -> answering)", ready_at - gone_at - 2.0, "s")
    figures.report("records_written_while_down", len(during))
    figures.report("recovery_s (broker ready -> first record decided after it)",
                   float("nan") if first is None else first.created - ready_at, "s")
    figures.report("worker_restarts (status 75, by the supervisor)", len(workers) - 1)
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.note("restart", how)
    assert producer is not None
    figures.note("lost", lost_details(verdict, plans, producer, stopped_at, ready_at))
    figures.note("duplicates", windows[:40])
    figures.note("different_contents",
                 copies_of(verdict.conflicts, [(stopped_at, "broker stop")])[:20])
    figures.note("worker_errors", worker_errors(workers))
    figures.emit()

    common_asserts(verdict)
    assert alive, f"the worker died with the broker:\n{workers[-1].tail(60)}"
    assert first is not None, "the worker never published again after the broker came back"
    assert sum(tracebacks(w) for w in workers) == 0, workers[-1].tail(80)


# --------------------------------------------------------------------------- 3. rebalance


@pytest.mark.timeout(300 + REBALANCE_RESPONSES * 0.3 + REBALANCE_KILLS * 40)
@pytest.mark.parametrize("standby", [None, 1], ids=["standby-unset", "standby-1"])
def test_rebalance_takeover(kafka_bootstrap: str, tmp_path: Path, standby: int | None) -> None:
    """Two workers; ``REBALANCE_KILLS`` times (1; full 3), one of them (each in turn) is
    SIGKILLed, the other takes over, and the killed one is started again."""
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
    workers: list[Worker] = []
    cycles: list[dict[str, Any]] = []
    kills: list[tuple[float, str]] = []
    takeovers: list[float] = []
    spreads: list[float] = []
    try:
        live = [Worker(dep, "a"), Worker(dep, "b")]
        workers += live
        for worker in live:
            worker.wait_ready()
        settled_s, before = spread(kafka_bootstrap, dep.name, dep.chunks, 2, PARTITIONS, 90)
        assert settled_s is not None, f"the two workers never shared the partitions: {before}"
        producer.start()
        assert watcher.wait_for(lambda seen: len(seen) >= len(plans) // 4, timeout=120)
        for cycle in range(REBALANCE_KILLS):
            if cycle:  # some work between two kills
                since = time.time()
                watcher.first_after(since, timeout=60)
                time.sleep(rng.uniform(1.0, 3.0))
            victim = live.pop(1 if cycle % 2 == 0 else 0)
            owned = log_assignment(victim.log, dep.chunks) or set()
            _, assigned = group_assignment(kafka_bootstrap, dep.name, dep.chunks)
            killed_at = time.time()
            victim.kill()
            kills.append((killed_at, f"kill {cycle + 1}"))
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
            alone_s, alone = spread(kafka_bootstrap, dep.name, dep.chunks, 1, PARTITIONS, 60)
            restarted = Worker(dep, f"{victim.log.stem.split('-')[0]}{cycle + 1}")
            workers.append(restarted)
            live.append(restarted)
            back_s, after = spread(kafka_bootstrap, dep.name, dep.chunks, 2, PARTITIONS, 120)
            if takeover is not None:
                takeovers.append(takeover.created - killed_at)
            if back_s is not None:
                spreads.append(back_s)
            cycles.append({
                "kill": cycle + 1, "killed_worker": victim.log.name, "owned": sorted(owned),
                "owned_matches_group": owned in assigned.values(),
                "takeover_s": None if takeover is None
                else round(takeover.created - killed_at, 3),
                "survivor_alone": {m[-8:]: sorted(p) for m, p in alone.items()}
                if alone_s is not None else None,
                "after_restart": {m[-8:]: sorted(p) for m, p in after.items()},
                "spread_back_s": None if back_s is None else round(back_s, 3)})
        producer.finish(timeout=240 + REBALANCE_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + REBALANCE_RESPONSES * 0.15)
        alive = all(w.process.poll() is None for w in live)
    finally:
        producer.abort()
        stop_all(workers)
        watcher.close()

    verdict = verify(watcher.seen(), plans, dep.output_topics)
    windows = attribute(verdict.duplicates, kills)
    label = "unset" if standby is None else str(standby)
    figures = Figures(f"rebalance_standby_{label}")
    figures.report("responses", len(plans))
    figures.report("session_timeout_s", float(dep.env()["TOOLWIRE_SESSION_TIMEOUT"]), "s")
    figures.report("standby_replicas", label)
    figures.report("sigkills", len(kills))
    common_figures(figures, verdict)
    figures.report("takeover_max_s (kill -> first record of a killed worker's partition)",
                   max(takeovers, default=float("nan")), "s")
    figures.report("takeover_median_s", median(takeovers), "s")
    figures.equal("takeovers_seen", len(takeovers), len(kills))
    figures.equal("survivor_owned_every_partition",
                  "yes" if all(c["survivor_alone"] is not None for c in cycles) else "no", "yes")
    figures.equal("spread_back_after_restart", "yes" if len(spreads) == len(kills) else "no",
                  "yes")
    figures.report("spread_back_max_s (restart -> both members own partitions)",
                   max(spreads, default=float("nan")), "s")
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.note("assignment_before", {m[-8:]: sorted(p) for m, p in before.items()})
    figures.note("cycles", cycles)
    figures.note("duplicates", windows[:40])
    figures.note("different_contents", copies_of(verdict.conflicts, kills)[:20])
    figures.note("lost", lost_details(verdict, plans, producer, *(t for t, _ in kills)))
    figures.note("worker_errors", worker_errors(workers))
    figures.emit()

    common_asserts(verdict)
    assert all(c["owned"] and c["owned_matches_group"] for c in cycles), \
        f"a killed worker's log disagrees with the group: {cycles}"
    assert len(takeovers) == len(kills), f"no record of a killed worker's partitions: {cycles}"
    assert all(c["survivor_alone"] is not None for c in cycles), \
        f"the survivor never owned every partition: {cycles}"
    assert len(spreads) == len(kills), f"the partitions did not spread back: {cycles}"
    assert alive, "a worker died"
    assert sum(tracebacks(w) for w in workers) == 0


# --------------------------------------------------------------------------- 4. poison


#: Valid responses per second in both phases of the poison test.
VALID_RATE = 10.0
#: The poisoning session: every poison message goes to its partition.
POISON_SESSION = b"poison"


def poison_messages(budget: int, seed: int, partition: int) -> list[Send]:
    """Everything :mod:`tests.hostile` generates (the whole catalogue, then random kinds up to
    ``budget`` messages), plus single Kafka messages as large as the worker's limits allow
    (``max_response_bytes`` of :data:`tests.hostile.LIMITS`): one SSE line of that size, one
    of random bytes, and one a byte over the limit. Messages keyed with an ordinary session
    are re-keyed to the poisoning session; the keys that are the attack (none, empty, not
    UTF-8, too long, at the limit) are kept. (An input message at the *broker's* size limit
    has its own test: :func:`test_an_input_message_at_the_broker_limit_keeps_the_worker_up`.)
    """
    gen = Generator(seed, prefix="p")
    requests = gen.hostile(budget)
    out = [Send(POISON_SESSION if m.key is not None and m.key.startswith(b"s.p") else m.key,
                m.value, m.headers, partition) for _, m in interleave(gen.rng, requests)]
    limit = LIMITS.max_response_bytes
    line = b'data: {"choices":[{"delta":{"content":"'
    tail = b'"}}]}\n\n'
    huge = [line + b"x" * (limit - len(line) - len(tail)) + tail, gen.rng.randbytes(limit),
            line + b"y" * (limit + 1 - len(line) - len(tail)) + tail]
    for n, value in enumerate(huge):
        request = f"p-huge-{n}".encode()
        out.insert(gen.rng.randrange(len(out)), Send(
            POISON_SESSION, value, ((H_REQUEST_ID, request), (H_CHUNK_SEQ, b"0"),
                                    (H_END, b"eof")), partition))
    return out


def latencies(seen: list[Seen], plans: list[Planned], sent: dict[str, float]) -> list[float]:
    """Per response: its last chunk's send → its record's read (the first copy)."""
    read: dict[str, float] = {}
    for s in seen:
        request = s.request_id
        if request is not None and request not in read:
            read[request] = s.received
    return [read[p.request] - sent[p.request] for p in plans
            if p.request in read and p.request in sent]


@pytest.mark.timeout(300 + POISON_VALID * 0.5 + POISON_MESSAGES * 0.05)
def test_poison_isolation(kafka_bootstrap: str, tmp_path: Path) -> None:
    rng = random.Random(SEED + 4)
    dep = TunedDeployment(kafka_bootstrap, tmp_path, partitions=PARTITIONS,
                          extra_env=worker_env())
    asyncio.run(dep.create_topics())
    seconds = max(10.0, POISON_VALID / VALID_RATE)
    clean = corpus_responses(POISON_VALID, prefix="a", partitions=PARTITIONS, rng=rng,
                             limits=LIMITS)
    mixed = corpus_responses(POISON_VALID, prefix="m", partitions=PARTITIONS, rng=rng,
                             limits=LIMITS)
    poison = poison_messages(POISON_MESSAGES, SEED, partition_of(POISON_SESSION, PARTITIONS))
    schedule_clean = paced(windowed(clean, 16, rng), seconds)
    schedule_mixed = sorted([*paced(windowed(mixed, 16, rng), seconds),
                             *paced(poison, seconds)], key=lambda item: item[0])
    watcher = Watcher(kafka_bootstrap, [dep.assembled, dep.deadletter], PARTITIONS)
    worker = Worker(dep, "w")
    try:
        worker.wait_ready()
        without = Producer(kafka_bootstrap, dep.chunks, schedule_clean)
        without.start()
        without.finish(timeout=seconds + 120)
        watcher.wait_requests(requests_of(clean), timeout=120)
        with_poison = Producer(kafka_bootstrap, dep.chunks, schedule_mixed)
        with_poison.start()
        with_poison.finish(timeout=seconds + 180)
        wait_all(watcher, mixed, timeout=180)
        alive = worker.process.poll() is None
    finally:
        stop_all([worker])
        watcher.close()

    seen = watcher.seen()
    topics = dep.output_topics
    verdict_clean = verify(seen, clean, topics)
    verdict_mixed = verify(seen, mixed, topics)
    base = latencies(seen, clean, without.end_sent)
    load = latencies(seen, mixed, with_poison.end_sent)
    p99_base, p99_load = percentile(base, 99), percentile(load, 99)
    figures = Figures("poison_isolation")
    figures.report("valid_responses_per_phase", len(clean))
    figures.report("valid_rate_per_s", VALID_RATE)
    figures.report("poison_messages", len(poison))
    figures.report("poison_mb", sum(s.size() for s in poison) / 1e6, "MB")
    figures.report("largest_poison_message_bytes", max(s.size() for s in poison))
    figures.equal("valid_lost", len(verdict_clean.lost) + len(verdict_mixed.lost), 0)
    figures.equal("valid_wrong", len(verdict_clean.wrong) + len(verdict_mixed.wrong), 0)
    figures.report("latency_p50_without_poison_s", percentile(base, 50), "s")
    figures.report("latency_p99_without_poison_s", p99_base, "s")
    figures.report("latency_p50_with_poison_s", percentile(load, 50), "s")
    figures.report("latency_p99_with_poison_s", p99_load, "s")
    figures.at_most("p99_with_over_without", p99_load / p99_base if base and load
                    else float("nan"), 2.0)
    figures.equal("worker_survived", "yes" if alive else "no", "yes")
    figures.equal("worker_tracebacks", tracebacks(worker), 0)
    figures.note("worker_errors", worker_errors([worker]))
    figures.emit()

    for verdict in (verdict_clean, verdict_mixed):
        assert verdict.lost == [], verdict.summary()
        assert verdict.wrong == [], verdict.summary()
        assert verdict.conflicting == [], verdict.summary()
    assert alive, f"the worker died:\n{worker.tail(60)}"
    assert tracebacks(worker) == 0, worker.tail(80)
    assert len(base) == len(clean) and len(load) == len(mixed)


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
    supervised = Supervised(dep, "w")
    try:
        supervised.worker.wait_ready(timeout=120)
        producer.start()
        assert watcher.wait_for(lambda seen: len(seen) >= len(plans) // 3, timeout=120)
        victim = asyncio.run(_coordinator(cluster.bootstrap, dep.name))
        stopped_at = time.time()
        cluster.kill(victim)
        first = watcher.first_after(stopped_at, timeout=120)
        producer.finish(timeout=240 + CLUSTER_RESPONSES * 0.2)
        wait_all(watcher, plans, timeout=120 + CLUSTER_RESPONSES * 0.2)
        supervised.close()
        alive = supervised.alive
        changelogs = [f"{dep.name}-{t}-changelog" for t in ("chunks", "responses", "quarantine")]
        topics = [dep.chunks, dep.assembled, dep.deadletter, *changelogs]
        replication = asyncio.run(_replication(cluster.bootstrap, topics))
        group_state, _ = group_assignment(cluster.bootstrap, dep.name, dep.chunks)
    finally:
        producer.abort()
        supervised.close()
        workers = supervised.workers
        stop_all(workers)
        watcher.close()

    seen = watcher.seen()
    verdict = verify(seen, plans, dep.output_topics)
    figures = Figures("replication")
    figures.report("responses", len(plans))
    figures.report("brokers", len(cluster.nodes))
    figures.report("stopped_broker (group coordinator, SIGKILL)", victim)
    common_figures(figures, verdict)
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
    figures.report("worker_restarts (status 75, by the supervisor)", len(workers) - 1)
    figures.equal("worker_tracebacks", sum(tracebacks(w) for w in workers), 0)
    figures.note("replication", {t: list(v) for t, v in replication.items()})
    figures.note("group_state_after", group_state)
    figures.note("duplicates", attribute(verdict.duplicates, [(stopped_at, "broker kill")]))
    figures.note("different_contents",
                 copies_of(verdict.conflicts, [(stopped_at, "broker kill")])[:20])
    figures.note("lost", lost_details(verdict, plans, producer, stopped_at))
    figures.note("worker_errors", worker_errors(workers))
    figures.emit()

    common_asserts(verdict)
    assert set(replication) == set(topics), f"not described: {set(topics) - set(replication)}"
    assert {t: v[0] for t, v in replication.items()} == dict.fromkeys(topics, 3)
    assert {t: v[1] for t, v in replication.items()} == dict.fromkeys(topics, PARTITIONS)
    assert {t: replication[t][2] for t in changelogs} == dict.fromkeys(changelogs, "2")
    assert alive, f"the worker died:\n{workers[-1].tail(60)}"
    assert first is not None, "nothing was published after the broker crash"
    assert sum(tracebacks(w) for w in workers) == 0, workers[-1].tail(80)
