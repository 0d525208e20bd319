"""Generate the Ollama chat wire corpus: ``NAME.ndjson`` bodies and ``NAME.json`` expectations.

Run from the repository root::

    .venv/bin/python tests/core/corpus_wires/ollama-chat/_make.py

Each capture is one function below that returns a :class:`Capture`: the raw HTTP body of an
Ollama ``POST /api/chat`` response with ``stream: true`` (``application/x-ndjson``, written
byte-exact) and the whole of the assembler's record that it must produce with
``options.wire = "ollama-chat"``.  The shapes come from ``shared/reference/wires-beyond-sse.md``
section 4 ("ollama-chat") and section 5 ("How the clients read these wires", ollama-chat),
beside the repository; the rules are the ollama-chat wire's (listed in ``README.md``).  Where
the rules leave a value open, the choice made is listed under "Decisions" in ``README.md`` and
named in the comment of the capture that pins it.

Every expected value is written out by hand from those rules (never computed by running
``toolwire``): the expectations are literals, not derived from the bodies.  The one exception
is the synthesized call id, written from the formula with :func:`synthesized_id` (sha256 of
``toolwire/call-id/{seed}/0/{index}``; the seed is ``""`` offline: there is no request id and
Ollama sends no response id).

Framing, as the server sends it (``streamResponse`` in ``server/routes.go``): every line is
``json.Marshal(value)`` then ``"\\n"``, i.e. one compact JSON object per line in Go struct field
order (``model, created_at, message{role, content, thinking?, tool_calls?}, done,
done_reason?`` then, on the done line, the metrics), with ``<``, ``>`` and ``&`` escaped as
``\\u003c``, ``\\u003e``, ``\\u0026``.  A tool call is ``{id?, function{index?, name,
arguments}}``: ``id`` only from 0.12.10, ``index`` omitted when 0 before 0.12.6.  Nested objects
inside ``arguments`` are Go ``map[string]any`` (keys sorted when written); the top level is
Ollama's ordered map, so its keys come in the order the parser filled it.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script, only this folder is on the path: the shared builders are under the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.core import corpus_build
from tests.core.corpus_build import COMPACT, missing

HERE = Path(__file__).resolve().parent

WIRE = "ollama-chat"
SUFFIX = ".ndjson"

#: What Go's encoding/json escapes that a JSON writer need not (HTML-safe output).
GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
              "\u2029": "\\u2029"}

#: The record's ``detail`` of a body without its end (a dead letter ``stream_closed``).
NO_DONE = "the body ended without a done: true line"


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


class Capture(corpus_build.Capture):
    """A capture read as ``ollama-chat`` (its ``NAME.json`` says so)."""

    wire = WIRE


def go_json(payload: Any) -> str:
    """``json.Marshal``: compact, non-ASCII raw, ``<>&`` (and U+2028/9) escaped.  Those
    characters only ever stand inside strings, so replacing them in the text is exact."""
    text = json.dumps(payload, ensure_ascii=False, separators=COMPACT)
    for raw, escaped in GO_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


#: A key left out of a line (Go's ``omitempty``; or a relay that dropped it).
ABSENT: Any = object()


def tc(name: str, arguments: Any = ABSENT, call_id: str | None = None,
       index: int | None = None) -> dict[str, Any]:
    """A ``ToolCall``: ``{id?, function{index?, name, arguments?}}`` in Go field order; ``id``
    and ``index`` only when given (``omitempty``), ``arguments`` unless ``ABSENT``."""
    function: dict[str, Any] = {}
    if index is not None:
        function["index"] = index
    function["name"] = name
    if arguments is not ABSENT:
        function["arguments"] = arguments
    out: dict[str, Any] = {}
    if call_id is not None:
        out["id"] = call_id
    out["function"] = function
    return out


def metrics(prompt: int, generated: int, *, load: int = 18_340_211) -> dict[str, int]:
    """The done line's metrics in Go field order (durations in nanoseconds)."""
    prompt_ns = prompt * 1_021_337 + 7
    eval_ns = generated * 21_804_519 + 3
    return {
        "total_duration": load + prompt_ns + eval_ns + 1_250_091,
        "load_duration": load,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": prompt_ns,
        "eval_count": generated,
        "eval_duration": eval_ns,
    }


@dataclass
class Ollama:
    """One /api/chat stream: every line carries the model and its own created_at."""

    model: str
    #: created_at's date and time up to the minute (Go's RFC 3339 with nanoseconds follows).
    minute: str = "2025-11-12T09:14"
    lines: list[str] = field(default_factory=list)
    _tick: int = 0

    def _created_at(self) -> str:
        self._tick += 1
        nanos = 3_118_204_511 + self._tick * 41_733_289
        seconds, fraction = divmod(nanos, 1_000_000_000)
        return f"{self.minute}:{seconds:02d}.{fraction:09d}".rstrip("0") + "Z"

    def line(self, content: str = "", *, thinking: str | None = None,
             tool_calls: list[dict[str, Any]] | None = None) -> str:
        """A ``done: false`` line (the message's ``content`` is always there, often ``""``)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if thinking is not None:
            message["thinking"] = thinking
        if tool_calls is not None:
            message["tool_calls"] = tool_calls
        return go_json({"model": self.model, "created_at": self._created_at(),
                        "message": message, "done": False}) + "\n"

    def done(self, usage: dict[str, int], reason: str | None = "stop", *,
             tool_calls: list[dict[str, Any]] | None = None) -> str:
        """The ``done: true`` line: done_reason (unless None), then the metrics."""
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        if tool_calls is not None:
            message["tool_calls"] = tool_calls
        out: dict[str, Any] = {"model": self.model, "created_at": self._created_at(),
                               "message": message, "done": True}
        if reason is not None:
            out["done_reason"] = reason
        return go_json({**out, **usage}) + "\n"


def body(*lines: str) -> bytes:
    return "".join(lines).encode("utf-8")


def error_line(message: str) -> str:
    """The line ``streamResponse`` writes when the model fails after output began."""
    return go_json({"error": message}) + "\n"


#: An expected call of the record: choice 0, type ``function``; ``id_synthesized`` is a
#: record key only when it applies (Ollama sends no provider fields).
call = functools.partial(corpus_build.call, 0)
dead_letter = functools.partial(corpus_build.dead_letter, WIRE)


def synthesized_id(index: int) -> str:
    """The id of an Ollama call without one: seed ``""`` (offline: no request id, and Ollama
    has no response id), choice 0, the call's ordinal."""
    return corpus_build.synthesized_id("", 0, index)


