"""What `hermes chat -q` says at start about the sandbox: one notice for auto without bwrap, an error for on.

A person is at the keyboard, so `auto` falls back to unsandboxed tools with a notice here;
`hermes serve` refuses instead (test_sandbox_serve.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import fake_bwrap

from hermes.testing.upstream import ScriptedUpstream, text_reply


def chat(
    tmp_path: Path, sandbox: str, upstream: ScriptedUpstream, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": str(path or empty),
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


def test_auto_with_a_broken_bwrap_prints_one_notice_line(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply("hello there"))
    bwrap = fake_bwrap(tmp_path / "bin", 'echo "bwrap: setting up uid map: Permission denied" >&2; exit 1')

    result = chat(tmp_path, "auto", upstream, bwrap.parent)

    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"hermes: tool sandbox off: {bwrap} failed a test run: bwrap: setting up uid map: Permission denied"
        " (set sandbox = off to silence this notice)"
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
