"""/help aligns its two columns at any width: no usage runs into its description, and a
wrapped description continues under its own column."""

from __future__ import annotations

import pytest

from hermes.tui.commands import COMMANDS, KEYS
from hermes.tui.widgets.notice import Notice

from .conftest import type_and_send, until, until_settled


def screen_lines(app) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("width", [80, 140])
async def test_help_columns_line_up_at_any_width(make_tui, width: int) -> None:
    app = make_tui()
    async with app.run_test(size=(width, 120)) as pilot:
        await type_and_send(pilot, "/help")
        await until(pilot, lambda: any("Commands" in n.text for n in app.chat.transcript.query(Notice)))
        await until_settled(pilot)
        app.chat.transcript.scroll_home(animate=False)
        await pilot.pause()
        lines = screen_lines(app)
        for rows in ([(c.usage, c.help) for c in COMMANDS], list(KEYS)):
            starts = set()
            for left, right in rows:
                row = next(i for i, line in enumerate(lines) if f"  {left}  " in line and right.split()[0] in line)
                line = lines[row]
                column = line.index(right.split()[0], line.index(left) + len(left))
                starts.add(column)
                shown = line[column:].rstrip()
                following = row + 1
                while shown.replace(" ", "") != right.replace(" ", "") and following < len(lines):
                    continuation = lines[following]
                    assert continuation[:column].strip() == "", (left, continuation)  # under its own column
                    shown += " " + continuation[column:].strip()
                    following += 1
                assert shown.split() == right.split(), (left, shown)
            assert len(starts) == 1, starts  # one description column per section
        if width == 80:
            reasoning = next(line for line in lines if "/reasoning" in line)
            assert "]  show" in reasoning or "] show" not in reasoning
