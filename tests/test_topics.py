"""The topic contracts hold what the pipeline really publishes, and `topics apply` obeys them.

The schemas are checked against records made by the real code (every corpus capture, through
the core and through the processor, plus the processor-only dead letters), so a change to the
records that the contract does not describe fails here instead of surprising a consumer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from jsonschema import (  # type: ignore[import-untyped, unused-ignore]  # no stubs in [dev]
    Draft202012Validator,
    ValidationError,
)

from tests.core.captures import CAPTURES, Capture
from tests.core.sse import body, call, chunk
from toolwire import cli
from toolwire.config.settings import Settings
from toolwire.core import Assembler, Limits, Provenance, assemble
from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES
from toolwire.core.wires.chat_completions import ChatCompletions
from toolwire.kafka import TopicError, changelog_configs
from toolwire.stream import messages
from toolwire.stream.messages import (
    H_CHUNK_SEQ,
    H_CONTROL,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REQUEST_ID,
    InputMessage,
    Origin,
    Output,
    Sink,
)
from toolwire.stream.processor import Processor
from toolwire.tools.topics import (
    ROLES,
    Contract,
    ContractError,
    TopicMismatch,
    apply_topics,
    default_directory,
    load_contracts,
)

TOPICS_DIR = Path(__file__).resolve().parent.parent / "topics"
DAY_MS = 24 * 3600 * 1000


@pytest.fixture(scope="module")
def contracts() -> dict[Sink, Contract]:
    return {c.role: c for c in load_contracts(TOPICS_DIR, Settings())}


@pytest.fixture(scope="module")
def validators(contracts: dict[Sink, Contract]) -> dict[Sink, Draft202012Validator]:
    out = {}
    for role in (Sink.ASSEMBLED, Sink.DEADLETTER):
        schema = contracts[role].schema
        assert schema is not None
        out[role] = Draft202012Validator(schema)
    return out


def _errors(validator: Draft202012Validator, record: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in validator.iter_errors(record)]


# --------------------------------------------------------------------------- the files


def test_default_directory_is_the_checkouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLWIRE_TOPICS_DIR", raising=False)
    assert default_directory() == TOPICS_DIR
    monkeypatch.setenv("TOOLWIRE_TOPICS_DIR", "/somewhere/else")
    assert default_directory() == Path("/somewhere/else")


def test_three_contracts_with_their_defaults(contracts: dict[Sink, Contract]) -> None:
    assert list(contracts) == list(ROLES)
    expected = {Sink.INPUT: ("llm.sse.chunks", 1), Sink.ASSEMBLED: ("llm.toolcalls.assembled", 7),
                Sink.DEADLETTER: ("llm.toolcalls.deadletter", 30)}
    for role, (name, days) in expected.items():
        c = contracts[role]
        assert (c.name, c.partitions, c.cleanup_policy, c.retention_ms) == (
            name, 6, "delete", days * DAY_MS)
        assert c.source == TOPICS_DIR / f"{name}.json"
        assert c.key["description"]
        assert all(h.description for h in c.headers)
    assert "schema" not in contracts[Sink.INPUT].value
    assert contracts[Sink.INPUT].value["encoding"].startswith("raw bytes")
    assert contracts[Sink.ASSEMBLED].value["encoding"] == "JSON (UTF-8)"


def test_file_names_and_topic_names_agree_with_settings_defaults() -> None:
    defaults = Settings()
    for path in TOPICS_DIR.glob("*.json"):
        data = json.loads(path.read_text())
        assert path.stem == data["name"]
        assert getattr(defaults, f"topic_{data['role']}") == data["name"]
        assert data["partitions"] == defaults.partitions


def test_settings_override_names_and_partitions() -> None:
    settings = Settings(topic_chunks="in", topic_assembled="out", topic_deadletter="dlq",
                        partitions=3)
    loaded = load_contracts(TOPICS_DIR, settings)
    assert [(c.name, c.partitions) for c in loaded] == [("in", 3), ("out", 3), ("dlq", 3)]


def test_environment_overrides_when_no_settings_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_PARTITIONS", "12")
    monkeypatch.setenv("TOOLWIRE_TOPIC_DEADLETTER", "team.dlq")
    loaded = load_contracts(TOPICS_DIR)
    assert [c.partitions for c in loaded] == [12, 12, 12]
    assert loaded[2].name == "team.dlq"


def _copy_topics(tmp_path: Path) -> Path:
    target = tmp_path / "topics"
    shutil.copytree(TOPICS_DIR, target)
    return target


def test_a_file_that_disagrees_with_the_worker_default_is_refused(tmp_path: Path) -> None:
    directory = _copy_topics(tmp_path)
    path = directory / "llm.sse.chunks.json"
    data = json.loads(path.read_text())
    data["partitions"] = 12
    path.write_text(json.dumps(data))
    with pytest.raises(ContractError, match="TOOLWIRE_PARTITIONS=12"):
        load_contracts(directory, Settings())


@pytest.mark.parametrize(("change", "message"), [
    ({"role": "other"}, "role 'other'"),
    ({"cleanup_policy": "forever"}, "cleanup_policy"),
    ({"retention_ms": "1d"}, "retention_ms"),
    ({"name": "bad name"}, "not a valid Kafka topic name"),
    ({"headers": [{"name": "x"}]}, r"headers\[0\]"),
])
def test_malformed_contracts_are_refused(tmp_path: Path, change: dict[str, Any],
                                         message: str) -> None:
    directory = _copy_topics(tmp_path)
    path = directory / "llm.toolcalls.assembled.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(ContractError, match=message):
        load_contracts(directory, Settings())


def test_a_missing_contract_is_named(tmp_path: Path) -> None:
    directory = _copy_topics(tmp_path)
    (directory / "llm.toolcalls.deadletter.json").unlink()
    with pytest.raises(ContractError, match="deadletter"):
        load_contracts(directory, Settings())


def test_schemas_are_valid_draft_2020_12(contracts: dict[Sink, Contract]) -> None:
    for role in (Sink.ASSEMBLED, Sink.DEADLETTER):
        schema = contracts[role].schema
        assert schema is not None
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)


def test_both_schemas_share_the_same_definitions(contracts: dict[Sink, Contract]) -> None:
    """The dead letter embeds the assembled record (held_record): one definition, twice."""
    assembled = contracts[Sink.ASSEMBLED].schema
    dead = contracts[Sink.DEADLETTER].schema
    assert assembled is not None and dead is not None
    for name, definition in assembled["$defs"].items():
        assert dead["$defs"][name] == definition, name


# --------------------------------------------------------------------------- headers


def test_chunk_headers_are_the_ones_the_processor_reads(contracts: dict[Sink, Contract]) -> None:
    constants = {getattr(messages, n) for n in dir(messages) if n.startswith("H_")}
    produced_by_toolwire = {messages.H_IDEMPOTENCY_KEY, messages.H_OUTCOME, messages.H_WORKER}
    chunks = contracts[Sink.INPUT]
    assert set(chunks.header_names()) == constants - produced_by_toolwire
    assert chunks.header_names() == [H_REQUEST_ID, H_CHUNK_SEQ, H_PROVIDER, H_MODEL,
                                     H_DECLARED_TOOLS, messages.H_WIRE,
                                     messages.H_CONTENT_ENCODING, messages.H_TRACEPARENT,
                                     H_END, H_CONTROL, messages.H_REPLAY_OF]
    optional = {h.name for h in chunks.headers if not h.required}
    assert optional == {H_DECLARED_TOOLS, messages.H_WIRE, messages.H_CONTENT_ENCODING,
                        messages.H_TRACEPARENT, H_END, H_CONTROL, messages.H_REPLAY_OF}


def test_the_wire_header_is_documented_as_the_processor_reads_it(
        contracts: dict[Sink, Contract]) -> None:
    """Optional, absent meaning the default wire, every wire of the registry named, and what
    an unknown value (``auto`` included) becomes."""
    (wire,) = [h for h in contracts[Sink.INPUT].headers if h.name == messages.H_WIRE]
    assert messages.H_WIRE == "wire" and not wire.required
    assert f"a body without it is read as {DEFAULT_WIRE}" in wire.description
    assert all(name in wire.description for name in SUPPORTED_WIRES)
    assert "auto included" in wire.description and "malformed_message" in wire.description
    assert messages.read_envelope(_message("r", 0, b"")).wire == DEFAULT_WIRE


def test_dead_letters_name_their_wire(
        monkeypatch: pytest.MonkeyPatch, contracts: dict[Sink, Contract],
        validators: dict[Sink, Draft202012Validator]) -> None:
    monkeypatch.setitem(SUPPORTED_WIRES, "test-wire", ChatCompletions)
    processor, _ = _processor()
    other = _message("other", 0, BROKEN, key="s-other", end="eof")
    other.headers[messages.H_WIRE] = b"test-wire"
    letter = _check_output(processor.handle(other)[0], contracts, validators)
    assert letter["wire"] == "test-wire"
    assert not _errors(validators[Sink.DEADLETTER], {**letter, "wire": DEFAULT_WIRE})
    assert _errors(validators[Sink.DEADLETTER], {**letter, "wire": 3})
    assert _errors(validators[Sink.DEADLETTER], {**letter, "wire": ""})
    chat = _check_output(processor.handle(_message("chat", 0, BROKEN, key="s-chat",
                                                   end="eof"))[0], contracts, validators)
    assert chat["wire"] == DEFAULT_WIRE


def test_output_headers(contracts: dict[Sink, Contract]) -> None:
    assert contracts[Sink.ASSEMBLED].header_names() == [
        messages.H_REQUEST_ID, messages.H_IDEMPOTENCY_KEY, messages.H_OUTCOME,
        messages.H_WORKER]
    dead = contracts[Sink.DEADLETTER].header_names()
    assert dead[:4] == contracts[Sink.ASSEMBLED].header_names()
    assert dead[4:] == [f"toolwire.errors.{n}" for n in (
        "reason", "topic", "partition", "offset.first", "offset.last", "worker", "time")]


# --------------------------------------------------------------------------- records


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _processor(settings: Settings | None = None) -> tuple[Processor, Clock]:
    clock = Clock()
    settings = settings or Settings(worker_name="test-worker:1", stream_ttl_seconds=60)
    return Processor(settings, {}, {}, {}, clock=clock, wall=clock), clock


def _capture_provenance(capture: Capture) -> Provenance:
    return Provenance(request_id=f"req-{capture.name}", session_id=f"session-{capture.name}",
                      provider="test-provider", model=None)


def _check_output(output: Output, contracts: dict[Sink, Contract],
                  validators: dict[Sink, Draft202012Validator]) -> dict[str, Any]:
    """Value against the schema, headers against the header list: what a consumer relies on."""
    contract = contracts[output.sink]
    record: dict[str, Any] = orjson.loads(output.value)
    assert _errors(validators[output.sink], record) == []
    names = set(contract.header_names())
    required = {h.name for h in contract.headers if h.required}
    assert set(output.headers) <= names, set(output.headers) - names
    assert required <= set(output.headers), required - set(output.headers)
    assert output.headers[messages.H_OUTCOME].decode() == record["outcome"]
    if output.sink is Sink.DEADLETTER:
        assert output.headers["toolwire.errors.reason"].decode() == record["reason"]
    return record


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_every_capture_record_matches_its_schema(
        capture: Capture, contracts: dict[Sink, Contract],
        validators: dict[Sink, Draft202012Validator]) -> None:
    record = assemble(capture.body, capture.options, _capture_provenance(capture))
    if record["outcome"] == "assembled":
        assert _errors(validators[Sink.ASSEMBLED], record) == []
        # The same record is no dead letter.
        assert _errors(validators[Sink.DEADLETTER], record) != []
        return
    processor, _ = _processor()
    output = processor.encoder.dead_letter(
        record, Origin(partition=2, first_offset=40, last_offset=41),
        [(0, capture.body[:10]), (1, capture.body[10:])])
    letter = _check_output(output, contracts, validators)
    assert b"".join(base64.b64decode(r["value_b64"]) for r in letter["raw_chunks"]) == \
        capture.body
    assert _errors(validators[Sink.ASSEMBLED], letter) != []


def _message(request_id: str, seq: int, value: bytes, *, key: str | None = None,
             offset: int = 0, end: str | None = None, tools: str | None = None,
             partition: int = 0) -> InputMessage:
    headers = {H_REQUEST_ID: request_id.encode(), H_CHUNK_SEQ: str(seq).encode(),
               H_PROVIDER: b"test-provider", H_MODEL: b"test-model"}
    if end is not None:
        headers[H_END] = end.encode()
    if tools is not None:
        headers[H_DECLARED_TOOLS] = tools.encode()
    return InputMessage(topic="llm.sse.chunks", partition=partition, offset=offset,
                        key=None if key is None else key.encode(), value=value, headers=headers)


def _events(raw: bytes) -> list[bytes]:
    """The body cut after every event, as a gateway that forwards events one by one would."""
    parts = raw.split(b"\n\n")
    pieces = [p + b"\n\n" for p in parts[:-1]]
    return [*pieces, parts[-1]] if parts[-1] else pieces


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_every_capture_through_the_processor_matches_the_contracts(
        capture: Capture, contracts: dict[Sink, Contract],
        validators: dict[Sink, Draft202012Validator]) -> None:
    processor, _ = _processor(Settings(
        worker_name="w:1", strict=capture.options.strict,
        synthesize_ids="*" if capture.options.synthesize_ids else "",
        end_without_done="*" if capture.options.end_without_done else ""))
    tools = (None if capture.options.declared_tools is None
             else ",".join(sorted(capture.options.declared_tools)))
    pieces = _events(capture.body) or [b""]
    outputs: list[Output] = []
    for seq, piece in enumerate(pieces):
        last = seq == len(pieces) - 1
        outputs += processor.handle(_message(
            f"req-{capture.name}", seq, piece, key=f"s-{capture.name}", offset=100 + seq,
            end="eof" if last else None, tools=tools))
    assert len(outputs) == 1
    record = _check_output(outputs[0], contracts, validators)
    expected = assemble(capture.body, capture.options)
    assert record["outcome"] == expected["outcome"]
    assert record.get("reason") == expected.get("reason")


def main(argv: list[str]) -> int:
    """``toolwire topics ARGV``."""
    return cli.main(["topics", *argv])


# The dead letters that only the processor makes, each from a realistic input.
GOOD = body(chunk(call(0, "call_1", "get_weather", '{"city":')),
            chunk(call(0, "", "", '"Paris"}'), finish="tool_calls"))
BROKEN = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))


def _processor_only_dead_letters() -> Iterator[tuple[str, Output]]:
    processor, clock = _processor()
    assert processor.handle(_message("gap", 0, GOOD[:20], key="s-gap")) == []
    yield "sequence_gap", processor.handle(
        _message("gap", 2, GOOD[20:], key="s-gap", offset=1))[0]

    no_headers = InputMessage(topic="llm.sse.chunks", partition=1, offset=7, key=None,
                              value=b"data: {}\n\n", headers={})
    yield "malformed_message (no key, no headers)", processor.handle(no_headers)[0]
    bad_seq = InputMessage(topic="llm.sse.chunks", partition=1, offset=8, key=b"s-seq",
                           value=b"", headers={H_REQUEST_ID: b"r-seq", H_CHUNK_SEQ: b"one"})
    yield "malformed_message (bad seq)", processor.handle(bad_seq)[0]
    yield "malformed_message (unknown end marker)", processor.handle(
        _message("bad-end", 0, GOOD, key="s-bad-end", end="finished"))[0]
    bad_wire = _message("bad-wire", 0, GOOD, key="s-bad-wire", offset=9, end="eof")
    bad_wire.headers[messages.H_WIRE] = b"openai-realtime"
    yield "malformed_message (unknown wire)", processor.handle(bad_wire)[0]

    processor.handle(_message("broken", 0, BROKEN, key="s-q", end="eof"))
    yield "session_quarantined", processor.handle(
        _message("held", 0, GOOD, key="s-q", offset=1, end="eof"))[0]

    processor.handle(_message("idle", 0, GOOD[:30], key="s-idle", offset=5))
    clock.now += 3600
    control = processor.sweep()
    assert len(control) == 1 and control[0].sink is Sink.INPUT
    yield "stream_abandoned", processor.handle(InputMessage(
        topic="llm.sse.chunks", partition=0, offset=6, key=None, value=control[0].value,
        headers=control[0].headers))[0]

    tiny, _ = _processor(Settings(worker_name="w:1", limits=Limits(max_response_bytes=64)))
    yield "oversize", tiny.handle(_message("big", 0, GOOD, key="s-big", end="eof"))[0]

    cancelled, _ = _processor()
    yield "stream_closed (cancelled)", cancelled.handle(
        _message("cut", 0, GOOD[:40], key="s-cut", end="cancelled"))[0]

    # A worker restarts with an open response in its tables; the new one only sweeps it.
    first, _ = _processor()
    first.handle(_message("restart", 0, GOOD[:30], key="s-restart", offset=9))
    first.flush()  # a commit
    later = Clock()
    chunks, responses, quarantine = (cache.table for cache in first.tables)
    after = Processor(first.settings, chunks, responses, quarantine, clock=later, wall=later)
    assert after.sweep() == []  # learns the restored response; it has not been idle yet
    later.now += 3600
    sweep = after.sweep()
    assert len(sweep) == 1
    yield "stream_abandoned after a restart (last offset unknown)", after.handle(InputMessage(
        topic="llm.sse.chunks", partition=0, offset=10, key=None, value=sweep[0].value,
        headers=sweep[0].headers))[0]

    # A fault no rule names, while a chunk is applied: the whole response fails with it.
    faulty, _ = _processor()
    faulty.handle(_message("fault", 0, GOOD[:30], key="s-fault", offset=11))
    with patch.object(Assembler, "_apply", side_effect=RuntimeError("simulated fault")):
        yield "internal_error (applying a chunk)", faulty.handle(
            _message("fault", 1, GOOD[30:], key="s-fault", offset=12, end="eof"))[0]
    # The agent's last resort, when the processor itself raised.
    yield "internal_error (last resort)", faulty.message_failed(
        _message("lost", 0, GOOD, key="s-lost", offset=13), RuntimeError("simulated"))
    # A dead letter whose raw chunks and calls are far larger than a record may be.
    small, _ = _processor(Settings(worker_name="w:1", max_record_bytes=4096,
                                   limits=Limits(max_calls=1000)))
    many = body(*(chunk(call(i, f"c{i}", "f", "x" * 900)) for i in range(40)))
    slices = [many[i:i + 2000] for i in range(0, len(many), 2000)]
    for seq, piece in enumerate(slices[:-1]):
        assert small.handle(_message("huge", seq, piece, key="s-huge", offset=14 + seq,
                                     tools="g")) == []
    yield "oversize record cut to fit", small.handle(
        _message("huge", len(slices) - 1, slices[-1], key="s-huge", offset=14 + len(slices),
                 end="eof", tools="g"))[0]


def test_processor_only_dead_letters_match_the_contract(
        contracts: dict[Sink, Contract],
        validators: dict[Sink, Draft202012Validator]) -> None:
    seen = {}
    for label, output in _processor_only_dead_letters():
        assert output.sink is Sink.DEADLETTER, label
        seen[label] = _check_output(output, contracts, validators)
    held = seen["session_quarantined"]
    assert held["reason"] == "session_quarantined"
    assert held["held_record"]["outcome"] == "assembled"
    assert seen["malformed_message (no key, no headers)"]["request_id"] is None
    assert seen["malformed_message (no key, no headers)"]["raw_chunks"][0]["seq"] == -1
    bad_wire = seen["malformed_message (unknown wire)"]
    assert bad_wire["wire"] == "openai-realtime"
    assert bad_wire["detail"].startswith("header wire: unknown wire 'openai-realtime'")
    # Every dead letter of a response names the wire it was read as; a single message that
    # names none (no headers, a bad sequence number, the agent's last resort) names none.
    assert sorted(label for label, letter in seen.items() if "wire" not in letter) == [
        "internal_error (last resort)", "malformed_message (bad seq)",
        "malformed_message (no key, no headers)"]
    restarted = seen["stream_abandoned after a restart (last offset unknown)"]
    assert restarted["provenance"]["last_offset"] is None
    fault = seen["internal_error (applying a chunk)"]
    assert fault["request_id"] == "fault" and [c["seq"] for c in fault["raw_chunks"]] == [0, 1]
    cut = seen["oversize record cut to fit"]
    assert cut["reason"] == "unknown_tool" and cut["fields_truncated"] is True
    assert cut["raw_chunks_truncated"] is True


def test_the_reason_enum_is_exactly_what_the_code_produces(
        contracts: dict[Sink, Contract],
        validators: dict[Sink, Draft202012Validator]) -> None:
    schema = contracts[Sink.DEADLETTER].schema
    assert schema is not None
    enum = set(schema["$defs"]["dead_letter_record"]["properties"]["reason"]["enum"])
    produced = {orjson.loads(o.value)["reason"] for _, o in _processor_only_dead_letters()}
    produced |= {r["reason"] for c in CAPTURES
                 if (r := assemble(c.body, c.options))["outcome"] == "dead_letter"}
    assert produced == enum


def _assembled_record() -> dict[str, Any]:
    return assemble(GOOD, provenance=Provenance(request_id="r", session_id="s"))


@pytest.mark.parametrize(("path", "value"), [
    (("tool_calls", 0, "id"), ""),
    (("tool_calls", 0, "name"), None),
    (("tool_calls", 0, "arguments_json"), "yes"),
    (("repairs", "index_fallbacks"), -1),
    (("outcome",), "dead_letter"),
    (("request_id",), None),
    (("finish_reasons",), {"first": "stop"}),
])
def test_the_assembled_schema_refuses_what_downstream_must_never_see(
        validators: dict[Sink, Draft202012Validator], path: tuple[Any, ...],
        value: Any) -> None:
    record = _assembled_record()
    assert _errors(validators[Sink.ASSEMBLED], record) == []
    target: Any = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ValidationError):
        validators[Sink.ASSEMBLED].validate(record)


def test_the_assembled_schema_requires_every_repair_and_no_other(
        validators: dict[Sink, Draft202012Validator]) -> None:
    record = _assembled_record()
    del record["repairs"]["identity_conflicts"]
    assert _errors(validators[Sink.ASSEMBLED], record)
    record = _assembled_record()
    record["repairs"]["made_up"] = 0
    assert _errors(validators[Sink.ASSEMBLED], record)
    record = _assembled_record()
    record["surprise"] = 1
    assert _errors(validators[Sink.ASSEMBLED], record)


def test_the_dead_letter_schema_refuses_unknown_reasons_and_lone_held_records(
        validators: dict[Sink, Draft202012Validator]) -> None:
    processor, _ = _processor()
    output = processor.handle(_message("broken", 0, BROKEN, key="s", end="eof"))[0]
    letter = orjson.loads(output.value)
    assert _errors(validators[Sink.DEADLETTER], letter) == []
    assert _errors(validators[Sink.DEADLETTER], {**letter, "reason": "bad_vibes"})
    assert _errors(validators[Sink.DEADLETTER], {**letter, "held_record": _assembled_record()})
    assert _errors(validators[Sink.DEADLETTER], {**letter, "raw_chunks": [{"seq": 0}]})
    missing_repairs = {k: v for k, v in letter.items() if k != "repairs"}
    assert _errors(validators[Sink.DEADLETTER], missing_repairs)


# --------------------------------------------------------------------------- CLI without a broker


def test_show_prints_the_effective_contracts(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_PARTITIONS", "4")
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    assert "llm.sse.chunks (chunks): 4 partitions, cleanup.policy=delete, retention 1 day" in out
    assert main(["show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [c["partitions"] for c in shown] == [4, 4, 4]
    assert shown[1]["value"]["schema"]["$defs"]["tool_call"]["properties"]["id"]["minLength"] == 1


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["show", "--dir", str(tmp_path / "none")]) == 2
    assert "no topic contracts" in capsys.readouterr().err
    monkeypatch.setenv("TOOLWIRE_PARTITIONS", "zero")
    assert main(["show"]) == 2
    assert main(["--help"]) == 0


def test_apply_exits_1_when_the_broker_is_unreachable(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", "--bootstrap", "127.0.0.1:1", "--timeout", "5"]) == 1
    assert "127.0.0.1:1" in capsys.readouterr().err


class _Response:
    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def to_object(self) -> dict[str, Any]:
        return self.obj


class _FakeAdmin:
    """A broker whose listing lags behind its topics, as a broker's metadata briefly can."""

    def __init__(self, topics: dict[str, int], listed: set[str], **_: Any) -> None:
        self.topics, self.listed = topics, listed
        self.created: list[str] = []

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def list_topics(self) -> list[str]:
        return sorted(self.listed)

    async def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
        return [{"topic": n, "error_code": 0 if n in self.topics else 3,
                 "partitions": [{}] * self.topics.get(n, 0)} for n in names]

    async def describe_configs(self, resources: list[Any]) -> list[_Response]:
        return [_Response({"resources": [
            {"error_code": 0, "error_message": None, "resource_name": r.name,
             "config_entries": [{"config_names": "cleanup.policy", "config_value": "delete"}]}
            for r in resources]})]

    async def create_topics(self, new_topics: list[Any], timeout_ms: int,
                            validate_only: bool = False) -> _Response:
        errors = []
        for t in new_topics:
            if t.name in self.topics:
                errors.append({"topic": t.name, "error_code": 36, "error_message": "exists"})
                continue
            if not validate_only:
                self.topics[t.name] = t.num_partitions
                self.created.append(t.name)
            errors.append({"topic": t.name, "error_code": 0, "error_message": None})
        return _Response({"topic_errors": errors})


