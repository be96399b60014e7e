"""A prompt typed during a turn is queued and sent when the turn ends; /compact; context %."""

from __future__ import annotations

from hermes.agent.context import SUMMARIZER_PROMPT
from hermes.testing.upstream import call, text_reply, tool_reply
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.tool_card import ToolCard
from hermes.tui.widgets.user_message import UserMessage

from .conftest import send_turn, type_and_send, until, until_settled


def prompts(app) -> list[str]:
    return [m.text for m in app.chat.transcript.query(UserMessage)]


def notices(app, marker: str) -> list[str]:
    return [n.text for n in app.chat.transcript.query(Notice) if marker in n.text]


async def test_a_prompt_typed_during_a_turn_is_queued_and_sent_when_it_ends(make_tui, upstream, gates):
    upstream.enqueue(
        tool_reply([call("shell", {"command": "make", "gate": "build"})]),
        text_reply("Built."),
        text_reply("Tested."),
    )
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "build it")
        await until(pilot, lambda: app.chat.query(ToolCard) and app.chat.query(ToolCard).first().state == "running")
        await type_and_send(pilot, "then run the tests")
        await until(pilot, lambda: app.chat.turns.queued == ["then run the tests"])
        assert app.chat.queue_view.has_class("-shown")
        assert "then run the tests" in str(app.chat.queue_view.render())
        assert app.chat.chat_input.text == ""  # accepted, not refused back into the box
        assert prompts(app) == ["build it"]
        assert len(upstream.requests) == 1

        gates["build"].set()
        await until(pilot, lambda: prompts(app) == ["build it", "then run the tests"])
        await until(pilot, lambda: len(upstream.requests) == 3 and not app.chat.turns.busy)
        await until_settled(pilot)
        assert app.chat.turns.queued == [] and not app.chat.queue_view.has_class("-shown")
    # The queued prompt went out in the same session, after the first turn's answer.
    last = upstream.requests[2].messages
    assert last[-1] == {"role": "user", "content": "then run the tests"}
    assert {"role": "assistant", "content": "Built."} in last


async def test_queued_prompts_are_sent_one_turn_each_in_order(make_tui, upstream, gates):
    upstream.enqueue(
        tool_reply([call("shell", {"command": "a", "gate": "a"})]),
        text_reply("one"),
        text_reply("two"),
        text_reply("three"),
    )
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "first")
        await until(pilot, lambda: app.chat.query(ToolCard))
        await type_and_send(pilot, "second")
        await type_and_send(pilot, "third")
        await until(pilot, lambda: app.chat.turns.queued == ["second", "third"])
        gates["a"].set()
        await until(
            pilot, lambda: len(upstream.requests) == 4 and not app.chat.turns.busy and not app.chat.turns.queued
        )
        await until_settled(pilot)
        assert prompts(app) == ["first", "second", "third"]
    assert [r.messages[-1]["content"] for r in upstream.requests[2:]] == ["second", "third"]


async def test_esc_interrupts_and_hands_the_queued_prompt_back(make_tui, upstream, gates):
    upstream.enqueue(tool_reply([call("shell", {"command": "slow", "gate": "never"})]))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "start")
        await until(pilot, lambda: app.chat.query(ToolCard) and app.chat.query(ToolCard).first().state == "running")
        await type_and_send(pilot, "queued one")
        await until(pilot, lambda: app.chat.turns.queued == ["queued one"])
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.turns.busy and app.chat.chat_input.text == "queued one")
        await until_settled(pilot)
        assert app.chat.turns.queued == [] and prompts(app) == ["start"]
        assert notices(app, "interrupted")
    assert len(upstream.requests) == 1  # nothing was sent on its own


async def test_alt_up_takes_the_newest_queued_prompt_back_for_editing(make_tui, upstream, gates):
    upstream.enqueue(tool_reply([call("shell", {"command": "x", "gate": "g"})]), text_reply("done"), text_reply("ok"))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "work")
        await until(pilot, lambda: app.chat.query(ToolCard))
        await type_and_send(pilot, "keep me")
        await type_and_send(pilot, "typo here")
        await until(pilot, lambda: app.chat.turns.queued == ["keep me", "typo here"])
        await pilot.press("alt+up")
        await until(pilot, lambda: app.chat.chat_input.text == "typo here")
        assert app.chat.turns.queued == ["keep me"]
        app.chat.chat_input.clear()  # dropped
        gates["g"].set()
        await until(pilot, lambda: len(upstream.requests) == 3 and not app.chat.turns.busy)
        await until_settled(pilot)
        assert prompts(app) == ["work", "keep me"]


async def test_compact_command_summarises_and_shows_a_notice(make_tui, upstream, store):
    upstream.enqueue(
        text_reply("first answer"), text_reply("second answer"), text_reply("SUMMARY: two questions answered")
    )
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await send_turn(pilot, "question one")
        await send_turn(pilot, "question two")
        await type_and_send(pilot, "/compact")
        await until(pilot, lambda: notices(app, "context compacted"))
        await until(pilot, lambda: not app.chat.turns.busy)
        await until_settled(pilot)
        markers = store.compactions(app.session_id)
        assert len(markers) == 1 and markers[0].summary == "SUMMARY: two questions answered"
        assert app.chat.status_bar.context_tokens > 0
    summary_request = upstream.requests[2]
    assert summary_request.messages[0]["content"] == SUMMARIZER_PROMPT
    assert "tools" not in summary_request.body
    assert len(store.get_messages(markers[0].session_id)) == 4  # every message is kept


async def test_automatic_compaction_notice_and_real_context_percent(make_tui, upstream, settings):
    small = settings.replace(context_window=1000, compact_at=0.8)
    # The first answer reports a 900-token prompt: 90 % of the window, so the next turn compacts.
    upstream.enqueue(
        text_reply("big answer", usage=(900, 10)), text_reply("SUMMARY"), text_reply("after", usage=(300, 5))
    )
    app = make_tui(settings=small, app_settings=small)
    async with app.run_test(size=(120, 30)) as pilot:
        await send_turn(pilot, "first")
        assert app.chat.status_bar.context_percent == 90.0
        assert "ctx 90% of 1.0K" in str(app.chat.status_bar.render())
        await send_turn(pilot, "second")
        await until_settled(pilot)
        assert notices(app, "context compacted")
        assert app.chat.status_bar.context_percent == 30.0
    assert upstream.requests[1].messages[0]["content"] == SUMMARIZER_PROMPT
