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

    def __init__(self, text: str) -> None:
        super().__init__(Text(text), markup=False)
        self.text = text

    @property
    def find_text(self) -> str:
        return self.text

    def find_highlight(self, pattern: re.Pattern[str] | None, current: int | None) -> None:
        self.update(highlighted(self.text, pattern, current))
