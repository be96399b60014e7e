"""Layout snapshots (pytest-textual-snapshot): main screen, tool cards, session picker.

Everything shown is deterministic: fixed session ids, fixed durations, no running spinners.
`run_before` waits for the intended state (the transcript settled, the picker filled) rather
than for a fixed time, so a loaded machine cannot snapshot a half-rendered screen.
Update with `pytest tests/tui --snapshot-update` after checking the new SVGs by eye.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.events import SegmentEnd, TextDelta, ToolCallGenerating, ToolCompleted, ToolStarted, TurnCompleted
from hermes.agent.factory import build_agent
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnResult, Usage
from hermes.config import Settings
from hermes.store.records import NewMessage
from hermes.testing.state_db import SyncStateDb
from hermes.tui.app import HermesApp, make_app
from hermes.tui.screens.session_picker import SessionPicker
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.notice import Notice

from .conftest import until, until_settled


def snapshot_app(store: SyncStateDb, tmp_path: Path, **kwargs) -> HermesApp:
    settings = Settings(home=tmp_path, base_url="http://127.0.0.1:9/v1", model="scripted-model", api_key="x")
    sessions = store.sessions
    agent = build_agent(settings, sessions, tools=ToolRegistry())  # never called: no turn runs here
    project = tmp_path / "project"  # a fixed name: the status bar shows the folder's
    project.mkdir(exist_ok=True)
    return make_app(agent, sessions, settings, cwd=str(project), **kwargs)


def seed(store: SyncStateDb) -> str:
    record = store.create_session(
        source="tui", model="scripted-model", title="Refactor the parser", session_id="s-main"
    )
    for role, content in [
        ("user", "Why does the tokenizer drop the last line?"),
        (
            "assistant",
            "Because `split()` discards the trailing newline.\n\n"
            "```python\nlines = text.splitlines(keepends=True)\n```\n\n"
            "| before | after |\n|---|---|\n| 3 lines | 4 lines |",
        ),
        ("user", "Fix it please"),
    ]:
        store.append_message(record.id, NewMessage(role=role, content=content))
    store.append_message(
        record.id,
        NewMessage(
            role="assistant",
            content="On it.",
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "parser.py"}'},
                }
            ],
        ),
    )
    store.append_message(
        record.id,
        NewMessage(
            role="tool", content="def parse(text):\n    return text.split()\n", tool_call_id="c1", tool_name="read_file"
        ),
    )
    store.append_message(record.id, NewMessage(role="assistant", content="Done — the parser keeps line ends now."))
    store.add_usage(record.id, input_tokens=1234, output_tokens=321)
    return record.id


async def quiet(pilot) -> None:
    pilot.app.chat.chat_input.cursor_blink = False
    await until_settled(pilot)


async def resumed(pilot) -> None:
    """The seeded session is on screen: its answers rendered and the "resumed" notice shown."""
    app = pilot.app
    await until(
        pilot, lambda: len(app.chat.transcript.query(AssistantMessage)) == 3 and app.chat.transcript.query(Notice)
    )
    await quiet(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
def test_main_screen(snap_compare, store, tmp_path, size):
    app = snapshot_app(store, tmp_path, session_id=seed(store))
    assert snap_compare(app, terminal_size=size, run_before=resumed)


def test_main_screen_light(snap_compare, store, tmp_path):
    app = snapshot_app(store, tmp_path, session_id=seed(store), theme="textual-light")
    assert snap_compare(app, terminal_size=(80, 24), run_before=resumed)


def test_tool_cards(snap_compare, store, tmp_path):
    app = snapshot_app(store, tmp_path)
    patch_args = {
        "path": "parser.py",
        "old_string": "    return text.split()",
        "new_string": "    return text.splitlines(keepends=True)",
    }

    async def run_before(pilot) -> None:
        renderer = pilot.app.chat.turns.begin_turn("fix parser.py and run the tests")
        renderer.handle(TextDelta("Patching, then testing."))
        renderer.handle(ToolCallGenerating("c1", "patch", 0))
        renderer.handle(SegmentEnd())
        renderer.handle(ToolStarted("c1", "patch", patch_args, "parser.py"))
        patched = (
            "Patched parser.py: replaced 1 occurrence.\n--- a/parser.py\n+++ b/parser.py\n@@ -6,3 +6,3 @@\n"
            " def split(text):\n-    return text.split()\n+    return text.splitlines(keepends=True)\n \n"
        )  # the patch tool's result: its own diff of the change, with the file's line numbers
        renderer.handle(ToolCompleted("c1", "patch", patched, 0.02, False, patch_args))
        renderer.handle(ToolStarted("c2", "terminal", {"command": "pytest -q"}, "pytest -q"))
        renderer.handle(
            ToolCompleted(
                "c2", "terminal", "exit code 1\nE   AssertionError: 3 != 4", 1.25, True, {"command": "pytest -q"}
            )
        )
        result = TurnResult("s1", "completed", "", usage=Usage(2100, 180), api_calls=2, context_tokens=1230)
        renderer.handle(TurnCompleted(result))
        pilot.app.chat.status_bar.turn_seconds = 2.5
        await quiet(pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_session_picker(snap_compare, store, tmp_path):
    for i, title in enumerate(["Refactor the parser", "Trip to Lisbon", "Quarterly report"]):
        record = store.create_session(
            source=("tui", "cli", "api_server")[i], model="scripted-model", title=title, session_id=f"sess-000{i}"
        )
        store.append_message(record.id, NewMessage(role="user", content=f"message about {title.lower()}"))

    async def run_before(pilot) -> None:
        await pilot.press("ctrl+s")
        app = pilot.app
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, SessionPicker) and app.screen.is_mounted and app.screen.results.option_count == 3
            ),
        )
        await pilot.pause()

    app = snapshot_app(store, tmp_path)
    assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)
