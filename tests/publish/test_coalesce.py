"""Coalescing: fewer messages, the same bytes in the same order, and the same guarantees.

The rules are tested on :class:`Coalescer` with made-up clocks (exact, no sleeping); the
timer-driven loop of ``publish_stream`` with a fake producer and a :class:`FakeClock` passed
as the publisher's ``clock``, so that a window closes when the test advances that clock and
every assertion is about which bytes went in which message, in order, at which fake time
(nothing depends on how fast a busy machine runs). Two tests run on the loop's real clock
and assert only order and content, printing the timing they saw (``pytest -s``). The broker
tests check that a coalesced capture reads back as the input contract says and assembles to
the same response.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence, Sized
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.captures import CAPTURES
from tests.publish.test_publisher import (
    SINGLE_CALL,
    Msg,
    check_request,
    consume,
    main,
    new_topic,
)
from toolwire.cli.publish import COALESCE_BYTES_HELP_DEFAULT
from toolwire.core import assemble
from toolwire.publish import (
    DEFAULT_COALESCE_BYTES,
    ChunkPublisher,
    PublishReport,
    RequestMeta,
    split_events,
)
from toolwire.publish._coalescing import Coalescer
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_REQUEST_ID

MS = 0.001
T = TypeVar("T")


def feed(c: Coalescer, timed: Sequence[tuple[float, bytes]], unit: float = MS) -> list[bytes]:
    """Messages ``c`` makes of slices arriving at the given times (in ``unit`` seconds),
    sealed at the end."""
    out: list[bytes] = []
    for at, piece in timed:
        c.add(piece, at * unit)
        out += c.ready
        c.ready.clear()
    c.seal()
    return out + list(c.ready)


# --------------------------------------------------------------------------- Coalescer


def test_slices_5_ms_apart_share_a_20_ms_window() -> None:
    c = Coalescer(20 * MS, 1000)
    got = feed(c, [(0, b"a"), (5, b"b"), (10, b"c"), (15, b"d"), (20, b"e"), (25, b"f")])
    # The window opened at 0 ends at 20: a slice arriving exactly then opens the next one.
    assert got == [b"abcd", b"ef"]


def test_slices_50_ms_apart_each_go_alone() -> None:
    c = Coalescer(20 * MS, 1000)
    assert feed(c, [(0, b"a"), (50, b"b"), (100, b"c")]) == [b"a", b"b", b"c"]


def test_the_window_is_timed_from_its_first_slice_not_the_last() -> None:
    c = Coalescer(20 * MS, 1000)
    c.add(b"a", 0)
    assert c.deadline == pytest.approx(20 * MS)
    c.add(b"b", 19 * MS)
    assert c.deadline == pytest.approx(20 * MS), "a later slice does not extend the window"
    c.expire(19.9 * MS)
    assert not c.ready and c.buffered == 2
    c.expire(20 * MS)
    assert list(c.ready) == [b"ab"] and c.buffered == 0 and c.deadline is None


def test_the_cap_sends_the_buffer_before_the_slice_that_would_overflow_it() -> None:
    c = Coalescer(1000 * MS, 10)
    got = feed(c, [(0, b"aaaa"), (1, b"bbbb"), (2, b"cccc"), (3, b"dd")])
    assert got == [b"aaaabbbb", b"ccccdd"]
    assert all(len(m) <= 10 for m in got)


def test_a_buffer_that_reaches_the_cap_goes_at_once() -> None:
    c = Coalescer(1000 * MS, 8)
    c.add(b"aaaa", 0)
    c.add(b"bbbb", 1 * MS)
    assert list(c.ready) == [b"aaaabbbb"] and c.deadline is None


def test_an_oversized_slice_goes_alone_and_unsplit() -> None:
    c = Coalescer(1000 * MS, 8)
    big = b"x" * 20
    assert feed(c, [(0, b"ab"), (1, big), (2, b"cd"), (3, b"ef")]) == [b"ab", big, b"cdef"]


def test_empty_slices_neither_open_a_window_nor_make_a_message() -> None:
    c = Coalescer(20 * MS, 100)
    c.add(b"", 0)
    assert c.deadline is None
    assert feed(c, [(0, b""), (1, b"a"), (2, b""), (30, b"")]) == [b"a"]


def test_bad_settings_are_refused() -> None:
    for window, cap in ((-1.0, 10), (float("nan"), 10), (1.0, 0)):
        with pytest.raises(ValueError):
            Coalescer(window, cap)


# No deadline: Hypothesis would otherwise fail an example that a busy machine ran slowly.
@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.binary(max_size=30)), max_size=40),
       st.integers(1, 25), st.integers(1, 64))
def test_any_arrival_pattern_keeps_bytes_order_cap_and_window(
    gaps: list[tuple[int, bytes]], window_ms: int, cap: int,
) -> None:
    timed: list[tuple[float, bytes]] = []
    at = 0
    for gap, piece in gaps:
        at += gap
        timed.append((at, piece))
    # Whole milliseconds as the clock's unit, so that the float rounding of a ms-to-s
    # conversion cannot move a slice across a window's end.
    got = feed(Coalescer(window_ms, cap), timed, unit=1)
    assert b"".join(got) == b"".join(p for _, p in timed)
    assert all(got), "no empty message"
    # Walk the slices through the messages: each message is whole slices, all of them
    # arriving within the window of its first, and over the cap only as one lone slice.
    slices = [(t, p) for t, p in timed if p]
    i = 0
    for message in got:
        first_at = slices[i][0]
        joined, parts = b"", 0
        while joined != message:
            t, p = slices[i]
            assert t < first_at + window_ms, "slice joined after its window elapsed"
            joined += p
            parts += 1
            i += 1
            assert message.startswith(joined), "a message boundary fell inside a slice"
        assert len(message) <= cap or parts == 1
        if i < len(slices):
            nxt_at, nxt = slices[i]
            assert (nxt_at >= first_at + window_ms or len(message) + len(nxt) > cap), \
                "the next slice could have joined this message"
    assert i == len(slices)


# --------------------------------------------------------------------------- fake time


class FakeTimer:
    """One ``call_at`` of :class:`FakeClock`; ``sleep`` marks its own timers as such."""

    def __init__(self, when: float, callback: Callable[[], object], sleep: bool) -> None:
        self.when = when
        self.callback = callback
        self.sleep = sleep
        self.cancelled = False
        self.fired = False

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def armed(self) -> bool:
        return not (self.cancelled or self.fired)


async def settle() -> None:
    """Run the loop until every other task waits (on the fake clock, an event, a future).

    Exact, not a guess at how many turns a reaction takes: CPython's loop keeps the
    callbacks that can run in ``_ready``, so when it is empty while this task runs, nothing
    else can run until the fake clock moves or the test acts. (Nothing in these tests waits
    on real I/O or on the loop's own timers.)
    """
    loop = asyncio.get_running_loop()
    ready: Sized | None = getattr(loop, "_ready", None)
    assert ready is not None, "settle() needs CPython's asyncio event loop"
    for _ in range(100_000):
        await asyncio.sleep(0)
        if not ready:
            return
    raise AssertionError("the tasks never settle: something keeps rescheduling itself")


class FakeClock:
    """A :class:`CoalescingClock` whose time moves only when the test moves it.

    ``advance`` runs the timers that fall due one by one, in order, each at its own time and
    with the loop settled after it, as a real loop would; a timer set for a time already
    reached runs at the loop's next iteration, also like a real loop. ``sleep`` is the body's
    way of pausing in this time.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[FakeTimer] = []  # every timer ever set, oldest first

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], object], /,
                sleep: bool = False) -> FakeTimer:
        timer = FakeTimer(when, callback, sleep)
        self.timers.append(timer)
        if when <= self.now:
            asyncio.get_running_loop().call_soon(self._fire, timer)
        return timer

    def _fire(self, timer: FakeTimer) -> None:
        if timer.armed:
            timer.fired = True
            timer.callback()

    @property
    def armed(self) -> list[FakeTimer]:
        return [t for t in self.timers if t.armed]

    @property
    def windows(self) -> list[FakeTimer]:
        """The publisher's timers (every ``call_at`` that is not a body's sleep)."""
        return [t for t in self.timers if not t.sleep]

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self.now + seconds)

    async def advance_to(self, when: float) -> None:
        await settle()  # what is due now first: time moves only once every task waits
        while due := [t for t in self.armed if t.when <= when]:
            timer = min(due, key=lambda t: t.when)  # the oldest of equals: min is stable
            self.now = max(self.now, timer.when)
            self._fire(timer)
            await settle()
        self.now = max(self.now, when)
        await settle()

    async def sleep(self, seconds: float) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        timer = self.call_at(self.now + seconds, wake, sleep=True)
        try:
            await done
        finally:
            timer.cancel()

    async def run(self, aw: Awaitable[T]) -> T:
        """Await ``aw``, jumping to the next timer whenever every task waits (no real sleep)."""
        task = asyncio.ensure_future(aw)
        while True:
            await settle()
            if task.done():
                return task.result()
            armed = self.armed
            assert armed, "stuck: every task waits and no timer is set"
            await self.advance_to(min(t.when for t in armed))


