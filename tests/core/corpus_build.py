"""What the corpus generators share: the capture, the expected record's pieces, the writer.

Every corpus (``tests/core/corpus_wires/<wire>``, the folder named by the wire's registry name:
``openai-chat`` for Chat Completions) is written by its own ``_make.py``: the bodies and the
expectations are that wire's data.  What is not data is the same for every wire (a capture and
its ``NAME.json``, an expected call, the checks that an expectation says what every capture
must say, the files written and the README's table), so it lives here once: a rule that
changes for the record (a key of every call, a check of every dead letter) changes for every
corpus at once, and a generator cannot drift from the others by a copy left behind.

Nothing here computes an expected value from a body: the builders only lay out, in the
record's key order, the values a generator writes out by hand.

An expectation states every key of its record (``tests/core/corpus_properties.mismatches``
fails a key the record has and the expectation leaves out), but for the keys of
:data:`OMITTED`, the one allow-list, each with why; a capture that must leave out one more key
says which and why in its own ``unstated`` (``NAME.json``'s ``"unstated"``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

#: Compact JSON separators, as most servers (and the record's arguments) write it.
COMPACT = (",", ":")

#: The finishes of the neutral record (issue 13), on every wire but Chat Completions' corpus.
FINISHES = ("stop", "tool_calls", "length", "content_filter", "error", "other")
#: What every assembled expectation of a named wire must state.
ASSEMBLED_KEYS = (
    "wire",
    "finish",
    "finish_reason",
    "truncated",
    "error_code",
    "retryable",
    "content",
    "tool_calls",
    "withheld_tool_calls",
)
#: What every dead-letter expectation must state: why, and the calls as far as assembled.
DEAD_LETTER_KEYS = ("reason", "calls")
#: The keys of every call object (provider_fields and id_synthesized only when they apply).
CALL_KEYS = ("choice", "index", "id", "name", "type", "arguments", "arguments_json")
#: The lists of client calls of an assembled record, and what each call in them states.
CLIENT_CALLS = {"tool_calls": CALL_KEYS, "withheld_tool_calls": CALL_KEYS}
#: The keys of a record that no expectation states, each with why: the one allow-list of every
#: corpus (a capture's own ``unstated`` adds a key for that capture only, with its reason).
OMITTED = {
    "request_id": "provenance, not the body: the worker's, from the input message's headers; "
                  "a capture is assembled without one, so it is always null here",
    "session_id": "provenance, not the body: the worker's, from the input message's headers; "
                  "a capture is assembled without one, so it is always null here",
    "provider": "provenance, not the body: the worker's, from the input message's headers; "
                "a capture is assembled without one, so it is always null here",
}


# --------------------------------------------------------------------------------------------
# The capture
# --------------------------------------------------------------------------------------------


@dataclass
class Capture:
    """One corpus entry: the body to feed the assembler and what the record must contain.

    Every generator subclasses it to set ``wire``, so that ``NAME.json`` names the wire its
    body is to be read as (and every corpus is found and read the same way).
    """

    wire: ClassVar[str | None] = None

    description: str
    source: str
    shape: str
    proves: str
    body: bytes
    expect: dict[str, Any]
    declared_tools: list[str] | None = None
    strict: bool = False
    synthesize_ids: bool = False
    #: The provider is one that never sends its wire's end (written only when set).
    end_without_done: bool = False
    #: Keys of the record this expectation leaves out beyond :data:`OMITTED`, each with why
    #: (written only when set).
    unstated: dict[str, str] = field(default_factory=dict)
    name: str = ""

    def expectation(self) -> dict[str, Any]:
        """``NAME.json``: keys in the order the files on disk have always had them."""
        options: dict[str, Any] = {} if self.wire is None else {"wire": self.wire}
        options.update(
            declared_tools=self.declared_tools,
            strict=self.strict,
            synthesize_ids=self.synthesize_ids,
        )
        if self.end_without_done:
            options["end_without_done"] = True
        expectation = {
            "description": self.description,
            "source": self.source,
            "options": options,
            "expect": self.expect,
        }
        if self.unstated:
            expectation["unstated"] = self.unstated
        return expectation


#: The ``unstated`` of a capture whose dead letter's detail quotes the JSON parser: its words
#: are orjson's (a release may reword them), not a rule of the wire; the reason says it all.
PARSER_DETAIL = {"detail": "it quotes the JSON parser's own message, orjson's words (which a "
                           "release may change), not the wire's rules: the reason says it"}


#: What every corpus's README says of the keys its expectations state (after the keys its
#: generator requires, when it lists them).
EVERY_KEY = """\
Beyond what its generator requires, every expectation states every key of its record, each
with the value the record holds (`mismatches` in `tests/core/corpus_properties.py` fails a key
the record has and the expectation leaves out), but `request_id`, `session_id` and `provider`:
provenance, which the worker takes from the input message's headers, never from the body (the
one allow-list, `OMITTED` in `tests/core/corpus_build.py`). A capture that must leave out one
more key says which and why in its `NAME.json` (`"unstated"`): a dead letter whose `detail`
quotes the JSON parser's own message. The keys first stated this way (such as `chunks`,
`bytes`, `repairs`, `frames_after_end`, `finish_reasons`, `choices`, `refusal` and
`server_tool_calls`, where a capture left them out) hold the values the record held when they
were added, checked by reading, not worked out from the rules.

