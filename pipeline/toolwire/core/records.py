"""The records Toolwire publishes, as types: the contract of ``topics/*.json`` in code.

``tests/test_topics.py`` validates every kind of record the code produces against the topics'
JSON Schemas, so these types and the published contract cannot drift apart. The core decides
(:class:`AssembledRecord` or :class:`DeadLetterDecision`); the pipeline adds provenance and the
raw chunks to a decision (:class:`DeadLetterRecord`) in :mod:`toolwire.stream.encode`.
"""

from __future__ import annotations

from typing import Final, Literal, NotRequired, TypedDict

#: The unified finish of an assembled record (see :class:`toolwire.core.wires.FinishPolicy`).
Finish = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]

#: Every dead-letter reason, in the order of ``topics/llm.toolcalls.deadletter.json``.
Reason = Literal[
    "malformed_chunk", "oversize", "stream_closed", "missing_identity", "unknown_tool",
    "identity_conflict", "sequence_gap", "stream_abandoned", "session_quarantined",
    "malformed_message", "internal_error",
]
REASONS: Final[tuple[Reason, ...]] = (
    "malformed_chunk", "oversize", "stream_closed", "missing_identity", "unknown_tool",
    "identity_conflict", "sequence_gap", "stream_abandoned", "session_quarantined",
    "malformed_message", "internal_error",
)


class CallRecord(TypedDict):
    """A call as assembled (``id``/``name`` non-empty in ``tool_calls``, maybe null elsewhere)."""

    choice: int
    index: int
    id: str | None
    name: str | None
    #: ``function`` (JSON arguments) or ``custom`` (a freeform tool: ``arguments`` is its input).
    type: str
    arguments: str
    arguments_json: bool
    #: Call-level fields the wire does not define, verbatim (``extra_content``: Gemini 3's
    #: thought signature, which the next turn must send back); absent when there are none.
    provider_fields: NotRequired[dict[str, object]]
    #: The provider sent no id: Toolwire made a deterministic one (opt-in); absent otherwise.
    id_synthesized: NotRequired[bool]


class ServerCall(TypedDict):
    """A call the provider ran itself (a web search, code execution, an MCP call): reported
    for the record, never executed downstream, never withheld."""

    #: Its place among the response's server calls (0-based, in the order they started).
    index: int
    #: The wire's own kind: ``server_tool_use``, ``web_search_call``, ``mcp_call``,
    #: ``executableCode``...
    type: str
    id: str | None
    name: str | None
    #: What the provider sent it with, as text (compact JSON when it sent an object).
    arguments: str
    #: The provider's last status for it (``completed``, ``failed``...), when it sends one.
    status: str | None


class DeadLetterCall(CallRecord):
    #: Identity fields the call lacks.
    missing: list[Literal["id", "name"]]


class ChoiceRecord(TypedDict):
    choice: int
    finish_reason: str | None
    content: str | None
    reasoning: str | None
    refusal: str | None
    #: Reasoning entries the provider sent for the next turn (OpenRouter's
    #: ``reasoning_details``), merged and verbatim; absent when it sent none.
    reasoning_details: NotRequired[list[dict[str, object]]]


class _Response(TypedDict):
    """What every record of a whole response says about it."""

    request_id: str | None
    session_id: str | None
    provider: str | None
    model: str | None
    response_id: str | None
    finish_reason: str | None
    finish_reasons: dict[str, str | None]
    usage: dict[str, object] | None
    repairs: dict[str, int]
    chunks: int
    bytes: int
    #: SSE events after the wire's end, not read (trailers): counted, never a fault.
    frames_after_end: int


class AssembledRecord(_Response):
    """``llm.toolcalls.assembled``: one complete response whose tool calls may be executed."""

    outcome: Literal["assembled"]
    #: The wire the body was read as (``openai-chat``, ``anthropic-messages``...).
    wire: str
    #: ``finish_reason`` unified over the wires: stop, tool_calls, length, content_filter,
    #: error or other.
    finish: Finish
    truncated: bool
    error_code: str | None
    #: The message of a provider error inside the stream (``error_code`` is then its code).
    error_message: str | None
    retryable: bool
    content: str | None
    reasoning: str | None
    #: Choice 0's refusal (``error_code`` ``REFUSAL``): the model declined, do not retry.
    refusal: str | None
    choices: list[ChoiceRecord]
    tool_calls: list[CallRecord]
    withheld_tool_calls: list[CallRecord]
    #: Calls the provider ran itself, informational (never in ``tool_calls``).
    server_tool_calls: list[ServerCall]


class DeadLetterDecision(TypedDict):
    """Why a response (or one input message) cannot be trusted: what the core decides.

    The response fields are absent only for a single message (``malformed_message``, or the
    agent's last-resort ``internal_error``).
    """

    outcome: Literal["dead_letter"]
    #: The wire the body was read as; absent for a single message (``malformed_message``).
    wire: NotRequired[str]
    reason: Reason
    detail: str
    request_id: str | None
    session_id: str | None
    calls: list[DeadLetterCall]
    provider: NotRequired[str | None]
    model: NotRequired[str | None]
    response_id: NotRequired[str | None]
    finish_reason: NotRequired[str | None]
    finish_reasons: NotRequired[dict[str, str | None]]
    usage: NotRequired[dict[str, object] | None]
    repairs: NotRequired[dict[str, int]]
    chunks: NotRequired[int]
    bytes: NotRequired[int]
    frames_after_end: NotRequired[int]
    #: ``session_quarantined`` only: the record held back.
    held_record: NotRequired[AssembledRecord]
    #: The request's declared tools (sorted; null: none declared), so a replay checks them.
    declared_tools: NotRequired[list[str] | None]


class ProvenanceRecord(TypedDict):
    """Where a dead letter's input came from and who decided (Kafka Connect's DLQ context)."""

    source_topic: str
    partition: int
    first_offset: int
    last_offset: int | None
    worker: str
    time: float


class RawChunk(TypedDict):
    seq: int
    value_b64: str


class DeadLetterRecord(DeadLetterDecision):
    """``llm.toolcalls.deadletter``: a decision with its provenance and raw chunks."""

    provenance: ProvenanceRecord
    raw_chunks: list[RawChunk]
    raw_chunks_truncated: bool
    fields_truncated: NotRequired[bool]


Decision = AssembledRecord | DeadLetterDecision


def message_fault(reason: Literal["malformed_message", "internal_error"], detail: str,
                  request_id: str | None, session_id: str | None) -> DeadLetterDecision:
    """The decision for one input message that cannot join (or be applied to) a response."""
    return {"outcome": "dead_letter", "reason": reason, "detail": detail,
            "request_id": request_id, "session_id": session_id, "calls": []}