@pytest.mark.parametrize(("hidden_partitions", "outcome"), [(6, "ok"), (3, "mismatch")])
def test_a_topic_the_listing_missed_is_checked_like_an_existing_one(
        monkeypatch: pytest.MonkeyPatch, hidden_partitions: int, outcome: str) -> None:
    contracts = load_contracts(TOPICS_DIR, Settings())
    hidden = contracts[0].name
    admin = _FakeAdmin({hidden: hidden_partitions}, listed=set())
    monkeypatch.setattr("toolwire.tools.topics.AIOKafkaAdminClient", lambda **_: admin)
    if outcome == "ok":
        lines = asyncio.run(apply_topics("fake:9092", contracts, timeout=2))
        assert lines[0] == f"ok {hidden}: 6 partitions, cleanup.policy=delete"
        assert [line.split()[0] for line in lines[1:]] == ["created", "created"]
        assert admin.created == [c.name for c in contracts[1:]]
    else:
        with pytest.raises(TopicMismatch, match=f"{hidden} has 3 partitions, the contract "
                                                "says 6"):
            asyncio.run(apply_topics("fake:9092", contracts, timeout=2))
        assert admin.created == []  # nothing is created while a topic disagrees


# --------------------------------------------------------------------------- a real broker


def _unique_settings(partitions: int = 3) -> Settings:
    tag = uuid.uuid4().hex[:8]
    return Settings(app_id=f"tw-app-{tag}", topic_chunks=f"tw-{tag}.chunks",
                    topic_assembled=f"tw-{tag}.assembled",
                    topic_deadletter=f"tw-{tag}.deadletter", partitions=partitions)


