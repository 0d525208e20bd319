"""Publish faults on the real broker: a refused record still ends its response, and a worker
never sits alive and idle.

* A dead-letter topic whose ``max.message.bytes`` is lowered under a running worker refuses a
  6 KB dead letter: the worker learns the limit, publishes the dead letter cut to fit, and goes
  on; the responses after it are assembled once.
* Faults injected into the producer (``tests/app/faulty_worker.py``: a leader change, a broken
  idempotent sequence, a request timeout that outlasts the retries) with this test as the
  process supervisor: the first is retried in place, the other two stop the worker with
  status 75 and a line naming the cause, and the restarted worker decides the response again.
  Every response comes out once, equal to ``toolwire assemble``; the metrics and the health
  endpoints say what happened.
* A publish that never returns: ``/healthz`` reports the worker not live once input waits for
  longer than ``TOOLWIRE_STALL_TIMEOUT``, and a restart (what a liveness probe leads to)
  decides the response.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.app.support import (
    Deployment,
    WithMetrics,
    Worker,
    collect,
    produce,
    request_chunks,
)
from tests.app.test_pipeline_broker import comparable
from tests.core.sse import body, call, chunk
from toolwire.app.publishing import EXIT_FAULT
from toolwire.core import Options, assemble

pytestmark = pytest.mark.broker

GOOD = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
            chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
#: 6 KB of content, then a call to a tool the request did not declare: an unknown_tool dead
#: letter larger than the dead-letter topic's 3,000-byte limit.
UNDECLARED = body(chunk(content="x" * 6000),
                  chunk(call(0, "call_9", "delete_everything", "{}"), finish="tool_calls"))


@dataclass
class Tuned(WithMetrics):
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {**super().env(), **self.extra_env}


def records_of(dep: Deployment, requests: set[str], until: int,
               timeout: float = 120.0) -> dict[str, list[dict[str, Any]]]:
    """Every record of ``requests`` on both output topics once ``until`` of them are there
    (and a few idle seconds more, so that a late duplicate is seen too)."""
    deadline = time.monotonic() + timeout
    while True:
        got = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter],
                                  idle=0.5, timeout=3))
        mine = [r for r in got if r.get("request_id") in requests]
        if len(mine) >= until or time.monotonic() > deadline:
            break
    got = asyncio.run(collect(dep.bootstrap, [dep.assembled, dep.deadletter],
                              until=len(got), idle=3))
    by_request: dict[str, list[dict[str, Any]]] = {}
    for r in got:
        if r.get("request_id") in requests:
            by_request.setdefault(r["request_id"], []).append(r)
    return by_request


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def metric(port: int, name: str, **labels: str) -> float:
    """A sample of the worker's /metrics (0 when absent)."""
    _, text = get(port, "/metrics")
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        if sample == (f"{name}{{{want}}}" if labels else name):
            return float(value)
    return 0.0


def wait_exit(worker: Worker, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while worker.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    code = worker.process.poll()
    assert code is not None, f"the worker did not stop in {timeout} s:\n{worker.tail()}"
    worker.stop(expect_exited=True)  # closes its log; its exit is what the caller waited for
    return code


async def _set_max_message_bytes(bootstrap: str, topic: str, value: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                  {"max.message.bytes": str(value)})])
        for _ in range(50):  # until the broker reports it
            [described] = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": None})])
            entries = described.to_object()["resources"][0]["config_entries"]
            if any(e["config_value"] == str(value) for e in entries):
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"max.message.bytes of {topic} is not {value}")
    finally:
        await admin.close()


