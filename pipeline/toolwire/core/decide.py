"""The decision at the end of a response: one assembled record or one dead letter.

The record is the contract with downstream services (tool executors, session stores), so the
rules are strict where trust is at stake (an empty ``id`` or ``name`` never leaves; nor does half
a tool turn) and verbatim where the provider has spoken (``finish_reason`` is never rewritten;
a truncation is reported as truncated, never as a failure or a retry).

The rules are the same for every wire; what a wire's finish reasons mean (which may run, which
are a truncation, which error code another one is) is the wire's
:class:`~toolwire.core.wires.FinishPolicy`, read from the assembler's wire.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Final, Literal

import orjson

from toolwire.core.assembly import Assembler, Call, Choice
from toolwire.core.identity import REPAIR_NAMES, Repair
from toolwire.core.limits import Limits
from toolwire.core.records import (
    AssembledRecord,
    CallRecord,
    ChoiceRecord,
    DeadLetterCall,
    DeadLetterDecision,
    Decision,
    Finish,
    Reason,
)
from toolwire.core.wires import DEFAULT_WIRE, check_wire_name

#: Unified finishes after which the calls of a choice may be executed.
EXECUTABLE: Final = frozenset({"stop", "tool_calls"})
#: The prefix of a synthesized call id: recognizable in any log or session store.
SYNTHESIZED_PREFIX: Final = "call_tw_"
#: Synthesized ids of one response: (choice, index) → id.
Synthesized = dict[tuple[int, int], str]


@dataclass(frozen=True, slots=True)
class Options:
    """What the decision may depend on besides the stream itself."""

    #: Tool names the request declared; ``None`` skips the ``unknown_tool`` check.
    declared_tools: frozenset[str] | None = None
    #: Dead-letter any identity conflict instead of letting the last non-empty value win.
    strict: bool = False
    #: A call that ends without an id gets a deterministic one (``id_synthesized: true``).
    synthesize_ids: bool = False
    #: The provider never sends its wire's explicit end (Writer's ``[DONE]``): a body that
    #: ends after every choice finished is complete (``repairs.ended_without_done``).
    end_without_done: bool = False
    limits: Limits = field(default_factory=Limits)
    #: The wire the body is read as (:data:`toolwire.core.wires.SUPPORTED_WIRES`, or ``auto``).
    wire: str = DEFAULT_WIRE

    def __post_init__(self) -> None:
        check_wire_name(self.wire)  # an unknown name is refused here, with the valid ones


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who the response belongs to; carried into the record unchanged."""

    request_id: str | None = None
    session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    #: The request's declared tool names (``None``: it declared none), kept in a dead letter
    #: so that a replay checks the same tools.
    declared_tools: frozenset[str] | None = None


def _arguments_json(arguments: str) -> bool:
    if not arguments:
        return False
    try:
        orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return False
    return True


def synthesized_id(seed: str, choice: int, index: int) -> str:
    """The id of a call its provider never gave one: the same for the same request, choice
    and call on every replay and after any crash, and distinct per call."""
    digest = hashlib.sha256(f"toolwire/call-id/{seed}/{choice}/{index}".encode()).hexdigest()
    return SYNTHESIZED_PREFIX + digest[:24]


def synthesize(asm: Assembler, provenance: Provenance) -> Synthesized:
    """Ids for the calls that end without one, seeded by the request id (offline: the
    response id). A name is never made up."""
    seed = provenance.request_id or asm.response_id or ""
    return {key: synthesized_id(seed, *key) for key, call in asm.calls.items() if not call.id}


def call_record(call: Call, synthesized: Synthesized | None = None) -> CallRecord:
    arguments = call.arguments
    record: CallRecord = {"choice": call.choice, "index": call.index, "id": call.id,
                          "name": call.name, "type": call.type, "arguments": arguments,
                          "arguments_json": _arguments_json(arguments)}
    if call.provider_fields:
        record["provider_fields"] = call.provider_fields
    if synthesized and not call.id:
        made = synthesized.get((call.choice, call.index))
        if made is not None:
            record["id"] = made
            record["id_synthesized"] = True
    return record


def missing_identity(call: Call, synthesized: Synthesized | None = None
                     ) -> list[Literal["id", "name"]]:
    missing: list[Literal["id", "name"]] = []
    if not call.id and not (synthesized and (call.choice, call.index) in synthesized):
        missing.append("id")
    if not call.name:
        missing.append("name")
    return missing


def dead_letter(asm: Assembler, provenance: Provenance, reason: Reason,
                detail: str, synthesized: Synthesized | None = None) -> DeadLetterDecision:
    """The decision that a whole response is a dead letter, with everything known of it."""
    first = asm.choices.get(0)
    calls: list[DeadLetterCall] = [
        {**call_record(c, synthesized), "missing": missing_identity(c, synthesized)}
        for c in asm.calls.values()]
    declared = provenance.declared_tools
    return {
        "outcome": "dead_letter",
        "wire": asm.wire.name,
        "request_id": provenance.request_id,
        "session_id": provenance.session_id,
        "provider": provenance.provider,
        "model": provenance.model or asm.model,
        "response_id": asm.response_id,
        "finish_reason": None if first is None else first.finish_reason,
        "finish_reasons": _finish_reasons(asm),
        "usage": asm.usage,
        "repairs": _repairs(asm, synthesized),
        "chunks": asm.events,
        "bytes": asm.body_bytes,
        "frames_after_end": asm.frames_after_end,
        "reason": reason,
        "detail": detail,
        "calls": calls,
        "declared_tools": None if declared is None else sorted(declared),
    }


def _finish_reasons(asm: Assembler) -> dict[str, str | None]:
    return {str(i): c.finish_reason for i, c in sorted(asm.choices.items())}


