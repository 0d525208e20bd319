"""The publisher against a real broker: what a consumer reads back is the input contract.

Tests marked ``broker`` use the session fixture ``kafka_bootstrap`` (tests/broker_fixture.py,
imported by tests/conftest.py); each makes its own 3-partition topic, so they share nothing.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.core.captures import CORPUS
from toolwire import cli
from toolwire.publish import (
    ChunkPublisher,
    PublishReport,
    RequestMeta,
    TopicNotFound,
    publish_captures,
    split_events,
)
from toolwire.stream.messages import (
    END_CANCELLED,
    END_EOF,
    END_ERROR,
    END_MARKERS,
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REPLAY_OF,
    H_REQUEST_ID,
)

SINGLE_CALL = CORPUS / "deepseek_single_call.sse"
CRLF = CORPUS / "crlf_framing.sse"
PARTITIONS = 3
CONSUME_TIMEOUT = 30.0


@dataclass(frozen=True)
class Msg:
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: dict[str, bytes]

    @property
    def seq(self) -> int:
        return int(self.headers[H_CHUNK_SEQ])


async def new_topic(bootstrap: str) -> str:
    topic = f"tw-publish-{uuid.uuid4().hex[:10]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        resp = await admin.create_topics(
            [NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
        assert [err for _, err, *_ in resp.topic_errors] == [0]
    finally:
        await admin.close()
    return topic


async def consume(bootstrap: str, topic: str) -> list[Msg]:
    """Every message in the topic, in (partition, offset) order, read within a time bound."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    got: list[Msg] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        # Publishing returned, so everything is acknowledged: the end offsets are the count,
        # and a stray extra message (say a second end marker) would show up in it.
        total = sum((await consumer.end_offsets(tps)).values())
        async with asyncio.timeout(CONSUME_TIMEOUT):
            while len(got) < total:
                batch = await consumer.getmany(timeout_ms=500)
                for tp, records in batch.items():
                    got += [Msg(tp.partition, r.offset, r.key, r.value or b"", dict(r.headers))
                            for r in records]
    finally:
        await consumer.stop()
    return sorted(got, key=lambda m: (m.partition, m.offset))


def requests(msgs: list[Msg]) -> dict[str, list[Msg]]:
    out: dict[str, list[Msg]] = {}
    for m in msgs:
        out.setdefault(m.headers[H_REQUEST_ID].decode(), []).append(m)
    return out


def check_request(msgs: list[Msg], *, request_id: str, key: str, body: bytes,
                  end: str | None, extra: dict[str, bytes] | None = None) -> None:
    """The input contract, message by message."""
    assert [m.seq for m in msgs] == list(range(len(msgs))), "contiguous chunk-seq from 0"
    assert len({m.partition for m in msgs}) == 1, "one partition"
    assert [m.offset for m in msgs] == sorted(m.offset for m in msgs)
    assert {m.key for m in msgs} == {key.encode()}
    for m in msgs:
        assert m.headers[H_REQUEST_ID] == request_id.encode()
        for name, value in (extra or {}).items():
            assert m.headers[name] == value
    chunks = msgs if end is None else msgs[:-1]
    assert all(H_END not in m.headers for m in chunks)
    assert all(m.value for m in chunks), "empty slices are not sent"
    assert b"".join(m.value for m in msgs) == body
    if end is not None:
        assert msgs[-1].headers[H_END] == end.encode()
        assert msgs[-1].value == b""


