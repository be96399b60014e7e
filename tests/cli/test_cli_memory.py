"""`hermes memory show` and `hermes memory edit` with a real editor script."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


def editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_show_says_when_memory_is_empty_or_off(invoke: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    result = invoke("memory", "show")
    assert result.exit_code == 0 and "memory is empty" in result.stdout
    monkeypatch.setenv("HERMES_MEMORY", "false")
    result = invoke("memory", "show")
    assert result.exit_code == 0 and "memory is off" in result.stdout


def test_show_prints_both_files_with_controls_made_visible(invoke: Any, hermes_home: Path) -> None:
    folder = hermes_home / "memories"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- builds with make\x1b]52;c;eA==\x07\n")
    (folder / "USER.md").write_text("- Ana\n")
    result = invoke("memory", "show")
    assert result.exit_code == 0
    assert f"== {folder / 'MEMORY.md'} (" in result.stdout and "memory_max_chars" in result.stdout
    assert "- builds with make^[]52;c;eA==^G" in result.stdout and "\x1b" not in result.stdout
    assert f"== {folder / 'USER.md'} (5 of 2,000 characters, user_memory_max_chars)\n- Ana" in result.stdout


def test_edit_opens_the_file_in_the_editor_creating_it(
    invoke: Any, hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, 'printf -- "- edited by hand\\n" >> "$1"'))
    result = invoke("memory", "edit", "--user")
    assert result.exit_code == 0, result.stderr
    user = hermes_home / "memories" / "USER.md"
    assert user.read_text() == "- edited by hand\n" and os.stat(user).st_mode & 0o777 == 0o600
    assert os.stat(user.parent).st_mode & 0o777 == 0o700
    monkeypatch.setenv("VISUAL", editor(tmp_path, 'echo "- from visual" > "$1"'))  # VISUAL wins
    assert invoke("memory", "edit").exit_code == 0
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == "- from visual\n"
    assert "- from visual" in invoke("memory", "show").stdout


def test_edit_without_an_editor_or_with_a_failing_one_is_one_line(
    invoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    result = invoke("memory", "edit")
    assert result.exit_code == 2
    assert result.stderr == "hermes: no editor: set $VISUAL or $EDITOR (e.g. export EDITOR=nano) to edit the memory\n"
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    result = invoke("memory", "edit")
    assert result.exit_code == 1 and result.stderr.startswith("hermes: cannot start the editor")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "exit 3"))
    result = invoke("memory", "edit")
    assert result.exit_code == 1 and "exited with status 3" in result.stderr and result.stderr.count("\n") == 1


def test_edit_refuses_a_symlinked_memories_folder(
    invoke: Any, hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "memories").symlink_to(elsewhere)
    monkeypatch.setenv("EDITOR", editor(tmp_path, 'echo pwned > "$1"'))
    result = invoke("memory", "edit")
    assert result.exit_code == 1 and "symlink" in result.stderr and result.stderr.count("\n") == 1
    assert list(elsewhere.iterdir()) == []
    result = invoke("memory", "show")
    assert result.exit_code == 1 and "symlink" in result.stderr


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def chat(home: Path, upstream: ScriptedUpstream, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model")
    env.update(HERMES_STREAM_STALE_TIMEOUT="5", HERMES_LSP="false")
    return subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", *args], input="", capture_output=True, text=True, env=env,
        timeout=60,
    )  # fmt: skip


def test_chat_q_remembers_for_the_next_session_and_show_prints_it(
    upstream: ScriptedUpstream, hermes_home: Path, invoke: Any
) -> None:
    saving = call("memory", {"action": "add", "target": "user", "content": "Ana; likes terse answers"}, id="m")
    upstream.enqueue(tool_reply([saving]), text_reply("Noted."), text_reply("Again."), text_reply("Hi Ana."))
    assert chat(hermes_home, upstream, "I am Ana, keep it short").returncode == 0
    assert chat(hermes_home, upstream, "still there?", "-c").returncode == 0
    assert chat(hermes_home, upstream, "hello").returncode == 0
    systems = [str(request.messages[0]["content"]) for request in upstream.requests]
    assert len(systems) == 4 and systems[0] == systems[1] == systems[2]  # the continued session kept its prompt
    assert "Ana; likes terse answers" not in systems[0]
    assert "## USER.md (who the user is and what they prefer)\n- Ana; likes terse answers" in systems[3]
    assert "- Ana; likes terse answers" in invoke("memory", "show").stdout
