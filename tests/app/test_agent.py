"""The Faust agent in Faust's ``test_context()`` (no broker): the glue hands raw messages to
the processor, sends what it returns, and survives a bug without losing the message.

These complement the broker tests in this folder, which run the same agent in a real worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson
import pytest

from tests.core.sse import body, call, chunk
from toolwire.app import Toolwire, create_app
from toolwire.config.settings import Settings
from toolwire.stream.messages import Output, Sink

GOOD = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
            chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))


@pytest.fixture(scope="module")
def glue(tmp_path_factory: pytest.TempPathFactory) -> Toolwire:
    return create_app(Settings(state_dir=tmp_path_factory.mktemp("agent"),
                               app_id="agent-test", bootstrap="127.0.0.1:9"))


@pytest.fixture
def sent(glue: Toolwire) -> Iterator[list[Output]]:
    glue.app.finalize()
    glue.app.flow_control.resume()
    outputs: list[Output] = []

    async def capture(output: Output) -> None:
        outputs.append(output)
        glue.processor.settle(output)  # published: the real publish settles after the ack

    with patch.object(glue, "publish", capture):
        yield outputs


def headers(request: str, seq: int, **extra: bytes) -> dict[str, Any]:
    return {"request-id": request.encode(), "chunk-seq": str(seq).encode(), **extra}


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


def test_agent_assembles_raw_messages(glue: Toolwire, sent: list[Output]) -> None:
    run(lambda: _assembles(glue))
    assert [o.sink for o in sent] == [Sink.ASSEMBLED]
    record = orjson.loads(sent[0].value)
    assert record["tool_calls"][0]["arguments"] == '{"city":"Paris"}'
    assert "__faust" not in record


async def _assembles(glue: Toolwire) -> None:
    async with glue.agent.test_context() as agent:
        await agent.put(GOOD[:100], key=b"s1", headers=headers("r1", 0))
        await agent.put(GOOD[100:], key=b"s1", headers=headers("r1", 1))
        await agent.put(b"", key=b"s1", headers=headers("r1", 2, **{"end-of-stream": b"eof"}))


def test_undecodable_bytes_become_a_dead_letter_not_a_lost_message(
        glue: Toolwire, sent: list[Output]) -> None:
    async def scenario() -> None:
        async with glue.agent.test_context() as agent:
            await agent.put(b"data: \xff\xfe{\n\n", key=b"s2", headers=headers("r2", 0))
            await agent.put(b"", key=b"s2", headers=headers("r2", 1,
                                                            **{"end-of-stream": b"eof"}))

    run(scenario)
    assert [orjson.loads(o.value)["reason"] for o in sent] == ["malformed_chunk"]


def test_a_bug_in_the_processor_is_dead_lettered_and_the_agent_goes_on(
        glue: Toolwire, sent: list[Output]) -> None:
    real = glue.processor.handle
    calls = {"n": 0}

    def flaky(msg: Any) -> list[Output]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("boom")
        return real(msg)

    async def scenario() -> None:
        async with glue.agent.test_context() as agent:
            await agent.put(b"data: {}\n\n", key=b"s3", headers=headers("r3", 0))
            await agent.put(GOOD, key=b"s4", headers=headers("r4", 0))
            await agent.put(b"", key=b"s4", headers=headers("r4", 1,
                                                            **{"end-of-stream": b"eof"}))

    with patch.object(glue.processor, "handle", flaky):
        run(scenario)
    reasons = [orjson.loads(o.value).get("reason") for o in sent]
    assert reasons == ["internal_error", None]
    assert sent[0].headers["toolwire.errors.reason"] == b"internal_error"


def test_the_app_follows_the_replication_settings(tmp_path: Path) -> None:
    worker = create_app(Settings(state_dir=tmp_path, app_id="repl-test", bootstrap="127.0.0.1:9",
                                 replication_factor=3, min_insync_replicas=2))
    assert worker.app.conf.topic_replication_factor == 3
    assert worker.app.conf.producer_acks == -1
    producer = worker.app.producer
    assert producer._settings_extra()["enable_idempotence"] is True
    for table in worker.app.tables.values():
        assert table.extra_topic_configs["min.insync.replicas"] == "2"


def test_changelog_segments_roll_so_that_compaction_runs(tmp_path: Path) -> None:
    worker = create_app(Settings(state_dir=tmp_path, app_id="seg-test", bootstrap="127.0.0.1:9",
                                 changelog_segment_seconds=120.0,
                                 changelog_segment_bytes=8 * 1024 * 1024,
                                 changelog_tombstone_retention_seconds=300.0))
    for table in worker.app.tables.values():
        assert table.extra_topic_configs == {"segment.ms": "120000", "segment.bytes": "8388608",
                                             "delete.retention.ms": "300000"}
    defaults = create_app(Settings(state_dir=tmp_path, app_id="seg-test2",
                                   bootstrap="127.0.0.1:9"))
    for table in defaults.app.tables.values():
        # Not Kafka's 7 days and 1 GiB (never rolled, never compacted) nor its day of
        # tombstones.
        assert int(table.extra_topic_configs["segment.ms"]) <= 3_600_000
        assert int(table.extra_topic_configs["segment.bytes"]) <= 256 * 1024 * 1024
        assert int(table.extra_topic_configs["delete.retention.ms"]) <= 3_600_000


def test_a_publish_fault_stops_the_worker_with_its_status_not_a_restarted_agent(
        tmp_path: Path) -> None:
    """Faust would restart a crashed agent inside the same process (on the same broken
    producer: alive and idle for ever); Toolwire's agent ends the process instead, with a
    status the supervisor restarts on, and the probes report it not live. The agent's own
    loop is driven here with two events (``test_context`` waits for an ack that a stopping
    worker never gives)."""
    from types import SimpleNamespace

    from toolwire.app.publishing import EXIT_FAULT, PublishFault

    worker = create_app(Settings(state_dir=tmp_path, app_id="fault-test",
                                 bootstrap="127.0.0.1:9"))
    exits: list[int] = []

    async def refused(output: Output) -> None:
        raise PublishFault(None, "publish failed with OutOfOrderSequenceNumber", "restart")

    def exit_(status: int) -> Any:
        exits.append(status)

    worker.exit = exit_  # type: ignore[assignment]

    def event(offset: int, value: bytes, **extra: bytes) -> Any:
        message = SimpleNamespace(topic="llm.sse.chunks", partition=0, offset=offset,
                                  key=b"s9", timestamp=None)
        return SimpleNamespace(message=message, value=value,
                               headers=headers("r9", offset, **extra))

    class Stream:
        async def events(self) -> Any:
            yield event(0, GOOD)
            yield event(1, b"", **{"end-of-stream": b"eof"})
            raise AssertionError("the agent went on past a publish fault")

    async def scenario() -> int:
        handled = 0
        async for _ in worker._assemble(Stream()):  # type: ignore[arg-type]
            handled += 1
        return handled

    with patch.object(worker, "publish", refused):
        handled = asyncio.run(scenario())
    assert handled == 1  # the first message; the second's record was refused
    assert exits == [EXIT_FAULT]
    live, why = worker.health.liveness()
    assert not live and "OutOfOrderSequenceNumber" in why
    assert worker.processor.pending == {}  # unsettled: decided again after the restart


def test_the_sweep_commits_only_when_no_commit_ran_since_the_last_sweep(
        tmp_path: Path) -> None:
    """An idle worker's sweep runs the commit's steps (nothing else would carry out its
    deletions); a busy worker's commits did all of it, so its sweep adds no flush and no
    drain (a drain waits for every record in flight, large dead letters included)."""
    glue = create_app(Settings(state_dir=tmp_path, app_id="sweep-test",
                               bootstrap="127.0.0.1:9"))
    app: Any = glue.app
    commits: list[bool] = []

    async def held_commit(*, offsets: bool = True) -> bool:
        commits.append(offsets)
        glue.checkpoint.counted += 1
        return True

    async def scenario() -> None:
        with patch.object(type(app), "rebalancing", False), \
                patch.object(type(app), "in_recovery", False), \
                patch.object(app.assignor, "assigned_actives", lambda: set()), \
                patch.object(glue.checkpoint, "commit", held_commit):
            await glue._sweep()  # idle from the start: commits
            await glue._sweep()  # still idle: commits again
            glue.checkpoint.counted += 1  # a commit of the worker's own
            await glue._sweep()  # busy: nothing
            await glue._sweep()  # idle again: commits
    run(scenario)
    assert commits == [False, False, False]


def test_a_recovery_stalled_after_its_restart_stops_the_worker_with_its_status(
        tmp_path: Path) -> None:
    """The watchdog's verdicts, as the worker acts on them: a restarted reading also seeks the
    changelog partitions where the recovery got to; a recovery still stalled a period later
    stops the process with the status the supervisor restarts on (its rebalance starts the
    recovery again), and the probes say why — never a worker alive and idle."""
    from toolwire.app.publishing import EXIT_FAULT
    from toolwire.app.watchdog import Verdict

    worker = create_app(Settings(state_dir=tmp_path, app_id="stall-test",
                                 bootstrap="127.0.0.1:9"))
    exits: list[int] = []
    seeks: list[dict[Any, int]] = []
    verdicts = iter([Verdict.RESTARTED, Verdict.QUIET, Verdict.STUCK])

    def exit_(status: int) -> Any:
        exits.append(status)

    async def seek_wait(offsets: dict[Any, int]) -> None:
        seeks.append(offsets)

    async def no_probe() -> None:
        return None

    worker.exit = exit_  # type: ignore[assignment]
    with patch.object(worker.watchdog, "check", lambda: next(verdicts)), \
            patch.object(worker.watchdog, "restart_offsets", lambda: {"tp": 17}), \
            patch.object(type(worker.app.consumer), "seek_wait", staticmethod(seek_wait)), \
            patch.object(worker, "_probe_progress", no_probe):
        asyncio.run(worker._watch_recovery())
        assert (seeks, exits) == ([{"tp": 17}], [])
        assert worker.stats["recovery_flow_resumed"] == 1
        asyncio.run(worker._watch_recovery())
        assert exits == []
        asyncio.run(worker._watch_recovery())
    assert exits == [EXIT_FAULT]
    live, why = worker.health.liveness()
    assert not live and "table recovery received no changelog record" in why