# --------------------------------------------------------------------------- publish_stream


@dataclass
class Sent:
    at: float
    value: bytes
    headers: dict[str, bytes]

    @property
    def seq(self) -> int:
        return int(self.headers[H_CHUNK_SEQ])


class FakeProducer:
    """Records what ``publish_stream`` sends and when (on ``clock``, the real monotonic clock
    without one); ``fail`` makes chosen sends raise."""

    def __init__(self, fail: set[int] | None = None, clock: FakeClock | None = None) -> None:
        self.sent: list[Sent] = []
        self.calls = 0
        self.fail = fail or set()
        self.time = time.monotonic if clock is None else clock.time

    async def send(self, topic: str, *, value: bytes, key: bytes,
                   headers: list[tuple[str, bytes]]) -> asyncio.Future[Any]:
        call, self.calls = self.calls, self.calls + 1
        if call in self.fail:
            raise RuntimeError(f"send {call} refused")
        self.sent.append(Sent(self.time(), value, dict(headers)))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(SimpleNamespace(partition=0, offset=len(self.sent) - 1))
        return future

    @property
    def data(self) -> list[bytes]:
        return [s.value for s in self.sent if H_END not in s.headers]

    @property
    def times(self) -> list[float]:
        return [s.at for s in self.sent]

    def check(self, body: bytes, end: str | None) -> None:
        """Contiguous seq from 0, non-empty values making up ``body``, then the marker."""
        assert [s.seq for s in self.sent] == list(range(len(self.sent)))
        assert all(s.headers[H_REQUEST_ID] == b"req" for s in self.sent)
        assert b"".join(s.value for s in self.sent) == body
        data = self.sent if end is None else self.sent[:-1]
        assert all(s.value and H_END not in s.headers for s in data)
        if end is not None:
            assert self.sent[-1].headers[H_END] == end.encode()
            assert self.sent[-1].value == b""


