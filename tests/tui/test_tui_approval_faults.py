"""The approval dialog shows its keys and waits `approval_timeout` (the setting `chat -q`
uses too); a denial is said once, in a few words."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.tools.terminal import make_terminal_tool
from hermes.config import Settings
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.app import HermesApp, make_app
from hermes.tui.screens.approval import ApprovalScreen
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import type_and_send, until, until_settled


@pytest.fixture
async def terminal_tui(
    settings: Settings, sessions: SqliteSessions, tmp_path: Path
) -> AsyncIterator[Callable[[Settings], HermesApp]]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "junk").mkdir()
    agents = []

    def build(app_settings: Settings) -> HermesApp:
        tools = ToolRegistry([make_terminal_tool(ToolLauncher())])
        agent = build_agent(settings.replace(sandbox="off"), sessions, tools=tools)
        agents.append(agent)
        return make_app(agent, sessions, app_settings, cwd=str(work))

    yield build
    for agent in agents:
        await agent.aclose()


def screen_text(app: HermesApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_the_dialog_shows_its_keys_and_the_settings_timeout_and_a_denial_is_said_once(
    terminal_tui: Callable[[Settings], HermesApp], upstream: ScriptedUpstream, settings: Settings
) -> None:
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm -r junk"})]), text_reply("Left it."))
    app = terminal_tui(settings.replace(approval_timeout=45.0))
    async with app.run_test(size=(110, 40)) as pilot:
        await type_and_send(pilot, "clean up")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=30)
        dialog = app.screen
        assert isinstance(dialog, ApprovalScreen)
        assert dialog.timeout == 45.0
        await pilot.pause()
        shown = screen_text(app)
        assert "Keys: y: run once · a: allow for this session · n or Esc: deny" in shown
        assert "Denied automatically in 4" in shown  # 45 s, counting down
        await pilot.press("n")
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=30)
        await until_settled(pilot)
        card = app.chat.transcript.query_one(ToolCard)
        assert card.state == "failed" and card.outcome == "denied"
        assert card.result.startswith("DENIED:") and not card.expanded
        text = screen_text(app)
        assert "DENIED" not in text  # the model's text is folded away
        assert text.count("denied: not run") == 1
        assert not [n.text for n in app.chat.transcript.query(Notice) if "denied" in n.text]


def test_the_default_timeout_is_one_setting_of_120_s() -> None:
    assert Settings().approval_timeout == 120.0
