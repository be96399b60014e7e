"""`hermes sessions undo|redo` (real subprocesses) against a hostile repository: after
`hermes chat -q` edited `d/x`, `d/` became a symlink to a folder outside, hidden by
`.git/info/exclude`. Undo, forced undo and redo exit 1 with one line naming the path, and
nothing outside is written or deleted. The subprocess runs with openat2 or with the
fallback walk forced (`hermes.beneath.USE_OPENAT2`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes import beneath
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

_RUN = (
    "import sys\n"
    "import hermes.beneath\n"
    "hermes.beneath.USE_OPENAT2 = {use}\n"
    "from hermes.cli.main import main\n"
    "sys.argv = ['hermes', *sys.argv[1:]]\n"
    "main()\n"
)


@pytest.fixture(params=["openat2", "fallback"])
def use_openat2(request: pytest.FixtureRequest) -> bool:
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    return request.param == "openat2"


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def hermes(args: list[str], *, home: Path, cwd: Path, use_openat2: bool, upstream=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_STREAM_STALE_TIMEOUT="5")
    if upstream is not None:
        env.update(HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model")
    return subprocess.run(
        [sys.executable, "-c", _RUN.format(use=use_openat2), *args],
        input="", capture_output=True, text=True, env=env, cwd=cwd, timeout=60,
    )  # fmt: skip


def test_undo_and_redo_through_a_symlinked_folder_exit_1(use_openat2, upstream, hermes_home, tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "x").write_text("victim\n")
    (work / "a.txt").write_text("alpha\n")
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start")
    run = {"home": hermes_home, "cwd": work, "use_openat2": use_openat2}
    upstream.enqueue(tool_reply([call("write_file", {"path": "d/x", "content": "new\n"})]), text_reply("Edited."))
    chat = hermes(["chat", "-q", "edit", "--yolo"], upstream=upstream, **run)
    assert chat.returncode == 0, chat.stderr
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    store.close()
    exclude = work / ".git" / "info" / "exclude"

    os.rename(work / "d", work / "d.moved")
    os.symlink(outside, work / "d")
    exclude.write_text(exclude.read_text() + "d\n")
    refusal = "hermes: refused, nothing was changed: d/x (its folder d is a symlink)"
    for args in (["undo", session.id], ["undo", session.id, "--force"]):
        refused = hermes(["sessions", *args], **run)
        assert (refused.returncode, refused.stderr.strip()) == (1, refusal)
    assert os.listdir(outside) == ["x"] and (outside / "x").read_text() == "victim\n"

    os.unlink(work / "d")
    os.rename(work / "d.moved", work / "d")
    exclude.write_text(exclude.read_text().replace("d\n", ""))
    undone = hermes(["sessions", "undo", session.id], **run)
    assert undone.returncode == 0, undone.stderr
    (outside / "x").unlink()
    os.symlink(outside, work / "d")
    exclude.write_text(exclude.read_text() + "d\n")
    for args in (["redo", session.id], ["redo", session.id, "--force"]):
        refused = hermes(["sessions", *args], **run)
        assert (refused.returncode, refused.stderr.strip()) == (1, refusal)
    assert os.listdir(outside) == []
