"""Coalescing: fewer messages, the same bytes in the same order, and the same guarantees.

The rules are tested on :class:`Coalescer` with made-up clocks (exact, no sleeping); the
timer-driven loop of ``publish_stream`` with a fake producer and real, short sleeps (the
bounds leave room for a loaded machine); and one broker test checks that a coalesced capture
reads back as the input contract says and assembles to the same response.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
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
from toolwire.publish.publisher import Coalescer
from toolwire.stream.messages import H_CHUNK_SEQ, H_END, H_REQUEST_ID

MS = 0.001


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
    """Records what ``publish_stream`` sends and when; ``fail`` makes chosen sends raise."""

    def __init__(self, fail: set[int] | None = None) -> None:
        self.sent: list[Sent] = []
        self.calls = 0
        self.fail = fail or set()

    async def send(self, topic: str, *, value: bytes, key: bytes,
                   headers: list[tuple[str, bytes]]) -> asyncio.Future[Any]:
        call, self.calls = self.calls, self.calls + 1
        if call in self.fail:
            raise RuntimeError(f"send {call} refused")
        self.sent.append(Sent(time.monotonic(), value, dict(headers)))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(SimpleNamespace(partition=0, offset=len(self.sent) - 1))
        return future

    @property
    def data(self) -> list[bytes]:
        return [s.value for s in self.sent if H_END not in s.headers]

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


async def paced(pieces: Sequence[bytes], gap: float,
                arrivals: list[float] | None = None) -> AsyncIterator[bytes]:
    for n, piece in enumerate(pieces):
        if n:
            await asyncio.sleep(gap)
        if arrivals is not None:
            arrivals.append(time.monotonic())
        yield piece


def publish(producer: FakeProducer, body: AsyncIterator[bytes], *, end: bool = True,
            **coalescing: Any) -> PublishReport:
    async def run() -> PublishReport:
        publisher = ChunkPublisher(producer, "topic", **coalescing)
        return await publisher.publish_stream(RequestMeta("req"), body, end=end)
    return asyncio.run(run())


PIECES = [f"data: {n}\n\n".encode() for n in range(8)]
BODY = b"".join(PIECES)


def test_paced_5_ms_apart_in_a_20_ms_window_makes_few_messages() -> None:
    producer = FakeProducer()
    report = publish(producer, paced(PIECES, 0.005), coalesce_ms=20)
    producer.check(BODY, "eof")
    # 8 slices over ~35 ms: 2 windows when the sleeps are on time, a few more on a loaded
    # machine, never one message per slice.
    assert len(producer.data) <= 4
    assert report.chunks == len(producer.data) and report.bytes == len(BODY)
    assert report.end == "eof" and report.messages == len(producer.sent)


def test_paced_50_ms_apart_in_a_20_ms_window_sends_every_slice_alone() -> None:
    producer = FakeProducer()
    report = publish(producer, paced(PIECES[:4], 0.05), coalesce_ms=20)
    producer.check(b"".join(PIECES[:4]), "eof")
    assert producer.data == PIECES[:4]
    assert report.chunks == 4


def test_coalescing_off_sends_one_message_per_slice_at_once() -> None:
    producer = FakeProducer()
    report = publish(producer, paced([b"a", b"", b"b", b"c"], 0))
    producer.check(b"abc", "eof")
    assert producer.data == [b"a", b"b", b"c"] and report.chunks == 3


def test_a_window_elapses_while_the_body_is_quiet() -> None:
    """The buffer goes out on the timer, not when the next slice happens to come."""
    producer = FakeProducer()
    released = asyncio.Event()
    yielded: list[float] = []

    async def quiet() -> AsyncIterator[bytes]:
        yielded.append(time.monotonic())
        yield b"data: 1\n\n"
        await released.wait()
        yield b"data: 2\n\n"

    async def run() -> PublishReport:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=20)
        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), quiet()))
        async with asyncio.timeout(2):  # without the timer, nothing would ever be sent
            while not producer.sent:
                await asyncio.sleep(0.001)
        released.set()
        return await task

    report = asyncio.run(run())
    producer.check(b"data: 1\n\ndata: 2\n\n", "eof")
    assert producer.data == [b"data: 1\n\n", b"data: 2\n\n"] and report.chunks == 2
    delay = producer.sent[0].at - yielded[0]
    assert 0.019 <= delay < 0.5, f"sent {delay * 1000:.1f} ms after it arrived"


def test_the_cap_and_an_oversized_slice_in_a_live_stream() -> None:
    producer = FakeProducer()
    big = b"x" * 50
    pieces = [b"aaaa", b"bbbb", b"cccc", big, b"dd"]
    report = publish(producer, paced(pieces, 0), coalesce_ms=1000, coalesce_bytes=10)
    producer.check(b"".join(pieces), "eof")
    assert producer.data == [b"aaaabbbb", b"cccc", big, b"dd"]
    assert report.chunks == 4 and report.bytes == len(b"".join(pieces))


def test_end_false_still_sends_what_is_buffered() -> None:
    producer = FakeProducer()
    report = publish(producer, paced([b"a", b"b"], 0), end=False, coalesce_ms=1000)
    producer.check(b"ab", None)
    assert producer.data == [b"ab"] and report.end is None and report.messages == 1


def test_a_body_that_raises_sends_its_buffer_then_the_error_marker() -> None:
    producer = FakeProducer()

    async def failing() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        yield b"data: 2\n\n"
        raise ConnectionResetError("upstream reset")

    with pytest.raises(ConnectionResetError, match="upstream reset"):
        publish(producer, failing(), coalesce_ms=10_000)
    producer.check(b"data: 1\n\ndata: 2\n\n", "error")
    assert len(producer.sent) == 2


def test_a_cancelled_stream_sends_its_buffer_then_the_cancelled_marker() -> None:
    producer = FakeProducer()
    reached = asyncio.Event()
    closed: list[bool] = []

    async def stalled() -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            yield b"data: 2\n\n"
            reached.set()
            await asyncio.Event().wait()  # the upstream never sends another byte
            yield b"never"
        finally:
            closed.append(True)

    async def run() -> None:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=10_000)
        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), stalled()))
        await asyncio.wait_for(reached.wait(), 2)
        await asyncio.sleep(0.01)
        assert not producer.sent, "still inside the window"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # let the abandoned read see its cancellation

    asyncio.run(run())
    producer.check(b"data: 1\n\ndata: 2\n\n", "cancelled")
    assert len(producer.sent) == 2
    assert closed == [True], "the body was cancelled, as it would be without coalescing"


def test_a_slice_read_as_the_cancellation_comes_is_not_lost() -> None:
    producer = FakeProducer()

    async def run() -> None:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=10_000)
        task: asyncio.Task[PublishReport] | None = None

        async def body() -> AsyncIterator[bytes]:
            yield b"data: 1\n\n"
            assert task is not None
            task.cancel()  # lands together with the slice below
            yield b"data: 2\n\n"
            await asyncio.Event().wait()
            yield b"never"

        task = asyncio.create_task(publisher.publish_stream(RequestMeta("req"), body()))
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    producer.check(b"data: 1\n\ndata: 2\n\n", "cancelled")


def test_a_timeout_around_the_publish_flushes_then_marks_cancelled() -> None:
    producer = FakeProducer()

    async def slow() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        await asyncio.sleep(60)
        yield b"never"

    async def run() -> None:
        publisher = ChunkPublisher(producer, "t", coalesce_ms=10_000)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await publisher.publish_stream(RequestMeta("req"), slow())

    asyncio.run(run())
    producer.check(b"data: 1\n\n", "cancelled")


def test_a_refused_send_is_retried_before_the_error_marker() -> None:
    """A message leaves the buffer only once enqueued, so nothing is skipped over; the
    body is not read any further once the producer failed."""
    producer = FakeProducer(fail={1})
    with pytest.raises(RuntimeError, match="send 1 refused"):
        publish(producer, paced([b"aaaa", b"bbbb", b"cccc"], 0), coalesce_ms=1000,
                coalesce_bytes=4)
    producer.check(b"aaaabbbb", "error")
    assert producer.data == [b"aaaa", b"bbbb"]


def test_a_dead_producer_loses_the_buffer_without_a_hole_and_logs_no_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    producer = FakeProducer(fail=set(range(1, 100)))
    secret = b"sk-very-secret-argument"
    with caplog.at_level(logging.WARNING, "toolwire.publish"), \
            pytest.raises(RuntimeError, match="send 1 refused") as raised:
        publish(producer, paced([b"aaaa", secret, b"cccc"], 0), coalesce_ms=1000,
                coalesce_bytes=4)
    assert producer.data == [b"aaaa"], "what went out is a prefix of the body"
    assert any("marker was not delivered" in note for note in raised.value.__notes__)
    assert "buffered body bytes were not sent" in caplog.text
    assert secret.decode() not in caplog.text and "cccc" not in caplog.text


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
