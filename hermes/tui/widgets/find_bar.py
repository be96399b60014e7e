"""Find in the transcript (Ctrl+F or `/find`): a one-line bar above the prompt.

Typing searches every message, reasoning block and tool card of the transcript on screen,
collapsed tool output included; Enter / Shift+Enter (or Down / Up) move to the next /
previous match, scrolling it into view, and Escape closes the bar.

Invariants:

- The search is case-insensitive unless the query has an upper-case letter (smart case).
- Each occurrence is one match, counted in transcript order; the counter reads "N/M".
- Every widget holding a match gets the `-find-hit` class and the current one also
  `-find-current`; plain-text widgets (prompts, reasoning, tool output) also highlight the
  matched characters. A collapsed tool result or reasoning block holding the current match
  is expanded. Closing the bar removes every mark (expanded blocks stay open).
- Only `Findable` widgets are searched: they expose `find_text` and `find_highlight`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

__all__ = ["FindBar", "Findable", "FindMatch", "highlighted", "query_pattern"]

HIT_STYLE = "black on yellow"
CURRENT_STYLE = "black on dark_orange"


@runtime_checkable
class Findable(Protocol):
    """A transcript widget the find bar searches."""

    @property
    def find_text(self) -> str:
        """Everything searchable in it, collapsed parts included."""
        ...

    def find_highlight(self, pattern: re.Pattern[str] | None, current: int | None) -> None:
        """Highlight the matches of `pattern` (None: remove the highlight); `current` is the
        index among them of the current match, when it is in this widget (expand to show it)."""
        ...


@dataclass(frozen=True, slots=True)
class FindMatch:
    widget: Widget
    index: int
    """Which occurrence within the widget's `find_text`."""


def query_pattern(query: str) -> re.Pattern[str] | None:
    """The pattern of a query (smart case); None for an empty one."""
    if not query:
        return None
    flags = 0 if any(c.isupper() for c in query) else re.IGNORECASE
    return re.compile(re.escape(query), flags)


def highlighted(text: str, pattern: re.Pattern[str] | None, current: int | None = None) -> Text:
    """`text` with each match styled (the `current`-th one differently)."""
    out = Text(text)
    if pattern is None:
        return out
    for i, found in enumerate(pattern.finditer(text)):
        out.stylize(CURRENT_STYLE if i == current else HIT_STYLE, found.start(), found.end())
    return out


class FindBar(Horizontal):
    """The search bar over one transcript (`target`), hidden until opened."""

    SCOPED_CSS = False  # the match classes style transcript widgets, outside the bar
    DEFAULT_CSS = """
    FindBar {
        display: none;
        height: 3;
        padding: 0 1;
    }
    FindBar.-open { display: block; }
    FindBar Input { width: 1fr; }
    FindBar .find-count { width: auto; min-width: 12; padding: 1 1 0 1; color: $text-muted; }
    Transcript .-find-hit { background: $warning 10%; }
    Transcript .-find-current { background: $warning 25%; }
    """

    BINDINGS = [
        Binding("escape", "close", "Close find", priority=True),
        Binding("shift+enter", "previous", "Previous", show=False, priority=True),
        Binding("up", "previous", show=False),
        Binding("down", "next", show=False),
    ]

    class Closed(Message):
        """The bar was closed (the screen gives the focus back to the prompt)."""

    def __init__(self, target: Widget, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.target = target
        self.matches: list[FindMatch] = []
        self.current: int | None = None
        self._pattern: re.Pattern[str] | None = None
        self._marked: list[Widget] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Find in transcript · Enter next · Shift+Enter previous · Esc close")
        yield Static("", classes="find-count", markup=False)

    @property
    def input(self) -> Input:
        return self.query_one(Input)

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    @property
    def counter(self) -> str:
        return str(self.query_one(".find-count", Static).render())

    # -- opening and closing ------------------------------------------------------------

    def open(self, query: str | None = None) -> None:
        self.add_class("-open")
        if query is not None:
            self.input.value = query  # the Changed handler searches
        else:
            self.search()
        self.input.focus()

    def action_close(self) -> None:
        self.remove_class("-open")
        self._clear_marks()
        self.matches, self.current = [], None
        self.post_message(self.Closed())

    # -- searching ------------------------------------------------------------------------

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.search()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_next()

    def search(self) -> None:
        """Find every match of the query in the transcript as it is now; go to the first
        one at or below the current match (the first overall when there was none)."""
        self._pattern = query_pattern(self.input.value)
        self._clear_marks()
        self.matches = []
        if self._pattern is not None:
            for widget in self.target.query("*"):
                if isinstance(widget, Findable):
                    count = sum(1 for _ in self._pattern.finditer(widget.find_text))
                    self.matches += [FindMatch(widget, i) for i in range(count)]
        self.current = 0 if self.matches else None
        self._show()

    def action_next(self) -> None:
        self._step(1)

    def action_previous(self) -> None:
        self._step(-1)

    def _step(self, step: int) -> None:
        if not self.matches:
            return
        self.current = 0 if self.current is None else (self.current + step) % len(self.matches)
        self._show()

    def _show(self) -> None:
        current = self.matches[self.current] if self.current is not None else None
        for widget in dict.fromkeys(match.widget for match in self.matches):
            assert isinstance(widget, Findable)
            index = current.index if current is not None and current.widget is widget else None
            widget.find_highlight(self._pattern, index)
            widget.add_class("-find-hit")
            widget.set_class(index is not None, "-find-current")
            self._marked.append(widget)
        count = self.query_one(".find-count", Static)
        if self._pattern is None:
            count.update("")
        elif current is None:
            count.update("no matches")
        else:
            count.update(f"{(self.current or 0) + 1}/{len(self.matches)}")
            self.call_after_refresh(current.widget.scroll_visible, animate=False, top=True)

    def _clear_marks(self) -> None:
        for widget in self._marked:
            if widget.is_attached and isinstance(widget, Findable):
                widget.find_highlight(None, None)
            widget.remove_class("-find-hit", "-find-current")
        self._marked = []