async def _describe(bootstrap: str, names: list[str]) -> dict[str, tuple[int, dict[str, str]]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        topics = await admin.describe_topics(names)
        counts = {t["topic"]: len(t["partitions"]) for t in topics if t["error_code"] == 0}
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
        configs = {r["resource_name"]: {e["config_names"]: e["config_value"]
                                        for e in r["config_entries"]}
                   for resp in responses for r in resp.to_object()["resources"]}
        return {n: (counts[n], configs[n]) for n in names}
    finally:
        await admin.close()


async def _create(bootstrap: str, name: str, partitions: int,
                  configs: dict[str, str] | None = None) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(name, partitions, 1,
                                                       topic_configs=configs or {})])
        assert [e[1] for e in response.topic_errors] == [0]
    finally:
        await admin.close()


async def _list(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


@pytest.mark.broker
def test_apply_creates_the_topics_as_contracted(kafka_bootstrap: str) -> None:
    contracts = load_contracts(TOPICS_DIR, _unique_settings(partitions=3))
    lines = asyncio.run(apply_topics(kafka_bootstrap, contracts))
    assert [line.split(":")[0] for line in lines] == [f"created {c.name}" for c in contracts]
    described = asyncio.run(_describe(kafka_bootstrap, [c.name for c in contracts]))
    for c in contracts:
        partitions, configs = described[c.name]
        assert partitions == 3
        assert configs["cleanup.policy"] == "delete"
        assert configs["retention.ms"] == str(c.retention_ms)


@pytest.mark.broker
def test_apply_twice_is_idempotent(kafka_bootstrap: str) -> None:
    contracts = load_contracts(TOPICS_DIR, _unique_settings())
    asyncio.run(apply_topics(kafka_bootstrap, contracts))
    again = asyncio.run(apply_topics(kafka_bootstrap, contracts))
    assert again == [f"ok {c.name}: 3 partitions, cleanup.policy=delete" for c in contracts]


@pytest.mark.broker
def test_concurrent_applies_both_succeed(kafka_bootstrap: str) -> None:
    """Two `topics-init` containers at once: the loser of each creation race checks instead."""
    contracts = load_contracts(TOPICS_DIR, _unique_settings())

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(apply_topics(kafka_bootstrap, contracts),
                                         apply_topics(kafka_bootstrap, contracts)))

    first, second = asyncio.run(both())
    for a, b, c in zip(first, second, contracts, strict=True):
        assert {a.split(" ")[0], b.split(" ")[0]} <= {"created", "ok"}, (a, b)
        assert c.name in a and c.name in b
    described = asyncio.run(_describe(kafka_bootstrap, [c.name for c in contracts]))
    assert {n: p for n, (p, _) in described.items()} == {c.name: 3 for c in contracts}


