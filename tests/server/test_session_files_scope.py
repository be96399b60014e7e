"""The server's file API as an attacker uses it: a session of another folder (made by a real
`hermes chat -q` in the same database), a huge turn, and bad `force`/`turns` values, over
the real app on loopback with real git and the real core tools."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _api_harness import SERVER_KEY, MakeServer, Server

from hermes.agent.tools.registry import default_registry
from hermes.cli.sessions_undo import TRUNCATED_LINE
from hermes.config import Settings
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _repo(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start")
    return folder


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's working directory (a git repository)."""
    folder = _repo(tmp_path / "work", {"a.txt": "alpha\n"})
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """Another folder on the machine, where a user runs `hermes chat`."""
    return _repo(tmp_path / "elsewhere", {"victim.txt": "original\n"})


async def hermes(*args: str, home: Path, cwd: Path, upstream: ScriptedUpstream | None = None,
                 env: dict[str, str] | None = None) -> tuple[int, str, str]:  # fmt: skip
    """`python -m hermes ARGS` as a subprocess (the event loop keeps serving the upstream)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    environ.update(HERMES_HOME=str(home), HERMES_STREAM_STALE_TIMEOUT="5", **(env or {}))
    if upstream is not None:
        environ.update(HERMES_BASE_URL=upstream.base_url, HERMES_MODEL=upstream.model)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", *args, cwd=cwd, env=environ,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def foreign_session(srv: Server, upstream: ScriptedUpstream, elsewhere: Path) -> str:
    """A `hermes chat -q` session in `elsewhere` (same HERMES_HOME, same state.db) that changed victim.txt."""
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "victim.txt", "content": "changed by chat\n"})]),
        text_reply("done"),
    )
    code, _, err = await hermes("chat", "-q", "edit", "--yolo", home=srv.settings.home, cwd=elsewhere,
                                upstream=upstream)  # fmt: skip
    assert code == 0, err
    assert (elsewhere / "victim.txt").read_text() == "changed by chat\n"
    (session,) = [s for s in srv.sessions.list_sessions() if s.source == "cli"]
    return str(session.id)


async def _error(resp: Any) -> dict[str, Any]:
    data = await resp.json()
    assert set(data) == {"error"}
    return dict(data["error"])


async def test_a_session_of_another_folder_is_not_found(make_server: MakeServer, upstream: ScriptedUpstream,
                                                        work: Path, elsewhere: Path) -> None:  # fmt: skip
    srv = await make_server(tools=default_registry(), yolo=True, server_key=SERVER_KEY)
    sid = await foreign_session(srv, upstream, elsewhere)
    unknown = "no-such-session"
    for method, suffix, body in (
        ("GET", "/diff", None), ("POST", "/undo", {"force": True}), ("POST", "/undo", None),
        ("POST", "/redo", {"force": True}),
    ):  # fmt: skip
        foreign = await srv.client.request(method, f"/api/sessions/{sid}{suffix}", json=body, headers=srv.auth)
        missing = await srv.client.request(method, f"/api/sessions/{unknown}{suffix}", json=body, headers=srv.auth)
        assert (foreign.status, missing.status) == (404, 404), suffix
        theirs, absent = await _error(foreign), await _error(missing)
        assert theirs == {**absent, "message": absent["message"].replace(unknown, sid)}
        assert theirs["code"] == "session_not_found"
    assert (elsewhere / "victim.txt").read_text() == "changed by chat\n"  # nothing reverted
    assert len(srv.sessions.get_messages(sid)) > 0  # nor hidden
    # The same session is the user's to undo locally, where its files are.
    code, _, err = await hermes("sessions", "undo", sid, home=srv.settings.home, cwd=elsewhere)
    assert code == 0, err
    assert (elsewhere / "victim.txt").read_text() == "original\n"


async def test_a_writable_root_is_the_servers_own(make_server: MakeServer, upstream: ScriptedUpstream,
                                                  work: Path, elsewhere: Path) -> None:  # fmt: skip
    srv = await make_server(tools=default_registry(), yolo=True, writable_roots=(str(elsewhere),))
    sid = await foreign_session(srv, upstream, elsewhere)
    diff = await srv.client.get(f"/api/sessions/{sid}/diff", headers=srv.auth)
    assert diff.status == 200, await diff.text()
    data = await diff.json()
    assert [f["path"] for f in data["files"]] == ["victim.txt"] and data["truncated"] is False
    undone = await srv.client.post(f"/api/sessions/{sid}/undo", headers=srv.auth)
    assert undone.status == 200, await undone.text()
    assert (elsewhere / "victim.txt").read_text() == "original\n"


async def test_a_session_that_later_ran_in_another_folder_is_not_found(
    make_server: MakeServer, upstream: ScriptedUpstream, work: Path, elsewhere: Path
) -> None:
    """A resumed session runs in its own folder (so the server keeps serving it); a session
    whose turn ran in another folder is not the server's."""
    srv = await make_server(tools=default_registry(), yolo=True)
    await srv.client.post("/api/sessions", json={"id": "s-mixed"}, headers=srv.auth)
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "A\n"})]), text_reply("ok"))
    resp = await srv.client.post("/api/sessions/s-mixed/chat", json={"message": "edit"}, headers=srv.auth)
    assert resp.status == 200, await resp.text()
    assert (await srv.client.get("/api/sessions/s-mixed/diff", headers=srv.auth)).status == 200
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "victim.txt", "content": "changed by chat\n"})]), text_reply("ok")
    )
    code, _, err = await hermes("chat", "-q", "more", "--yolo", "--resume", "s-mixed", home=srv.settings.home,
                                cwd=elsewhere, upstream=upstream)  # fmt: skip
    assert code == 0, err
    assert (work / "victim.txt").read_text() == "changed by chat\n"  # the session's folder, not the caller's
    assert (elsewhere / "victim.txt").read_text() == "original\n"
    assert (await srv.client.get("/api/sessions/s-mixed/diff?turn=2", headers=srv.auth)).status == 200
    # A session whose turn ran elsewhere (started by `hermes chat` in another folder).
    upstream.enqueue(tool_reply([call("write_file", {"path": "other.txt", "content": "O\n"})]), text_reply("ok"))
    code, _, err = await hermes("chat", "-q", "edit there", "--yolo", home=srv.settings.home,
                                cwd=elsewhere, upstream=upstream)  # fmt: skip
    assert code == 0, err
    sessions = (await (await srv.client.get("/api/sessions", headers=srv.auth)).json())["data"]
    (there,) = [s["id"] for s in sessions if s["id"] != "s-mixed"]
    for method, suffix in (("GET", "/diff?turn=1"), ("POST", "/undo"), ("POST", "/redo")):
        resp = await srv.client.request(method, f"/api/sessions/{there}{suffix}", headers=srv.auth)
        assert resp.status == 404, suffix
    assert (elsewhere / "other.txt").read_text() == "O\n"
    assert (work / "a.txt").read_text() == "A\n"


