"""A model answer and a tool line holding an OSC 52 clipboard write, a CSI clear screen and
the 8-bit CSI, shown by the TUI: what its compositor hands the terminal has none of them.

Textual itself strips only BEL, BS, VT, FF and CR from widget text (ESC and C1 went through
to the terminal); `ControlsFilter` (hermes/tui/terminal_filter.py) removes the rest. The
lines are rendered the way the compositor renders them (`Widget.render_lines`, which
applies the app's line filters), for every widget on the screen.
"""

from __future__ import annotations

import contextlib
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

from textual.geometry import Region

from hermes.agent.events import SegmentEnd, TextDelta, ToolCompleted, ToolStarted, TurnCompleted, TurnStarted
from hermes.agent.types import TurnResult
from hermes.terminal_text import CONTROLS
from hermes.testing.upstream import ScriptedUpstream, text_reply

from .conftest import until_settled

REPO = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("hermes")
OSC52 = "\x1b]52;c;SGVybWVz\x07"
OSC52_ST = "\x1b]52;c;U1RTVA==\x1b\\"
ANSWER = f"Look: {OSC52} then \x1b[2J and \x9b31m red {OSC52_ST} done."
COMMAND = f"echo {OSC52} \x1b[2J"


def screen_text(app) -> list[str]:
    """The text of every segment the compositor would send for every widget on screen."""
    texts: list[str] = []
    for widget in app.screen.walk_children(with_self=True):
        width, height = widget.size
        if not widget.display or not width or not height:
            continue
        for strip in widget.render_lines(Region(0, 0, width, height)):
            texts.extend(segment.text for segment in strip if not segment.control)
    return texts


async def test_no_control_character_of_an_answer_or_a_tool_line_reaches_the_terminal(make_tui):
    app = make_tui()
    async with app.run_test(size=(120, 40)) as pilot:
        renderer = app.chat.turns.begin_turn(f"show {OSC52}")
        renderer.handle(TurnStarted(session_id="s1", model="scripted-model"))
        renderer.handle(ToolStarted("c1", "terminal", {"command": COMMAND}, COMMAND))
        renderer.handle(ToolCompleted("c1", "terminal", f"out {OSC52}\n", 0.1, False))
        renderer.handle(TextDelta(ANSWER))
        renderer.handle(SegmentEnd())
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", ANSWER)))
        await until_settled(pilot)
        shown = "".join(screen_text(app))
        assert "SGVybWVz" in shown and "U1RTVA==" in shown  # the text is shown ...
        assert not {chr(code) for code in CONTROLS} & set(shown)  # ... without one control character


def test_the_real_tui_on_a_pseudo_terminal_sends_no_clipboard_write(tmp_path):
    """`hermes chat` (the console script) on a pty: the answer is drawn, its OSC 52 (both
    forms), CSI clear screen and 8-bit CSI are not (before the filter all four were)."""
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    command = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "hermes"]
    with ScriptedUpstream.in_thread() as upstream:
        upstream.enqueue(text_reply(ANSWER))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
        env.update(
            HERMES_HOME=str(home), HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model",
            HERMES_SANDBOX="off", PYTHONPATH=str(REPO), TERM="xterm-256color",
        )  # fmt: skip
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        proc = subprocess.Popen(
            command + ["chat"], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=work, start_new_session=True
        )
        os.close(slave)
        screen = bytearray()

        def read_until(done, seconds: float) -> None:
            deadline = time.monotonic() + seconds
            while not done() and time.monotonic() < deadline:
                if select.select([master], [], [], 0.1)[0]:
                    with contextlib.suppress(OSError):
                        screen.extend(os.read(master, 65536))

        try:
            read_until(lambda: b"hermes" in screen and len(screen) > 5000, 60)  # the app is up
            os.write(master, b"go")
            read_until(lambda: False, 0.5)
            os.write(master, b"\r")
            read_until(lambda: b"U1RTVA==" in screen and b"done." in screen, 60)
        finally:
            proc.kill()
            proc.wait()
            os.close(master)
    assert b"SGVybWVz" in screen and b"U1RTVA==" in screen, bytes(screen[-2000:])
    for raw in (b"\x1b]52", b"\x1b[2J", "\x9b".encode(), b"\x1b\\"):
        assert raw not in screen, raw
