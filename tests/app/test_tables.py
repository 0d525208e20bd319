"""Flushed table writes go to the changelog partition they name, and a write the producer
gave up on is sent again with the key's current value before offsets are committed."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.errors import OutOfOrderSequenceNumber

from toolwire.app.tables import TextKeys


class FakeTable:
    """What :class:`TextKeys` uses of a Faust table: its store and ``send_changelog``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.data: dict[bytes, bytes] = {}
        self.sent: list[tuple[int, bytes, bytes | None, asyncio.Future[Any]]] = []
        self.loop = loop

    def send_changelog(self, partition: int, key: bytes, value: bytes | None,
                       value_serializer: str | None = None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self.loop.create_future()
        self.sent.append((partition, key, value, future))
        return future


def test_a_failed_changelog_write_is_sent_again_with_the_current_value() -> None:
    loop = asyncio.new_event_loop()
    try:
        table = FakeTable(loop)
        keys = TextKeys(table)
        keys.apply(3, "r1", b"v1")
        keys.apply(3, "r1", b"v2")
        keys.apply(1, "gone", b"x")
        keys.apply(1, "gone", None)
        assert table.data == {b"r1": b"v2"}
        first, second, third, fourth = (s[3] for s in table.sent)
        first.set_exception(OutOfOrderSequenceNumber())
        second.set_result(None)
        third.set_exception(OutOfOrderSequenceNumber())
        fourth.set_exception(OutOfOrderSequenceNumber())
        assert keys.resend_failed() == 2  # two keys failed (one of them twice)
        resent = [(p, k, v) for p, k, v, _ in table.sent[4:]]
        assert sorted(resent, key=repr) == [(1, b"gone", None), (3, b"r1", b"v2")]
        for *_, future in table.sent[4:]:
            future.set_result(None)
        assert keys.resend_failed() == 0 and keys.unconfirmed == []
    finally:
        loop.close()


def test_writes_still_in_flight_are_kept_for_the_next_check() -> None:
    loop = asyncio.new_event_loop()
    try:
        table = FakeTable(loop)
        keys = TextKeys(table)
        keys.apply(0, "k", b"v")
        assert keys.resend_failed() == 0 and len(keys.unconfirmed) == 1
    finally:
        loop.close()


class ChangelogTopic:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.sent: list[dict[str, Any]] = []
        self.loop = loop

    def send_soon(self, **kwargs: Any) -> asyncio.Future[Any]:
        self.sent.append(kwargs)
        return self.loop.create_future()


def test_a_named_writer_goes_with_every_changelog_record() -> None:
    """The worker's name is the ``toolwire-worker`` header of each write and each tombstone,
    sent the way Faust's ``send_changelog`` sends (raw serializers, its callback)."""
    loop = asyncio.new_event_loop()
    try:
        table = FakeTable(loop)
        topic = ChangelogTopic(loop)
        table.changelog_topic = topic  # type: ignore[attr-defined]
        table.key_serializer = "raw"  # type: ignore[attr-defined]
        table.value_serializer = "raw"  # type: ignore[attr-defined]
        table._on_changelog_sent = print  # type: ignore[attr-defined]
        keys = TextKeys(table, writer="host-a:41")
        keys.apply(2, "r1", b"v1")
        keys.apply(2, "r1", None)
        assert table.sent == []  # not Faust's send_changelog: it takes no headers
        assert [(s["partition"], s["key"], s["value"], s["headers"]) for s in topic.sent] == [
            (2, b"r1", b"v1", [("toolwire-worker", b"host-a:41")]),
            (2, b"r1", None, [("toolwire-worker", b"host-a:41")])]
        assert all(s["callback"] is print and s["eager_partitioning"] for s in topic.sent)
        assert [s["value_serializer"] for s in topic.sent] == ["raw", "raw"]
    finally:
        loop.close()
