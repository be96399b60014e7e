"""The top of a long resumed session: how many earlier messages are not shown, click to load them."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.message import Message
from textual.widgets import Static


class HistoryHead(Static):
    DEFAULT_CSS = """
    HistoryHead {
        color: $text-muted;
        text-align: center;
        padding: 0 1;
        margin-top: 1;
    }
    HistoryHead:hover { color: $text; background: $boost; }
    """

    @dataclass
    class LoadRequested(Message):
        head: HistoryHead

    def __init__(self, hidden: int) -> None:
        super().__init__("", classes="history-head", markup=False)
        self.hidden = hidden
        self.set_hidden(hidden)

    def set_hidden(self, hidden: int) -> None:
        self.hidden = hidden
        self.update(f"⋯ {hidden:,} earlier message{'s' if hidden != 1 else ''} — click or press Ctrl+Home to load more")

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.LoadRequested(self))
