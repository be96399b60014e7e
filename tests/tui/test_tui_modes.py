"""Modes in the TUI: Shift+Tab cycles them without leaving the prompt, the status bar shows
the mode, /mode and /plan set it, and a plan-mode turn is refused its writes and told it plans."""

from __future__ import annotations

from hermes.agent.modes import PLAN_NOTE
from hermes.testing.upstream import call, text_reply, tool_reply

from .conftest import send_turn, type_and_send, until


def _bar(app) -> str:
    return app.chat.status_bar.render().plain


async def test_shift_tab_cycles_modes_and_keeps_the_prompt_focused(make_tui):
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.chat
        await until(pilot, lambda: chat.chat_input.has_focus)
        await pilot.press("h", "i")
        assert chat.mode == "default" and "PLAN" not in _bar(app)
        await pilot.press("shift+tab")
        await until(pilot, lambda: chat.mode == "accept-edits")
        assert chat.chat_input.has_focus
        assert _bar(app).startswith("✎ accept edits")
        await pilot.press("shift+tab")
        await until(pilot, lambda: chat.mode == "plan")
        assert chat.chat_input.has_focus and _bar(app).startswith("⏸ PLAN")
        await pilot.press("shift+tab")  # the key that leaves plan mode
        await until(pilot, lambda: chat.mode == "default")
        assert chat.chat_input.has_focus and "PLAN" not in _bar(app)
        # Typing after Shift+Tab still lands in the prompt.
        await pilot.press("!")
        await until(pilot, lambda: chat.chat_input.text == "hi!")


async def test_mode_commands(make_tui):
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.chat
        await type_and_send(pilot, "/plan")
        await until(pilot, lambda: chat.mode == "plan")
        await until(pilot, lambda: _bar(app).startswith("⏸ PLAN"))
        await type_and_send(pilot, "/mode accept-edits")
        await until(pilot, lambda: chat.mode == "accept-edits")
        await type_and_send(pilot, "/mode nonsense")
        await until(pilot, lambda: "unknown mode 'nonsense'" in chat.transcript.query("Notice").last().text)
        assert chat.mode == "accept-edits"
        await type_and_send(pilot, "/mode default")
        await until(pilot, lambda: chat.mode == "default")


async def test_a_plan_turn_refuses_writes_and_carries_the_note(make_tui, upstream):
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "x.txt", "content": "pwned"}, id="w"),
                    call("shell", {"command": "rm -rf build"}, id="s")]),
        text_reply("1. write x.txt"),
        text_reply("done"),
    )  # fmt: skip
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        chat = app.chat
        await pilot.press("shift+tab", "shift+tab")
        await until(pilot, lambda: chat.mode == "plan")
        await send_turn(pilot, "make x")
        first = upstream.requests[0]
        assert first.messages[-1] == {"role": "user", "content": f"make x\n\n{PLAN_NOTE}"}
        results = {m["tool_call_id"]: m["content"] for m in upstream.requests[1].messages if m["role"] == "tool"}
        assert results["w"].startswith("DENIED: plan mode is on")
        assert results["s"].startswith("DENIED: plan mode is on")
        await type_and_send(pilot, "/mode default")
        await until(pilot, lambda: chat.mode == "default")
        await send_turn(pilot, "go")
        assert upstream.requests[2].messages[-1] == {"role": "user", "content": "go"}
