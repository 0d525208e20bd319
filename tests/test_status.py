"""``toolwire status`` on constructed positions (no Kafka): partitions not progressing although
workers are live are named, in text and in JSON, and the exit status is the README's."""

from __future__ import annotations

import orjson
import pytest

from toolwire.cli.status import report
from toolwire.kafka import GroupStatus, PartitionPosition, Stall

CHUNKS = "llm.sse.chunks"


def positions() -> tuple[PartitionPosition, ...]:
    return (
        PartitionPosition(CHUNKS, 0, 500, 500, 0, 0.0),           # caught up
        PartitionPosition(CHUNKS, 1, 520, 510, 10, 4.2),          # a little behind, moving
        PartitionPosition(CHUNKS, 2, 700, 699, 1, 121.0),         # one message, just over
        PartitionPosition(CHUNKS, 3, 620, 500, 120, 300.4),       # stuck for 5 minutes
        PartitionPosition(CHUNKS, 4, 10, None, 10, None),         # age unknown: not judged
        PartitionPosition(CHUNKS, 5, 10, 10, 0, 999.0),           # nothing waiting
        PartitionPosition("llm.toolcalls.assembled", 0, 900),     # output: no lag
    )


def status(members: int, stall: float | None = 120.0) -> GroupStatus:
    return GroupStatus("toolwire", "Stable", members, positions(), stall_seconds=stall)


def test_partitions_waiting_past_the_stall_timeout_with_live_workers() -> None:
    stalls = status(2).not_progressing
    assert stalls == (Stall(2, 1, 121.0, 2), Stall(3, 120, 300.4, 2))
    assert stalls[1].describe() == (
        "partition 3: 120 messages waiting for 300 s with 2 workers live: a worker is up but "
        "not progressing (or the group is that far behind); check /healthz of the workers "
        "(see ops/RUNBOOK.md)")
    assert stalls[0].describe().startswith("partition 2: 1 message waiting for 121 s with 2 "
                                           "workers live")
    assert Stall(3, 120, 300.4, 1).describe().startswith(
        "partition 3: 120 messages waiting for 300 s with 1 worker live:")


def test_no_stall_without_live_workers_or_below_the_timeout() -> None:
    assert status(0).not_progressing == ()  # no worker up: that is the exit status 1 case
    assert status(2, stall=None).not_progressing == ()
    assert [s.partition for s in status(2, stall=250.0).not_progressing] == [3]
    assert status(2, stall=301.0).not_progressing == ()


def test_text_names_each_partition_not_progressing(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(status(2)) == 0  # live members: exit 0, as the README says
    out = capsys.readouterr().out
    assert "group toolwire: Stable, 2 live member(s)" in out
    lines = [line for line in out.splitlines() if "not progressing" in line]
    assert lines == [s.describe() for s in status(2).not_progressing]
    assert "partition 3: 120 messages waiting for 300 s with 2 workers live" in out


def test_text_without_a_stall_says_nothing_of_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(status(2, stall=1000.0)) == 0
    assert "not progressing" not in capsys.readouterr().out


def test_json_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(status(2), as_json=True) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["stall_timeout_seconds"] == 120.0
    assert [(s["partition"], s["lag_messages"], s["lag_seconds"], s["members"])
            for s in data["not_progressing"]] == [(2, 1, 121.0, 2), (3, 120, 300.4, 2)]
    assert data["not_progressing"][1]["message"] == status(2).not_progressing[1].describe()


def test_no_live_member_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(status(0)) == 1
    assert "0 live member(s)" in capsys.readouterr().out
    assert report(status(0), as_json=True) == 1
    assert orjson.loads(capsys.readouterr().out)["not_progressing"] == []
