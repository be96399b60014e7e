"""`hermes serve` fails closed: with `sandbox = auto` and no working bwrap it refuses to start.

A server runs the model's commands with nobody watching, so the fallback `hermes chat`
keeps (run unsandboxed, print one notice) is refused there: exit 2, one line naming the
opt-out, before the provider, the database or any worker is touched. `--sandbox off` or
`HERMES_SANDBOX=off` is the opt-out. Each test runs a real `hermes serve` subprocess
(its bwrap probe is its own), with bwrap hidden from PATH or replaced by one that fails
its probe the way a kernel without user namespaces makes it fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import fake_bwrap, needs_bwrap

from hermes.testing.upstream import ScriptedUpstream

REFUSAL_END = (
    "with nobody watching, a server does not run tools unsandboxed: install bubblewrap (bwrap), "
    'or opt out with --sandbox off (or sandbox = "off")\n'
)


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def no_bwrap_path(tmp_path: Path, how: str) -> tuple[str, str]:
    """A PATH on which bwrap is missing, or broken; and why the probe says it cannot work."""
    folder = tmp_path / f"bin-{how}"
    folder.mkdir(exist_ok=True)
    if how == "missing":
        return str(folder), "bubblewrap (bwrap) is not installed"
    program = fake_bwrap(folder, 'echo "bwrap: setting up uid map: Permission denied" >&2; exit 1')
    return str(folder), f"{program} failed a test run: bwrap: setting up uid map: Permission denied"


def serve_env(tmp_path: Path, upstream: ScriptedUpstream, path: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": path,
        "HERMES_HOME": str(tmp_path / "home"),
        "HERMES_BASE_URL": upstream.base_url,
        "HERMES_MODEL": "scripted-model",
        **extra,
    }


def serve(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes", "serve", "--port", "0", *args],
        capture_output=True, text=True, check=False, timeout=60, env=env, stdin=subprocess.DEVNULL, cwd=cwd,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["missing", "broken"])
def test_auto_without_a_working_bwrap_refuses_to_start(tmp_path: Path, upstream: ScriptedUpstream, how: str) -> None:
    path, why = no_bwrap_path(tmp_path, how)
    started = time.monotonic()

    result = serve([], serve_env(tmp_path, upstream, path), tmp_path)

    assert result.returncode == 2, result.stderr
    assert result.stderr == f"hermes serve: sandbox = auto, but {why}; {REFUSAL_END}"
    assert result.stdout == ""
    assert time.monotonic() - started < 20
    assert upstream.requests == []
    assert not (tmp_path / "home").exists()  # refused before the store was opened


def test_the_workers_parent_refuses_before_forking(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    path, why = no_bwrap_path(tmp_path, "missing")
    # Nothing listens on port 1: reaching the database (migration) would fail otherwise.
    url = "postgresql://hermes:pw@127.0.0.1:1/hermes"

    result = serve(["--workers", "2", "--database-url", url], serve_env(tmp_path, upstream, path), tmp_path)

    assert result.returncode == 2, result.stderr
    assert result.stderr == f"hermes serve: sandbox = auto, but {why}; {REFUSAL_END}"


def test_a_bad_sandbox_value_is_a_one_line_error(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    result = serve(["--sandbox", "maybe"], serve_env(tmp_path, upstream, os.environ["PATH"]), tmp_path)

    assert result.returncode == 2
    assert result.stderr == "hermes: invalid value for sandbox: 'maybe' (use auto, on, off)\n"


def start_and_stop(args: list[str], env: dict[str, str], cwd: Path) -> tuple[list[str], int]:
    """Start `hermes serve`, check /health, stop it with SIGTERM; its stderr lines and exit code."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0", *args],
        env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        ready = proc.stderr.readline()
        assert ready.startswith("hermes serve: listening on "), ready + (proc.stderr.read() if proc.poll() else "")
        with urllib.request.urlopen(ready.rsplit(" ", 1)[1].strip() + "/health", timeout=10) as response:
            assert response.status == 200 and json.loads(response.read())["status"] == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
    return [ready, *rest.splitlines(keepends=True)], proc.returncode


@pytest.mark.parametrize("opt_out", ["flag", "environment"])
def test_sandbox_off_is_the_opt_out(tmp_path: Path, upstream: ScriptedUpstream, opt_out: str) -> None:
    path, _ = no_bwrap_path(tmp_path, "broken")
    args = ["--sandbox", "off"] if opt_out == "flag" else []
    extra = {"HERMES_SANDBOX": "off"} if opt_out == "environment" else {}

    lines, code = start_and_stop(args, serve_env(tmp_path, upstream, path, **extra), tmp_path)

    assert code == 0, lines
    assert len(lines) == 1  # the listening line, no notice


def test_the_flag_wins_over_the_environment(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    path, why = no_bwrap_path(tmp_path, "missing")

    result = serve(["--sandbox", "auto"], serve_env(tmp_path, upstream, path, HERMES_SANDBOX="off"), tmp_path)

    assert result.returncode == 2
    assert result.stderr == f"hermes serve: sandbox = auto, but {why}; {REFUSAL_END}"


@needs_bwrap
def test_auto_with_a_working_bwrap_starts(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    lines, code = start_and_stop([], serve_env(tmp_path, upstream, os.environ["PATH"]), tmp_path)

    assert code == 0, lines
    assert len(lines) == 1
