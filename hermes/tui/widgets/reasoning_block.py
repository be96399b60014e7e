"""The model's reasoning: a dim collapsible block, kept apart from the answer."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import ComposeResult
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from hermes.tui.widgets.find_bar import highlighted

FLUSH_HZ = 20


class ReasoningBlock(Collapsible):
    DEFAULT_CSS = """
    ReasoningBlock {
        margin: 1 0 0 2;
        padding: 0;
        border: none;
        background: transparent;
        color: $text-muted;
    }
    ReasoningBlock > Contents {
        padding: 0 0 0 2;
    }
    ReasoningBlock > CollapsibleTitle {
        color: $text-muted;
        padding: 0;
    }
    ReasoningBlock .reasoning-text {
        color: $text-muted;
        text-style: italic;
    }
    """

    def __init__(self, text: str = "", *, collapsed: bool = True) -> None:
        self._body = Static(Text(text), classes="reasoning-text", markup=False)
        super().__init__(self._body, title=self._title_for(text, streaming=not collapsed), collapsed=collapsed)
        self.text = text
        self._dirty = False
        self._timer: Timer | None = None

    @staticmethod
    def _title_for(text: str, *, streaming: bool) -> str:
        words = len(text.split())
        return f"Reasoning{'…' if streaming else ''} ({words} words)"

    def compose(self) -> ComposeResult:
        yield from super().compose()

    def feed(self, text: str) -> None:
        self.text += text
        self._dirty = True
        if self.is_mounted and self._timer is None:
            self._timer = self.set_timer(1 / FLUSH_HZ, self._flush)

    def on_mount(self) -> None:
        if self._dirty:
            self._flush()

    def _flush(self) -> None:
        self._timer = None
        if self._dirty:
            self._dirty = False
            self._body.update(Text(self.text))
            self.title = self._title_for(self.text, streaming=True)

    def finish(self) -> None:
        """Reasoning is over (the answer started): show the full text and fold the block."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._dirty = False
        self._body.update(Text(self.text))
        self.title = self._title_for(self.text, streaming=False)
        self.collapsed = True

    @property
    def find_text(self) -> str:
        return self.text

    def find_highlight(self, pattern: re.Pattern[str] | None, current: int | None) -> None:
        """Highlight matches; the block holding the current match opens."""
        self._body.update(highlighted(self.text, pattern, current))
        if current is not None:
            self.collapsed = False
