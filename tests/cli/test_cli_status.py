"""The waiting status of `hermes chat -q`: a live line on a terminal, a plain line without
one, nothing with --quiet, and never a byte of it on stdout."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes.agent.events import ModelProgress, SegmentEnd, TextDelta, ToolStarted, TurnStarted
from hermes.cli._status import StatusLine
from hermes.testing.upstream import ScriptedUpstream, Sleep, call, text_reply, tool_reply

STATUS_WORDS = ("waiting for the model", "reading the prompt", "generating", "running ", "in all", "tokens/s", "⠋", "⠙")


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


def _env(home: Path, upstream: ScriptedUpstream, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_SANDBOX="off",
        TERM="xterm-256color",
        COLUMNS="100",
        **extra,
    )
    return env


def _slow(reply, seconds: float):
    reply.steps.insert(0, Sleep(seconds))  # the model "thinks" before its first chunk
    return reply


def _run_on_terminal(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 30.0) -> tuple[int, str]:
    """Run hermes with stdin, stdout and stderr on one pseudo-terminal; everything it wrote."""
    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", *args], stdin=secondary, stdout=secondary, stderr=secondary, env=env, cwd=cwd
    )
    os.close(secondary)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # EIO: every writer has closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    return code, out.decode("utf-8", errors="replace")


_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows after `raw`: carriage returns, newlines, cursor up/down,
    erase-line; colours and other control sequences change no text."""
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        match = _CSI.match(raw, i) if ch == "\x1b" else None
        if match:
            arg, op = match.group(1), match.group(2)
            n = int(arg) if arg.isdigit() else 1
            if op == "A":
                row = max(0, row - n)
            elif op == "B":
                row += n
            elif op == "K":
                if arg in ("", "0"):
                    del lines[row][col:]
                elif arg == "2":
                    lines[row] = []
            elif op == "G":
                col = n - 1
            i = match.end()
            while len(lines) <= row:
                lines.append([])
            continue
        if ch == "\x1b":
            i += 2  # a two-character escape (e.g. ESC 7 / ESC 8): no text
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            while len(lines) <= row:
                lines.append([])
        elif ch >= " ":
            line = lines[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        i += 1
    return ["".join(line).rstrip() for line in lines]


def test_a_terminal_shows_phase_and_time_while_waiting_and_nothing_after(upstream, hermes_home, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("alpha\n")
    upstream.enqueue(
        _slow(tool_reply([call("read_file", {"path": str(notes)})]), 1.5),
        _slow(text_reply("The notes say alpha.", chunk_delay=0.05), 1.5),
    )
    code, raw = _run_on_terminal(["chat", "-q", "read my notes", "--yolo"], _env(hermes_home, upstream), tmp_path)
    assert code == 0, raw

    answer_at = raw.index("alpha.")
    before = raw[:answer_at]
    assert re.search(r"waiting for the model \(1 s", before), raw  # a phase and its elapsed time
    assert "\r\x1b[2K" in before  # drawn in place, erased in place
    final = screen(raw)
    shown = "\n".join(final)
    assert "The notes say alpha." in shown and "→ read_file" in shown and "✓ read_file" in shown
    for word in STATUS_WORDS:
        assert word not in shown, f"{word!r} left on the screen:\n{shown}"
    # the activity lines were printed whole, never into a status line
    assert any(line.startswith("→ read_file: ") for line in final), shown


def test_quiet_shows_no_status_on_a_terminal(upstream, hermes_home, tmp_path):
    upstream.enqueue(_slow(text_reply("Quietly done."), 1.0))
    code, raw = _run_on_terminal(["chat", "-q", "hi", "--quiet"], _env(hermes_home, upstream), tmp_path)
    assert code == 0, raw
    assert "Quietly done." in raw
    assert "waiting for the model" not in raw
    assert not any(frame in raw for frame in "⠋⠙⠹⠸")


def test_without_a_terminal_a_plain_line_at_the_interval_on_stderr_only(upstream, hermes_home, tmp_path):
    upstream.enqueue(_slow(text_reply("Slow but sure."), 1.6))
    proc = subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", "hi", "--json"],
        env=_env(hermes_home, upstream, HERMES_TEST_STATUS_INTERVAL="0.5"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        assert isinstance(json.loads(line), dict)  # stdout: one JSON object per line, nothing else
    lines = proc.stderr.splitlines()
    waiting = [line for line in lines if line.startswith("hermes: waiting for the model (")]
    assert 2 <= len(waiting) <= 4, proc.stderr  # ~1.6 s of silence at one line per 0.5 s
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr

    upstream.enqueue(_slow(text_reply("Slow but sure."), 1.6))
    quiet = subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", "hi", "--quiet"],
        env=_env(hermes_home, upstream, HERMES_TEST_STATUS_INTERVAL="0.5"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert quiet.returncode == 0 and quiet.stdout == "Slow but sure.\n"
    assert "waiting" not in quiet.stderr


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_come_every_ten_seconds_and_name_the_rate():
    clock = FakeClock()
    err = io.StringIO()
    status = StatusLine(err, tty=False, clock=clock)  # never started: ticks are driven here
    status.observe(TurnStarted(session_id="s", model="m"))
    for _ in range(250):  # 25 s in 0.1 s steps
        clock.now += 0.1
        status.tick()
    assert err.getvalue().splitlines() == [
        "hermes: waiting for the model (10 s)",
        "hermes: waiting for the model (20 s)",
    ]
    status.observe(ModelProgress("generating", 40, 9.44))
    clock.now += 10
    status.tick()
    assert err.getvalue().splitlines()[-1] == "hermes: generating (10 s, 35 s in all) · 9.4 tokens/s"
    status.observe(TextDelta("answer"))  # the answer streams: no status meanwhile
    status.observe(ModelProgress("generating", 80, 9.5))
    clock.now += 30
    status.tick()
    assert len(err.getvalue().splitlines()) == 3
    status.observe(SegmentEnd())
    status.observe(ToolStarted("c1", "terminal", {}, "ls"))
    clock.now += 10
    status.tick()
    assert err.getvalue().splitlines()[-1] == "hermes: running terminal (10 s, 75 s in all)"
    status.close()


def test_a_terminal_line_is_erased_before_anything_else_is_written():
    clock = FakeClock()
    err = io.StringIO()
    status = StatusLine(err, tty=True, clock=clock)
    status.observe(TurnStarted(session_id="s", model="m"))
    clock.now += 3
    status.tick()
    assert err.getvalue().endswith("waiting for the model (3 s)")
    with status.paused():
        err.write("→ terminal: ls\n")
    assert screen(err.getvalue()) == ["→ terminal: ls", ""]
    status.close()
    assert "waiting" not in "\n".join(screen(err.getvalue()))
