"""The scrolling conversation. Stays pinned to the bottom while streaming unless the user scrolls up."""

from __future__ import annotations

from collections.abc import Iterable

from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget

from hermes.tui.widgets.assistant_message import AssistantMessage


class Transcript(VerticalScroll):
    DEFAULT_CSS = """
    Transcript {
        height: 1fr;
        padding: 0 1 1 1;
        scrollbar-size-vertical: 1;
    }
    Transcript.-hide-reasoning ReasoningBlock { display: none; }
    Transcript.-focus ReasoningBlock, Transcript.-focus ToolCard { display: none; }
    """

    class ReachedTop(Message):
        """The user scrolled to the very top (time to load older messages, if any)."""

    def on_mount(self) -> None:
        self.anchor()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if self.scroll_y <= 0:
            self.post_message(self.ReachedTop())

    def page_up(self) -> None:
        """PgUp from the keyboard: at the top, ask for older messages."""
        if self.scroll_y <= 0:
            self.post_message(self.ReachedTop())
        else:
            self.scroll_page_up()

    def add(self, *widgets: Widget) -> None:
        """Append widgets at the bottom (keeping the view pinned when it was at the bottom)."""
        self.mount_all(widgets)

    def add_before_first(self, widgets: Iterable[Widget]) -> None:
        """Prepend widgets (older history) without moving what the user is looking at."""
        items = list(widgets)
        if not items:
            return
        children = [c for c in self.children if not c.has_class("history-head")]
        if children:
            self.mount_all(items, before=children[0])
        else:
            self.mount_all(items)

    def last_answer(self) -> str | None:
        for child in reversed(self.children):
            if isinstance(child, AssistantMessage) and child.text.strip():
                return child.text
        return None
