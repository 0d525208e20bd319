"""Table writes held in memory and written once per commit, like Kafka Streams' record cache.

Faust writes a table's changelog record on every assignment. A response touched by forty
chunks between two commits would cost forty changelog records (and a tombstone each when it is
decided); held here, it costs one value per key at the next commit — and nothing at all for a
response opened and decided between two commits, which is most of them. The worker flushes
before it commits input offsets (see :meth:`toolwire.app.commit.Checkpoint.commit`), so what a
committed offset covers is always in the changelog; what is lost in a crash is re-read from the
input, whose offsets were not committed.

A :class:`WriteBehind` is a read-through view of one table: reads see the held writes first. A
held write names its changelog partition (the partition of the response or session it
belongs to), so a flush needs no Faust event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: A held deletion.
_DELETED = None


@dataclass(frozen=True, slots=True)
class Write:
    """One table write as flushed: ``value`` ``None`` deletes the key."""

    table: str
    partition: int
    key: str
    value: bytes | None


@runtime_checkable
class Applies(Protocol):
    """A table that takes a flushed write itself (a Faust table writes its changelog too)."""

    def apply(self, partition: int, key: str, value: bytes | None) -> None: ...


class WriteBehind:
    """One table seen through the writes not yet flushed."""

    def __init__(self, name: str, table: MutableMapping[str, bytes]) -> None:
        self.name = name
        self.table = table
        #: Key → (partition, value or ``None`` for a deletion), latest write wins.
        self.held: dict[str, tuple[int, bytes | None]] = {}
        #: Bytes of the held values.
        self.held_bytes = 0
        self._apply: Callable[[int, str, bytes | None], None] = (
            table.apply if isinstance(table, Applies) else self._apply_to_mapping)

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        held = self.held.get(key)
        if held is not None:
            return held[1]
        return self.table.get(key)

    def __contains__(self, key: str) -> bool:
        held = self.held.get(key)
        if held is not None:
            return held[1] is not None
        return key in self.table

    def keys(self) -> Iterator[str]:
        """Every key with a value (a snapshot: writes while iterating are not seen)."""
        held = {k: v for k, (_, v) in self.held.items()}
        for key in list(self.table):
            if key not in held:
                yield key
        for key, value in held.items():
            if value is not None:
                yield key

    def __len__(self) -> int:
        held = list(self.held.items())  # one step under the GIL: metrics read from a thread
        added = sum(1 for k, (_, v) in held if v is not None and k not in self.table)
        removed = sum(1 for k, (_, v) in held if v is None and k in self.table)
        return len(self.table) + added - removed

    # -- writes ------------------------------------------------------------------------------

    def put(self, partition: int, key: str, value: bytes) -> None:
        self._hold(key, (partition, value))

    def put_now(self, partition: int, key: str, value: bytes) -> None:
        """Write through, at once: for a value whose delay would widen a crash window (a done
        marker written after its record is published)."""
        self._forget(key)
        self._apply(partition, key, value)

    def delete(self, partition: int, key: str) -> None:
        """Delete ``key``: a key never flushed is simply forgotten (no tombstone)."""
        if key in self.table:
            self._hold(key, (partition, _DELETED))
        elif key in self.held:
            self._forget(key)

    def _hold(self, key: str, entry: tuple[int, bytes | None]) -> None:
        self._forget(key)
        self.held[key] = entry
        self.held_bytes += len(entry[1] or b"")

    def _forget(self, key: str) -> None:
        old = self.held.pop(key, None)
        if old is not None:
            self.held_bytes -= len(old[1] or b"")

    # -- flush -------------------------------------------------------------------------------

    def flush(self) -> list[Write]:
        """Write every held value to the table (and its changelog); return what was written."""
        writes = [Write(self.name, partition, key, value)
                  for key, (partition, value) in self.held.items()]
        self.held.clear()
        self.held_bytes = 0
        for write in writes:
            self._apply(write.partition, write.key, write.value)
        return writes

    def drop(self, partitions: set[int]) -> None:
        """Forget the held writes of revoked partitions: their new owner re-reads the input."""
        for key in [k for k, (p, _) in self.held.items() if p in partitions]:
            self._forget(key)

    def _apply_to_mapping(self, partition: int, key: str, value: bytes | None) -> None:
        if value is None:
            self.table.pop(key, None)
        else:
            self.table[key] = value
