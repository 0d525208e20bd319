"""Fix 7 of :mod:`toolwire.app.fixes` on Faust's own topic declaration, without a broker: the
controller's id comes from the first broker that answers, and a declaration that cannot reach
the cluster is tried again until the declare timeout. The broker-isolation scenario
(``tests/net/test_faults.py``) is where it was seen: a worker restarted while broker 1 was cut
off exited 1 from its start, Faust having asked broker 1 only, once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import errors
from faust.transport.drivers.aiokafka import Transport

from toolwire.app import fixes

Answer = Callable[[int, Any], Any]


class Owner:
    """What Faust's declaration needs of its owner service: ``wait`` and ``should_stop``."""

    should_stop = False
    log = SimpleNamespace(info=lambda *a: None, debug=lambda *a: None)

    async def wait(self, coro: Any, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(stopped=False, result=await coro)


class Client:
    """Brokers 1, 2, 3; ``answer(node, request)`` answers each request (raise, return, or
    never) but ListOffsets, which ``serves(n)`` answers with the error code of the n-th
    (the topic's 6 partitions led by brokers 1 and 2 in the metadata it fetches)."""

    def __init__(self, answer: Answer, serves: Callable[[int], int] = lambda n: 0,
                 topics: frozenset[str] = frozenset()) -> None:
        self.answer, self.serves = answer, serves
        self.sent: list[tuple[int, str]] = []
        self.metadata_updates = 0
        self.probes: list[tuple[int, list[int]]] = []
        self.cluster = SimpleNamespace(
            brokers=lambda: [SimpleNamespace(nodeId=n) for n in (1, 2, 3)],
            topics=lambda: set(topics))

    async def fetch_all_metadata(self) -> Any:
        return SimpleNamespace(partitions_for_topic=lambda topic: set(range(6)),
                               leader_for_partition=lambda tp: 1 + tp.partition % 2)

    async def send(self, node: int, request: Any) -> Any:
        self.sent.append((node, type(request).__name__))
        if "Offset" in type(request).__name__:
            ((topic, entries),) = request._topics
            self.probes.append((node, sorted(p for p, _ in entries)))
            code = self.serves(len(self.probes))
            return SimpleNamespace(topics=[(topic, [(p, code, -1, 0) for p, _ in entries])])
        result = self.answer(node, request)
        if asyncio.iscoroutine(result):
            return await result
        return result

    async def force_metadata_update(self) -> bool:
        self.metadata_updates += 1
        return True


async def never() -> None:
    await asyncio.Event().wait()


def created(code: int = 0) -> SimpleNamespace:
    return SimpleNamespace(topic_errors=[("t-changelog", code, None)])


@pytest.fixture
def transport() -> Any:
    fixes.install("chunks", declare_timeout=3.0)
    yield object.__new__(Transport)  # the methods read nothing of the instance but these
    fixes.install("chunks", declare_timeout=60.0)


def test_the_controller_comes_from_the_first_broker_that_answers(transport: Any) -> None:
    def answer(node: int, request: Any) -> Any:
        if node == 1:
            return never()  # cut off: no answer, no reset
        if node == 2:
            raise errors.KafkaConnectionError("refused")
        return SimpleNamespace(controller_id=3)

    client = Client(answer)
    started = time.monotonic()
    controller = asyncio.run(transport._get_controller_node(Owner(), client, timeout=10_000))
    assert controller == 3
    assert time.monotonic() - started < 1.0  # not after broker 1's request timeout
    assert sorted(node for node, _ in client.sent) == [1, 2, 3]


def controller_1_then(create: Callable[[int], Any], creates: list[int]) -> Answer:
    """Answers: broker 1 is the controller; the n-th CreateTopics gets ``create(n)``."""

    def answer(node: int, request: Any) -> Any:
        if "Metadata" in type(request).__name__:
            return SimpleNamespace(controller_id=1)
        creates.append(node)
        return create(len(creates))

    return answer


def test_a_declaration_that_times_out_is_tried_again(transport: Any) -> None:
    creates: list[int] = []

    def create(n: int) -> Any:
        if n == 1:
            raise errors.RequestTimedOutError()
        return created()

    client = Client(controller_1_then(create, creates))
    asyncio.run(transport._really_create_topic(Owner(), client, "t-changelog", 6, 1,
                                               compacting=True))
    assert len(creates) == 2
    assert client.metadata_updates == 1


def test_a_refusal_is_raised_at_once(transport: Any) -> None:
    creates: list[int] = []
    answer = controller_1_then(lambda n: created(errors.InvalidReplicationFactorError.errno),
                               creates)
    with pytest.raises(errors.InvalidReplicationFactorError):
        asyncio.run(transport._really_create_topic(Owner(), Client(answer), "t-changelog", 6, 3))
    assert len(creates) == 1


def test_a_cluster_never_reached_fails_after_the_declare_timeout(transport: Any) -> None:
    def answer(node: int, request: Any) -> Any:
        raise errors.RequestTimedOutError()

    client = Client(answer)
    started = time.monotonic()
    with pytest.raises(errors.RequestTimedOutError):
        asyncio.run(transport._really_create_topic(Owner(), client, "t-changelog", 6, 1))
    took = time.monotonic() - started
    assert 1.0 < took < 3.5  # tried again with backoff, up to the declare timeout (3 s)
    assert len([s for s in client.sent if "Create" in s[1]]) == 0  # no controller ever known
    assert client.metadata_updates >= 2


def test_a_created_topic_is_declared_once_every_leader_serves_it(transport: Any) -> None:
    """Fix 8: the first ListOffsets (one per leader) is answered "not the leader"; the
    declaration asks again and returns once both leaders serve their partitions."""
    creates: list[int] = []
    client = Client(controller_1_then(lambda n: created(), creates),
                    serves=lambda n: errors.NotLeaderForPartitionError.errno if n <= 2 else 0)
    asyncio.run(transport._really_create_topic(Owner(), client, "t-changelog", 6, 1))
    assert len(creates) == 1
    assert sorted(client.probes) == [(1, [0, 2, 4]), (1, [0, 2, 4]), (2, [1, 3, 5]),
                                     (2, [1, 3, 5])]


def test_a_topic_that_exists_is_not_probed(transport: Any) -> None:
    creates: list[int] = []
    client = Client(controller_1_then(lambda n: created(), creates),
                    topics=frozenset({"t-changelog"}))
    asyncio.run(transport._really_create_topic(Owner(), client, "t-changelog", 6, 1))
    assert creates == [] and client.probes == []


def test_a_topic_never_served_is_declared_with_a_warning_after_the_timeout(
        transport: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Not an error out of the worker's start: aiokafka retries its reads and writes."""
    creates: list[int] = []
    client = Client(controller_1_then(lambda n: created(), creates),
                    serves=lambda n: errors.NotLeaderForPartitionError.errno)
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="toolwire.app"):
        asyncio.run(transport._really_create_topic(Owner(), client, "t-changelog", 6, 1))
    assert 2.0 < time.monotonic() - started < 4.0  # the declare timeout is 3 s
    assert len(client.probes) > 4
    assert any("not every partition's leader serves it" in r.getMessage()
               for r in caplog.records)
