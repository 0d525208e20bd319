"""Toolwire's pure core beside the libraries people use, on the same streams in the same run.

Why this exists: "≤ 3 µs per event, flat from 150 to 9,600 events" means little on its own. A
figure from another machine or another day cannot be compared with it, so every contender runs
here, in one process, on the same real provider captures
(``tests/core/corpus_wires/openai-chat``), interleaved repeat by repeat so a noisy neighbour on
a shared machine slows all of them alike, and each is also given as a ratio to the floor of
``orjson.loads`` on each event's payload measured in the same run.

Contenders, each through its public API:

* ``toolwire``: ``toolwire.core.assemble(body, options)``: raw SSE body bytes → framing → orjson
  → ``Assembler.feed`` → ``end`` → the record (``decide``). Framing and parsing are included.
* ``openai``: ``openai.lib.streaming.chat.ChatCompletionStreamState``. Per event: orjson, then
  ``ChatCompletionChunk.construct(**data)`` (what the client does by default, without strict
  validation; building the pydantic chunk *is* timed, since ``handle_chunk`` needs it), then
  ``handle_chunk``; the result is ``get_final_completion()``.
* ``litellm``: ``litellm.stream_chunk_builder(chunks)`` on the orjson dicts of one response (the
  cheapest input it accepts; its own stream wrapper would first build a ``ModelResponseStream``
  per chunk). It computes usage when the stream carries none, with its bundled tokenizers.
* ``langchain``: ``langchain_core.messages.AIMessageChunk`` built per event from the delta as
  langchain-openai does (content, ``tool_call_chunks`` of name/args/id/index), merged with ``+``
  one event at a time, one accumulator per choice.
* ``orjson_floor``: ``orjson.loads`` of each payload alone, the result dropped.
* ``toolwire_feed`` (a diagnostic, not a contender): ``Assembler.feed`` and ``end`` without the
  decision and its record, to show how much of Toolwire's cost per event on these short
  responses (about four events each) is the per-response decision rather than the event path.

The libraries get the payloads already framed (framing is free for them and not timed), so
their figures are lower bounds and every ratio to Toolwire understates Toolwire's advantage.

Streams: every capture of the corpus that every contender ingests without raising and that has
at least one event; the rest are listed with the exception each library raised. Sizes of 150,
600, 2,400 and 9,600 events are made of whole captures, cycled in name order as separate
responses (the first response boundary at or past the size; the actual count is printed).

Timing: ``time.perf_counter_ns`` around a whole workload, with ``process_time_ns`` beside it as
a diagnostic that time spent descheduled on a shared machine does not inflate. Best of N repeats
is the figure (the repeat least disturbed by other work); the median is in the notes. Contenders
take turns within each repeat, so a noisy neighbour slows all of them alike; each timed run is
preceded by ``gc.collect()`` and then an untimed pass of 150 events, so it starts with warm
caches and none of the previous contender's garbage (see ``time_once``). GC stays enabled while
timing: allocation-heavy libraries pay for their garbage in production too. ``gc.freeze()``
after the imports, and again after the first pass, moves the import-time heap (litellm's is
large) and what the libraries build lazily out of the collector's reach: otherwise each full
collection would walk it and charge whichever contender triggered it.

Agreement: for each capture each library ingests, its tool calls (choice, id, name, arguments;
in any order) are compared with Toolwire's (the executable, withheld and dead-lettered calls
alike). Captures that are well-behaved (Toolwire repaired nothing and every call has its id and
name) must agree; on the others a difference is a finding, printed in full: the library may
be wrong (an id doubled) or only different (a split name Toolwire refuses to concatenate).

The 2026 captures (``CAPTURES_2026``: the 32 added with the Chat Completions 2026 rules): a
table of what each library makes of each one, printed in Markdown in every mode (one pass, after
the timing). Here each library runs as an application runs it on an OpenAI-compatible endpoint,
from the raw body through openai-python's own client on an in-memory transport (its SSE reader,
which turns an error chunk or ``event: error`` into ``APIError``, is the transport of all three;
see ``load_applications``). Each verdict is computed from the library's output against
Toolwire's record (``judge``): ``ok``, or findings such as ``merged 2→1`` (one call carries the
arguments or ids of several of Toolwire's), ``split``, ``dropped N calls``, ``dropped custom``,
``dropped extra_content`` (a provider field on none of the call's values), ``ids joined`` /
``id doubled`` / ``name doubled``, ``empty id``, ``refusal lost``, ``error lost``, ``no end`` (a
cut body taken as complete), ``malformed accepted``, or ``raised X`` (wrong only where Toolwire
assembles something). Toolwire's own outcome is the second column.

    python ops/bench/libraries.py [--short] [--json]

``--short`` runs two small sizes with few repeats (a CI check that the script works, < 20 s).
``--json`` puts every timing, the per-capture agreement and the 2026 table into the notes of
the BENCH line.
The last line of stdout is always ``BENCH {...}``; the exit code is 0 even when a goal is not
met, non-zero only on a crash or a missing library.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import logging
import os
import platform
import statistics
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from time import perf_counter_ns, process_time_ns
from typing import Any, cast

import orjson

from toolwire.core import Decision, Options, assemble, new_assembler
from toolwire.core.framing import Framer
from toolwire.core.records import CallRecord
from toolwire.core.wires._shared import DONE
from toolwire.tools.captures import load as load_captures

SIZES = (150, 600, 2400, 9600)
SHORT_SIZES = (150, 600)
REPEATS = 7
SHORT_REPEATS = 3
#: Events of the untimed pass each contender makes right before each of its timed runs.
WARM_EVENTS = 150
GOAL_US = 3.0
GOAL_FLATNESS = 1.5
LIBRARIES = ("openai", "litellm", "langchain")

#: One tool call as compared across contenders: (choice, id, name, arguments).
CallKey = tuple[object, object, object, str]


@dataclass(frozen=True, slots=True)
class Response:
    """One capture: the raw body for Toolwire and its framed payloads for everyone else."""

    name: str
    body: bytes
    options: Options
    payloads: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Contender:
    """A way to turn one response into its result, and to read the tool calls of that result."""

    key: str
    label: str
    run: Callable[[Response], object]
    #: ``None`` for the floor and the diagnostic, whose results hold no calls to compare.
    calls: Callable[[object], list[CallKey]] | None


# -- the corpus ---------------------------------------------------------------------------------


def load_corpus() -> list[Response]:
    """The captures of ``tests/core/corpus_wires/openai-chat`` (the files the tests run on, read
    with :mod:`toolwire.tools.captures` as the tests read them), framed once by Toolwire's
    framer."""
    captures = load_captures(Path(__file__).resolve().parents[2] / "tests" / "core"
                             / "corpus_wires" / "openai-chat")
    responses = []
    for capture in captures:
        framer = Framer(capture.options.limits.max_line_bytes)
        # The events before ``data: [DONE]`` (the framer has no end of its own: the end is the
        # chat wire's). ``bytes(...)``: the framer gives a named event (``event: error``) as a
        # bytes subclass, which orjson refuses with "Input must be bytes": the libraries
        # would be reported as raising on the harness's own type, not on the capture.
        events = framer.feed(capture.body)
        payloads = tuple(bytes(p) for p in itertools.takewhile(lambda p: p != DONE, events))
        responses.append(Response(capture.name, capture.body, capture.options, payloads))
    return responses


# -- contenders ---------------------------------------------------------------------------------


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _key(choice: object, call_id: object, name: object, arguments: object) -> CallKey:
    """Absent arguments count as ``""`` (Toolwire's empty arguments); ids are never normalized."""
    return (choice, call_id, name, "" if arguments is None else str(arguments))


def toolwire_calls(result: object) -> list[CallKey]:
    record = cast(Decision, result)
    if record["outcome"] == "assembled":
        calls = [*record["tool_calls"], *record["withheld_tool_calls"]]
    else:
        calls = [*record["calls"]]
    return [_key(c["choice"], c["id"], c["name"], c["arguments"]) for c in calls]


def model_calls(result: object) -> list[CallKey]:
    """Tool calls of a chat-completion model object (openai's and litellm's share the shape).

    A custom (freeform) call carries its name and input in ``custom``, not ``function``.
    """
    keys = []
    for choice in _items(getattr(result, "choices", None)):
        message = getattr(choice, "message", None)
        for call in _items(getattr(message, "tool_calls", None)):
            function = getattr(call, "function", None)
            custom = getattr(call, "custom", None)
            if function is None and custom is not None:
                name, arguments = getattr(custom, "name", None), getattr(custom, "input", None)
            else:
                name, arguments = getattr(function, "name", None), getattr(function, "arguments",
                                                                           None)
            keys.append(_key(getattr(choice, "index", None), getattr(call, "id", None), name,
                             arguments))
    return keys


def _toolwire(response: Response) -> object:
    return assemble(response.body, response.options)


def _toolwire_feed(response: Response) -> object:
    asm = new_assembler(response.options)
    asm.feed(response.body)
    asm.end()
    return asm


def _floor(response: Response) -> object:
    loads = orjson.loads
    for payload in response.payloads:
        loads(payload)
    return None


def _offline() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _missing(exc: ImportError) -> SystemExit:
    return SystemExit(
        f"ops/bench/libraries.py: cannot import {exc.name or exc}: the libraries compared "
        "are not installed; run `pip install -e '.[bench]'`")


def _quiet(litellm: Any) -> None:
    """litellm logs a warning per response on non-standard finish reasons, and an error with a
    traceback for every chunk list it cannot build; the probe and the table report those."""
    litellm.suppress_debug_info = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def langchain_merger() -> Callable[[dict[object, Any], Any], None]:
    """``add(merged, chunk)``: one chunk (a dict) into one ``AIMessageChunk`` per choice.

    The delta becomes a message as langchain-openai's ``ChatOpenAI`` makes it (content, and
    ``tool_call_chunks`` of the function's name and arguments, the id and the index; nothing
    else of a tool call, no refusal), merged with ``+`` one chunk at a time. langchain-openai
    (not installed here; its ``_convert_delta_to_message_chunk``) indexes ``rtc["function"]``,
    so a custom call (``function`` null or absent) raises or empties that delta's chunks there;
    here it is a chunk without name or arguments. The custom input is lost either way.
    """
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    def add(merged: dict[object, Any], data: Any) -> None:
        for position, choice in enumerate(data.get("choices") or ()):
            delta = choice.get("delta") or {}
            chunks = []
            for call in delta.get("tool_calls") or ():
                function = call.get("function") or {}
                chunks.append(tool_call_chunk(
                    name=function.get("name"), args=function.get("arguments"),
                    id=call.get("id"), index=call.get("index")))
            message = AIMessageChunk(content=delta.get("content") or "",
                                     tool_call_chunks=chunks)
            index = choice.get("index", position)
            previous = merged.get(index)
            merged[index] = message if previous is None else previous + message

    return add


def load_contenders() -> list[Contender]:
    """Import the libraries and wrap each one's public API; exit with a hint if one is missing.

    The environment is set first: without it litellm fetches its model price map and Hugging
    Face tokenizers over the network at import and on first use, which a benchmark must not
    time (and a machine without network would wait on).
    """
    _offline()
    try:
        import litellm
        from langchain_core.messages import AIMessageChunk
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError as exc:
        raise _missing(exc) from exc
    _quiet(litellm)

    loads = orjson.loads
    construct = ChatCompletionChunk.construct
    stream_chunk_builder = litellm.stream_chunk_builder

    def openai_run(response: Response) -> object:
        state: ChatCompletionStreamState[object] = ChatCompletionStreamState()
        for payload in response.payloads:
            state.handle_chunk(construct(**loads(payload)))
        return state.get_final_completion()

    def litellm_run(response: Response) -> object:
        return stream_chunk_builder([loads(payload) for payload in response.payloads])

    add = langchain_merger()

    def langchain_run(response: Response) -> object:
        merged: dict[object, AIMessageChunk] = {}
        for payload in response.payloads:
            add(merged, loads(payload))
        return merged

    def langchain_calls(result: object) -> list[CallKey]:
        assert isinstance(result, dict)
        return [_key(index, chunk.get("id"), chunk.get("name"), chunk.get("args"))
                for index, message in result.items()
                for chunk in message.tool_call_chunks]

    def version(dist: str) -> str:
        return metadata.version(dist)

    return [
        Contender("toolwire", f"toolwire {version('toolwire')} core.assemble (bytes in)",
                  _toolwire, toolwire_calls),
        Contender("toolwire_feed", "toolwire core Assembler.feed + end (no decision, no record)",
                  _toolwire_feed, None),
        Contender("openai", f"openai {version('openai')} ChatCompletionStreamState",
                  openai_run, model_calls),
        Contender("litellm", f"litellm {version('litellm')} stream_chunk_builder",
                  litellm_run, model_calls),
        Contender("langchain", f"langchain-core {version('langchain-core')} AIMessageChunk +",
                  langchain_run, langchain_calls),
        Contender("orjson_floor", f"orjson {version('orjson')} loads per payload",
                  _floor, None),
    ]


# -- ingestion and agreement --------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    """The exception in one line, with the one it wraps (litellm wraps all in APIError)."""
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:90] if str(exc) else ''}"
    inner = exc.__cause__ or exc.__context__
    if inner is not None and type(inner) is not type(exc):
        first = str(inner).strip().splitlines()[0][:90] if str(inner) else ""
        text += f" (from {type(inner).__name__}: {first})"
    return text


