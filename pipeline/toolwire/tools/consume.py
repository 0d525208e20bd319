"""Reading what Toolwire published, as JSON records (the library behind ``toolwire consume``).

It reads with no consumer group (partitions assigned directly), so looking never moves the
offsets of a real consumer, and it stops by itself after ``--idle-timeout`` or ``--max``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from toolwire.config.settings import Settings
from toolwire.kafka import open_client


async def consume(bootstrap: str, topic: str, *, from_beginning: bool, idle_timeout: float,
                  max_records: int | None, emit: Callable[[dict[str, Any]], None],
                  ready: asyncio.Event | None = None,
                  security: Mapping[str, Any] | None = None,
                  connect_timeout: float = 15.0) -> int:
    """Emit each record (value JSON, plus ``_kafka`` metadata); return how many.

    ``security``: aiokafka connection options (:func:`toolwire.config.security.client_options`);
    ``connect_timeout``: how long the consumer may take to connect."""
    count = 0
    async with open_client(AIOKafkaConsumer, bootstrap, start_timeout=connect_timeout,
                           enable_auto_commit=False,
                           auto_offset_reset="earliest" if from_beginning else "latest",
                           **(security or {})) as consumer:
        partitions = consumer.partitions_for_topic(topic) or set()
        if not partitions:
            await consumer._client.force_metadata_update()
            partitions = consumer.partitions_for_topic(topic) or set()
        if not partitions:
            raise LookupError(f"topic {topic} does not exist (run 'toolwire topics apply')")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        if from_beginning:
            await consumer.seek_to_beginning(*tps)
        else:
            await consumer.seek_to_end(*tps)
            for tp in tps:
                await consumer.position(tp)
        if ready is not None:
            ready.set()
        last = time.monotonic()
        while max_records is None or count < max_records:
            batch = await consumer.getmany(timeout_ms=200, max_records=100)
            if not batch:
                if time.monotonic() - last >= idle_timeout:
                    break
                continue
            last = time.monotonic()
            for tp, messages in sorted(batch.items(), key=lambda kv: kv[0].partition):
                for m in messages:
                    try:
                        value = orjson.loads(m.value) if m.value else None
                    except orjson.JSONDecodeError:
                        value = {"_undecodable": m.value[:200].decode("utf-8", "replace")}
                    record = value if isinstance(value, dict) else {"_value": value}
                    record["_kafka"] = {
                        "topic": tp.topic, "partition": tp.partition, "offset": m.offset,
                        "key": None if m.key is None else m.key.decode("utf-8", "replace"),
                        "headers": {k: v.decode("utf-8", "replace") for k, v in m.headers}}
                    emit(record)
                    count += 1
                    if max_records is not None and count >= max_records:
                        return count
    return count


def topic_for(kind: str, settings: Settings) -> str:
    return {"assembled": settings.topic_assembled, "deadletter": settings.topic_deadletter}[kind]


def print_json_line(record: dict[str, Any]) -> None:
    sys.stdout.buffer.write(orjson.dumps(record) + b"\n")
    sys.stdout.flush()