def _repairs(asm: Assembler, synthesized: Synthesized | None = None) -> dict[str, int]:
    repairs = dict(zip(REPAIR_NAMES, asm.repairs, strict=True))
    if synthesized:
        repairs["ids_synthesized"] = len(synthesized)
    return repairs


def closed_detail(asm: Assembler, detail: str) -> str:
    """The detail of a ``stream_closed`` dead letter: ``detail``, and, when every choice had
    finished all the same and the provider is not known to never send the end, the wire's
    hint that it may be such a provider (and the setting that says so)."""
    hint = asm.policy.finished_hint
    if hint is None or asm.end_without_done or not asm.wire.finished(asm):
        return detail
    return f"{detail}; {hint}"


def _choice_record(index: int, choice: Choice) -> ChoiceRecord:
    record: ChoiceRecord = {"choice": index, "finish_reason": choice.finish_reason,
                            "content": "".join(choice.content) or None,
                            "reasoning": "".join(choice.reasoning) or None,
                            "refusal": "".join(choice.refusal) or None}
    if choice.details is not None:
        record["reasoning_details"] = choice.details.render()
    return record


def decide(asm: Assembler, options: Options | None = None,
           provenance: Provenance | None = None) -> Decision:
    """Close the response and return its record (``outcome`` says which kind)."""
    options = options or Options()
    provenance = provenance or Provenance()
    if provenance.declared_tools is None and options.declared_tools is not None:
        provenance = replace(provenance, declared_tools=options.declared_tools)
    done = asm.end()
    if asm.failure is not None:
        return dead_letter(asm, provenance, asm.failure.reason, asm.failure.detail)
    policy = asm.policy
    if not done:
        return dead_letter(asm, provenance, "stream_closed",
                           closed_detail(asm, policy.missing_end))

    truncated = False
    error_code: str | None = None
    withheld_choices: set[int] = set()
    error = asm.error
    choices_with_calls = {c.choice for c in asm.calls.values()}
    for index, choice in sorted(asm.choices.items()):
        if error is not None:  # a provider error ends every choice: nothing may run
            withheld_choices.add(index)
            continue
        if choice.refusal:  # the model declined: not an answer to act on, not a retry
            withheld_choices.add(index)
            if error_code is None:
                error_code = policy.refusal_code
            continue
        reason = choice.finish_reason
        finish = policy.finish(reason, has_calls=index in choices_with_calls)
        if finish in EXECUTABLE:
            continue
        withheld_choices.add(index)
        if finish == "length":
            truncated = True
        elif error_code is None and reason is not None:
            error_code = policy.error_code(reason)
    if truncated and error_code != policy.refusal_code:
        error_code = None
    retryable = False
    if error is not None:
        error_code, retryable = error.code, error.retryable

    synthesized = (synthesize(asm, provenance)
                   if options.synthesize_ids or asm.wire.synthesizes_ids else None)
    executable = [c for c in asm.calls.values() if c.choice not in withheld_choices]
    lacking = [c for c in executable if missing_identity(c, synthesized)]
    if lacking:
        detail = "; ".join(
            f"call {c.index} of choice {c.choice} has no "
            f"{' or '.join(missing_identity(c, synthesized))}"
            for c in lacking)
        return dead_letter(asm, provenance, "missing_identity", detail, synthesized)
    if options.declared_tools is not None:
        unknown = [c for c in executable if c.name not in options.declared_tools]
        if unknown:
            names = ", ".join(repr(c.name) for c in unknown)
            return dead_letter(asm, provenance, "unknown_tool",
                               f"not among the declared tools: {names}", synthesized)
    conflicts = asm.repairs[Repair.IDENTITY_CONFLICTS]
    if options.strict and conflicts:
        return dead_letter(asm, provenance, "identity_conflict",
                           f"{conflicts} identity value(s) replaced by a different one "
                           "(strict mode)", synthesized)

    first = asm.choices.get(0)
    content = "".join(first.content) if first and first.content else None
    reasoning = "".join(first.reasoning) if first and first.reasoning else None
    refusal = "".join(first.refusal) if first and first.refusal else None
    finish_reason = None if first is None else first.finish_reason
    if (not asm.calls and not asm.server_calls and content is None and reasoning is None
            and error_code is None
            and not truncated and policy.finish(finish_reason, has_calls=False) == "stop"):
        error_code = "EMPTY_RESPONSE"
        retryable = True
    unified: Finish
    if error is not None:
        unified = "error"
    elif first is not None and first.refusal:
        unified = "content_filter"
    else:
        unified = policy.finish(finish_reason, has_calls=0 in choices_with_calls)
    record: AssembledRecord = {
        "outcome": "assembled",
        "wire": asm.wire.name,
        "request_id": provenance.request_id,
        "session_id": provenance.session_id,
        "provider": provenance.provider,
        "model": provenance.model or asm.model,
        "response_id": asm.response_id,
        "finish_reason": finish_reason,
        "finish": unified,
        "finish_reasons": _finish_reasons(asm),
        "usage": asm.usage,
        "repairs": _repairs(asm, synthesized),
        "chunks": asm.events,
        "bytes": asm.body_bytes,
        "frames_after_end": asm.frames_after_end,
        "truncated": truncated,
        "error_code": error_code,
        "error_message": None if error is None else error.message,
        "retryable": retryable,
        "content": content,
        "reasoning": reasoning,
        "refusal": refusal,
        "choices": [_choice_record(i, c) for i, c in sorted(asm.choices.items())],
        "tool_calls": [call_record(c, synthesized) for c in executable],
        "withheld_tool_calls": [call_record(c, synthesized) for c in asm.calls.values()
                                if c.choice in withheld_choices],
        "server_tool_calls": list(asm.server_calls),
    }
    return record
