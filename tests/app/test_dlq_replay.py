"""What ``toolwire dlq replay`` publishes, without a broker: the replay carries the declared
tools the dead letter recorded, so the worker judges it as it judged the original; the round
trip dead letter → replay messages → processor is checked over in-memory tables."""

from __future__ import annotations

import argparse
import hashlib
import os
from typing import Any

import orjson
import pytest

from tests.core.sse import body, call, chunk
from tests.stream.test_processor import GOOD, World, record
from toolwire.cli import dlq as dlq_cli
from toolwire.stream.messages import (
    END_EOF,
    H_CHUNK_SEQ,
    H_DECLARED_TOOLS,
    H_END,
    H_MODEL,
    H_PROVIDER,
    H_REPLAY_OF,
    H_REQUEST_ID,
    InputMessage,
    Sink,
)
from toolwire.tools.dlq import (
    NotReplayable,
    StoredDeadLetter,
    replay_messages,
    replay_meta,
    replay_request_id,
)

TOPIC = "llm.toolcalls.deadletter"


def stored(letter: dict[str, Any], partition: int = 0, offset: int = 7) -> StoredDeadLetter:
    return StoredDeadLetter(partition=partition, offset=offset, timestamp=0.0,
                            key=letter.get("session_id"), headers={}, record=letter)


def unknown_tool_letter(tools: str = "search, read_file") -> dict[str, Any]:
    out = World().publish("r1", GOOD, **{H_DECLARED_TOOLS: tools})
    letter = record(out[0])
    assert letter["reason"] == "unknown_tool"
    return letter


def tools_headers(letter: dict[str, Any]) -> list[bytes | None]:
    """The declared-tools header of each replay message (``None``: not sent)."""
    _, messages = replay_messages(stored(letter), TOPIC)
    return [dict(headers).get(H_DECLARED_TOOLS) for _, headers in messages]


def test_replay_messages_carry_the_declared_tools_sorted() -> None:
    letter = unknown_tool_letter()
    headers = tools_headers(letter)
    assert len(headers) == len(letter["raw_chunks"]) + 1  # and the end marker
    assert set(headers) == {b"read_file,search"}


def test_none_declared_sends_no_header_and_an_empty_list_an_empty_one() -> None:
    letter = unknown_tool_letter()
    assert set(tools_headers({**letter, "declared_tools": None})) == {None}
    assert set(tools_headers({**letter, "declared_tools": []})) == {b""}
    older = {k: v for k, v in letter.items() if k != "declared_tools"}
    assert set(tools_headers(older)) == {None}  # as before the field existed
    assert stored(older).declared_tools_known is False
    assert stored(letter).declared_tools_known is True


@pytest.mark.parametrize("bad", ["search", [1], ["a,b"], [""], [" a"], {"a": 1}])
def test_an_unreadable_declared_tools_is_not_replayed(bad: Any) -> None:
    letter = {**unknown_tool_letter(), "declared_tools": bad}
    with pytest.raises(NotReplayable, match="declared_tools"):
        replay_messages(stored(letter), TOPIC)


@pytest.mark.parametrize("tools", ["search, read_file", ""])
def test_an_unknown_tool_dead_letter_replayed_unchanged_is_unknown_tool_again(
        tools: str) -> None:
    letter = unknown_tool_letter(tools)
    key, messages = replay_messages(stored(letter), TOPIC)
    world = World()
    outputs = []
    for value, headers in messages:
        world.offset += 1
        outputs += world.deliver(world.processor.handle(InputMessage(
            "llm.sse.chunks", 0, world.offset, key, value, dict(headers))))
    assert [o.sink for o in outputs] == [Sink.DEADLETTER]
    again = record(outputs[0])
    assert again["reason"] == "unknown_tool"
    assert again["request_id"] == replay_request_id(stored(letter), TOPIC)
    assert again["declared_tools"] == letter["declared_tools"]
    assert again["calls"] == letter["calls"]
    first_headers = dict(messages[0][1])
    assert first_headers[H_REPLAY_OF] == b"r1"
    assert [dict(h)[H_CHUNK_SEQ] for _, h in messages] == [
        str(n).encode() for n in range(len(messages))]
    assert dict(messages[-1][1])[H_END] == b"eof"
    assert all(dict(h)[H_REQUEST_ID] == again["request_id"].encode() for _, h in messages)
    assert orjson.loads(outputs[0].value)["session_id"] == "s1"


