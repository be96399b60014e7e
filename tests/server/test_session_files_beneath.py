"""`POST /api/sessions/{id}/undo|redo` against a hostile repository: after a turn edited
`d/x`, `d/` became a symlink to a folder outside (hidden by `.git/info/exclude`). Over the
real app on loopback, undo, forced undo and redo answer 409 `restore_refused` naming the
path, and nothing outside is written or deleted. With openat2 and with the fallback walk."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes import beneath
from hermes.agent.tools.registry import default_registry
from hermes.errors import RestoreRefused
from hermes.remote.client import RemoteClient
from hermes.remote.sessions import RemoteSessions
from hermes.testing.upstream import call, text_reply, tool_reply


@pytest.fixture(params=["openat2", "fallback"])
def beneath_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(beneath, "USE_OPENAT2", request.param == "openat2")
    return str(request.param)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository, the server's working directory."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start"]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)  # fmt: skip
    monkeypatch.chdir(folder)
    return folder


def _swap(work: Path, outside: Path) -> None:
    os.rename(work / "d", work / "d.moved") if (work / "d").exists() else None
    os.symlink(outside, work / "d")
    with (work / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("d\n")


def _unswap(work: Path) -> None:
    os.unlink(work / "d")
    if (work / "d.moved").exists():
        os.rename(work / "d.moved", work / "d")
    exclude = work / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text().replace("d\n", ""))


async def _refused(srv, verb: str, body: dict[str, object]) -> None:
    resp = await srv.client.post(f"/api/sessions/s-evil/{verb}", json=body, headers=srv.auth)
    text = await resp.text()
    assert resp.status == 409, text
    error = (await resp.json())["error"]
    assert (error["code"], error["paths"]) == ("restore_refused", ["d/x"])
    assert "d/x (its folder d is a symlink)" in error["message"] and "Traceback" not in text


async def test_undo_and_redo_through_a_symlinked_folder_are_refused(
    beneath_mode, make_server, upstream, work, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("victim\n")
    srv = await make_server(tools=default_registry(), yolo=True)
    created = await srv.client.post("/api/sessions", json={"id": "s-evil"}, headers=srv.auth)
    assert created.status == 201, await created.text()
    upstream.enqueue(tool_reply([call("write_file", {"path": "d/x", "content": "new\n"})]), text_reply("ok"))
    resp = await srv.client.post("/api/sessions/s-evil/chat", json={"message": "edit"}, headers=srv.auth)
    assert resp.status == 200, await resp.text()

    _swap(work, outside)
    await _refused(srv, "undo", {})
    await _refused(srv, "undo", {"force": True})  # would have deleted outside/x
    url = str(srv.client.make_url("/")).rstrip("/")
    key = srv.settings.server_key
    async with RemoteClient(url, key) as client:  # what `--server` front ends get: the same refusal
        with pytest.raises(RestoreRefused) as remote:
            await RemoteSessions(client).undo("s-evil", force=True)
    assert remote.value.paths == ["d/x"] and "its folder d is a symlink" in str(remote.value)
    assert sorted(os.listdir(outside)) == ["x"] and (outside / "x").read_text() == "victim\n"

    _unswap(work)
    undone = await srv.client.post("/api/sessions/s-evil/undo", headers=srv.auth)
    assert undone.status == 200, await undone.text()
    (outside / "x").unlink()
    _swap(work, outside)
    await _refused(srv, "redo", {})  # would have written outside/x
    await _refused(srv, "redo", {"force": True})
    assert os.listdir(outside) == []
