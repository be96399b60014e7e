"""`hermes chat` (the TUI) as a real process: it opens the configured storage, and a
database it cannot use is one line on stderr before the TUI takes the screen.

The end-to-end case runs `hermes chat --continue` in a pseudo-terminal on SQLite and on
PostgreSQL: the newest stored session opens, Ctrl+Q quits, and the resume hint names it.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from hermes.config import Settings
from hermes.store.configured import open_storage

SECRET = "s3cret-pass"


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "HERMES_HOME": str(home),
        "HERMES_BASE_URL": "http://127.0.0.1:9/v1",  # never called: no turn runs
        "HERMES_MODEL": "scripted-model",
        "HERMES_API_KEY": "x",
        "HERMES_SANDBOX": "off",
        "TERM": "xterm-256color",
        **extra,
    }


def chat_without_terminal(home: Path, database_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes", "chat"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env_for(home, HERMES_DATABASE_URL=database_url),
        stdin=subprocess.DEVNULL,  # empty stdin: no prompt, so `hermes chat` starts the TUI
        cwd=home.parent,
    )


@pytest.mark.parametrize(
    ("url", "code", "says"),
    [
        (f"mysql://hermes:{SECRET}@127.0.0.1/hermes", 2, "invalid value for database_url"),
        (f"postgresql://hermes:{SECRET}@127.0.0.1:1/hermes", 1, "127.0.0.1"),
    ],
    ids=["unsupported", "unreachable"],
)
@pytest.mark.usefixtures("pg_driver")  # the driver is what reports an unreachable server
def test_an_unusable_database_is_one_line(tmp_path: Path, url: str, code: int, says: str) -> None:
    home = tmp_path / "home"
    result = chat_without_terminal(home, url)
    assert result.returncode == code, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("hermes: ") and says in lines[0]
    assert SECRET not in result.stderr
    assert "Resume with" not in result.stdout


def run_in_terminal(args: list[str], env: dict[str, str], cwd: Path, *, wait_for: str, timeout: float = 60) -> str:
    """Run `args` on a pseudo-terminal; once its output shows `wait_for`, press Ctrl+Q; return
    everything it wrote. Fails when `wait_for` never shows or the process does not exit."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 110, 0, 0))
    process = subprocess.Popen(
        args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True, close_fds=True
    )
    os.close(slave)
    output = b""
    quit_sent = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the process closed the terminal (it exited)
                    break
                if not chunk:
                    break
                output += chunk
            if not quit_sent and wait_for.encode() in output:
                os.write(master, b"\x11")  # Ctrl+Q
                quit_sent = True
            if process.poll() is not None and not ready:
                break
        text = output.decode("utf-8", errors="replace")
        assert quit_sent, f"never showed {wait_for!r}; output:\n{text[-3000:]}"
        assert process.wait(timeout=max(1.0, deadline - time.monotonic())) == 0, text[-3000:]
        return text
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        os.close(master)


async def seed(settings: Settings, folder: Path | None = None) -> str:
    """An older session and the newest one (returned), in the configured storage; both
    belong to `folder` (none recorded when None)."""
    cwd = str(folder.resolve()) if folder is not None else None
    storage = await open_storage(settings)
    try:
        await storage.sessions.create_session(source="cli", title="Older errand", cwd=cwd)
        record = await storage.sessions.create_session(source="tui", title="Fjord weekend", cwd=cwd)
        return record.id
    finally:
        await storage.aclose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_continue_opens_the_newest_session_and_names_it_on_exit(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    home = tmp_path / "home"
    url = request.getfixturevalue("pg_url") if backend == "postgres" else ""
    sid = asyncio.run(seed(Settings(home=home, database_url=url or None), tmp_path))
    output = run_in_terminal(
        [sys.executable, "-m", "hermes", "chat", "--continue"],
        env_for(home, HERMES_DATABASE_URL=url),
        tmp_path,
        wait_for="Fjord weekend",
    )
    assert f"Resume with: hermes chat --resume {sid}" in output
    assert "Traceback" not in output
