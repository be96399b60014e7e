"""A resumed session shows how each tool call and each turn really ended."""

from __future__ import annotations

from turn_outcome_seed import seed_outcomes

from hermes.agent._turn import INTERRUPTED_TOOL_RESULT
from hermes.agent.safety.approval import REFUSAL_PREFIXES
from hermes.testing.upstream import call, tool_reply
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.tool_card import ToolCard
from hermes.turn_outcomes import BLOCKED_PREFIX, DENIED_PREFIX, INTERRUPTED_PREFIX, tool_outcome

from .conftest import type_and_send, until, until_settled


def test_the_outcome_texts_are_the_engines() -> None:
    assert INTERRUPTED_TOOL_RESULT.startswith(INTERRUPTED_PREFIX)
    assert set(REFUSAL_PREFIXES) == {DENIED_PREFIX, BLOCKED_PREFIX}
    assert tool_outcome(INTERRUPTED_TOOL_RESULT) == "interrupted"


async def test_replayed_cards_and_turns_show_how_they_ended(make_tui, store) -> None:
    sid = seed_outcomes(store)
    app = make_tui(session_id=sid)
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: len(app.chat.transcript.query(ToolCard)) == 3)
        await until_settled(pilot)
        denied, failed, interrupted = app.chat.transcript.query(ToolCard)
        assert (denied.state, denied.outcome) == ("failed", "denied")
        assert denied.header_text.startswith("✗") and denied.header_text.endswith("denied")
        assert failed.state == "failed" and failed.header_text.startswith("✗")
        assert interrupted.state == "interrupted" and "interrupted" in interrupted.header_text
        assert not any(card.header_text.startswith("✓") for card in (denied, failed, interrupted))
        marks = [(n.kind, n.text) for n in app.chat.transcript.query(Notice) if n.kind != "info"]
        assert marks == [
            ("interrupted", "⏹ this turn was interrupted"),
            ("error", "✗ this turn failed before it answered"),
            ("error", "✗ this turn failed before it answered"),
        ]


async def test_a_real_interrupted_turn_is_marked_when_resumed(make_tui, upstream) -> None:
    upstream.enqueue(tool_reply([call("shell", {"command": "make test", "gate": "never"})], text="Running."))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "test it")
        await until(pilot, lambda: [c.state for c in app.chat.transcript.query(ToolCard)] == ["running"])
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.turns.turn_running)
        await app.workers.wait_for_complete()
        sid = app.session_id
    resumed = make_tui(session_id=sid)
    async with resumed.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: resumed.chat.transcript.query(ToolCard))
        await until_settled(pilot)
        card = resumed.chat.transcript.query_one(ToolCard)
        assert card.state == "interrupted"
        assert any(n.kind == "interrupted" for n in resumed.chat.transcript.query(Notice))
