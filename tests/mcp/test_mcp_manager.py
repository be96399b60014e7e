"""McpManager against real servers: stdio (started by hermes) and streamable HTTP."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from mcp_harness import SERVERS, pid_alive, stdio_entry, write_config

from hermes.agent.mcp import McpManager
from hermes.agent.mcp.manager import start_mcp
from hermes.agent.tools import default_registry
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.config import Settings
from hermes.errors import ToolError
from hermes.mcp_config import McpServerConfig


def stdio(name: str, script: str = "stdio_server.py", **kwargs: object) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(str(SERVERS / script),), **kwargs)  # type: ignore[arg-type]


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s", cwd=tmp_path)


async def wait_until(predicate: object, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_stdio_and_http_tools_are_registered_and_called(tmp_path: Path, http_mcp: str) -> None:
    registry = default_registry()
    web = McpServerConfig(name="web", url=http_mcp, headers={"X-Hermes-Test": "secret-42"})
    manager = McpManager([stdio("x"), web], log_dir=tmp_path / "logs")
    try:
        statuses = await manager.start(registry)
        assert [(s.name, s.status) for s in statuses] == [("x", "connected"), ("web", "connected")]
        assert {"mcp__x__y", "mcp__x__fail", "mcp__x__slow", "mcp__x__die", "mcp__web__add", "mcp__web__header"} <= set(registry.names())
        assert "terminal" in registry.names()  # built-ins stay
        schema = next(s for s in registry.schemas() if s["function"]["name"] == "mcp__web__add")
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and set(params["properties"]) == {"a", "b"}
        assert "[MCP server web]" in schema["function"]["description"]

        y = registry.get("mcp__x__y")
        add = registry.get("mcp__web__add")
        assert y is not None and add is not None
        assert (await y.handler({"text": "hi"}, ctx(tmp_path))).startswith("echo from x: hi")
        assert await add.handler({"a": 2, "b": 3}, ctx(tmp_path)) == "sum is 5"
        header = registry.get("mcp__web__header")
        assert header is not None
        assert await header.handler({"name": "X-Hermes-Test"}, ctx(tmp_path)) == "secret-42"  # configured headers are sent
    finally:
        await manager.aclose()


async def test_error_result_timeout_and_a_server_that_dies(tmp_path: Path) -> None:
    registry = ToolRegistry()
    manager = McpManager([stdio("x", tool_timeout=1.0)], log_dir=tmp_path / "logs")
    try:
        await manager.start(registry)
        tools = {name: registry.get(name) for name in registry.names()}
        with pytest.raises(ToolError):
            await tools["mcp__x__fail"].handler({"reason": "nope"}, ctx(tmp_path))  # type: ignore[union-attr]
        with pytest.raises(ToolError, match="timed out after 1 s"):
            await tools["mcp__x__slow"].handler({"seconds": 30}, ctx(tmp_path))  # type: ignore[union-attr]
        # The server still answers after a timed-out call.
        assert "echo from x" in await tools["mcp__x__y"].handler({"text": "a"}, ctx(tmp_path))  # type: ignore[union-attr]
        with pytest.raises(ToolError, match="MCP server 'x'"):
            await tools["mcp__x__die"].handler({}, ctx(tmp_path))  # type: ignore[union-attr]
        with pytest.raises(ToolError, match="not connected"):
            await tools["mcp__x__y"].handler({"text": "b"}, ctx(tmp_path))  # type: ignore[union-attr]
        (status,) = manager.statuses()
        assert status.status == "failed" and status.message
    finally:
        await manager.aclose()


async def test_failing_servers_do_not_block_the_others(tmp_path: Path) -> None:
    registry = ToolRegistry()
    manager = McpManager(
        [
            stdio("broken", "broken_server.py"),
            McpServerConfig(name="missing", command=str(tmp_path / "no-such-server")),
            McpServerConfig(name="silent", command=sys.executable, args=("-c", "import time; time.sleep(60)"), startup_timeout=1.0),
            stdio("x"),
            McpServerConfig(name="off", command="never-run", enabled=False),
        ],
        log_dir=tmp_path / "logs",
    )
    try:
        statuses = {s.name: s for s in await manager.start(registry)}
        assert statuses["x"].status == "connected"
        assert statuses["off"].status == "disabled"
        broken, missing, silent = statuses["broken"], statuses["missing"], statuses["silent"]
        assert broken.status == missing.status == silent.status == "failed"
        assert "MISSING_TOKEN is not set" in broken.message  # the server's own stderr line
        assert "command not found" in missing.message
        assert "did not start within 1 s" in silent.message
        for status in (broken, missing, silent):
            assert "\n" not in status.line() and status.name in status.line()
        assert all(name.startswith("mcp__x__") for name in registry.names())
    finally:
        await manager.aclose()


async def test_close_ends_the_stdio_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pidfile = tmp_path / "pid"
    server = McpServerConfig(
        name="x", command=sys.executable, args=(str(SERVERS / "stdio_server.py"),), env={"MCP_TEST_PIDFILE": str(pidfile)}
    )
    manager = McpManager([server])
    await manager.start(ToolRegistry())
    pid = int(pidfile.read_text())
    assert pid_alive(pid)
    await manager.aclose()
    await wait_until(lambda: not pid_alive(pid))


async def test_start_mcp_reports_failures_and_returns_none_without_servers(hermes_home: Path) -> None:
    assert await start_mcp(Settings.load(), ToolRegistry(), lambda s: None) is None
    write_config(hermes_home, stdio_entry("bad", "broken_server.py"), stdio_entry("x", "stdio_server.py"))
    reported: list[str] = []
    registry = ToolRegistry()
    manager = await start_mcp(Settings.load(), registry, lambda s: reported.append(s.line()))
    assert manager is not None
    try:
        assert len(reported) == 1 and reported[0].startswith("MCP server 'bad' failed:")
        assert "mcp__x__y" in registry.names()
        assert (hermes_home / "logs" / "mcp-bad.log").read_text().strip().endswith("MISSING_TOKEN is not set")
    finally:
        await manager.aclose()
