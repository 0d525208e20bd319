"""One conformance suite, driven by the registry: what every wire must meet, and proof that a
new wire touches one module and one registry line.

Every registered wire must have a hand-written corpus, found the same way for every wire
(``tests/core/corpus_wires/<its registry name>``); every expectation of every corpus must state
every key of its record (but the allow-list's, or one its capture gives a reason for leaving
out); and every capture of every corpus must give the same record through the stream processor
when the worker crashes mid-body and the processor rebuilds the open response from its stored
chunks (``Processor.rebuild``, the real path, not a fresh assembler fed the slices), as without
the crash, and as ``assemble`` gives.

Then a sixth... seventh wire, :class:`Tally`, written in this one module and registered with one
line (:func:`registered`), is read by everything that reads wires: ``assemble`` by name and
under ``auto``, the decision under its policy, the publisher's slicing, the chunk header
check, the processor with a restart mid-body, and ``toolwire assemble --wire``. Nothing else
had to change for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from tests.core.corpus_build import OMITTED
from tests.core.corpus_properties import mismatches, unstated_reasons, wire_captures
from tests.stream.test_processor import World, record
from toolwire.cli import main
from toolwire.config.settings import Settings
from toolwire.core import Options, Provenance, assemble
from toolwire.core.framing import EventFramer, NDJSONFramer
from toolwire.core.identity import ABSENT
from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES, FinishPolicy, Wire, WireTarget
from toolwire.core.wires._base import BY_CALLS
from toolwire.core.wires._shared import parse_object
from toolwire.publish import split_events
from toolwire.stream.messages import H_DECLARED_TOOLS, H_END, H_WIRE, read_envelope
from toolwire.tools.captures import Capture

WIRES = Path(__file__).parent / "core" / "corpus_wires"


def corpus_of(wire: str) -> list[Capture]:
    """The corpus a wire is held to: ``corpus_wires/<its registry name>``, for every wire."""
    return wire_captures(WIRES / wire)


def test_every_wire_has_a_corpus_of_its_own() -> None:
    for wire in SUPPORTED_WIRES:
        captures = corpus_of(wire)
        assert len(captures) >= 15, f"{wire}: at least 15 captures"
        assert {c.options.wire for c in captures} == {wire}, wire
    # No folder names a wire that is not registered.
    assert {p.name for p in WIRES.iterdir() if p.is_dir()} == set(SUPPORTED_WIRES)


def _settings(options: Options) -> Settings:
    return Settings(strict=options.strict, synthesize_ids="*" if options.synthesize_ids else "",
                    end_without_done="*" if options.end_without_done else "",
                    stream_ttl_seconds=60, dedupe_window_seconds=600)


def _published(capture: Capture, crash_after: int | None) -> dict[str, Any]:
    """The record a worker publishes for ``capture``, one event per message, the worker
    crashing (memory lost, tables kept) after ``crash_after`` messages."""
    world = World(settings=_settings(capture.options))
    pieces = split_events(capture.body, capture.options.wire)
    headers: dict[str, str] = {}
    if capture.options.wire != DEFAULT_WIRE:
        headers[H_WIRE] = capture.options.wire
    tools = capture.options.declared_tools
    if tools is not None:
        headers[H_DECLARED_TOOLS] = ",".join(sorted(tools))
    outputs = []
    cut = len(pieces) if crash_after is None else crash_after
    for seq, piece in enumerate(pieces[:cut]):
        outputs += world.send(piece, {"request-id": "r1", "chunk-seq": str(seq), **headers})
    if crash_after is not None:
        world.restart()
        for seq, piece in enumerate(pieces[cut:], cut):
            outputs += world.send(piece, {"request-id": "r1", "chunk-seq": str(seq), **headers})
    outputs += world.send(b"", {"request-id": "r1", H_END: "eof",
                                "chunk-seq": str(len(pieces)), **headers})
    (published,) = [o for o in outputs if o.value]
    got = record(published)
    for key in ("provenance", "raw_chunks", "raw_chunks_truncated", "request_id", "session_id"):
        got.pop(key, None)
    return got


ALL = [capture for wire in SUPPORTED_WIRES for capture in corpus_of(wire)]


def test_every_wire_tells_its_own_bodies_under_auto() -> None:
    """The detection table is the wires themselves (``Wire.recognizes``, their framings): every
    wire says how ``auto`` tells it, and each capture of each wire gives, read under ``auto``,
    the record it gives named."""
    differ = [f"{c.options.wire}/{c.name}" for c in ALL
              if assemble(c.body, dataclasses.replace(c.options, wire="auto"))
              != assemble(c.body, c.options)]
    assert differ == []
    for wire in SUPPORTED_WIRES.values():
        assert "recognizes" in vars(wire), f"{wire.name} does not say how auto tells it"


def test_the_taps_per_wire_tables_cover_every_wire() -> None:
    """The tap's tables (a request's wire by its path, what a body holds once its terminal
    event came) name every registered wire and no other, and each terminal is what the
    wire's own bodies that end cleanly hold."""
    from toolwire.tap._tee import TERMINALS, WIRES_BY_PATH

    assert sorted({wire for _, wire in WIRES_BY_PATH}) == sorted(SUPPORTED_WIRES)
    assert sorted(TERMINALS) == sorted(SUPPORTED_WIRES)
    for wire in SUPPORTED_WIRES:
        clean = [c for c in corpus_of(wire) if (r := assemble(c.body, c.options))["outcome"]
                 == "assembled" and r["error_code"] is None and not c.options.end_without_done]
        assert clean, wire
        missing = [c.name for c in clean if not any(t in c.body for t in TERMINALS[wire])]
        assert missing == [], f"{wire}: clean bodies without a terminal the tap knows"


