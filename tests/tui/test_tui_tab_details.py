"""Tab and Shift+Tab keep the focus in the prompt box; Ctrl+G (named in /help) opens every
tool result and reasoning block."""

from __future__ import annotations

from hermes.agent.events import (
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.types import TurnResult
from hermes.tui.screens.chat import TAB_HINT
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.reasoning_block import ReasoningBlock
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import type_and_send, until, until_settled


def notifications(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_tab_and_shift_tab_never_leave_the_prompt(make_tui) -> None:
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        renderer = app.chat.turns.begin_turn("show")
        renderer.handle(TurnStarted("s1", "scripted-model"))
        renderer.handle(ToolStarted("c1", "terminal", {"command": "ls"}, "ls"))
        renderer.handle(ToolCompleted("c1", "terminal", "a\nb", 0.1, False, {"command": "ls"}))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", "")))
        await until_settled(pilot)
        box = app.chat.chat_input
        await until(pilot, lambda: app.focused is box)
        for key in ("tab", "shift+tab", "tab", "tab"):
            await pilot.press(key)
            assert app.focused is box, key
        await pilot.press("h", "i")
        assert box.text == "hi"
        assert TAB_HINT in notifications(app)
        app.chat.transcript.focus()  # e.g. a mouse click; Tab brings the focus back
        await pilot.pause()
        await pilot.press("tab")
        assert app.focused is box


async def test_ctrl_g_opens_and_closes_tool_results_and_reasoning(make_tui) -> None:
    app = make_tui()
    async with app.run_test(size=(100, 40)) as pilot:
        renderer = app.chat.turns.begin_turn("show")
        renderer.handle(TurnStarted("s1", "scripted-model"))
        renderer.handle(ReasoningDelta("thinking it over"))
        renderer.handle(ToolStarted("c1", "terminal", {"command": "ls"}, "ls"))
        renderer.handle(ToolCompleted("c1", "terminal", "a\nb", 0.1, False, {"command": "ls"}))
        renderer.handle(TextDelta("Two files."))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", "Two files.")))
        await until_settled(pilot)
        block = app.chat.transcript.query_one(ReasoningBlock)
        card = app.chat.transcript.query_one(ToolCard)
        block.collapsed = True
        await pilot.pause()
        assert block.collapsed and not card.expanded
        await pilot.press("ctrl+g")
        await until(pilot, lambda: not block.collapsed and card.expanded)
        assert app.focused is app.chat.chat_input
        await pilot.press("ctrl+g")
        await until(pilot, lambda: block.collapsed and not card.expanded)


async def test_help_names_the_keys(make_tui) -> None:
    app = make_tui()
    async with app.run_test(size=(100, 60)) as pilot:
        await type_and_send(pilot, "/help")
        await until(pilot, lambda: any("Ctrl+G" in n.text for n in app.chat.transcript.query(Notice)))
        text = next(n.text for n in app.chat.transcript.query(Notice) if "Ctrl+G" in n.text)
        assert "open / close every tool result and reasoning" in text
        assert "Tab" in text
