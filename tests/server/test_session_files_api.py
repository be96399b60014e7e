"""`POST /api/sessions/{id}/undo|redo` and `GET …/diff` over the real app, real git and the
real core tools (the server's tools work in its working directory: the test's git tree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes.agent.tools.registry import default_registry
from hermes.testing.upstream import call, text_reply, tool_reply


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository (a.txt, doomed.txt), the server's working directory."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (folder / "doomed.txt").write_text("bye\n")
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start")
    monkeypatch.chdir(folder)
    return folder


async def _edit(srv, upstream) -> None:
    upstream.enqueue(
        tool_reply([call("patch", {"path": "a.txt", "old_string": "beta", "new_string": "BETA"})]),
        tool_reply([call("terminal", {"command": "rm doomed.txt && echo n > n.txt"})]),
        text_reply("edited"),
    )
    resp = await srv.client.post("/api/sessions/s-files/chat", json={"message": "edit"}, headers=srv.auth)
    assert resp.status == 200, await resp.text()


async def test_undo_diff_redo_over_the_api(make_server, upstream, work):
    srv = await make_server(tools=default_registry(), yolo=True)
    created = await srv.client.post("/api/sessions", json={"id": "s-files"}, headers=srv.auth)
    assert created.status == 201, await created.text()
    await _edit(srv, upstream)
    assert (work / "a.txt").read_text() == "alpha\nBETA\ngamma\n"

    diff = await (await srv.client.get("/api/sessions/s-files/diff?turn=1", headers=srv.auth)).json()
    assert diff["turn"] == 1
    assert {f["path"]: (f["added"], f["removed"]) for f in diff["files"]} == {
        "a.txt": (1, 1), "doomed.txt": (0, 1), "n.txt": (1, 0),
    }  # fmt: skip
    fresh = work.parent / "fresh"
    subprocess.run(["git", "clone", "-q", str(work), str(fresh)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=fresh, input=diff["patch"], text=True, check=True)
    assert (fresh / "a.txt").read_text() == "alpha\nBETA\ngamma\n"

    (work / "n.txt").write_text("mine\n")
    refused = await srv.client.post("/api/sessions/s-files/undo", headers=srv.auth)
    assert refused.status == 409
    error = (await refused.json())["error"]
    assert (error["code"], error["paths"]) == ("files_changed", ["n.txt"])
    (work / "n.txt").write_text("n\n")

    undone = await srv.client.post("/api/sessions/s-files/undo", json={"turns": 1}, headers=srv.auth)
    assert undone.status == 200, await undone.text()
    assert sorted((await undone.json())["files"]) == ["a.txt", "doomed.txt", "n.txt"]
    assert (work / "a.txt").read_text() == "alpha\nbeta\ngamma\n" and (work / "doomed.txt").exists()
    page = await (await srv.client.get("/api/sessions/s-files/messages", headers=srv.auth)).json()
    assert page["data"] == []

    redone = await srv.client.post("/api/sessions/s-files/redo", headers=srv.auth)
    assert redone.status == 200
    assert (work / "a.txt").read_text() == "alpha\nBETA\ngamma\n" and not (work / "doomed.txt").exists()
    again = await srv.client.post("/api/sessions/s-files/redo", headers=srv.auth)
    assert (again.status, (await again.json())["error"]["code"]) == (409, "nothing_to_undo")

    deleted = await srv.client.delete("/api/sessions/s-files", headers=srv.auth)
    assert deleted.status == 200
    refs = subprocess.run(
        ["git", "for-each-ref"], cwd=next((srv.settings.home / "checkpoints").iterdir()),
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert refs == ""  # the session's snapshots went with it


async def test_undo_is_refused_while_a_run_is_active(make_server, upstream, work):
    srv = await make_server(tools=default_registry())
    await srv.client.post("/api/sessions", json={"id": "s-busy"}, headers=srv.auth)
    upstream.enqueue(text_reply("slow").stall_after(1))
    resp = await srv.client.post("/api/sessions/s-busy/chat/stream", json={"message": "one"}, headers=srv.auth)
    run_id = resp.headers["X-Hermes-Run-Id"]
    await resp.content.readline()
    refused = await srv.client.post("/api/sessions/s-busy/undo", headers=srv.auth)
    assert (refused.status, (await refused.json())["error"]["code"]) == (409, "run_already_active")
    await srv.client.post(f"/v1/runs/{run_id}/stop", headers=srv.auth)
    await resp.read()
