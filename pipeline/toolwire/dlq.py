"""``toolwire dlq release``: let a quarantined session continue.

The release travels as a control message in the input topic, keyed by the session like its
chunks: it lands on the partition of the worker that owns the session's quarantine entry, in
order with the session's chunks, and that worker applies it (a table can only be written from
an event of its partition).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaProducer

from toolwire.stream.messages import CONTROL_RELEASE, H_CONTROL


async def release(bootstrap: str, topic: str, session: str, *,
                  security: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """Send the release; return the (partition, offset) it was written at.

    ``security``: aiokafka connection options (:func:`toolwire.security.client_options`)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **(security or {}))
    try:
        await producer.start()  # inside the try: a refused login must not leak the client
        meta = await producer.send_and_wait(topic, b"", key=session.encode(),
                                            headers=[(H_CONTROL, CONTROL_RELEASE.encode())])
    finally:
        await producer.stop()
    return meta.partition, meta.offset
