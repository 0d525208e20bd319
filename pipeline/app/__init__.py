"""The Faust application: thin glue that feeds Kafka messages to the stream processor.

``faust -A pipeline.app worker`` and ``toolwire worker`` run it. All logic lives in
:class:`pipeline.stream.processor.Processor`; this module only decodes nothing (values and keys
are consumed as raw bytes, so a bad message becomes a dead letter instead of being acked and
lost by a failed Faust decode), hands the processor Faust tables, and sends what it returns.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, MutableMapping
from typing import Any

import faust

from pipeline.app import fixes
from pipeline.app.config import build_app, settings
from pipeline.stream.messages import InputMessage, Output, Sink
from pipeline.stream.processor import Processor

log = logging.getLogger("toolwire.app")


fixes.install(settings.topic_chunks)

app: faust.App = build_app(settings)

chunks_topic = app.topic(settings.topic_chunks, key_type=bytes, value_type=bytes,
                         key_serializer="raw", value_serializer="raw",
                         partitions=settings.partitions)
assembled_topic = app.topic(settings.topic_assembled, key_type=bytes, value_type=bytes,
                            key_serializer="raw", value_serializer="raw")
deadletter_topic = app.topic(settings.topic_deadletter, key_type=bytes, value_type=bytes,
                             key_serializer="raw", value_serializer="raw")


class TextKeys(MutableMapping[str, bytes]):
    """A bytes-keyed Faust table seen with text keys.

    Faust picks a table's serializers from ``key_type``/``value_type`` alone (``bytes`` → raw,
    anything else → JSON, even with a raw ``schema``, and recovery then fails to decode what
    the agent wrote), so the tables are bytes to bytes and the keys are encoded here.
    """

    def __init__(self, table: Any) -> None:
        self.table = table

    def __getitem__(self, key: str) -> bytes:
        value: bytes = self.table[key.encode()]
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self.table.get(key.encode(), default)

    def __setitem__(self, key: str, value: bytes) -> None:
        self.table[key.encode()] = value

    def __delitem__(self, key: str) -> None:
        del self.table[key.encode()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.encode() in self.table

    def __iter__(self) -> Iterator[str]:
        return (k.decode() for k in list(self.table.keys()))

    def __len__(self) -> int:
        return len(self.table)


def _table(name: str, help: str) -> TextKeys:
    # Same partition count as the input topic: a table's changelog partition is the partition
    # of the event that writes it, and restoring relies on the two lining up.
    return TextKeys(app.Table(name, key_type=bytes, value_type=bytes,
                              partitions=settings.partitions, help=help))


chunks_table = _table("chunks", "raw chunks of open responses, deleted when decided")
responses_table = _table("responses", "open responses' metadata, then dedupe markers")
quarantine_table = _table("quarantine", "quarantined sessions until an operator releases them")

processor = Processor(settings, chunks_table, responses_table, quarantine_table)

_SINKS = {Sink.ASSEMBLED: assembled_topic, Sink.DEADLETTER: deadletter_topic,
          Sink.CHUNKS: chunks_topic}


async def publish(output: Output) -> None:
    """Send one output; a record that decides a response is awaited until the broker has it.

    Only then is the response settled (its done marker written): a record that fails to
    publish raises here, the worker stops without committing, and the restarted worker
    decides the response again instead of finding it done.
    """
    sent = await _SINKS[output.sink].send(key=output.key, value=output.value,
                                          headers=output.headers, partition=output.partition)
    if output.settles is not None:
        await sent
        processor.settle(output)


def _headers(raw: Any) -> dict[str, bytes]:
    items = raw.items() if isinstance(raw, dict) else (raw or [])
    return {str(k): (v if isinstance(v, bytes) else str(v).encode()) for k, v in items}


@app.agent(chunks_topic, concurrency=1)  # writes tables: one message at a time (faust #606)
async def assemble_responses(stream: faust.StreamT[bytes]) -> AsyncIterator[None]:
    async for event in stream.events():
        message = event.message
        msg = InputMessage(topic=message.topic, partition=message.partition,
                           offset=message.offset, key=message.key, value=event.value or b"",
                           headers=_headers(event.headers), timestamp=message.timestamp)
        try:
            outputs = processor.handle(msg)
        except Exception as exc:  # the processor fails responses itself; this is a last resort
            log.error("internal error on %s[%d]@%d: %s", msg.topic, msg.partition,
                      msg.offset, type(exc).__name__, exc_info=True)
            outputs = [processor.message_failed(msg, exc)]
        try:
            for output in outputs:
                await publish(output)
        except BaseException:
            processor.unsettled()
            raise
        yield None


@app.timer(interval=settings.sweep_interval_seconds)  # type: ignore[untyped-decorator]
async def sweep() -> None:
    """Ask the owner of each partition to sweep idle responses and expired dedupe markers."""
    if app.rebalancing or app.in_recovery:
        return  # restored state is not complete yet
    assigned = {tp.partition for tp in app.assignor.assigned_actives()
                if tp.topic == settings.topic_chunks}
    for output in processor.sweep(assigned):
        await publish(output)


async def _on_revoked(sender: Any, revoked: set[Any], **kwargs: Any) -> None:
    processor.forget({tp.partition for tp in revoked if tp.topic == settings.topic_chunks})


async def _on_assigned(sender: Any, assigned: set[Any], **kwargs: Any) -> None:
    processor.rescan = True


app.on_partitions_revoked.connect(_on_revoked)  # type: ignore[arg-type]
app.on_partitions_assigned.connect(_on_assigned)  # type: ignore[arg-type]