async def from_list(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


# --------------------------------------------------------------------------- publish_stream



def main(argv: list[str]) -> int:
    """``toolwire publish ARGV``."""
    return cli.main(["publish", *argv])

@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_capture_reads_back_as_the_contract_says(kafka_bootstrap: str) -> None:
    body = SINGLE_CALL.read_bytes()
    pieces = split_events(body)
    meta = RequestMeta(request_id="req-1", session_id="sess-1", provider="deepseek",
                       model="deepseek-chat", declared_tools=["get_weather", "search"])

    async def scenario() -> tuple[PublishReport, list[Msg]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            report = await pub.publish_stream(meta, from_list(pieces))
        return report, await consume(kafka_bootstrap, topic)

    report, msgs = asyncio.run(scenario())
    check_request(msgs, request_id="req-1", key="sess-1", body=body, end="eof", extra={
        H_PROVIDER: b"deepseek", H_MODEL: b"deepseek-chat",
        H_DECLARED_TOOLS: b"get_weather,search"})
    assert [m.value for m in msgs[:-1]] == pieces
    assert report == PublishReport(
        request_id="req-1", chunks=len(pieces), bytes=len(body), end="eof",
        partition=msgs[0].partition, first_offset=msgs[0].offset, last_offset=msgs[-1].offset)
    assert report.messages == len(msgs)


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_no_session_keys_by_request_and_unknown_fields_are_left_out(
    kafka_bootstrap: str,
) -> None:
    async def scenario() -> list[Msg]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            await pub.publish_stream(RequestMeta("req-alone"), from_list([b"data: x\n\n"]))
            await pub.publish_stream(RequestMeta("req-none", declared_tools=[]),
                                     from_list([b"", b"data: y\n\n", b""]))
        return await consume(kafka_bootstrap, topic)

    by_request = requests(asyncio.run(scenario()))
    alone = by_request["req-alone"]
    check_request(alone, request_id="req-alone", key="req-alone", body=b"data: x\n\n",
                  end="eof")
    assert not {H_PROVIDER, H_MODEL, H_DECLARED_TOOLS} & set(alone[0].headers)
    none = by_request["req-none"]
    check_request(none, request_id="req-none", key="req-none", body=b"data: y\n\n", end="eof")
    assert len(none) == 2, "empty slices spend no sequence number"
    assert none[0].headers[H_DECLARED_TOOLS] == b"", "declared, but no tools"


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_concurrent_streams_of_one_session_interleave_but_each_stays_contiguous(
    kafka_bootstrap: str,
) -> None:
    async def trickle(tag: bytes, n: int) -> AsyncIterator[bytes]:
        for i in range(n):
            yield b"data: " + tag + str(i).encode() + b"\n\n"
            await asyncio.sleep(0)  # let the other stream send in between

    async def scenario() -> tuple[list[PublishReport], list[Msg]]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            reports = await asyncio.gather(*(
                pub.publish_stream(RequestMeta(f"req-{tag}", "sess-shared"),
                                   trickle(tag.encode(), 50))
                for tag in ("a", "b", "c")))
        return reports, await consume(kafka_bootstrap, topic)

    reports, msgs = asyncio.run(scenario())
    by_request = requests(msgs)
    assert len({m.partition for m in msgs}) == 1
    for report in reports:
        tag = report.request_id[-1].encode()
        body = b"".join(b"data: " + tag + str(i).encode() + b"\n\n" for i in range(50))
        check_request(by_request[report.request_id], request_id=report.request_id,
                      key="sess-shared", body=body, end="eof")
    starts = sorted(by_request[r.request_id][0].offset for r in reports)
    ends = sorted(by_request[r.request_id][-1].offset for r in reports)
    assert starts[-1] < ends[0], "the streams really were interleaved"


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_body_that_raises_ends_with_error_and_the_exception_propagates(
    kafka_bootstrap: str,
) -> None:
    async def failing() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        yield b""
        yield b"data: 2\n\n"
        raise ConnectionResetError("upstream reset")

    async def scenario() -> list[Msg]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            with pytest.raises(ConnectionResetError, match="upstream reset"):
                await pub.publish_stream(RequestMeta("req-err", "sess-err"), failing())
        return await consume(kafka_bootstrap, topic)

    msgs = asyncio.run(scenario())
    check_request(msgs, request_id="req-err", key="sess-err", body=b"data: 1\n\ndata: 2\n\n",
                  end="error")
    assert [m.seq for m in msgs] == [0, 1, 2]


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_cancelled_publish_still_delivers_the_cancelled_marker(kafka_bootstrap: str) -> None:
    async def scenario() -> list[Msg]:
        topic = await new_topic(kafka_bootstrap)
        reached = asyncio.Event()

        async def stalled() -> AsyncIterator[bytes]:
            yield b"data: 1\n\n"
            yield b"data: 2\n\n"
            reached.set()
            await asyncio.Event().wait()  # the upstream never sends another byte
            yield b"never"

        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            task = asyncio.create_task(
                pub.publish_stream(RequestMeta("req-cancel", "sess-c"), stalled()))
            await asyncio.wait_for(reached.wait(), 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return await consume(kafka_bootstrap, topic)

    msgs = asyncio.run(scenario())
    check_request(msgs, request_id="req-cancel", key="sess-c",
                  body=b"data: 1\n\ndata: 2\n\n", end="cancelled")


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_timeout_around_the_publish_is_a_cancellation_too(kafka_bootstrap: str) -> None:
    async def slow() -> AsyncIterator[bytes]:
        yield b"data: 1\n\n"
        await asyncio.sleep(60)
        yield b"never"

    async def scenario() -> list[Msg]:
        topic = await new_topic(kafka_bootstrap)
        async with ChunkPublisher(kafka_bootstrap, topic) as pub:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(2):
                    await pub.publish_stream(RequestMeta("req-slow"), slow())
        return await consume(kafka_bootstrap, topic)

    msgs = asyncio.run(scenario())
    check_request(msgs, request_id="req-slow", key="req-slow", body=b"data: 1\n\n",
                  end="cancelled")


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_borrowed_producer_is_used_and_left_running(kafka_bootstrap: str) -> None:
    async def scenario() -> list[Msg]:
        topic = await new_topic(kafka_bootstrap)
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all",
                                    enable_idempotence=True)
        await producer.start()
        try:
            async with ChunkPublisher(producer, topic) as pub:
                await pub.publish_stream(RequestMeta("req-b1", "s"), from_list([b"a", b"b"]))
            async with ChunkPublisher(producer, topic) as pub:  # still usable
                await pub.publish_stream(RequestMeta("req-b2", "s"), from_list([b"c"]),
                                         end=False)
        finally:
            await producer.stop()
        return await consume(kafka_bootstrap, topic)

    by_request = requests(asyncio.run(scenario()))
    check_request(by_request["req-b1"], request_id="req-b1", key="s", body=b"ab", end="eof")
    check_request(by_request["req-b2"], request_id="req-b2", key="s", body=b"c", end=None)


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_a_missing_topic_fails_at_start(kafka_bootstrap: str) -> None:
    async def scenario() -> None:
        async with ChunkPublisher(kafka_bootstrap, f"tw-missing-{uuid.uuid4().hex[:8]}",
                                  connect_timeout=20):
            pass

    with pytest.raises(TopicNotFound, match="does not exist"):
        asyncio.run(scenario())


# --------------------------------------------------------------------------- captures + CLI


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_publish_captures_one_request_per_file_in_session_order(kafka_bootstrap: str) -> None:
    printed: list[PublishReport] = []

    async def scenario() -> tuple[list[PublishReport], list[Msg]]:
        topic = await new_topic(kafka_bootstrap)
        reports = await publish_captures(
            kafka_bootstrap, topic, [SINGLE_CALL, CRLF], session="sess-cap",
            provider="deepseek", tools=["get_weather"], progress=printed.append)
        return reports, await consume(kafka_bootstrap, topic)

    reports, msgs = asyncio.run(scenario())
    assert printed == reports
    assert [r.request_id.rsplit("-", 1)[0] for r in reports] == [
        "sess-cap-deepseek_single_call", "sess-cap-crlf_framing"]
    assert all(len(r.request_id.rsplit("-", 1)[1]) == 8 for r in reports)
    by_request = requests(msgs)
    assert list(by_request) == [r.request_id for r in reports], "session order kept"
    assert len({m.partition for m in msgs}) == 1, "one session, one partition"
    for report, path in zip(reports, [SINGLE_CALL, CRLF], strict=True):
        body = path.read_bytes()
        got = by_request[report.request_id]
        check_request(got, request_id=report.request_id, key="sess-cap", body=body, end="eof",
                      extra={H_PROVIDER: b"deepseek", H_DECLARED_TOOLS: b"get_weather"})
        assert report.chunks == len(split_events(body)) == len(got) - 1
        assert (report.first_offset, report.last_offset) == (got[0].offset, got[-1].offset)


def cli_env(monkeypatch: pytest.MonkeyPatch, bootstrap: str, topic: str) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", bootstrap)
    monkeypatch.setenv("TOOLWIRE_TOPIC_CHUNKS", topic)


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_cli_slice_7(kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str]) -> None:
    topic = asyncio.run(new_topic(kafka_bootstrap))
    cli_env(monkeypatch, kafka_bootstrap, topic)
    body = SINGLE_CALL.read_bytes()
    code = main([str(SINGLE_CALL), "--session", "s7", "--request", "r7", "--slice", "7",
                 "--provider", "deepseek", "--model", "deepseek-chat", "--tools", "a, b"])
    out = capsys.readouterr().out
    assert code == 0
    msgs = asyncio.run(consume(kafka_bootstrap, topic))
    chunks = math.ceil(len(body) / 7)
    assert len(msgs) == chunks + 1
    check_request(msgs, request_id="r7", key="s7", body=body, end="eof", extra={
        H_PROVIDER: b"deepseek", H_MODEL: b"deepseek-chat", H_DECLARED_TOOLS: b"a,b"})
    assert [len(m.value) for m in msgs[:-2]] == [7] * (chunks - 1)
    assert out == (f"r7 chunks={chunks} bytes={len(body)} end=eof "
                   f"partition={msgs[0].partition} "
                   f"offsets={msgs[0].offset}-{msgs[-1].offset}\n")


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_cli_no_end_and_several_captures(kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    topic = asyncio.run(new_topic(kafka_bootstrap))
    cli_env(monkeypatch, kafka_bootstrap, topic)
    assert main([str(SINGLE_CALL), str(CRLF), "--session", "sn", "--no-end"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(" end=- " in line for line in lines)
    by_request = requests(asyncio.run(consume(kafka_bootstrap, topic)))
    assert len(by_request) == 2
    for rid, path in zip(by_request, [SINGLE_CALL, CRLF], strict=True):
        check_request(by_request[rid], request_id=rid, key="sn", body=path.read_bytes(),
                      end=None)


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_python_dash_m_toolwire_cli_publish(kafka_bootstrap: str) -> None:
    topic = asyncio.run(new_topic(kafka_bootstrap))
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "TOOLWIRE_TOPIC_CHUNKS": topic}
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "publish", str(CRLF), "--session", "sm",
         "--request", "rm"],
        env=env, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rm chunks=")
    msgs = asyncio.run(consume(kafka_bootstrap, topic))
    check_request(msgs, request_id="rm", key="sm", body=CRLF.read_bytes(), end="eof")


# --------------------------------------------------------------------------- no broker needed


def test_help_explains_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for word in ("chunk-seq", "end-of-stream", "request-id", "session", "--slice", "--no-end",
                 "KAFKA_BOOTSTRAP_SERVERS"):
        assert word in out


@pytest.mark.parametrize("argv", [
    [str(SINGLE_CALL)],  # no --session
    [str(SINGLE_CALL), str(CRLF), "--session", "s", "--request", "r"],
    [str(SINGLE_CALL), "--session", "s", "--slice", "0"],
    [str(SINGLE_CALL), "--session", "s", "--slice", "seven"],
    ["--session", "s"],  # no capture
])
def test_usage_errors_exit_2(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # never contacted
    assert main(argv) == 2
    assert capsys.readouterr().err


def test_an_unreadable_capture_exits_1_before_any_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    missing = tmp_path / "missing.sse"
    assert main([str(SINGLE_CALL), str(missing), "--session", "s"]) == 1
    err = capsys.readouterr().err
    assert "cannot read" in err and str(missing) in err


@pytest.mark.timeout(60)
def test_an_unreachable_broker_exits_1_within_the_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", f"127.0.0.1:{port}")
    assert main([str(SINGLE_CALL), "--session", "s", "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err


def test_request_meta_refuses_what_the_contract_cannot_carry() -> None:
    assert RequestMeta("r").key == "r"
    assert RequestMeta("r", session_id="s").key == "s"
    with pytest.raises(ValueError):
        RequestMeta("")
    with pytest.raises(ValueError):
        RequestMeta("r", declared_tools=["a,b"])
    with pytest.raises(TypeError):
        RequestMeta("r", declared_tools="get_weather")


def test_request_meta_builds_every_header_of_a_chunk_message_in_order() -> None:
    """The one builder of the chunk topic's headers: the exact list, in the order it goes on
    the wire, that the publisher (and ``toolwire dlq replay``) sends."""
    meta = RequestMeta("r", "s", provider="deepseek", model="m", declared_tools=["a", "b"])
    assert meta.message_headers(0) == [
        (H_REQUEST_ID, b"r"), (H_PROVIDER, b"deepseek"), (H_MODEL, b"m"),
        (H_DECLARED_TOOLS, b"a,b"), (H_CHUNK_SEQ, b"0")]
    assert meta.message_headers(7, END_EOF) == [*meta.headers(), (H_CHUNK_SEQ, b"7"),
                                                (H_END, b"eof")]
    assert RequestMeta("r", declared_tools=[]).message_headers(1, END_ERROR) == [
        (H_REQUEST_ID, b"r"), (H_DECLARED_TOOLS, b""), (H_CHUNK_SEQ, b"1"),
        (H_END, b"error")]
    assert RequestMeta("r", replay_of="orig").headers() == [
        (H_REQUEST_ID, b"r"), (H_REPLAY_OF, b"orig")]
    assert END_MARKERS == {END_EOF, END_ERROR, END_CANCELLED} == {"eof", "error", "cancelled"}


def test_the_publisher_sends_the_headers_request_meta_builds() -> None:
    """Every message ``publish_stream`` sends, the end marker included, carries exactly
    ``meta.message_headers(seq)``: the publisher builds no header of its own."""
    sent: list[tuple[bytes, bytes, list[tuple[str, bytes]]]] = []

    class Producer:
        async def send(self, topic: str, *, value: bytes, key: bytes,
                       headers: list[tuple[str, bytes]]) -> asyncio.Future[object]:
            sent.append((key, value, headers))
            future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
            future.set_result(SimpleNamespace(partition=0, offset=len(sent) - 1))
            return future

    meta = RequestMeta("r", "s", provider="p", model="m", declared_tools=["t"])

    async def run() -> PublishReport:
        publisher = ChunkPublisher(Producer(), "topic")
        return await publisher.publish_stream(meta, from_list([b"a", b"", b"b"]))

    report = asyncio.run(run())
    assert report.end == END_EOF and report.messages == 3
    assert sent == [(b"s", b"a", meta.message_headers(0)), (b"s", b"b", meta.message_headers(1)),
                    (b"s", b"", meta.message_headers(2, END_EOF))]


def test_a_capture_published_with_wire_auto_gets_its_own_wire_header(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``toolwire publish --wire auto``: each body's header names the wire its first event
    tells (a wire this release does not read, or no rule at all, falls back to the default,
    which the worker then reads and diagnoses)."""
    from toolwire.core.wires import SUPPORTED_WIRES
    from toolwire.publish._captures import body_wire

    chat = b'data: {"object":"chat.completion.chunk","choices":[]}\n\ndata: [DONE]\n\n'
    anthropic = b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n'
    assert body_wire(chat) == "openai-chat"
    assert body_wire(b": comment only\n\n") == "openai-chat"
    assert body_wire(anthropic) == "anthropic-messages"
    assert body_wire(anthropic.replace(b"\n", b"\r\n")) == "anthropic-messages"
    # A JSON body is no SSE: named by its wire's framing (the worker dead-letters it), never
    # an exception that stops the publish.
    assert body_wire(b'[{"candidates": []},\r\n{"candidates": []}]') == "gemini"
    assert body_wire(b'{"error": {"code": 500}}') == "openai-chat"
    # Once a wire is not registered, its bodies go under the default header. (The registry
    # is restored as it was, order included: error messages list the wires in that order.)
    saved = dict(SUPPORTED_WIRES)
    try:
        del SUPPORTED_WIRES["anthropic-messages"]
        assert body_wire(anthropic) == "openai-chat"
    finally:
        SUPPORTED_WIRES.clear()
        SUPPORTED_WIRES.update(saved)


def test_publish_refuses_an_unknown_wire_naming_the_valid_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["publish", "x.sse", "--session", "s", "--wire", "nope"]) == 2
    assert "unknown wire 'nope': expected one of 'openai-chat'" in capsys.readouterr().err
