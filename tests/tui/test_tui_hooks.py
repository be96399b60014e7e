"""Hooks in the TUI: a PreToolUse hook that blocks a command shows on the tool card (its
stderr is the result) and as a notice; a hook that fails is a notice and the turn goes on."""

from __future__ import annotations

from hermes.hooks_config import HookConfig
from hermes.testing.upstream import call, text_reply, tool_reply
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import send_turn


async def test_a_blocking_hook_shows_on_the_card_and_as_a_notice(make_tui, upstream, settings):
    hooks = (
        HookConfig("PreToolUse", "echo 'rm is blocked in this repository' >&2; exit 2", matcher="shell"),
        HookConfig("Stop", "exit 7"),
    )
    upstream.enqueue(tool_reply([call("shell", {"command": "rm -rf build/"})]), text_reply("I will not delete it."))
    app = make_tui(settings=settings.replace(hooks=hooks, sandbox="off"))
    async with app.run_test(size=(100, 30)) as pilot:
        await send_turn(pilot, "clean up")
        card = app.chat.transcript.query_one(ToolCard)
        assert card.state == "failed"
        assert "rm is blocked in this repository" in card.error
        notices = [str(n.render()) for n in app.chat.transcript.query(Notice)]
        assert any("PreToolUse hook on shell blocked: rm is blocked" in n for n in notices), notices
        assert any("Stop hook `exit 7` failed with exit code 7" in n for n in notices), notices
    results = [m["content"] for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert results == ["rm is blocked in this repository"]
