"""``toolwire demo`` end to end on the real broker, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.broker


def test_demo_prints_the_table_and_leaves_no_process(kafka_bootstrap: str,
                                                     tmp_path: Path) -> None:
    name = "demo" + uuid.uuid4().hex[:6]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update({"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "TOOLWIRE_APP_ID": name,
                "TOOLWIRE_TOPIC_CHUNKS": f"{name}.chunks",
                "TOOLWIRE_TOPIC_ASSEMBLED": f"{name}.assembled",
                "TOOLWIRE_TOPIC_DEADLETTER": f"{name}.deadletter",
                "TOOLWIRE_STATE_DIR": str(tmp_path)})
    done = subprocess.run([sys.executable, "-m", "toolwire.cli", "demo", "--timeout", "120"],
                          env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[2:]}
    assert set(rows) == {"01_normal_call", "02_parallel_calls", "03_empty_string_continuations",
                         "04_null_continuations", "05_identity_never_sent", "06_truncated_call",
                         "07_text_answer", "08_anthropic_parallel_calls",
                         "09_responses_parallel_calls", "10_gemini_same_name_calls",
                         "11_ollama_parallel_calls", "12_bedrock_converse_calls",
                         "13_bedrock_invoke_call"}
    assert "get_weather call_00_" in rows["01_normal_call"]
    assert "empty identity ignored" in rows["03_empty_string_continuations"]
    assert "null identity ignored" in rows["04_null_continuations"]
    assert "deadletter" in rows["05_identity_never_sent"]
    assert "missing_identity" in rows["05_identity_never_sent"]
    assert "truncated" in rows["06_truncated_call"]
    assert "Hello" in rows["07_text_answer"]
    # One sample per wire, published with the wire header its first event tells.
    assert " anthropic-messages " in rows["08_anthropic_parallel_calls"]
    assert "get_weather toolu_01UGVzZ6RSYOuRBkdCQ3uBP3" in rows["08_anthropic_parallel_calls"]
    assert "get_local_time toolu_01q32GjCIhvIpHsrI8GVQnbK" in rows["08_anthropic_parallel_calls"]
    assert " openai-responses " in rows["09_responses_parallel_calls"]
    assert "get_weather call_Zt3cN6wP9kV2xM5qR8sJ1bFg" in rows["09_responses_parallel_calls"]
    assert " gemini " in rows["10_gemini_same_name_calls"]
    assert ("search_docs call_7719040, search_docs call_7719041"
            in rows["10_gemini_same_name_calls"])  # two calls, never merged
    assert " ollama-chat " in rows["11_ollama_parallel_calls"]
    assert " bedrock-converse " in rows["12_bedrock_converse_calls"]
    assert ("get_weather tooluse_kZJMlvQmRJ6eAyJE5GIl7Q, get_weather tooluse_Bq0xSmEhT1uW7y3oNc5r9A"
            in rows["12_bedrock_converse_calls"])
    assert " bedrock-invoke " in rows["13_bedrock_invoke_call"]
    assert "get_weather toolu_bdrk_01Xy8TqW3mN6pL2vR9sK4jHc" in rows["13_bedrock_invoke_call"]
    assert all(" openai-chat " in rows[f"0{n}_" + name] for n, name in (
        (1, "normal_call"), (7, "text_answer")))
    pid = int(done.stderr.split("worker started (pid ")[1].split(",")[0])
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text(
    ).lower(), "the demo left its worker running"
    assert "stopping the broker" not in done.stderr  # a configured broker is never stopped
