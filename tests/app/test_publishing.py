"""The publish policy, driven by a scripted producer: retried, cut to fit, or a fault.

No broker: ``send`` fails as scripted, the clock and the sleeps are the test's, so every
path — retries within the bound, the bound exhausted, a fatal producer state, a refusal as too
large — is taken deterministically. The real producer's faults are in the broker tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import cast

import orjson
import pytest
from aiokafka.errors import (
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    OutOfOrderSequenceNumber,
    TopicAuthorizationFailedError,
)

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import World
from toolwire.app.publishing import MAX_REFITS, Publisher, PublishFault, Refits, publish_fitted
from toolwire.config.settings import Settings
from toolwire.core.records import DeadLetterDecision
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_REQUEST_ID,
    Draft,
    InputMessage,
    Origin,
    Output,
    Sink,
)


class Script:
    """A producer that raises the scripted errors in turn, then accepts; and a fake clock."""

    def __init__(self, *errors: BaseException, limit: int | None = None) -> None:
        self.errors: Iterator[BaseException] = iter(errors)
        self.sent: list[Output] = []
        self.attempts = 0
        self.now = 0.0
        self.sleeps: list[float] = []
        self.limit = limit
        self.retried: list[str] = []
        self.failed: list[str] = []
        self.refits: list[str] = []

    async def send(self, output: Output) -> None:
        self.attempts += 1
        error = next(self.errors, None)
        if error is not None:
            raise error
        if self.limit is not None and len(output.value) > self.limit:
            raise MessageSizeTooLargeError()
        self.sent.append(output)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def learn(self, sink: Sink) -> int | None:
        return self.limit

    def publish_retried(self, error: str) -> None:
        self.retried.append(error)

    def publish_failed(self, error: str) -> None:
        self.failed.append(error)

    def record_refit(self, sink: str) -> None:
        self.refits.append(sink)

    def publisher(self, retry_timeout: float = 60.0) -> Publisher:
        return Publisher(self.send, retry_timeout=retry_timeout, learn_limit=self.learn,
                         observer=self, sleep=self.sleep, clock=lambda: self.now)


def output(value: bytes = b"{}") -> Output:
    return Output(Sink.ASSEMBLED, b"s", value, {}, settles="r1")


class Unfit:
    """A processor that cannot build anything again (no test below it should ask)."""

    def refit(self, output: Output, limit: int) -> Output:
        raise AssertionError(f"refit asked of {output.sink.value} within {limit}")


def publish(script: Script, out: Output, retry_timeout: float = 60.0,
            processor: Refits | None = None) -> Output:
    """What the worker does with one output: publish it, refitted by ``processor``."""
    return asyncio.run(publish_fitted(script.publisher(retry_timeout), processor or Unfit(),
                                      out))


def test_a_leader_change_is_retried_until_it_goes_through() -> None:
    script = Script(NotLeaderForPartitionError(), NotEnoughReplicasError(),
                    KafkaTimeoutError())
    out = output()
    assert publish(script, out) is out
    assert script.sent == [out]
    assert script.retried == ["NotLeaderForPartitionError", "NotEnoughReplicasError",
                              "KafkaTimeoutError"]
    assert script.sleeps == [0.1, 0.2, 0.4]  # backoff doubles
    assert script.failed == []


def test_retries_stop_at_their_bound_and_the_fault_names_the_fix() -> None:
    script = Script(*[KafkaTimeoutError() for _ in range(1000)])
    with pytest.raises(PublishFault) as caught:
        publish(script, output(), retry_timeout=10.0)
    assert script.now == pytest.approx(10.0)  # never sleeps past the bound
    assert max(script.sleeps) <= 5.0
    assert "after 10 s of retries" in caught.value.cause
    assert "TOOLWIRE_PUBLISH_RETRY_TIMEOUT" in caught.value.fix
    assert script.failed == ["KafkaTimeoutError"]
    assert script.sent == []


@pytest.mark.parametrize("error", [OutOfOrderSequenceNumber(), TopicAuthorizationFailedError(),
                                   ValueError("a bug")])
def test_a_fatal_producer_state_is_a_fault_at_once(error: BaseException) -> None:
    script = Script(error)
    with pytest.raises(PublishFault) as caught:
        publish(script, output())
    assert script.attempts == 1  # never sent again on a broken producer
    assert caught.value.error is error
    assert type(error).__name__ in caught.value.cause
    assert script.failed == [type(error).__name__]


def test_a_record_without_a_refit_refused_as_too_large_is_a_fault() -> None:
    script = Script(limit=10)
    control = Output(Sink.INPUT, b"s", b"x" * 100, {}, partition=0)
    with pytest.raises(PublishFault) as caught:
        publish(script, control)
    assert "max.message.bytes" in caught.value.fix


class Stubborn:
    """Builds a dead letter again no smaller than before, and counts the limits it is asked."""

    def __init__(self) -> None:
        self.limits: list[int] = []

    def refit(self, output: Output, limit: int) -> Output:
        self.limits.append(limit)
        return output


def test_a_record_that_keeps_being_refused_is_a_fault_after_a_few_refits() -> None:
    script, stubborn = Script(limit=10), Stubborn()
    letter = Output(Sink.DEADLETTER, b"s", b"y" * 100, {}, settles="r1",
                    draft=Draft(cast(DeadLetterDecision, {}), Origin(0, 0, 0), ()))
    with pytest.raises(PublishFault) as caught:
        publish(script, letter, processor=stubborn)
    assert script.refits == ["deadletter"] * MAX_REFITS
    assert stubborn.limits == [10] * MAX_REFITS  # the topic's limit, learned each time
    assert script.attempts == MAX_REFITS + 1
    assert "refused as too large" in caught.value.cause


def test_a_dead_letter_that_cannot_be_cut_is_a_fault_naming_the_limit() -> None:
    class Uncuttable:
        def refit(self, output: Output, limit: int) -> Output:
            raise ValueError("fields cut and still too large")

    letter = Output(Sink.DEADLETTER, b"s", b"y" * 100, {},
                    draft=Draft(cast(DeadLetterDecision, {}), Origin(0, 0, 0), ()))
    script = Script(limit=10)
    with pytest.raises(PublishFault) as caught:
        publish(script, letter, processor=Uncuttable())
    assert "cannot be cut to 10 bytes (fields cut and still too large)" in caught.value.cause
    assert script.failed == ["MessageSizeTooLargeError"]


# -- the processor's outputs, refused by a topic smaller than TOOLWIRE_MAX_RECORD_BYTES --------

BIG = body(chunk(call(0, "call_1", "get_weather", '{"city":"Paris","note":"' + "x" * 6000 + '"}'),
                 finish="tool_calls"))


def _decide(world: World, request: str, tools: str | None = None) -> Output:
    """Decide one response; its record is returned unpublished (pending, not settled)."""
    headers = {H_REQUEST_ID: request.encode(), H_CHUNK_SEQ: b"0"}
    if tools is not None:
        headers[H_DECLARED_TOOLS] = tools.encode()
    key = f"s-{request}".encode()
    assert world.processor.handle(InputMessage("llm.sse.chunks", 0, 1, key, BIG, headers)) == []
    outputs = world.processor.handle(InputMessage(
        "llm.sse.chunks", 0, 2, key, b"",
        {H_REQUEST_ID: request.encode(), H_CHUNK_SEQ: b"1", H_END: b"eof"}))
    assert len(outputs) == 1
    return outputs[0]


def test_a_dead_letter_refused_as_too_large_is_published_cut_to_fit() -> None:
    world = World(settings=Settings())
    out = _decide(world, "big-dl", tools="search")  # an undeclared tool: unknown_tool
    assert out.sink is Sink.DEADLETTER and len(out.value) > 6000
    script = Script(limit=3000)
    published = publish(script, out, processor=world.processor)
    letter = orjson.loads(published.value)
    assert len(published.value) <= 3000
    assert letter["reason"] == "unknown_tool"
    assert letter["raw_chunks_truncated"] is True
    assert published.settles == "big-dl"
    world.processor.settle(published)  # the response is decided once, with this record
    assert "big-dl" not in world.processor.pending


def test_an_assembled_record_refused_as_too_large_becomes_an_oversize_dead_letter() -> None:
    world = World(settings=Settings())
    out = _decide(world, "big-ok")
    assert out.sink is Sink.ASSEMBLED
    script = Script(limit=3000)
    published = publish(script, out, processor=world.processor)
    letter = orjson.loads(published.value)
    assert published.sink is Sink.DEADLETTER and len(published.value) <= 3000
    assert letter["reason"] == "oversize"
    assert "max.message.bytes (3000)" in letter["detail"]
    assert script.refits == ["assembled"]
    world.processor.settle(published)
    assert world.processor.stats["records_dead_letter"] == 1
    assert "s-big-ok" in world.processor.store.quarantine  # as any dead letter's session is


def test_once_learned_a_topic_limit_shapes_every_record_before_it_is_sent() -> None:
    world = World(settings=Settings())
    world.processor.encoder.learn(Sink.DEADLETTER, 3000)
    world.processor.encoder.learn(Sink.ASSEMBLED, 3000)
    letter = _decide(world, "pre-dl", tools="search")
    assert len(letter.value) <= 3000
    assert orjson.loads(letter.value)["reason"] == "unknown_tool"
    oversize = _decide(world, "pre-ok")
    assert orjson.loads(oversize.value)["reason"] == "oversize"


def test_a_dead_letter_of_one_message_refused_as_too_large_is_cut_from_its_draft() -> None:
    world = World(settings=Settings())
    no_request = InputMessage("llm.sse.chunks", 0, 5, b"s-x", b"x" * 6000, {H_CHUNK_SEQ: b"0"})
    (out,) = world.processor.handle(no_request)
    assert out.sink is Sink.DEADLETTER and out.settles is None and len(out.value) > 6000
    script = Script(limit=3000)
    published = publish(script, out, processor=world.processor)
    letter = orjson.loads(published.value)
    assert len(published.value) <= 3000 and published is not out
    assert letter["reason"] == "malformed_message"
    assert letter["raw_chunks_truncated"] is True
    assert script.refits == ["deadletter"]