@dataclass(slots=True)
class Probe:
    """What one pass over the corpus showed: who refused what, and where calls differ."""

    #: capture → contender → the exception it raised.
    refused: dict[str, dict[str, str]]
    #: capture → library → "agree" | "differ" | "refused".
    verdicts: dict[str, dict[str, str]]
    well_behaved: set[str]
    mismatches: list[dict[str, object]]
    #: Captures without any event (only ``[DONE]``): nothing to time or compare.
    empty: list[str]


def _well_behaved(record: Decision) -> bool:
    if record["outcome"] != "assembled" or any(record["repairs"].values()):
        return False
    calls = [*record["tool_calls"], *record["withheld_tool_calls"]]
    return all(c["id"] and c["name"] for c in calls)


def probe(corpus: Sequence[Response], contenders: Sequence[Contender]) -> Probe:
    """Run every contender once on every capture: the warm-up, and the ingestion check."""
    result = Probe({}, {}, set(), [], [])
    toolwire = contenders[0]
    assert toolwire.key == "toolwire" and toolwire.calls is not None
    for response in corpus:
        if not response.payloads:
            result.empty.append(response.name)
            continue
        record = cast(Decision, toolwire.run(response))
        if _well_behaved(record):
            result.well_behaved.add(response.name)
        expected = sorted(toolwire.calls(record), key=repr)
        verdicts = result.verdicts[response.name] = {}
        for contender in contenders[1:]:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = contender.run(response)
                    calls = None if contender.calls is None else contender.calls(out)
            except Exception as exc:
                result.refused.setdefault(response.name, {})[contender.key] = _describe(exc)
                if contender.calls is not None:
                    verdicts[contender.key] = "refused"
                continue
            if calls is None:
                continue
            got = sorted(calls, key=repr)
            verdicts[contender.key] = "agree" if got == expected else "differ"
            if got != expected:
                result.mismatches.append({
                    "capture": response.name, "library": contender.key,
                    "well_behaved": response.name in result.well_behaved,
                    "toolwire": [list(k) for k in expected],
                    "library_calls": [list(k) for k in got],
                })
    return result


