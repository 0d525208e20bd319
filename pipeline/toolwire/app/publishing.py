"""Publishing one output: acknowledged, cut to fit, retried — or the worker stops. Never skipped.

A record that decides a response must reach the broker before the response is settled (its
done marker written) and before its input offset can be committed. Three things can stand in
the way, and each has one answer here:

1. **The broker refuses the record as too large** (an output topic whose ``max.message.bytes``
   is below ``TOOLWIRE_MAX_RECORD_BYTES``): the publisher learns the topic's limit again and
   reports it (:class:`TooLarge`); the worker asks the processor to build the output again
   within it (:func:`publish_fitted`, :meth:`toolwire.stream.processor.Processor.refit`): a
   dead letter cut (``raw_chunks_truncated``, ``fields_truncated``), an assembled record
   turned into an ``oversize`` dead letter. The response still ends in exactly one record.
   An explicit step, not a callback inside the publish: the publisher never calls into the
   processor, and no output carries code.
2. **A retriable error** (a leader moving, a request timeout, not enough replicas): the same
   output is sent again with backoff, in place — the agent handles nothing else meanwhile, so
   the session's order is kept and the input is not committed — for at most
   ``TOOLWIRE_PUBLISH_RETRY_TIMEOUT`` seconds.
3. **Anything else** (retries exhausted, an idempotent producer whose sequence is broken —
   ``OutOfOrderSequenceNumber`` —, a fenced producer, a refusal no cut can fix, a missing
   permission): :class:`PublishFault`, naming the cause and the fix. The worker then stops with
   a non-zero status (see :mod:`toolwire.app.service`) and the process supervisor restarts it;
   the restarted worker, with a fresh producer, decides the response again from the input it
   never committed. Faust's own answer, restarting the agent inside the same process on the
   same broken producer, is what left workers alive and idle for ever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol

from aiokafka.errors import (
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
)

from toolwire.stream.messages import Output, Sink

log = logging.getLogger("toolwire.publish")

#: The exit status of a worker stopped by a fault it cannot get past in this process
#: (``EX_TEMPFAIL``: try again): the supervisor restarts it.
EXIT_FAULT: Final = 75
#: Backoff between retries: first, factor, most.
BACKOFF_FIRST: Final = 0.1
BACKOFF_MOST: Final = 5.0
#: Times one output may be refused as too large and built again before it is a fault.
MAX_REFITS: Final = 3
#: Errors that mean "this record is larger than the topic or broker accepts".
TOO_LARGE: Final = (MessageSizeTooLargeError, RecordListTooLargeError)


class PublishFault(Exception):
    """A publish that cannot succeed in this process: the worker must stop (non-zero)."""

    def __init__(self, error: BaseException | None, cause: str, fix: str) -> None:
        super().__init__(f"{cause}: {fix}")
        self.error = error
        self.cause = cause
        self.fix = fix

    @property
    def error_name(self) -> str:
        return type(self.error).__name__ if self.error is not None else "PublishFault"


class PublishObserver(Protocol):
    """What the metrics are told about publishing."""

    def publish_retried(self, error: str) -> None: ...

    def publish_failed(self, error: str) -> None: ...

    def record_refit(self, sink: str) -> None: ...


class Refits(Protocol):
    """Who builds an output again within a smaller limit (the processor)."""

    def refit(self, output: Output, limit: int) -> Output: ...


@dataclass(frozen=True, slots=True)
class TooLarge:
    """The broker refused ``output`` as too large: its topic takes at most ``limit`` bytes."""

    output: Output
    limit: int
    error: BaseException
    #: Times this response's output has been refused so far (this refusal included).
    refits: int

    def fault(self, why: str) -> PublishFault:
        return PublishFault(self.error, f"a {self.output.sink.value} record of "
                            f"{len(self.output.value)} bytes {why}", _TOO_LARGE_FIX)


#: What to do about a record no refit can fit.
_TOO_LARGE_FIX: Final = ("raise the topic's max.message.bytes, or lower "
                         "TOOLWIRE_MAX_RECORD_BYTES below it")


class NoPublishObserver:
    def publish_retried(self, error: str) -> None:
        pass

    def publish_failed(self, error: str) -> None:
        pass

    def record_refit(self, sink: str) -> None:
        pass


def retriable(exc: BaseException) -> bool:
    """Whether sending the same record again may succeed: the errors Kafka marks retriable
    (leadership, timeouts on the broker, replicas) and the client's own delivery timeout."""
    if isinstance(exc, KafkaTimeoutError):
        return True
    return isinstance(exc, KafkaError) and bool(getattr(exc, "retriable", False))


#: Fixes for the faults that have a known one, by error class name.
_FIXES: Final = {
    "OutOfOrderSequenceNumber": (
        "the idempotent producer's sequence is broken after a failed publish; a restarted "
        "worker gets a fresh producer and decides the pending responses again (if it repeats, "
        "check the brokers: leadership changes, disks, min.insync.replicas)"),
    "InvalidProducerEpoch": "another producer took over this one's id: restart the worker",
    "ProducerFenced": "another producer took over this one's id: restart the worker",
    "TopicAuthorizationFailedError": (
        "grant the worker's principal WRITE on the output topics (TOOLWIRE_TOPIC_ASSEMBLED, "
        "TOOLWIRE_TOPIC_DEADLETTER)"),
    "UnknownTopicOrPartitionError": "create the output topics: toolwire topics apply",
}
_UNKNOWN_FIX: Final = ("see the traceback above; the restarted worker decides the pending "
                       "responses again")


