"""``ops/bench/libraries.py --short --json`` still runs and still says what the harness reads.

The benchmark is a script a harness calls, so it is run the way the harness runs it (a
subprocess, its last stdout line parsed) rather than imported: what must not break is the
interface, and a library upgrade that changes a public API must fail here, not in a report.
The figures themselves are not judged (a shared CI machine cannot hold a µs goal); only that
they exist, are measured, and that every library was compared with Toolwire and agreed somewhere.

The table of what each library makes of the captures of the 2026 rules is also checked on the
script imported: that it covers every listed capture, and that its verdicts follow from the
outputs (see the section at the end).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.core.captures import CAPTURES, CORPUS
from toolwire.core import assemble

SCRIPT = Path(__file__).resolve().parents[1] / "ops" / "bench" / "libraries.py"
LIBRARIES = ("openai", "litellm", "langchain")


def test_short_json_run_prints_a_bench_line() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--short", "--json"],
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) > 1, "a human-readable table comes before the BENCH line"
    assert lines[-1].startswith("BENCH "), lines[-1][:200]
    bench: dict[str, Any] = json.loads(lines[-1][len("BENCH "):])
    assert bench["section"] == "libraries"
    assert isinstance(bench["notes"], dict)
    figures = {f["name"]: f for f in bench["figures"]}
    for figure in bench["figures"]:
        assert set(figure) == {"name", "value", "unit", "goal", "met"}, figure

    for name in ("toolwire_us_per_event_max", "toolwire_flatness"):
        figure = figures[name]
        assert isinstance(figure["value"], int | float) and figure["value"] > 0, figure
        assert figure["goal"] and isinstance(figure["met"], bool), figure
    largest = bench["notes"]["sizes"][-1]["target"]
    for key in ("toolwire", *LIBRARIES, "orjson_floor"):
        value = figures[f"{key}_us_per_event_{largest}"]["value"]
        assert isinstance(value, int | float) and value > 0, key

    for library in LIBRARIES:  # each library ran and matched Toolwire's calls somewhere
        agreed = figures[f"{library}_agrees_all"]["value"]
        assert isinstance(agreed, int) and agreed >= 1, (library, figures[f"{library}_agrees_all"])
        assert bench["notes"]["agreement"][library]["agree"] == agreed
        well = figures[f"{library}_agrees_well_behaved"]
        assert isinstance(well["value"], int) and well["value"] >= 1, well
        assert isinstance(well["met"], bool), well
    assert figures["timed_captures"]["value"] >= 1
    # One stream growing: every contender timed on it, Toolwire's flatness reported.
    streamed = [n for n in figures if n.startswith("toolwire_us_per_event_one_stream_")]
    assert len(streamed) == 1 and figures[streamed[0]]["value"] > 0
    assert figures["langchain_stream_flatness"]["value"] > 0
    # What each library makes of the captures of the 2026 rules: one row each, every verdict.
    table = bench["notes"]["table_2026"]
    assert list(table) == list(_bench().CAPTURES_2026)
    for capture, row in table.items():
        assert row["toolwire"], capture
        for library in LIBRARIES:
            assert row[library]["verdict"] and isinstance(row[library]["wrong"], bool), capture
    for library in LIBRARIES:
        wrong = figures[f"{library}_wrong_2026"]["value"]
        assert isinstance(wrong, int) and 0 <= wrong <= len(table)
        assert wrong == sum(row[library]["wrong"] for row in table.values())
        assert bench["notes"]["wrong_2026"][library] == [
            c for c, row in table.items() if row[library]["wrong"]]


# -- the 2026 table ------------------------------------------------------------------------------
#
# The script is imported for these (the table is one cheap pass; the timing is not run). The
# verdict logic is tested on the outputs each library actually produced and on outputs made up
# here, so that a library upgrade that changes behaviour changes a verdict, not a test; only
# ``test_verdicts_observed_with_the_installed_versions`` pins behaviour, to the versions it saw.


@cache
def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_libraries", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def _records() -> dict[str, Any]:
    bench = _bench()
    return {r.name: assemble(r.body, r.options) for r in bench.load_corpus()}


@pytest.fixture(scope="module")
def rows() -> dict[str, Any]:
    bench = _bench()
    return {row.capture: row for row in bench.table_2026(bench.load_corpus(),
                                                          bench.load_applications())}


def _verdict(capture: str, *calls: tuple[str, str, str], pairs: Sequence[tuple[str, str]] = (),
             values: Sequence[frozenset[str]] = (), raised: str | None = None) -> Any:
    """The verdict on a made-up library output: calls of (id, name, arguments)."""
    bench = _bench()
    made = tuple(bench.Call(i, n, "", a, values[k] if k < len(values) else frozenset({i, n, a}))
                 for k, (i, n, a) in enumerate(calls))
    return bench.judge(_records()[capture], bench.Outcome(raised, made, frozenset(pairs)))


def test_listed_captures_are_the_corpus_s() -> None:
    names = _bench().CAPTURES_2026
    assert len(names) == len(set(names)) == 32
    corpus = {c.name for c in CAPTURES}
    assert [n for n in names if n not in corpus] == []
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert [n for n in names if f"| `{n}` |" not in readme] == []


def test_table_covers_every_listed_capture(rows: dict[str, Any]) -> None:
    bench = _bench()
    assert list(rows) == list(bench.CAPTURES_2026)
    lines = bench.markdown_table(list(rows.values()))
    assert len(lines) == 2 + len(rows)
    assert all(line.count(" | ") == 4 for line in lines), lines
    for capture, row in rows.items():
        record = _records()[capture]
        assert row.toolwire == bench.toolwire_cell(record)
        assert set(row.verdicts) == set(LIBRARIES)
        for library, verdict in row.verdicts.items():
            seen = row.outcomes[library]
            assert verdict == bench.judge(record, seen), (capture, library)
            if seen.raised is not None:  # wrong only where Toolwire assembles something
                assert verdict.text == f"raised {seen.raised}"
                assert verdict.wrong == (record["outcome"] == "assembled"
                                         and not record["error_code"]
                                         and not record["truncated"])
            else:
                assert verdict.wrong == (verdict.text != "ok"), (capture, library)


def test_same_name_split_is_two_calls_and_a_fused_one_is_reported(rows: dict[str, Any]) -> None:
    capture = "litellm_ollama_chat_same_name_split"
    record = _records()[capture]
    assert record["outcome"] == "assembled"
    assert [(c["id"], c["name"]) for c in record["tool_calls"]] == [
        ("call_1", "get_weather"), ("call_2", "get_weather")]
    for library, seen in rows[capture].outcomes.items():
        verdict = rows[capture].verdicts[library]
        if seen.raised is not None:
            continue
        if len(seen.calls) == 1:  # whatever the library did with the two, one is a merge
            assert "merged 2→1" in verdict.findings, (library, verdict)
        if [(c.id, c.name, c.arguments) for c in seen.calls] == [
                (c["id"], c["name"], c["arguments"]) for c in record["tool_calls"]]:
            assert verdict.text == "ok", (library, verdict)


def test_a_provider_field_a_library_drops_is_reported(rows: dict[str, Any]) -> None:
    capture = "gemini3_thought_signature_first_call"
    first, second = _records()[capture]["tool_calls"]
    fields = first["provider_fields"]
    signature = fields["extra_content"]["google"]["thought_signature"]  # type: ignore[index]
    assert "provider_fields" not in second
    for library, seen in rows[capture].outcomes.items():
        verdict = rows[capture].verdicts[library]
        if seen.raised is not None:
            continue
        holding = [c for c in seen.calls if first["arguments"] in c.arguments]
        assert holding, (library, seen.calls)  # the Paris call is somewhere
        kept = any(signature in c.values for c in holding)
        elsewhere = signature in {text for _, text in seen.pairs}
        if not kept:
            assert ("extra_content off the call" if elsewhere else "dropped extra_content") \
                in verdict.findings, (library, verdict)
            assert verdict.wrong
        else:
            assert not any("extra_content" in f for f in verdict.findings), (library, verdict)


def test_verdict_logic_on_made_up_outputs() -> None:
    same_name = "litellm_ollama_chat_same_name_split"
    paris, rome = '{"city":"Paris"}', '{"city":"Rome"}'
    ok = _verdict(same_name, ("call_1", "get_weather", paris), ("call_2", "get_weather", rome))
    assert (ok.text, ok.wrong) == ("ok", False)
    fused = _verdict(same_name, ("call_1call_2", "get_weatherget_weather", paris + rome))
    assert fused.findings == ("merged 2→1", "ids joined", "name doubled") and fused.wrong
    assert _verdict(same_name, ("call_2", "get_weather", paris + rome)).text == "merged 2→1"
    assert _verdict(same_name, ("call_1", "get_weather", paris)).text == "dropped 1 call"
    assert _verdict(same_name, ("", "get_weather", paris), ("call_2", "", rome)).findings == (
        "empty id", "empty name")
    # One call whose arguments arrive under two ids: split by a library that keys on the id.
    split = _verdict("new_id_mid_arguments_conflict", ("call_k1_Pq4Ws8", "search_docs",
                                                       '{"query": '),
                     ("call_k2_Lm7Xv3", "search_docs", '"refund policy"}'))
    assert split.text == "split 1→2"
    xlam = _records()["vllm_xlam_duplicated_arguments_same_id"]["tool_calls"][0]
    assert _verdict("vllm_xlam_duplicated_arguments_same_id",
                    (xlam["id"] * 2, xlam["name"], xlam["arguments"])).text == "id doubled"
    # Custom calls: the input or the name missing is a dropped custom call; all there is ok.
    patch = _records()["gpt5_custom_tool_apply_patch"]["tool_calls"][0]
    assert _verdict("gpt5_custom_tool_apply_patch", (patch["id"], "", "")).text == \
        "dropped custom"
    assert _verdict("gpt5_custom_tool_apply_patch",
                    (patch["id"], "apply_patch", patch["arguments"])).text == "ok"
    # Provider fields: found on the call (under any key), elsewhere, on the wrong call, nowhere.
    gemini = "gemini3_thought_signature_first_call"
    g1, g2 = _records()[gemini]["tool_calls"]
    signature = g1["provider_fields"]["extra_content"]["google"][  # type: ignore[index]
        "thought_signature"]
    both = ((g1["id"], g1["name"], g1["arguments"]), (g2["id"], g2["name"], g2["arguments"]))
    assert _verdict(gemini, *both).text == "dropped extra_content"
    assert _verdict(gemini, *both, values=[frozenset({signature}), frozenset()]).text == "ok"
    assert _verdict(gemini, *both, values=[frozenset(), frozenset({signature})]).findings == (
        "dropped extra_content", "extra_content on the wrong call")
    assert _verdict(gemini, *both, pairs=[("thought_signature", signature)]).text == \
        "extra_content off the call"
    # Ids Toolwire synthesizes are not on the wire: a library's calls without one are flagged.
    no_id = "ollama_v1_no_id_synthesized"
    n1, n2 = _records()[no_id]["tool_calls"]
    assert n1.get("id_synthesized") and n2.get("id_synthesized")
    assert _verdict(no_id, ("", n1["name"], n1["arguments"]),
                    ("", n2["name"], n2["arguments"])).text == "empty id"
    assert _verdict(no_id).text == "dropped 2 calls"


def test_response_level_verdicts_on_made_up_outputs() -> None:
    refusal = _records()["openai_structured_output_refusal"]["refusal"]
    assert refusal
    assert _verdict("openai_structured_output_refusal",
                    pairs=[("refusal", refusal)]).text == "ok"
    assert _verdict("openai_structured_output_refusal", pairs=[("content", refusal)]).text == \
        "refusal as content"
    assert _verdict("openai_structured_output_refusal").text == "refusal lost"
    groq = _records()["groq_error_event_tool_use_failed"]
    held = groq["withheld_tool_calls"][0]
    call = (held["id"], held["name"], held["arguments"])
    lost = _verdict("groq_error_event_tool_use_failed", call)
    assert (lost.text, lost.wrong) == ("error lost", True)
    assert _verdict("groq_error_event_tool_use_failed", call,
                    pairs=[("message", groq["error_message"])]).text == "ok"
    raised = _verdict("groq_error_event_tool_use_failed", raised="APIError")
    assert (raised.text, raised.wrong) == ("raised APIError", False)  # the error is surfaced
    assert _verdict("perplexity_cut_before_done").text == "no end"
    assert not _verdict("perplexity_cut_before_done", raised="APIConnectionError").wrong
    assert _verdict("custom_not_an_object").text == "malformed accepted"
    # Raising on a response Toolwire assembles loses it: wrong.
    assert _verdict("perplexity_done_chunk_then_trailing", raised="JSONDecodeError").wrong
    assert _verdict("perplexity_done_chunk_then_trailing").text == "ok"