@pytest.mark.broker
def test_apply_refuses_a_topic_with_another_partition_count(kafka_bootstrap: str) -> None:
    settings = _unique_settings(partitions=6)
    asyncio.run(_create(kafka_bootstrap, settings.topic_chunks, 3))
    contracts = load_contracts(TOPICS_DIR, settings)
    with pytest.raises(TopicMismatch) as caught:
        asyncio.run(apply_topics(kafka_bootstrap, contracts))
    message = str(caught.value)
    assert (f"topic {settings.topic_chunks} has 3 partitions, the contract says 6: "
            "recreate it or set TOOLWIRE_PARTITIONS=3") in message
    # Nothing is created while a topic disagrees.
    existing = asyncio.run(_list(kafka_bootstrap))
    assert settings.topic_assembled not in existing
    assert settings.topic_deadletter not in existing


@pytest.mark.broker
def test_apply_refuses_another_cleanup_policy(kafka_bootstrap: str) -> None:
    settings = _unique_settings()
    asyncio.run(_create(kafka_bootstrap, settings.topic_deadletter, 3,
                        {"cleanup.policy": "compact"}))
    with pytest.raises(TopicMismatch, match=(
            f"topic {settings.topic_deadletter} has cleanup.policy=compact, the contract "
            "says delete")):
        asyncio.run(apply_topics(kafka_bootstrap, load_contracts(TOPICS_DIR, settings)))


