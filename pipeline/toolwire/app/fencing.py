"""A worker that may have lost its group writes nothing: no record, no changelog write, no commit.

Kafka fences a consumer's offset commits by generation, but not its producer: a worker cut off
from its brokers for longer than the session timeout (a partition, not a crash) is expelled
from the group and its partitions go to another worker, while the worker itself goes on
believing it owns them. When the link comes back it sends what it had ready — records of
responses its successor decides too, and changelog writes into partitions the successor now
writes, which the next recovery would restore over the successor's (a response done there
coming back as open, then swept as incomplete: a record that differs). It learns it was
expelled only from its next heartbeat or join, and Faust's revocation then commits, which
flushes the held table writes first.

:class:`Fence` closes that window from the worker's side. Fix 5 of :mod:`toolwire.app.fixes`
notes, per consumer group, when the group coordinator last confirmed the member
(:data:`toolwire.app.fixes.CONTACT`: a successful heartbeat, or a join that completed). Before
every record it publishes and every changelog write it makes, the worker asks
:meth:`Fence.check`: once the last confirmation is older than the session timeout less one
heartbeat interval — the coordinator may then have expired the member (it counts from when it
received the heartbeat, which is no later than when its answer arrived) — the worker stops
with the supervisor's restart status, writing nothing, committing nothing; the restarted worker
joins the group as a new member and decides its responses again from the committed input.
Before the first join the fence is open: a worker with no generation owns no partition yet.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import NoReturn

from toolwire.app.publishing import PublishFault

__all__ = ["Fence", "SessionExpired"]


class SessionExpired(Exception):
    """The group coordinator has not confirmed this worker for longer than it may wait."""


class Fence:
    """Stops the worker (``fail``) instead of a write once its group session may have ended."""

    def __init__(self, group: str, session_timeout: float, heartbeat_interval: float,
                 contact: Mapping[str, float], fail: Callable[[BaseException], NoReturn],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.group = group
        #: Seconds without a confirmation after which the member may have been expired.
        self.limit = max(session_timeout - heartbeat_interval, heartbeat_interval)
        self.contact = contact
        self.fail = fail
        self.clock = clock

    def silence(self) -> float | None:
        """Seconds since the coordinator last confirmed the member (``None``: never yet)."""
        last = self.contact.get(self.group)
        return None if last is None else self.clock() - last

    def check(self) -> None:
        """Return if the worker's session is current; otherwise stop it, writing nothing."""
        silence = self.silence()
        if silence is None or silence <= self.limit:
            return
        self.fail(PublishFault(
            SessionExpired(f"no word from the group coordinator for {silence:.0f} s"),
            f"the group session may have expired: no heartbeat of group {self.group!r} was "
            f"answered for {silence:.0f} s (limit {self.limit:.0f} s), so its partitions may "
            "belong to another worker now and nothing may be written for them",
            "nothing is published, written to a changelog or committed: the restarted "
            "worker joins the group again; if it repeats, check the network between the "
            "worker and the brokers"))