def test_a_dead_letter_the_topic_refuses_is_published_cut_to_fit(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Deployment(kafka_bootstrap, tmp_path, partitions=1)
    asyncio.run(dep.create_topics())
    worker = Worker(dep)
    try:
        worker.wait_ready()
        # Lowered under the running worker, which read the topic's limit when it started:
        # its first dead letter is refused by the broker.
        asyncio.run(_set_max_message_bytes(kafka_bootstrap, dep.deadletter, 3000))
        chunks = [*request_chunks("big-s", "big-r", [UNDECLARED[:4000], UNDECLARED[4000:]],
                                  tools=("get_weather",)),
                  *request_chunks("ok-s1", "ok-r1", [GOOD]),
                  *request_chunks("ok-s2", "ok-r2", [GOOD])]
        asyncio.run(produce(kafka_bootstrap, dep.chunks, chunks))
        got = records_of(dep, {"big-r", "ok-r1", "ok-r2"}, until=3)
        assert {r: len(v) for r, v in got.items()} == {"big-r": 1, "ok-r1": 1, "ok-r2": 1}
        [letter] = got["big-r"]
        assert letter["reason"] == "unknown_tool"
        assert letter["raw_chunks_truncated"] is True
        value = {k: v for k, v in letter.items() if not k.startswith("_")}
        assert len(orjson.dumps(value)) <= 3000
        assert [r["outcome"] for r in got["ok-r1"] + got["ok-r2"]] == ["assembled"] * 2
        log = worker.log.read_text(errors="replace")
        assert "refused as too large" in log, worker.tail()
        assert worker.process.poll() is None, "the worker stopped"
    finally:
        worker.stop()


def test_publish_faults_are_retried_or_restart_the_worker_and_lose_nothing(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Tuned(kafka_bootstrap, tmp_path, partitions=1,
                extra_env={"TOOLWIRE_PUBLISH_RETRY_TIMEOUT": "3"})
    asyncio.run(dep.create_topics())
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([
        {"at": 2, "error": "NotLeaderForPartitionError"},   # retried in place
        {"at": 5, "error": "OutOfOrderSequenceNumber"},     # fatal: exit, restart
        {"at": 8, "error": "KafkaTimeoutError", "times": "process"},  # outlasts the retries
    ]))
    launcher = ("-m", "tests.app.faulty_worker", str(plan))
    expected = {f"f-r{i}": assemble(GOOD, Options()) for i in range(1, 7)}

    def send(*numbers: int) -> None:
        asyncio.run(produce(kafka_bootstrap, dep.chunks, [
            c for n in numbers for c in request_chunks(f"f-s{n}", f"f-r{n}", [GOOD])]))

    exits: list[int] = []
    recovery: list[float] = []
    worker = Worker(dep, launcher=launcher)
    try:
        worker.wait_ready()
        send(1, 2, 3)  # attempts 1, 2 (NotLeader), 3 (its retry), 4
        got = records_of(dep, {"f-r1", "f-r2", "f-r3"}, until=3)
        assert sorted(got) == ["f-r1", "f-r2", "f-r3"]
        port = dep.metrics_port
        assert metric(port, "toolwire_publish_retries_total",
                      error="NotLeaderForPartitionError") == 1
        assert get(port, "/healthz")[0] == 200 and get(port, "/readyz")[0] == 200

        faulted = time.monotonic()
        send(4, 5)  # attempt 5: OutOfOrderSequenceNumber on f-r4
        exits.append(wait_exit(worker))
        log = worker.log.read_text(errors="replace")
        assert "fatal: publish failed with OutOfOrderSequenceNumber" in log, worker.tail()
        worker = Worker(dep, launcher=launcher)  # the supervisor restarts it
        worker.wait_ready()
        got = records_of(dep, {"f-r4", "f-r5"}, until=2)
        recovery.append(time.monotonic() - faulted)
        assert sorted(got) == ["f-r4", "f-r5"]

        faulted = time.monotonic()
        send(6)  # attempt 8 and every later one of this process: KafkaTimeoutError
        seen_retries = 0.0
        while worker.process.poll() is None and time.monotonic() - faulted < 30:
            seen_retries = max(seen_retries, metric(port, "toolwire_publish_retries_total",
                                                    error="KafkaTimeoutError"))
            time.sleep(0.2)
        exits.append(wait_exit(worker))
        log = worker.log.read_text(errors="replace")
        assert "after 3 s of retries" in log, worker.tail()
        assert seen_retries >= 1, "the retries were not counted in /metrics"
        worker = Worker(dep, launcher=launcher)
        worker.wait_ready()
        got = records_of(dep, {"f-r6"}, until=1)
        recovery.append(time.monotonic() - faulted)

        everything = records_of(dep, set(expected), until=len(expected))
        counts = {r: len(v) for r, v in everything.items()}
        assert counts == dict.fromkeys(expected, 1), "a response was lost or duplicated"
        for request, records in everything.items():
            assert comparable(records[0]) == comparable(
                {k: v for k, v in expected[request].items()}), request
        assert exits == [EXIT_FAULT, EXIT_FAULT]
        assert get(port, "/healthz")[0] == 200
        faults = [json.loads(line)["error"] for line in
                  (tmp_path / "plan.json.log").read_text().splitlines()]
        assert faults[:2] == ["NotLeaderForPartitionError", "OutOfOrderSequenceNumber"]
        assert set(faults[2:]) == {"KafkaTimeoutError"} and len(faults) >= 4
        print(f"\npublish faults: {len(faults)} injected, worker restarts {len(exits)} "
              f"(status {EXIT_FAULT}), recovery {recovery[0]:.1f} s and {recovery[1]:.1f} s "
              f"from the fault to the delayed responses' records, responses delayed 2 + 1, "
              f"lost 0, duplicated 0")
    finally:
        worker.stop()


CRASH_BOUND = 30.0


def test_a_crashed_faust_service_exits_75_and_the_restart_loses_nothing(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Seen under a network partition (issue 23): the producer buffer's task failed with
    ``UnknownTopicOrPartitionError``, mode logged "We experienced a crash!", and the worker
    then sat alive and idle, exiting neither 75 nor at all. A crash of any Faust service is a
    fault the process cannot get past: the worker must exit 75 within a bound, naming the
    crash, and the restarted worker must decide the pending responses."""
    dep = Tuned(kafka_bootstrap, tmp_path, partitions=1)
    asyncio.run(dep.create_topics())
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"at": 2, "error": "service_crash"}]))
    launcher = ("-m", "tests.app.faulty_worker", str(plan))
    expected = {f"c-r{i}": assemble(GOOD, Options()) for i in range(1, 4)}

    def send(*numbers: int) -> None:
        asyncio.run(produce(kafka_bootstrap, dep.chunks, [
            c for n in numbers for c in request_chunks(f"c-s{n}", f"c-r{n}", [GOOD])]))

    worker = Worker(dep, launcher=launcher)
    try:
        worker.wait_ready()
        send(1)
        assert sorted(records_of(dep, {"c-r1"}, until=1)) == ["c-r1"]
        crashed = time.monotonic()
        send(2)  # its decided record: the crash
        code = wait_exit(worker, timeout=CRASH_BOUND + 30)
        exited = time.monotonic() - crashed
        log = worker.log.read_text(errors="replace")
        assert code == EXIT_FAULT, f"status {code}, not {EXIT_FAULT}:\n{worker.tail()}"
        assert exited <= CRASH_BOUND, f"exited {exited:.1f} s after the crash"
        assert "a Faust service crashed" in log and "UnknownTopicOrPartitionError" in log, (
            worker.tail())
        worker = Worker(dep, launcher=launcher)  # the supervisor restarts it
        worker.wait_ready()
        send(3)
        everything = records_of(dep, set(expected), until=len(expected))
        assert sorted(everything) == sorted(expected), "a response was lost"
        for request, records in everything.items():
            for record in records:
                assert comparable(record) == comparable(expected[request]), request
        print(f"\nservice crash: exit {code} {exited:.1f} s after the crash; "
              f"{sum(map(len, everything.values()))} records for {len(expected)} responses")
    finally:
        worker.stop()


def test_a_worker_whose_publish_never_returns_is_reported_not_live(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Tuned(kafka_bootstrap, tmp_path, partitions=1,
                extra_env={"TOOLWIRE_STALL_TIMEOUT": "3"})
    asyncio.run(dep.create_topics())
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"at": 1, "error": "hang"}]))
    launcher = ("-m", "tests.app.faulty_worker", str(plan))
    worker = Worker(dep, launcher=launcher)
    try:
        worker.wait_ready()
        assert get(dep.metrics_port, "/healthz")[0] == 200
        stuck = time.monotonic()
        asyncio.run(produce(kafka_bootstrap, dep.chunks,
                            request_chunks("h-s", "h-r", [GOOD])))
        status, text = get(dep.metrics_port, "/healthz")
        while status == 200 and time.monotonic() - stuck < 40:
            time.sleep(0.5)
            status, text = get(dep.metrics_port, "/healthz")
        assert status == 503, "a worker stuck on a publish was still reported live"
        reported = time.monotonic() - stuck
        assert worker.process.poll() is None  # alive, and idle: what the probe is for
        worker.kill()  # what a liveness probe's restart does
        worker = Worker(dep)  # no more faults
        worker.wait_ready()
        got = records_of(dep, {"h-r"}, until=1)
        assert [r["outcome"] for r in got["h-r"]] == ["assembled"]
        print(f"\nstall: /healthz not live {reported:.1f} s after the publish hung "
              f"(TOOLWIRE_STALL_TIMEOUT=3, probe every 5 s); reason: {text.strip()[:120]}")
    finally:
        worker.stop()
