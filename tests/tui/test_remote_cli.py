"""`hermes chat -q --server` and `hermes sessions … --server` as subprocesses against a real
`hermes serve` (SQLite): the answer, continuing a session, the session commands, a wrong key.

The client processes get a home of their own with no storage of their own: whatever they
list or show comes from the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

from ._remote_serve import KEY, REPO, ServeProcess, serve_env


@pytest.fixture
async def serve(tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[ServeProcess]:
    work = tmp_path / "work"
    work.mkdir()
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream), work)
    await process.start()
    yield process
    await process.kill()


async def hermes(home: Path, *args: str, cwd: Path | None = None, **env: str) -> tuple[int, str, str]:
    """Run the CLI without a terminal (in `cwd`); the scripted upstream keeps serving meanwhile."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    base.update(HERMES_HOME=str(home), PYTHONPATH=str(REPO), **env)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", *args, env=base, cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_chat_q_and_sessions_commands_go_to_the_server(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    home = tmp_path / "client-home"
    remote = ("--server", serve.url, "--key", KEY)
    upstream.enqueue(text_reply("Remote **hello**."), text_reply("Still remote."))
    code, out, err = await hermes(home, "chat", "-q", "say hello", *remote)
    assert code == 0, err
    assert out == "Remote **hello**.\n"

    # -c continues the newest session of this folder: the server's sessions are its folder's.
    code, out, err = await hermes(home, "chat", "-q", "and again", "-c", *remote, cwd=tmp_path)
    assert code == 1 and "no session of this folder" in err and "--any-folder" in err
    code, out, err = await hermes(home, "chat", "-q", "and again", "-c", *remote, cwd=tmp_path / "work")
    assert code == 0, err
    assert out == "Still remote.\n"
    sent = [m["content"] for m in upstream.requests[-1].messages if m["role"] != "system"]
    assert sent == ["say hello", "Remote **hello**.", "and again"]  # the server's stored history

    # HERMES_SERVER_URL and API_SERVER_KEY instead of the flags
    code, out, err = await hermes(home, "sessions", "list", "--json", HERMES_SERVER_URL=serve.url, API_SERVER_KEY=KEY)
    assert code == 0, err
    (listed,) = json.loads(out)["data"]
    assert listed["source"] == "cli" and listed["message_count"] == 4
    session_id = listed["id"]

    code, out, err = await hermes(home, "sessions", "show", session_id, *remote)
    assert code == 0, err
    assert "say hello" in out and "Still remote." in out

    code, out, err = await hermes(home, "sessions", "rename", session_id, "Greetings", *remote)
    assert code == 0, err
    assert out.strip() == f"Renamed {session_id}: Greetings"

    code, out, err = await hermes(home, "sessions", "fork", session_id, "--json", *remote)
    assert code == 0, err
    fork = json.loads(out)
    assert fork["parent_session_id"] == session_id and fork["message_count"] == 4

    code, out, err = await hermes(home, "sessions", "search", "hello", "--json", *remote)
    assert code == 0, err
    assert {hit["session"]["id"] for hit in json.loads(out)["data"]} >= {session_id}

    code, out, err = await hermes(home, "sessions", "delete", fork["id"], "--yes", *remote)
    assert code == 0, err
    code, out, err = await hermes(home, "sessions", "list", *remote)
    assert code == 0, err
    assert session_id in out and fork["id"] not in out
    assert not (home / "state.db").exists()  # nothing local was opened


async def test_sessions_diff_undo_and_redo_act_on_the_servers_files(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    home, notes = tmp_path / "client-home", serve.cwd / "notes.txt"
    remote = ("--server", serve.url, "--key", KEY)
    notes.write_text("old\n")
    upstream.enqueue(tool_reply([call("write_file", {"path": "notes.txt", "content": "new\n"})]), text_reply("Done."))
    code, out, err = await hermes(home, "chat", "-q", "rewrite the notes", "--json", *remote)
    assert code == 0, err
    assert notes.read_text() == "new\n"
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["usage"]["input_tokens"] > 0
    assert result["cost_usd"] is None  # scripted-model has no price here
    code, out, err = await hermes(home, "sessions", "list", "--json", *remote)
    (listed,) = json.loads(out)["data"]
    session_id = listed["id"]

    code, out, err = await hermes(home, "sessions", "diff", session_id, *remote)
    assert code == 0, err
    assert out.startswith("diff --git a/notes.txt b/notes.txt") and "-old\n+new\n" in out, out

    notes.write_text("edited on the server\n")
    code, out, err = await hermes(home, "sessions", "undo", session_id, *remote)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "not overwritten: notes.txt" in err, err
    assert notes.read_text() == "edited on the server\n"  # refused: nothing changed

    code, out, err = await hermes(home, "sessions", "undo", session_id, "--force", "--json", *remote)
    assert code == 0, err
    undone = json.loads(out)
    assert undone["object"] == "undo" and undone["files"] == ["notes.txt"] and len(undone["turns"]) == 1
    assert notes.read_text() == "old\n"

    code, out, err = await hermes(home, "sessions", "redo", session_id, *remote)
    assert code == 0, err
    assert out == f"Redid 1 turn of {session_id}\n  restored notes.txt\n"
    assert notes.read_text() == "new\n"
    code, out, err = await hermes(home, "sessions", "redo", session_id, *remote)
    assert code == 1 and "nothing to redo" in err, err
    assert not (home / "state.db").exists()  # nothing local was opened


async def test_a_wrong_key_is_one_line_and_exit_1(serve: ServeProcess, tmp_path: Path) -> None:
    home = tmp_path / "client-home"
    for args in (("chat", "-q", "hi"), ("chat",), ("sessions", "list")):
        code, out, err = await hermes(home, *args, "--server", serve.url, "--key", "wrong")
        assert code == 1, (args, err)
        assert out == ""
        assert err.count("\n") == 1 and "refused the key (401)" in err, (args, err)


async def test_an_unreachable_server_or_a_local_only_flag_is_one_line(tmp_path: Path) -> None:
    code, out, err = await hermes(tmp_path / "home", "chat", "-q", "hi", "--server", "http://127.0.0.1:9")
    assert code == 1
    assert err.count("\n") == 1 and "cannot reach the hermes server at http://127.0.0.1:9" in err, err
    code, out, err = await hermes(tmp_path / "home", "chat", "-q", "hi", "--yolo", "--server", "http://127.0.0.1:9")
    assert code == 2
    assert err.count("\n") == 1 and "--yolo does not reach a server" in err, err


async def test_sigint_stops_the_run_on_the_server_and_exits_130(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    # 2000 words at 0.05 s each: the answer cannot finish on its own within the test.
    upstream.enqueue(text_reply(" ".join(f"w{i}" for i in range(2000)), chunk_delay=0.05))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    base.update(HERMES_HOME=str(tmp_path / "client-home"), PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", "chat", "-q", "count", "--server", serve.url, "--key", KEY,
        env=base, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    first = await asyncio.wait_for(proc.stdout.readexactly(3), 60)  # the answer has started
    assert first == b"w0 "
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err
    assert err.decode().endswith("hermes: interrupted\n") and "Traceback" not in err.decode()
    remote = ("--server", serve.url, "--key", KEY)
    code, listed, err_list = await hermes(tmp_path / "client-home", "sessions", "list", "--json", *remote)
    assert code == 0, err_list
    (session,) = json.loads(listed)["data"]
    assert session["end_reason"] == "interrupted"  # the server's run was stopped, not left running