# -- the 2026 captures: what each library makes of them -----------------------------------------

#: The captures added with the Chat Completions 2026 rules, in the order of
#: ``tests/core/corpus_wires/openai-chat/README.md`` (``tests/test_bench_libraries.py`` checks
#: each one exists).
CAPTURES_2026 = (
    # same-index parallel calls, identity changes mid-arguments
    "litellm_ollama_chat_same_name_split", "openrouter_same_name_split_fragmented",
    "gateway_three_calls_one_index", "new_id_mid_arguments_conflict",
    "new_id_mid_arguments_strict", "different_identity_mid_arguments_split",
    "deepseek_v4_head_and_tail_split", "vllm_xlam_duplicated_arguments_same_id",
    # custom (freeform) tools
    "gpt5_custom_tool_apply_patch", "custom_empty_object_echo", "function_and_custom_parallel",
    "function_and_custom_mixed_malformed", "custom_not_an_object", "custom_tool_unknown_name",
    # provider fields
    "gemini3_thought_signature_first_call", "provider_field_on_continuation",
    # calls without an id (Toolwire's id synthesis is opt-in)
    "ollama_v1_no_id_without_synthesis", "ollama_v1_no_id_synthesized",
    "nameless_call_synthesized_id", "no_id_same_name_split_synthesized",
    "no_id_same_name_without_synthesis", "truncated_no_id_synthesized",
    # ends, refusals, provider errors
    "perplexity_done_chunk_end", "perplexity_done_chunk_then_trailing",
    "perplexity_cut_before_done", "openai_structured_output_refusal",
    "groq_error_event_tool_use_failed", "openrouter_error_chunk_after_length",
    "openrouter_error_chunk_rate_limited", "openrouter_midstream_server_error",
    "error_event_overloaded_type", "error_event_not_json",
)
#: Column headings of the table, by library key.
TABLE_LABELS = {"openai": "openai-python", "litellm": "LiteLLM", "langchain": "LangChain"}
#: The host the in-memory transport answers for (never resolved: no request leaves the process).
APP_BASE_URL = "http://toolwire-bench.invalid/v1"
APP_MODEL = "bench"


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as a verdict compares it (``""`` for an absent id, name or arguments)."""

    id: str
    name: str
    #: ``function`` | ``custom`` | ``""`` (not said: LangChain's chunks carry no type).
    type: str
    arguments: str
    #: Every scalar on the call, nested ones included, as text: a provider field is found
    #: wherever a library put it on the call (under its own key, renamed, or moved).
    values: frozenset[str] = frozenset()
    #: Toolwire's only: each provider field's key and the scalars of its value.
    provider: tuple[tuple[str, frozenset[str]], ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one library handed back for one capture: an exception, or calls and the rest."""

    #: The exception's type name, when the library raised (nothing else is then known).
    raised: str | None
    calls: tuple[Call, ...] = ()
    #: ``(key, text)`` of every scalar anywhere in the result, the message level included.
    pairs: frozenset[tuple[str, str]] = frozenset()
    #: The exception in one line (for the notes), or ``""``.
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    text: str
    #: The library hands back what Toolwire would not execute, or loses what Toolwire keeps.
    wrong: bool
    findings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Row:
    capture: str
    toolwire: str
    outcomes: dict[str, Outcome]
    verdicts: dict[str, Verdict]


@dataclass(frozen=True, slots=True)
class Application:
    """A library run as an application runs it, from the raw body of a capture."""

    key: str
    label: str
    run: Callable[[bytes], object]
    #: The calls of the result, from its plain (``_plain``) form.
    calls: Callable[[object], list[Call]]


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    return None


def _plain(value: object, depth: int = 0) -> object:
    """The result as dicts, lists and scalars: pydantic models dumped (extras included)."""
    if depth > 32:
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(), depth + 1)
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return {k: _plain(v, depth + 1) for k, v in attrs.items() if not k.startswith("_")}
    return repr(value)