async def paced(pieces: Sequence[bytes], gap: float, arrivals: list[float] | None = None,
                clock: FakeClock | None = None) -> AsyncIterator[bytes]:
    """``pieces`` ``gap`` seconds apart: in ``clock``'s time, or in real time without one."""
    for n, piece in enumerate(pieces):
        if n:
            await (asyncio.sleep(gap) if clock is None else clock.sleep(gap))
        if arrivals is not None:
            arrivals.append(time.monotonic() if clock is None else clock.time())
        yield piece


def publish(producer: FakeProducer, body: AsyncIterator[bytes], *, end: bool = True,
            clock: FakeClock | None = None, **coalescing: Any) -> PublishReport:
    """One ``publish_stream``; with ``clock``, in its fake time, driven by :meth:`FakeClock.run`."""
    async def run() -> PublishReport:
        publisher = ChunkPublisher(producer, "topic", clock=clock, **coalescing)
        publishing = publisher.publish_stream(RequestMeta("req"), body, end=end)
        return await (publishing if clock is None else clock.run(publishing))
    return asyncio.run(run())


PIECES = [f"data: {n}\n\n".encode() for n in range(8)]
BODY = b"".join(PIECES)
D1, D2, D3 = b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"


def test_slices_6_ms_apart_in_a_20_ms_window_make_one_message_per_window() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    arrivals: list[float] = []
    report = publish(producer, paced(PIECES, 0.006, arrivals, clock), clock=clock,
                     coalesce_ms=20)
    producer.check(BODY, "eof")
    assert arrivals == pytest.approx([0.006 * n for n in range(8)])
    # Slices at 0, 6, 12, 18 ms share the window opened at 0; it closes on its timer at 20
    # (the next slice comes at 24); 24..42 share the next window, which the end closes.
    assert producer.data == [b"".join(PIECES[:4]), b"".join(PIECES[4:])]
    assert producer.times == pytest.approx([0.020, 0.042, 0.042])
    # Each window is timed from its first slice; later slices do not move its end.
    assert sorted({t.when for t in clock.windows}) == pytest.approx([0.020, 0.044])
    assert not clock.armed, "no timer left behind"
    assert report.chunks == 2 and report.bytes == len(BODY)
    assert report.end == "eof" and report.messages == len(producer.sent) == 3