"""


def dumps(payload: Any, separators: tuple[str, str] = COMPACT, *, ascii_only: bool = False) -> str:
    """JSON as the servers send it: non-ASCII kept raw unless ``ascii_only`` (a body's bytes
    are the capture, so the separators are the server's, compact unless it spaces them)."""
    return json.dumps(payload, ensure_ascii=ascii_only, separators=separators)


# --------------------------------------------------------------------------------------------
# The expected record
# --------------------------------------------------------------------------------------------


def call(
    choice_index: int,
    index: int,
    call_id: str | None,
    name: str | None,
    arguments: str,
    arguments_json: bool = True,
    *,
    type_: str = "function",
    provider_fields: dict[str, Any] | None = None,
    id_synthesized: bool = False,
) -> dict[str, Any]:
    """An expected call object of the record.

    ``provider_fields`` and ``id_synthesized`` are record keys only when they apply (a call
    that carried provider fields; a call whose id was synthesized), so they are left out
    otherwise rather than written as null.
    """
    entry: dict[str, Any] = {
        "choice": choice_index,
        "index": index,
        "id": call_id,
        "name": name,
        "type": type_,
        "arguments": arguments,
        "arguments_json": arguments_json,
    }
    if provider_fields is not None:
        entry["provider_fields"] = provider_fields
    if id_synthesized:
        entry["id_synthesized"] = True
    return entry


def server_call(
    index: int, type_: str, call_id: str | None, name: str | None, arguments: str,
    status: str | None,
) -> dict[str, Any]:
    """An expected entry of ``server_tool_calls``: the one shape of every wire, arguments
    always a string (provider-run calls are informational, so they keep no call-object keys)."""
    return {"index": index, "type": type_, "id": call_id, "name": name, "arguments": arguments,
            "status": status}


#: The record's repair counters, in its order (``toolwire.core.identity.Repair``, written out).
REPAIR_KEYS = (
    "empty_identity_ignored",
    "null_identity_ignored",
    "non_string_identity_ignored",
    "identity_repeated",
    "identity_conflicts",
    "index_fallbacks",
    "index_reuse_splits",
    "ids_synthesized",
    "ended_without_done",
)


def repairs(**counts: int) -> dict[str, int]:
    """The record's whole ``repairs``: every counter, the named ones set, the rest zero."""
    unknown = set(counts) - set(REPAIR_KEYS)
    if unknown:
        raise ValueError(f"unknown repair keys: {sorted(unknown)}")
    return {key: counts.get(key, 0) for key in REPAIR_KEYS}


def missing(entry: dict[str, Any], *fields: str) -> dict[str, Any]:
    """An expected call object of a dead letter (``missing`` names the absent identity)."""
    return {**entry, "missing": list(fields)}


def synthesized_id(seed: str, choice_index: int, index: int) -> str:
    """The id the spec (§4) gives a call that ends without one, written out from its formula
    (the one value a generator computes: a sha256 cannot be worked out by hand)."""
    text = f"toolwire/call-id/{seed}/{choice_index}/{index}"
    return "call_tw_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def assembled(
    wire: str | None = None,
    *,
    finish: str | None = None,
    finish_reason: str | None,
    tool_calls: list[dict[str, Any]] | None = None,
    withheld: list[dict[str, Any]] | None = None,
    content: str | None = None,
    truncated: bool = False,
    error_code: str | None = None,
    retryable: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """The mandatory keys of an assembled record, plus any extra keys to check (in the order
    given: the files keep the order their generator wrote them in).

    A named wire's record states its wire and its finish.  The Chat Completions corpus
    (``wire`` None) was written before either existed: its records name neither, and state
    ``content`` after the calls, as its files always have.
    """
    flags = {
        "finish_reason": finish_reason,
        "truncated": truncated,
        "error_code": error_code,
        "retryable": retryable,
    }
    calls = {"tool_calls": tool_calls or [], "withheld_tool_calls": withheld or []}
    if wire is None:
        return {"outcome": "assembled", **flags, **calls, "content": content, **extra}
    return {"outcome": "assembled", "wire": wire, "finish": finish, **flags, "content": content,
            **calls, **extra}


def dead_letter(wire: str | None, reason: str, calls: list[dict[str, Any]], **extra: Any
                ) -> dict[str, Any]:
    """A dead letter: why, and the calls as far as assembled; a named wire's names its wire
    (every record of one does, dead letters included)."""
    named = {} if wire is None else {"wire": wire}
    return {"outcome": "dead_letter", **named, "reason": reason, "calls": calls, **extra}


# --------------------------------------------------------------------------------------------
# What every expectation must say
# --------------------------------------------------------------------------------------------


def call_lists(expect: Mapping[str, Any], keys: Iterable[str]
               ) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Every call object under ``keys`` with where it stands, for checks a wire adds (a list
    that is not one is reported by :func:`unstated`, so it is skipped here)."""
    for key in keys:
        entries = expect.get(key, [])
        if isinstance(entries, list):
            for n, entry in enumerate(entries):
                yield key, n, entry


def unstated(
    expect: Mapping[str, Any],
    *,
    assembled_keys: tuple[str, ...] = ASSEMBLED_KEYS,
    assembled_lists: Mapping[str, tuple[str, ...]] = CLIENT_CALLS,
    ordinals: tuple[str, ...] = (),
    absent: Callable[[Any], bool] = lambda value: value is None,
) -> list[str]:
    """What an expectation leaves unsaid that every capture of a corpus must say, or says
    against the record's rules (empty: nothing).

    The keys of its outcome; each call whole; an executable call never without its id or
    name; a dead letter's ``missing`` naming exactly the identity fields that are ``absent``.
    ``ordinals`` are the lists whose calls must stand in index order.  A check worked out by
    hand can be wrong; these make a generator refuse to write a capture that proves little.
    """
    outcome = expect.get("outcome")
    lists: Mapping[str, tuple[str, ...]]
    if outcome == "assembled":
        lacking = [key for key in assembled_keys if key not in expect]
        lists = assembled_lists
    elif outcome == "dead_letter":
        lacking = [key for key in DEAD_LETTER_KEYS if key not in expect]
        lists = {"calls": (*CALL_KEYS, "missing")}
    else:
        return [f"outcome {outcome!r}"]
    lacking += [f"{key} (not a list)" for key in lists
                if not isinstance(expect.get(key, []), list)]
    for key, n, entry in call_lists(expect, lists):
        need = lists[key]
        lacking += [f"{key}[{n}].{field}" for field in need if field not in entry]
        if key in ordinals and entry.get("index") != n:
            lacking.append(f"{key}[{n}].index (calls are listed in index order)")
        if key == "tool_calls" and not (entry.get("id") and entry.get("name")):
            lacking.append(f"{key}[{n}] (an executable call without its id or name)")
        if "missing" in need and "missing" in entry:
            nulls = [field for field in ("id", "name") if absent(entry.get(field))]
            if entry["missing"] != nulls:
                lacking.append(f"{key}[{n}].missing (should name {nulls})")
    return lacking


def unfinished(expect: Mapping[str, Any]) -> list[str]:
    """What an assembled expectation of a named wire says against the neutral finish: one of
    :data:`FINISHES`, and ``truncated`` exactly when it is ``length`` (a dead letter has no
    finish to check)."""
    if expect.get("outcome") != "assembled":
        return []
    finish = expect.get("finish")
    lacking = [] if finish in FINISHES else [f"finish {finish!r} (not one of {FINISHES})"]
    if expect.get("truncated") != (finish == "length"):
        lacking.append("truncated (true exactly when finish is length)")
    return lacking


# --------------------------------------------------------------------------------------------
# The cases and the files
# --------------------------------------------------------------------------------------------


#: The capture type of one generator (its own subclass, naming its wire).
C = TypeVar("C", bound=Capture)


class Cases(Generic[C]):
    """The capture functions of one generator, in the order they are written: that order is
    the README's, and each function's name is its capture's file name."""

    def __init__(self) -> None:
        self.functions: list[Callable[[], C]] = []

    def add(self, fn: Callable[[], C]) -> Callable[[], C]:
        """The ``@case`` decorator: a capture is in the corpus by being written, never listed."""
        self.functions.append(fn)
        return fn

    def build(self, incomplete: Callable[[C], list[str]], rules: str) -> list[C]:
        """Every capture, named; refused all at once (each with what it lacks) when any
        expectation leaves out what its corpus requires, ``rules`` being where to work the
        values out from."""
        captures = []
        for fn in self.functions:
            capture = fn()
            capture.name = fn.__name__
            captures.append(capture)
        names = [c.name for c in captures]
        if len(set(names)) != len(names):
            raise ValueError("duplicate capture names")
        refused = {c.name: lacking for c in captures if (lacking := incomplete(c))}
        if refused:
            raise ValueError(
                f"expectations that leave out what every capture must state ({rules}): "
                + "; ".join(f"{name}: {', '.join(lacking)}" for name, lacking in refused.items())
            )
        return captures


def capture_table(captures: Sequence[Capture]) -> list[str]:
    """The README's table of the captures, one row each (lines, without line ends)."""
    return [
        "| name | provider shape | what it proves |",
        "| --- | --- | --- |",
        *(f"| `{c.name}` | {c.shape} | {c.proves} |" for c in captures),
    ]


def write_corpus(folder: Path, captures: Sequence[Capture], readme: str,
                 suffix: str = ".sse") -> None:
    """Write ``NAME.sse`` (or ``NAME`` + ``suffix``: ``.ndjson`` for a wire framed so)
    byte-exact and ``NAME.json`` for every capture, and the README; delete the files of
    captures no longer generated, so that the folder is the generator's."""
    keep = {f"{c.name}{ext}" for c in captures for ext in (suffix, ".json")}
    for stale in [*folder.glob(f"*{suffix}"), *folder.glob("*.json")]:
        if stale.name not in keep:
            stale.unlink()
    for c in captures:
        (folder / f"{c.name}{suffix}").write_bytes(c.body)
        text = json.dumps(c.expectation(), ensure_ascii=False, indent=2) + "\n"
        (folder / f"{c.name}.json").write_text(text, encoding="utf-8")
    (folder / "README.md").write_text(readme, encoding="utf-8")
    print(f"wrote {len(captures)} captures to {folder}")
