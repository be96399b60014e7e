"""Stdio MCP servers start like `terminal` commands: allowlisted environment, sandbox, supervisor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_harness import SERVERS

from hermes.agent.mcp import McpManager
from hermes.agent.mcp.spawn import stdio_command
from hermes.agent.safety.launch import SUPERVISOR
from hermes.agent.safety.tool_env import PROXY_NAMES, TOOL_ENV_EXTRA, is_core_name
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.config import Settings
from hermes.mcp_config import McpServerConfig

PROBE = str(SERVERS / "probe_server.py")


def probe_config(**kwargs: object) -> McpServerConfig:
    return McpServerConfig(name="probe", command=sys.executable, args=(PROBE,), **kwargs)  # type: ignore[arg-type]


def settings_with(home: Path, sandbox: str, server: McpServerConfig) -> Settings:
    return Settings(home=home, sandbox=sandbox, mcp_servers=(server,), api_key="sk-provider-key-123456")


async def call(registry: ToolRegistry, name: str, args: dict[str, object], cwd: Path) -> str:
    tool = registry.get(name)
    assert tool is not None, registry.names()
    return await tool.handler(args, ToolContext(session_id="s", cwd=cwd))


async def started(settings: Settings, cwd: Path) -> tuple[McpManager, ToolRegistry]:
    manager = McpManager.from_settings(settings, cwd=cwd)
    assert manager is not None
    registry = ToolRegistry()
    statuses = await manager.start(registry)
    assert [s.status for s in statuses] == ["connected"], [s.line() for s in statuses]
    return manager, registry


LEAKS = {
    "HERMES_DATABASE_URL": "postgresql://hermes:db-pass-4417@127.0.0.1/hermes",
    "PGPASSWORD": "pg-password-9921",
    "GITHUB_PAT": "ghp-personal-token-5566",
    "DEPLOY_TOKEN": "leak-me",
    "HERMES_API_KEY": "sk-provider-key-123456",
    "PLAIN_SETTING": "visible-no-more",
}


def _bwrap_works() -> bool:
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox

    return resolve_sandbox(SandboxConfig(mode="auto")).active


@pytest.mark.parametrize(
    "mode", ["off", pytest.param("on", marks=pytest.mark.skipif(not _bwrap_works(), reason="no working bwrap"))]
)
async def test_a_stdio_server_gets_the_core_environment_plus_its_own_env_only(tmp_path, monkeypatch, mode):
    for name, value in LEAKS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    server = probe_config(env={"GITHUB_TOKEN": "given-to-this-server"})
    manager, registry = await started(settings_with(tmp_path / "home", mode, server), tmp_path)
    try:
        env = json.loads(await call(registry, "mcp__probe__env", {}, tmp_path))
    finally:
        await manager.aclose()
    assert not set(LEAKS) & set(env), set(LEAKS) & set(env)
    assert env["GITHUB_TOKEN"] == "given-to-this-server"  # the server's own env table is the user's choice
    assert env["LANG"] == "C.UTF-8" and {"PATH", "HOME"} <= set(env)
    beyond_core = {name for name in env if not is_core_name(name) and name not in PROXY_NAMES}
    if mode == "on":
        assert env.pop("PWD") == str(tmp_path)  # bwrap's own: the folder it started the server in
        beyond_core.discard("PWD")
    assert beyond_core == {"GITHUB_TOKEN", *TOOL_ENV_EXTRA}, beyond_core


def test_the_server_command_runs_under_the_supervisor(tmp_path):
    spawn = stdio_command(probe_config(cwd=Path("sub")), tmp_path)
    assert spawn.args[:2] == ("-I", "-S") and spawn.args[2] == str(SUPERVISOR)
    assert spawn.args[-2:] == (sys.executable, PROBE)[-2:]
    assert spawn.cwd == tmp_path / "sub"


@pytest.mark.skipif(not _bwrap_works(), reason="bubblewrap is missing or does not work here")
async def test_the_sandbox_applies_to_a_stdio_server(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config-secret.txt").write_text("top secret")
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    manager, registry = await started(settings_with(home, "on", probe_config()), work)
    try:
        assert await call(registry, "mcp__probe__write", {"path": str(work / "ok.txt")}, work) == "written"
        denied = await call(registry, "mcp__probe__write", {"path": str(outside)}, work)
        hidden = await call(registry, "mcp__probe__read", {"path": str(home / "config-secret.txt")}, work)
    finally:
        await manager.aclose()
    assert (work / "ok.txt").read_text() == "probe"
    # Outside the working folder nothing reaches the host (an error, or a private /tmp).
    assert denied in ("written", "error: Read-only file system", "error: No such file or directory")
    assert not outside.exists()
    assert "top secret" not in hidden and hidden.startswith("error:")
