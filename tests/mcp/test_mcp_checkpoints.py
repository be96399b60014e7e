"""An MCP tool call takes a file checkpoint like a built-in tool that can change files: a
real stdio MCP server (servers/probe_server.py) writes a file in the working tree, and the
turn's snapshots make it undoable (hermes/checkpoints)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_harness import SERVERS

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import Status
from hermes.agent.mcp import McpManager
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnRequest
from hermes.checkpoints import undo as checkpoints
from hermes.checkpoints.turn import CheckpointConfig
from hermes.mcp_config import McpServerConfig
from hermes.testing.state_db import open_sync_state
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


async def test_an_mcp_tool_call_takes_a_checkpoint_that_undo_uses(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "kept.txt").write_text("untouched\n")
    target = work / "probe.txt"
    db = open_sync_state(tmp_path / "state.db")
    store = db.sessions
    registry = ToolRegistry()
    manager = McpManager(
        [McpServerConfig(name="probe", command=sys.executable, args=(str(SERVERS / "probe_server.py"),))],
        log_dir=tmp_path / "logs",
    )
    agent = Agent(
        OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
        store=store,
        model="scripted-model",
        tools=registry,
        options=EngineOptions(stream_retries=0, stale_timeout=20.0),
        checkpoints=CheckpointConfig(home, 1024),
    )
    try:
        assert [s.status for s in await manager.start(registry)] == ["connected"]
        assert registry.get("mcp__probe__write") is not None and not registry.get("mcp__probe__write").read_only
        upstream.enqueue(tool_reply([call("mcp__probe__write", {"path": str(target)})]), text_reply("Written."))
        events, result = await collect_turn(agent, TurnRequest(input="probe", cwd=str(work), yolo=True))
        assert result.status == "completed"
        assert target.read_text() == "probe"  # the MCP server's own process wrote it
        assert [e.text for e in events if isinstance(e, Status) and e.kind == "files_changed"] == [
            "1 file changed, +1 −0"
        ]
        (row,) = await store.turn_checkpoints(result.session_id)
        assert row.before is not None and row.after is not None  # snapshotted before the MCP call, and at the end
        assert "+probe" in await checkpoints.turn_diff(store, home, result.session_id)

        outcome = await checkpoints.undo(store, home, result.session_id)
        assert outcome.files == ("probe.txt",)
        assert not target.exists() and (work / "kept.txt").read_text() == "untouched\n"
        await checkpoints.redo(store, home, result.session_id)
        assert target.read_text() == "probe"
    finally:
        await manager.aclose()
        await agent.aclose()
        db.close()