@pytest.mark.broker
def test_apply_refuses_changelogs_partitioned_unlike_the_input(kafka_bootstrap: str) -> None:
    settings = _unique_settings(partitions=3)
    changelog = f"{settings.app_id}-responses-changelog"
    asyncio.run(_create(kafka_bootstrap, changelog, 2))
    contracts = load_contracts(TOPICS_DIR, settings)
    with pytest.raises(TopicMismatch, match=f"changelog topic {changelog} has 2 partitions"):
        asyncio.run(apply_topics(kafka_bootstrap, contracts, app_id=settings.app_id))
    # Without the app id the changelogs are not looked at.
    asyncio.run(apply_topics(kafka_bootstrap, contracts))


@pytest.mark.broker
def test_apply_reports_changelogs_whose_compaction_configs_differ(kafka_bootstrap: str) -> None:
    """A changelog created before the worker set segment.ms and the rest (Kafka's defaults:
    never compacted in practice) gets a line with the command; one created as the worker does
    gets none; neither is altered, and neither is an error."""
    settings = _unique_settings(partitions=3)
    wanted = changelog_configs(settings)
    old, new = (f"{settings.app_id}-responses-changelog", f"{settings.app_id}-chunks-changelog")
    asyncio.run(_create(kafka_bootstrap, old, 3, {"cleanup.policy": "compact"}))
    asyncio.run(_create(kafka_bootstrap, new, 3, {"cleanup.policy": "compact", **wanted}))
    _, before = asyncio.run(_describe(kafka_bootstrap, [old]))[old]
    assert before["segment.ms"] != wanted["segment.ms"]
    contracts = load_contracts(TOPICS_DIR, settings)
    lines = asyncio.run(apply_topics(kafka_bootstrap, contracts, app_id=settings.app_id,
                                     changelog=wanted))
    assert len(lines) == len(contracts) + 1
    drift = lines[-1]
    assert drift.startswith(f"changelog topic {old} has segment.ms={before['segment.ms']}, "
                            f"segment.bytes={before['segment.bytes']}")
    assert (f"--entity-name {old} --add-config segment.ms={wanted['segment.ms']},"
            f"segment.bytes={wanted['segment.bytes']},"
            f"delete.retention.ms={wanted['delete.retention.ms']}") in drift
    assert not any(new in line for line in lines)
    _, configs = asyncio.run(_describe(kafka_bootstrap, [old]))[old]
    assert configs["segment.ms"] == before["segment.ms"]  # reported, not altered


