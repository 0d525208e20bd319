"""The pieces of the network-fault scenarios (``tests/net/test_faults.py``).

Why threads that enter a namespace: the test process lives in the root namespace, which
cannot reach the hosts of a :class:`~tests.net.netns.Network`. A network namespace is a
property of each *thread* (``setns(2)`` with ``CLONE_NEWNET`` moves the calling thread
only), and a socket stays in the namespace it was made in. So the reliability harness's
producer and watcher (:class:`tests.reliability.Producer`, :class:`tests.reliability.Watcher`)
run unchanged in threads that first enter the client host (:class:`HostProducer`,
:class:`HostWatcher`), and every admin call runs in such a thread too (:func:`run_in`). The
workers are processes started under ``ip netns exec`` (``prefix`` of
:class:`tests.app.support.Worker`), each in a host of its own, so that a fault can cut one
worker off and not the other, or the client host and not the workers.

:class:`Stage` is the network of a module: the three-node cluster (RF 3, min ISR 2), the
workers' hosts ``w1``/``w2``, the client host ``pub`` (publisher and watcher) and a relay host
``r``. :class:`Run` is one scenario on it: a fresh deployment (topics, app id), two
supervised workers, paced traffic of the corpora, and what the checks need afterwards.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.app.support import Worker
from tests.net.cluster import NetCluster
from tests.net.netns import Host, Network, _ip_path
from tests.reliability import (
    Event,
    Figures,
    Planned,
    Producer,
    RestartBudget,
    Seen,
    Supervised,
    TunedDeployment,
    Verdict,
    Watcher,
    attribute,
    check_running,
    copies_of,
    corpus_responses,
    paced,
    processes,
    rebalances,
    tracebacks,
    verify,
    windowed,
)

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
PARTITIONS = 4
#: The workers' session timeout here: longer than the short cut of scenario 1 (10 s),
#: shorter than its long one (90 s).
SESSION_TIMEOUT = 20
#: A record later than this after its response's end (and the fault's start) was delayed.
DELAYED = 2.0
#: Seconds a scenario keeps reading after the last expected record (a late copy is seen).
IDLE = 4.0


def enter(host: Host) -> None:
    """Move the calling thread into ``host``'s network namespace (``setns``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{host.ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {host.ns}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def run_in(host: Host, work: Callable[[], Coroutine[Any, Any, T]], timeout: float = 60.0) -> T:
    """``asyncio.run(work())`` in a thread inside ``host``: its result, or its exception."""
    out: list[T] = []
    error: list[BaseException] = []

    def main() -> None:
        try:
            enter(host)
            out.append(asyncio.run(work()))
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise AssertionError(f"{work} in {host.name} did not finish in {timeout:.0f} s")
    if error:
        raise error[0]
    return out[0]


class _InHost(threading.Thread):
    """A harness thread whose sockets live in ``host`` (set before the thread starts)."""

    host: Host

    def run(self) -> None:
        enter(self.host)
        super().run()


class HostProducer(_InHost, Producer):
    """:class:`~tests.reliability.Producer` sending from inside ``host``."""

    def __init__(self, host: Host, *args: Any, **kwargs: Any) -> None:
        self.host = host
        super().__init__(*args, **kwargs)


class HostWatcher(_InHost, Watcher):
    """:class:`~tests.reliability.Watcher` reading from inside ``host`` (it starts itself)."""

    def __init__(self, host: Host, *args: Any, **kwargs: Any) -> None:
        self.host = host
        super().__init__(*args, **kwargs)


@dataclass
class NetDeployment(TunedDeployment):
    """Topics with RF 3 and min ISR 2; the workers create their changelogs alike."""

    def env(self) -> dict[str, str]:
        env = super().env()
        env.update(TOOLWIRE_REPLICATION_FACTOR="3", TOOLWIRE_MIN_INSYNC_REPLICAS="2",
                   TOOLWIRE_SESSION_TIMEOUT=str(SESSION_TIMEOUT))
        return env

    async def create_topics(self) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=20000)
        await admin.start()
        try:
            await admin.create_topics([
                NewTopic(t, self.partitions, 3, topic_configs={"min.insync.replicas": "2"})
                for t in (self.chunks, self.assembled, self.deadletter)])
        finally:
            await admin.close()


