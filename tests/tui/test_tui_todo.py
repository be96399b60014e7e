"""The todo tool's card: the model's plan as a checklist, its progress in the header."""

from __future__ import annotations

from hermes.agent.tools.todo import TODO_TOOL
from hermes.testing.upstream import call, text_reply, tool_reply
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.tool_card import ToolCard

from .conftest import type_and_send, until, until_settled

PLAN = [
    {"content": "read the failing test", "status": "completed"},
    {"content": "fix the parser", "status": "in_progress", "priority": "high"},
    {"content": "run the suite", "status": "pending"},
]


async def test_a_todo_card_shows_the_plan_as_an_open_checklist(make_tui, upstream):
    upstream.enqueue(tool_reply([call("todo", {"todos": PLAN}, id="plan")]), text_reply("On it."))
    app = make_tui(extra_tools=[TODO_TOOL])
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "fix the parser")
        await until(pilot, lambda: app.chat.query(AssistantMessage) and app.chat.query(ToolCard))
        card = app.chat.transcript.query_one(ToolCard)
        await until(pilot, lambda: card.state == "done")
        await until_settled(pilot)
        assert "todo" in card.header_text and "1/3 done · now: fix the parser" in card.header_text
        assert card.expanded and card._details.title == "plan"
        assert str(card._result_body.render()).splitlines() == [
            "☑ read the failing test",
            "◐ fix the parser  (high)",
            "☐ run the suite",
        ]
        assert '"todos"' not in str(card._result_body.render())
