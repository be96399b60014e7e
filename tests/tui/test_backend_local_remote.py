"""The one backend (hermes/backend.py), local and remote, through the same tests.

`side` opens backends as every front end does (`open_backend`), either on this machine's
storage (SQLite in a temporary home, the scripted upstream as the model) or on a real
`hermes serve` process on loopback (a home of its own, the same upstream). Every test runs
both ways, so `--continue`, `--resume`, a new session, a turn's crash and `chat -q -c`
against the TUI's `-c` are checked to behave the same local and remote.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hermes.agent.events import TextDelta, TurnCompleted, TurnStarted
from hermes.agent.turn_handle import TurnCrashed
from hermes.agent.types import TurnRequest, TurnResult
from hermes.backend import Backend, NoSessionToContinue, open_backend, resolve_session
from hermes.config import Settings
from hermes.errors import NothingToUndo, SessionNotFound, UsageError
from hermes.testing.upstream import ScriptedUpstream, text_reply

from ._remote_serve import KEY, REPO, ServeProcess, serve_env
from .test_tui_launch import env_for, run_in_terminal


@dataclass
class Side:
    """One way to reach the sessions: `server` None is this machine's storage."""

    settings: Settings
    server: str | None
    key: str | None
    upstream: ScriptedUpstream

    @property
    def folder(self) -> Path:
        """Where the CLI runs (the local sessions' folder) and the server runs (the remote ones')."""
        return self.settings.home.parent / "work"

    def open(self) -> AbstractAsyncContextManager[Backend]:
        return open_backend(self.settings, self.server, self.key)

    def cli_args(self) -> list[str]:
        return ["--server", self.server, "--key", KEY] if self.server else []

    def cli_env(self) -> dict[str, str]:
        """A client process's environment: this side's home, the upstream as a local model."""
        env = env_for(self.settings.home, HERMES_BASE_URL=self.upstream.base_url, PYTHONPATH=str(REPO))
        return {k: v for k, v in env.items() if not k.startswith("API_SERVER_")}


