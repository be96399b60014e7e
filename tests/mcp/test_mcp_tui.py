"""MCP tools in the TUI: servers start in the background, cards name the server, /mcp lists."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcp_harness import SERVERS

from hermes.agent.factory import build_agent
from hermes.agent.mcp import McpManager
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.mcp_config import McpServerConfig
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.app import make_app
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.tool_card import ToolCard


async def until(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await pilot.pause(0.05)


def notices(app: Any) -> list[str]:
    return [str(n.render()) if not n.text else n.text for n in app.chat.transcript.query(Notice)]


async def test_mcp_tool_card_and_slash_mcp(upstream: ScriptedUpstream, tmp_path: Path, http_mcp: str) -> None:
    settings = Settings(
        home=tmp_path, base_url=upstream.base_url, model="scripted-model", api_key="x", stream_stale_timeout=20.0
    )
    store = open_sync_state(tmp_path / "state.db")
    sessions = store.sessions
    agent = build_agent(settings, sessions, tools=ToolRegistry())
    manager = McpManager(
        [
            McpServerConfig(name="x", command=sys.executable, args=(str(SERVERS / "stdio_server.py"),)),
            McpServerConfig(name="web", url=http_mcp),
            McpServerConfig(name="bad", command=sys.executable, args=(str(SERVERS / "broken_server.py"),)),
        ],
        log_dir=tmp_path / "logs",
    )
    upstream.enqueue(tool_reply([call("mcp__x__y", {"text": "from the tui"}, id="c1")]), text_reply("Done in the TUI."))
    app = make_app(agent, sessions, settings, cwd=str(tmp_path))
    app.mcp = manager
    try:
        async with app.run_test(size=(110, 40)) as pilot:
            # A prompt sent while the servers still start waits for them: the first turn has the tools.
            app.chat.chat_input.insert("use the mcp tool")
            await pilot.press("enter")
            await until(pilot, lambda: app.chat.query(ToolCard) and app.chat.query_one(ToolCard).state == "done")
            card = app.chat.query_one(ToolCard)
            assert card.tool_name == "mcp__x__y"
            assert card.header_text.startswith("✓ y [MCP x]")
            await until(pilot, lambda: not app.chat.turns.turn_running)
            texts = notices(app)
            assert sum("MCP server 'bad' failed" in t for t in texts) == 1
            assert any(t.startswith("MCP: x (4 tools), web (2 tools)") for t in texts)

            app.chat.chat_input.insert("/mcp")
            await pilot.press("enter")
            await until(pilot, lambda: any("MCP servers" in t for t in notices(app)))
            listing = next(t for t in notices(app) if "MCP servers" in t)
            assert "x  connected" in listing and "mcp__x__y" in listing and "mcp__web__add" in listing
            assert "bad  failed" in listing
        results = [m for m in upstream.requests[1].messages if m.get("role") == "tool"]
        assert str(results[0]["content"]).startswith("echo from x: from the tui")
    finally:
        await manager.aclose()
        await agent.aclose()
        store.close()


async def test_slash_mcp_without_servers(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, base_url=upstream.base_url, model="scripted-model", api_key="x")
    store = open_sync_state(tmp_path / "state.db")
    sessions = store.sessions
    agent = build_agent(settings, sessions, tools=ToolRegistry())
    app = make_app(agent, sessions, settings, cwd=str(tmp_path))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            app.chat.chat_input.insert("/mcp")
            await pilot.press("enter")
            await until(pilot, lambda: any("no MCP servers configured" in t for t in notices(app)))
    finally:
        await agent.aclose()
        store.close()
