"""Custom commands and skills through a real `hermes serve` (`--server`): the TUI and `chat -q`.

Commands are expanded on the client, from the client's folder; skills are the server's:
its agent lists the skills of the server's own folder, and the client lists none.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.config import Settings
from hermes.remote.agent import RemoteAgent
from hermes.remote.client import RemoteClient
from hermes.remote.sessions import RemoteSessions
from hermes.testing.upstream import ScriptedUpstream, text_reply
from hermes.tui.app import make_app
from hermes.tui.extension_commands import REMOTE_SKILLS
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.user_message import UserMessage

from ._remote_serve import KEY, REPO, ServeProcess, serve_env
from .conftest import type_and_send, until, until_settled


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    return folder


@pytest.fixture
def client_project(tmp_path: Path, user_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(user_home))
    folder = tmp_path / "client-project"
    (folder / ".git").mkdir(parents=True)
    write(folder / ".hermes/commands/review.md", "---\ndescription: Review a file\n---\nReview $1 closely.\n")
    return folder


@pytest.fixture
async def serve(tmp_path: Path, upstream: ScriptedUpstream, user_home: Path) -> AsyncIterator[ServeProcess]:
    workdir = tmp_path / "server-work"
    (workdir / ".git").mkdir(parents=True)
    write(workdir / ".hermes/skills/server-skill/SKILL.md",
          "---\nname: server-skill\ndescription: Only the server has it.\n---\nSERVER-BODY\n")  # fmt: skip
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream, HOME=str(user_home)), workdir)
    await process.start()
    yield process
    await process.kill()


async def test_tui_expands_a_client_command_and_the_server_lists_its_skills(
    serve: ServeProcess, upstream: ScriptedUpstream, client_project: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("Looks fine."))
    async with RemoteClient(serve.url, KEY) as client:
        sessions = RemoteSessions(client)
        settings = Settings(home=tmp_path / "client-home")
        app = make_app(RemoteAgent(client), sessions, settings, remote=client.base_url, files=sessions,
                       cwd=str(client_project))  # fmt: skip
        async with app.run_test(size=(110, 32)) as pilot:
            app.chat.chat_input.insert("/rev")
            await until(pilot, lambda: app.chat.menu.is_open)
            assert [c.name for c in app.chat.menu._commands] == ["review"]
            app.chat.chat_input.clear()
            await type_and_send(pilot, "/review app.py")
            await until(pilot, lambda: len(upstream.requests) == 1, timeout=30)
            await until(pilot, lambda: not app.chat.turns.turn_running, timeout=30)
            await until_settled(pilot)
            (shown,) = app.chat.transcript.query(UserMessage)
            assert shown.text == "Review app.py closely."
            assert shown.origin is not None and shown.origin.startswith("/review app.py  (command: ")
            await type_and_send(pilot, "/skills")
            await until(pilot, lambda: any(n.text == "" for n in app.chat.transcript.query(Notice)))
            await until_settled(pilot)
            shown_notices = [str(n.render()) for n in app.chat.transcript.query(Notice)]
            assert any(REMOTE_SKILLS in text for text in shown_notices)
    request = upstream.requests[0]
    assert request.messages[-1] == {"role": "user", "content": "Review app.py closely."}
    system = request.messages[0]["content"]
    assert "- server-skill: Only the server has it." in system and "SERVER-BODY" not in system
    assert "skill" in request.tool_names


async def test_chat_q_over_the_server_expands_the_clients_command(
    serve: ServeProcess, upstream: ScriptedUpstream, client_project: Path, tmp_path: Path, user_home: Path
) -> None:
    upstream.enqueue(text_reply("Done."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(tmp_path / "client-home"), PYTHONPATH=str(REPO), HOME=str(user_home))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", "chat", "-q", "/review main.py", "--server", serve.url, "--key", KEY,
        env=env, cwd=client_project, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode() == "Done.\n"
    assert upstream.requests[-1].messages[-1] == {"role": "user", "content": "Review main.py closely."}
    assert "(command: " in err.decode()
