"""Find in the transcript (Ctrl+F): matches in messages and inside a collapsed tool card."""

from __future__ import annotations

from hermes.store.records import NewMessage
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.tool_card import ToolCard
from hermes.tui.widgets.user_message import UserMessage

from .conftest import type_and_send, until, until_settled

CALL = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "grep -r TODO"}'}}
OUTPUT = "\n".join([f"src/file{i}.py: nothing here" for i in range(30)] + ["src/deep.py: the needle is here"])


def seed(store) -> str:
    record = store.create_session(source="tui", model="scripted-model", title="Needles")
    for message in [
        NewMessage(role="user", content="find the needle in the sources"),
        NewMessage(role="assistant", content="Searching.", tool_calls=[CALL]),
        NewMessage(role="tool", content=OUTPUT, tool_call_id="c1", tool_name="terminal"),
        NewMessage(role="assistant", content="The Needle is in src/deep.py."),
        NewMessage(role="user", content="thanks"),
    ]:
        store.append_message(record.id, message)
    return record.id


async def test_find_moves_through_matches_and_opens_a_collapsed_tool_card(make_tui, store):
    app = make_tui(session_id=seed(store))
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        card = app.chat.transcript.query_one(ToolCard)
        assert not card.expanded  # the result starts collapsed
        bar = app.chat.find_bar
        prompt = app.chat.transcript.query_one(UserMessage)
        plain_background = prompt.styles.background
        await pilot.press("ctrl+f")
        assert bar.is_open and bar.input.has_focus
        for ch in "needle":
            await pilot.press(ch)
        kinds = [type(m.widget) for m in bar.matches]
        # Transcript order: the prompt, the tool card's hidden output, the answer (smart case: any case).
        assert kinds == [UserMessage, ToolCard, AssistantMessage]
        assert bar.counter == "1/3"
        assert prompt.has_class("-find-current")
        await until(pilot, lambda: prompt.styles.background != plain_background, what="the match to be highlighted")
        await pilot.press("enter")
        assert bar.counter == "2/3"
        await until(pilot, lambda: card.expanded, what="the tool card to open on its match")
        assert card.has_class("-find-current") and not prompt.has_class("-find-current")
        await until(pilot, lambda: app.chat.transcript.scroll_y > 0, what="the match to scroll into view")
        await pilot.press("enter", "enter")
        assert bar.counter == "1/3"  # wraps around
        await pilot.press("shift+enter")
        assert bar.counter == "3/3"
        assert app.chat.transcript.query(AssistantMessage).last().has_class("-find-current")
        # Smart case: an upper-case letter makes the search exact.
        bar.input.value = "Needle"
        await until(pilot, lambda: bar.counter == "1/1")
        bar.input.value = "haystack"
        await until(pilot, lambda: bar.counter == "no matches")
        await pilot.press("escape")
        assert not bar.is_open and app.chat.chat_input.has_focus
        assert not app.chat.transcript.query(".-find-hit")


async def test_find_command_opens_the_bar_with_its_text(make_tui, store):
    app = make_tui(session_id=seed(store))
    async with app.run_test(size=(100, 30)) as pilot:
        await until_settled(pilot)
        await type_and_send(pilot, "/find thanks")
        bar = app.chat.find_bar
        await until(pilot, lambda: bar.counter == "1/1")
        assert app.chat.transcript.query(UserMessage).last().has_class("-find-current")
