"""Pushed streams (``ChunkPublisher.open_stream``) against a real broker: the caller feeds
and never waits; the topic gets the input contract; what went wrong is the stream's, counted.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading

import pytest

from tests.publish.test_publisher import (
    CORPUS,
    Msg,
    check_request,
    consume,
    new_topic,
    requests,
)
from toolwire.publish import (
    COMPLETED,
    DROPPED,
    ENDED_WITH_ERROR,
    ChunkPublisher,
    PushStream,
    RequestMeta,
)
from toolwire.stream.messages import END_CANCELLED, END_EOF, END_ERROR

BODY = (CORPUS / "writer_seven_parallel_calls.sse").read_bytes()


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)]


def test_feed_and_close_are_plain_functions_that_return_nothing() -> None:
    """No coroutine, nothing to await: a client's read loop calls them as they are."""
    assert not inspect.iscoroutinefunction(PushStream.feed)
    assert not inspect.iscoroutinefunction(PushStream.close)


@pytest.mark.broker
@pytest.mark.timeout(120)
@pytest.mark.parametrize("coalesce_ms", [0.0, 20.0])
def test_a_pushed_body_reads_back_as_the_contract_says(kafka_bootstrap: str,
                                                        coalesce_ms: float) -> None:
    async def scenario() -> tuple[list[Msg], str, dict[str, int]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic, coalesce_ms=coalesce_ms) as pub:
            stream = pub.open_stream(RequestMeta("req-push", "sess-push", provider="writer"))
            # Every slice fed without yielding to the loop: nothing was sent meanwhile,
            # so feeding did no I/O.
            for piece in pieces(BODY, 50):
                assert stream.feed(piece) is None
            stream.feed(b"")
            stream.close(END_EOF)
            stream.close(END_ERROR)  # the first close wins
            stream.feed(b"late")  # after the close: counted, ignored
            outcome = await stream.done()
            stats = dict(pub.push_stats)
        return await consume(kafka_bootstrap, topic), outcome, stats

    msgs, outcome, stats = asyncio.run(scenario())
    check_request(msgs, request_id="req-push", key="sess-push", body=BODY, end=END_EOF,
                  extra={"provider": b"writer"})
    assert outcome == COMPLETED
    assert stats == {"opened": 1, COMPLETED: 1, "ignored_bytes": 4}
    if coalesce_ms:
        assert len(msgs) < len(pieces(BODY, 50)), "coalesced into fewer messages"


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_stream_whose_queue_overflows_ends_with_error_and_is_counted(
        kafka_bootstrap: str, caplog: pytest.LogCaptureFixture) -> None:
    """Fed faster than it is sent (here: with no chance to send at all), a stream past its
    bound ends with error after what was queued; its neighbour is untouched."""

    async def scenario() -> tuple[list[Msg], str, str, dict[str, int]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic, push_stream_bytes=1000) as pub:
            big = pub.open_stream(RequestMeta("req-big", "sess-big"))
            small = pub.open_stream(RequestMeta("req-small", "sess-small"))
            for piece in pieces(BODY, 100):
                big.feed(piece)
            small.feed(BODY[:500])
            small.close()
            big.close(END_EOF)  # too late: it already ended
            outcomes = await big.done(), await small.done()
            stats = dict(pub.push_stats)
        return await consume(kafka_bootstrap, topic), *outcomes, stats

    with caplog.at_level(logging.WARNING, logger="toolwire.publish"):
        msgs, big, small, stats = asyncio.run(scenario())
    by_request = requests(msgs)
    check_request(by_request["req-big"], request_id="req-big", key="sess-big",
                  body=BODY[:1000], end=END_ERROR)
    check_request(by_request["req-small"], request_id="req-small", key="sess-small",
                  body=BODY[:500], end=END_EOF)
    assert (big, small) == (ENDED_WITH_ERROR, COMPLETED)
    assert stats["overflowed"] == 1 and stats[ENDED_WITH_ERROR] == 1
    assert stats["ignored_bytes"] == len(BODY) - 1000
    assert "req-big" in caplog.text and "overflowed" in caplog.text
    assert "req-small" not in caplog.text
    assert b"get_weather" not in caplog.text.encode(), "never the body in a log line"


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_the_publishers_bound_holds_all_its_streams_together(kafka_bootstrap: str) -> None:
    async def scenario() -> tuple[list[str], dict[str, int]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic, push_stream_bytes=1000,
                                  push_total_bytes=2500) as pub:
            streams = [pub.open_stream(RequestMeta(f"r{n}", f"s{n}")) for n in range(3)]
            for stream in streams:
                stream.feed(BODY[:900])  # 2,700 bytes together: the third does not fit
            for stream in streams:
                stream.close()
            outcomes = [await s.done() for s in streams]
            # Sent, the bytes are given back: a new stream fits again.
            again = pub.open_stream(RequestMeta("r3", "s3"))
            again.feed(BODY[:900])
            again.close()
            outcomes.append(await again.done())
            return outcomes, dict(pub.push_stats)

    outcomes, stats = asyncio.run(scenario())
    assert outcomes == [COMPLETED, COMPLETED, ENDED_WITH_ERROR, COMPLETED]
    assert stats["overflowed"] == 1


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_feeds_from_another_thread_reach_the_topic_in_order(kafka_bootstrap: str) -> None:
    """A sync client's tee feeds from the client's thread, not the loop's."""

    async def scenario() -> list[Msg]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            stream = pub.open_stream(RequestMeta("req-thread", "sess-thread"))

            def client() -> None:
                for piece in pieces(BODY, 33):
                    stream.feed(piece)
                stream.close(END_EOF)

            thread = threading.Thread(target=client)
            thread.start()
            assert await stream.done() == COMPLETED
            thread.join(10)
        return await consume(kafka_bootstrap, topic)

    msgs = asyncio.run(scenario())
    check_request(msgs, request_id="req-thread", key="sess-thread", body=BODY, end=END_EOF)


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_streams_left_open_are_ended_cancelled_when_the_publisher_stops(
        kafka_bootstrap: str) -> None:
    async def scenario() -> tuple[list[Msg], PushStream, dict[str, int]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            stream = pub.open_stream(RequestMeta("req-open", "sess-open"))
            stream.feed(BODY[:200])
            await asyncio.sleep(0.2)
        stats = dict(pub.push_stats)
        return await consume(kafka_bootstrap, topic), stream, stats

    msgs, stream, stats = asyncio.run(scenario())
    check_request(msgs, request_id="req-open", key="sess-open", body=BODY[:200],
                  end=END_CANCELLED)
    # Ended as what happened to it (nobody said the body was over), and delivered.
    assert stream.outcome == COMPLETED
    assert stats == {"opened": 1, COMPLETED: 1}


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_stream_nothing_can_be_sent_of_is_dropped_and_counted(
        kafka_bootstrap: str, caplog: pytest.LogCaptureFixture) -> None:
    """The producer is gone (a borrowed one its owner stopped): every send fails at once, no
    marker can go out, the stream is dropped and logged, and feeding still never raised."""
    from aiokafka import AIOKafkaProducer

    async def scenario() -> tuple[str, dict[str, int]]:
        topic = await new_topic(kafka_bootstrap)
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all",
                                    enable_idempotence=True)
        await producer.start()
        async with ChunkPublisher(producer, topic, connect_timeout=3) as pub:
            await producer.stop()
            stream = pub.open_stream(RequestMeta("req-gone", "sess-gone"))
            for piece in pieces(BODY, 100):
                stream.feed(piece)
            stream.close()
            outcome = await stream.done()
            stream.feed(b"more")  # after the drop: still nothing raised
            return outcome, dict(pub.push_stats)

    with caplog.at_level(logging.WARNING, logger="toolwire.publish"):
        outcome, stats = asyncio.run(scenario())
    assert outcome == DROPPED
    assert stats[DROPPED] == 1 and stats["opened"] == 1
    assert "req-gone" in caplog.text and "dropped" in caplog.text
