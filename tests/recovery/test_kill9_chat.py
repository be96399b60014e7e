"""kill -9 of a real `hermes chat -q` mid-stream: `hermes sessions show` and `chat -c` see a repaired session."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from recovery_helpers import consecutive_assistants, transcript_problems, wait_until
from serve_process import serve_env

from hermes.testing.state_db import SyncStateDb
from hermes.testing.upstream import ScriptedUpstream, text_reply

STORY = " ".join(f"word{i}" for i in range(400))


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def _hermes(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        check=False,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_kill_9_of_chat_q_then_sessions_show_and_continue(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply(STORY, chunk_delay=0.03))
    env = serve_env(hermes_home, upstream)
    chat = subprocess.Popen(
        [sys.executable, "-m", "hermes", "chat", "-q", "tell me a story"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: (hermes_home / "state.db").exists(), 30)
        with SyncStateDb(hermes_home / "state.db") as reader:

            def checkpointed() -> str | None:
                sessions = reader.list_sessions(limit=1)
                if not sessions:
                    return None
                rows = reader.get_messages(sessions[0].id)
                text = rows[-1].content if len(rows) == 2 else None
                return text if isinstance(text, str) and len(text) > 50 else None

            seen = wait_until(checkpointed, 30)
            assert seen, "no streamed text was checkpointed"
            chat.kill()
            chat.wait(timeout=10)
            session_id = reader.list_sessions(limit=1)[0].id
            assert reader.get_session(session_id).end_reason is None  # nobody has repaired it yet
    finally:
        chat.kill()
        chat.wait(timeout=10)

    shown = _hermes(env, tmp_path, "sessions", "show", session_id, "--json")
    assert shown.returncode == 0, shown.stderr
    session = json.loads(shown.stdout)
    assert session["end_reason"] == "interrupted"
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
    partial = session["messages"][1]["content"]
    assert partial.startswith(seen) and STORY.startswith(partial)
    assert session["messages"][1]["finish_reason"] == "interrupted"

    upstream.enqueue(text_reply("And so on."))
    continued = _hermes(env, tmp_path, "chat", "-c", "-q", "go on")
    assert continued.returncode == 0, continued.stderr
    sent = upstream.requests[-1].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[2]["content"] == partial
    assert transcript_problems(sent) == [] and consecutive_assistants(sent) == []
