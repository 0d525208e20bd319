"""Every aiokafka client a command or the worker makes is opened here, and closed on every path.

aiokafka's clients hold connections and tasks from ``start()`` on, and a consumer or producer
whose ``start()`` failed is still open: it warns ``Unclosed AIOKafkaConsumer`` (or
``…Producer``) when collected unless ``stop()`` is called anyway (the admin client's
``close()``). :func:`open_client` is the one way to use one: it makes the client, starts it
(bounded by ``start_timeout``) and closes it on the way out, a failed or timed-out start and
a cancellation included. :func:`start_client` and :func:`close_client` are the same two steps
for a client that outlives one block (the publisher's producer).

A start that reaches no bootstrap server raises :class:`KafkaUnreachable`, which says which
servers were tried and why each failed. aiokafka logs each of those failures itself
(``Unable connect to …``) before its own error; while a start is in progress here, those log
lines are held back and become the error's reasons instead, so a command prints one line about
an unreachable cluster, not the log line and then the error. When the start succeeds (another
bootstrap server answered), the held lines are logged as aiokafka logged them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from aiokafka.errors import KafkaConnectionError

ClientT = TypeVar("ClientT")

#: aiokafka's logger of bootstrapping (``aiokafka/client.py``), and the messages it logs for
#: a bootstrap server it could not use.
_AIOKAFKA_LOGGER = "aiokafka"
_BOOTSTRAP_FAILURES = frozenset({
    'Unable connect to "%s:%s": %s',
    'Unable to request metadata from "%s:%s": %s',
})

#: The bootstrap failures logged while this task (or a task it started) starts a client.
_held: ContextVar[list[logging.LogRecord] | None] = ContextVar("toolwire_kafka_held",
                                                                default=None)


class KafkaUnreachable(KafkaConnectionError):  # type: ignore[misc]  # aiokafka is untyped
    """No bootstrap server of ``bootstrap`` could be used within the start's bounds.

    A :class:`aiokafka.errors.KafkaConnectionError` (what aiokafka raises then), whose text
    names the servers and why each failed: ``cannot reach Kafka at HOST:PORT (connection
    refused)``. ``why`` is the part in parentheses."""

    def __init__(self, bootstrap: str, why: str) -> None:
        self.bootstrap = bootstrap
        self.why = why
        super().__init__(f"cannot reach Kafka at {bootstrap} ({why})")

    def __str__(self) -> str:  # aiokafka's errors prefix their class name; this text is whole
        return str(self.args[0])


class _HoldBootstrapFailures(logging.Filter):
    """Holds back aiokafka's bootstrap failures logged inside :func:`start_client`."""

    def filter(self, record: logging.LogRecord) -> bool:
        held = _held.get()
        if held is None or not isinstance(record.msg, str) or (
                record.msg not in _BOOTSTRAP_FAILURES):
            return True
        held.append(record)
        return False


_FILTER = _HoldBootstrapFailures()


def _install_filter() -> None:
    logger = logging.getLogger(_AIOKAFKA_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def _reason(error: object) -> str:
    """A bootstrap server's failure as a short phrase."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, TimeoutError):
        return "no answer in time"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror[:1].lower() + error.strerror[1:]
    text = str(error)
    name = type(error).__name__
    return text if name in text else f"{name}: {text}" if text else name


def _why(held: Sequence[logging.LogRecord], timeout: float | None) -> str:
    """Why no bootstrap server could be used: each one's failure (without the address when
    there is one server: the message names it), then ``timeout`` when it ran out."""
    failures = [(f"{r.args[0]}:{r.args[1]}", _reason(r.args[2])) for r in held
                if isinstance(r.args, tuple) and len(r.args) == 3]
    parts = [reason if len(failures) == 1 else f"{address}: {reason}"
             for address, reason in dict.fromkeys(failures)]
    if timeout is not None:
        parts.append(f"no answer within {timeout:g}s")
    return "; ".join(parts) or "no bootstrap server answered"


async def close_client(client: Any) -> None:
    """Close an aiokafka client, started or not, a failed start included: ``stop()`` for a
    consumer or producer, ``close()`` for the admin client. Closing twice does nothing."""
    stop = getattr(client, "stop", None)
    try:
        await (stop() if stop is not None else client.close())
    except asyncio.CancelledError:
        # aiokafka may end one of its own tasks by cancelling it when a client is stopped
        # soon after its start, and that cancellation surfaces here: only a cancellation of
        # this task goes on.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


async def start_client(client: Any, bootstrap: str, *, timeout: float | None = None) -> None:
    """Start ``client`` (within ``timeout`` seconds when given); on any failure it is closed
    before the error propagates. Reaching no bootstrap server raises
    :class:`KafkaUnreachable`."""
    _install_filter()
    held: list[logging.LogRecord] = []
    token = _held.set(held)
    try:
        try:
            if timeout is None:
                await client.start()
            else:
                await asyncio.wait_for(client.start(), timeout)
        finally:
            _held.reset(token)
    except BaseException as exc:
        timed_out = timeout is not None and isinstance(exc, TimeoutError)
        # Shielded: a cancelled start must still close what it opened.
        with contextlib.suppress(Exception):
            await asyncio.shield(close_client(client))
        if isinstance(exc, KafkaConnectionError) or timed_out:
            raise KafkaUnreachable(bootstrap, _why(held, timeout if timed_out else None)) from exc
        raise
    logger = logging.getLogger(_AIOKAFKA_LOGGER)
    for record in held:  # another bootstrap server answered: these are worth a log line
        logger.handle(record)


@contextlib.asynccontextmanager
async def open_client(factory: Callable[..., ClientT], bootstrap: str, *,
                      start_timeout: float | None = None,
                      **options: Any) -> AsyncIterator[ClientT]:
    """``factory(bootstrap_servers=bootstrap, **options)`` (``AIOKafkaConsumer``,
    ``AIOKafkaProducer``, ``AIOKafkaAdminClient``), started (within ``start_timeout`` seconds
    when given) and closed when the block ends, however it ends::

        async with open_client(AIOKafkaConsumer, bootstrap, enable_auto_commit=False,
                               **security) as consumer:
            ...
    """
    client = factory(bootstrap_servers=bootstrap, **options)
    await start_client(client, bootstrap, timeout=start_timeout)
    try:
        yield client
    except BaseException:
        # The block's error is the one to report, not one of closing after it.
        with contextlib.suppress(Exception):
            await close_client(client)
        raise
    await close_client(client)