def _pairs(plain: object, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(plain, dict):
        for k, v in plain.items():
            yield from _pairs(v, k)
    elif isinstance(plain, list):
        for v in plain:
            yield from _pairs(v, key)
    else:
        text = _text(plain)
        if text is not None:
            yield key, text


def _values(plain: object) -> frozenset[str]:
    return frozenset(text for _, text in _pairs(plain))


def _field(mapping: object, key: str) -> object:
    return mapping.get(key) if isinstance(mapping, dict) else None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _library_call(call: object, name_key: str, arguments_key: str) -> Call:
    """A call of a chat-completion result (``function`` or ``custom``) or a LangChain chunk."""
    function, custom = _field(call, "function"), _field(call, "custom")
    name = _str(_field(call, name_key)) or _str(_field(function, "name"))
    arguments = _str(_field(call, arguments_key)) or _str(_field(function, "arguments"))
    if not _field(function, "name") and not _field(function, "arguments"):
        name = name or _str(_field(custom, "name"))
        arguments = arguments or _str(_field(custom, "input"))
    return Call(_str(_field(call, "id")), name, _str(_field(call, "type")), arguments,
                _values(call))


def completion_calls(plain: object) -> list[Call]:
    """The calls of an openai ``ParsedChatCompletion`` or a LiteLLM ``ModelResponse``."""
    return [_library_call(call, "", "")
            for choice in _items(_field(plain, "choices"))
            for call in _items(_field(_field(choice, "message"), "tool_calls"))]


def langchain_message_calls(plain: object) -> list[Call]:
    """The ``tool_call_chunks`` of each choice's merged ``AIMessageChunk``."""
    if not isinstance(plain, dict):
        return []
    return [_library_call(chunk, "name", "args")
            for message in plain.values()
            for chunk in _items(_field(message, "tool_call_chunks"))]


def load_applications() -> list[Application]:
    """The three libraries as an application runs them on an OpenAI-compatible endpoint.

    The raw body comes through openai-python's own client (``httpx2`` with an in-memory
    transport that answers every request with the capture, byte for byte): its SSE reader is
    the transport of all three (langchain-openai's ``ChatOpenAI`` iterates
    ``client.chat.completions.create(stream=True)``, LiteLLM's ``openai/`` provider does too),
    and it is where a provider error chunk or ``event: error`` becomes an ``APIError``.

    * openai-python: each chunk of ``create(stream=True)`` into ``ChatCompletionStreamState``,
      then ``get_final_completion()``.
    * LiteLLM: ``litellm.completion(model="openai/…", stream=True, client=…)`` (its
      ``CustomStreamWrapper``), every chunk collected, then ``litellm.stream_chunk_builder``.
    * LangChain: each chunk's ``model_dump()`` (what ``ChatOpenAI._stream`` does) through
      :func:`langchain_merger`.
    """
    _offline()
    try:
        import httpx2
        import litellm
        from langchain_core.messages import AIMessageChunk
        from openai import OpenAI
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam
    except ImportError as exc:
        raise _missing(exc) from exc
    _quiet(litellm)

    served = [b""]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=served[0])

    client = OpenAI(api_key="bench", base_url=APP_BASE_URL, max_retries=0,
                    http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "a capture"}]

    def chunks(body: bytes) -> Iterator[ChatCompletionChunk]:
        served[0] = body
        with client.chat.completions.create(model=APP_MODEL, messages=messages,
                                            stream=True) as stream:
            yield from stream

    def openai_app(body: bytes) -> object:
        state: ChatCompletionStreamState[object] = ChatCompletionStreamState()
        for chunk in chunks(body):
            state.handle_chunk(chunk)
        return state.get_final_completion()

    def litellm_app(body: bytes) -> object:
        served[0] = body
        stream = litellm.completion(model=f"openai/{APP_MODEL}", messages=messages, stream=True,
                                    client=client, api_key="bench", api_base=APP_BASE_URL)
        return litellm.stream_chunk_builder(list(cast(Iterable[object], stream)),
                                            messages=messages)

    add = langchain_merger()

    def langchain_app(body: bytes) -> object:
        merged: dict[object, AIMessageChunk] = {}
        for chunk in chunks(body):
            add(merged, chunk.model_dump())
        return merged

    version = metadata.version
    return [
        Application("openai", f"openai {version('openai')}: create(stream=True) → "
                    "ChatCompletionStreamState → get_final_completion()", openai_app,
                    completion_calls),
        Application("litellm", f"litellm {version('litellm')}: completion(model='openai/…', "
                    "stream=True) → stream_chunk_builder", litellm_app, completion_calls),
        Application("langchain", f"langchain-core {version('langchain-core')}: openai's "
                    "chunks .model_dump() → AIMessageChunk + (as ChatOpenAI)", langchain_app,
                    langchain_message_calls),
    ]


def run_application(app: Application, body: bytes) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = _plain(app.run(body))
    except Exception as exc:
        return Outcome(type(exc).__name__, detail=_describe(exc))
    return Outcome(None, tuple(app.calls(plain)), frozenset(_pairs(plain)))


def expected_calls(record: Decision) -> list[Call]:
    """Toolwire's calls (executable, withheld or dead-lettered), as a library could know them:
    a synthesized id counts as none, since it is not on the wire."""
    if record["outcome"] == "assembled":
        calls: list[CallRecord] = [*record["tool_calls"], *record["withheld_tool_calls"]]
    else:
        calls = [*record["calls"]]
    out = []
    for c in calls:
        fields = c.get("provider_fields") or {}
        out.append(Call("" if c.get("id_synthesized") else c["id"] or "", c["name"] or "",
                        c["type"], c["arguments"],
                        provider=tuple((k, _values(v)) for k, v in fields.items())))
    return out


def withholds(record: Decision) -> bool:
    """Toolwire lets nothing of this response run: a dead letter, or every call withheld."""
    return record["outcome"] == "dead_letter" or bool(record["error_code"] or record["truncated"])


def provider_error(record: Decision) -> str | None:
    """The provider error's message when the stream carried one (``""``: without a message)."""
    if record["outcome"] != "assembled":
        return None
    code, message = record["error_code"], record["error_message"]
    if message is not None:
        return message
    finish = (record["finish_reason"] or "").upper()
    if code and code not in ("REFUSAL", "EMPTY_RESPONSE", finish) and not record["truncated"]:
        return ""
    return None


def toolwire_cell(record: Decision) -> str:
    """Toolwire's outcome in a few words."""
    if record["outcome"] == "dead_letter":
        return f"dead letter: {record['reason']}"
    calls, held = record["tool_calls"], record["withheld_tool_calls"]

    def count(n: int) -> str:
        return "no call" if n == 0 else f"{n} call" + ("s" if n > 1 else "")

    if record["error_code"] or record["truncated"]:
        head = f"withheld ({record['error_code'] or 'truncated'}): {count(len(held))}"
    else:
        head = f"assembled: {count(len(calls))}"
    notes = []
    if any(c.get("id_synthesized") for c in [*calls, *held]):
        notes.append("ids synthesized")
    fields = sum(1 for c in [*calls, *held] if "provider_fields" in c)
    if fields:
        notes.append(f"provider fields on {count(fields)}")
    return head + (f" ({'; '.join(notes)})" if notes else "")


def _pieces(value: str, pieces: Sequence[str]) -> list[str] | None:
    """``value`` as a run of ``pieces`` (each non-empty, repeats allowed), or ``None``."""
    best: list[list[str] | None] = [[]] + [None] * len(value)
    for end in range(1, len(value) + 1):
        for piece in pieces:
            start = end - len(piece)
            if piece and start >= 0 and best[start] is not None and value[start:end] == piece:
                best[end] = [*cast(list[str], best[start]), piece]
                break
    return best[len(value)]


def _identity(what: str, value: str, own: set[str], known: Sequence[str]) -> str | None:
    """How a library's id or name relates to the Toolwire call(s) it carries."""
    if not value or value in own:
        return None
    run = _pieces(value, known)
    if run is not None and len(run) >= 2:
        return f"{what} doubled" if len(set(run)) == 1 else f"{what}s joined"
    if any(k in value for k in known):
        return f"{what}s joined"
    return f"{what} differs"


