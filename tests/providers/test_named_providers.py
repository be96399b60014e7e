"""Named providers through real commands: `chat -q -m NAME/MODEL`, `hermes models`, fallback
and `hermes doctor`, against a scripted OpenAI-compatible upstream and a scripted Anthropic
Messages API, both on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.errors import ConfigError
from hermes.providers_config import parse_providers, split_model
from hermes.testing.anthropic_upstream import AnthropicError, ScriptedAnthropic, anthropic_text, anthropic_tools
from hermes.testing.upstream import ScriptedUpstream, text_reply

REPO = Path(__file__).resolve().parents[2]
KEY_VAR = "HERMES_TEST_ANTHROPIC_KEY"


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


@pytest.fixture
def claude() -> Iterator[ScriptedAnthropic]:
    with ScriptedAnthropic.in_thread() as api:
        yield api


@pytest.fixture
def home(tmp_path: Path, claude: ScriptedAnthropic) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text(
        f'[providers.claude]\nkind = "anthropic"\nbase_url = "{claude.base_url}"\napi_key_env = "{KEY_VAR}"\n'
        '[providers.spare]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["spare-1"]\n'
    )
    return home


def _run(
    args: list[str], home: Path, upstream: ScriptedUpstream, cwd: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_STREAM_STALE_TIMEOUT="30",  # the SDK loads on the first call of a loaded machine
        HERMES_SANDBOX="off",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **{KEY_VAR: "sk-ant-test"},
    )
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        cwd=cwd, env=env, input="", capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip


def test_a_model_named_name_slash_model_runs_on_that_provider_with_tools(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    claude.enqueue(anthropic_tools([("read_file", {"path": "notes.txt"})], text="Let me read it."))
    claude.enqueue(anthropic_text("The notes say 42."))
    proc = _run(["chat", "-m", "claude/claude-test-1", "-q", "what do my notes say?"], home, upstream, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "The notes say 42." in proc.stdout
    assert upstream.requests == []  # nothing went to the default endpoint
    first, second = (r.body for r in claude.requests)
    assert first["model"] == "claude-test-1" and "read_file" in [t["name"] for t in first["tools"]]
    results = [b for m in second["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 1 and "the answer is 42" in results[0]["content"]


def test_a_bare_model_still_goes_to_the_default_endpoint(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("from the default endpoint"))
    proc = _run(["chat", "-q", "hi"], home, upstream, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "from the default endpoint" in proc.stdout and claude.requests == []
    assert upstream.requests[0].body["model"] == "scripted-model"


def test_hermes_models_lists_every_provider(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    proc = _run(["models"], home, upstream, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "default/scripted-model  (current)",
        "claude/claude-test-1",
        "claude/claude-test-2",
        "spare/spare-1",
    ]
    as_json = json.loads(_run(["models", "--json"], home, upstream, tmp_path).stdout)
    assert [x["provider"] for x in as_json] == ["default", "claude", "spare"]


def test_a_provider_without_its_key_is_one_line_not_a_crash(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    proc = _run(["models"], home, upstream, tmp_path, **{KEY_VAR: ""})
    assert proc.returncode == 0  # the others listed
    assert f"hermes: claude: cannot list models: provider claude: the environment variable {KEY_VAR}" in proc.stderr
    assert "Traceback" not in proc.stderr
    asked = _run(["chat", "-m", "claude/claude-test-1", "-q", "hi"], home, upstream, tmp_path, **{KEY_VAR: ""})
    assert asked.returncode != 0 and f"{KEY_VAR} (its api_key_env) is not set" in asked.stderr
    assert "Traceback" not in asked.stderr and claude.requests == []


def test_an_overloaded_provider_falls_back_to_the_next_model_and_says_so(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    claude.enqueue(
        AnthropicError(529, "overloaded_error", "Overloaded"), AnthropicError(529, "overloaded_error", "Overloaded")
    )
    upstream.enqueue(text_reply("answered by the fallback"))
    proc = _run(
        ["chat", "-m", "claude/claude-test-1", "-q", "hi"], home, upstream, tmp_path,
        HERMES_STREAM_RETRIES="1", HERMES_FALLBACK="default/scripted-model",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(claude.requests) == 2  # the call and its one retry
    assert "claude/claude-test-1 failed" in proc.stderr and "going on with default/scripted-model" in proc.stderr
    assert "answered by the fallback" in proc.stdout
    assert upstream.requests[0].body["model"] == "scripted-model"


def test_a_refused_request_does_not_fall_back(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    claude.enqueue(AnthropicError(400, "invalid_request_error", "bad field"))
    proc = _run(
        ["chat", "-m", "claude/claude-test-1", "-q", "hi"],
        home,
        upstream,
        tmp_path,
        HERMES_FALLBACK="default/scripted-model",
    )
    assert proc.returncode != 0 and "bad field" in proc.stderr
    assert upstream.requests == []


def test_doctor_checks_each_provider(
    upstream: ScriptedUpstream, claude: ScriptedAnthropic, home: Path, tmp_path: Path
) -> None:
    proc = _run(["doctor", "--json"], home, upstream, tmp_path)
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    assert (
        checks["provider claude"]["ok"] and "2 models (listed by the endpoint)" in checks["provider claude"]["detail"]
    )
    assert checks["provider spare"]["ok"] and "its models list" in checks["provider spare"]["detail"]


def test_provider_tables_are_checked() -> None:
    for raw, message in [
        ({"default": {"kind": "openai", "base_url": "http://x"}}, "'default' is taken"),
        ({"local": {"kind": "openai", "base_url": "http://x"}}, "'local' is taken"),
        ({"a": {"kind": "gemini"}}, "kind must be one of openai, anthropic"),
        ({"a": {"kind": "openai"}}, 'kind = "openai" needs base_url'),
        ({"a": {"kind": "anthropic", "models": "claude"}}, "models must be a list"),
        ({"a": {"kind": "anthropic", "api_key": "sk-inline"}}, "unknown key(s) api_key"),
        ({"a b": {"kind": "anthropic"}}, "a provider name is up to 40"),
        ({"a": {"kind": "anthropic", "max_tokens": 0}}, "max_tokens must be a whole number of at least 1"),
    ]:
        with pytest.raises(ConfigError) as raised:
            parse_providers(raw, "config.toml")
        assert message in str(raised.value), raised.value


def test_only_a_configured_name_splits_a_model() -> None:
    names = {"claude", "ollama"}
    assert split_model("claude/claude-haiku-4-5", names) == ("claude", "claude-haiku-4-5")
    assert split_model("Qwen/Qwen2.5-7B", names) == (None, "Qwen/Qwen2.5-7B")
    assert split_model("ollama/library/qwen3:8b", names) == ("ollama", "library/qwen3:8b")
    assert split_model("claude/", names) == (None, "claude/")