@dataclass
class Stage:
    """The module's network and cluster (see the module docstring)."""

    net: Network
    cluster: NetCluster
    pub: Host
    workers: tuple[Host, Host]
    root: Path

    @property
    def brokers(self) -> list[Host]:
        return [self.cluster.host_of(n.node_id) for n in self.cluster.nodes]

    def prefix(self, host: Host) -> tuple[str, ...]:
        ip = _ip_path()
        assert ip is not None
        return (ip, "netns", "exec", host.ns)

    def describe(self, topics: Sequence[str]) -> dict[str, Any]:
        """The cluster's controller and each topic's partition leaders, asked from ``pub``."""
        async def ask() -> dict[str, Any]:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.cluster.bootstrap,
                                        request_timeout_ms=15000)
            await admin.start()
            try:
                cluster = await admin.describe_cluster()
                described = await admin.describe_topics(list(topics))
            finally:
                await admin.close()
            return {"controller": cluster.get("controller_id"),
                    "leaders": {t["topic"]: {p["partition"]: p["leader"]
                                             for p in t["partitions"]} for t in described}}
        return run_in(self.pub, ask)


@dataclass
class Run:
    """One scenario on the stage: a fresh deployment, two supervised workers in one group,
    paced traffic of the corpora from ``pub``, and a watcher of both output topics."""

    stage: Stage
    name: str
    responses: int
    seconds: float
    max_restarts: int
    reason: str
    seed: int = 23
    #: Which host each worker runs in (default: w1 and w2); a worker's bootstrap may be
    #: another address (the slow link's relay).
    bootstraps: tuple[str | None, str | None] = (None, None)
    dep: NetDeployment = field(init=False)
    plans: list[Planned] = field(init=False)
    supervisors: list[Supervised] = field(init=False, default_factory=list)
    producer: HostProducer | None = field(init=False, default=None)
    watcher: HostWatcher | None = field(init=False, default=None)
    events: list[Event] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        stage = self.stage
        self.dep = NetDeployment(stage.cluster.bootstrap, stage.root / self.name,
                                 partitions=PARTITIONS)
        run_in(stage.pub, self.dep.create_topics)
        rng = random.Random(self.seed)
        self.plans = corpus_responses(self.responses, prefix=f"{self.name}-",
                                      partitions=PARTITIONS, rng=rng)
        self.order = paced(windowed(self.plans, 16, rng), self.seconds)

    def start(self, ready_timeout: float = 120.0) -> None:
        """Workers (ready), the watcher, then the traffic."""
        self.start_workers(ready_timeout)
        self.watch()
        self.producer = HostProducer(self.stage.pub, self.stage.cluster.bootstrap,
                                     self.dep.chunks, self.order, request_timeout_ms=60_000)
        self.producer.start()

    def watch(self) -> None:
        """The watcher of both output topics, in ``pub``."""
        self.watcher = HostWatcher(self.stage.pub, self.stage.cluster.bootstrap,
                                   [self.dep.assembled, self.dep.deadletter], PARTITIONS)

    def start_workers(self, ready_timeout: float = 120.0) -> None:
        """The two supervised workers, each in its host, both ready."""
        stage = self.stage
        budget = RestartBudget(self.max_restarts, self.reason)
        for tag, host, bootstrap in zip(("a", "b"), stage.workers, self.bootstraps,
                                        strict=True):
            dep = self.dep
            if bootstrap is not None:
                dep = NetDeployment(bootstrap, self.dep.state_dir, partitions=PARTITIONS,
                                    name=self.dep.name)
            self.supervisors.append(Supervised(dep, tag, budget=budget,
                                               prefix=stage.prefix(host)))
        for supervised in self.supervisors:
            supervised.worker.wait_ready(ready_timeout)

    def mark(self, label: str, worker: Worker | None = None) -> float:
        """A fault's moment, as an event (of ``worker``'s process, or of the cluster)."""
        at = time.time()
        self.events.append(Event(at, label, worker=None if worker is None else worker.name,
                                 kind="fault"))
        return at

    def seen(self) -> list[Seen]:
        assert self.watcher is not None
        return self.watcher.seen()

    def records_after(self, since: float, timeout: float) -> Seen | None:
        """The first record written at or after ``since`` (waiting up to ``timeout``)."""
        assert self.watcher is not None
        return self.watcher.first_after(since, timeout=timeout)

    def wait_share(self, share: float, timeout: float = 120.0) -> None:
        assert self.watcher is not None
        want = int(len(self.plans) * share)
        assert self.watcher.wait_for(lambda seen: len({s.request_id for s in seen}) >= want,
                                     timeout), f"{self.name}: not {share:.0%} of the records"

    def check(self, when: str) -> None:
        check_running(supervisors=self.supervisors, when=f"{self.name}: {when}")

    def finish(self, timeout: float) -> None:
        """The whole schedule acknowledged, every response's record there (or ``timeout``)."""
        assert self.watcher is not None
        if self.producer is not None:
            self.producer.finish(timeout)
        self.watcher.wait_requests({p.request for p in self.plans}, timeout)
        time.sleep(IDLE)

    def close(self) -> list[str]:
        """Stop everything by pid; the workers that exited by themselves (deaths)."""
        if self.producer is not None:
            self.producer.abort()
        deaths: list[str] = []
        for supervised in self.supervisors:
            supervised.close()
            for worker in supervised.workers:
                code = worker.exited_by_itself()
                if code is not None:
                    deaths.append(f"{worker.label} exited {code}:\n{worker.tail(30)}")
                worker.stop(expect_exited=True)
        if self.watcher is not None:
            self.watcher.close()
        return deaths

    @property
    def workers(self) -> list[Worker]:
        return [w for s in self.supervisors for w in s.workers]

    def verdict(self) -> tuple[Verdict, list[dict[str, Any]], list[Event]]:
        """What came out against the plans; each duplicate tied to its publisher and to the
        event between its copies that explains it (a fault of its process, a rebalance that
        moved its partition, a restart, a cluster fault it lived through)."""
        verdict = verify(self.seen(), self.plans, self.dep.output_topics)
        procs = processes(self.workers, self.dep.chunks)
        events = sorted([*self.events, *rebalances(procs),
                         *(e for s in self.supervisors for e in s.events)])
        windows = attribute(verdict.duplicates, events, processes=procs,
                            partitions=verdict.partitions)
        self.conflicts = copies_of(verdict.conflicts, events, processes=procs,
                                   partitions=verdict.partitions)
        return verdict, windows, events

    def delayed(self, start: float, heal: float) -> list[Seen]:
        """The first copy of each response the fault held up: its end was sent before
        ``heal``, and its record came more than :data:`DELAYED` seconds after both the end
        and the fault's ``start`` (a record decided by the other worker meanwhile, or after
        the heal)."""
        if self.producer is None:
            return []
        firsts: dict[str, Seen] = {}
        for s in sorted(self.seen(), key=lambda s: s.created):
            if s.request_id is not None:
                firsts.setdefault(s.request_id, s)
        return [s for r, s in firsts.items()
                if (sent := self.producer.end_sent.get(r)) is not None
                and sent < heal and s.created >= max(start, sent) + DELAYED]

    def restarts(self) -> int:
        return sum(s.restarts for s in self.supervisors)

    def report(self, figures: Figures, verdict: Verdict, windows: list[dict[str, Any]],
               deaths: list[str], heals: Sequence[tuple[str, float, float]]) -> None:
        """The scenario's figures: per fault (label, start, heal) the seconds from the heal to
        the first record and to the last delayed one, and the responses delayed; then
        restarts, losses, wrong records and unexplained duplicates."""
        for label, start, heal in heals:
            first = self.records_after(heal, 0.0)
            delayed = self.delayed(start, heal)
            figures.report(f"{label}: heal -> first record",
                           float("nan") if first is None else first.created - heal, "s")
            # A delayed response is decided either before the heal (by the other worker, once
            # the group had moved the partitions) or after it: counted apart, so that the
            # seconds to the last one are measured from the heal only over those after it
            # (NaN when every delayed response was decided before the heal).
            after = [s.created - heal for s in delayed if s.created >= heal]
            figures.report(f"{label}: heal -> last delayed record",
                           max(after, default=float("nan")), "s")
            figures.report(f"{label}: responses delayed", len(delayed))
            figures.report(f"{label}: responses delayed, decided before the heal",
                           len(delayed) - len(after))
        figures.report("responses", len(self.plans))
        figures.equal("responses_lost", len(verdict.lost), 0)
        figures.equal("records_wrong", len(verdict.wrong), 0)
        figures.equal("idempotency_keys_with_different_content", len(verdict.conflicting), 0)
        figures.report("identical_duplicates", verdict.duplicate_count)
        figures.equal("duplicates_without_an_event_between_copies",
                      sum(1 for w in windows if w["event"] is None), 0)
        figures.at_most("worker_restarts (status 75)", self.restarts(), self.max_restarts)
        figures.equal("workers_exited_by_themselves", len(deaths), 0)
        figures.report("worker_tracebacks", sum(tracebacks(w) for w in self.workers))
        figures.note("restarts", [s.budget.describe() for s in self.supervisors[:1]])
        figures.note("duplicates", windows[:20])
        figures.note("different_contents", self.conflicts[:10])
        figures.note("lost", verdict.lost[:20])
        figures.note("logs", [str(w.log) for w in self.workers])


