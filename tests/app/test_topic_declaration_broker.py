"""Fix 8 of :mod:`toolwire.app.fixes` against a real broker: Faust's declaration of a topic
it creates returns once every partition's leader serves it (ListOffsets answered without an
error), and the wait for a topic that is not there ends at its deadline. Seen in CI: a
worker's first start logged aiokafka's ``Failed fetch offsets ... NotLeaderForPartition`` for
a changelog it had just created."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aiokafka
import pytest
from faust.transport.drivers.aiokafka import Transport

from tests.app.test_topic_declaration import Owner
from toolwire.app import fixes

pytestmark = pytest.mark.broker


@pytest.fixture
def transport() -> Iterator[Any]:
    fixes.install("chunks", declare_timeout=30.0)
    yield object.__new__(Transport)
    fixes.install("chunks", declare_timeout=60.0)


def test_a_created_topic_is_served_when_its_declaration_returns(
        kafka_bootstrap: str, transport: Any) -> None:
    topic = f"declared-{uuid.uuid4().hex[:8]}-changelog"

    async def declare() -> tuple[bool, bool, float]:
        client = aiokafka.AIOKafkaClient(bootstrap_servers=kafka_bootstrap)
        await client.bootstrap()
        try:
            assert not await fixes._served(client, topic)  # not there yet
            started = time.monotonic()
            await transport._really_create_topic(Owner(), client, topic, 6, 1,
                                                 compacting=True)
            took = time.monotonic() - started
            served = await fixes._served(client, topic)
            missing = await fixes._until_served(Owner(), client, f"{topic}-none",
                                                time.monotonic() + 1.0)
            return served, missing, took
        finally:
            await client.close()

    served, missing, took = asyncio.run(declare())
    assert served
    assert not missing
    assert took < 30.0
