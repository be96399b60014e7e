"""What `hermes chat -q` says at start about the sandbox: one notice for auto without bwrap, an error for on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, text_reply


def chat(tmp_path: Path, sandbox: str, upstream: ScriptedUpstream) -> subprocess.CompletedProcess[str]:
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": str(empty),
        "HERMES_BASE_URL": upstream.base_url,
        "HERMES_MODEL": "scripted-model",
        "HERMES_SANDBOX": sandbox,
    }
    return subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", "hi"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )


@pytest.fixture
def upstream():  # type: ignore[no-untyped-def]
    with ScriptedUpstream.in_thread() as server:
        yield server


def test_auto_without_bwrap_prints_one_notice_line(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply("hello there"))

    result = chat(tmp_path, "auto", upstream)

    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "hermes: tool sandbox off: bubblewrap (bwrap) is not installed (set sandbox = off to silence this notice)"
    ]
    assert "hello there" in result.stdout


def test_off_prints_nothing(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply("hello there"))

    result = chat(tmp_path, "off", upstream)

    assert (result.returncode, result.stderr) == (0, "")


def test_on_without_bwrap_is_a_one_line_error(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    result = chat(tmp_path, "on", upstream)

    assert result.returncode == 2
    assert result.stderr == (
        "hermes: sandbox = on, but bubblewrap (bwrap) is not installed; install bubblewrap (bwrap) "
        "or set sandbox = off\n"
    )
    assert upstream.requests == []


def test_serve_prints_the_notice_after_its_listening_line(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    import signal

    empty = tmp_path / "no-bwrap-here"
    empty.mkdir()
    env = {
        **os.environ,
        "PATH": str(empty),
        "HERMES_BASE_URL": upstream.base_url,
        "HERMES_MODEL": "scripted-model",
        "HERMES_SANDBOX": "auto",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        first, second = proc.stderr.readline(), proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)

    assert first.startswith("hermes serve: listening on http://127.0.0.1:")
    assert second == (
        "hermes serve: tool sandbox off: bubblewrap (bwrap) is not installed (set sandbox = off to silence this notice)\n"
    )
