"""A code block wider than the window wraps: every character of every line stays on screen."""

from __future__ import annotations

import pytest

from hermes.agent.events import TextDelta, TurnCompleted, TurnStarted
from hermes.agent.types import TurnResult

from .conftest import until_settled

SPACED = 'x = "' + "".join(f"{n:02d}abcdefgh" for n in range(8)) + 'END"'
"""89 columns, with spaces."""
SOLID = "".join(f"{n:02d}ABCDEFGH" for n in range(9)) + "TAIL"
"""94 columns, one word."""


def screen_lines(app) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("line", [SPACED, SOLID], ids=["spaced", "one-word"])
async def test_a_code_line_wider_than_the_window_is_shown_whole(make_tui, line: str) -> None:
    assert len(line) > 80
    app = make_tui()
    async with app.run_test(size=(80, 24)) as pilot:
        renderer = app.chat.turns.begin_turn("code")
        renderer.handle(TurnStarted("s1", "scripted-model"))
        answer = f"Here:\n\n```python\n{line}\n```\n\nDone."
        renderer.handle(TextDelta(answer))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", answer)))
        await until_settled(pilot)
        lines = screen_lines(app)
        start = next(i for i, text in enumerate(lines) if line[:3] in text)
        end = next(i for i, text in enumerate(lines) if line[-4:] in text)
        assert end > start  # wrapped onto more rows, not cut at the edge
        shown = "".join(text.replace(" ", "") for text in lines[start : end + 1])
        assert shown == line.replace(" ", "")
        assert all(len(text) <= 80 for text in lines)
