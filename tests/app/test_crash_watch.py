""":class:`toolwire.app.crash.CrashWatch` without Faust: a crashed service makes the worker fail
with the crash named, within the watch's interval; a healthy one never does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import NoReturn, cast

from toolwire.app.crash import CrashWatch, crash_fault
from toolwire.app.publishing import PublishFault


class Service:
    def __init__(self) -> None:
        self.crashed = False
        self.crash_reason: BaseException | None = None


class Failed(Exception):
    pass


def test_a_crash_fails_the_worker_naming_the_crash_within_the_interval() -> None:
    service, failed = Service(), threading.Event()
    faults: list[BaseException] = []

    def fail(exc: BaseException) -> None:  # the worker's never returns (os._exit)
        faults.append(exc)
        failed.set()

    watch = CrashWatch(service, cast(Callable[[BaseException], NoReturn], fail),
                       interval=0.05).start()
    try:
        time.sleep(0.3)
        assert not failed.is_set(), "a healthy service was taken for crashed"
        service.crash_reason = KeyError("UnknownTopicOrPartitionError")
        service.crashed = True
        crashed = time.monotonic()
        assert failed.wait(2.0), "the crash was not seen"
        assert time.monotonic() - crashed < 1.0
        time.sleep(0.3)
    finally:
        watch.stop()
    [fault] = faults  # once
    assert isinstance(fault, PublishFault) and fault.error is service.crash_reason
    assert "a Faust service crashed with KeyError" in fault.cause


def test_check_does_nothing_until_the_service_crashed() -> None:
    service = Service()

    def fail(exc: BaseException) -> NoReturn:
        raise Failed(str(exc))

    watch = CrashWatch(service, fail)
    watch.check()
    service.crashed = True  # mode sets the flag; a reason that is missing is still a crash
    try:
        watch.check()
    except Failed as exc:
        assert "crashed with RuntimeError" in str(exc)
    else:
        raise AssertionError("a crash without a reason was not failed")
    assert crash_fault(ValueError("x")).error_name == "ValueError"
