"""The prompt: Enter sends, Shift+Enter / Ctrl+J add lines, Up/Down walk history, / completes."""

from __future__ import annotations

from pathlib import Path

from hermes.testing.upstream import text_reply
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.user_message import UserMessage

from .conftest import seed_session, send_turn, type_and_send, until


async def test_newline_keys_and_enter(make_tui, upstream):
    upstream.enqueue(text_reply("ok"))
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        await until(pilot, lambda: app.chat.chat_input.text == "a\nb\nc")
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.turns.turn_worker is not None, what="the turn to start")
        await app.workers.wait_for_complete()
        assert app.chat.transcript.query_one(UserMessage).text == "a\nb\nc"
        assert app.chat.chat_input.text == ""


async def test_up_down_walk_history(make_tui, upstream):
    upstream.enqueue(text_reply("1"), text_reply("2"))
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await send_turn(pilot, "one")
        await send_turn(pilot, "two")
        await pilot.press("d", "r", "a", "f", "t")
        await until(pilot, lambda: app.chat.chat_input.text == "draft")
        await pilot.press("up")
        await until(pilot, lambda: app.chat.chat_input.text == "two")
        await pilot.press("up")
        await until(pilot, lambda: app.chat.chat_input.text == "one")
        await pilot.press("down")
        await until(pilot, lambda: app.chat.chat_input.text == "two")
        await pilot.press("down")
        await until(pilot, lambda: app.chat.chat_input.text == "draft")


async def test_slash_completion(make_tui):
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash", "s", "e")
        await until(pilot, lambda: app.chat.chat_input.text == "/se" and app.chat.menu.is_open)
        assert app.chat.menu.selected().name == "sessions"
        await pilot.press("tab")
        await until(pilot, lambda: app.chat.chat_input.text == "/sessions ")
        await until(pilot, lambda: not app.chat.menu.is_open)
        await pilot.press("ctrl+a", "ctrl+k", "slash", "f")
        await until(
            pilot,
            lambda: app.chat.chat_input.text == "/f"
            and [c.name for c in app.chat.menu._commands] == ["fork", "focus", "find"],
        )
        await pilot.press("down", "escape")
        await until(pilot, lambda: not app.chat.menu.is_open)
        assert app.chat.chat_input.text == "/f"


async def test_copy_export_help_and_unknown(make_tui, store, tmp_path: Path):
    sid = seed_session(store, "Export me", [("question", "The **answer**.")])
    app = make_tui(session_id=sid)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "/copy")
        await until(pilot, lambda: app.clipboard == "The **answer**.")
        assert app.clipboard == "The **answer**."
        await type_and_send(pilot, "/export")
        exported = tmp_path / "exports" / f"hermes-{sid}.md"  # under the home (tmp_path here)
        await until(pilot, lambda: any("exported to" in n.text for n in app.chat.transcript.query(Notice)))
        text = exported.read_text()
        assert "# Export me" in text and "## User\n\nquestion" in text and "The **answer**." in text
        await type_and_send(pilot, "/help")
        await type_and_send(pilot, "/bogus")

        def notice_texts() -> list[str]:
            return [n.text for n in app.chat.transcript.query(Notice)]  # /help's: its plain text

        await until(pilot, lambda: any("unknown command /bogus" in n for n in notice_texts()))  # after /help's
        notices = notice_texts()
        assert any("/sessions" in n and "Ctrl+S" in n for n in notices)
        assert any("unknown command /bogus" in n for n in notices)


async def test_view_toggles_and_theme(make_tui):
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "/reasoning hide")
        await until(pilot, lambda: app.chat.transcript.has_class("-hide-reasoning"))
        await type_and_send(pilot, "/reasoning show")
        await until(pilot, lambda: not app.chat.transcript.has_class("-hide-reasoning"))
        await pilot.press("ctrl+o")
        await until(pilot, lambda: app.chat.transcript.has_class("-focus"))
        await type_and_send(pilot, "/theme light")
        await until(pilot, lambda: app.theme == "textual-light")
        await pilot.press("ctrl+t")
        await until(pilot, lambda: app.theme == "textual-dark")
