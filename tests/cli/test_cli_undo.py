"""`hermes chat -q` edits, then `hermes sessions diff|undo|redo`, all as real subprocesses in
a real git tree against a scripted upstream on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha\nbeta\n")
    (folder / "old.txt").write_text("old\n")
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start")
    return folder


def hermes(args: list[str], *, home: Path, cwd: Path, upstream=None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_STREAM_STALE_TIMEOUT="5")
    if upstream is not None:
        env.update(HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model")
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args], input="", capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def test_chat_q_edits_then_diff_undo_and_redo_from_the_cli(upstream, hermes_home, work, tmp_path):
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "new.txt", "content": "new\n"})]),
        tool_reply([call("terminal", {"command": "sed -i 's/beta/BETA/' a.txt && rm old.txt"})]),
        text_reply("Edited."),
    )
    chat = hermes(["chat", "-q", "edit", "--yolo"], home=hermes_home, cwd=work, upstream=upstream)
    assert chat.returncode == 0, chat.stderr
    assert "· 3 files changed, +2 −2" in chat.stderr  # the turn's one-line summary
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    store.close()

    diff = hermes(["sessions", "diff", session.id], home=hermes_home, cwd=work)
    assert diff.returncode == 0, diff.stderr
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(work), str(fresh)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=fresh, input=diff.stdout, text=True, check=True)
    assert (fresh / "a.txt").read_text() == "alpha\nBETA\n" and (fresh / "new.txt").exists()
    assert not (fresh / "old.txt").exists()

    (work / "new.txt").write_text("edited by hand\n")
    refused = hermes(["sessions", "undo", session.id], home=hermes_home, cwd=work)
    assert refused.returncode == 1
    assert refused.stderr.strip() == "hermes: changed since the checkpoint, not overwritten: new.txt"
    assert (work / "new.txt").read_text() == "edited by hand\n"
    (work / "new.txt").write_text("new\n")

    undone = hermes(["sessions", "undo", session.id, "--turns", "1"], home=hermes_home, cwd=work)
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.splitlines()[0] == f"Undid 1 turn of {session.id}"
    assert (work / "a.txt").read_text() == "alpha\nbeta\n" and (work / "old.txt").read_text() == "old\n"
    assert not (work / "new.txt").exists()
    store = open_sync_state(hermes_home / "state.db")
    assert store.get_messages(session.id) == []  # hidden behind the undo's marker, not deleted
    assert store.get_session(session.id).message_count == 6
    store.close()

    redone = hermes(["sessions", "redo", session.id, "--json"], home=hermes_home, cwd=work)
    assert redone.returncode == 0, redone.stderr
    assert sorted(json.loads(redone.stdout)["files"]) == ["a.txt", "new.txt", "old.txt"]
    assert (work / "a.txt").read_text() == "alpha\nBETA\n" and not (work / "old.txt").exists()

    nothing = hermes(["sessions", "redo", session.id], home=hermes_home, cwd=work)
    assert (nothing.returncode, nothing.stderr.strip()) == (1, "hermes: nothing to redo")
    deleted = hermes(["sessions", "delete", session.id, "--yes"], home=hermes_home, cwd=work)
    assert deleted.returncode == 0
    (shadow,) = (hermes_home / "checkpoints").iterdir()
    assert git(shadow, "--git-dir", str(shadow), "for-each-ref") == ""


def test_a_fork_is_diffed_and_undone_back_to_its_fork_point(upstream, hermes_home, work):
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "parent.txt", "content": "from the parent\n"})]), text_reply("One.")
    )
    assert hermes(["chat", "-q", "one", "--yolo"], home=hermes_home, cwd=work, upstream=upstream).returncode == 0
    store = open_sync_state(hermes_home / "state.db")
    (parent,) = store.list_sessions()
    store.close()
    forked = hermes(["sessions", "fork", parent.id, "--json"], home=hermes_home, cwd=work)
    assert forked.returncode == 0, forked.stderr
    child = json.loads(forked.stdout)["id"]
    assert json.loads(forked.stdout)["cwd"] == str(work.resolve())  # the fork keeps the folder

    fresh = hermes(["sessions", "diff", child], home=hermes_home, cwd=work)
    assert fresh.returncode == 1
    assert f"since it was forked from {parent.id}" in fresh.stderr and "Traceback" not in fresh.stderr

    upstream.enqueue(
        tool_reply([call("write_file", {"path": "fork.txt", "content": "from the fork\n"})]), text_reply("Two.")
    )
    chat = hermes(["chat", "-r", child, "-q", "two", "--yolo"], home=hermes_home, cwd=work, upstream=upstream)
    assert chat.returncode == 0, chat.stderr
    diff = hermes(["sessions", "diff", child], home=hermes_home, cwd=work)
    assert diff.returncode == 0, diff.stderr
    assert "fork.txt" in diff.stdout and "parent.txt" not in diff.stdout  # the fork's own turn

    undone = hermes(["sessions", "undo", child], home=hermes_home, cwd=work)
    assert undone.returncode == 0, undone.stderr
    assert not (work / "fork.txt").exists() and (work / "parent.txt").exists()  # back to the fork point
    past = hermes(["sessions", "undo", child], home=hermes_home, cwd=work)
    assert past.returncode == 1 and f"forked from {parent.id}" in past.stderr
    assert (work / "parent.txt").read_text() == "from the parent\n"


def test_diff_of_a_turn_that_changed_no_files_says_so(upstream, hermes_home, work):
    upstream.enqueue(text_reply("Nothing to change."))
    chat = hermes(["chat", "-q", "just answer"], home=hermes_home, cwd=work, upstream=upstream)
    assert chat.returncode == 0, chat.stderr
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    store.close()
    diff = hermes(["sessions", "diff", session.id[:20]], home=hermes_home, cwd=work)
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout == ""  # still a patch `git apply` takes
    assert diff.stderr == f"hermes: turn 1 of {session.id} changed no files\n"