def fault_for(exc: BaseException) -> PublishFault:
    """The fault a publish error is, with the fix an operator can apply."""
    name = type(exc).__name__
    return PublishFault(exc, f"publish failed with {name}", _FIXES.get(name, _UNKNOWN_FIX))


class Publisher:
    """Sends outputs one at a time, in order, until each is acknowledged or is a fault.

    ``send`` is one attempt (send and, for a record that settles a response, await the
    broker's acknowledgement); ``learn_limit`` reads an output topic's ``max.message.bytes``
    again and returns the limit records of that topic are now built to.
    """

    def __init__(self, send: Callable[[Output], Awaitable[None]], *,
                 retry_timeout: float,
                 learn_limit: Callable[[Sink], Awaitable[int | None]],
                 observer: PublishObserver | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.send = send
        self.retry_timeout = retry_timeout
        self.learn_limit = learn_limit
        self.observer: PublishObserver = observer or NoPublishObserver()
        self.sleep = sleep
        self.clock = clock

    async def publish(self, output: Output,
                      refused: TooLarge | None = None) -> Output | TooLarge:
        """Publish ``output``: the output once acknowledged, or :class:`TooLarge` (the limit
        it must be built again within); raise :class:`PublishFault` when this process
        cannot. ``refused``: the refusal ``output`` was built again for."""
        refits = 0
        if refused is not None:
            refits = refused.refits
            self.observer.record_refit(refused.output.sink.value)
            log.warning("a %s record of %d bytes was refused as too large (%s): publishing it "
                        "again as a %s record of %d bytes, within %d", refused.output.sink.value,
                        len(refused.output.value), type(refused.error).__name__,
                        output.sink.value, len(output.value), refused.limit)
        deadline = self.clock() + self.retry_timeout
        backoff = BACKOFF_FIRST
        while True:
            try:
                await self.send(output)
                return output
            except asyncio.CancelledError:
                raise
            except TOO_LARGE as exc:
                return await self._too_large(output, exc, refits + 1)
            except Exception as exc:
                if not retriable(exc):
                    self.observer.publish_failed(type(exc).__name__)
                    raise fault_for(exc) from exc
                left = deadline - self.clock()
                if left <= 0:
                    self.observer.publish_failed(type(exc).__name__)
                    raise PublishFault(
                        exc, f"publish still failing with {type(exc).__name__} after "
                        f"{self.retry_timeout:g} s of retries",
                        "check the brokers and the output topics (leaders, in-sync "
                        "replicas, disk); raise TOOLWIRE_PUBLISH_RETRY_TIMEOUT to ride out "
                        "longer outages") from exc
                self.observer.publish_retried(type(exc).__name__)
                log.warning("publish to %s failed with %s (retriable): retrying in %.1f s, "
                            "for at most %.0f s more", output.sink.value, type(exc).__name__,
                            min(backoff, left), left)
                await self.sleep(min(backoff, left))
                backoff = min(backoff * 2, BACKOFF_MOST)

    async def _too_large(self, output: Output, exc: BaseException, refits: int) -> TooLarge:
        """The refusal, with the limit read again from the broker; a fault when no refit
        can help (a message that is no decision's, or refused too often)."""
        if not output.refittable or refits > MAX_REFITS:
            self.observer.publish_failed(type(exc).__name__)
            raise TooLarge(output, 0, exc, refits).fault("was refused as too large") from exc
        limit = await self.learn_limit(output.sink)
        if limit is None or limit >= len(output.value) + len(output.key or b""):
            # The topic's limit was not readable, or is not what refused it (the broker's
            # own message.max.bytes, a batch): cut to a quarter less than the record.
            limit = (len(output.value) * 3) // 4
        return TooLarge(output, limit, exc, refits)


async def publish_fitted(publisher: Publisher, processor: Refits, output: Output) -> Output:
    """Publish ``output``, built again by ``processor`` each time the broker refuses it as too
    large; returns the output acknowledged. The refit step, in order:

    1. the publisher sends, and reports a refusal as too large with the topic's limit
       (:class:`TooLarge`);
    2. the processor builds the output again within it (a dead letter cut; an assembled
       record, or its ``oversize`` dead letter);
    3. that is published instead, at most :data:`MAX_REFITS` times, after which the refusal
       is a :class:`PublishFault`.
    """
    result = await publisher.publish(output)
    while isinstance(result, TooLarge):
        try:
            fitted = processor.refit(result.output, result.limit)
        except ValueError as cut:
            publisher.observer.publish_failed(type(result.error).__name__)
            raise result.fault(f"cannot be cut to {result.limit} bytes ({cut})") from cut
        result = await publisher.publish(fitted, refused=result)
    return result
