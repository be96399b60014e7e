"""The tool environment is an allowlist: a core set, the passthrough globs, nothing else.

Run through the real terminal tool (a real shell, the supervisor, real bwrap when the
sandbox is on): whatever hermes's own environment holds, a command sees only the core
variables, the ones `tool_env_passthrough` names, and PAGER/GIT_PAGER.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.safety.tool_env import CORE_GLOBS, CORE_NAMES, NEVER_PASS, PROXY_NAMES, ToolEnvPolicy
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.registry import default_registry
from hermes.agent.tools.terminal import run_command
from hermes.config import OPTIONS, Settings

DB_URL = "postgresql://hermes:db-pass-4417@127.0.0.1:5432/hermes"
LEAKS = {
    "HERMES_DATABASE_URL": DB_URL,
    "PGPASSWORD": "pg-password-9921",
    "DATABASE_URL": "postgresql://app:app-pass-1234@db/app",
    "GITHUB_PAT": "ghp-personal-token-5566",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-7788",
    "FOO_BAR": "random-value-3344",
}
"""Variables no tool may see: credentials under names no pattern catches, and a plain one."""
SHELL_OWN = {"PWD", "SHLVL", "_", "OLDPWD"}
"""Variables bash sets for itself when it starts (not inherited from hermes)."""


def _bwrap_works() -> bool:
    return resolve_sandbox(SandboxConfig(mode="auto")).active


MODES = ["off", pytest.param("on", marks=pytest.mark.skipif(not _bwrap_works(), reason="no working bwrap"))]


def env_names(output: str) -> dict[str, str]:
    """NAME -> value of `env`'s output in a terminal result."""
    stdout = output.split("--- stdout ---\n", 1)[1].split("\n--- stderr ---", 1)[0]
    pairs = (line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    return {name: value for name, value in pairs if name.replace("_", "").isalnum()}


def is_core(name: str) -> bool:
    return name in CORE_NAMES or name in PROXY_NAMES or any(fnmatch.fnmatchcase(name, g) for g in CORE_GLOBS)


@pytest.fixture
def leaky_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in LEAKS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("MY_TOOL_SETTING", "passed-through")


async def run_env(tmp_path: Path, settings: Settings) -> str:
    tool = default_registry(ToolLauncher.from_settings(settings)).get("terminal")
    assert tool is not None
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return await tool.handler({"command": "env"}, ToolContext(session_id="s", cwd=work))


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_sees_the_core_set_and_the_passthrough_names_only(
    leaky_env: None, tmp_path: Path, mode: str
) -> None:
    settings = Settings(home=tmp_path / "hh", sandbox=mode, tool_env_passthrough=("MY_TOOL_*",))

    out = await run_env(tmp_path, settings)

    assert out.startswith("exit code: 0"), out
    for name, value in LEAKS.items():
        assert value not in out and "db-pass-4417" not in out, name
        assert f"\n{name}=" not in out, name
    env = env_names(out)
    assert {"PATH", "HOME"} <= set(env) and env["LANG"] == "C.UTF-8"
    assert env["MY_TOOL_SETTING"] == "passed-through"
    assert env["PAGER"] == "cat" and env["GIT_PAGER"] == "cat"
    others = {n for n in env if not is_core(n)} - SHELL_OWN - {"MY_TOOL_SETTING", "PAGER", "GIT_PAGER"}
    assert others == set(), others


async def test_hermes_secrets_never_pass_even_when_a_glob_names_them(
    leaky_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_SERVER_KEY", "server-key-0001")
    monkeypatch.setenv("HERMES_SERVER_KEY", "client-server-key-0006")
    monkeypatch.setenv("HERMES_API_KEY", "hermes-key-0002")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key-0003")
    monkeypatch.setenv("RENAMED_PROVIDER_KEY", "sk-configured-1234")  # the configured key, another name
    monkeypatch.setenv("PG_PASS_COPY", "db-pass-4417")  # the database URL's password, another name
    settings = Settings(
        home=tmp_path / "hh", sandbox="off", tool_env_passthrough=("*",), api_key="sk-configured-1234",
        database_url=DB_URL,
    )  # fmt: skip

    out = await run_env(tmp_path, settings)

    leaks = ("server-key-0001", "client-server-key-0006", "hermes-key-0002", "openai-key-0003")
    for leaked in (*leaks, "sk-configured-1234", "db-pass-4417"):
        assert leaked not in out, leaked
    # "*" is the user's explicit choice for everything else.
    assert "FOO_BAR=random-value-3344" in out and "GITHUB_PAT=ghp-personal-token-5566" in out


async def test_proxies_pass_unless_their_value_holds_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    monkeypatch.setenv("http_proxy", "http://bob:proxy-pass-42@proxy.example:3128")

    plain = env_names(await run_env(tmp_path, Settings(home=tmp_path / "hh", sandbox="off")))
    named = Settings(home=tmp_path / "hh", sandbox="off", tool_env_passthrough=("http_proxy",))
    chosen = env_names(await run_env(tmp_path, named))

    assert plain["HTTPS_PROXY"] == "http://proxy.example:3128" and plain["no_proxy"] == "localhost,127.0.0.1"
    assert "http_proxy" not in plain
    assert chosen["http_proxy"] == "http://bob:proxy-pass-42@proxy.example:3128"


def test_never_pass_covers_every_secret_setting_and_the_database_url() -> None:
    secret_env_names = {name for option in OPTIONS.values() if option.secret for name in option.env}
    assert secret_env_names | set(OPTIONS["database_url"].env) <= NEVER_PASS


def test_the_core_set_covers_what_the_mcp_sdk_passes_stdio_servers() -> None:
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    assert set(DEFAULT_INHERITED_ENV_VARS) <= set(CORE_NAMES)


def test_the_report_names_what_passes_and_never_a_value() -> None:
    environ = {
        "PATH": "/usr/bin", "HOME": "/home/u", "LC_TIME": "C", "FOO_BAR": "x-1", "GITHUB_TOKEN": "tok-value",
        "HERMES_API_KEY": "sk-123", "https_proxy": "http://u:p@proxy:1",
    }  # fmt: skip
    policy = ToolEnvPolicy(passthrough=("GITHUB_*", "HERMES_API_KEY"))

    report = policy.report(environ)

    assert report.names == ("GITHUB_TOKEN", "GIT_PAGER", "HOME", "LC_TIME", "PAGER", "PATH")
    assert report.withheld == ("HERMES_API_KEY", "https_proxy")
    assert report.passthrough == ("GITHUB_*", "HERMES_API_KEY")
    assert "sk-123" not in repr(report) and "tok-value" not in repr(report)


async def test_exit_codes_and_signals_pass_through_the_supervisor(tmp_path: Path) -> None:
    assert (await run_command("exit 7", tmp_path, 30)).splitlines()[0] == "exit code: 7"
    assert (await run_command("kill -TERM $$", tmp_path, 30)).splitlines()[0] == "exit code: -15 (killed by SIGTERM)"
    # The command gets default signal dispositions (Python's supervisor ignores SIGPIPE itself).
    out = await run_command("yes | head -1; echo ${PIPESTATUS[0]}", tmp_path, 30)
    assert "--- stdout ---\ny\n141" in out


def test_the_configured_keys_stay_out_of_the_launchers_repr(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, sandbox="off", api_key="sk-configured-1234", database_url=DB_URL)

    launcher = ToolLauncher.from_settings(settings)

    assert "sk-configured-1234" not in repr(launcher) and "db-pass-4417" not in repr(launcher)
