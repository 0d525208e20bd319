"""Real network faults under the pipeline (issue 23): a three-node cluster (RF 3, min ISR 2),
two supervised workers in one group, each in a namespace of its own, and interleaved traffic
of the corpora from a client host, while routes and links fail (:mod:`tests.net.faults`).

Each scenario asserts what the reliability tests assert: every response's record at least
once and every copy equal to ``toolwire assemble``'s, 0 lost, no duplicate without an event
between its copies (a fault of its publisher's process, a rebalance that moved its
partition, a restart, a cluster fault that process lived through), no crash loop (restarts
within a stated budget), and every worker live and ready again within a stated bound. Each
prints its figures (``FIGURES {json}``): per fault, seconds from the heal to the first
record and to the last delayed one, the responses delayed, and the restarts.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.app.support import topic_records, writers
from tests.net.cluster import NetCluster
from tests.net.faults import SESSION_TIMEOUT, Run, Stage, assert_sound, run_in, wait_live
from tests.net.netns import Network
from tests.reliability import Figures, Seen, percentile
from toolwire.publish import COMPLETED, ChunkPublisher, RequestMeta
from toolwire.stream.messages import H_DECLARED_TOOLS, H_PROVIDER

pytestmark = [pytest.mark.netns, pytest.mark.broker]

#: The worker's tables (``toolwire.app.service``), whose changelogs the zombie check reads.
TABLES = ("chunks", "responses", "quarantine")

#: Seconds every worker must be live and ready again after a heal (a session timeout for
#: the group to settle, a restart's start and table recovery).
LIVE_BOUND = 120.0


@pytest.fixture(scope="module")
def stage(netns_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stage]:
    root = tmp_path_factory.mktemp("netfaults")
    with Network() as net:
        pub = net.host("pub")
        workers = (net.host("w1"), net.host("w2"))
        relay = net.host("r")
        with NetCluster(net, root / "cluster", client=pub, relay=relay) as cluster:
            yield Stage(net, cluster, pub, workers, root)


def finish(run: Run, figures: Figures, heals: list[tuple[str, float, float]],
           timeout: float = 300.0,
           after: Callable[[Figures], None] | None = None) -> None:
    """The end of every scenario: live again, everything out, stopped, checked, reported."""
    deaths: list[str] = []
    try:
        figures.report("live_and_ready_after_the_heal",
                       wait_live(run, LIVE_BOUND, "after the last heal"), "s")
        run.finish(timeout)
        run.check("after the traffic")
    finally:
        deaths = run.close()
    verdict, windows, _ = run.verdict()
    run.report(figures, verdict, windows, deaths, heals)
    if after is not None:
        after(figures)
    figures.emit()
    assert_sound(run, verdict, windows, deaths)


def zombie_records(run: Run, worker: str, since: float) -> list[Seen]:
    return [s for s in run.seen() if s.worker == worker and s.created >= since]


@pytest.mark.timeout(600)
def test_a_worker_partitioned_from_every_broker_shorter_then_longer_than_its_session(
        stage: Stage) -> None:
    """10 s (within the session timeout: the group keeps it) then 90 s (the group moves its
    partitions to the other worker). After the long cut, the zombie publishes nothing it
    could have written after its generation ended: it holds its writes from the end of its
    session and exits 75 when the coordinator answers that it is gone
    (:mod:`toolwire.app.fencing`)."""
    run = Run(stage, "zombie", responses=180, seconds=150, max_restarts=2,
              reason="the zombie: one exit when the coordinator answers that it is gone")
    net, figures = stage.net, Figures("net_worker_partition")
    heals: list[tuple[str, float, float]] = []
    try:
        run.start()
        run.wait_share(0.1)
        host, zombie = stage.workers[0], run.supervisors[0].worker
        start = run.mark("w1 cut off 10 s", zombie)
        net.partition(host)
        time.sleep(10)
        net.heal_all()
        heals.append(("short cut (10 s)", start, run.mark("w1 healed")))
        time.sleep(15)
        run.check("after the short cut")
        short_restarts = run.restarts()
        zombie = run.supervisors[0].worker
        start = run.mark("w1 cut off 90 s", zombie)
        net.partition(host)
        time.sleep(90)
        net.heal_all()
        heals.append(("long cut (90 s)", start, run.mark("w1 healed")))
        figures.equal("restarts after the short cut", short_restarts, 0)
    finally:
        net.heal_all()

    def zombie_figures(figures: Figures) -> None:
        # The changelogs, read after every worker stopped: a record's writer is its
        # toolwire-worker header, its time the producer's timestamp.
        bound = start + SESSION_TIMEOUT
        for table in TABLES:
            topic = f"{run.dep.name}-{table}-changelog"
            records = run_in(stage.pub, lambda topic=topic: topic_records(
                stage.cluster.bootstrap, topic))
            by = writers(records)
            figures.report(f"changelog {table}: records by writer",
                           {str(k): v for k, v in by.items()})
            figures.equal(f"changelog {table}: records without a writer", by[None], 0)
            late_writes.extend(m for m in records if m.timestamp / 1000 >= bound and any(
                k == "toolwire-worker" and v.decode() == zombie.name for k, v in m.headers))
        figures.equal("zombie changelog writes after its session could have ended",
                      len(late_writes), 0)
        log = zombie.log.read_text(errors="replace")
        figures.report("zombie: held its writes", "fence: no heartbeat of group" in log)
        figures.report("zombie: fenced (exit 75 when told it is gone)",
                       "the group session ended" in log)
        figures.report("zombie: rejoined in its process", log.count("[^Worker]: Ready") > 1)
        figures.report("zombie: ended", zombie.ended or "running")
        figures.equal("zombie records after its session could have ended", len(late), 0)

    late: list[Seen] = []
    late_writes: list[Any] = []
    finish(run, figures, heals, after=lambda f: (
        late.extend(zombie_records(run, zombie.name, start + SESSION_TIMEOUT)),
        zombie_figures(f)))
    assert late == [], f"the zombie published after its session ended: {late[:3]}"
    assert late_writes == [], \
        f"the zombie wrote changelog records after its session ended: {late_writes[:3]}"


@pytest.mark.timeout(600)
def test_one_broker_isolated_leading_most_outputs_then_as_the_controller(stage: Stage) -> None:
    """60 s each: first the broker that leads most partitions of the output topics, then
    the active KRaft controller, cut off from the other two and from every client."""
    run = Run(stage, "broker", responses=180, seconds=170, max_restarts=4,
              reason="a worker whose coordinator was the isolated broker holds its writes; "
                     "when aiokafka's coordinator lookup goes to the isolated broker too, it "
                     "waits out its request timeout, finds the new coordinator after that one "
                     "expired it, and exits 75 once told: once per worker per isolation")
    net, figures = stage.net, Figures("net_broker_isolated")
    heals: list[tuple[str, float, float]] = []
    try:
        run.start()
        run.wait_share(0.1)
        described = stage.describe([run.dep.assembled, run.dep.deadletter])
        leaders = Counter(leader for parts in described["leaders"].values()
                          for leader in parts.values())
        leader = leaders.most_common(1)[0][0]
        figures.report("output partitions the first isolated broker led",
                       f"{leaders[leader]} of {sum(leaders.values())}")
        start = run.mark(f"broker {leader} (leader of most outputs) isolated")
        net.partition(stage.cluster.host_of(leader))
        time.sleep(60)
        net.heal_all()
        heals.append((f"leader {leader} isolated 60 s", start, run.mark("healed")))
        time.sleep(10)
        run.check("after the leader's isolation")
        controller = stage.describe([run.dep.assembled])["controller"]
        figures.report("isolated controller", controller)
        start = run.mark(f"broker {controller} (the active controller) isolated")
        net.partition(stage.cluster.host_of(controller))
        time.sleep(60)
        net.heal_all()
        heals.append((f"controller {controller} isolated 60 s", start, run.mark("healed")))
    finally:
        net.heal_all()
    finish(run, figures, heals)


@pytest.mark.timeout(420)
def test_a_one_way_partition_answers_never_reach_the_worker(stage: Stage) -> None:
    """The worker's requests reach every broker, the answers vanish (half-open: no reset,
    no ack) for 40 s, longer than the session timeout."""
    run = Run(stage, "oneway", responses=120, seconds=80, max_restarts=2,
              reason="the half-open worker: its next heartbeat waits for the lost answer "
                     "to the last one, its coordinator expires it, it exits once told so")
    net, figures = stage.net, Figures("net_one_way")
    heals: list[tuple[str, float, float]] = []
    try:
        run.start()
        run.wait_share(0.1)
        host = stage.workers[0]
        start = run.mark("answers to w1 cut", run.supervisors[0].worker)
        for broker in stage.brokers:
            net.blackhole(broker, host, one_way=True)
        time.sleep(40)
        net.heal_all()
        heals.append(("one-way 40 s", start, run.mark("healed")))
    finally:
        net.heal_all()
    finish(run, figures, heals)


@pytest.mark.timeout(480)
def test_a_flapping_link_between_one_worker_and_the_cluster(stage: Stage) -> None:
    """20 cuts of 2 s each over two minutes."""
    run = Run(stage, "flap", responses=160, seconds=130, max_restarts=2,
              reason="cuts of 2 s are within the session timeout: no restart is needed")
    net, figures = stage.net, Figures("net_flapping")
    first = 0.0
    try:
        run.start()
        run.wait_share(0.05)
        host = stage.workers[0]
        first = run.mark("flapping starts", run.supervisors[0].worker)
        for _ in range(20):
            net.partition(host)
            time.sleep(2)
            net.heal_all()
            time.sleep(4)
        healed = run.mark("flapping ends")
    finally:
        net.heal_all()
    figures.report("cuts", 20)
    finish(run, figures, [("20 cuts of 2 s", first, healed)])


@pytest.mark.timeout(420)
def test_the_publisher_cut_off_mid_stream(stage: Stage) -> None:
    """The product's publisher (pushed streams, as a tap feeds them) loses the cluster for
    30 s mid-stream. Its caller never waits: no ``feed`` takes long. Every stream is then
    complete on the topic (its record equal to ``assemble``'s) or ended and counted as not
    completed, and the worker dead-letters nothing it was not sent."""
    run = Run(stage, "pubcut", responses=100, seconds=60, max_restarts=0,
              reason="no worker is touched by the fault")
    net, figures = stage.net, Figures("net_publisher_cut")
    outcomes: dict[str, str] = {}
    feeds: list[float] = []
    cut: dict[str, float] = {}

    def heal() -> None:
        net.heal_all()
        cut["healed"] = time.time()

    healer = threading.Timer(30.0, heal)
    try:
        run.start_workers()

        async def publish() -> None:
            publisher = ChunkPublisher(stage.cluster.bootstrap, run.dep.chunks,
                                       connect_timeout=60.0)
            await publisher.start()
            try:
                streams = []
                t0 = time.monotonic()
                for i, plan in enumerate(run.plans):
                    if i == len(run.plans) // 3:
                        cut["start"] = time.time()
                        net.partition(stage.pub)
                        healer.start()
                    headers = dict(plan.messages[0].headers)
                    tools = headers.get(H_DECLARED_TOOLS)
                    provider = headers.get(H_PROVIDER)
                    meta = RequestMeta(plan.request, plan.session,
                                       provider=provider.decode() if provider else None,
                                       declared_tools=None if tools is None else [
                                           t for t in tools.decode().split(",") if t])
                    stream = publisher.open_stream(meta)
                    for message in plan.messages:
                        if message.end:
                            continue
                        began = time.perf_counter()
                        stream.feed(message.value or b"")
                        feeds.append(time.perf_counter() - began)
                        await asyncio.sleep(0)
                    stream.close()
                    streams.append((plan.request, stream))
                    await asyncio.sleep(max(0.0, t0 + (i + 1) * 0.6 - time.monotonic()))
                for request, stream in streams:
                    outcomes[request] = await asyncio.wait_for(stream.done(), 180)
            finally:
                await publisher.stop()

        run_in(stage.pub, publish, timeout=400)
        completed = {r for r, o in outcomes.items() if o == COMPLETED}
        run.plans = [p for p in run.plans if p.request in completed]
        run.watch()
        assert run.watcher is not None
        run.watcher.wait_requests(completed, 180)
        time.sleep(4)
    finally:
        healer.cancel()
        net.heal_all()
    healer.join(5)
    seen = run.seen()
    others = {r for r, o in outcomes.items() if o != COMPLETED}
    foreign = [s.request_id for s in seen if s.request_id in others
               and s.topic == run.dep.assembled]
    figures.report("streams", len(outcomes))
    figures.report("stream outcomes", dict(Counter(outcomes.values())))
    figures.at_most("slowest feed() call", max(feeds) * 1000, 50, "ms")
    figures.equal("streams not completed but assembled", len(foreign), 0)
    figures.report("dead letters of streams not completed",
                   sum(1 for s in seen if s.request_id in others))
    finish(run, figures, [("publisher cut 30 s", cut["start"], cut["healed"])], timeout=60)
    assert max(feeds) < 0.05, f"a feed() took {max(feeds) * 1000:.1f} ms: the caller waited"
    assert foreign == []


#: The slow link: added each way, and the bandwidth cap each way (bytes per second).
SLOW_DELAY_MS = 50
SLOW_RATE = 1_000_000


@pytest.mark.timeout(420)
def test_a_slow_link_between_one_worker_and_the_cluster(stage: Stage) -> None:
    """Worker a reaches every broker through a relay that adds 50 ms each way and caps each
    direction at 1 MB/s (:mod:`tests.net.relay`; its brokers' second listener advertises the
    relays). Throughput and p99 are reported; nothing is lost and no timeout becomes a crash
    loop."""
    cluster, relay_host = stage.cluster, stage.cluster.relay
    assert relay_host is not None
    relays = []
    for node in cluster.nodes:
        address = stage.cluster.host_of(node.node_id).address
        proc = relay_host.module(
            "tests.net.relay", "--listen",
            f"{relay_host.address}:{cluster.relay_port(node.node_id)}",
            "--target", f"{address}:9094", "--delay-ms", str(SLOW_DELAY_MS),
            "--rate", str(SLOW_RATE), stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and "listening" in proc.stdout.readline()
        relays.append(proc)
    run = Run(stage, "slow", responses=150, seconds=60, max_restarts=0,
              reason="a slow link is no fault a worker should restart for",
              bootstraps=(cluster.relayed_bootstrap, None))
    figures = Figures("net_slow_link")
    try:
        run.start()
        started = time.time()
        assert run.producer is not None
        run.finish(240)
        done = time.time()
        _slow_figures(run, figures, started, done)
        finish(run, figures, [])  # stops the workers while their relays still run
    finally:
        run.close()
        for proc in relays:
            relay_host.stop(proc)


def _slow_figures(run: Run, figures: Figures, started: float, done: float) -> None:
    assert run.producer is not None
    slow = run.supervisors[0].worker
    firsts: dict[str, Seen] = {}
    for s in sorted(run.seen(), key=lambda s: s.created):
        if s.request_id is not None:
            firsts.setdefault(s.request_id, s)
    latency = {r: s.created - run.producer.end_sent[r] for r, s in firsts.items()
               if r in run.producer.end_sent}
    slow_latency = [latency[r] for r, s in firsts.items()
                    if r in latency and s.worker == slow.name]
    fast_latency = [latency[r] for r, s in firsts.items()
                    if r in latency and s.worker != slow.name]
    figures.report("throughput (responses / s, traffic start -> last record)",
                   len(firsts) / max(1e-9, max(s.created for s in firsts.values()) - started))
    figures.report("p99 end sent -> record, slow worker", percentile(slow_latency, 99)
                   if slow_latency else float("nan"), "s")
    figures.report("p99 end sent -> record, other worker", percentile(fast_latency, 99)
                   if fast_latency else float("nan"), "s")
    figures.report("responses decided by the slow worker", len(slow_latency))
    figures.report("run_s", done - started, "s")
    assert slow_latency, "the slow worker decided nothing: its link was not used"
