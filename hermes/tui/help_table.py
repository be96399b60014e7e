"""`/help` as two aligned columns at any width.

Each section is a grid: the first column (a command's usage, a key) is as wide as its
longest entry and never wraps; the second (what it does) takes the rest of the width and
wraps inside its own column, so no two columns run together and a wrapped description
never starts under the first column.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text


def help_table(sections: Iterable[tuple[str, Iterable[tuple[str, str]]]]) -> RenderableType:
    """`sections`: (heading, [(left, right), …]) in order."""
    parts: list[RenderableType] = []
    for heading, rows in sections:
        parts.append(Text(heading, style="bold"))
        grid = Table.grid(padding=(0, 2), pad_edge=False, expand=False)
        grid.add_column(no_wrap=True, style="bold")
        grid.add_column(overflow="fold")
        for left, right in rows:
            grid.add_row(Text("  " + left), Text(right))
        parts.append(grid)
    return Group(*parts)


def help_text(sections: Iterable[tuple[str, Iterable[tuple[str, str]]]]) -> str:
    """The plain text of the same (for find and tests), one row a line."""
    lines: list[str] = []
    for heading, rows in sections:
        lines.append(heading)
        lines.extend(f"  {left}  {right}" for left, right in rows)
    return "\n".join(lines)