# ---- the diff cap ----------------------------------------------------------------------------

BIG = "seq 1 900000 > big.txt"
"""About 6.2 MB of new lines: a turn diff of about 7 MB."""


async def _big_turn(srv: Server, upstream: ScriptedUpstream, session: str) -> None:
    await srv.client.post("/api/sessions", json={"id": session}, headers=srv.auth)
    upstream.enqueue(tool_reply([call("terminal", {"command": BIG})]), text_reply("made it big"))
    resp = await srv.client.post(f"/api/sessions/{session}/chat", json={"message": "big"}, headers=srv.auth)
    assert resp.status == 200, await resp.text()


def test_the_diff_cap_is_a_setting_of_five_megabytes(tmp_path: Path) -> None:
    assert Settings().max_diff_bytes == 5 * 1024 * 1024
    env = {"HERMES_HOME": str(tmp_path), "HERMES_MAX_DIFF_BYTES": "1234"}
    assert Settings.load(env=env).max_diff_bytes == 1234
    (tmp_path / "config.toml").write_text("max_diff_bytes = 4321\n")
    assert Settings.load(env={"HERMES_HOME": str(tmp_path)}).max_diff_bytes == 4321


async def test_a_huge_turn_diff_is_cut_at_the_cap(make_server: MakeServer, upstream: ScriptedUpstream,
                                                  work: Path) -> None:  # fmt: skip
    cap = 2_000_000
    srv = await make_server(tools=default_registry(), yolo=True, server_key=SERVER_KEY, max_diff_bytes=cap,
                            checkpoint_max_file_kb=0)  # fmt: skip
    await _big_turn(srv, upstream, "s-big")
    assert (work / "big.txt").stat().st_size > 6_000_000
    resp = await srv.client.get("/api/sessions/s-big/diff", headers=srv.auth)
    assert resp.status == 200
    raw = await resp.read()
    assert len(raw) <= cap + 4096  # the patch, the file list and the envelope
    data = json.loads(raw)
    assert data["truncated"] is True
    assert data["patch"].startswith("diff --git a/big.txt b/big.txt")
    assert cap - 100 <= len(json.dumps(data["patch"])) - 2 <= cap  # its JSON form fits the cap, just
    assert len(data["patch"]) < cap
    assert data["files"] == [{"path": "big.txt", "added": 900000, "removed": 0, "binary": False}]

    # The CLI, remote: the same cut, and a last line saying so.
    code, out, err = await hermes("sessions", "diff", "s-big", "--server", srv.base_url, "--key", SERVER_KEY,
                                  home=srv.settings.home.parent / "client-home", cwd=work)  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[-1] == TRUNCATED_LINE
    assert len(out.encode()) <= cap + len(TRUNCATED_LINE) + 2