@pytest.mark.parametrize("capture", ALL, ids=[f"{c.options.wire}/{c.name}" for c in ALL])
def test_every_expectation_states_every_key_of_its_record(capture: Capture) -> None:
    """A key the record has and the expectation leaves out is checked by no capture (as
    ``frames_after_end`` was by none): every key is stated, with the record's value, but the
    allow-list's (provenance) and those the capture itself gives a reason for."""
    assert mismatches(capture, assemble(capture.body, capture.options)) == {}, capture.name


def test_the_allow_list_and_the_captures_reasons_name_keys_of_the_record() -> None:
    """Each key left out is a key every record has (nothing stale), each with its reason."""
    records = [assemble(c.body, c.options) for c in ALL]
    assert all(key in record for record in records for key in OMITTED)
    assert all(type(why) is str and why for why in OMITTED.values())
    reasons = {(c.options.wire, c.name): unstated_reasons(c) for c in ALL}
    assert all(type(why) is str and why for given in reasons.values() for why in given.values())
    assert sum(len(given) for given in reasons.values()) < len(ALL) // 20  # exceptions, not a rule


def test_an_expectation_that_leaves_a_key_out_is_refused() -> None:
    for capture in (ALL[0], ALL[-1]):
        record = assemble(capture.body, capture.options)
        for key in [k for k in record if k not in OMITTED]:
            cut = dataclasses.replace(capture, expect={k: v for k, v in capture.expect.items()
                                                       if k != key})
            assert mismatches(cut, record) == {key: ("<unstated>", record[key])}, key