@pytest.fixture(params=["local", "remote"])
async def side(request: pytest.FixtureRequest, tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[Side]:
    client_home = tmp_path / "home"
    (tmp_path / "work").mkdir()  # the folder the sessions belong to: the CLI's here, the server's there
    if request.param == "local":
        settings = Settings(
            home=client_home, base_url=upstream.base_url, model="scripted-model", api_key="x", sandbox="off"
        )
        yield Side(settings, None, None, upstream)
        return
    work = tmp_path / "work"
    process = await ServeProcess(serve_env(tmp_path / "server-home", upstream), work).start()
    try:
        yield Side(Settings(home=client_home), process.url, KEY, upstream)
    finally:
        await process.kill()
    assert not (client_home / "state.db").exists()  # a remote side opens nothing local


async def run_turn(backend: Backend, text: str, session_id: str | None) -> TurnResult:
    agent = await backend.open_agent()
    handle = agent.start(TurnRequest(input=text, session_id=session_id, source="cli"))
    async with handle:
        async for event in handle.events():
            if isinstance(event, TurnCompleted):
                assert event.result.status == "completed", event.result.error
    assert handle.result is not None
    return handle.result


async def test_new_continue_and_resume_pick_the_same_sessions(side: Side) -> None:
    side.upstream.enqueue(text_reply("First answer."), text_reply("Second answer."), text_reply("Third answer."))
    async with side.open() as backend:
        assert await resolve_session(backend.sessions) is None  # new: the first turn makes one
        with pytest.raises(NoSessionToContinue, match="no session to continue"):
            await resolve_session(backend.sessions, continue_last=True)
        first = (await run_turn(backend, "first", None)).session_id
        second = (await run_turn(backend, "second", None)).session_id
    assert first and second and first != second

    async with side.open() as backend:  # a later command
        assert await resolve_session(backend.sessions, continue_last=True) == second  # the newest
        assert await resolve_session(backend.sessions, resume=first) == first
        with pytest.raises(SessionNotFound):
            await resolve_session(backend.sessions, resume="no-such-session")
        with pytest.raises(UsageError, match="either --continue or --resume"):
            await resolve_session(backend.sessions, continue_last=True, resume=first)
        continued = await run_turn(backend, "third", await resolve_session(backend.sessions, resume=first))
    assert continued.session_id == first
    sent = [(m["role"], m["content"]) for m in side.upstream.requests[-1].messages if m["role"] != "system"]
    assert sent == [("user", "first"), ("assistant", "First answer."), ("user", "third")]  # the stored history


@pytest.mark.parametrize("side", ["remote"], indirect=True)  # locally, an unknown id is a new session's
async def test_a_remote_turn_that_cannot_start_raises_the_engines_crash_type(side: Side) -> None:
    async with side.open() as backend:
        agent = await backend.open_agent()
        handle = agent.start(TurnRequest(input="hi", session_id="no-such-session", source="cli"))
        async with handle:
            with pytest.raises(TurnCrashed) as crashed:
                async for _event in handle.events():
                    pass
        assert isinstance(crashed.value.cause, SessionNotFound)
        assert handle.result is None
    assert side.upstream.requests == []


async def test_the_backend_offers_files_and_a_model_flag(side: Side) -> None:
    side.upstream.enqueue(text_reply("ok"))
    async with open_backend(side.settings, side.server, side.key, model="other-model") as backend:
        assert backend.remote == (side.server is not None)
        assert backend.storage is None if backend.remote else backend.storage is not None
        agent = await backend.open_agent()
        assert agent is await backend.open_agent()  # built once
        assert agent.model == "other-model"
        result = await run_turn(backend, "hello", None)
        assert result.session_id
        with pytest.raises(NothingToUndo, match="nothing to redo"):  # the files' rules, where the files are
            await backend.files.redo(result.session_id)
    assert side.upstream.requests[0].body["model"] == "other-model"


async def chat_q(side: Side, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", "chat", *args, *side.cli_args(),
        env=side.cli_env(), cwd=side.folder, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_chat_q_continue_and_the_tuis_continue_pick_the_same_session(side: Side, tmp_path: Path) -> None:
    side.upstream.enqueue(text_reply("Older."), text_reply("Newest."), text_reply("Continued."))
    code, _, err = await chat_q(side, "-q", "an older errand")
    assert code == 0, err
    code, _, err = await chat_q(side, "-q", "the fjord weekend")
    assert code == 0, err
    async with side.open() as backend:
        newest = await backend.sessions.latest_session()
        older = (await backend.sessions.list_sessions())[-1]
    assert newest is not None and newest.id != older.id

    # The TUI's -c on a terminal: it opens the newest session and names it on exit.
    args = [sys.executable, "-m", "hermes", "chat", "--continue", *side.cli_args()]
    output = await asyncio.to_thread(run_in_terminal, args, side.cli_env(), side.folder, wait_for="fjord weekend")
    where = f" --server {side.server}" if side.server else ""
    assert f"Resume with: hermes chat{where} --resume {newest.id}" in output

    # chat -q -c: the same session, with its history.
    code, out, err = await chat_q(side, "-q", "and then?", "-c", "--json")
    assert code == 0, err
    assert json.loads(out.splitlines()[-1])["session_id"] == newest.id
    sent = [m["content"] for m in side.upstream.requests[-1].messages if m["role"] != "system"]
    assert sent == ["the fjord weekend", "Newest.", "and then?"]


async def test_continue_with_no_session_is_one_line_in_chat_q_and_the_tui(side: Side) -> None:
    for args in (["-q", "hello", "-c"], ["-c"]):
        code, out, err = await chat_q(side, *args)
        assert code == 1, err
        assert err.startswith(f"hermes: no session of this folder ({side.folder.resolve()}) to continue: ")
        assert err.count("\n") == 1
        assert out == ""
    assert side.upstream.requests == []
    if not side.server:
        assert os.path.exists(side.settings.home / "state.db")  # opened, found empty


async def test_leaving_a_turn_stops_it_here_and_leaves_the_servers_run_going(side: Side) -> None:
    """The one difference between a local and a remote turn: `aclose()` without a stop."""
    words = [f"w{i}" for i in range(40)]
    side.upstream.enqueue(text_reply(" ".join(words), chunk_delay=0.05))  # about 2 s
    async with side.open() as backend:
        agent = await backend.open_agent()
        handle = agent.start(TurnRequest(input="count", source="cli"))
        session_id = None
        async for event in handle.events():
            if isinstance(event, TurnStarted):
                session_id = event.session_id
            if isinstance(event, TextDelta):
                break  # the answer has started: leave
        await handle.aclose(grace=0 if side.server else 5.0)
        assert session_id is not None
        if side.server is None:
            assert handle.result is not None and handle.result.status == "interrupted"
            return
        assert handle.result is None  # the consumer left before the end
        answer = None
        for _ in range(300):  # the server's run goes on to its end (its draft grows meanwhile)
            answer = (await backend.sessions.get_messages(session_id))[-1].content
            if answer == " ".join(words):
                break
            await asyncio.sleep(0.1)
        assert answer == " ".join(words)
        assert (await backend.sessions.get_session(session_id)).end_reason != "interrupted"