def test_slices_50_ms_apart_in_a_20_ms_window_each_go_alone_on_the_timer() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    report = publish(producer, paced(PIECES[:4], 0.05, clock=clock), clock=clock,
                     coalesce_ms=20)
    producer.check(b"".join(PIECES[:4]), "eof")
    assert producer.data == PIECES[:4]
    # Each sent by its window's timer 20 ms after it arrived; the last by the end of the body.
    assert producer.times == pytest.approx([0.020, 0.070, 0.120, 0.150, 0.150])
    assert report.chunks == 4 and not clock.armed


def test_coalescing_off_sends_one_message_per_slice_at_once() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    report = publish(producer, paced([b"a", b"", b"b", b"c"], 0), clock=clock)
    producer.check(b"abc", "eof")
    assert producer.data == [b"a", b"b", b"c"] and report.chunks == 3
    assert not clock.timers, "no window, so no timer"


def test_a_window_closes_on_its_timer_while_the_body_is_quiet() -> None:
    """The buffer goes out when the clock reaches the window's end, not when the next slice
    happens to come: the body stays silent until the test has seen the message."""
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    released = asyncio.Event()
    arrivals: list[float] = []

    async def quiet() -> AsyncIterator[bytes]:
        arrivals.append(clock.time())
        yield D1
        await released.wait()
        arrivals.append(clock.time())
        yield D2

    async def run() -> PublishReport:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=20, clock=clock)
        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), quiet()))
        await settle()
        assert not producer.sent and [t.when for t in clock.armed] == [0.020]
        await clock.advance(0.019)
        assert not producer.sent, "the window is still open 19 ms in"
        await clock.advance(0.001)
        assert producer.data == [D1], "closed by its timer, the body still quiet"
        assert not clock.armed, "no window is open, so no timer is set"
        await clock.advance(0.005)
        released.set()
        return await task  # the rest needs no timer: the end closes the second window

    report = asyncio.run(run())
    producer.check(D1 + D2, "eof")
    assert producer.data == [D1, D2] and report.chunks == 2
    assert arrivals == pytest.approx([0.0, 0.025])
    assert producer.sent[0].at - arrivals[0] == pytest.approx(0.020), \
        "the delay is exactly the window: the clock's advance"
    assert producer.times[1:] == pytest.approx([0.025, 0.025])
    assert not clock.armed


def test_the_loops_own_clock_closes_a_quiet_window() -> None:
    """The default clock (the running loop's) drives the same timer in real time. Only the
    order and the content are asserted; the real delay is reported (``pytest -s``)."""
    producer = FakeProducer()
    released = asyncio.Event()
    yielded: list[float] = []

    async def quiet() -> AsyncIterator[bytes]:
        yielded.append(time.monotonic())
        yield D1
        await released.wait()
        yield D2

    async def run() -> PublishReport:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=20)
        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), quiet()))
        # A guard against a hang, not a bound on the window: the timer is due after 20 ms.
        async with asyncio.timeout(10):
            while not producer.sent:
                await asyncio.sleep(0.001)
        released.set()  # only now: the first message went out while the body was quiet
        return await task

    report = asyncio.run(run())
    producer.check(D1 + D2, "eof")
    assert producer.data == [D1, D2] and report.chunks == 2
    print(f"\nloop clock: a 20 ms window closed {(producer.sent[0].at - yielded[0]) * 1000:.1f}"
          " ms after its slice arrived")


