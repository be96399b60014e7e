"""`hermes chat -q --mode …` as a real subprocess, checked on what the scripted upstream received."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.agent.modes import PLAN_NOTE
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def hermes(
    args: list[str], *, home: Path, upstream: ScriptedUpstream | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_STREAM_STALE_TIMEOUT="5")
    if upstream is not None:
        env.update(HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model")
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args], input="", capture_output=True, text=True, env=env, timeout=60, cwd=cwd
    )


def test_chat_q_plan_mode_refuses_writes_and_tells_the_model(upstream: ScriptedUpstream, hermes_home: Path, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("alpha\n")
    upstream.enqueue(
        tool_reply(
            [
                call("write_file", {"path": str(target), "content": "pwned"}, id="w"),
                call("patch", {"path": str(target), "old_string": "alpha", "new_string": "pwned"}, id="p"),
                call("terminal", {"command": "sed -i s/alpha/pwned/ notes.txt"}, id="t"),
                call("terminal", {"command": "cat notes.txt"}, id="r"),
            ]
        ),
        text_reply("1. change alpha"),
    )
    proc = hermes(
        ["chat", "-q", "fix the notes", "--mode", "plan", "--yolo"], home=hermes_home, upstream=upstream, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1. change alpha\n"
    assert target.read_text() == "alpha\n"
    first = upstream.requests[0]
    assert first.messages[-1] == {"role": "user", "content": f"fix the notes\n\n{PLAN_NOTE}"}
    assert {"write_file", "patch", "terminal"} <= {t["function"]["name"] for t in first.body["tools"]}
    results = {m["tool_call_id"]: m["content"] for m in upstream.requests[1].messages if m["role"] == "tool"}
    for refused in ("w", "p", "t"):
        assert results[refused].startswith("DENIED: plan mode is on"), results[refused]
    assert "alpha" in results["r"] and "exit code: 0" in results["r"]


def test_chat_q_default_mode_sends_no_note(upstream: ScriptedUpstream, hermes_home: Path):
    upstream.enqueue(text_reply("ok"))
    proc = hermes(["chat", "-q", "hello", "--mode", "default"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert upstream.requests[0].messages[-1] == {"role": "user", "content": "hello"}


def test_an_unknown_mode_is_one_line_and_exit_2(hermes_home: Path):
    proc = hermes(["chat", "-q", "hello", "--mode", "yolo"], home=hermes_home)
    assert proc.returncode == 2
    assert "unknown mode 'yolo'" in proc.stderr and "default, accept-edits, plan" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") <= 2
