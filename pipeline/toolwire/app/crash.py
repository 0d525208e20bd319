"""A crashed Faust service stops the worker with the supervisor's status, at once.

When a Faust service without a supervisor fails (the producer buffer's task did, with
``UnknownTopicOrPartitionError`` after a metadata timeout, while a worker was cut off from
its brokers), mode marks every service of the app crashed. What follows is not something a
supervisor can act on: Faust stops its services (which waits on brokers that cannot be
reached), mode logs "We experienced a crash!" and re-raises the reason, its ``exiting``
turns that into status 1, and the interpreter's exit then waits for threads that are not
daemons. Seen: a worker alive and idle for 48 s with no further log line, until it was
stopped; with one worker that is an outage no probe reports.

A crash is a fault the process cannot get past, like a failed agent: :class:`CrashWatch`
(a daemon thread) sees the worker's crashed flag within ``interval`` seconds and calls the
worker's ``fail`` — status 75, a line naming the cause, nothing committed first, no stop of
the services — so the process supervisor restarts it and the new process decides the pending
responses again. Only ``is_set()`` of mode's event is read from the thread, a plain attribute
read; nothing of the event loop is touched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NoReturn

from toolwire.app.publishing import PublishFault

__all__ = ["CrashWatch", "crash_fault"]


def crash_fault(reason: BaseException) -> PublishFault:
    """The fault a crash stops the worker with: its cause names the crash's exception."""
    return PublishFault(
        reason, f"a Faust service crashed with {type(reason).__name__}: {reason}",
        "nothing past the last commit is committed: the restarted worker replays its input "
        "from there; if it repeats, check that the brokers can be reached from the worker")


class CrashWatch:
    """Calls ``fail(crash_fault(reason))`` once ``service`` (mode's worker) has crashed."""

    def __init__(self, service: Any, fail: Callable[[BaseException], NoReturn],
                 interval: float = 0.5) -> None:
        self.service = service
        self.fail = fail
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="toolwire-crash-watch",
                                        daemon=True)

    def start(self) -> CrashWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def reason(self) -> BaseException | None:
        """The crash's reason, once the service has crashed (else ``None``)."""
        if not self.service.crashed:
            return None
        reason = getattr(self.service, "crash_reason", None)
        return reason if isinstance(reason, BaseException) else RuntimeError(
            "a service crashed without a reason")

    def check(self) -> None:
        """Fail now if the service has crashed."""
        reason = self.reason()
        if reason is not None:
            self.fail(crash_fault(reason))

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            reason = self.reason()
            if reason is not None:
                self._stop.set()  # once: the worker's fail does not return
                self.fail(crash_fault(reason))