def assert_sound(run: Run, verdict: Verdict, windows: list[dict[str, Any]],
                 deaths: list[str]) -> None:
    """What every scenario asserts (the reliability tests' assertions)."""
    assert verdict.lost == [], f"{run.name}: responses lost: {verdict.summary()}"
    assert verdict.wrong == [], f"{run.name}: records differ from assemble(): " \
                                f"{verdict.summary()} {run.conflicts[:3]}"
    assert verdict.conflicting == [], f"{run.name}: different copies: {run.conflicts[:3]}"
    assert verdict.stray == 0 and verdict.bad_keys == [], verdict.summary()
    unexplained = [w for w in windows if w["event"] is None]
    assert unexplained == [], f"{run.name}: duplicates with no event between: {unexplained[:3]}"
    assert deaths == [], f"{run.name}: workers exited by themselves:\n" + "\n".join(deaths)
    failures = [s.failure for s in run.supervisors if s.failure is not None]
    assert failures == [], f"{run.name}: a crash loop: {failures}"


def wait_live(run: Run, bound: float, when: str) -> float:
    """Until every supervised worker runs and is ready (its log's ready line after its
    last start), within ``bound`` seconds; how long it took."""
    t0 = time.monotonic()
    deadline = t0 + bound
    while True:
        run.check(when)
        pending = [s for s in run.supervisors if not s.alive or not _ready(s.worker)]
        if not pending:
            return time.monotonic() - t0
        if time.monotonic() > deadline:
            raise AssertionError(f"{run.name}: {[s.worker.label for s in pending]} not live and "
                                 f"ready {bound:.0f} s {when}:\n{pending[0].worker.tail(40)}")
        time.sleep(0.5)


def _ready(worker: Worker) -> bool:
    """Whether the worker's log (one per process) says it is ready."""
    from tests.app.support import READY_LINE

    return READY_LINE in worker.log.read_text(errors="replace")
