"""Text put back in the prompt box (Alt+↑, Esc with queued prompts) has the cursor at its end."""

from __future__ import annotations

from hermes.testing.upstream import call, tool_reply
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import type_and_send, until


def end_of(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return (len(lines) - 1, len(lines[-1]))


async def test_esc_puts_the_queued_prompts_back_with_the_cursor_at_the_end(make_tui, upstream) -> None:
    upstream.enqueue(tool_reply([call("shell", {"command": "slow", "gate": "never"})]))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "start")
        await until(pilot, lambda: [c.state for c in app.chat.query(ToolCard)] == ["running"])
        await type_and_send(pilot, "first queued")
        await type_and_send(pilot, "second queued")
        await until(pilot, lambda: app.chat.turns.queued == ["first queued", "second queued"])
        await pilot.press("escape")
        box = app.chat.chat_input
        await until(pilot, lambda: not app.chat.turns.busy and box.text == "first queued\nsecond queued")
        assert box.cursor_location == end_of(box.text)
        await pilot.press("space", "n", "o", "w")
        assert box.text == "first queued\nsecond queued now"


async def test_alt_up_puts_the_prompt_back_with_the_cursor_at_the_end(make_tui, upstream, gates) -> None:
    upstream.enqueue(tool_reply([call("shell", {"command": "x", "gate": "g"})]))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "work")
        await until(pilot, lambda: app.chat.query(ToolCard))
        await type_and_send(pilot, "typo here")
        await until(pilot, lambda: app.chat.turns.queued == ["typo here"])
        box = app.chat.chat_input
        box.insert("draft")
        await pilot.press("alt+up")
        await until(pilot, lambda: box.text == "typo here\ndraft")
        assert box.cursor_location == end_of(box.text)
        await pilot.press("x")
        assert box.text == "typo here\ndraftx"
        gates["g"].set()
