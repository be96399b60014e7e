"""Sessions belong to a folder, through `hermes chat -q` as a real subprocess: `-c` continues
this folder's newest session, `--any-folder` any folder's, a resumed session's tools run in
its own folder, and one whose folder is gone or now a link elsewhere runs nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


def hermes(args: list[str], *, home: Path, cwd: Path, upstream: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env |= {"HERMES_HOME": str(home), "HERMES_STREAM_STALE_TIMEOUT": "5", "HERMES_BASE_URL": upstream.base_url,
            "HERMES_MODEL": "scripted-model", "HERMES_SANDBOX": "off"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        input="", capture_output=True, text=True, env=env, cwd=cwd, timeout=60,
    )  # fmt: skip


def sessions(home: Path) -> dict[str, str | None]:
    store = open_sync_state(home / "state.db")
    try:
        return {record.id: record.cwd for record in store.list_sessions()}
    finally:
        store.close()


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    made = tuple(tmp_path / name for name in ("alpha", "beta", "empty"))
    for folder in made:
        folder.mkdir()
    return made  # type: ignore[return-value]


def test_continue_picks_this_folders_newest_and_any_folder_the_newest_of_all(upstream, hermes_home, folders):
    alpha, beta, empty = folders
    upstream.enqueue(text_reply("alpha answer"), text_reply("beta answer"))
    assert hermes(["chat", "-q", "in alpha"], home=hermes_home, cwd=alpha, upstream=upstream).returncode == 0
    assert hermes(["chat", "-q", "in beta"], home=hermes_home, cwd=beta, upstream=upstream).returncode == 0
    assert sorted(sessions(hermes_home).values()) == [str(alpha.resolve()), str(beta.resolve())]

    upstream.enqueue(text_reply("again"))
    proc = hermes(["chat", "-c", "-q", "and again"], home=hermes_home, cwd=alpha, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    seen = [m["content"] for m in upstream.requests[-1].messages if m["role"] == "user"]
    assert seen == ["in alpha", "and again"]  # alpha's session, though beta's is newer

    proc = hermes(["chat", "-c", "-q", "x"], home=hermes_home, cwd=empty, upstream=upstream)
    assert proc.returncode == 1
    assert "no session of this folder" in proc.stderr and "--any-folder" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1

    upstream.enqueue(text_reply("newest"))
    proc = hermes(["chat", "-c", "--any-folder", "-q", "any"], home=hermes_home, cwd=empty, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    seen = [m["content"] for m in upstream.requests[-1].messages if m["role"] == "user"]
    assert seen == ["in alpha", "and again", "any"]  # alpha's session had the newest activity
    assert len(sessions(hermes_home)) == 2


def test_a_resumed_session_runs_its_tools_in_its_own_folder_and_says_so(upstream, hermes_home, folders):
    alpha, beta, _ = folders
    upstream.enqueue(text_reply("made"))
    assert hermes(["chat", "-q", "start"], home=hermes_home, cwd=alpha, upstream=upstream).returncode == 0
    (session_id,) = sessions(hermes_home)
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "note.txt", "content": "hi\n"})]), text_reply("written")
    )
    proc = hermes(["chat", "-r", session_id[:18], "-q", "write"], home=hermes_home, cwd=beta, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert f"this session belongs to {alpha.resolve()}: its tools run there" in proc.stderr
    assert (alpha / "note.txt").read_text() == "hi\n"
    assert not (beta / "note.txt").exists()


@pytest.mark.parametrize("how", ["symlink", "gone"])
def test_a_session_whose_folder_is_gone_or_now_a_link_runs_nothing(upstream, hermes_home, folders, tmp_path, how):
    """Attack: the session's folder was replaced by a link to somewhere else (or removed);
    resuming it must not run its tools there, nor in this folder, without a word."""
    alpha, beta, _ = folders
    upstream.enqueue(text_reply("made"))
    assert hermes(["chat", "-q", "start"], home=hermes_home, cwd=alpha, upstream=upstream).returncode == 0
    (session_id,) = sessions(hermes_home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    alpha.rename(tmp_path / "alpha-moved")
    if how == "symlink":
        alpha.symlink_to(elsewhere, target_is_directory=True)
    requests_before = len(upstream.requests)
    upstream.enqueue(tool_reply([call("write_file", {"path": "note.txt", "content": "x"})]), text_reply("done"))

    proc = hermes(["chat", "-r", session_id, "-q", "write"], home=hermes_home, cwd=beta, upstream=upstream)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    expected = f"is now a link to {elsewhere.resolve()}" if how == "symlink" else "no longer exists"
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert len(upstream.requests) == requests_before  # no turn was started
    assert list(elsewhere.iterdir()) == [] and not (beta / "note.txt").exists()


def test_json_output_prints_the_turns_messages_once(upstream, hermes_home, folders):
    alpha, _, _ = folders
    upstream.enqueue(text_reply("only once"))
    proc = hermes(["chat", "-q", "hello", "--json"], home=hermes_home, cwd=alpha, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["type"] for line in lines][-2:] == ["turn.completed", "result"]
    carrying = [line for line in lines if "messages" in line or "messages" in line.get("result", {})]
    assert carrying == [lines[-1]]  # the result line alone carries the transcript
    assert lines[-1]["messages"][-1]["content"] == "only once"
    assert lines[-2]["result"]["final_text"] == "only once" and lines[-2]["result"]["status"] == "completed"


def test_bare_hermes_and_chat_with_a_prompt_open_the_chat(invoke, hermes_home, monkeypatch, tmp_path):
    import hermes.tui.launch as launch

    opened: list[dict[str, Any]] = []

    def fake_run_tui(settings: Any, **kwargs: Any) -> int:
        opened.append(kwargs)
        return 0

    monkeypatch.setattr(launch, "run_tui", fake_run_tui)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HERMES_BASE_URL", "http://127.0.0.1:9/v1")
    result = invoke()
    assert result.exit_code == 0, result.stderr
    assert opened[-1]["first_prompt"] is None and opened[-1]["folder"] == str(tmp_path)
    result = invoke("chat", "fix the failing test")
    assert result.exit_code == 0, result.stderr
    assert opened[-1]["first_prompt"] == "fix the failing test"
    result = invoke("chat", "-c", "--any-folder")
    assert result.exit_code == 0 and opened[-1]["folder"] is None and opened[-1]["continue_last"]
    bad = invoke("chat", "--any-folder")
    assert bad.exit_code == 2 and "--any-folder goes with --continue" in bad.stderr
    both = invoke("chat", "a prompt", "-q", "another")
    assert both.exit_code == 2 and len(both.stderr.strip().splitlines()) == 1
    assert len(opened) == 3
