"""Sessions belong to a folder, in the TUI: the status bar names it, a resumed session's
tools run in its own folder (said in the transcript), a session whose folder is gone or now
a link elsewhere is opened only when the user agrees to run it here, the picker starts on
this folder's sessions (Ctrl+A: all) with full ids, /status and /init. Local, in temporary
git folders, with the real engine and the scripted upstream; and through a real
`hermes serve` (the folder of its sessions is the server's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.tools.base import Tool, ToolContext
from hermes.backend import AmbiguousSessionId, NoSessionToContinue, resolve_session
from hermes.config import Settings
from hermes.remote.agent import RemoteAgent
from hermes.remote.client import RemoteClient
from hermes.remote.sessions import RemoteSessions
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.app import make_app
from hermes.tui.screens.folder_gone import FolderGoneDialog
from hermes.tui.screens.session_picker import SessionPicker
from hermes.tui.widgets.notice import Notice

from ._remote_serve import KEY, ServeProcess, serve_env
from .conftest import send_turn, type_and_send, until
from .test_backend_local_remote import Side, run_turn, side  # noqa: F401 - `side` is a fixture

SIZE = (110, 30)


def git_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)
    return path.resolve()


def notices(app: Any) -> list[str]:
    return [n.text for n in app.chat.transcript.query(Notice)]


@pytest.fixture
def where_tool() -> tuple[Tool, list[Path]]:
    """A tool that records the folder it ran in."""
    seen: list[Path] = []

    async def where(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(Path(ctx.cwd))
        return str(ctx.cwd)

    return Tool("where", "Say the working folder.", {"type": "object", "properties": {}}, where), seen


async def test_a_new_session_belongs_to_this_folder_and_the_bar_shows_it(make_tui, store, upstream, tmp_path):
    here = git_folder(tmp_path / "project")
    app = make_tui(cwd=str(here))
    upstream.enqueue(text_reply("hello"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.status_bar.folder == str(here))
        assert "▸ project" in str(app.chat.status_bar.render())
        await send_turn(pilot, "hi")
        assert store.get_session(app.chat.session_id).cwd == str(here)


async def test_resuming_a_session_of_another_folder_runs_its_tools_there(
    make_tui, store, upstream, tmp_path, where_tool
):
    tool, seen = where_tool
    theirs = git_folder(tmp_path / "theirs")
    here = git_folder(tmp_path / "here")
    record = store.create_session(source="tui", title="Theirs", cwd=str(theirs))
    app = make_tui(cwd=str(here), session_id=record.id, extra_tools=[tool])
    upstream.enqueue(tool_reply([call("where", {})]), text_reply("done"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: any("belongs to" in text for text in notices(app)))
        assert f"this session belongs to {theirs}: its tools run there, not in {here}" in notices(app)
        assert app.chat.status_bar.folder == str(theirs)
        await send_turn(pilot, "where are you")
        assert seen == [theirs]
        await pilot.press("ctrl+n")  # a new session belongs to this folder again
        await until(pilot, lambda: app.chat.cwd == str(here) and app.chat.status_bar.folder == str(here))


@pytest.mark.parametrize("how", ["symlink", "gone"])
async def test_a_session_whose_folder_is_gone_or_now_a_link_asks_first(
    make_tui, store, upstream, tmp_path, where_tool, how
):
    """Attack: the recorded folder was swapped for a link to somewhere else (or removed).
    Nothing runs there; refusing leaves the session unopened; agreeing runs it here."""
    tool, seen = where_tool
    theirs = git_folder(tmp_path / "theirs")
    here = git_folder(tmp_path / "here")
    elsewhere = git_folder(tmp_path / "elsewhere")
    record = store.create_session(source="tui", title="Moved", cwd=str(theirs))
    theirs.rename(tmp_path / "theirs-moved")
    if how == "symlink":
        theirs.symlink_to(elsewhere, target_is_directory=True)
    app = make_tui(cwd=str(here), session_id=record.id, extra_tools=[tool])
    upstream.enqueue(tool_reply([call("where", {})]), text_reply("done"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FolderGoneDialog))
        dialog = app.screen
        assert dialog.check.folder == str(theirs)
        assert ("is now a link to" if how == "symlink" else "no longer exists") in str(dialog.check.notice())
        await pilot.press("n")
        await until(pilot, lambda: any(text.startswith("not opened:") for text in notices(app)))
        assert app.chat.session_id is None and app.chat.cwd == str(here)

        await app.chat.open_session(record.id)
        await until(pilot, lambda: isinstance(app.screen, FolderGoneDialog))
        await pilot.press("y")
        await until(pilot, lambda: app.chat.session_id == record.id)
        assert app.chat.cwd == str(here)
        assert any(f"its tools run in this folder, {here}" in text for text in notices(app))
        await send_turn(pilot, "where are you")
    assert seen == [here]
    assert list(elsewhere.iterdir()) == [elsewhere / ".git"]  # nothing ran in the link's target


async def test_the_picker_starts_on_this_folders_sessions_and_shows_full_ids(make_tui, store, tmp_path):
    here = git_folder(tmp_path / "here")
    mine = store.create_session(source="tui", title="Mine", cwd=str(here), session_id="20260101_100000_aaaaaa")
    other = store.create_session(source="tui", title="Other", cwd="/srv/other", session_id="20260101_100000_bbbbbb")
    app = make_tui(cwd=str(here))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker) and bool(app.screen.sessions))
        picker = app.screen
        assert [s.id for s in picker.sessions] == [mine.id]
        assert mine.id in str(picker.results.get_option_at_index(0).prompt)  # the whole id, not the date
        await pilot.press("ctrl+a")
        await until(pilot, lambda: len(picker.sessions) == 2)
        labels = [str(picker.results.get_option_at_index(i).prompt) for i in range(2)]
        assert any(other.id in label and "/srv/other" in label for label in labels)
        await pilot.press("ctrl+a")
        await until(pilot, lambda: [s.id for s in picker.sessions] == [mine.id])


async def test_status_lists_the_chat_and_init_asks_for_agents_md(make_tui, upstream, tmp_path):
    here = git_folder(tmp_path / "here")
    app = make_tui(cwd=str(here))
    upstream.enqueue(text_reply("I will write it."))
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "/status")
        await until(pilot, lambda: any(text.startswith("model") for text in notices(app)))
        status = next(text for text in notices(app) if text.startswith("model"))
        lines = dict(line.split(None, 1) for line in status.splitlines())
        assert lines["model"] == "scripted-model" and lines["endpoint"] == upstream.base_url
        assert lines["folder"] == str(here) and lines["session"].startswith("new")
        assert "sandbox" in lines and "%" in lines["context"]
        await send_turn(pilot, "/init")
        prompt = upstream.requests[-1].messages[-1]["content"]
        assert "AGENTS.md" in prompt and str(here) in prompt
        await type_and_send(pilot, "/clear")
        await until(pilot, lambda: app.chat.session_id is None and "new session" in notices(app))


# ---- through a real server --------------------------------------------------------------


async def test_remote_the_server_model_is_named_at_once_and_the_session_folder_is_the_servers(
    upstream: ScriptedUpstream, tmp_path: Path
):
    work = git_folder(tmp_path / "work")
    process = await ServeProcess(serve_env(tmp_path / "server-home", upstream), work).start()
    client = RemoteClient(process.url, KEY)
    try:
        sessions = RemoteSessions(client)
        agent = RemoteAgent(client)
        await agent.load_server_model()
        assert agent.model == "scripted-model"
        settings = Settings(home=tmp_path / "client-home", tool_stall_warning=0.3)
        app = make_app(agent, sessions, settings, remote=client.base_url, files=sessions, cwd=str(tmp_path))
        upstream.enqueue(text_reply("remote hello"))
        async with app.run_test(size=SIZE) as pilot:
            assert "⚕ scripted-model" in str(app.chat.status_bar.render())  # before any turn
            await send_turn(pilot, "hi")
            record = await sessions.get_session(app.chat.session_id)
            assert record.cwd == str(work)  # the server runs the tools: its folder
            await app.chat.open_session(record.id)
            await until(pilot, lambda: app.chat.status_bar.folder == str(work))
            assert not any("belongs to" in text for text in notices(app))  # not checked here
            await pilot.press("ctrl+s")
            await until(pilot, lambda: isinstance(app.screen, SessionPicker) and bool(app.screen.sessions))
            assert app.screen.all_folders  # none of this client folder's: every folder's
            assert [s.id for s in app.screen.sessions] == [record.id]
    finally:
        await client.aclose()
        await process.kill()


async def test_continue_by_folder_and_id_prefixes_are_the_same_local_and_remote(
    side: Side,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    """`-c` narrows to a folder and `-r` takes a unique prefix, through `resolve_session`
    on this machine's storage and on a server's REST list (`?cwd=`, `?id_prefix=`)."""
    side.upstream.enqueue(text_reply("one"), text_reply("two"))
    async with side.open() as backend:
        first = (await run_turn(backend, "first", None)).session_id
        second = (await run_turn(backend, "second", None)).session_id
        record = await backend.sessions.get_session(first)
        folder = str((tmp_path / "work").resolve()) if side.server else os.path.realpath(os.getcwd())
        assert record.cwd == folder  # the server's folder remotely, this process's locally
        assert await resolve_session(backend.sessions, continue_last=True, cwd=folder) == second
        with pytest.raises(NoSessionToContinue, match="no session of this folder"):
            await resolve_session(backend.sessions, continue_last=True, cwd=str(tmp_path))
        assert await resolve_session(backend.sessions, continue_last=True) == second
        assert [s.id for s in await backend.sessions.list_sessions(cwd=folder)] == [second, first]
        assert await backend.sessions.count_sessions(cwd="/nowhere") == 0
        shared = os.path.commonprefix([first, second])
        assert await resolve_session(backend.sessions, resume=first[: len(shared) + 1]) == first
        with pytest.raises(AmbiguousSessionId) as ambiguous:
            await resolve_session(backend.sessions, resume=shared)
        assert sorted(ambiguous.value.candidates) == sorted([first, second])


async def test_a_first_prompt_is_sent_once_the_chat_is_up(make_tui, upstream, tmp_path):
    """`hermes chat "prompt"`: the TUI opens and sends it as if typed."""
    here = git_folder(tmp_path / "here")
    upstream.enqueue(text_reply("Started."))
    app = make_tui(cwd=str(here))
    app.first_prompt = "begin with this"
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.session_id is not None and not app.chat.turns.turn_running)
        await until(pilot, lambda: len(upstream.requests) == 1)
    assert upstream.requests[0].messages[-1]["content"] == "begin with this"