def synthesized(index: int, name: str | None, arguments: str) -> dict[str, Any]:
    """An expected call whose id the wire synthesized."""
    return call(index, synthesized_id(index), name, arguments, id_synthesized=True)


def assembled(*, server_tool_calls: list[dict[str, Any]] | None = None, **fields: Any
              ) -> dict[str, Any]:
    """An assembled Ollama record: ``server_tool_calls`` (always none on this wire) and
    ``response_id`` (Ollama has none) are stated by every capture."""
    fields.setdefault("response_id", None)
    return corpus_build.assembled(WIRE, server_tool_calls=server_tool_calls or [], **fields)


def called(**fields: Any) -> dict[str, Any]:
    """The record of a response whose done line said ``stop`` after its calls: ``stop``
    with calls is finish ``tool_calls``, every call executable (the usual Ollama ending)."""
    return assembled(finish="tool_calls", finish_reason="stop", **fields)


CASES: corpus_build.Cases[Capture] = corpus_build.Cases()
case = CASES.add


# Reference sections and the public reports they cite.
REF = "wires-beyond-sse.md §4 'ollama-chat'"
CLIENTS = "wires-beyond-sse.md §5 'ollama-chat'"
RULES = "ollama-chat wire rules (README)"
SPEC = "assembler spec rule (synthetic shape)"
ID_COMMIT = "ollama 809b9c6 'Add Tool Call ID' (v0.12.10)"
INDEX_COMMIT = "ollama c4c5a4a (v0.12.6, function.index always serialized)"
HAYSTACK_3321 = "https://github.com/deepset-ai/haystack-core-integrations/pull/3321"
LITELLM_37792 = "https://github.com/BerriAI/litellm/pull/37792"
ERRORS_DOC = "ollama docs/api/errors.mdx"
MODEL_ERROR = "an error was encountered while running the model"


# --------------------------------------------------------------------------------------------
# Calls: identity, index, arguments
# --------------------------------------------------------------------------------------------