async def test_a_small_diff_is_whole(make_server: MakeServer, upstream: ScriptedUpstream, work: Path) -> None:
    srv = await make_server(tools=default_registry(), yolo=True)
    await srv.client.post("/api/sessions", json={"id": "s-small"}, headers=srv.auth)
    upstream.enqueue(tool_reply([call("write_file", {"path": "a.txt", "content": "beta\n"})]), text_reply("ok"))
    await srv.client.post("/api/sessions/s-small/chat", json={"message": "edit"}, headers=srv.auth)
    data = await (await srv.client.get("/api/sessions/s-small/diff", headers=srv.auth)).json()
    assert data["truncated"] is False
    assert "-alpha\n+beta\n" in data["patch"]


async def test_the_local_cli_cuts_at_its_own_cap(make_server: MakeServer, upstream: ScriptedUpstream,
                                                 work: Path) -> None:  # fmt: skip
    srv = await make_server(tools=default_registry(), yolo=True, checkpoint_max_file_kb=0)
    await _big_turn(srv, upstream, "s-local")
    code, out, err = await hermes("sessions", "diff", "s-local", home=srv.settings.home, cwd=work,
                                  env={"HERMES_MAX_DIFF_BYTES": "100000"})  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[-1] == TRUNCATED_LINE
    assert len(out.encode()) <= 100_000 + len(TRUNCATED_LINE) + 2


# ---- strict inputs ---------------------------------------------------------------------------

BAD_FORCE = ['"yes"', '"true"', "1", "0", "1.0", "[]", "{}"]
BAD_TURNS = ["1e9", "1.0", '"1"', "0", "-1", "1001", "true", "false", "2.5", "[1]", str(2**70)]


@pytest.mark.parametrize("path", ["/undo", "/redo"])
@pytest.mark.parametrize("value", BAD_FORCE)
async def test_force_must_be_a_json_boolean(server: Server, work: Path, path: str, value: str) -> None:
    await server.client.post("/api/sessions", json={"id": "s-in"})
    resp = await server.client.post(f"/api/sessions/s-in{path}", data=f'{{"force": {value}}}',
                                    headers={"Content-Type": "application/json"})  # fmt: skip
    assert resp.status == 400, await resp.text()
    error = await _error(resp)
    assert (error["param"], error["code"], error["type"]) == ("force", "invalid_force", "invalid_request_error")
    assert "'force'" in error["message"]


@pytest.mark.parametrize("value", BAD_TURNS)
async def test_turns_must_be_an_integer_from_1_to_1000(server: Server, work: Path, value: str) -> None:
    await server.client.post("/api/sessions", json={"id": "s-in"})
    resp = await server.client.post("/api/sessions/s-in/undo", data=f'{{"turns": {value}}}',
                                    headers={"Content-Type": "application/json"})  # fmt: skip
    assert resp.status == 400, await resp.text()
    error = await _error(resp)
    assert (error["param"], error["code"]) == ("turns", "invalid_turns")
    assert error["message"] == "'turns' must be an integer from 1 to 1000"


@pytest.mark.parametrize("body", ['{"turns": 1000, "force": false}', '{"turns": 1}', '{"force": true}', "{}", ""])
async def test_good_inputs_pass(server: Server, work: Path, body: str) -> None:
    await server.client.post("/api/sessions", json={"id": "s-in"})
    resp = await server.client.post("/api/sessions/s-in/undo", data=body,
                                    headers={"Content-Type": "application/json"} if body else {})  # fmt: skip
    assert resp.status == 409  # past validation: nothing to undo
    assert (await _error(resp))["code"] == "nothing_to_undo"
