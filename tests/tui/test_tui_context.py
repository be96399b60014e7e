"""`/context` lists the AGENTS.md files in the prompt; a cut shows a notice at start."""

from __future__ import annotations

from pathlib import Path

from hermes.agent.factory import build_agent
from hermes.agent.instructions import load_instructions
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.tui.app import make_app
from hermes.tui.widgets.notice import Notice

from .conftest import type_and_send, until


def project(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / "lib").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("root rules\n")
    (repo / "lib" / "AGENTS.md").write_text("lib rules " * 20)
    return repo, repo / "lib"


async def test_context_lists_the_loaded_files(settings: Settings, sessions: SqliteSessions, tmp_path: Path) -> None:
    repo, cwd = project(tmp_path)
    agent = build_agent(settings, sessions, tools=ToolRegistry(), instructions=load_instructions(settings.home, cwd))
    app = make_app(agent, sessions, settings, cwd=str(cwd))
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await type_and_send(pilot, "/context")

            def texts() -> list[str]:
                return [str(n.render()) for n in app.chat.transcript.query(Notice)]

            await until(pilot, lambda: any("project instructions:" in t for t in texts()))
            report = next(t for t in texts() if "project instructions:" in t)
            assert f"{repo / 'AGENTS.md'}  11 bytes" in report
            assert f"{cwd / 'AGENTS.md'}  200 bytes" in report
            assert "cut" not in report
    finally:
        await agent.aclose()


async def test_a_cut_is_announced_at_start_and_in_context(
    settings: Settings, sessions: SqliteSessions, tmp_path: Path
) -> None:
    _, cwd = project(tmp_path)
    loaded = load_instructions(settings.home, cwd, max_bytes=50)
    agent = build_agent(settings, sessions, tools=ToolRegistry(), instructions=loaded)
    app = make_app(agent, sessions, settings, cwd=str(cwd))
    try:
        async with app.run_test(size=(160, 30)) as pilot:

            def texts() -> list[str]:
                return [str(n.render()) for n in app.chat.transcript.query(Notice)]

            await until(pilot, lambda: any("project instructions cut to 50 bytes" in t for t in texts()))
            await type_and_send(pilot, "/context")
            await until(pilot, lambda: any("of 200 bytes (cut)" in t for t in texts()))
            assert any("39 of 200 bytes (cut)" in t for t in texts())
    finally:
        await agent.aclose()
