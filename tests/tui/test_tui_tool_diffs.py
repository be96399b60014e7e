"""File tool cards show the real change: write_file against the file before the write, patch
with its real line numbers; live, on replay of the stored session, and through `hermes serve`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.tools.files import PATCH_TOOL, WRITE_FILE_TOOL
from hermes.checkpoints.files import LocalSessionFiles
from hermes.config import Settings
from hermes.remote.agent import RemoteAgent
from hermes.remote.client import RemoteClient
from hermes.remote.sessions import RemoteSessions
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.app import HermesApp, make_app
from hermes.tui.widgets.tool_card import ToolCard

from ._remote_serve import KEY, ServeProcess, serve_env
from .conftest import send_turn, until, until_settled

ORIGINAL = "".join(f"line {n}\n" for n in range(1, 11))
LINE_6_CHANGED = ORIGINAL.replace("line 6\n", "line six\n")
PATCHED = LINE_6_CHANGED.replace("line 8", "line eight")


def script(upstream: ScriptedUpstream) -> None:
    """Overwrite changing line 6, patch line 8, write what the file already holds, create a file."""
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "f.txt", "content": LINE_6_CHANGED}, id="c1")]),
        tool_reply([call("patch", {"path": "f.txt", "old_string": "line 8", "new_string": "line eight"}, id="c2")]),
        tool_reply([call("write_file", {"path": "f.txt", "content": PATCHED}, id="c3")]),
        tool_reply([call("write_file", {"path": "new.txt", "content": "a\nb\n"}, id="c4")]),
        text_reply("Done."),
    )


def check_cards(cards: list[ToolCard]) -> None:
    overwrite, patched, same, created = cards
    assert overwrite.diff is not None
    assert "/dev/null" not in overwrite.diff
    changed = [line for line in overwrite.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["-line 6", "+line six"]
    assert "@@ -4,5 +4,5 @@" in overwrite.diff  # line 6 with two lines of context each side
    assert same.diff is None
    assert same.result.startswith("No change")
    assert same._details.title.startswith("no change")
    assert patched.diff is not None
    assert "@@ -6,5 +6,5 @@" in patched.diff and "-line 8" in patched.diff and "+line eight" in patched.diff
    assert "@@ -1 +1 @@" not in patched.diff
    assert created.diff is not None and created.diff.startswith("--- /dev/null")
    assert "+a" in created.diff and "+b" in created.diff


def cards_of(app: HermesApp) -> list[ToolCard]:
    return list(app.chat.transcript.query(ToolCard))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "f.txt").write_text(ORIGINAL)
    return path


@pytest.fixture
async def file_tui(settings: Settings, sessions: SqliteSessions, work: Path) -> AsyncIterator[Callable[..., HermesApp]]:
    agents = []

    def build(**kwargs: object) -> HermesApp:
        agent = build_agent(settings, sessions, tools=ToolRegistry([WRITE_FILE_TOOL, PATCH_TOOL]))
        agents.append(agent)
        files = LocalSessionFiles(sessions, settings.home)
        return make_app(agent, sessions, settings, cwd=str(work), files=files, **kwargs)  # type: ignore[arg-type]

    yield build
    for agent in agents:
        await agent.aclose()


async def test_cards_show_the_real_change_live_and_on_replay(
    file_tui: Callable[..., HermesApp], upstream: ScriptedUpstream, work: Path
) -> None:
    script(upstream)
    app = file_tui()
    async with app.run_test(size=(100, 40)) as pilot:
        await send_turn(pilot, "edit f.txt", timeout=30)
        await until_settled(pilot)
        assert (work / "f.txt").read_text() == PATCHED
        check_cards(cards_of(app))
        session_id = app.session_id
    replay = file_tui(session_id=session_id)
    async with replay.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: len(cards_of(replay)) == 4)
        await until_settled(pilot)
        check_cards(cards_of(replay))


async def test_cards_show_the_real_change_through_a_server(
    tmp_path: Path, upstream: ScriptedUpstream, work: Path
) -> None:
    script(upstream)
    server = ServeProcess(serve_env(tmp_path / "server-home", upstream), work)
    await server.start()
    clients: list[RemoteClient] = []

    def remote(session_id: str | None = None) -> HermesApp:
        client = RemoteClient(server.url, KEY)
        clients.append(client)
        sessions = RemoteSessions(client)
        settings = Settings(home=tmp_path / "client-home")
        return make_app(RemoteAgent(client), sessions, settings, remote=client.base_url, files=sessions,
                        session_id=session_id)  # fmt: skip

    try:
        app = remote()
        async with app.run_test(size=(100, 40)) as pilot:
            await send_turn(pilot, "edit f.txt", timeout=60)
            await until(pilot, lambda: len(cards_of(app)) == 4 and all(c.state == "done" for c in cards_of(app)))
            await until_settled(pilot)
            check_cards(cards_of(app))
            session_id = app.session_id
        replay = remote(session_id)
        async with replay.run_test(size=(100, 40)) as pilot:
            await until(pilot, lambda: len(cards_of(replay)) == 4, timeout=30)
            await until_settled(pilot)
            check_cards(cards_of(replay))
    finally:
        for client in clients:
            await client.aclose()
        await server.kill()


async def test_an_overwrite_of_binary_or_long_lines_keeps_the_result_small(tmp_path: Path) -> None:
    from hermes.agent.tools.base import ToolContext
    from hermes.agent.tools.files import MAX_DIFF_LINE, write_file

    ctx = ToolContext(session_id="s", cwd=tmp_path)
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01" * 1000)
    result = await write_file({"path": "blob.bin", "content": "text now\n"}, ctx)
    assert result.endswith("[diff not shown: the file held binary data before]")
    (tmp_path / "wide.txt").write_text("x" * 5000 + "\n")
    result = await write_file({"path": "wide.txt", "content": "y" * 5000 + "\n"}, ctx)
    assert max(len(line) for line in result.splitlines()) < MAX_DIFF_LINE + 40
    assert "more characters]" in result
