"""Amazon Bedrock ConverseStream (``POST /model/{id}/converse-stream``): messages, walk, end.

The body is AWS event-stream (:mod:`toolwire.core.framing.eventstream`, both CRCs checked);
each ``event`` message names its member in ``:event-type`` and carries the member's fields as
a JSON payload (plus a random-length ``"p"`` padding field, ignored).

The invariant: a client call is made when its ``contentBlockStart.start.toolUse`` arrives
(the next ordinal among client calls, identity ``toolUseId`` and ``name`` through the neutral
identity rule), and only its own block's ``toolUse.input`` fragments feed it, concatenated
verbatim; a block that never started a tool use cannot feed one. Why: ``contentBlockIndex``
numbers text, reasoning and tool blocks alike, and only tool blocks have a start (text and
reasoning blocks open with their first delta), so a call is keyed by its block, never by a
position. Claude's first fragment is ``""`` and a tool without arguments may send nothing:
the call holds ``{}`` until its first non-empty fragment replaces it (as Vercel and LiteLLM
do), so it is never ``""``. A ``toolUse`` of type ``server_tool_use`` is run by Bedrock
(``nova_code_interpreter``): a server call, never a client call; its ``toolResult`` block is
Bedrock's answer to it and goes nowhere.

Text deltas go to ``content``, ``reasoningContent.text`` to ``reasoning``; each reasoning
block is also kept as one ``reasoning_details`` entry (``index``, its ``text``, its
``signature``, or its ``redactedContent``), verbatim, because the next turn must send them back.

The end: ``messageStop`` says the response is complete (its ``stopReason`` kept verbatim) and
``metadata`` (usage) follows it; the body ends on the second of the two, whatever their order
(hand-written fixtures put ``metadata`` first), and a body that ends after ``messageStop``
without ``metadata`` is complete, without usage. An ``exception`` or ``error`` message ends it
as a provider error (:func:`toolwire.core.wires._shared.bedrock_error`), the calls withheld.
A body that ends before ``messageStop``, or inside a message, is ``stream_closed``: boto3
returns a cut stream as if complete (langchain-aws #1286), which is what this refuses.

What is checked as the walk goes: payloads JSON objects, block indexes non-negative integers,
objects where the wire has objects, strings where text, identity or input is read. A message
that fails is ``malformed_chunk``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Final

from toolwire.core.errors import malformed
from toolwire.core.framing import EventFramer
from toolwire.core.framing.eventstream import EventMessage, EventStreamFramer
from toolwire.core.identity import ABSENT
from toolwire.core.wires._base import BY_CALLS, FinishPolicy, Wire, WireTarget
from toolwire.core.wires._shared import bedrock_error, parse_object

if TYPE_CHECKING:
    from toolwire.core.assembly import Call, Choice
    from toolwire.core.records import ServerCall

__all__ = ["BedrockConverse"]

#: The ``toolUse.type`` of a tool Bedrock runs itself.
SERVER_TOOL: Final = "server_tool_use"
#: What a call's arguments are until its first non-empty fragment.
NO_ARGUMENTS: Final = "{}"
#: The members of ``ConverseStreamOutput`` (botocore's bedrock-runtime service model).
_MEMBERS: Final = frozenset({"messageStart", "contentBlockStart", "contentBlockDelta",
                             "contentBlockStop", "messageStop", "metadata"})


class _Tool:
    """A tool block: its client call (and whether it still holds the provisional ``{}``), or
    its server call and the fragments so far."""

    __slots__ = ("call", "fragments", "provisional", "server")

    def __init__(self, call: Call | None, server: ServerCall | None) -> None:
        self.call = call
        self.server = server
        self.provisional = True
        self.fragments: list[str] = []


def _block_index(message: dict[str, object]) -> int:
    index = message.get("contentBlockIndex")
    if type(index) is not int or index < 0:
        raise malformed(message, "'contentBlockIndex' is not a non-negative integer")
    return index


def _object(source: dict[str, object], parent: dict[str, object], key: str) -> dict[str, object]:
    value = parent.get(key)
    if type(value) is not dict:
        raise malformed(source, f"{key!r} is not an object")
    return value


class BedrockConverse(Wire):
    """One ConverseStream response (see the module docstring)."""

    __slots__ = ("_metadata", "_stopped", "_tools")

    name = "bedrock-converse"
    framing: ClassVar[type[EventFramer]] = EventStreamFramer
    policy = FinishPolicy(
        finishes={"end_turn": BY_CALLS, "tool_use": BY_CALLS, "stop_sequence": BY_CALLS,
                  "max_tokens": "length", "model_context_window_exceeded": "length",
                  "guardrail_intervened": "content_filter", "content_filtered": "content_filter",
                  "malformed_model_output": "error", "malformed_tool_use": "error"},
        missing_end="the body ended before messageStop, or inside a message (connection "
                    "dropped or cut)",
    )

    def __init__(self) -> None:
        #: Tool blocks by their ``contentBlockIndex``.
        self._tools: dict[int, _Tool] = {}
        #: ``messageStop`` came: the response is complete.
        self._stopped = False
        #: ``metadata`` came (before ``messageStop``: the end is then ``messageStop``).
        self._metadata = False

    @classmethod
    def recognizes(cls, first: object) -> bool:
        """A ConverseStream body opens with ``messageStart`` (or, cut short, any member of
        its union); a body opening on an exception says nothing of its operation and is
        read as this one (``auto``)."""
        return type(first) is EventMessage and (
            first.header(":message-type") != "event"
            or first.header(":event-type") in _MEMBERS)

    def apply(self, asm: WireTarget, events: list[bytes]) -> None:
        for message in events:
            if type(message) is not EventMessage:  # the framer gives nothing else
                raise malformed(message, "not an event-stream message")
            asm.events += 1
            if message.header(":message-type") != "event":
                asm.end_body(bedrock_error(message))
                asm.ended_on(message)
                return
            kind = message.header(":event-type")
            if kind == "contentBlockDelta":  # most of a stream: first
                self._delta(asm, parse_object(bytes(message)))
            elif kind == "contentBlockStart":
                self._start(asm, parse_object(bytes(message)))
            elif kind == "messageStart":
                parse_object(bytes(message))  # its role says nothing the record keeps
                if 0 not in asm.choices:
                    asm.new_choice(0)
            elif kind == "messageStop":
                self._stop(asm, parse_object(bytes(message)))
                if self._metadata:
                    asm.end_body()
                    asm.ended_on(message)
                    return
            elif kind == "metadata":
                self._usage(asm, parse_object(bytes(message)))
                if self._stopped:
                    asm.end_body()
                    asm.ended_on(message)
                    return
            elif kind == "contentBlockStop":
                _block_index(parse_object(bytes(message)))
            elif kind is None:
                raise malformed(bytes(message), "an event message without :event-type")
            # Members this wire does not know change nothing (botocore skips them too).

    def ends(self, last: bytes | None) -> bool:
        """Complete once ``messageStop`` came, unless the body stops inside a message."""
        return self._stopped and last is None

    # -- the walk ----------------------------------------------------------------------------

    def _start(self, asm: WireTarget, message: dict[str, object]) -> None:
        index = _block_index(message)
        start = _object(message, message, "start")
        tool = start.get("toolUse")
        if tool is None:
            return  # a server tool's result (toolResult), or a start this wire does not know
        if type(tool) is not dict:
            raise malformed(message, "'start.toolUse' is not an object")
        kind = tool.get("type")
        choice = asm.choices.get(0) or asm.new_choice(0)
        if kind == SERVER_TOOL:
            entry = asm.add_server_call(message, SERVER_TOOL, tool.get("toolUseId"),
                                        tool.get("name"))
            self._tools[index] = _Tool(None, entry)
            return
        if kind is not None and type(kind) is not str:
            raise malformed(message, "'toolUse.type' is not a string")
        call = asm.start_call(0, choice)
        asm.apply_call(message, 0, choice, call.index, tool.get("toolUseId", ABSENT),
                       tool.get("name", ABSENT), None)
        asm.replace_arguments(call, NO_ARGUMENTS)
        self._tools[index] = _Tool(call, None)

    def _delta(self, asm: WireTarget, message: dict[str, object]) -> None:
        index = _block_index(message)
        delta = _object(message, message, "delta")
        choice = asm.choices.get(0) or asm.new_choice(0)
        text = delta.get("text", ABSENT)
        if text is not ABSENT:
            if type(text) is not str:
                raise malformed(message, "'delta.text' is not a string")
            if text:
                choice.content.append(text)
            return
        tool = delta.get("toolUse")
        if tool is not None:
            self._input(asm, message, index, choice, tool)
            return
        reasoning = delta.get("reasoningContent")
        if reasoning is not None:
            self._reasoning(asm, message, index, choice, reasoning)
        # citation, image and toolResult deltas add nothing to the record.

    def _input(self, asm: WireTarget, message: dict[str, object], index: int, choice: Choice,
               tool: object) -> None:
        if type(tool) is not dict:
            raise malformed(message, "'delta.toolUse' is not an object")
        fragment = tool.get("input")
        if type(fragment) is not str:
            raise malformed(message, "'delta.toolUse.input' is not a string")
        block = self._tools.get(index)
        if block is None:
            raise malformed(message, f"a toolUse delta for block {index}, which never "
                                     "started a tool use")
        if not fragment:
            return
        if block.server is not None:
            block.fragments.append(fragment)
            asm.set_server_arguments(block.server, "".join(block.fragments))
            return
        assert block.call is not None
        if block.provisional:
            block.provisional = False
            asm.replace_arguments(block.call, fragment)
        else:
            asm.apply_call(message, 0, choice, block.call.index, ABSENT, ABSENT, fragment)

    @staticmethod
    def _reasoning(asm: WireTarget, message: dict[str, object], index: int, choice: Choice,
                   reasoning: object) -> None:
        if type(reasoning) is not dict:
            raise malformed(message, "'delta.reasoningContent' is not an object")
        for key in ("text", "signature", "redactedContent"):
            value = reasoning.get(key)
            if value is None:
                continue
            if type(value) is not str:
                raise malformed(message, f"'reasoningContent.{key}' is not a string")
            if key == "text" and value:
                choice.reasoning.append(value)
            asm.merge_detail(message, 0, choice, index, {"index": index, key: value}, "text")

    def _stop(self, asm: WireTarget, message: dict[str, object]) -> None:
        choice = asm.choices.get(0) or asm.new_choice(0)
        reason = message.get("stopReason")
        if type(reason) is str:
            if reason:
                choice.finish_reason = reason
        elif reason is not None:
            raise malformed(message, "'stopReason' is not a string")
        self._stopped = True

    def _usage(self, asm: WireTarget, message: dict[str, object]) -> None:
        usage = message.get("usage")
        if usage is not None:
            if type(usage) is not dict:
                raise malformed(message, "'usage' is not an object")
            asm.keep_usage(message, usage)
        self._metadata = True
