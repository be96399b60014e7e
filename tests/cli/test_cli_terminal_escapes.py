"""A hostile model and repository against the terminal: `chat -q`, `sessions show|list|diff`
as real subprocesses of the `hermes` console script (this worktree first on PYTHONPATH),
against the scripted upstream, with stdout a pipe or a pseudo-terminal.

The attack: an answer, a tool call and a file content holding an OSC 52 clipboard write
(`ESC ] 52 ; c ; … BEL`, and the ST-terminated form), a CSI clear screen (`ESC [ 2 J`) and
the 8-bit CSI (U+009B). What must hold: none of them reaches a terminal raw (they are shown
as `^[`, `^G`, `M-^[` …), while a piped answer and a piped diff stay byte-exact.
"""

from __future__ import annotations

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

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

REPO = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("hermes")

OSC52 = "\x1b]52;c;SGVybWVz\x07"
OSC52_ST = "\x1b]52;c;U1RTVA==\x1b\\"
CLEAR = "\x1b[2J"
C1_CSI = "\x9b31m"
ANSWER = f"Look: {OSC52} then {CLEAR} and {C1_CSI} red {OSC52_ST} done."
FILE_TEXT = f"line one\nclip {OSC52} here\nclear {CLEAR} and {C1_CSI}\n"
HOSTILE_PATH = "missing-\x1b]52;c;UEFUSA==\x07.txt"

RAW = (b"\x1b]52", b"\x1b[2J", b"\x07", "\x9b".encode(), b"\x1b\\")
"""Bytes a terminal acts on that must never come out of the attacked text."""


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


def _env(home: Path, upstream: ScriptedUpstream | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_STREAM_STALE_TIMEOUT="5",
        HERMES_SANDBOX="off",
        PYTHONPATH=str(REPO),
        TERM="xterm-256color",
        COLUMNS="120",
        LINES="40",
    )
    if upstream is not None:
        env.update(HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model")
    return env


def _command() -> list[str]:
    return [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "hermes"]


def piped(args: list[str], *, home: Path, cwd: Path, upstream=None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*_command(), *args], stdin=subprocess.DEVNULL, capture_output=True,
        env=_env(home, upstream), cwd=cwd, timeout=60,
    )  # fmt: skip


def in_pty(
    args: list[str], *, home: Path, cwd: Path, upstream=None, stderr_too: bool = False
) -> tuple[int, bytes, bytes]:
    """Run with stdout (and with `stderr_too` stderr) on a pseudo-terminal: (exit code,
    what the terminal received, stderr when it was a pipe)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [*_command(), *args], stdin=subprocess.DEVNULL, stdout=slave,
        stderr=slave if stderr_too else subprocess.PIPE, env=_env(home, upstream), cwd=cwd,
    )  # fmt: skip
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer of the terminal is gone
                    break
                if not data:
                    break
                screen += data
            elif proc.poll() is not None:
                break
        err = proc.stderr.read() if proc.stderr is not None else b""
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        os.close(master)
    return code, screen, err


def approval_on_a_terminal(args: list[str], *, home: Path, cwd: Path, upstream, answer: bytes) -> tuple[int, bytes]:
    """Run with a pty as the controlling terminal (what the approval prompt opens as
    /dev/tty) and stdin, stdout and stderr; type `answer` once the prompt is up."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))

    def take_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [*_command(), *args], stdin=slave, stdout=slave, stderr=slave,
        env=_env(home, upstream), cwd=cwd, preexec_fn=take_terminal,
    )  # fmt: skip
    os.close(slave)
    screen = b""
    answered = False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    screen += os.read(master, 65536)
                except OSError:
                    break
            if not answered and b"[d]eny" in screen:
                os.write(master, answer)
                answered = True
        while select.select([master], [], [], 0.2)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            screen += data
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, screen


def assert_no_raw(output: bytes) -> None:
    for raw in RAW:
        assert raw not in output, (raw, output)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    return folder


def _hostile_turn(upstream: ScriptedUpstream) -> None:
    upstream.enqueue(
        tool_reply([call("read_file", {"path": HOSTILE_PATH})]),
        tool_reply([call("write_file", {"path": "notes.txt", "content": FILE_TEXT})]),
        text_reply(ANSWER),
    )


def _only_session(home: Path) -> str:
    store = open_sync_state(home / "state.db")
    try:
        (session,) = store.list_sessions()
        return session.id
    finally:
        store.close()


def test_piped_answer_is_byte_exact_and_stderr_shows_stand_ins(upstream, hermes_home, work):
    _hostile_turn(upstream)
    proc = piped(["chat", "-q", "go"], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ANSWER + "\n").encode()  # a script gets what the model said
    assert b"\x1b" not in proc.stderr and "\x9b".encode() not in proc.stderr and b"\x07" not in proc.stderr
    err = proc.stderr.decode()
    assert "→ read_file: missing-^[]52;c;UEFUSA==^G.txt" in err, err  # the tool line, made visible
    assert "✗ read_file" in err and "^[]52;c;UEFUSA==^G" in err.split("✗ read_file", 1)[1]  # its error too


