"""Ctrl+N and /new read AGENTS.md again: a file created while the TUI is open is in the next
new session's system prompt (and a removed one is gone from it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.instructions import load_instructions
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.upstream import ScriptedUpstream, text_reply
from hermes.tui.app import make_app
from hermes.tui.widgets.notice import Notice

from .conftest import send_turn, until


def system_prompt(upstream: ScriptedUpstream) -> str:
    first = upstream.requests[-1].body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


@pytest.mark.parametrize("how", ["ctrl+n", "/new"])
async def test_a_new_session_reads_agents_md_again(
    how: str, settings: Settings, sessions: SqliteSessions, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    agent = build_agent(settings, sessions, tools=ToolRegistry(), instructions=load_instructions(settings.home, cwd))
    app = make_app(agent, sessions, settings, cwd=str(cwd))
    upstream.enqueue(text_reply("one"), text_reply("two"), text_reply("three"))
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await send_turn(pilot, "before")
            assert "Always answer in haiku" not in system_prompt(upstream)
            (cwd / "AGENTS.md").write_text("Always answer in haiku.\n")

            async def new_session() -> None:
                if how == "ctrl+n":
                    await pilot.press("ctrl+n")
                else:
                    app.chat.chat_input.insert("/new")
                    await pilot.press("enter")
                await until(pilot, lambda: app.session_id is None)

            await new_session()
            await until(pilot, lambda: any("AGENTS.md" in n.text for n in app.chat.transcript.query(Notice)))
            await send_turn(pilot, "after")
            assert "Always answer in haiku." in system_prompt(upstream)

            (cwd / "AGENTS.md").unlink()
            await new_session()
            await send_turn(pilot, "gone")
            assert "Always answer in haiku" not in system_prompt(upstream)
    finally:
        await agent.aclose()
