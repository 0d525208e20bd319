"""The baselines Toolwire's worker is measured against, each run as its own process:

    python ops/bench/baselines.py raw   --bootstrap B --input T --output O --group G
    python ops/bench/baselines.py faust --bootstrap B --input T --output O --group G [--table]

``raw``: an aiokafka consume → produce loop, one output per input message (key, value and
headers copied), at least once: a fetched batch is sent, its acknowledgements awaited, then
its offsets committed. The producer has ``acks=all`` and idempotence, like the worker's.

``faust``: a bare Faust agent forwarding every message, on a Faust app built by Toolwire's own
:func:`toolwire.app.faust_app.build_faust_app` (the same app settings as the worker: memory
store, at-least-once, raw serializers, ``acks=all`` idempotent producer, the same partitions),
without Toolwire's processor and without its Faust patches (``toolwire.app.fixes``); one agent,
``concurrency=1``, as the worker's. ``--table`` adds one table write per message (key: the
message key, value: its value), the table being bytes → bytes with the input's partitions.

Both print or log a ready line (``BENCH-READY``; Faust's ``[^Worker]: Ready``) and run until
SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any


async def raw_loop(args: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.abc import ConsumerRebalanceListener

    class Ready(ConsumerRebalanceListener):  # type: ignore[misc]
        said = False

        async def on_partitions_revoked(self, revoked: Any) -> None:
            return None

        async def on_partitions_assigned(self, assigned: Any) -> None:
            if assigned and not self.said:
                self.said = True
                print("BENCH-READY", sorted(tp.partition for tp in assigned), flush=True)

    consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, acks="all",
                                enable_idempotence=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stopping.set)
    loop.add_signal_handler(signal.SIGINT, stopping.set)
    consumer.subscribe([args.input], listener=Ready())
    await producer.start()
    await consumer.start()
    try:
        while not stopping.is_set():
            batch = await consumer.getmany(timeout_ms=200, max_records=2000)
            if not batch:
                continue
            futures = [await producer.send(args.output, r.value, key=r.key,
                                           headers=list(r.headers))
                       for records in batch.values() for r in records]
            await asyncio.gather(*futures)
            await consumer.commit()
    finally:
        await consumer.stop()
        await producer.stop()


def faust_worker(args: argparse.Namespace) -> int:
    import faust
    from faust.worker import Worker

    from toolwire.app.faust_app import build_faust_app
    from toolwire.config.settings import Settings

    state = Path(args.state_dir or tempfile.mkdtemp(prefix="bench-faust-"))
    state.mkdir(parents=True, exist_ok=True)
    settings = Settings(bootstrap=args.bootstrap, app_id=args.group, topic_chunks=args.input,
                        partitions=args.partitions, state_dir=state)
    app = build_faust_app(settings)
    raw: dict[str, Any] = {"key_type": bytes, "value_type": bytes,
                           "key_serializer": "raw", "value_serializer": "raw"}
    source = app.topic(args.input, partitions=args.partitions, **raw)
    sink = app.topic(args.output, **raw)
    table = (app.Table("bench", key_type=bytes, value_type=bytes, partitions=args.partitions)
             if args.table else None)

    async def forward(stream: faust.StreamT[bytes]) -> Any:
        async for event in stream.events():
            message = event.message
            headers = event.headers
            items = list(headers.items()) if isinstance(headers, dict) else list(headers or ())
            if table is not None:
                table[message.key or b""] = event.value or b""
            await sink.send(key=message.key, value=event.value, headers=items)
            yield None

    app.agent(source, name=f"{args.group}.forward", concurrency=1)(forward)
    app.finalize()
    app.conf.web_enabled = False
    app.worker_init()
    worker = Worker(app, loglevel="info", quiet=True)
    worker.execute_from_commandline()  # exits the process when the worker stops
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["raw", "faust"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True, help="consumer group / Faust app id")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--table", action="store_true", help="faust: one table write each")
    parser.add_argument("--state-dir", default=None, help="faust: its data dir")
    args = parser.parse_args(argv)
    if args.kind == "raw":
        asyncio.run(raw_loop(args))
        return 0
    return faust_worker(args)


if __name__ == "__main__":
    sys.exit(main())