def test_real_time_pacing_keeps_the_slices_whole_and_in_order() -> None:
    """Real 5 ms sleeps in a 20 ms window: how many messages they make depends on the
    machine, so that is reported; that they are whole slices, in order, is asserted."""
    producer = FakeProducer()
    report = publish(producer, paced(PIECES, 0.005), coalesce_ms=20)
    producer.check(BODY, "eof")
    rest = list(PIECES)
    for message in producer.data:
        joined = b""
        while joined != message:
            joined += rest.pop(0)
            assert message.startswith(joined), "a message boundary fell inside a slice"
    assert not rest and report.chunks == len(producer.data) and report.bytes == len(BODY)
    print(f"\nreal time: 8 slices 5 ms apart in a 20 ms window made {report.chunks} messages")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 40), st.binary(max_size=30)), max_size=30),
       st.integers(1, 25), st.integers(1, 64))
def test_the_live_loop_makes_exactly_the_messages_the_rules_make(
    gaps: list[tuple[int, bytes]], window_ms: int, cap: int,
) -> None:
    """``publish_stream`` in fake time against :class:`Coalescer` fed the same arrivals."""
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    arrivals: list[float] = []

    async def body() -> AsyncIterator[bytes]:
        for gap, piece in gaps:
            await clock.sleep(gap * MS)
            arrivals.append(clock.time())
            yield piece

    publish(producer, body(), clock=clock, coalesce_ms=window_ms, coalesce_bytes=cap)
    expected = feed(Coalescer(window_ms / 1000, cap),
                    list(zip(arrivals, (p for _, p in gaps), strict=True)), unit=1)
    producer.check(b"".join(p for _, p in gaps), "eof")
    assert producer.data == expected
    assert not clock.armed


def test_the_cap_and_an_oversized_slice_in_a_live_stream() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    big = b"x" * 50
    pieces = [b"aaaa", b"bbbb", b"cccc", big, b"dd"]
    report = publish(producer, paced(pieces, 0, clock=clock), clock=clock,
                     coalesce_ms=1000, coalesce_bytes=10)
    producer.check(b"".join(pieces), "eof")
    assert producer.data == [b"aaaabbbb", b"cccc", big, b"dd"]
    assert producer.times == [0.0] * 5, "the cap and the end sent them, not a timer"
    assert report.chunks == 4 and report.bytes == len(b"".join(pieces))
    assert not clock.armed


def test_end_false_still_sends_what_is_buffered() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    report = publish(producer, paced([b"a", b"b"], 0, clock=clock), end=False, clock=clock,
                     coalesce_ms=1000)
    producer.check(b"ab", None)
    assert producer.data == [b"ab"] and report.end is None and report.messages == 1
    assert producer.times == [0.0] and not clock.armed


def test_a_body_that_raises_sends_its_buffer_then_the_error_marker() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)

    async def failing() -> AsyncIterator[bytes]:
        yield D1
        await clock.sleep(0.025)
        yield D2
        await clock.sleep(0.005)
        yield D3
        raise ConnectionResetError("upstream reset")

    with pytest.raises(ConnectionResetError, match="upstream reset"):
        publish(producer, failing(), clock=clock, coalesce_ms=20)
    producer.check(D1 + D2 + D3, "error")
    # D1's window closed on its timer; D2 and D3 were still buffered when the body failed
    # at 30 ms, inside their window (open until 45 ms), and go out before the marker.
    assert producer.data == [D1, D2 + D3]
    assert producer.times == pytest.approx([0.020, 0.030, 0.030])
    assert not clock.armed