@case
def ollama_single_call_with_id() -> Capture:
    # Ollama >= 0.12.10: the parser emits the call whole on one line, with id call_ + 8 chars
    # of [a-z0-9] and function.index 0; the done line then says done_reason "stop".
    #   call 0: id verbatim, name, arguments compact in arrival order.
    #   "stop" with a call -> finish tool_calls; finish_reason verbatim "stop".
    #   content "" on every line -> content null.  usage = the done line's six metrics.
    #   model = the lines' model; response_id null (Ollama has none).
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("get_weather", {"city": "Hangzhou", "unit": "celsius"},
                              "call_k3v9x2qa", 0)]),
        o.done(metrics(182, 27)),
    )
    return Capture(
        description="Ollama >= 0.12.10: one whole call with id on its own line, then done.",
        source=f"{REF} ('id', 'index', 'A call is never split across lines'); {ID_COMMIT}",
        shape="Ollama >= 0.12.10 single call with id call_xxxxxxxx, done_reason stop",
        proves="a tool_calls entry is one whole call; its id kept; arguments compact; stop "
        "with calls is tool_calls; usage is the done line's metrics; no response id",
        body=raw,
        expect=called(
            tool_calls=[call(0, "call_k3v9x2qa", "get_weather",
                             '{"city":"Hangzhou","unit":"celsius"}')],
            usage={
                "total_duration": 794_195_659,
                "load_duration": 18_340_211,
                "prompt_eval_count": 182,
                "prompt_eval_duration": 185_883_341,
                "eval_count": 27,
                "eval_duration": 588_722_016,
            },
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=548,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_parallel_calls_one_line() -> Capture:
    # Two calls in ONE line's tool_calls list (the parser returns every call it completed),
    # index 0 and 1, each with its own id.
    #   call 0: get_weather; call 1: get_time; listed in arrival order.
    o = Ollama("qwen3:14b")
    raw = body(
        o.line(tool_calls=[
            tc("get_weather", {"city": "Paris"}, "call_7f2m0qzd", 0),
            tc("get_time", {"timezone": "Europe/Paris"}, "call_x81bn4ke", 1),
        ]),
        o.done(metrics(240, 41)),
    )
    return Capture(
        description="Two calls with ids in one line's tool_calls, then done stop.",
        source=f"{REF} ('One line can carry several calls')",
        shape="Ollama parallel calls in one line, function.index 0 and 1",
        proves="each entry of a line's tool_calls is its own call, in list order",
        body=raw,
        expect=called(
            tool_calls=[
                call(0, "call_7f2m0qzd", "get_weather", '{"city":"Paris"}'),
                call(1, "call_x81bn4ke", "get_time", '{"timezone":"Europe/Paris"}'),
            ],
            model="qwen3:14b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1158696471,
                "load_duration": 18340211,
                "prompt_eval_count": 240,
                "prompt_eval_duration": 245120887,
                "eval_count": 41,
                "eval_duration": 893985282,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=635,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_same_name_separate_lines() -> Capture:
    # Two get_weather calls on separate lines, ids as in the raw v0.24.0 response of haystack
    # PR #3321 (call_lyywui55, call_0scw2dos).  A client keyed by name merges them; LiteLLM
    # puts every call on index 0 (PR #37792).
    #   Two calls, never merged: index 0 and 1, each its own id and arguments.
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("get_weather", {"location": "Berlin"}, "call_lyywui55", 0)]),
        o.line(tool_calls=[tc("get_weather", {"location": "Paris"}, "call_0scw2dos", 1)]),
        o.done(metrics(213, 52)),
    )
    return Capture(
        description="Two same-name calls on separate lines (haystack #3321 ids), then done.",
        source=f"{REF} (same-name calls on separate lines: {HAYSTACK_3321}); {LITELLM_37792}",
        shape="Ollama v0.24 same-name calls on separate lines, ids call_lyywui55 / "
        "call_0scw2dos",
        proves="a tool_calls entry always starts a new call, same name or not: two calls, "
        "never merged",
        body=raw,
        expect=called(
            tool_calls=[
                call(0, "call_lyywui55", "get_weather", '{"location":"Berlin"}'),
                call(1, "call_0scw2dos", "get_weather", '{"location":"Paris"}'),
            ],
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1370970081,
                "load_duration": 18340211,
                "prompt_eval_count": 213,
                "prompt_eval_duration": 217544788,
                "eval_count": 52,
                "eval_duration": 1133834991,
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=774,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_native_calls_on_done_line() -> Capture:
    # The native llama-server path: text streams on done:false lines, and every call comes
    # only on the final done:true line (arguments unmarshalled), done_reason "stop" (llama-
    # server's tool_calls finish is mapped to stop).  Ids are llama-server's own (kept).
    #   content = the text lines joined; calls 0 and 1 from the done line, in list order;
    #   finish tool_calls (stop with calls), finish_reason "stop".
    o = Ollama("gpt-oss:20b")
    raw = body(
        o.line("I'll look up"),
        o.line(" both files."),
        o.done(metrics(311, 64), tool_calls=[
            tc("read_file", {"path": "src/main.go"}, "Yq2bM7vKc4HdN9tRw1sLp6ZeXa3Fj8Ug", 0),
            tc("read_file", {"path": "go.mod"}, "Tn5wE0rBy7KmA2qVx9cLd4HsJ6fPz1Gi", 1),
        ]),
    )
    return Capture(
        description="Native llama-server path: text, then both calls only on the done line.",
        source=f"{REF} ('The native path ... emits every call ... only on the final done: "
        "true line'; llm/llama_server.go)",
        shape="Ollama native llama-server path, calls only on the done:true line",
        proves="calls on the done line are read before the end; text lines concatenate "
        "into content",
        body=raw,
        expect=called(
            content="I'll look up both files.",
            tool_calls=[
                call(0, "Yq2bM7vKc4HdN9tRw1sLp6ZeXa3Fj8Ug", "read_file",
                     '{"path":"src/main.go"}'),
                call(1, "Tn5wE0rBy7KmA2qVx9cLd4HsJ6fPz1Gi", "read_file", '{"path":"go.mod"}'),
            ],
            model="gpt-oss:20b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1732715335,
                "load_duration": 18340211,
                "prompt_eval_count": 311,
                "prompt_eval_duration": 317635814,
                "eval_count": 64,
                "eval_duration": 1395489219,
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=824,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "I'll look up both files.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_no_id_synthesized() -> Capture:
    # Ollama 0.12.6 - 0.12.9: function.index always written, no id (the docs example has
    # none).  Two calls on one line.
    #   Each gets the deterministic id, seed "" (offline: no request id, no response id),
    #   ordinal 0 and 1 -> distinct ids, id_synthesized true; the wire synthesizes whatever
    #   options.synthesize_ids says (README decision 1): here false.
    o = Ollama("llama3.1:8b")
    raw = body(
        o.line(tool_calls=[
            tc("get_weather", {"city": "Paris"}, index=0),
            tc("get_weather", {"city": "London"}, index=1),
        ]),
        o.done(metrics(174, 38)),
    )
    return Capture(
        description="Ollama before 0.12.10: two calls without id on one line.",
        source=f"{REF} ('Releases before 0.12.10 send no id'; docs/api.md example)",
        shape="Ollama 0.12.6-0.12.9 calls without id (synthesize_ids false)",
        proves="a call without id gets the deterministic id from seed \"\" and its ordinal, "
        "flagged id_synthesized, with synthesize_ids off",
        body=raw,
        expect=called(
            tool_calls=[
                synthesized(0, "get_weather", '{"city":"Paris"}'),
                synthesized(1, "get_weather", '{"city":"London"}'),
            ],
            model="llama3.1:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1025874672,
                "load_duration": 18340211,
                "prompt_eval_count": 174,
                "prompt_eval_duration": 177712645,
                "eval_count": 38,
                "eval_duration": 828571725,
            },
            repairs=corpus_build.repairs(ids_synthesized=2),
            chunks=2,
            bytes=590,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_first_call_without_index() -> Capture:
    # Before 0.12.6 function.index was omitempty: the first call (index 0) carries no index,
    # the later ones do (1, 2); no ids either (before 0.12.10).  Three calls, two lines.
    #   call 0: no index -> the next ordinal, 0; calls 1 and 2: their index, unused so far.
    #   Ids synthesized (seed "", ordinals 0, 1, 2); synthesize_ids true changes nothing.
    o = Ollama("qwen2.5:7b")
    raw = body(
        o.line(tool_calls=[tc("list_dir", {"path": "/srv"})]),
        o.line(tool_calls=[tc("stat", {"path": "/srv/app"}, index=1),
                           tc("stat", {"path": "/srv/data"}, index=2)]),
        o.done(metrics(402, 71)),
    )
    return Capture(
        description="Before 0.12.6: the first call has no function.index, the later ones do.",
        source=f"{REF} ('index'); {INDEX_COMMIT}",
        shape="Ollama < 0.12.6: first call without function.index, no ids (synthesize_ids "
        "true)",
        proves="a call without index takes the next ordinal; later indices are kept; ids "
        "are the same formula with synthesize_ids on",
        body=raw,
        synthesize_ids=True,
        expect=called(
            tool_calls=[
                synthesized(0, "list_dir", '{"path":"/srv"}'),
                synthesized(1, "stat", '{"path":"/srv/app"}'),
                synthesized(2, "stat", '{"path":"/srv/data"}'),
            ],
            model="qwen2.5:7b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1978288635,
                "load_duration": 18340211,
                "prompt_eval_count": 402,
                "prompt_eval_duration": 410577481,
                "eval_count": 71,
                "eval_duration": 1548120852,
            },
            repairs=corpus_build.repairs(ids_synthesized=3),
            chunks=3,
            bytes=783,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_index_reused_stays_two_calls() -> Capture:
    # A relay (or a parser that restarts its count per line) sends function.index 0 on both
    # lines, for two same-name calls with different ids.
    #   call 0: index 0; call 1: index 0 is used already -> the next ordinal, 1.  Two calls,
    #   never merged into '{...}{...}'.
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("search", {"q": "kafka rebalance"}, "call_a1b2c3d4", 0)]),
        o.line(tool_calls=[tc("search", {"q": "kafka lag"}, "call_e5f6g7h8", 0)]),
        o.done(metrics(150, 33)),
    )
    return Capture(
        description="Two same-name calls on separate lines, both with function.index 0.",
        source=f"{RULES} (index: a used index takes the next ordinal); {SPEC}",
        shape="relay: function.index 0 on two same-name calls on separate lines",
        proves="an index already used in the response is not a merge: the call takes the "
        "next ordinal",
        body=raw,
        expect=called(
            tool_calls=[
                call(0, "call_a1b2c3d4", "search", '{"q":"kafka rebalance"}'),
                call(1, "call_e5f6g7h8", "search", '{"q":"kafka lag"}'),
            ],
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 892339989,
                "load_duration": 18340211,
                "prompt_eval_count": 150,
                "prompt_eval_duration": 153200557,
                "eval_count": 33,
                "eval_duration": 719549130,
            },
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=761,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_args_arrival_order() -> Capture:
    # arguments is Ollama's ordered map: its keys come in the order the parser filled it
    # (from a Go map, so not the model's order, and not sorted).
    #   arguments = compact JSON in arrival order: unit, city, days -- never sorted.
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("forecast", {"unit": "celsius", "city": "Lyon", "days": 3},
                              "call_9sd0w2lp", 0)]),
        o.done(metrics(199, 30)),
    )
    return Capture(
        description="One call whose arguments' keys arrive in a non-alphabetical order.",
        source=f"{REF} ('arguments is a JSON object kept in insertion order'; tools/tools.go)",
        shape="Ollama arguments object with keys unit, city, days (not sorted)",
        proves="arguments become compact JSON in the order their keys arrived, never sorted",
        body=raw,
        expect=called(
            tool_calls=[call(0, "call_9sd0w2lp", "forecast",
                             '{"unit":"celsius","city":"Lyon","days":3}')],
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 876971945,
                "load_duration": 18340211,
                "prompt_eval_count": 199,
                "prompt_eval_duration": 203246070,
                "eval_count": 30,
                "eval_duration": 654135573,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=550,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_args_nested_unicode_escaped() -> Capture:
    # Nested objects and arrays (inner maps written with sorted keys, as Go writes a
    # map[string]any), non-ASCII kept raw, and Go's HTML escapes in the body: "<" as \u003c,
    # "&" as \u0026, ">" as \u003e; a quote and a newline escaped as JSON requires.
    #   arguments = the object as compact JSON: non-ASCII raw, <, > and & as themselves (the
    #   \u escapes are the body's, not the value's), only \" and \n escaped (decision 3).
    o = Ollama("mistral-small3.2:24b")
    args = {
        "query": "price < 100 & rating > 4",
        "filters": {"city": "Zürich", "tags": ["café", "東京"]},
        "note": 'say "hi"\nthen leave',
        "limit": 5,
        "strict": False,
        "cursor": None,
    }
    raw = body(
        o.line(tool_calls=[tc("search_listings", args, "call_u4n1c0de", 0)]),
        o.done(metrics(288, 66)),
    )
    return Capture(
        description="A call with nested, non-ASCII and HTML-escaped (\\u003c) arguments.",
        source=f"{REF} ('Framing': Go encoding/json escapes <, > and &)",
        shape="Ollama call with nested arguments, raw UTF-8, \\u003c \\u003e \\u0026 escapes",
        proves="arguments are re-written compact: nesting and types kept, non-ASCII raw, "
        "the body's \\u003c/\\u0026/\\u003e become < & >",
        body=raw,
        expect=called(
            tool_calls=[call(
                0, "call_u4n1c0de", "search_listings",
                '{"query":"price < 100 & rating > 4","filters":{"city":"Zürich",'
                '"tags":["café","東京"]},"note":"say \\"hi\\"\\nthen leave","limit":5,'
                '"strict":false,"cursor":null}',
            )],
            model="mistral-small3.2:24b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1752833622,
                "load_duration": 18340211,
                "prompt_eval_count": 288,
                "prompt_eval_duration": 294145063,
                "eval_count": 66,
                "eval_duration": 1439098257,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=719,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_args_empty_object() -> Capture:
    # A tool without parameters: arguments {} (what Go writes for an empty ordered map).
    #   arguments "{}" (valid JSON), never "".
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("get_current_time", {}, "call_n0args00", 0)]),
        o.done(metrics(96, 14)),
    )
    return Capture(
        description="A call whose arguments are the empty object {}.",
        source=REF,
        shape="Ollama call with arguments {}",
        proves="an empty arguments object is \"{}\"",
        body=raw,
        expect=called(
            tool_calls=[call(0, "call_n0args00", "get_current_time", "{}")],
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 422901930,
                "load_duration": 18340211,
                "prompt_eval_count": 96,
                "prompt_eval_duration": 98048359,
                "eval_count": 14,
                "eval_duration": 305263269,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=517,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_args_absent() -> Capture:
    # A function without an arguments key (Ollama always writes one; an Ollama-compatible
    # server or relay may drop it).
    #   arguments "{}" (absent -> the empty object), arguments_json true.
    o = Ollama("llama3.2:3b")
    raw = body(
        o.line(tool_calls=[tc("refresh_cache", call_id="call_7nokey0s", index=0)]),
        o.done(metrics(88, 12)),
    )
    return Capture(
        description="A call whose function carries no arguments key.",
        source=f"{RULES} (absent arguments -> {{}}); {SPEC}",
        shape="relay: call without function.arguments",
        proves="a call without arguments has arguments {} (valid JSON), never empty",
        body=raw,
        expect=called(
            tool_calls=[call(0, "call_7nokey0s", "refresh_cache", "{}")],
            model="llama3.2:3b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 371122196,
                "load_duration": 18340211,
                "prompt_eval_count": 88,
                "prompt_eval_duration": 89877663,
                "eval_count": 12,
                "eval_duration": 261654231,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=505,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_args_string_verbatim() -> Capture:
    # An Ollama-compatible server that writes arguments as a JSON string (the OpenAI habit)
    # instead of an object: the string is the arguments text, verbatim (its space kept).
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("open_file", '{"path": "notes/todo.md"}', "call_str1ng0a", 0)]),
        o.done(metrics(120, 19)),
    )
    return Capture(
        description="A call whose arguments are a JSON string, kept verbatim.",
        source=f"{RULES} (a string is kept verbatim as the arguments text); {SPEC}",
        shape="Ollama-compatible server: function.arguments as a JSON string",
        proves="string arguments are the arguments text as sent, not re-serialized",
        body=raw,
        expect=called(
            tool_calls=[call(0, "call_str1ng0a", "open_file", '{"path": "notes/todo.md"}')],
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 556436613,
                "load_duration": 18340211,
                "prompt_eval_count": 120,
                "prompt_eval_duration": 122560447,
                "eval_count": 19,
                "eval_duration": 414285864,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=541,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Text, thinking and the end
# --------------------------------------------------------------------------------------------


@case
def ollama_thinking_then_call() -> Capture:
    # think: true: message.thinking on its own lines (content ""), then text, then a call.
    #   reasoning = the thinking pieces joined with no separator; content = the text; the
    #   call is unaffected.  LiteLLM keeps only the first two thinking chunks (§5).
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(thinking="The user wants"),
        o.line(thinking=" the weather in Oslo;"),
        o.line(thinking=" I should call the tool."),
        o.line("Checking Oslo."),
        o.line(tool_calls=[tc("get_weather", {"city": "Oslo"}, "call_th1nk3r5", 0)]),
        o.done(metrics(205, 58)),
    )
    return Capture(
        description="Thinking lines, a text line, then a call, then done stop.",
        source=f"{REF} ('Thinking'); {CLIENTS} (LiteLLM keeps two thinking chunks)",
        shape="Ollama think: true, message.thinking lines before text and a call",
        proves="thinking pieces concatenate into reasoning (all of them); content and calls "
        "are unaffected",
        body=raw,
        expect=called(
            content="Checking Oslo.",
            reasoning="The user wants the weather in Oslo; I should call the tool.",
            tool_calls=[call(0, "call_th1nk3r5", "get_weather", '{"city":"Oslo"}')],
            model="qwen3:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1493626499,
                "load_duration": 18340211,
                "prompt_eval_count": 205,
                "prompt_eval_duration": 209374092,
                "eval_count": 58,
                "eval_duration": 1264662105,
            },
            repairs=corpus_build.repairs(),
            chunks=6,
            bytes=1140,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Checking Oslo.",
                    "reasoning": "The user wants the weather in Oslo; I should call the tool.",
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_text_only_stop() -> Capture:
    # A text answer over four lines, one carrying Go's \u003c and \u0026 escapes; done stop.
    #   content = the pieces joined ("<" and "&" as themselves); stop without calls -> stop;
    #   usage = the done line's metrics (load_duration included); model; no response id.
    o = Ollama("llama3.1:8b")
    raw = body(
        o.line("Yes: 3"),
        o.line(" < 5"),
        o.line(" & 5 > 3."),
        o.line(""),
        o.done(metrics(31, 9, load=2_904_117_350)),
    )
    return Capture(
        description="A text-only answer in four lines, done_reason stop.",
        source=f"{REF} ('The end'; docs/api/streaming.mdx)",
        shape="Ollama text-only answer, \\u003c/\\u0026/\\u003e in content, done_reason stop",
        proves="message.content pieces concatenate into content; stop without calls is stop; "
        "usage is the done line's metrics",
        body=raw,
        expect=assembled(
            finish="stop",
            finish_reason="stop",
            content="Yes: 3 < 5 & 5 > 3.",
            reasoning=None,
            usage={
                "total_duration": 3_133_269_569,
                "load_duration": 2_904_117_350,
                "prompt_eval_count": 31,
                "prompt_eval_duration": 31_661_454,
                "eval_count": 9,
                "eval_duration": 196_240_674,
            },
            model="llama3.1:8b",
            finish_reasons={"0": "stop"},
            repairs=corpus_build.repairs(),
            chunks=5,
            bytes=838,
            frames_after_end=0,
            error_message=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Yes: 3 < 5 & 5 > 3.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_length_withholds_call() -> Capture:
    # num_predict reached after a whole call: done_reason "length".
    #   finish length, truncated true, error_code null, not retryable; the call withheld
    #   (length is never executable), finish_reason verbatim "length".
    o = Ollama("qwen3:8b")
    raw = body(
        o.line("Let me check"),
        o.line(tool_calls=[tc("get_stock", {"symbol": "AAPL"}, "call_l3ngth00", 0)]),
        o.line(" and then"),
        o.done(metrics(140, 128), "length"),
    )
    return Capture(
        description="done_reason length after text and a whole call.",
        source=f"{REF} ('done_reason is stop or length'; llm/server.go)",
        shape="Ollama done_reason length (num_predict) after a call",
        proves="length is truncated: finish length, the call withheld, error_code null, not "
        "retryable",
        body=raw,
        expect=assembled(
            finish="length",
            finish_reason="length",
            truncated=True,
            content="Let me check and then",
            withheld=[call(0, "call_l3ngth00", "get_stock", '{"symbol":"AAPL"}')],
            model="qwen3:8b",
            finish_reasons={"0": "length"},
            usage={
                "total_duration": 2953555924,
                "load_duration": 18340211,
                "prompt_eval_count": 140,
                "prompt_eval_duration": 142987187,
                "eval_count": 128,
                "eval_duration": 2790978435,
            },
            repairs=corpus_build.repairs(),
            chunks=4,
            bytes=801,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "length",
                    "content": "Let me check and then",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_done_without_reason() -> Capture:
    # A done:true line without done_reason (an Ollama-compatible server; Ollama itself always
    # sets it on the last line).  Nothing to map: the finish comes from the calls.
    #   finish tool_calls (a call came), finish_reason null.
    o = Ollama("qwen3:8b")
    raw = body(
        o.line(tool_calls=[tc("ping_host", {"host": "10.0.0.7"}, "call_n0r3as0n", 0)]),
        o.done(metrics(77, 15), None),
    )
    return Capture(
        description="A done line without done_reason, after a call.",
        source=f"{RULES} (no done_reason -> finish by calls); {SPEC}",
        shape="Ollama-compatible server: done:true without done_reason",
        proves="a done line ends the body even without done_reason; the finish follows the "
        "calls and finish_reason is null",
        body=raw,
        expect=assembled(
            finish="tool_calls",
            finish_reason=None,
            tool_calls=[call(0, "call_n0r3as0n", "ping_host", '{"host":"10.0.0.7"}')],
            model="qwen3:8b",
            finish_reasons={"0": None},
            usage={
                "total_duration": 425301046,
                "load_duration": 18340211,
                "prompt_eval_count": 77,
                "prompt_eval_duration": 78642956,
                "eval_count": 15,
                "eval_duration": 327067788,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=506,
            frames_after_end=0,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": None,
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_lines_after_done() -> Capture:
    # A relay that repeats the done line and appends a non-JSON trailer after it.  The done
    # line ends the body: the two lines after it are not read (never malformed), only counted.
    #   finish stop, content "Done."; frames_after_end 2.
    o = Ollama("llama3.1:8b")
    done = o.done(metrics(22, 3))
    raw = body(o.line("Done."), done, done, "[END]\n")
    return Capture(
        description="Text, the done line, then a repeated done line and a non-JSON trailer.",
        source=f"{RULES} (lines after the done line are not read); {SPEC}",
        shape="relay: lines after done:true (a repeat and a non-JSON trailer)",
        proves="the done line ends the body; lines after it are counted in frames_after_end, "
        "never read",
        body=raw,
        expect=assembled(
            finish="stop",
            finish_reason="stop",
            content="Done.",
            frames_after_end=2,
            model="llama3.1:8b",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 107473283,
                "load_duration": 18340211,
                "prompt_eval_count": 22,
                "prompt_eval_duration": 22469421,
                "eval_count": 3,
                "eval_duration": 65413560,
            },
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=722,
            error_message=None,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": "stop",
                    "content": "Done.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


# --------------------------------------------------------------------------------------------
# Errors and dead letters
# --------------------------------------------------------------------------------------------


@case
def ollama_error_line_after_call() -> Capture:
    # The model fails after output began: streamResponse writes {"error": "..."} as one more
    # line on HTTP 200 and the stream ends (docs/api/errors.mdx's example message).
    #   finish error, error_code OLLAMA_ERROR, error_message the message, not retryable,
    #   finish_reason null (no done_reason came), the call withheld, usage null, content kept.
    o = Ollama("qwen3:8b")
    raw = body(
        o.line("Fetching the report."),
        o.line(tool_calls=[tc("fetch_report", {"id": 4417}, "call_3rr0r5xx", 0)]),
        error_line(MODEL_ERROR),
    )
    return Capture(
        description="An error line after text and a whole call, no done line.",
        source=f"{REF} ('Errors': the error line after output began); {ERRORS_DOC}",
        shape='Ollama {"error":"an error was encountered while running the model"} line '
        "mid-stream",
        proves="an error line ends the body as error: OLLAMA_ERROR with its message, not "
        "retryable, calls withheld",
        body=raw,
        expect=assembled(
            finish="error",
            finish_reason=None,
            error_code="OLLAMA_ERROR",
            error_message=MODEL_ERROR,
            content="Fetching the report.",
            withheld=[call(0, "call_3rr0r5xx", "fetch_report", '{"id":4417}')],
            usage=None,
            model="qwen3:8b",
            finish_reasons={"0": None},
            repairs=corpus_build.repairs(),
            chunks=3,
            bytes=434,
            frames_after_end=0,
            reasoning=None,
            refusal=None,
            choices=[
                {
                    "choice": 0,
                    "finish_reason": None,
                    "content": "Fetching the report.",
                    "reasoning": None,
                    "refusal": None,
                },
            ],
        ),
    )


@case
def ollama_stream_closed_before_done() -> Capture:
    # The connection drops after a whole call, every line terminated, no done:true line.
    #   dead letter stream_closed (detail: the body ended without a done: true line), the call
    #   listed as assembled so far (complete identity: missing []).
    o = Ollama("qwen3:8b")
    raw = body(
        o.line("Tailing the log."),
        o.line(tool_calls=[tc("tail_log", {"path": "/var/log/app.log", "lines": 200},
                              "call_cl0sed00", 0)]),
    )
    return Capture(
        description="The body ends after a call line, without a done: true line.",
        source=f"{RULES} (no done line -> stream_closed); {CLIENTS} (no client checks done)",
        shape="Ollama body cut before the done line (last line terminated)",
        proves="without a done: true line the response is stream_closed, even though every "
        "call is whole",
        body=raw,
        expect=dead_letter(
            "stream_closed",
            [missing(call(0, "call_cl0sed00", "tail_log",
                          '{"path":"/var/log/app.log","lines":200}'))],
            model="qwen3:8b",
            response_id=None,
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=2,
            bytes=393,
            frames_after_end=0,
            detail="the body ended without a done: true line (connection dropped or cut)",
            declared_tools=None,
        ),
    )


@case
def ollama_cut_inside_done_line() -> Capture:
    # The body is cut inside the done line itself: its first bytes arrived, not its "\n".
    # An unterminated last line is no line (ollama-python raises JSONDecodeError on it).
    #   dead letter stream_closed (never malformed_chunk), the call listed (missing []).
    o = Ollama("qwen3:8b")
    first = o.line(tool_calls=[tc("lookup_order", {"order_id": "A-20931"}, "call_cutd0ne1", 0)])
    done = o.done(metrics(99, 21))
    raw = body(first, done[:done.index('"done":true') + len('"done":tr')])
    return Capture(
        description="The body is cut inside the done line (no line end).",
        source=f"{RULES} (an unterminated last line -> stream_closed); {CLIENTS}",
        shape="Ollama body cut inside the done:true line",
        proves="an unterminated last line is a body cut short: stream_closed, not malformed, "
        "not assembled",
        body=raw,
        expect=dead_letter(
            "stream_closed",
            [missing(call(0, "call_cutd0ne1", "lookup_order", '{"order_id":"A-20931"}'))],
            model="qwen3:8b",
            response_id=None,
            finish_reason=None,
            finish_reasons={"0": None},
            usage=None,
            repairs=corpus_build.repairs(),
            chunks=1,
            bytes=359,
            frames_after_end=0,
            detail="the body ended without a done: true line (connection dropped or cut)",
            declared_tools=None,
        ),
    )


@case
def ollama_empty_name_missing_identity() -> Capture:
    # A call whose function.name is "" beside a whole one (a parser that failed to read the
    # name).  A name is never synthesized, and "" is no name (the record says null).
    #   dead letter missing_identity, both calls in order: call 0 complete (missing []),
    #   call 1 with its id and name null (missing ["name"]).
    o = Ollama("qwen2.5-coder:7b")
    raw = body(
        o.line(tool_calls=[
            tc("read_file", {"path": "README.md"}, "call_r3adme00", 0),
            tc("", {"path": "setup.py"}, "call_n0name00", 1),
        ]),
        o.done(metrics(160, 40)),
    )
    return Capture(
        description="Two calls on one line, the second with function.name \"\".",
        source=f"{RULES} (a call without a name -> missing_identity); {SPEC}",
        shape="Ollama call with function.name \"\"",
        proves="an empty name is no name: the response is missing_identity, never executed",
        body=raw,
        expect=dead_letter(
            "missing_identity",
            [
                missing(call(0, "call_r3adme00", "read_file", '{"path":"README.md"}')),
                missing(call(1, "call_n0name00", None, '{"path":"setup.py"}'), "name"),
            ],
            model="qwen2.5-coder:7b",
            response_id=None,
            finish_reason="stop",
            finish_reasons={"0": "stop"},
            usage={
                "total_duration": 1055184992,
                "load_duration": 18340211,
                "prompt_eval_count": 160,
                "prompt_eval_duration": 163413927,
                "eval_count": 40,
                "eval_duration": 872180763,
            },
            repairs=corpus_build.repairs(empty_identity_ignored=1),
            chunks=2,
            bytes=635,
            frames_after_end=0,
            detail="call 1 of choice 0 has no name",
            declared_tools=None,
        ),
    )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

#: The lists of call objects, each in ordinal order.
LISTS = ("tool_calls", "withheld_tool_calls", "calls")


def incomplete(capture: Capture) -> list[str]:
    """What ``capture.expect`` leaves unsaid that every capture must say (empty: nothing)."""
    expect = capture.expect
    lacking = corpus_build.unstated(expect, ordinals=LISTS) + corpus_build.unfinished(expect)
    if expect.get("outcome") == "assembled" and "server_tool_calls" not in expect:
        lacking.append("server_tool_calls")
    # This wire synthesizes every missing id (decision 1): a call_tw_ id is exactly a
    # synthesized one.
    for key, n, entry in corpus_build.call_lists(expect, LISTS):
        made = str(entry.get("id") or "").startswith("call_tw_")
        if made != bool(entry.get("id_synthesized")):
            lacking.append(f"{key}[{n}].id_synthesized")
    if not capture.body.endswith(b"\n") and expect.get("reason") != "stream_closed":
        lacking.append("reason (a body without its last line end is stream_closed)")
    return lacking


def build() -> list[Capture]:
    return CASES.build(incomplete, "work each value out by hand from the wire's rules")


INTRO = """\
# Ollama chat wire corpus (`wire: ollama-chat`)

Raw bodies of Ollama `POST /api/chat` responses with `stream: true` (`application/x-ndjson`;
`NAME.ndjson`, byte-exact) and the record the assembler must produce for each (`NAME.json`:
`options` to run it with, `wire` included; `expect` = keys of the record that must be equal).
Generated by `_make.py`, which documents each case in the comment above it; regenerate with
`.venv/bin/python tests/core/corpus_wires/ollama-chat/_make.py`. Every expected value was
worked out by hand from the wire's rules (below) and the reference
(`shared/reference/wires-beyond-sse.md` §4 and §5 "ollama-chat"), not by running the
assembler. Synthesized ids are written from the formula (`"call_tw_" +
sha256("toolwire/call-id/{seed}/0/{index}")[:24]`, seed `""` offline).

No recording of a real `/api/chat` tool-call stream is known (§6 of the reference): the bodies
are written as the server source writes them. Each line is Go's `json.Marshal` and `"\\n"`:
compact, in struct field order (`model, created_at, message{role, content, thinking?,
tool_calls?}, done, done_reason?`, then on the done line `total_duration, load_duration,
prompt_eval_count, prompt_eval_duration, eval_count, eval_duration`), non-ASCII raw, `<`, `>`,
`&` written `\\u003c`, `\\u003e`, `\\u0026`. A call is `{id?, function{index?, name,
arguments}}`; nested objects inside `arguments` have sorted keys (Go `map[string]any`), the top
level keeps the parser's order. Captures whose shape no Ollama release sends (a relay, an
Ollama-compatible server) say "synthetic shape" in their `source`.

## The wire's rules

- NDJSON: one event per non-blank line; a line that is not a JSON object is `malformed_chunk`.
- `model` = the first non-empty `model`; no response id (`response_id` null). One choice, 0.
- `message.content` pieces join into `content` (null when there is none), `message.thinking`
  into `reasoning`.
- Each `message.tool_calls` entry is one whole call, never continued: `function.name` its name,
  `id` its id when a non-empty string (else a synthesized id), `function.arguments` an object
  written as compact JSON in arrival order (absent or null: `"{}"`; a string: verbatim; any
  other type: `malformed_chunk`). `index` = `function.index` when a non-negative integer not yet
  used in the response, else the next ordinal. Two calls are never merged.
- The `done: true` line ends the body; its `done_reason` is `finish_reason` verbatim (`stop` ->
  `stop`, or `tool_calls` with calls; `length` -> `length`, truncated; none -> by the calls;
  `load`/`unload` -> `other`). Lines after it are not read. `usage` = its metrics.
- `{"error": "<message>"}` ends the body: finish `error`, `error_code` `OLLAMA_ERROR`,
  `error_message` the message, not retryable, calls withheld.
- A body without a `done: true` line (or ending on an unterminated line) is a `stream_closed`
  dead letter whose detail says "the body ended without a done: true line".

Every assembled expectation states `outcome`, `wire`, `finish`, `finish_reason`, `truncated`,
`error_code`, `retryable`, `content`, `tool_calls`, `withheld_tool_calls`,
`server_tool_calls` and `response_id`; `reasoning`, `usage`, `error_message`, `model` and
`frames_after_end` where the capture is about them. Every dead letter states `outcome`,
`wire`, `reason` and `calls` (with `missing`); `tests/core/test_corpus_ollama.py` checks the
detail of each `stream_closed` one.

"""

DECISIONS = """\
## Decisions

Where the rules leave a value open, these captures pin the following choices. The capture
that pins each one is named.

1. **Id synthesis is part of the wire, not opt-in** (as on gemini): a call without a non-empty
   `id` gets the deterministic id whatever `options.synthesize_ids` says
   (`ollama_no_id_synthesized` has it false, `ollama_first_call_without_index` true). Offline
   the seed is `""`: Ollama has no response id, so two offline responses without ids give
   their calls the same ids (online, the request id seeds them). The ordinal is the call's
   `index`.
2. **Index.** A call without `function.index` (before 0.12.6, index 0 was omitted) takes the
   next ordinal (`ollama_first_call_without_index`); an index already used takes the next
   ordinal too, so two calls with index 0 are two calls 0 and 1
   (`ollama_index_reused_stays_two_calls`). Captures avoid the case where "next ordinal"
   could mean either the count of calls so far or the lowest unused index.
3. **Argument serialization** (as gemini's decision 4): compact JSON, keys in arrival order,
   non-ASCII raw, only the escapes JSON requires. Go's `\\u003c`/`\\u003e`/`\\u0026` are the
   body's escapes, not the value's: the arguments text has `<`, `>`, `&`
   (`ollama_args_nested_unicode_escaped`). Integers stay integers; no floats are captured.
4. **Empty name.** `function.name: ""` is no name: the call's `name` is null and `missing`
   names it (`ollama_empty_name_missing_identity`), as an empty identity is ignored on every
   wire.
5. **Content.** `""` pieces add nothing; a response with no text has `content` null
   (`ollama_single_call_with_id`).
6. **Error line.** `finish_reason` null (no `done_reason` came), `usage` null (no done line),
   text before it kept (`ollama_error_line_after_call`).
7. **Length withholds calls** like every wire's length: the whole call before the `length`
   done line is in `withheld_tool_calls` (`ollama_length_withholds_call`).
8. **Frames after the end.** The lines after the done line are counted in `frames_after_end`
   (a repeated done line and a non-JSON `[END]`: 2), never read
   (`ollama_lines_after_done`).
9. **An unterminated last line is a cut**, even when it is the start of the done line: the
   body is `stream_closed`, never `malformed_chunk` (`ollama_cut_inside_done_line`).
10. **Pinned as the builder gives them**: `repairs`, `chunks`, `bytes`, `choices`,
    `finish_reasons`, `refusal` and the `stream_closed` detail, which the rules left to it, are
    stated by every expectation. **Not pinned**: the `error_code` of `load`/`unload` (no
    capture: both come only for requests with empty messages, and the rules give their finish,
    `other`, not their code).

## Not covered here

- `--wire auto`: auto does not detect NDJSON yet; `tests/core/test_corpus_ollama.py` checks
  that under `auto` each body is a `malformed_chunk` dead letter (today's JSON-body rule)
  instead of requiring the same record.
- CRLF line ends: no Ollama server sends them; the test turns every capture's LF into CRLF
  (also cut between `\\r` and `\\n`) and requires the same record.
- An error before output began (HTTP 500, `application/json`, no trailing newline): not a
  stream the worker reads as one.
- `images`, `tool_name`, `tool_call_id`, `logprobs`, `remote_model`/`remote_host` and
  `_debug_info`: no capture carries them.
"""


def readme(captures: list[Capture]) -> str:
    return (INTRO + corpus_build.EVERY_KEY + "\n".join(corpus_build.capture_table(captures))
            + "\n\n" + DECISIONS)


def main() -> None:
    captures = build()
    corpus_build.write_corpus(HERE, captures, readme(captures), suffix=SUFFIX)


if __name__ == "__main__":
    main()