def test_answer_on_a_terminal_and_stderr_on_a_terminal_carry_no_raw_sequence(upstream, hermes_home, work):
    _hostile_turn(upstream)
    code, screen, err = in_pty(["chat", "-q", "go"], home=hermes_home, cwd=work, upstream=upstream)
    assert code == 0, (screen, err)
    assert_no_raw(screen)
    assert b"SGVybWVz" in screen and b"U1RTVA==" in screen  # shown, not executed
    assert b"\x1b" not in err  # stderr a pipe: plain lines

    _hostile_turn(upstream)
    code, screen, _ = in_pty(["chat", "-q", "again"], home=hermes_home, cwd=work, upstream=upstream, stderr_too=True)
    assert code == 0, screen
    assert_no_raw(screen)  # hermes' own colours and rich's redraws only
    assert b"UEFUSA==" in screen and b"\x1b[" in screen  # the tool line is there, coloured


def test_sessions_show_list_and_diff_on_a_terminal(upstream, hermes_home, work):
    _hostile_turn(upstream)
    assert piped(["chat", "-q", "go"], home=hermes_home, cwd=work, upstream=upstream).returncode == 0
    session_id = _only_session(hermes_home)
    assert (
        piped(["sessions", "rename", session_id, f"title {OSC52} {CLEAR}"], home=hermes_home, cwd=work).returncode == 0
    )

    code, screen, err = in_pty(["sessions", "show", session_id], home=hermes_home, cwd=work)
    assert code == 0, err
    assert b"\x1b" not in screen and "\x9b".encode() not in screen and b"\x07" not in screen
    shown = screen.decode()
    assert "^[]52;c;SGVybWVz^G" in shown and "^[[2J" in shown and "M-^[31m" in shown
    assert "title ^[]52;c;SGVybWVz^G ^[[2J" in shown  # the header's title
    assert "UEFUSA==" in shown and "notes.txt" in shown  # the tool call and its hostile path

    code, screen, err = in_pty(["sessions", "list"], home=hermes_home, cwd=work)
    assert code == 0, err
    assert b"\x1b" not in screen and b"\x07" not in screen
    assert "title ^[]52;c;SGVybWVz^G ^[[2J" in screen.decode()

    code, screen, err = in_pty(["sessions", "search", "Look"], home=hermes_home, cwd=work)
    assert code == 0, err
    assert_no_raw(screen)  # the snippet's own bold marks are hermes'
    assert b"^[]52;c;SGVybWVz^G" in screen

    code, screen, err = in_pty(["sessions", "diff", session_id], home=hermes_home, cwd=work)
    assert code == 0, err
    assert b"\x1b" not in screen and "\x9b".encode() not in screen and b"\x07" not in screen
    assert "+clip ^[]52;c;SGVybWVz^G here" in screen.decode()

    diff = piped(["sessions", "diff", session_id], home=hermes_home, cwd=work)
    assert diff.returncode == 0, diff.stderr
    assert f"+clip {OSC52} here\n".encode() in diff.stdout  # piped: the patch as it is, for git apply
    assert f"+clear {CLEAR} and {C1_CSI}\n".encode() in diff.stdout


def test_show_json_keeps_the_text_and_escapes_c1(upstream, hermes_home, work):
    import json

    _hostile_turn(upstream)
    assert piped(["chat", "-q", "go"], home=hermes_home, cwd=work, upstream=upstream).returncode == 0
    session_id = _only_session(hermes_home)
    proc = piped(["sessions", "show", session_id, "--json"], home=hermes_home, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stdout and "\x9b".encode() not in proc.stdout and b"\x07" not in proc.stdout
    answers = [m["content"] for m in json.loads(proc.stdout)["messages"] if m["role"] == "assistant"]
    assert ANSWER in answers  # the same value


def test_the_approval_prompt_shows_the_models_command_with_stand_ins(upstream, hermes_home, work):
    command = f"rm -r junk-{OSC52}{CLEAR}"
    upstream.enqueue(tool_reply([call("terminal", {"command": command})]), text_reply("Denied, fine."))
    code, screen = approval_on_a_terminal(
        ["chat", "-q", "clean up"], home=hermes_home, cwd=work, upstream=upstream, answer=b"d\n"
    )
    assert code == 0, screen
    assert b"[d]eny" in screen  # the prompt was shown and answered
    assert_no_raw(screen)
    assert b"rm -r junk-^[]52;c;SGVybWVz^G^[[2J" in screen
