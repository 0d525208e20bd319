"""``toolwire worker`` with faults injected into its producer, for the publish-fault tests.

    python -m tests.app.faulty_worker PLAN.json [toolwire worker arguments]

The plan is a JSON list of faults, each ``{"at": N, "error": NAME, "times": K}``: the ``N``-th
attempt (counted from 1, over every run of the worker that shares the plan) to send a record
that decides a response raises ``NAME`` (an ``aiokafka.errors`` class, or ``hang``: the send
never returns), and so do the next ``K - 1`` attempts; ``"times": "process"`` makes every
later attempt of the process that met the fault raise it too (an outage that outlasts the
retries), and none of a restarted one. ``"error": "service_crash"`` instead crashes a Faust service
the way a failed task of the producer's buffer does (``UnknownTopicOrPartitionError``
after a metadata timeout, seen under a network partition): mode marks every service of the
app crashed, and the record is sent as usual. What was injected is appended to
``PLAN.json.log`` (one JSON line per fault), and the attempt counter lives in
``PLAN.json.count``, so a restarted worker goes on where the crashed one stopped. The fault is
raised instead of sending: the record never reached the broker, exactly as when the real
producer fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import aiokafka.errors

from toolwire.app.service import Toolwire
from toolwire.stream.messages import Output


def install(plan_path: Path) -> None:
    plan: list[dict[str, Any]] = json.loads(plan_path.read_text())
    counter = plan_path.with_suffix(plan_path.suffix + ".count")
    journal = plan_path.with_suffix(plan_path.suffix + ".log")
    real = Toolwire.send_once

    async def send_once(self: Toolwire, output: Output) -> None:
        if output.settles is not None:
            attempt = int(counter.read_text()) + 1 if counter.exists() else 1
            counter.write_text(str(attempt))
            for fault in plan:
                times = fault.get("times", 1)
                if times == "process":
                    if attempt == fault["at"]:
                        fault["pid"] = os.getpid()
                    hit = fault.get("pid") == os.getpid() and attempt >= fault["at"]
                else:
                    hit = fault["at"] <= attempt < fault["at"] + times
                if hit:
                    with journal.open("a") as f:
                        f.write(json.dumps({"attempt": attempt, "error": fault["error"],
                                            "request": output.settles}) + "\n")
                    if fault["error"] == "hang":
                        await asyncio.sleep(3600)
                    if fault["error"] == "service_crash":
                        # What mode's Service.task wrapper does when the task raises.
                        await self.app.producer.buffer.crash(
                            aiokafka.errors.UnknownTopicOrPartitionError())
                        break
                    raise getattr(aiokafka.errors, fault["error"])()
        await real(self, output)

    Toolwire.send_once = send_once  # type: ignore[method-assign]


def main() -> None:
    install(Path(sys.argv[1]))
    from toolwire.cli import main as toolwire

    sys.exit(toolwire(sys.argv[2:]))


if __name__ == "__main__":
    main()
