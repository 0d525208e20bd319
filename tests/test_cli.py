"""``toolwire`` as a user runs it: a separate process, real files, exit statuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.core.captures import CORPUS
from tests.core.sse import body, call, chunk
from tests.stream.test_wire_header import CUT, LengthMayRun
from toolwire import cli
from toolwire.core.wires import SUPPORTED_WIRES

GOOD = body(chunk(call(0, "call_1", "get_weather", '{"city":"Paris"}')),
            chunk(call(0, "", "", None), finish="tool_calls"))
NAMELESS = body(chunk(call(0, arguments="{}")), chunk(finish="tool_calls"))


def toolwire(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "toolwire.cli", *args], input=stdin,
                          capture_output=True, timeout=60, check=False)


def test_assemble_prints_the_record_and_exits_0(tmp_path: Path) -> None:
    capture = tmp_path / "good.sse"
    capture.write_bytes(GOOD)
    done = toolwire("assemble", str(capture), "--session", "s1", "--request", "r1")
    assert done.returncode == 0, done.stderr
    record = orjson.loads(done.stdout)
    assert record["outcome"] == "assembled"
    assert (record["session_id"], record["request_id"]) == ("s1", "r1")
    assert record["tool_calls"][0]["id"] == "call_1"


def test_assemble_reads_stdin_and_exits_1_on_a_dead_letter() -> None:
    done = toolwire("assemble", "-", "--compact", stdin=NAMELESS)
    assert done.returncode == 1
    assert done.stdout.count(b"\n") == 1
    assert orjson.loads(done.stdout)["reason"] == "missing_identity"


def test_declared_tools_dead_letter_unknown_names() -> None:
    done = toolwire("assemble", "-", "--tools", "search,read", stdin=GOOD)
    assert done.returncode == 1
    assert orjson.loads(done.stdout)["reason"] == "unknown_tool"


def test_usage_errors_exit_2_with_a_message_that_says_what_to_fix(tmp_path: Path) -> None:
    missing = toolwire("assemble", str(tmp_path / "nope.sse"))
    assert missing.returncode == 2 and b"cannot read" in missing.stderr
    assert toolwire().returncode == 2
    assert toolwire("assemble").returncode == 2


def test_bad_limit_setting_is_a_clear_error() -> None:
    done = subprocess.run([sys.executable, "-m", "toolwire.cli", "assemble", "-"], input=GOOD,
                          capture_output=True, timeout=60, check=False,
                          env={"TOOLWIRE_MAX_CALLS": "lots", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert b"TOOLWIRE_MAX_CALLS='lots': expected a positive whole number" in done.stderr


def test_help_explains_the_exit_statuses() -> None:
    done = toolwire("assemble", "--help")
    assert done.returncode == 0
    assert b"exit status" in done.stdout and b"dead letter" in done.stdout


def test_assemble_prints_one_json_line_unless_asked_to_indent() -> None:
    plain = toolwire("assemble", "-", stdin=GOOD)
    assert plain.returncode == 0 and plain.stdout.count(b"\n") == 1
    pretty = toolwire("assemble", "-", "--pretty", stdin=GOOD)
    assert pretty.stdout.count(b"\n") > 10
    assert orjson.loads(pretty.stdout) == orjson.loads(plain.stdout)


def test_every_command_has_help_and_shares_the_exit_codes() -> None:
    for command in ("assemble", "worker", "publish", "consume", "dlq", "topics", "broker",
                    "demo", "tap"):
        done = toolwire(command, "--help")
        assert done.returncode == 0, command
        assert b"usage: toolwire " + command.encode() in done.stdout
    assert b"0 ok, 1" in toolwire("--help").stdout
    assert toolwire("topics").returncode == 2  # no action: help on stderr, usage status
    assert toolwire("broker", "nonsense").returncode == 2
    bad = toolwire("consume", "assembled", "--max", "0")
    assert bad.returncode == 2 and b"positive" in bad.stderr


def test_assemble_wire_names_the_wire_and_auto_is_the_only_one(tmp_path: Path) -> None:
    capture = tmp_path / "good.sse"
    capture.write_bytes(GOOD)
    default = toolwire("assemble", str(capture), "--compact")
    for wire in ("openai-chat", "auto"):
        named = toolwire("assemble", str(capture), "--compact", "--wire", wire)
        assert named.returncode == 0, named.stderr
        assert named.stdout == default.stdout, wire


#: The registered wires as an error message lists them (the registry is the one list).
VALID = ", ".join(repr(name) for name in SUPPORTED_WIRES)


def test_assemble_wire_refuses_an_unknown_name_listing_the_valid_ones() -> None:
    for wire in ("openai-realtime", "", "OPENAI-CHAT"):
        done = toolwire("assemble", "-", "--wire", wire, stdin=GOOD)
        assert done.returncode == 2, wire
        assert done.stdout == b""
        assert (f"argument --wire: unknown wire {wire!r}: expected one of {VALID}, "
                "'auto'").encode() in done.stderr


def test_assemble_help_lists_the_wires() -> None:
    done = toolwire("assemble", "--help")
    assert b"--wire NAME" in done.stdout
    assert (", ".join(SUPPORTED_WIRES).encode() + b", auto (default auto: "
            b"told by the body's first event)") in b" ".join(done.stdout.split())


def test_assemble_wire_reads_the_body_as_that_wire(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """In process, with a second wire registered for the test (where ``length`` may run): the
    same body decides otherwise, and the valid names come from the registry of the moment."""
    monkeypatch.setitem(SUPPORTED_WIRES, "test-wire", LengthMayRun)
    capture = tmp_path / "cut.sse"
    capture.write_bytes(CUT)
    assert cli.main(["assemble", str(capture), "--compact", "--wire", "openai-chat"]) == 0
    chat = orjson.loads(capsys.readouterr().out)
    assert (chat["truncated"], chat["tool_calls"]) == (True, [])
    assert cli.main(["assemble", str(capture), "--compact", "--wire", "test-wire"]) == 0
    other = orjson.loads(capsys.readouterr().out)
    assert (other["truncated"], len(other["tool_calls"])) == (False, 1)
    assert cli.main(["assemble", str(capture), "--wire", "nope"]) == 2
    assert f"expected one of {VALID}, 'test-wire', 'auto'" in capsys.readouterr().err


#: Writer's one call: finished, but no data: [DONE] (tests/core/corpus_wires/openai-chat).
WRITER = (CORPUS / "writer_single_call.sse").read_bytes()


def test_assemble_end_without_done_takes_a_finished_body_as_complete() -> None:
    closed = toolwire("assemble", "-", "--compact", stdin=WRITER)
    assert closed.returncode == 1
    letter = orjson.loads(closed.stdout)
    assert letter["reason"] == "stream_closed"
    assert "TOOLWIRE_END_WITHOUT_DONE" in letter["detail"]
    assert "--end-without-done" in letter["detail"]
    done = toolwire("assemble", "-", "--compact", "--end-without-done", stdin=WRITER)
    assert done.returncode == 0, done.stderr
    record = orjson.loads(done.stdout)
    assert (record["outcome"], record["finish_reason"]) == ("assembled", "tool_calls")
    assert record["repairs"]["ended_without_done"] == 1
    assert [c["id"] for c in record["tool_calls"]] == [
        "chatcmpl-tool-a31f1a5690b14b7daf0e78d2a2d23da2"]
    # A body cut before its finish chunk stays stream_closed with the option.
    cut = WRITER[:WRITER.index(b'"finish_reason":"tool_calls"')]
    cut = cut[:cut.rindex(b"data: ")]
    still = toolwire("assemble", "-", "--compact", "--end-without-done", stdin=cut)
    assert still.returncode == 1
    assert orjson.loads(still.stdout)["reason"] == "stream_closed"


def test_assemble_help_explains_end_without_done() -> None:
    done = toolwire("assemble", "--help")
    text = b" ".join(done.stdout.split())
    assert b"--end-without-done" in text and b"TOOLWIRE_END_WITHOUT_DONE" in text
