"""A tool card shows the last lines of its output: live while the command runs (the real
terminal tool), kept after an interrupt, the result's tail once it ends; Ctrl+G expands."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.tools.output_tail import OutputTail
from hermes.agent.tools.terminal import make_terminal_tool
from hermes.config import Settings
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.app import HermesApp, make_app
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import type_and_send, until, until_settled

COMMAND = "for i in $(seq 1 30); do echo line-$i; done; while [ ! -e gate ]; do sleep 0.05; done; echo finished"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
async def terminal_tui(
    settings: Settings, sessions: SqliteSessions, work: Path
) -> AsyncIterator[Callable[[], HermesApp]]:
    agents = []

    def build() -> HermesApp:
        tools = ToolRegistry([make_terminal_tool(ToolLauncher())])
        agent = build_agent(settings.replace(sandbox="off"), sessions, tools=tools)
        agents.append(agent)
        return make_app(agent, sessions, settings, cwd=str(work))

    yield build
    for agent in agents:
        await agent.aclose()


def card_of(app: HermesApp) -> ToolCard:
    return app.chat.transcript.query_one(ToolCard)


async def test_the_card_shows_the_running_commands_last_lines_then_the_results(
    terminal_tui: Callable[[], HermesApp], upstream: ScriptedUpstream, work: Path
) -> None:
    upstream.enqueue(tool_reply([call("terminal", {"command": COMMAND})]), text_reply("Done."))
    app = terminal_tui()
    async with app.run_test(size=(100, 40)) as pilot:
        await type_and_send(pilot, "count")
        await until(pilot, lambda: "line-30" in card_of(app).tail, timeout=30)
        card = card_of(app)
        assert card.state == "running"
        assert card.tail.splitlines() == [f"line-{n}" for n in range(26, 31)]  # the last five, live
        assert card.has_class("-has-tail") and not card.expanded
        (work / "gate").touch()
        await until(pilot, lambda: card.state == "done", timeout=30)
        await until_settled(pilot)
        assert card.tail.splitlines()[-2:] == ["line-30", "finished"]
        assert "line-1\n" in card.result  # the whole output is in the folded result
        await pilot.press("ctrl+g")
        await until(pilot, lambda: card.expanded and card.has_class("-open"))


async def test_an_interrupted_commands_last_lines_stay(
    terminal_tui: Callable[[], HermesApp], upstream: ScriptedUpstream
) -> None:
    upstream.enqueue(tool_reply([call("terminal", {"command": COMMAND})]))
    app = terminal_tui()
    async with app.run_test(size=(100, 40)) as pilot:
        await type_and_send(pilot, "count")
        await until(pilot, lambda: "line-30" in card_of(app).tail, timeout=30)
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=30)
        await until_settled(pilot)
        card = card_of(app)
        assert card.state == "interrupted"
        assert card.tail.splitlines()[-1] == "line-30" and card.has_class("-has-tail")


async def test_output_reports_are_bounded_and_end_with_the_last_lines() -> None:
    reports: list[str] = []
    tail = OutputTail(reports.append, lines=3, interval=0.2)
    for n in range(2000):
        tail.feed(f"row {n}\n".encode())
    tail.feed(b"partial")
    await asyncio.sleep(0.5)
    assert 1 <= len(reports) <= 2
    assert reports[-1] == "row 1998\nrow 1999\npartial"
    tail.feed(b"\x1b[2K\r50%\r100%\n")
    await asyncio.sleep(0.5)
    assert reports[-1].splitlines()[-1] == "100%"
    tail.close()