def test_replay_messages_are_built_by_the_publishers_request_meta() -> None:
    """A replay's headers are what :class:`RequestMeta` builds for the dead letter's
    request, exactly and in order (request id, replay-of, provider, model, declared tools,
    chunk-seq, the end marker last): the same builder as the publisher's."""
    letter = {**unknown_tool_letter(), "provider": "deepseek", "model": "m"}
    key, messages = replay_messages(stored(letter), TOPIC)
    meta = replay_meta(stored(letter), TOPIC)
    assert key == meta.key.encode() == b"s1"
    assert meta.replay_of == "r1" and meta.request_id == replay_request_id(stored(letter), TOPIC)
    last = len(messages) - 1
    assert messages == [
        *((value, meta.message_headers(seq)) for seq, (value, _) in enumerate(messages[:-1])),
        (b"", meta.message_headers(last, END_EOF))]
    assert messages[0][1] == [
        (H_REQUEST_ID, meta.request_id.encode()), (H_REPLAY_OF, b"r1"),
        (H_PROVIDER, b"deepseek"), (H_MODEL, b"m"), (H_DECLARED_TOOLS, b"read_file,search"),
        (H_CHUNK_SEQ, b"0")]
    assert messages[-1][1][-2:] == [(H_CHUNK_SEQ, str(last).encode()), (H_END, b"eof")]


# -- toolwire dlq show, with the dead letter handed over instead of read from Kafka ----------

def show(letter: StoredDeadLetter, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str], **env: str) -> tuple[dict[str, Any], str]:
    """``run_show``'s report and stderr for ``letter`` under the environment ``env``."""
    for name in [n for n in os.environ if n.startswith("TOOLWIRE_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    async def fetch(*_args: Any, **_kwargs: Any) -> StoredDeadLetter:
        return letter

    monkeypatch.setattr("toolwire.tools.dlq.fetch_dead_letter", fetch)
    monkeypatch.setattr(dlq_cli, "find_broker", lambda prog: "127.0.0.1:9")
    assert dlq_cli.run_show(argparse.Namespace(ref=letter.ref)) == 0
    out = capsys.readouterr()
    report: dict[str, Any] = orjson.loads(out.out)
    return report, out.err


def test_show_checks_the_recorded_declared_tools(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    report, err = show(stored(unknown_tool_letter()), monkeypatch, capsys)
    assert report["declared_tools_known"] is True and "notes" not in report and err == ""
    assert report["record_today"]["reason"] == "unknown_tool"
    assert report["record_today"]["declared_tools"] == ["read_file", "search"]
    assert report["replay_would_differ"] is False


def test_show_says_when_the_declared_tools_are_unknown(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    older = {k: v for k, v in unknown_tool_letter().items() if k != "declared_tools"}
    report, err = show(stored(older), monkeypatch, capsys)
    assert report["declared_tools_known"] is False
    assert "declared tools are unknown" in report["notes"][0]
    assert "declared tools are unknown" in err
    assert report["record_today"]["outcome"] == "assembled"  # unchecked, as before
    assert report["replay_would_differ"] is True


def test_show_gives_the_ids_the_replay_would_synthesize(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    no_id = body(chunk(call(0, name="get_weather", arguments='{"city":"Paris"}')),
                 chunk(finish="tool_calls"))
    letter = record(World().publish("r1", no_id)[0])  # a worker that does not synthesize
    assert letter["reason"] == "missing_identity"
    report, _ = show(stored(letter), monkeypatch, capsys, TOOLWIRE_SYNTHESIZE_IDS="*")
    today = report["record_today"]
    replay = replay_request_id(stored(letter), "llm.toolcalls.deadletter")
    assert (today["outcome"], today["request_id"]) == ("assembled", replay)
    seed = f"toolwire/call-id/{replay}/0/0".encode()
    assert today["tool_calls"][0]["id"] == "call_tw_" + hashlib.sha256(seed).hexdigest()[:24]
    assert today["tool_calls"][0]["id_synthesized"] is True
