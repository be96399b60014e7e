"""A prompt the user sent, as it appears in the transcript."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import Static

from hermes.tui.widgets.find_bar import highlighted


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        background: $boost;
        border-left: wide $primary;
    }
    """

    def __init__(self, text: str, *, origin: str | None = None) -> None:
        super().__init__(_shown(text, origin), markup=False)
        self.text = text
        self.origin = origin
        """The custom command or skill `text` was expanded from ("/review x  (command: path)")."""

    @property
    def find_text(self) -> str:
        return self.text

    def find_highlight(self, pattern: re.Pattern[str] | None, current: int | None) -> None:
        body = highlighted(self.text, pattern, current)
        self.update(Text.assemble((f"▸ {self.origin}\n", "dim"), body) if self.origin else body)


def _shown(text: str, origin: str | None) -> Text:
    """The prompt, under a dim line naming the command it came from (when it did)."""
    return Text.assemble((f"▸ {origin}\n", "dim"), text) if origin else Text(text)