@pytest.mark.broker
def test_a_refused_creation_says_why(kafka_bootstrap: str) -> None:
    contracts = load_contracts(TOPICS_DIR, _unique_settings())
    with pytest.raises(TopicError, match="InvalidReplicationFactor"):
        asyncio.run(apply_topics(kafka_bootstrap, contracts, replication_factor=3))
    assert not {c.name for c in contracts} & asyncio.run(_list(kafka_bootstrap))


@pytest.mark.broker
def test_cli_apply_exit_codes(kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    settings = _unique_settings(partitions=2)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("TOOLWIRE_APP_ID", settings.app_id)
    monkeypatch.setenv("TOOLWIRE_TOPIC_CHUNKS", settings.topic_chunks)
    monkeypatch.setenv("TOOLWIRE_TOPIC_ASSEMBLED", settings.topic_assembled)
    monkeypatch.setenv("TOOLWIRE_TOPIC_DEADLETTER", settings.topic_deadletter)
    monkeypatch.setenv("TOOLWIRE_PARTITIONS", "2")
    assert main(["apply"]) == 0
    assert capsys.readouterr().out.count("created ") == 3
    assert main(["apply"]) == 0
    assert capsys.readouterr().out.count("ok ") == 3
    monkeypatch.setenv("TOOLWIRE_PARTITIONS", "4")
    assert main(["apply"]) == 1
    err = capsys.readouterr().err
    assert f"topic {settings.topic_chunks} has 2 partitions, the contract says 4" in err
    assert "TOOLWIRE_PARTITIONS=2" in err


@pytest.mark.broker
def test_a_broker_named_only_in_the_settings_file_is_the_one_commands_use(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """``KAFKA_BOOTSTRAP_SERVERS`` and the topic names in ``TOOLWIRE_SETTINGS_FILE`` alone,
    in a child process whose environment has neither (and a state directory with no local
    broker): ``toolwire broker status`` reports that broker, ``toolwire topics apply``
    creates the file's topics on it. Before the settings were the one reader of the
    environment, the broker commands read ``KAFKA_BOOTSTRAP_SERVERS`` from the environment
    only and looked for a local broker instead."""
    import subprocess
    import sys

    names = _unique_settings()
    settings_file = tmp_path / "toolwire.env"
    settings_file.write_text(
        f"KAFKA_BOOTSTRAP_SERVERS={kafka_bootstrap}\n"
        f"TOOLWIRE_TOPIC_CHUNKS={names.topic_chunks}\n"
        f"TOOLWIRE_TOPIC_ASSEMBLED={names.topic_assembled}\n"
        f"TOOLWIRE_TOPIC_DEADLETTER={names.topic_deadletter}\n"
        f"TOOLWIRE_PARTITIONS=3\n"
        f"TOOLWIRE_TOPICS_DIR={TOPICS_DIR}\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "TOOLWIRE_SETTINGS_FILE": str(settings_file),
           "TOOLWIRE_STATE_DIR": str(tmp_path / "no-local-broker")}

    def toolwire(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "toolwire.cli", *argv], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              check=False)

    status = toolwire("broker", "status")
    assert status.returncode == 0, status.stderr
    reported = json.loads(status.stdout)
    assert reported["external"] is True and reported["bootstrap"] == kafka_bootstrap
    assert reported["ready"] is True
    applied = toolwire("topics", "apply")
    assert applied.returncode == 0, applied.stderr
    assert {names.topic_chunks, names.topic_assembled, names.topic_deadletter} <= asyncio.run(
        _list(kafka_bootstrap))
    assert not (tmp_path / "no-local-broker").exists()  # no local broker was started
