"""The `@` file picker: the folder's files that fuzzily match what follows the `@` before the
cursor, shown above the prompt. Like the command menu it never takes focus: the prompt box
drives it (Up/Down choose, Tab or Enter put the path in, Esc closes)."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

MENTION_AT_CURSOR = re.compile(r"(?:^|[\s(\[{\"'])@([^\s@]*)$")
"""An `@` mention being typed: the text of the cursor's line up to the cursor ends with it."""
SHOWN = 50


def mention_query(line_before_cursor: str) -> str | None:
    """What follows the `@` being typed at the cursor, or None when no mention is being typed."""
    found = MENTION_AT_CURSOR.search(line_before_cursor)
    return found.group(1) if found is not None else None


class MentionMenu(OptionList):
    DEFAULT_CSS = """
    MentionMenu {
        display: none;
        height: auto;
        max-height: 10;
        border: none;
        padding: 0 1;
        background: $boost;
    }
    MentionMenu.-visible {
        display: block;
    }
    """
    can_focus = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paths: list[str] = []
        self.query_text: str | None = None
        """The text after `@` the shown paths match (None: closed)."""

    @property
    def is_open(self) -> bool:
        return self.has_class("-visible")

    def show_paths(self, query: str, paths: list[str], *, truncated: bool = False) -> None:
        self.query_text = query
        self.paths = paths[:SHOWN]
        self.clear_options()
        if not self.paths:
            self.hide()
            return
        for path in self.paths:
            self.add_option(Option(Text(path, style="bold" if path.endswith("/") else ""), id=None))
        if truncated:
            self.add_option(Option(Text("… the folder has more files than were listed", style="dim"), disabled=True))
        self.highlighted = 0
        self.add_class("-visible")

    def hide(self) -> None:
        self.remove_class("-visible")
        self.paths = []
        self.query_text = None

    def move(self, step: int) -> None:
        if self.paths:
            current = self.highlighted or 0
            self.highlighted = (current + step) % len(self.paths)

    def selected(self) -> str | None:
        if not self.paths or self.highlighted is None or self.highlighted >= len(self.paths):
            return None
        return self.paths[self.highlighted]
