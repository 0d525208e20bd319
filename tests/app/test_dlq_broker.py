"""``toolwire dlq list | show | replay`` as an operator runs them, on the real broker: a response
dead-lettered by a limit, listed, shown with the record it gives once the limit is fixed, and
replayed twice after the fix — one response comes out."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from tests.app.support import Deployment, Worker, collect, produce, request_chunks
from tests.core.sse import body, call, chunk

pytestmark = pytest.mark.broker

TWO_CALLS = body(chunk(call(0, "call_a", "read_file", '{"path":"a"}'),
                       call(1, "call_b", "read_file", '{"path":"b"}')),
                 chunk(finish="tool_calls"))
ONE_CALL = body(chunk(call(0, "call_c", "read_file", '{"path":"c"}'), finish="tool_calls"))


@dataclass
class Limited(Deployment):
    max_calls: int | None = None

    def env(self) -> dict[str, str]:
        env = super().env()
        if self.max_calls is not None:
            env["TOOLWIRE_MAX_CALLS"] = str(self.max_calls)
        return env


def toolwire(dep: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolwire.cli", *args], env=dep.env(),
                          capture_output=True, text=True, timeout=90, check=False)


def test_list_show_and_replay_after_the_fix(kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Limited(kafka_bootstrap, tmp_path, max_calls=1)
    asyncio.run(dep.create_topics())
    strict = Worker(dep, "limited")
    try:
        strict.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks,
                            request_chunks("s1", "r-two", [TWO_CALLS[:70], TWO_CALLS[70:]])
                            + request_chunks("s2", "r-one", [ONE_CALL])))
        records = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                      until=2, idle=0.5, timeout=90))
    finally:
        strict.stop()
    assert sorted(r.get("reason", "-") for r in records) == ["-", "oversize"]

    listed = toolwire(dep, "dlq", "list", "--json", "--reason", "oversize")
    assert listed.returncode == 0, listed.stderr
    lines = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [(line["reason"], line["request_id"]) for line in lines] == [("oversize", "r-two")]
    ref = lines[0]["ref"]
    assert toolwire(dep, "dlq", "list", "--reason", "missing_identity").returncode == 1
    assert "r-two" in toolwire(dep, "dlq", "list", "--since", "1h").stdout
    assert toolwire(dep, "dlq", "list", "--since", "yesterday-ish").returncode == 2

    fixed = Limited(kafka_bootstrap, tmp_path, name=dep.name)  # the limit lifted
    shown = toolwire(fixed, "dlq", "show", ref)
    assert shown.returncode == 0, shown.stderr
    report = orjson.loads(shown.stdout)
    assert report["dead_letter"]["reason"] == "oversize"
    assert "".join(c["text"] for c in report["raw_chunks"]) == TWO_CALLS.decode()
    assert report["record_today"]["outcome"] == "assembled"
    assert report["replay_would_differ"] is True
    assert toolwire(fixed, "dlq", "show", "0:999999").returncode == 1
    assert toolwire(fixed, "dlq", "show", "nonsense").returncode == 2

    worker = Worker(fixed, "fixed")
    try:
        worker.wait_ready()
        for _ in range(2):  # idempotent: the second replay is the same request
            replayed = toolwire(fixed, "dlq", "replay", ref, "--release")
            assert replayed.returncode == 0, replayed.stderr
        after = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                    until=3, idle=3, timeout=90))
    finally:
        worker.stop()
    replays = [r for r in after if str(r.get("request_id", "")).startswith("r-two~replay-")]
    assert len(replays) == 1, after
    assert replays[0]["outcome"] == "assembled"
    assert [c["id"] for c in replays[0]["tool_calls"]] == ["call_a", "call_b"]
    assert replays[0]["session_id"] == "s1"


def test_an_unknown_tool_dead_letter_replayed_unchanged_is_unknown_tool_again(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """The replay carries the declared tools the dead letter recorded: replayed without them,
    the undeclared call would come out assembled, as executable."""
    dep = Deployment(kafka_bootstrap, tmp_path)
    asyncio.run(dep.create_topics())
    worker = Worker(dep, "tools")
    try:
        worker.wait_ready()
        asyncio.run(produce(kafka_bootstrap, dep.chunks, request_chunks(
            "s-undeclared", "r-undeclared", [ONE_CALL[:60], ONE_CALL[60:]],
            tools=("search", "get_weather"))))
        first = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                    until=1, idle=0.5, timeout=90))
        assert [(r["reason"], r["declared_tools"]) for r in first] == [
            ("unknown_tool", ["get_weather", "search"])]

        listed = toolwire(dep, "dlq", "list", "--json", "--reason", "unknown_tool")
        assert listed.returncode == 0, listed.stderr
        [ref] = [orjson.loads(line)["ref"] for line in listed.stdout.splitlines()]
        shown = toolwire(dep, "dlq", "show", ref)
        assert shown.returncode == 0, shown.stderr
        report = orjson.loads(shown.stdout)
        assert report["declared_tools_known"] is True and "notes" not in report
        assert report["record_today"]["reason"] == "unknown_tool"
        assert report["replay_would_differ"] is False

        replayed = toolwire(dep, "dlq", "replay", ref, "--release")
        assert replayed.returncode == 0, replayed.stderr
        after = asyncio.run(collect(kafka_bootstrap, [dep.assembled, dep.deadletter],
                                    until=2, idle=3, timeout=90))
    finally:
        worker.stop()
    assert worker.errors() == []
    replays = [r for r in after if str(r["request_id"]).startswith("r-undeclared~replay-")]
    assert [(r["_topic"], r["reason"], r["declared_tools"]) for r in replays] == [
        (dep.deadletter, "unknown_tool", ["get_weather", "search"])]
    assert replays[0]["calls"][0]["name"] == "read_file"
    assert replays[0]["request_id"] == report["record_today"]["request_id"]
    assert [r for r in after if r["_topic"] == dep.assembled] == []
