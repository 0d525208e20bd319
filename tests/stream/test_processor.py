"""The stream processor over plain dicts: the same logic the Faust agent runs, minus Kafka."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from tests.core.captures import CAPTURES
from tests.core.sse import body, call, chunk
from toolwire.app.commit import Checkpoint
from toolwire.config.settings import Settings
from toolwire.core import Options, Provenance, assemble
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_CONTENT_ENCODING,
    H_CONTROL,
    H_DECLARED_TOOLS,
    H_END,
    H_PROVIDER,
    H_REQUEST_ID,
    InputMessage,
    Output,
    RequestMeta,
    Sink,
    idempotency_key,
)
from toolwire.stream.observe import Event
from toolwire.stream.processor import Processor
from toolwire.stream.state import DoneMarker, decode_response

GOOD = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
            chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
BROKEN = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    """Tables that outlive a processor (as changelogs do), and the processor of the moment."""

    settings: Settings = field(default_factory=lambda: Settings(stream_ttl_seconds=60,
                                                                dedupe_window_seconds=600))
    chunks: dict[str, bytes] = field(default_factory=dict)
    responses: dict[str, bytes] = field(default_factory=dict)
    quarantine: dict[str, bytes] = field(default_factory=dict)
    clock: Clock = field(default_factory=Clock)
    offset: int = 0
    #: Whether a commit (flush, then producer drain) follows every message; without, held
    #: writes are lost by a :meth:`restart` (a crash) unless :meth:`commit` was called.
    drain: bool = True
    processor: Processor = field(init=False)

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.processor = Processor(self.settings, self.chunks, self.responses, self.quarantine,
                                   clock=self.clock, wall=self.clock)

    def send(self, value: bytes, headers: dict[str, str], key: str | None = "s1",
             partition: int = 0) -> list[Output]:
        self.offset += 1
        msg = InputMessage("llm.sse.chunks", partition, self.offset,
                           None if key is None else key.encode(), value,
                           {k: v.encode() for k, v in headers.items()})
        return self.deliver(self.processor.handle(msg))

    def deliver(self, outputs: list[Output]) -> list[Output]:
        """Publication succeeded: settle what the outputs decided, as the agent does; then
        commit (three times after a decision: its stored chunks are deleted once a drain that
        began after its done marker completed)."""
        for output in outputs:
            self.processor.settle(output)
        if self.drain:
            self.commit()
            if outputs:  # until the deletions of the decided responses' stored chunks are done
                self.commit()
                self.commit()
        return outputs

    def commit(self, *, offsets: bool = True) -> None:
        """What the worker does before committing offsets (``offsets=False``: what its sweep
        timer does for an idle partition): the worker's own commit, over a producer that has
        nothing in flight and no write that failed."""
        asyncio.run(Checkpoint(self.processor, _nothing_in_flight, lambda: 0).commit(
            offsets=offsets))

    def publish(self, request: str, data: bytes, *, slice_size: int = 40, end: str | None = "eof",
                session: str = "s1", start: int = 0, **extra: str) -> list[Output]:
        pieces = [data[i:i + slice_size] for i in range(0, len(data), slice_size)]
        outputs: list[Output] = []
        for seq, piece in enumerate(pieces, start):
            outputs += self.send(piece, {H_REQUEST_ID: request, H_CHUNK_SEQ: str(seq), **extra},
                                 key=session)
        if end is not None:
            outputs += self.send(b"", {H_REQUEST_ID: request, H_END: end,
                                       H_CHUNK_SEQ: str(start + len(pieces)), **extra},
                                 key=session)
        return outputs

    def sweep(self) -> list[Output]:
        outputs: list[Output] = []
        for control in self.processor.sweep():
            assert control.sink is Sink.INPUT and control.partition is not None
            msg = InputMessage("llm.sse.chunks", control.partition, self.offset, control.key,
                               control.value, control.headers)
            outputs += self.deliver(self.processor.handle(msg))
        return outputs


async def _nothing_in_flight() -> None:
    return None


def record(output: Output) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(output.value)
    return value


def test_every_capture_gives_the_record_assemble_gives() -> None:
    worlds: dict[tuple[bool, bool, bool], World] = {}
    for n, capture in enumerate(CAPTURES):
        o = capture.options
        world = worlds.setdefault((o.strict, o.synthesize_ids, o.end_without_done), World(
            settings=Settings(strict=o.strict, synthesize_ids="*" if o.synthesize_ids else "",
                              end_without_done="*" if o.end_without_done else "")))
        tools = capture.options.declared_tools
        extra = {} if tools is None else {H_DECLARED_TOOLS: ",".join(sorted(tools))}
        outputs = world.publish(f"r{n}", capture.body, session=f"s{n}", **extra)
        assert len(outputs) == 1, capture.name
        got = record(outputs[0])
        # The pipeline seeds synthesized ids with the request id (offline: the response id).
        expected = assemble(capture.body, capture.options, Provenance(request_id=f"r{n}"))
        for key in ("provenance", "raw_chunks", "raw_chunks_truncated", "request_id",
                    "session_id"):
            got.pop(key, None)
        expected.pop("request_id"), expected.pop("session_id")
        assert got == expected, capture.name
        sink = Sink.ASSEMBLED if expected["outcome"] == "assembled" else Sink.DEADLETTER
        assert outputs[0].sink is sink


def test_interleaved_requests_and_headers_of_the_output() -> None:
    world = World()
    a = [GOOD[i:i + 30] for i in range(0, len(GOOD), 30)]
    outputs: list[Output] = []
    for seq, piece in enumerate(a):
        outputs += world.send(piece, {H_REQUEST_ID: "ra", H_CHUNK_SEQ: str(seq)}, key="sa")
        outputs += world.send(piece, {H_REQUEST_ID: "rb", H_CHUNK_SEQ: str(seq)}, key="sb")
    assert outputs == []  # [DONE] seen, but a response is decided at its end marker
    outputs += world.send(b"", {H_REQUEST_ID: "rb", H_CHUNK_SEQ: str(len(a)), H_END: "eof"},
                          key="sb")
    outputs += world.send(b"", {H_REQUEST_ID: "ra", H_CHUNK_SEQ: str(len(a)), H_END: "eof"},
                          key="sa")
    assert [(o.sink, o.key, o.headers[H_REQUEST_ID]) for o in outputs] == [
        (Sink.ASSEMBLED, b"sb", b"rb"), (Sink.ASSEMBLED, b"sa", b"ra")]
    assert outputs[1].headers["idempotency-key"] == idempotency_key("ra").encode()
    assert record(outputs[1])["tool_calls"][0]["arguments"] == '{"city":"Paris"}'
    # A repeated end marker publishes nothing.
    assert world.send(b"", {H_REQUEST_ID: "ra", H_CHUNK_SEQ: "99", H_END: "eof"}) == []
    assert world.processor.stats["end_after_decision"] == 1


def test_state_is_deleted_after_completion_and_dedupe_markers_expire() -> None:
    world = World()
    world.publish("r1", GOOD)
    assert world.chunks == {}
    assert list(world.responses) == ["r1"]
    assert isinstance(decode_response(world.responses["r1"]), DoneMarker)
    assert world.processor.live == {}
    world.clock.now += 601
    assert world.sweep() == []
    assert world.responses == {}


def test_markers_restored_after_a_restart_expire_on_time_behind_new_decisions() -> None:
    """A restarted worker learns the restored done markers at its first sweep, after it may
    already have decided new responses. The sweep stops at the first marker still in its
    dedupe window, so restored markers queued behind the new ones expired up to a whole
    window late (found by a long run: changelog size kept growing after each restart)."""
    world = World()
    world.publish("old", GOOD, session="s-old")
    world.clock.now += 300
    world.restart()  # the old marker is in the table only, not yet known to the sweep
    world.publish("new", GOOD, session="s-new")  # decided before the first sweep
    world.clock.now += 301  # the old marker's window is over; the new one's is not
    world.sweep()
    assert "old" not in world.responses, "the restored marker waited behind a young one"
    assert isinstance(decode_response(world.responses["new"]), DoneMarker)
    assert world.processor.stats["dedupe_markers_expired"] == 1
    world.clock.now += 300
    world.sweep()
    assert world.responses == {}


def test_duplicate_chunks_are_skipped_and_counted() -> None:
    world = World()
    pieces = [GOOD[i:i + 50] for i in range(0, len(GOOD), 50)]
    outputs = []
    for seq, piece in enumerate(pieces):
        for _ in range(2):
            outputs += world.send(piece, {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(seq)})
        if seq == 1:
            outputs += world.send(pieces[0], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    outputs += world.send(b"", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: str(len(pieces)), H_END: "eof"})
    assert len(outputs) == 1 and outputs[0].sink is Sink.ASSEMBLED
    assert record(outputs[0])["tool_calls"][0]["arguments"] == '{"city":"Paris"}'
    assert world.processor.stats["duplicates_skipped"] == len(pieces) + 1


def test_replay_of_a_decided_response_publishes_nothing() -> None:
    world = World()
    assert len(world.publish("r1", GOOD)) == 1
    world.restart()  # a crash: offsets not committed, the changelog kept the done marker
    assert world.publish("r1", GOOD) == []
    assert world.processor.stats["late_after_decision"] > 0


def test_sequence_gap_is_a_dead_letter_and_quarantines_the_session() -> None:
    world = World()
    out = world.send(GOOD[:40], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0"})
    out += world.send(GOOD[80:120], {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "2"})
    assert len(out) == 1 and out[0].sink is Sink.DEADLETTER
    letter = record(out[0])
    assert letter["reason"] == "sequence_gap"
    assert "expected chunk 1, got chunk 2" in letter["detail"]
    assert [c["seq"] for c in letter["raw_chunks"]] == [0, 2]
    assert "s1" in world.quarantine
    assert world.chunks == {}


def test_end_marker_without_done_is_stream_closed() -> None:
    world = World()
    cut = GOOD[: GOOD.index(b"data: [DONE]")]
    out = world.publish("r1", cut, end="eof")
    assert record(out[0])["reason"] == "stream_closed"
    world2 = World()
    out = world2.publish("r1", cut, end="cancelled")
    assert record(out[0])["reason"] == "stream_closed"
    assert "'cancelled'" in record(out[0])["detail"]


def test_quarantine_holds_later_responses_until_release() -> None:
    world = World()
    first = world.publish("r1", BROKEN)
    assert record(first[0])["reason"] == "missing_identity"
    second = world.publish("r2", GOOD)
    letter = record(second[0])
    assert (second[0].sink, letter["reason"]) == (Sink.DEADLETTER, "session_quarantined")
    assert letter["held_record"]["outcome"] == "assembled"  # kept for replay after release
    other = world.publish("r3", GOOD, session="s2")
    assert other[0].sink is Sink.ASSEMBLED  # other sessions are not affected
    assert world.send(b"", {H_CONTROL: "release"}, key="s1") == []
    assert "s1" not in world.quarantine
    third = world.publish("r4", GOOD)
    assert third[0].sink is Sink.ASSEMBLED


def test_a_complete_body_whose_end_marker_never_comes_is_decided_by_the_sweep() -> None:
    world = World()
    assert world.publish("r1", GOOD, end=None) == []
    world.clock.now += 61
    out = world.sweep()
    assert [o.sink for o in out] == [Sink.ASSEMBLED]


def test_idle_streams_are_swept_as_abandoned() -> None:
    world = World()
    assert world.publish("r1", GOOD[:100], end=None) == []
    world.clock.now += 30
    assert world.sweep() == []
    world.clock.now += 31
    out = world.sweep()
    assert len(out) == 1 and record(out[0])["reason"] == "stream_abandoned"
    assert world.chunks == {}


def test_a_response_continues_after_a_restart_and_restored_streams_are_swept() -> None:
    world = World()
    half = len(GOOD) // 2
    world.publish("r1", GOOD[:half], end=None)
    world.publish("r2", GOOD[:half], end=None, session="s2")
    world.restart()  # memory lost; tables restored from the changelogs
    rest = world.publish("r1", GOOD[half:], start=(half + 39) // 40)
    assert len(rest) == 1 and rest[0].sink is Sink.ASSEMBLED
    assert record(rest[0])["tool_calls"][0]["arguments"] == '{"city":"Paris"}'
    assert world.processor.stats["responses_rebuilt"] == 1
    # r2 never continues: swept one TTL after the restart noticed it.
    assert world.sweep() == []
    world.clock.now += 61
    out = world.sweep()
    assert [record(o)["reason"] for o in out] == ["stream_abandoned"]
    assert record(out[0])["request_id"] == "r2"


@pytest.mark.parametrize(("headers", "detail"), [
    ({H_CHUNK_SEQ: "0"}, "missing header request-id"),
    ({H_REQUEST_ID: "r1"}, "missing header chunk-seq"),
    ({H_REQUEST_ID: "r1", H_CHUNK_SEQ: "-3"}, "is not a whole number"),
])
def test_a_message_that_breaks_the_input_contract_is_a_dead_letter(
        headers: dict[str, str], detail: str) -> None:
    world = World()
    out = world.send(b"data: {}\n\n", headers)
    letter = record(out[0])
    assert (letter["reason"], out[0].sink) == ("malformed_message", Sink.DEADLETTER)
    assert detail in letter["detail"]
    assert out[0].headers["toolwire.errors.reason"] == b"malformed_message"


def test_malformed_message_among_good_ones_affects_only_its_session() -> None:
    world = World()
    out = world.publish("r1", GOOD, session="s1")
    out += world.send(b"data: garbage\n\n", {H_REQUEST_ID: "rx", H_CHUNK_SEQ: "0",
                                   H_END: "eof"}, key="s2")
    out += world.publish("r3", GOOD, session="s3")
    assert [(o.sink, record(o).get("reason")) for o in out] == [
        (Sink.ASSEMBLED, None), (Sink.DEADLETTER, "malformed_chunk"), (Sink.ASSEMBLED, None)]


def test_dead_letter_raw_chunks_are_bounded_and_flagged() -> None:
    world = World(settings=Settings(deadletter_raw_bytes=100))
    out = world.publish("r1", BROKEN, slice_size=40)
    letter = record(out[0])
    assert sum(len(c["value_b64"]) * 3 // 4 for c in letter["raw_chunks"]) <= 100
    assert letter["raw_chunks_truncated"] is True
    assert letter["provenance"]["source_topic"] == "llm.sse.chunks"
    assert letter["provenance"]["first_offset"] == 1


def test_every_count_the_processor_keeps_is_an_event_of_the_enumeration() -> None:
    """``Processor.stats`` keys are members of :class:`Event` (the metrics' counters are keyed
    by it too): events of every kind, counted on one processor, name no other key."""
    world = World()
    world.publish("r1", GOOD, session="s1")
    world.publish("r1", GOOD, session="s1")  # late, after the decision
    world.publish("r2", BROKEN, session="s2")  # a dead letter: the session is quarantined
    world.publish("r3", GOOD, session="s2")  # held by the quarantine
    world.send(b"", {H_CONTROL: "release"}, key="s2")
    world.send(b"", {H_CONTROL: "bogus"}, key="s2")
    world.send(b"data: {}\n\n", {H_REQUEST_ID: "r4"})  # no chunk-seq: malformed
    world.publish("r5", GOOD[:40], end=None, session="s5")
    world.clock.now += 61
    world.sweep()  # abandoned
    world.clock.now += 601
    world.sweep()  # markers expired
    counted = set(world.processor.stats)
    assert counted <= set(Event), counted - set(Event)
    assert {Event.LATE_AFTER_DECISION, Event.SESSIONS_RELEASED, Event.CONTROL_MALFORMED,
            Event.MALFORMED_MESSAGES, Event.STREAMS_ABANDONED,
            Event.DEDUPE_MARKERS_EXPIRED, Event.STATE_FLUSHES} <= counted


def test_frames_after_the_end_are_in_the_record_and_counted_after_a_restart_too() -> None:
    """A gateway's trailers after ``[DONE]`` are not read, but counted: the record says how
    many, and so does ``Event.FRAMES_AFTER_END`` (``toolwire_frames_after_end_total``) — the
    same when the response was rebuilt from its stored chunks mid-way."""
    trailers = GOOD + b"data: [DONE]\n\ndata: {\"late\": 1}\n\n"
    world = World()
    (output,) = world.publish("r1", trailers)
    assert record(output)["frames_after_end"] == 2
    assert world.processor.stats[Event.FRAMES_AFTER_END] == 2
    rebuilt = World()
    cut = len(GOOD) + 5  # inside the first trailer
    assert rebuilt.publish("r2", trailers[:cut], slice_size=cut, end=None, session="s2") == []
    rebuilt.restart()
    (again,) = rebuilt.publish("r2", trailers[cut:], slice_size=len(trailers), start=1,
                               session="s2")
    assert rebuilt.processor.stats[Event.RESPONSES_REBUILT] == 1
    assert record(again)["frames_after_end"] == 2


#: Writer's one call: every choice finished, no data: [DONE] (the openai-chat corpus).
WRITER = next(c.body for c in CAPTURES if c.name == "writer_single_call")


def test_a_provider_that_never_sends_done_is_complete_once_every_choice_finished() -> None:
    """``TOOLWIRE_END_WITHOUT_DONE`` names providers by the ``provider`` header; for the others
    no [DONE] stays stream_closed, with a detail that names the setting."""
    world = World(settings=Settings(end_without_done="writer"))
    out = world.publish("r1", WRITER, **{H_PROVIDER: "writer"})
    got = record(out[0])
    assert (out[0].sink, got["outcome"], got["repairs"]["ended_without_done"]) == (
        Sink.ASSEMBLED, "assembled", 1)
    assert got["tool_calls"][0]["arguments"] == '{"location": "Zakopane"}'
    # The gateway's other end markers end the body as well.
    out = world.publish("r2", WRITER, end="cancelled", session="s2", **{H_PROVIDER: "writer"})
    assert record(out[0])["outcome"] == "assembled"
    for n, (provider, end) in enumerate([("openai", "eof"), ("openai", "cancelled")]):
        out = world.publish(f"x{n}", WRITER, end=end, session=f"t{n}",
                            **{H_PROVIDER: provider})
        letter = record(out[0])
        assert (out[0].sink, letter["reason"]) == (Sink.DEADLETTER, "stream_closed")
        assert "TOOLWIRE_END_WITHOUT_DONE" in letter["detail"]
        assert letter["repairs"]["ended_without_done"] == 0


def test_the_end_without_done_survives_a_restart_mid_body() -> None:
    """A response rebuilt from its stored chunks is read under the same end rule."""
    world = World(settings=Settings(end_without_done="writer"))
    half = len(WRITER) // 2
    assert world.publish("r1", WRITER[:half], end=None, **{H_PROVIDER: "writer"}) == []
    world.restart()
    out = world.publish("r1", WRITER[half:], start=(half + 39) // 40, **{H_PROVIDER: "writer"})
    assert world.processor.stats["responses_rebuilt"] == 1
    assert record(out[0])["outcome"] == "assembled"
    offline = assemble(WRITER, Options(end_without_done=True), Provenance(request_id="r1"))
    got = record(out[0])
    for key in ("provenance", "raw_chunks", "raw_chunks_truncated", "request_id", "session_id",
                "provider"):
        got.pop(key, None)
        offline.pop(key, None)
    assert got == offline


@pytest.mark.parametrize("coding", ["compress", "gzip", "br, zstd"])
def test_a_body_still_encoded_is_a_malformed_message_naming_its_coding(coding: str) -> None:
    """A tap publishes decoded bodies; one it could not decode comes with its coding, and is
    refused by name rather than read as SSE."""
    world = World()
    out = world.send(b"\x1f\x8b\x08\x00", {H_REQUEST_ID: "r1", H_CHUNK_SEQ: "0",
                                           H_CONTENT_ENCODING: coding})
    letter = record(out[0])
    assert (out[0].sink, letter["reason"]) == (Sink.DEADLETTER, "malformed_message")
    assert f"content-encoding={coding!r}" in letter["detail"]
    assert "still encoded" in letter["detail"]


@pytest.mark.parametrize("coding", ["", "identity", "Identity "])
def test_a_decoded_body_may_say_so(coding: str) -> None:
    world = World()
    out = world.publish("r1", GOOD, **{H_CONTENT_ENCODING: coding})
    assert [o.sink for o in out] == [Sink.ASSEMBLED]


def test_the_publisher_sends_the_coding_it_could_not_decode() -> None:
    meta = RequestMeta("r1", content_encoding="compress")
    assert (H_CONTENT_ENCODING, b"compress") in meta.message_headers(0)
    assert H_CONTENT_ENCODING not in dict(RequestMeta("r1").message_headers(0))
