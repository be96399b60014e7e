"""AGENTS.md reaches the upstream: `hermes chat -q` and `hermes serve` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, text_reply

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, hermes_home: Path) -> Path:
    """A repository with AGENTS.md at its root and in src/; the home has one too. Returns src/."""
    repo = tmp_path / "repo"
    src = repo / "src"
    src.mkdir(parents=True)
    (repo / ".git").mkdir()
    hermes_home.mkdir(mode=0o700)
    (hermes_home / "AGENTS.md").write_text("HOME: always answer briefly.\n")
    (repo / "AGENTS.md").write_text("ROOT: tests run with pytest -q.\n")
    (src / "AGENTS.md").write_text("SRC: keep functions small.\n")
    return src


def env_for(home: Path, upstream: ScriptedUpstream, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_STREAM_STALE_TIMEOUT="5",
        HERMES_SANDBOX="off",  # not about the sandbox: runs where bwrap cannot (serve would refuse auto)
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    env.update(extra)
    return env


def chat_q(prompt: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", prompt],
        cwd=cwd, env=env, input="", capture_output=True, text=True, timeout=60, check=False,
    )


def system_text(upstream: ScriptedUpstream, index: int = 0) -> str:
    first = upstream.requests[index].messages[0]
    assert first["role"] == "system"
    return str(first["content"])


def test_chat_q_sends_the_layered_instructions_in_the_system_message(
    upstream: ScriptedUpstream, project: Path, hermes_home: Path
) -> None:
    upstream.enqueue(text_reply("ok"))

    proc = chat_q("hello", project, env_for(hermes_home, upstream))

    assert proc.returncode == 0, proc.stderr
    system = system_text(upstream)
    assert system.index("HOME: always") < system.index("ROOT: tests") < system.index("SRC: keep")
    assert f"Working directory: {project}" in system
    assert "cut" not in proc.stderr


def test_chat_q_says_when_the_cap_cut_the_instructions(
    upstream: ScriptedUpstream, project: Path, hermes_home: Path
) -> None:
    upstream.enqueue(text_reply("ok"))

    proc = chat_q("hello", project, env_for(hermes_home, upstream, HERMES_INSTRUCTIONS_MAX_BYTES="40"))

    assert proc.returncode == 0, proc.stderr
    assert "hermes: project instructions cut to 40 bytes (instructions_max_bytes)" in proc.stderr
    system = system_text(upstream)
    assert "HOME: always" in system and "SRC: keep" not in system
    assert "[Notice: the project instructions were cut at 40 bytes" in system


def test_serve_reads_its_own_working_directory(upstream: ScriptedUpstream, project: Path, hermes_home: Path) -> None:
    upstream.enqueue(text_reply("from serve"), text_reply("layered"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        cwd=project, env=env_for(hermes_home, upstream), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        lines = []
        for _ in range(10):  # start-up notes come before the ready line
            line = proc.stderr.readline()
            lines.append(line)
            if line.startswith("hermes serve: listening on ") or not line:
                break
        assert lines[-1].startswith("hermes serve: listening on "), "".join(lines)
        notes = [line for line in lines if line.startswith("hermes serve: project instructions: ")]
        assert any("src/AGENTS.md" in line for line in notes)
        base = lines[-1].removeprefix("hermes serve: listening on ").strip()

        def post(messages: list[dict[str, str]]) -> dict[str, object]:
            body = json.dumps({"model": "hermes-agent", "messages": messages}).encode()
            headers = {"Content-Type": "application/json"}
            req = urllib.request.Request(f"{base}/v1/chat/completions", data=body, headers=headers)
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read())  # type: ignore[no-any-return]

        assert post([{"role": "user", "content": "hi"}])["choices"][0]["message"]["content"] == "from serve"  # type: ignore[index]
        system = system_text(upstream, 0)
        assert "ROOT: tests" in system and "SRC: keep" in system and "HOME: always" in system
        # A client's own system prompt is layered after hermes' prompt and the instructions.
        post([{"role": "system", "content": "CLIENT PROMPT"}, {"role": "user", "content": "hi"}])
        layered = system_text(upstream, 1)
        assert layered.index("SRC: keep") < layered.index("CLIENT PROMPT")
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