def _run_making(target: str, parts: Sequence[str]) -> list[int] | None:
    """Positions of two or more consecutive ``parts`` that join into ``target``."""
    for first in range(len(parts)):
        joined = parts[first]
        for last in range(first + 1, len(parts)):
            joined += parts[last]
            if joined == target:
                return list(range(first, last + 1))
            if not target.startswith(joined):
                break
    return None


def call_findings(expected: Sequence[Call], got: Sequence[Call],
                  result_values: frozenset[str] = frozenset()) -> list[str]:
    """How a library's calls differ from Toolwire's, as short findings (none: the same).

    A library call *carries* a Toolwire call when it matches it exactly, or (otherwise) when
    it holds its non-empty id or its non-empty arguments: one carrying several is a merge; a
    Toolwire call carried by none is dropped; one whose arguments only consecutive library
    calls make up is split.
    """
    findings: list[str] = []

    def add(text: str) -> None:
        if text not in findings:
            findings.append(text)

    exact: dict[int, int] = {}
    free = list(range(len(got)))
    for i, t in enumerate(expected):
        for j in free:
            if (got[j].id, got[j].name, got[j].arguments) == (t.id, t.name, t.arguments):
                exact[i] = j
                free.remove(j)
                break
    loose = [i for i in range(len(expected)) if i not in exact]
    carried: dict[int, set[int]] = {j: {i} for i, j in exact.items()}
    for j in free:
        lib = got[j]
        carried[j] = {i for i in loose
                      if (expected[i].id and expected[i].id in lib.id)
                      or (expected[i].arguments and expected[i].arguments in lib.arguments)}
    split_parts: set[int] = set()
    splits = 0
    for i in loose:
        t = expected[i]
        if not t.arguments or any(t.arguments in got[j].arguments for j in free):
            continue
        run = _run_making(t.arguments, [got[j].arguments for j in free])
        if run is not None:
            splits += 1
            for k in run:
                split_parts.add(free[k])
                carried[free[k]] = {i}
    carriers = {i: [j for j in range(len(got)) if i in carried[j]] for i in range(len(expected))}

    merges = [carried[j] for j in free if len(carried[j]) >= 2 and j not in split_parts]
    if merges:
        add(f"merged {len(set().union(*merges))}→{len(merges)}")
    if splits:
        add(f"split {splits}→{len(split_parts)}")
    customs = [t for t in expected if t.type == "custom"]
    if any(not any((g.name, g.arguments) == (t.name, t.arguments) for g in got) for t in customs):
        add("dropped custom")
    dropped = sum(1 for i, t in enumerate(expected) if t.type != "custom" and not carriers[i])
    if dropped:
        add(f"dropped {dropped} call" + ("s" if dropped > 1 else ""))

    known_ids = [t.id for t in expected if t.id]
    known_names = [t.name for t in expected if t.name]
    for j, lib in enumerate(got):
        mine = carried[j]
        if mine and all(expected[i].type == "custom" for i in mine):
            continue  # a custom call: "dropped custom" above, or the same
        if not lib.id:
            add("empty id")
        if not lib.name:
            add("empty name")
        if j in split_parts:
            continue
        if not mine:
            add("extra call")
            continue
        for what, value, own, known in (
                ("id", lib.id, {expected[i].id for i in mine}, known_ids),
                ("name", lib.name, {expected[i].name for i in mine}, known_names)):
            problem = _identity(what, value, own, known)
            if problem is not None:
                add(problem)
        if len(mine) == 1:
            t = expected[next(iter(mine))]
            if lib.arguments != t.arguments:
                copies = _pieces(lib.arguments, [t.arguments]) if t.arguments else None
                add("empty args" if not lib.arguments
                    else "args doubled" if copies is not None and len(copies) >= 2
                    else "args differ")

    for i, t in enumerate(expected):
        if not carriers[i]:
            continue  # dropped with its call
        for key, texts in t.provider:
            if not texts or any(texts <= got[j].values for j in carriers[i]):
                continue
            add(f"{key} off the call" if texts <= result_values else f"dropped {key}")
    for j, lib in enumerate(got):
        for i, t in enumerate(expected):
            if i not in carried[j]:
                for key, texts in t.provider:
                    if texts and texts <= lib.values:
                        add(f"{key} on the wrong call")
    return findings


def judge(record: Decision, seen: Outcome) -> Verdict:
    """What one library made of one capture, against Toolwire's record of it.

    Raising is wrong only when Toolwire assembles something to run or to show (a library that
    gives up on a response Toolwire withholds or dead-letters runs nothing either); every other
    finding is wrong.
    """
    if seen.raised is not None:
        text = f"raised {seen.raised}"
        return Verdict(text, not withholds(record), (text,))
    values = frozenset(text for _, text in seen.pairs)
    findings = call_findings(expected_calls(record), seen.calls, values)
    if record["outcome"] == "assembled":
        refusal = record["refusal"] or next(
            (c["refusal"] for c in record["choices"] if c["refusal"]), None)
        if refusal and ("refusal", refusal) not in seen.pairs:
            findings.append("refusal as content" if refusal in values else "refusal lost")
        message = provider_error(record)
        needle = (message or (record["error_code"] or "")).lower()
        if message is not None and not any(needle in v.lower() for v in values):
            findings.append("error lost")
    elif record["reason"] == "stream_closed":
        findings.append("no end")
    elif record["reason"] == "malformed_chunk":
        findings.append("malformed accepted")
    return Verdict(", ".join(findings) or "ok", bool(findings), tuple(findings))


def table_2026(corpus: Sequence[Response], apps: Sequence[Application],
               names: Sequence[str] = CAPTURES_2026) -> list[Row]:
    """One pass: Toolwire and each library on each listed capture, and the verdicts."""
    by_name = {r.name: r for r in corpus}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SystemExit(f"ops/bench/libraries.py: not in the corpus: {', '.join(missing)}")
    rows = []
    for name in names:
        response = by_name[name]
        record = assemble(response.body, response.options)
        outcomes = {app.key: run_application(app, response.body) for app in apps}
        rows.append(Row(name, toolwire_cell(record), outcomes,
                        {k: judge(record, o) for k, o in outcomes.items()}))
    return rows


def markdown_table(rows: Sequence[Row]) -> list[str]:
    """The table in Markdown, a wrong verdict in bold."""
    keys = list(TABLE_LABELS)
    lines = ["| capture | Toolwire | " + " | ".join(TABLE_LABELS.values()) + " |",
             "| --- | --- | " + " | ".join("---" for _ in keys) + " |"]
    for row in rows:
        cells = [f"**{v.text}**" if v.wrong else v.text
                 for v in (row.verdicts[k] for k in keys)]
        lines.append(f"| `{row.capture}` | {row.toolwire} | " + " | ".join(cells) + " |")
    return lines


