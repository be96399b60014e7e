"""The terminal tool's environment: secrets scrubbed, passthrough globs honoured; the supervisor is transparent."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.launch import ToolLauncher, is_secret_name, scrubbed_env
from hermes.agent.tools.registry import default_registry
from hermes.agent.tools.terminal import run_command

SECRETS = {
    "API_SERVER_KEY": "server-key-value",
    "HERMES_API_KEY": "hermes-key-value",
    "OPENAI_API_KEY": "openai-key-value",
    "GITHUB_TOKEN": "github-token-value",
    "DB_PASSWORD": "db-password-value",
    "STRIPE_SECRET": "stripe-secret-value",
    "aws_secret_access_key": "aws-lower-value",
    "SOME_SECRET_THING": "secret-thing-value",
}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible-value")
    monkeypatch.setenv("KEYBOARD_LAYOUT", "us")  # "KEY" not as a suffix: not a secret


async def test_tool_commands_never_see_secrets(secret_env: None, tmp_path: Path) -> None:
    out = await run_command("env", tmp_path, 30)

    for value in SECRETS.values():
        assert value not in out
    assert "HARMLESS_SETTING=visible-value" in out
    assert "KEYBOARD_LAYOUT=us" in out
    assert "PAGER=cat" in out


async def test_passthrough_globs_let_named_variables_through(secret_env: None, tmp_path: Path) -> None:
    launcher = ToolLauncher(env_passthrough=("GITHUB_TOKEN", "DB_*"))

    out = await run_command("env", tmp_path, 30, launcher)

    assert "GITHUB_TOKEN=github-token-value" in out
    assert "DB_PASSWORD=db-password-value" in out
    assert "server-key-value" not in out and "openai-key-value" not in out


async def test_registry_built_from_settings_scrubs_and_passes_through(
    secret_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes.config import Settings

    monkeypatch.setenv("HERMES_SANDBOX", "off")
    monkeypatch.setenv("HERMES_TOOL_ENV_PASSTHROUGH", "STRIPE_SECRET")
    tool = default_registry(ToolLauncher.from_settings(Settings.load())).get("terminal")
    assert tool is not None

    out = await tool.handler({"command": "env"}, ToolContext(session_id="s", cwd=tmp_path))

    assert "STRIPE_SECRET=stripe-secret-value" in out
    assert "hermes-key-value" not in out


def test_secret_names() -> None:
    for name in ("API_SERVER_KEY", "X_TOKEN", "my_password", "A_SECRET", "GOOGLE_APPLICATION_CREDENTIALS"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "KEYMAP", "TOKENIZERS_PARALLELISM", "PASSWORD_STORE_DIR_X"):
        assert not is_secret_name(name), name
    assert scrubbed_env({"A_KEY": "1", "B": "2"}) == {"B": "2"}


async def test_exit_codes_and_signals_pass_through_the_supervisor(tmp_path: Path) -> None:
    assert (await run_command("exit 7", tmp_path, 30)).splitlines()[0] == "exit code: 7"
    assert (await run_command("kill -TERM $$", tmp_path, 30)).splitlines()[0] == "exit code: -15 (killed by SIGTERM)"
    # The command gets default signal dispositions (Python's supervisor ignores SIGPIPE itself).
    out = await run_command("yes | head -1; echo ${PIPESTATUS[0]}", tmp_path, 30)
    assert "--- stdout ---\ny\n141" in out


async def test_a_configured_key_is_dropped_under_any_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.config import Settings

    monkeypatch.setenv("HERMES_SANDBOX", "off")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    (tmp_path / "hh").mkdir()
    (tmp_path / "hh" / "config.toml").write_text('api_key = "sk-configured-1234"\n')
    monkeypatch.setenv("MY_LLM_CREDENTIAL_VALUE", "sk-configured-1234")  # a name no pattern catches

    launcher = ToolLauncher.from_settings(Settings.load())
    out = await run_command("env", tmp_path, 30, launcher)

    assert "sk-configured-1234" not in out
    assert "sk-configured-1234" not in repr(launcher)
