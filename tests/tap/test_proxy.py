"""The tee proxy without a broker: how an upstream is written and chosen, and the command's
usage errors and failures, each saying what to fix."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.app.support import free_port
from toolwire.tap._proxy import HOP_BY_HOP, Upstream, parse_upstreams, route


def test_an_upstream_is_a_url_or_a_prefix_and_a_url() -> None:
    assert Upstream.parse("https://api.openai.com/") == Upstream("", "https://api.openai.com")
    assert Upstream.parse("/or/=https://openrouter.ai/api") == Upstream(
        "/or", "https://openrouter.ai/api")


@pytest.mark.parametrize(("text", "why"), [
    ("api.openai.com", "http:// or https://"),
    ("ftp://x", "http:// or https://"),
    ("/openai", "/PREFIX=URL"),
    ("/o=https://x/?key=1", "no query"),
])
def test_a_bad_upstream_says_what_to_fix(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("?", r"\?")):
        Upstream.parse(text)


def test_the_longest_matching_prefix_routes_and_the_rest_of_the_path_follows() -> None:
    upstreams = parse_upstreams(["http://default", "/a=http://a/v1", "/a/b=http://ab"])
    assert route(upstreams, "/a/b/messages") == upstreams[2]
    assert route(upstreams, "/a/chat/completions") == upstreams[1]
    assert route(upstreams, "/ab/chat") == upstreams[0]  # a prefix is whole segments
    assert upstreams[1].target("/a/chat/completions", b"x=1") == (
        "http://a/v1/chat/completions?x=1")
    assert route(parse_upstreams(["/a=http://a"]), "/b") is None


def test_hop_by_hop_headers_and_the_host_are_never_forwarded() -> None:
    assert {"connection", "transfer-encoding", "host", "keep-alive"} <= HOP_BY_HOP
    assert "content-encoding" not in HOP_BY_HOP and "authorization" not in HOP_BY_HOP


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "toolwire.cli", "tap", "serve", *args],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_usage_errors_exit_2_and_say_what_to_fix() -> None:
    missing = serve()
    assert missing.returncode == 2 and "--upstream" in missing.stderr
    bad = serve("--upstream", "api.openai.com")
    assert bad.returncode == 2 and "http:// or https://" in bad.stderr
    listen = serve("--upstream", "http://x", "--listen", "nowhere")
    assert listen.returncode == 2 and "HOST:PORT" in listen.stderr


@pytest.mark.timeout(90)
def test_a_broker_that_does_not_answer_fails_the_start_with_a_reason() -> None:
    done = serve("--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0",
                 "--broker-timeout", "2",
                 env={"KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}"})
    assert done.returncode == 1, done.stderr
    assert "toolwire tap serve: cannot reach Kafka" in done.stderr
    assert "listening on" not in done.stderr


def test_help_explains_the_proxy() -> None:
    done = serve("--help")
    assert done.returncode == 0
    for words in ("--upstream", "x-toolwire-request-id", "127.0.0.1", "cancels its upstream",
                  "never logged"):
        assert words in done.stdout, words