@pytest.mark.parametrize("capture", ALL, ids=[f"{c.options.wire}/{c.name}" for c in ALL])
def test_a_crash_mid_body_and_the_processors_rebuild_give_the_same_record(
        capture: Capture) -> None:
    expected = dict(assemble(capture.body, capture.options, Provenance(request_id="r1")))
    expected.pop("request_id"), expected.pop("session_id")
    pieces = split_events(capture.body, capture.options.wire)
    assert _published(capture, None) == expected
    for crash_after in sorted({1, len(pieces) // 2, len(pieces) - 1} - {0}):
        assert _published(capture, crash_after) == expected, crash_after


# -- a new wire: this module, and one registry line -----------------------------------------


class Tally(Wire):
    """A toy API: NDJSON lines ``{"tally": 1, "call": {"id", "name", "args"}}``, each a whole
    call, ended by ``{"tally": 1, "end": "<reason>"}``."""

    __slots__ = ()

    name = "tally-lines"
    framing: ClassVar[type[EventFramer]] = NDJSONFramer
    policy = FinishPolicy(finishes={"ok": BY_CALLS, "cut": "length"},
                          missing_end="the body ended before its end line")

    @classmethod
    def recognizes(cls, first: bytes) -> bool:
        return first.startswith(b'{"tally":')

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        for line in events:
            event = parse_object(line)
            asm.events += 1
            choice = asm.choices.get(0) or asm.new_choice(0)
            if "end" in event:
                choice.finish_reason = str(event["end"])
                asm.end_body()
                asm.ended_on(line)
                return
            call = event.get("call")
            if type(call) is dict:
                new = asm.start_call(0, choice)
                asm.apply_call(event, 0, choice, new.index, call.get("id", ABSENT),
                               call.get("name", ABSENT), str(call.get("args", "")))

    def ends(self, last: bytes | None) -> bool:
        return False


@contextlib.contextmanager
def registered() -> Iterator[None]:
    """The one registry line a new wire adds (here for the test's length only)."""
    SUPPORTED_WIRES[Tally.name] = Tally
    try:
        yield
    finally:
        del SUPPORTED_WIRES[Tally.name]


def _line(**fields: object) -> bytes:
    return orjson.dumps({"tally": 1, **fields}) + b"\n"


BODY = (_line(call={"id": "t1", "name": "add", "args": '{"n":1}'})
        + _line(call={"id": "t2", "name": "add", "args": '{"n":2}'}) + _line(end="ok"))
CUT = _line(call={"id": "t1", "name": "add", "args": '{"n":1}'}) + _line(end="cut")
NAMELESS = _line(call={"id": "t1", "name": "", "args": "{}"}) + _line(end="ok")


def test_a_new_wire_is_read_by_name_and_under_auto_with_the_cores_rules() -> None:
    with registered():
        for wire in (Tally.name, "auto"):
            got = assemble(BODY, Options(wire=wire))
            assert (got["outcome"], got["wire"], got["finish"]) == (
                "assembled", Tally.name, "tool_calls")
            assert [(c["id"], c["arguments"]) for c in got["tool_calls"]] == [
                ("t1", '{"n":1}'), ("t2", '{"n":2}')]
        cut = assemble(CUT, Options(wire=Tally.name))  # its policy: truncated, withheld
        assert (cut["finish"], cut["truncated"], cut["tool_calls"]) == ("length", True, [])
        nameless = assemble(NAMELESS, Options(wire=Tally.name))  # the identity rule
        assert (nameless["outcome"], nameless["reason"]) == ("dead_letter", "missing_identity")
        closed = assemble(BODY[:-5], Options(wire=Tally.name))
        assert closed["reason"] == "stream_closed"
        assert "the body ended before its end line" in closed["detail"]
        assert split_events(BODY, Tally.name) == BODY.splitlines(keepends=True)
    assert assemble(BODY, Options(wire="auto"))["outcome"] == "dead_letter"  # unregistered


def test_a_new_wire_goes_through_the_processor_and_a_restart() -> None:
    with registered():
        envelope = read_envelope(_message({H_WIRE: Tally.name.encode()}))
        assert envelope.fault is None and envelope.wire == Tally.name
        capture = Capture("tally", BODY, Options(wire=Tally.name), {}, "")
        expected = dict(assemble(BODY, capture.options, Provenance(request_id="r1")))
        expected.pop("request_id"), expected.pop("session_id")
        assert _published(capture, 1) == expected == _published(capture, None)
    assert read_envelope(_message({H_WIRE: Tally.name.encode()})).fault is not None


def test_a_new_wire_is_offered_by_the_cli(tmp_path: Path) -> None:
    body = tmp_path / "tally.ndjson"
    body.write_bytes(BODY)
    with registered():
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw)
        with contextlib.redirect_stdout(out):
            assert main(["assemble", "--wire", Tally.name, str(body)]) == 0
        out.flush()
        assert orjson.loads(raw.getvalue())["wire"] == Tally.name
        help_text = io.StringIO()
        with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
            main(["assemble", "--help"])
        assert Tally.name in help_text.getvalue()


def _message(headers: dict[str, bytes]) -> Any:
    from toolwire.stream.messages import InputMessage

    return InputMessage("llm.sse.chunks", 0, 1, b"s1", b"x",
                        {"request-id": b"r1", "chunk-seq": b"0", **headers})