def test_a_cancelled_stream_sends_its_buffer_then_the_cancelled_marker() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    reached = asyncio.Event()
    closed: list[bool] = []

    async def stalled() -> AsyncIterator[bytes]:
        try:
            yield D1
            await clock.sleep(0.030)
            yield D2
            yield D3
            reached.set()
            await asyncio.Event().wait()  # the upstream never sends another byte
            yield b"never"
        finally:
            closed.append(True)

    async def run() -> None:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=20, clock=clock)
        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), stalled()))
        await clock.advance(0.030)
        assert reached.is_set() and producer.data == [D1]
        assert [t.when for t in clock.armed] == pytest.approx([0.050]), \
            "D2 and D3 are inside their window"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # let the abandoned read see its cancellation

    asyncio.run(run())
    producer.check(D1 + D2 + D3, "cancelled")
    assert producer.data == [D1, D2 + D3]
    assert producer.times == pytest.approx([0.020, 0.030, 0.030])
    assert closed == [True], "the body was cancelled, as it would be without coalescing"
    assert not clock.armed


def test_a_slice_read_as_the_cancellation_comes_is_not_lost() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)

    async def run() -> None:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=20, clock=clock)
        task: asyncio.Task[PublishReport] | None = None

        async def body() -> AsyncIterator[bytes]:
            yield D1
            assert task is not None
            task.cancel()  # lands together with the slice below
            yield D2
            await asyncio.Event().wait()
            yield b"never"

        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), body()))
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    producer.check(D1 + D2, "cancelled")
    assert producer.data == [D1 + D2], "both inside the window: one message, before the marker"
    assert not clock.armed


def test_a_timeout_around_the_publish_flushes_then_marks_cancelled() -> None:
    clock = FakeClock()
    producer = FakeProducer(clock=clock)
    reached = asyncio.Event()

    async def slow() -> AsyncIterator[bytes]:
        yield D1
        yield D2
        reached.set()
        await asyncio.Event().wait()
        yield b"never"

    async def run() -> None:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=20, clock=clock)

        async def expire(timeout: asyncio.Timeout) -> None:
            await reached.wait()
            await settle()
            timeout.reschedule(asyncio.get_running_loop().time())  # due now

        with pytest.raises(TimeoutError):
            async with asyncio.timeout(None) as timeout:
                expiring = asyncio.create_task(expire(timeout))
                await publisher.publish_stream(RequestMeta("req"), slow())
        await expiring

    asyncio.run(run())
    producer.check(D1 + D2, "cancelled")
    assert producer.data == [D1 + D2] and not clock.armed


def test_a_refused_send_is_retried_before_the_error_marker() -> None:
    """A message leaves the buffer only once enqueued, so nothing is skipped over; the
    body is not read any further once the producer failed."""
    clock = FakeClock()
    producer = FakeProducer(fail={1}, clock=clock)
    with pytest.raises(RuntimeError, match="send 1 refused"):
        publish(producer, paced([b"aaaa", b"bbbb", b"cccc"], 0, clock=clock), clock=clock,
                coalesce_ms=1000, coalesce_bytes=4)
    producer.check(b"aaaabbbb", "error")
    assert producer.data == [b"aaaa", b"bbbb"]


def test_a_dead_producer_loses_the_buffer_without_a_hole_and_logs_no_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    producer = FakeProducer(fail=set(range(1, 100)), clock=clock)
    secret = b"sk-very-secret-argument"
    with caplog.at_level(logging.WARNING, "toolwire.publish"), \
            pytest.raises(RuntimeError, match="send 1 refused") as raised:
        publish(producer, paced([b"aaaa", secret, b"cccc"], 0, clock=clock), clock=clock,
                coalesce_ms=1000, coalesce_bytes=4)
    assert producer.data == [b"aaaa"], "what went out is a prefix of the body"
    assert any("marker was not delivered" in note for note in raised.value.__notes__)
    assert "buffered body bytes were not sent" in caplog.text
    assert secret.decode() not in caplog.text and "cccc" not in caplog.text


def test_a_clock_without_a_timer_is_refused() -> None:
    with pytest.raises(TypeError, match="call_at"):
        ChunkPublisher(FakeProducer(), "t", coalesce_ms=20,
                       clock=SimpleNamespace(time=time.monotonic))


