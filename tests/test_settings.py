"""Settings from the environment and an optional file: precedence, typos, clear errors."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest

from toolwire.config.logs import JsonLines, logging_config
from toolwire.config.settings import Settings, known_variables


def test_the_file_is_read_under_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "toolwire.env"
    file.write_text("# deployment\nTOOLWIRE_PARTITIONS=12\nexport TOOLWIRE_APP_ID='prod'\n\n"
                    'TOOLWIRE_STREAM_TTL="120"\nKAFKA_BOOTSTRAP_SERVERS=k1:9092\n')
    settings = Settings.from_env({"TOOLWIRE_SETTINGS_FILE": str(file),
                                  "TOOLWIRE_PARTITIONS": "24"})
    assert (settings.partitions, settings.app_id, settings.stream_ttl_seconds,
            settings.bootstrap) == (24, "prod", 120.0, "k1:9092")


@pytest.mark.parametrize(("content", "message"), [
    ("TOOLWIRE_PARTITONS=3\n", "unknown setting(s) TOOLWIRE_PARTITONS"),
    ("just words\n", ":1: expected NAME=VALUE"),
    ("TOOLWIRE_PARTITIONS=many\n", "TOOLWIRE_PARTITIONS='many': expected a positive whole"),
])
def test_a_bad_file_names_what_to_fix(tmp_path: Path, content: str, message: str) -> None:
    file = tmp_path / "toolwire.env"
    file.write_text(content)
    with pytest.raises(ValueError) as caught:
        Settings.from_env({"TOOLWIRE_SETTINGS_FILE": str(file)})
    assert message in str(caught.value)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read it"):
        Settings.from_env({"TOOLWIRE_SETTINGS_FILE": str(tmp_path / "none.env")})


def test_an_unknown_environment_variable_is_warned_about(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolwire.config.settings"):
        Settings.from_env({"TOOLWIRE_STREM_TTL": "5"})
    assert "TOOLWIRE_STREM_TTL" in caplog.text


def test_every_documented_variable_is_known() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    documented = {word.strip("`") for word in readme.split()
                  if word.strip("`").startswith("TOOLWIRE_") and word.strip("`|,").isupper()}
    documented = {d for d in documented if d.replace("_", "").isalnum()
                  and not d.endswith("_")}
    assert documented - known_variables() == set()


def test_log_format_is_validated() -> None:
    with pytest.raises(ValueError, match="TOOLWIRE_LOG_FORMAT='xml': expected text or json"):
        Settings.from_env({"TOOLWIRE_LOG_FORMAT": "xml"})
    assert logging_config("text", "info") is None
    assert logging_config("json", "warn")["root"]["level"] == "WARNING"  # type: ignore[index]


def test_json_lines_are_one_event_per_line_with_the_ids() -> None:
    record = logging.LogRecord("toolwire.processor", logging.ERROR, __file__, 1,
                               "request %s: internal error\nsecond line", ("r1",), None)
    record.request_id, record.session_id = "r1", "s1"
    line = JsonLines().format(record)
    assert "\n" not in line
    event = orjson.loads(line)
    assert (event["level"], event["request_id"], event["session_id"]) == ("error", "r1", "s1")
    assert event["message"] == "request r1: internal error\nsecond line"


def test_event_loop_is_validated() -> None:
    with pytest.raises(ValueError, match="TOOLWIRE_EVENT_LOOP='trio': expected asyncio or uvloop"):
        Settings.from_env({"TOOLWIRE_EVENT_LOOP": "trio"})
    assert Settings.from_env({"TOOLWIRE_EVENT_LOOP": "uvloop"}).event_loop == "uvloop"
    assert Settings.from_env({}).event_loop == "asyncio"


@pytest.mark.parametrize(("value", "named", "unnamed"), [
    ("writer", ["writer"], ["perplexity", None]),
    (" writer , perplexity ", ["writer", "perplexity"], ["openrouter", None]),
    ("*", ["writer", "anything", None], []),
    ("", [], ["writer", None]),
])
def test_end_without_done_names_providers_as_synthesize_ids_does(
        value: str, named: list[str | None], unnamed: list[str | None]) -> None:
    settings = Settings.from_env({"TOOLWIRE_END_WITHOUT_DONE": value})
    assert [settings.ends_without_done(p) for p in named] == [True] * len(named)
    assert [settings.ends_without_done(p) for p in unnamed] == [False] * len(unnamed)
    # The two provider lists are separate settings.
    assert not any(settings.synthesizes_ids(p) for p in [*named, *unnamed])
