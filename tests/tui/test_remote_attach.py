"""`hermes chat -q --server` with an `@` mention and an image: the files are read on the
client's machine (the server's folder does not have them) and the server's model receives
them; the server stores them with the message."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.attachment_blocks import split
from hermes.testing.upstream import ScriptedUpstream, text_reply

from ._remote_serve import KEY, REPO, ServeProcess, serve_env

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 30


@pytest.fixture
async def serve(tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[ServeProcess]:
    work = tmp_path / "server-work"
    work.mkdir()
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream), work)
    await process.start()
    yield process
    await process.kill()


async def hermes(home: Path, cwd: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", *args, cwd=cwd,
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_mention_and_image_are_read_on_the_client_and_reach_the_servers_model(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    client = tmp_path / "client-work"
    client.mkdir()
    (client / "notes.md").write_text("only on the client\n")
    (client / "shot.png").write_bytes(PNG)
    (client / ".env").write_text("TOKEN=ZQX-SECRET\n")
    remote = ("--server", serve.url, "--key", KEY)
    upstream.enqueue(text_reply("Read it."), text_reply("Still here."))
    code, out, err = await hermes(
        tmp_path / "client-home", client, "chat", "-q", "summarise @notes.md and @.env", "-i", "shot.png", *remote
    )
    assert code == 0, err
    assert "@.env was not attached" in err
    (sent,) = [m for m in upstream.requests[0].messages if m["role"] == "user"]
    text_part, image_part = sent["content"]
    typed, (attachment,) = split(text_part["text"])
    assert typed == "summarise @notes.md and @.env"
    assert attachment.path == "notes.md" and attachment.body == "only on the client\n"
    assert image_part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert "ZQX-SECRET" not in json.dumps(upstream.requests[0].messages)

    # the server stored it: the next turn's history carries it once, and `sessions show` folds it
    code, out, err = await hermes(
        tmp_path / "client-home", client, "chat", "-q", "more?", "-c", "--any-folder", *remote
    )  # a remote session records the server's folder
    assert code == 0, err
    history = json.dumps(upstream.requests[1].messages)
    assert history.count("only on the client") == 1 and history.count("data:image/png") == 1
    code, out, err = await hermes(tmp_path / "client-home", client, "sessions", "list", "--json", *remote)
    session_id = json.loads(out)["data"][0]["id"]
    code, out, err = await hermes(tmp_path / "client-home", client, "sessions", "show", session_id, *remote)
    assert code == 0, err
    assert "📎 notes.md · 1 line" in out and "🖼 image/png" in out


async def test_the_tui_through_a_server_sends_a_mention_and_an_image_read_on_the_client(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    from hermes.config import Settings
    from hermes.remote.agent import RemoteAgent
    from hermes.remote.client import RemoteClient
    from hermes.remote.sessions import RemoteSessions
    from hermes.tui.app import make_app
    from hermes.tui.widgets.attachment_card import AttachmentCard, ImageCard

    from .conftest import send_turn, until

    client_work = tmp_path / "tui-work"
    client_work.mkdir()
    (client_work / "plan.md").write_text("step one\n")
    (client_work / "pic.png").write_bytes(PNG)
    upstream.enqueue(text_reply("Got both."))
    client = RemoteClient(serve.url, KEY)
    try:
        sessions = RemoteSessions(client)
        settings = Settings(home=tmp_path / "tui-home", tool_stall_warning=0.3)
        app = make_app(
            RemoteAgent(client), sessions, settings, remote=client.base_url, files=sessions, cwd=str(client_work)
        )
        async with app.run_test(size=(100, 30)) as pilot:
            app.chat.chat_input.insert("/image pic.png")
            await pilot.press("escape", "enter")
            await until(pilot, lambda: len(app.chat.image_chips.images) == 1)
            await send_turn(pilot, "follow @plan.md", timeout=30)
            await until(pilot, lambda: len(app.chat.transcript.query(AttachmentCard)) == 1)
            assert len(app.chat.transcript.query(ImageCard)) == 1
    finally:
        await client.aclose()
    (sent,) = [m for m in upstream.requests[0].messages if m["role"] == "user"]
    text_part, image_part = sent["content"]
    typed, (attachment,) = split(text_part["text"])
    assert typed == "follow @plan.md" and attachment.body == "step one\n"
    assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
