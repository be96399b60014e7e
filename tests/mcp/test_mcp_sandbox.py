"""Stdio MCP servers start like `terminal` commands: scrubbed environment, sandbox, supervisor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_harness import SERVERS

from hermes.agent.mcp import McpManager
from hermes.agent.mcp.spawn import stdio_command
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.agent.tools.launch import SUPERVISOR
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


async def test_a_stdio_server_gets_the_scrubbed_environment_plus_its_own_env(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "leak-me")
    monkeypatch.setenv("HERMES_API_KEY", "sk-provider-key-123456")
    monkeypatch.setenv("INNOCENT_NAME", "sk-provider-key-123456")  # holds the provider key
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    server = probe_config(env={"GITHUB_TOKEN": "given-to-this-server"})
    manager, registry = await started(settings_with(tmp_path / "home", "off", server), tmp_path)
    try:
        env = json.loads(await call(registry, "mcp__probe__env", {}, tmp_path))
    finally:
        await manager.aclose()
    assert "DEPLOY_TOKEN" not in env and "HERMES_API_KEY" not in env and "INNOCENT_NAME" not in env
    assert env["PLAIN_SETTING"] == "visible"
    assert env["GITHUB_TOKEN"] == "given-to-this-server"  # the server's own env table is the user's choice


def test_the_server_command_runs_under_the_supervisor(tmp_path):
    spawn = stdio_command(probe_config(cwd=Path("sub")), tmp_path)
    assert spawn.args[:2] == ("-I", "-S") and spawn.args[2] == str(SUPERVISOR)
    assert spawn.args[-2:] == (sys.executable, PROBE)[-2:]
    assert spawn.cwd == tmp_path / "sub"


def _bwrap_works() -> bool:
    from hermes.agent.sandbox import SandboxConfig, resolve_sandbox

    return resolve_sandbox(SandboxConfig(mode="auto")).active


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
