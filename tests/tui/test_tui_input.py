"""The prompt: Enter sends, Shift+Enter / Ctrl+J add lines, Up/Down walk history, / completes."""

from __future__ import annotations

from pathlib import Path

from hermes.testing.upstream import text_reply
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.user_message import UserMessage

from .conftest import seed_session
from .test_tui_turns import type_and_send


async def test_newline_keys_and_enter(make_tui, upstream):
    upstream.enqueue(text_reply("ok"))
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert app.chat_input.text == "a\nb\nc"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        assert app.transcript.query_one(UserMessage).text == "a\nb\nc"
        assert app.chat_input.text == ""


async def test_up_down_walk_history(make_tui, upstream):
    upstream.enqueue(text_reply("1"), text_reply("2"))
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "one")
        await app.workers.wait_for_complete()
        await type_and_send(pilot, "two")
        await app.workers.wait_for_complete()
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("up")
        assert app.chat_input.text == "two"
        await pilot.press("up")
        assert app.chat_input.text == "one"
        await pilot.press("down")
        assert app.chat_input.text == "two"
        await pilot.press("down")
        assert app.chat_input.text == "draft"


async def test_slash_completion(make_tui):
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash", "s", "e")
        assert app.menu.visible
        assert app.menu.selected().name == "sessions"
        await pilot.press("tab")
        assert app.chat_input.text == "/sessions "
        assert not app.menu.visible
        await pilot.press("ctrl+a", "ctrl+k", "slash", "f")
        assert [c.name for c in app.menu._commands] == ["fork", "focus"]
        await pilot.press("down", "escape")
        assert not app.menu.visible
        assert app.chat_input.text == "/f"


async def test_copy_export_help_and_unknown(make_tui, store, tmp_path: Path):
    sid = seed_session(store, "Export me", [("question", "The **answer**.")])
    app = make_tui(session_id=sid)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "/copy")
        assert app.clipboard == "The **answer**."
        await type_and_send(pilot, "/export")
        exported = tmp_path / f"hermes-{sid}.md"
        text = exported.read_text()
        assert "# Export me" in text and "## You\n\nquestion" in text and "The **answer**." in text
        await type_and_send(pilot, "/help")
        await type_and_send(pilot, "/bogus")
        await pilot.pause(0.05)
        notices = [str(n.render()) for n in app.transcript.query(Notice)]
        assert any("/sessions" in n and "Ctrl+S" in n for n in notices)
        assert any("unknown command /bogus" in n for n in notices)


async def test_view_toggles_and_theme(make_tui):
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "/reasoning hide")
        assert app.transcript.has_class("-hide-reasoning")
        await type_and_send(pilot, "/reasoning show")
        assert not app.transcript.has_class("-hide-reasoning")
        await pilot.press("ctrl+o")
        assert app.transcript.has_class("-focus")
        await type_and_send(pilot, "/theme light")
        assert app.theme == "textual-light"
        await pilot.press("ctrl+t")
        assert app.theme == "textual-dark"
