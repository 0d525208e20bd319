"""Faust tables as the processor sees them: text keys, byte values."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from toolwire.stream.messages import H_WORKER


def _open() -> None:
    return None


class TextKeys(MutableMapping[str, bytes]):
    """A bytes-keyed Faust table seen with text keys.

    Faust picks a table's serializers from ``key_type``/``value_type`` alone (``bytes`` → raw,
    anything else → JSON, even with a raw ``schema``, and recovery then fails to decode what
    the agent wrote), so the tables are bytes to bytes and the keys are encoded here.

    ``guard`` is called before every write, and stops the worker instead of it when the
    worker may no longer own the partition (:class:`toolwire.app.fencing.Fence`).

    ``writer`` (the worker's name), when given, goes with every flushed changelog record as its
    ``toolwire-worker`` header, as it does with every output record: which process wrote a
    table's state can be read from the changelog (an operator's question after an incident,
    and the network-fault tests' proof that a fenced zombie wrote nothing). Restoring reads
    keys and values only.
    """

    def __init__(self, table: Any, guard: Callable[[], None] = _open,
                 writer: str | None = None) -> None:
        self.table = table
        self.guard = guard
        self.headers = None if writer is None else [(H_WORKER, writer.encode())]
        #: Changelog writes not yet known to be acknowledged: (partition, key, future).
        self.unconfirmed: list[tuple[int, str, Any]] = []

    def __getitem__(self, key: str) -> bytes:
        value: bytes = self.table[key.encode()]
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self.table.get(key.encode(), default)

    def __setitem__(self, key: str, value: bytes) -> None:
        self.guard()
        self.table[key.encode()] = value

    def __delitem__(self, key: str) -> None:
        self.guard()
        del self.table[key.encode()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.encode() in self.table

    def __iter__(self) -> Iterator[str]:
        return (k.decode() for k in list(self.table.keys()))

    def __len__(self) -> int:
        return len(self.table)

    def apply(self, partition: int, key: str, value: bytes | None) -> None:
        """A write flushed by the write-behind cache: into the store, and to the changelog
        partition of the response or session it belongs to.

        Faust's own ``table[key] = value`` takes the changelog partition from the current
        event, so it only works inside the agent; a flush runs before a commit, outside any
        event, and names the partition itself (the memory store needs none).
        """
        self.guard()
        raw_key = key.encode()
        if value is None:
            self.table.data.pop(raw_key, None)
        else:
            self.table.data[raw_key] = value
        self.unconfirmed.append((partition, key, self._send(partition, raw_key, value)))

    def _send(self, partition: int, raw_key: bytes, value: bytes | None) -> Any:
        """Faust's ``Table.send_changelog``, with the writer's header (which it cannot add)."""
        table = self.table
        if self.headers is None:
            if value is None:
                return table.send_changelog(partition, raw_key, None, value_serializer="raw")
            return table.send_changelog(partition, raw_key, value)
        return table.changelog_topic.send_soon(
            key=raw_key, value=value, partition=partition, headers=self.headers,
            key_serializer=table.key_serializer,
            value_serializer="raw" if value is None else table.value_serializer,
            callback=table._on_changelog_sent, eager_partitioning=True)

    def resend_failed(self) -> int:
        """Send again the current value of every key whose changelog write failed (the
        producer gave up on it, for example ``OutOfOrderSequenceNumber`` after a broker died);
        the number of writes that had failed. Call it after the producer was drained (step 3
        of :meth:`toolwire.app.commit.Checkpoint.commit`): the offsets are not committed until
        what they cover is in the changelog.

        The value sent again is the key's current one, not the failed one: a later write to
        the key may have succeeded, and the changelog must end with the latest value.
        """
        pending: list[tuple[int, str, Any]] = []
        failed: dict[str, int] = {}
        for partition, key, sent in self.unconfirmed:
            if not sent.done():
                pending.append((partition, key, sent))
            elif sent.cancelled() or sent.exception() is not None:
                failed[key] = partition
        self.unconfirmed = pending
        for key, partition in failed.items():
            self.apply(partition, key, self.table.data.get(key.encode()))
        return len(failed)
