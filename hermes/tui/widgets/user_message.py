"""A prompt the user sent, as it appears in the transcript."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


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
