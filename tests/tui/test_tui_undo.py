"""/diff, /undo and /redo in the real app (Pilot), with the real core tools editing a real
git tree; the turn's one-line change summary; the dialog before overwriting an outside edit.

The main test also writes a plain-text capture of the screen after each step to
$HERMES_TEST_EVIDENCE_DIR when that is set (evidence for the issue's note)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.tools.registry import default_registry
from hermes.checkpoints.files import LocalSessionFiles
from hermes.testing.upstream import call, text_reply, tool_reply
from hermes.tui.app import make_app
from hermes.tui.file_commands import NOT_OFFERED
from hermes.tui.screens.confirm_overwrite import ConfirmOverwrite
from hermes.tui.widgets.diff_view import DiffView
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.user_message import UserMessage

from .conftest import send_turn, type_and_send, until, until_settled


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "app.py").write_text("def greet():\n    return 'hello'\n")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    return folder


def screen_text(app) -> str:
    """The screen as plain text (what a terminal would show, without colour)."""
    return "\n".join(strip.text.rstrip() for strip in app.screen._compositor.render_strips()).rstrip() + "\n"


def notices(app) -> list[str]:
    return [n.text for n in app.chat.transcript.query(Notice)]


class Evidence:
    def __init__(self) -> None:
        folder = os.environ.get("HERMES_TEST_EVIDENCE_DIR")
        self.folder = Path(folder) if folder else None
        self.parts: list[str] = []

    def capture(self, app, title: str) -> None:
        if self.folder is not None:
            self.parts.append(f"===== {title} =====\n{screen_text(app)}")

    def save(self, name: str) -> None:
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / name).write_text("\n".join(self.parts), encoding="utf-8")


async def test_diff_undo_and_redo_in_the_tui(settings, sessions, upstream, work):
    upstream.enqueue(
        tool_reply([call("patch", {"path": "app.py", "old_string": "'hello'", "new_string": "'hello, world'"})]),
        tool_reply([call("terminal", {"command": "printf 'import app\\n\\nprint(app.greet())\\n' > main.py"})]),
        text_reply("Greeting changed and main.py added."),
    )
    agent = build_agent(settings, sessions, tools=default_registry())
    app = make_app(agent, sessions, settings, cwd=str(work), files=LocalSessionFiles(sessions, settings.home))
    evidence = Evidence()
    try:
        async with app.run_test(size=(100, 40)) as pilot:
            await send_turn(pilot, "make the greeting friendlier and add a main.py")
            await until_settled(pilot)
            assert "✎ 2 files changed, +4 −1 · /diff shows it, /undo reverts it" in notices(app)
            evidence.capture(app, "after the turn: the one-line change summary")

            await type_and_send(pilot, "/diff")
            await until(pilot, lambda: len(app.chat.transcript.query(DiffView)) == 1)
            await until_settled(pilot)
            view = app.chat.transcript.query_one(DiffView)
            assert [c.path for c in view.changes] == ["app.py", "main.py"]
            evidence.capture(app, "/diff: per file, collapsible, coloured")

            await type_and_send(pilot, "/undo")
            await until(pilot, lambda: any(n.startswith("↶ undid 1 turn") for n in notices(app)))
            await until_settled(pilot)
            assert (work / "app.py").read_text() == "def greet():\n    return 'hello'\n"
            assert not (work / "main.py").exists()
            assert not app.chat.transcript.query(UserMessage)  # the turn left the transcript
            evidence.capture(app, "/undo: files restored, the turn hidden")

            await type_and_send(pilot, "/redo")
            await until(pilot, lambda: any(n.startswith("↷ redid 1 turn") for n in notices(app)))
            await until_settled(pilot)
            assert (work / "app.py").read_text() == "def greet():\n    return 'hello, world'\n"
            assert (work / "main.py").exists()
            assert len(app.chat.transcript.query(UserMessage)) == 1
            evidence.capture(app, "/redo: files and the turn are back")

            (work / "main.py").write_text("print('edited by hand')\n")
            await type_and_send(pilot, "/undo")
            await until(pilot, lambda: isinstance(app.screen, ConfirmOverwrite))
            evidence.capture(app, "/undo after an outside edit: hermes asks")
            await pilot.press("n")
            await until(pilot, lambda: "undo cancelled: nothing was changed" in notices(app))
            assert (work / "main.py").read_text() == "print('edited by hand')\n"

            await type_and_send(pilot, "/undo")
            await until(pilot, lambda: isinstance(app.screen, ConfirmOverwrite))
            await pilot.press("y")
            await until(pilot, lambda: not (work / "main.py").exists())
            await until_settled(pilot)
            evidence.capture(app, "overwrite confirmed: undone")
    finally:
        await agent.aclose()
    evidence.save("tui_undo_session.txt")


async def test_a_screen_without_checkpoints_says_so_in_one_line(make_tui):
    app = make_tui(files=None)
    async with app.run_test(size=(100, 30)) as pilot:
        for command in ("/undo", "/redo", "/diff"):
            await type_and_send(pilot, command)
        await until(pilot, lambda: notices(app).count(NOT_OFFERED) == 3)