@pytest.mark.parametrize(("options", "match"), [
    ({"coalesce_ms": -1}, "coalesce_ms"),
    ({"coalesce_ms": float("nan")}, "coalesce_ms"),
    ({"coalesce_ms": float("inf")}, "coalesce_ms"),
    ({"coalesce_bytes": 0}, "coalesce_bytes must be at least 1"),
    ({"coalesce_bytes": -5}, "coalesce_bytes must be at least 1"),
])
def test_bad_coalescing_arguments_are_refused_before_connecting(
    options: dict[str, Any], match: str,
) -> None:
    with pytest.raises(ValueError, match=match):
        ChunkPublisher("127.0.0.1:1", "t", **options)


def test_the_defaults_are_off_and_64_kib() -> None:
    publisher = ChunkPublisher("127.0.0.1:1", "t")
    assert publisher.coalesce_ms == 0
    assert publisher.coalesce_bytes == DEFAULT_COALESCE_BYTES == COALESCE_BYTES_HELP_DEFAULT


# --------------------------------------------------------------------------- CLI


def test_help_explains_the_trade_off(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for words in ("--coalesce-ms", "--coalesce-bytes", "latency", "fewer",
                  f"default {DEFAULT_COALESCE_BYTES}"):
        assert words in out


@pytest.mark.parametrize("argv", [
    ["--coalesce-ms", "-1"], ["--coalesce-ms", "nan"], ["--coalesce-ms", "soon"],
    ["--coalesce-bytes", "0"], ["--coalesce-bytes", "1.5"],
])
def test_cli_usage_errors_exit_2(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # never contacted
    capture = CAPTURES[0].name + ".sse"
    assert main([capture, "--session", "s", *argv]) == 2
    assert "coalesce" in capsys.readouterr().err


# --------------------------------------------------------------------------- broker


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_paced_capture_coalesced_reads_back_whole_and_assembles_the_same(
    kafka_bootstrap: str,
) -> None:
    capture = max(CAPTURES, key=lambda c: len(split_events(c.body)))
    pieces = split_events(capture.body)

    async def scenario() -> tuple[PublishReport, list[Msg]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic, coalesce_ms=20) as pub:
            report = await pub.publish_stream(RequestMeta("req-co", "sess-co"),
                                              paced(pieces, 0.005))
        return report, await consume(kafka_bootstrap, topic)

    report, msgs = asyncio.run(scenario())
    check_request(msgs, request_id="req-co", key="sess-co", body=capture.body, end="eof")
    values = [m.value for m in msgs[:-1]]
    assert len(values) < len(pieces), f"{len(values)} messages for {len(pieces)} slices"
    assert report.chunks == len(values) and report.bytes == len(capture.body)
    # Downstream sees the same response: assembled from the messages as the worker reads
    # them, or from their concatenation, it is the record of the original body.
    whole = assemble(capture.body, capture.options)
    assert assemble(b"".join(values), capture.options) == whole
    assert assemble(values, capture.options) == whole
    assert not capture.mismatches(whole)


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_cli_coalesces_a_sliced_capture_up_to_the_cap(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = asyncio.run(new_topic(kafka_bootstrap))
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("TOOLWIRE_TOPIC_CHUNKS", topic)
    path = SINGLE_CALL
    body = path.read_bytes()
    assert main([str(path), "--session", "sc", "--request", "rc", "--slice", "7",
                 "--coalesce-ms", "10000", "--coalesce-bytes", "500"]) == 0
    msgs = asyncio.run(consume(kafka_bootstrap, topic))
    check_request(msgs, request_id="rc", key="sc", body=body, end="eof")
    # Within a window this long only the cap ends a message: 7-byte slices fill each to the
    # largest multiple of 7 within it; only the last is shorter.
    assert [len(m.value) for m in msgs[:-2]] == [497] * (len(msgs) - 2)
    assert len(msgs) - 1 == -(-len(body) // 497)
    assert f"rc chunks={len(msgs) - 1} bytes={len(body)} end=eof" in capsys.readouterr().out
