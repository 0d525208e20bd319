"""A publisher on a thread of its own (``PublisherThread``), for sync callers: streams opened
and fed from other threads reach the topic as the contract says; what cannot be published is
said at once, never waited for."""

from __future__ import annotations

import threading

import pytest

from tests.publish.test_publisher import CORPUS, check_request, consume, new_topic, requests
from tests.publish.test_push import pieces
from toolwire.publish import (
    COMPLETED,
    BrokerUnreachable,
    PublishError,
    PublisherThread,
    RequestMeta,
)
from toolwire.stream.messages import END_CANCELLED, END_EOF

BODY = (CORPUS / "writer_seven_parallel_calls.sse").read_bytes()


def test_a_stream_cannot_be_opened_before_the_thread_is_started() -> None:
    publisher = PublisherThread("127.0.0.1:1", "never")
    with pytest.raises(PublishError, match="not started"):
        publisher.open_stream(RequestMeta("r-early"))


@pytest.mark.timeout(60)
def test_an_unreachable_broker_fails_start_with_the_publishers_own_error() -> None:
    from tests.app.support import free_port

    publisher = PublisherThread(f"127.0.0.1:{free_port()}", "t", connect_timeout=2)
    with pytest.raises(BrokerUnreachable, match="cannot reach Kafka"):
        publisher.start()
    publisher.stop()  # nothing to stop: no error


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_streams_fed_from_threads_reach_the_topic_and_stop_cancels_the_open_ones(
        kafka_bootstrap: str) -> None:
    import asyncio

    topic = asyncio.run(new_topic(kafka_bootstrap))
    with PublisherThread(kafka_bootstrap, topic) as publisher:
        def client(n: int) -> None:  # a sync client's thread: no event loop here
            stream = publisher.open_stream(RequestMeta(f"r-thread-{n}", f"s-thread-{n}"))
            for piece in pieces(BODY, 61):
                stream.feed(piece)
            stream.close(END_EOF)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        left_open = publisher.open_stream(RequestMeta("r-open", "s-open"))
        left_open.feed(BODY[:100])
    # stop() ended the open stream as cancelled and flushed the others.
    stats = dict(publisher.push_stats)
    assert stats["opened"] == 5 and stats[COMPLETED] == 5, stats
    with pytest.raises(PublishError):
        publisher.open_stream(RequestMeta("r-late"))
    by_request = requests(asyncio.run(consume(kafka_bootstrap, topic)))
    for n in range(4):
        check_request(by_request[f"r-thread-{n}"], request_id=f"r-thread-{n}",
                      key=f"s-thread-{n}", body=BODY, end=END_EOF)
    check_request(by_request["r-open"], request_id="r-open", key="s-open", body=BODY[:100],
                  end=END_CANCELLED)
