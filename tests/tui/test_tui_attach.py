"""The TUI's `@` picker and attachments, and the image chip row, with the real engine and the
scripted upstream (what the model received is checked on the upstream's requests)."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from textual import events

from hermes.attachment_blocks import split
from hermes.testing.upstream import text_reply
from hermes.tui.widgets.attachment_card import AttachmentCard, ImageCard
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.user_message import UserMessage

from .conftest import seed_session, send_turn, until, until_settled

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x02" * 30


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / ".gitignore").write_text("*.log\n")
    (folder / "greet.py").write_text("print('hi')\nprint('bye')\nprint('end')\n")
    (folder / "grease.log").write_text("ignored\n")
    (folder / "docs").mkdir()
    (folder / "docs" / "guide.md").write_text("# Guide\n")
    (folder / ".env").write_text("TOKEN=ZQX-SECRET\n")
    (folder / "shot.png").write_bytes(PNG)
    return folder


def user_messages(upstream, index=-1):
    return [m for m in upstream.requests[index].messages if m["role"] == "user"]


async def test_at_opens_a_fuzzy_picker_that_respects_gitignore(make_tui, work):
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("l", "o", "o", "k", "space", "@", "g", "r", "e")
        menu = app.chat.query_one("#mentions")
        await until(pilot, lambda: menu.is_open and menu.query_text == "gre")
        assert menu.paths[0] == "greet.py"
        assert not any("grease.log" in path for path in menu.paths)  # ignored by .gitignore
        await pilot.press("tab")
        await until(pilot, lambda: app.chat.chat_input.text == "look @greet.py ")
        assert not menu.is_open
        await pilot.press("@", "g", "u", "i")
        await until(pilot, lambda: menu.is_open and menu.selected() == "docs/guide.md")
        await pilot.press("escape")
        await until(pilot, lambda: not menu.is_open)
        assert app.chat.chat_input.text == "look @greet.py @gui"


async def test_a_mention_attaches_once_shows_a_folded_card_and_comes_back_on_resume(
    make_tui, upstream, work, store
):
    upstream.enqueue(text_reply("Two prints."), text_reply("Yes."))
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        await send_turn(pilot, "explain @greet.py#L1-2 and @.env")
        await until_settled(pilot)
        (sent,) = user_messages(upstream)
        typed, (attachment,) = split(sent["content"])
        assert typed == "explain @greet.py#L1-2 and @.env"
        assert attachment.body == "print('hi')\nprint('bye')\n"
        card = app.chat.transcript.query_one(AttachmentCard)
        assert card.collapsed and card.title == "📎 greet.py#L1-2 · 2 lines"
        assert app.chat.transcript.query_one(UserMessage).text == typed  # the card, not the content, shows
        warnings = [n.text for n in app.chat.transcript.query(Notice) if "was not attached" in n.text]
        assert len(warnings) == 1 and "@.env was not attached" in warnings[0]
        await send_turn(pilot, "sure?")
        sent_again = [m["content"] for m in user_messages(upstream)]
        assert sent_again == [sent["content"], "sure?"]  # from history, once
        session_id = app.chat.session_id

    resumed = make_tui(cwd=str(work), session_id=session_id)
    async with resumed.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: len(resumed.chat.transcript.query(AttachmentCard)) == 1)
        card = resumed.chat.transcript.query_one(AttachmentCard)
        assert card.title == "📎 greet.py#L1-2 · 2 lines" and card.collapsed


async def test_image_chip_is_removable_and_the_image_goes_with_the_next_prompt(make_tui, upstream, work):
    upstream.enqueue(text_reply("A picture."))
    app = make_tui(cwd=str(work))
    async with app.run_test(size=(100, 30)) as pilot:
        chips = app.chat.image_chips
        await send_command(pilot, "/image shot.png")
        await until(pilot, lambda: len(chips.images) == 1 and chips.has_class("-visible"))
        assert "shot.png" in chips.chip_text and "alt+x" in chips.chip_text
        await pilot.press("alt+x")
        await until(pilot, lambda: not chips.images and not chips.has_class("-visible"))
        await send_command(pilot, "/image missing.png")
        notices = app.chat.transcript.query
        await until(pilot, lambda: any("missing.png: no such file" in n.text for n in notices(Notice)))
        (work / "fake.png").write_text("not an image")
        await send_command(pilot, "/image fake.png")
        await until(pilot, lambda: any("not a PNG" in n.text for n in app.chat.transcript.query(Notice)))
        assert not chips.images
        # a pasted path (a terminal's drag and drop) becomes a chip, not text
        app.chat.chat_input.post_message(events.Paste(f"'{work / 'shot.png'}'"))
        await until(pilot, lambda: len(chips.images) == 1)
        assert app.chat.chat_input.text == ""
        await send_turn(pilot, "what is it?")
        (sent,) = user_messages(upstream)
        assert sent["content"] == [
            {"type": "text", "text": "what is it?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}},
        ]
        assert not chips.images
        await until(pilot, lambda: len(app.chat.transcript.query(ImageCard)) == 1)
        assert "image/png" in app.chat.transcript.query_one(ImageCard).text


async def test_a_stored_image_shows_as_a_line_when_resumed(make_tui, store, work):
    session_id = seed_session(store, "pic", [])
    from hermes.store.records import NewMessage

    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    content = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": url}}]
    store.append_message(session_id, NewMessage(role="user", content=content))
    store.append_message(session_id, NewMessage(role="assistant", content="seen"))
    app = make_tui(cwd=str(work), session_id=session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: len(app.chat.transcript.query(ImageCard)) == 1)
        assert app.chat.transcript.query_one(UserMessage).text == "see"


async def send_command(pilot, text: str) -> None:
    pilot.app.chat.chat_input.insert(text)
    await pilot.press("escape")  # close the completion menu the text opened
    await pilot.press("enter")
