"""Modes and `!` through a real `hermes serve`: `chat -q --mode plan --server` and the TUI's
plan mode reach the server's turn (writes refused, the model told), an unknown mode is a 400
with an OpenAI-style error, and the TUI refuses `!` commands over a server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from hermes.agent.modes import PLAN_NOTE
from hermes.config import Settings
from hermes.remote.agent import RemoteAgent
from hermes.remote.client import RemoteClient
from hermes.remote.sessions import RemoteSessions
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply
from hermes.tui.app import make_app
from hermes.tui.widgets.notice import Notice

from ._remote_serve import KEY, ServeProcess, serve_env
from .conftest import send_turn, type_and_send, until
from .test_remote_cli import hermes


@pytest.fixture
async def serve(tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[ServeProcess]:
    work = tmp_path / "work"
    work.mkdir()
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream), work)
    await process.start()
    yield process
    await process.kill()


async def test_chat_q_plan_mode_over_the_server(serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path):
    notes = serve.cwd / "notes.txt"
    notes.write_text("alpha\n")
    upstream.enqueue(
        tool_reply(
            [
                call("write_file", {"path": "notes.txt", "content": "pwned"}, id="w"),
                call("terminal", {"command": "git commit -am pwned"}, id="t"),
            ]
        ),
        text_reply("The plan."),
        text_reply("Done in default mode."),
    )
    remote = ("--server", serve.url, "--key", KEY)
    code, out, err = await hermes(tmp_path / "client-home", "chat", "-q", "fix it", "--mode", "plan", *remote)
    assert code == 0, err
    assert out == "The plan.\n"
    assert notes.read_text() == "alpha\n"
    assert upstream.requests[0].messages[-1] == {"role": "user", "content": f"fix it\n\n{PLAN_NOTE}"}
    results = {m["tool_call_id"]: m["content"] for m in upstream.requests[1].messages if m["role"] == "tool"}
    assert results["w"].startswith("DENIED: plan mode is on") and results["t"].startswith("DENIED: plan mode is on")
    # The next turn without --mode is a default turn: no note.
    # (a remote session records the server's folder, so -c names --any-folder)
    code, out, err = await hermes(tmp_path / "client-home", "chat", "-q", "go", "-c", "--any-folder", *remote)
    assert code == 0, err
    assert upstream.requests[-1].messages[-1] == {"role": "user", "content": "go"}


async def test_an_unknown_mode_is_a_400_on_runs_and_session_chat(serve: ServeProcess):
    headers = {"Authorization": f"Bearer {KEY}"}
    async with aiohttp.ClientSession(serve.url, headers=headers) as http:
        for body in ({"input": "hi", "mode": "yolo"}, {"input": "hi", "mode": 3}):
            async with http.post("/v1/runs", json=body) as response:
                assert response.status == 400
                error = (await response.json())["error"]
                assert error["code"] == "invalid_mode" and error["param"] == "mode"
                assert "default, accept-edits, plan" in error["message"]
        async with http.post("/api/sessions", json={}) as response:
            assert response.status in (200, 201), await response.text()
            session_id = (await response.json())["session"]["id"]
        for path in ("chat", "chat/stream"):
            async with http.post(f"/api/sessions/{session_id}/{path}", json={"message": "hi", "mode": "Plan!"}) as r:
                assert r.status == 400
                error = (await r.json())["error"]
                assert error["code"] == "invalid_mode" and error["type"] == "invalid_request_error"


async def test_the_tui_over_a_server_sends_plan_mode_and_refuses_shell_commands(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    write = call("write_file", {"path": "x.txt", "content": "pwned"}, id="w")
    upstream.enqueue(tool_reply([write]), text_reply("Plan."))
    client = RemoteClient(serve.url, KEY)
    sessions = RemoteSessions(client)
    here = tmp_path / "client-folder"
    here.mkdir()
    settings = Settings(home=tmp_path / "client-home", tool_stall_warning=0.3)
    app = make_app(RemoteAgent(client), sessions, settings, remote=client.base_url, files=sessions, cwd=str(here))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("shift+tab", "shift+tab")
            await until(pilot, lambda: app.chat.mode == "plan")
            await send_turn(pilot, "make x", timeout=30)
            assert upstream.requests[0].messages[-1]["content"] == f"make x\n\n{PLAN_NOTE}"
            results = [m["content"] for m in upstream.requests[1].messages if m["role"] == "tool"]
            assert results[0].startswith("DENIED: plan mode is on") and not (serve.cwd / "x.txt").exists()
            await type_and_send(pilot, "!touch made.txt")
            await until(
                pilot, lambda: any("not run with --server" in n.text for n in app.chat.transcript.query(Notice))
            )
            assert not (here / "made.txt").exists() and not (serve.cwd / "made.txt").exists()
            assert len(upstream.requests) == 2  # the refused `!` made no model call
    finally:
        await client.aclose()