def _kind(finding: str) -> str:
    """A finding without its counts: ``merged 2→1`` → ``merged``, ``dropped 1 call`` →
    ``dropped calls``."""
    return " ".join("calls" if w == "call" else w for w in finding.split()
                    if not w[:1].isdigit())


#: Per library: ``wrong`` (count), ``of``, ``captures`` (the wrong ones), ``kinds`` (counts).
Summary = dict[str, dict[str, object]]


def table_summary(rows: Sequence[Row]) -> Summary:
    """Per library: the captures it gets wrong, and how often each kind of finding occurs."""
    out: Summary = {}
    for key in TABLE_LABELS:
        wrong = [r.capture for r in rows if r.verdicts[key].wrong]
        kinds: dict[str, int] = {}
        for row in rows:
            verdict = row.verdicts[key]
            if verdict.wrong:
                for finding in verdict.findings:
                    kinds[_kind(finding)] = kinds.get(_kind(finding), 0) + 1
        out[key] = {"wrong": len(wrong), "of": len(rows), "captures": wrong,
                    "kinds": dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))}
    return out


# -- timing -------------------------------------------------------------------------------------


def workload(timed: Sequence[Response], events: int) -> list[Response]:
    """Whole responses, cycled in name order, up to the first boundary at or past ``events``."""
    out: list[Response] = []
    count = 0
    for response in itertools.cycle(timed):
        if count >= events:
            break
        out.append(response)
        count += len(response.payloads)
    return out


def time_once(contender: Contender, responses: Sequence[Response],
              warm: Sequence[Response] = ()) -> tuple[int, int]:
    """Wall and CPU nanoseconds of one pass over ``responses``, after an untimed pass on ``warm``.

    The wall clock is the figure; the process CPU time beside it is what the run cost this
    process, without the time it spent descheduled while other work had the cores. The warm
    pass is there because contenders take turns: the first responses after another library ran
    would otherwise pay for caches and allocator arenas that library left cold, a fixed cost per
    run that makes small sizes look slower per event (Toolwire alone in a worker never pays it).
    """
    run = contender.run
    gc.collect()  # before the warm pass: a collection walks the heap and leaves caches cold
    for response in warm:
        run(response)
    cpu = process_time_ns()
    start = perf_counter_ns()
    for response in responses:
        run(response)
    wall = perf_counter_ns() - start
    return wall, process_time_ns() - cpu


def long_stream(found: Probe, corpus: Sequence[Response], events: int) -> Response:
    """One response of ``events`` events: a well-behaved capture with a tool call, its
    argument deltas repeated in the middle (every library concatenates them), its first event
    (the identity) and its last ones (the finish) kept. The goal's "flat from 150 to 9,600
    events" is about one stream growing, which a merge that copies what it has so far fails."""
    base = max((r for r in corpus if r.name in found.well_behaved and r.name not in found.refused
                and b'"arguments"' in r.body and len(r.payloads) >= 4),
               key=lambda r: (len(r.payloads), r.name))  # the longest: the most typical deltas
    head, middle, tail = base.payloads[:1], base.payloads[1:-1], base.payloads[-1:]
    body = [*head, *itertools.islice(itertools.cycle(middle), max(0, events - 2)), *tail]
    raw = b"".join(b"data: " + p + b"\n\n" for p in body) + b"data: [DONE]\n\n"
    return Response(f"{base.name} x{len(body)}", raw, base.options, tuple(body))


def measure_streams(streams: Sequence[Response], contenders: Sequence[Contender],
                    warm: Sequence[Response], repeats: int) -> list[Size]:
    """Each single long stream, each repeat, every contender once (rotated per repeat)."""
    results = []
    for stream in streams:
        runs: dict[str, list[int]] = {c.key: [] for c in contenders}
        cpu: dict[str, list[int]] = {c.key: [] for c in contenders}
        for rep in range(repeats):
            shift = rep % len(contenders)
            for contender in [*contenders[shift:], *contenders[:shift]]:
                wall, used = time_once(contender, [stream], warm)
                runs[contender.key].append(wall)
                cpu[contender.key].append(used)
        results.append(Size(len(stream.payloads), len(stream.payloads), 1, runs, cpu))
    return results


@dataclass(frozen=True, slots=True)
class Size:
    target: int
    events: int
    responses: int
    #: contender → wall-clock nanoseconds of each repeat.
    runs: dict[str, list[int]]
    #: contender → process CPU nanoseconds of each repeat.
    cpu: dict[str, list[int]]

    def best_us(self, key: str) -> float:
        return min(self.runs[key]) / self.events / 1000

    def median_us(self, key: str) -> float:
        return statistics.median(self.runs[key]) / self.events / 1000

    def best_cpu_us(self, key: str) -> float:
        return min(self.cpu[key]) / self.events / 1000


def measure(timed: Sequence[Response], contenders: Sequence[Contender], sizes: Sequence[int],
            repeats: int) -> list[Size]:
    """Each size, each repeat, every contender once, in an order rotated per repeat."""
    warm = workload(timed, WARM_EVENTS)
    results = []
    for target in sizes:
        responses = workload(timed, target)
        events = sum(len(r.payloads) for r in responses)
        runs: dict[str, list[int]] = {c.key: [] for c in contenders}
        cpu: dict[str, list[int]] = {c.key: [] for c in contenders}
        for rep in range(repeats):
            shift = rep % len(contenders)
            for contender in [*contenders[shift:], *contenders[:shift]]:
                wall, used = time_once(contender, responses, warm)
                runs[contender.key].append(wall)
                cpu[contender.key].append(used)
        results.append(Size(target, events, len(responses), runs, cpu))
    return results


# -- report -------------------------------------------------------------------------------------


def _fmt(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def print_table_2026(rows: Sequence[Row], apps: Sequence[Application]) -> Summary:
    """Print the 2026 table (Markdown) and its summary; return the summary."""
    print(f"what each library makes of the {len(rows)} captures added with the Chat "
          "Completions 2026 rules (Markdown; **bold** = wrong: the library hands back what "
          "Toolwire would not run, or loses what it keeps; raising is wrong only where "
          "Toolwire assembles something)")
    print("each library from the raw body through openai-python's client (in-memory "
          "transport), as an application runs it:")
    for app in apps:
        print(f"  {app.key:<10} {app.label}")
    print()
    for line in markdown_table(rows):
        print(line)
    summary = table_summary(rows)
    print()
    for key, s in summary.items():
        kinds = cast(dict[str, int], s["kinds"])
        print(f"  {TABLE_LABELS[key]:<14} wrong on {s['wrong']:>2} of {s['of']}: "
              + ", ".join(f"{kind} {n}" for kind, n in kinds.items()))
    return summary


def report(args: argparse.Namespace, corpus: Sequence[Response], timed: Sequence[Response],
           contenders: Sequence[Contender], found: Probe, sizes: Sequence[Size],
           repeats: int, streams: Sequence[Size], stream_name: str,
           rows: Sequence[Row] = (), apps: Sequence[Application] = ()) -> dict[str, object]:
    """Print the tables and return the BENCH object."""
    keys = [c.key for c in contenders]
    print(f"Toolwire core vs libraries: python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs (shared: other work runs concurrently), "
          f"load average {os.getloadavg()[0]:.2f}, best of {repeats}, perf_counter_ns")
    for contender in contenders:
        print(f"  {contender.key:<13} {contender.label}")
    print(f"streams: {len(timed)} of {len(corpus)} captures, cycled as separate responses; "
          "Toolwire from raw bytes, the libraries from pre-framed payloads (framing untimed)")
    print()
    print("µs per event (best of repeats)")
    head = f"{'events':>7} {'responses':>9} " + " ".join(f"{k:>13}" for k in keys)
    print(head)
    for size in sizes:
        print(f"{size.events:>7} {size.responses:>9} "
              + " ".join(f"{_fmt(size.best_us(k)):>13}" for k in keys))
    print()
    print("ratio to the orjson floor of the same run (and to Toolwire, at the largest size)")
    print(f"{'events':>7} {'':>9} " + " ".join(f"{k:>13}" for k in keys[:-1]))
    for size in sizes:
        floor = size.best_us("orjson_floor")
        print(f"{size.events:>7} {'':>9} "
              + " ".join(f"{_fmt(size.best_us(k) / floor) + 'x':>13}" for k in keys[:-1]))
    last = sizes[-1]
    tw = last.best_us("toolwire")
    print(f"{'vs toolwire':>17} "
          + " ".join(f"{_fmt(last.best_us(k) / tw) + 'x':>13}" for k in keys[:-1]))
    print()
    print("CPU µs per event (process time, best of repeats: without the time spent descheduled)")
    print(head)
    for size in sizes:
        print(f"{size.events:>7} {size.responses:>9} "
              + " ".join(f"{_fmt(size.best_cpu_us(k)):>13}" for k in keys))

    print()
    print(f"one stream growing ({stream_name.rsplit(' ', 1)[0]}, its argument deltas repeated):"
          " µs per event (best of repeats)")
    print(f"{'events':>7} {'':>9} " + " ".join(f"{k:>13}" for k in keys))
    for size in streams:
        print(f"{size.events:>7} {'':>9} "
              + " ".join(f"{_fmt(size.best_us(k)):>13}" for k in keys))
    corpus_us = [s.best_us("toolwire") for s in sizes]
    tw_us = [s.best_us("toolwire") for s in streams]
    tw_max = max(tw_us)
    flatness = max(tw_us) / min(tw_us)
    tw_cpu = [s.best_cpu_us("toolwire") for s in streams]
    print()
    print(f"toolwire, one stream: max {tw_max:.2f} µs/event (goal ≤ {GOAL_US:g}: "
          f"{'met' if tw_max <= GOAL_US else 'NOT met'}), flatness max/min {flatness:.2f} over "
          f"{streams[0].events}..{streams[-1].events} events (goal ≤ {GOAL_FLATNESS:g}: "
          f"{'met' if flatness <= GOAL_FLATNESS else 'NOT met'}); in CPU time: max "
          f"{max(tw_cpu):.2f} µs/event, flatness {max(tw_cpu) / min(tw_cpu):.2f}")
    print(f"toolwire, real captures as separate responses (about "
          f"{sizes[-1].events / sizes[-1].responses:.1f} events each, so the per-response "
          f"decision and record weigh in): max {max(corpus_us):.2f} µs/event")

    # -- agreement
    print()
    print("tool calls vs Toolwire's (agree / DIFFER / refused = raised; well-behaved = Toolwire "
          "repaired nothing and every call has id and name)")
    print(f"{'capture':<48} {'class':<12} " + " ".join(f"{k:<10}" for k in LIBRARIES))
    for response in corpus:
        if response.name in found.empty:
            continue
        verdicts = found.verdicts[response.name]
        cls = "well-behaved" if response.name in found.well_behaved else "quirky"
        cells = [verdicts.get(k, "-") for k in LIBRARIES]
        print(f"{response.name:<48} {cls:<12} "
              + " ".join(f"{c.upper() if c == 'differ' else c:<10}" for c in cells))
    agreement: dict[str, dict[str, int]] = {}
    for lib in LIBRARIES:
        counts = {"agree": 0, "differ": 0, "refused": 0, "agree_well_behaved": 0,
                  "differ_well_behaved": 0, "refused_well_behaved": 0}
        for name, verdicts in found.verdicts.items():
            verdict = verdicts[lib]
            counts[verdict] += 1
            if name in found.well_behaved:
                counts[f"{verdict}_well_behaved"] += 1
        agreement[lib] = counts
    print()
    print(f"{len(found.well_behaved)} well-behaved captures; per library: agree / differ / "
          "refused (well-behaved in brackets)")
    for lib, c in agreement.items():
        print(f"  {lib:<10} {c['agree']:>3} / {c['differ']:>3} / {c['refused']:>3}   "
              f"[{c['agree_well_behaved']} / {c['differ_well_behaved']} / "
              f"{c['refused_well_behaved']}]")
    if found.mismatches:
        print()
        print("differences, toolwire then library (a finding either way: read each one)")
        for m in found.mismatches:
            flag = "WELL-BEHAVED " if m["well_behaved"] else ""
            print(f"  {flag}{m['capture']} [{m['library']}]")
            print(f"    toolwire: {_short(m['toolwire'])}")
            print(f"    {m['library']:<8}: {_short(m['library_calls'])}")
    summary_2026: Summary = {}
    if rows:
        print()
        summary_2026 = print_table_2026(rows, apps)
    print()
    print("excluded from timing (some contender raised; or no event):")
    for name in found.empty:
        print(f"  {name}: no event (only [DONE])")
    for name, by in found.refused.items():
        print(f"  {name}: " + "; ".join(f"{k}: {v}" for k, v in by.items()))

    # -- BENCH object
    figures: list[dict[str, object]] = [
        {"name": "toolwire_us_per_event_max", "value": round(tw_max, 3), "unit": "µs/event",
         "goal": f"<= {GOAL_US:g}", "met": tw_max <= GOAL_US},
        {"name": "toolwire_flatness", "value": round(flatness, 3),
         "unit": f"max/min µs per event, one stream of {streams[0].events}.."
                 f"{streams[-1].events} events",
         "goal": f"<= {GOAL_FLATNESS:g}", "met": flatness <= GOAL_FLATNESS},
        {"name": "toolwire_corpus_us_per_event_max", "value": round(max(corpus_us), 3),
         "unit": f"µs/event, real captures as separate responses (about "
                 f"{sizes[-1].events / sizes[-1].responses:.1f} events each)",
         "goal": None, "met": None},
        {"name": "toolwire_feed_us_per_event_max",
         "value": round(max(s.best_us("toolwire_feed") for s in sizes), 3),
         "unit": "µs/event, feed + end without the decision (diagnostic)",
         "goal": None, "met": None},
        {"name": "toolwire_cpu_us_per_event_max", "value": round(max(tw_cpu), 3),
         "unit": "CPU µs/event, process time (diagnostic: not slowed by descheduling)",
         "goal": None, "met": None},
        {"name": "toolwire_cpu_flatness", "value": round(max(tw_cpu) / min(tw_cpu), 3),
         "unit": "max/min CPU µs per event (diagnostic)", "goal": None, "met": None},
    ]
    longest = streams[-1]
    for key in keys:
        figures.append({"name": f"{key}_us_per_event_one_stream_{longest.events}",
                        "value": round(longest.best_us(key), 3), "unit": "µs/event",
                        "goal": None, "met": None})
        figures.append({"name": f"{key}_stream_flatness",
                        "value": round(max(s.best_us(key) for s in streams)
                                       / min(s.best_us(key) for s in streams), 2),
                        "unit": f"max/min µs per event, {streams[0].events}.."
                                f"{streams[-1].events} events in one stream",
                        "goal": None, "met": None})
    for key in keys:
        figures.append({"name": f"{key}_us_per_event_{last.target}",
                        "value": round(last.best_us(key), 3), "unit": "µs/event",
                        "goal": None, "met": None})
    floor = last.best_us("orjson_floor")
    for key in keys[:-1]:
        figures.append({"name": f"{key}_ratio_to_floor_{last.target}",
                        "value": round(last.best_us(key) / floor, 2), "unit": "x orjson floor",
                        "goal": None, "met": None})
    for lib, c in agreement.items():
        wb = len(found.well_behaved)
        figures.append({
            "name": f"{lib}_agrees_well_behaved", "value": c["agree_well_behaved"],
            "unit": f"of {wb} well-behaved captures ({c['differ_well_behaved']} differ, "
                    f"{c['refused_well_behaved']} refused)",
            "goal": "no well-behaved capture differs", "met": c["differ_well_behaved"] == 0})
        figures.append({"name": f"{lib}_agrees_all", "value": c["agree"],
                        "unit": f"of {len(found.verdicts)} captures ({c['differ']} differ, "
                                f"{c['refused']} refused)", "goal": None, "met": None})
    for lib, c2026 in summary_2026.items():
        figures.append({"name": f"{lib}_wrong_2026", "value": c2026["wrong"],
                        "unit": f"of {c2026['of']} captures of the 2026 rules (run as an "
                                "application runs the library)", "goal": None, "met": None})
    figures.append({"name": "timed_captures", "value": len(timed), "unit": "captures",
                    "goal": None, "met": None})
    notes: dict[str, object] = {
        "machine": f"{os.cpu_count()} CPUs shared with concurrent work; load average "
                   f"{os.getloadavg()[0]:.2f}",
        "python": platform.python_version(),
        "contenders": {c.key: c.label for c in contenders},
        "method": "best of repeats (median in medians); perf_counter_ns around whole "
                  "workloads; warm-up pass first; gc enabled, collected before each run, "
                  "import-time heap frozen; contenders interleaved per repeat",
        "framing": "toolwire from raw body bytes (framing+parsing timed); libraries from "
                   "pre-framed payloads (orjson + their chunk construction + merge timed)",
        "short": bool(args.short),
        "sizes": [{"target": s.target, "events": s.events, "responses": s.responses}
                  for s in sizes],
        "load_average_end": round(os.getloadavg()[0], 2),
        "best_cpu_us_per_event": {str(s.events): {k: round(s.best_cpu_us(k), 3) for k in keys}
                                  for s in sizes},
        "medians_us_per_event": {str(s.events): {k: round(s.median_us(k), 3) for k in keys}
                                 for s in sizes},
        "excluded": {**{n: "no event" for n in found.empty},
                     **{n: "; ".join(f"{k}: {v}" for k, v in by.items())
                        for n, by in found.refused.items()}},
        "mismatches": [f"{m['capture']} [{m['library']}]"
                       + (" (well-behaved)" if m["well_behaved"] else "")
                       for m in found.mismatches],
        "agreement": agreement,
        "wrong_2026": {lib: c2026["captures"] for lib, c2026 in summary_2026.items()},
    }
    if args.json:
        notes["runs_ns"] = {str(s.events): s.runs for s in sizes}
        notes["cpu_ns"] = {str(s.events): s.cpu for s in sizes}
        notes["best_us_per_event"] = {str(s.events): {k: round(s.best_us(k), 3) for k in keys}
                                      for s in sizes}
        notes["verdicts"] = found.verdicts
        notes["mismatch_details"] = found.mismatches
        notes["applications_2026"] = {app.key: app.label for app in apps}
        notes["table_2026"] = {
            row.capture: {"toolwire": row.toolwire,
                          **{k: {"verdict": v.text, "wrong": v.wrong,
                                 **({"raised": row.outcomes[k].detail}
                                    if row.outcomes[k].raised else {})}
                             for k, v in row.verdicts.items()}}
            for row in rows}
        notes["summary_2026"] = summary_2026
    return {"section": "libraries", "figures": figures, "notes": notes}


def _short(calls: object, width: int = 160) -> str:
    text = repr(calls)
    return text if len(text) <= width else text[:width - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="The last line of stdout is BENCH followed by one JSON object.")
    parser.add_argument("--short", action="store_true",
                        help=f"sizes {SHORT_SIZES}, best of {SHORT_REPEATS} (a quick check)")
    parser.add_argument("--json", action="store_true",
                        help="every timing and verdict in the notes of the BENCH line")
    args = parser.parse_args(argv)
    sizes = SHORT_SIZES if args.short else SIZES
    repeats = SHORT_REPEATS if args.short else REPEATS

    corpus = load_corpus()
    contenders = load_contenders()
    gc.collect()
    gc.freeze()
    found = probe(corpus, contenders)
    timed = [r for r in corpus if r.payloads and r.name not in found.refused]
    if not timed:
        raise SystemExit("ops/bench/libraries.py: no capture is ingested by every contender")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for contender in contenders:  # warm-up: one untimed pass over the timed corpus each
            time_once(contender, timed)
        gc.collect()
        gc.freeze()  # and what the libraries built lazily on first use (caches, validators)
        results = measure(timed, contenders, sizes, repeats)
        streams = [long_stream(found, corpus, n) for n in sizes]
        grown = measure_streams(streams, contenders, workload(timed, WARM_EVENTS), repeats)
    # After the timing: one pass, and LiteLLM's client path starts threads of its own.
    apps = load_applications()
    rows = table_2026(corpus, apps)
    bench = report(args, corpus, timed, contenders, found, results, repeats, grown,
                   streams[0].name, rows, apps)
    sys.stdout.flush()
    print("BENCH " + json.dumps(bench, ensure_ascii=False, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
