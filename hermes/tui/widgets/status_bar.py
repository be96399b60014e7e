"""The one-line status bar: model, session title, the last turn's and the session's tokens
and cost, context use, turn timer, the session's folder.

A cost is shown only when the model's price is known (`hermes.pricing`): otherwise the
tokens alone, never a guess. The turn part appears once a turn has finished on this screen.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from hermes.agent.context import known_context_window as context_window
from hermes.pricing import format_cost


def human_tokens(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 100_000:
        return f"{n / 1000:.1f}K"
    if n < 1_000_000:
        return f"{n // 1000}K"
    return f"{n / 1_000_000:.1f}M"


def human_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


class StatusBar(Widget):
    """Shows the session at a glance; adapts to the terminal width (drops parts right to left)."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    model: reactive[str] = reactive("")
    title: reactive[str] = reactive("")
    input_tokens: reactive[int] = reactive(0)
    """The session's tokens (all its turns)."""
    output_tokens: reactive[int] = reactive(0)
    session_cost: reactive[float | None] = reactive(None)
    """The session's cost in US dollars; None when unknown (a model without a price)."""
    turn_tokens: reactive[tuple[int, int] | None] = reactive(None)
    """(input, output) tokens of the last finished turn; None before one finished here."""
    turn_cost: reactive[float | None] = reactive(None)
    context_tokens: reactive[int] = reactive(0)
    """Size of what the model saw in the last request (its prompt_tokens when reported)."""
    turn_seconds: reactive[float | None] = reactive(None)
    """Duration of the last finished turn."""
    yolo: reactive[bool] = reactive(False)
    mode: reactive[str] = reactive("default")
    """The chat's mode; shown first, and never dropped, when it is not `default`."""
    folder: reactive[str] = reactive("")
    """The folder the session's tools run in (its last part is shown); "" shows none."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._turn_started: float | None = None
        self.window_for: Callable[[str], int] = context_window
        """The context window of a model (the app sets the agent's, which knows the settings)."""

    def on_mount(self) -> None:
        self._ticker = self.set_interval(0.25, self.refresh, pause=True)

    def start_turn(self) -> None:
        self._turn_started = time.monotonic()
        self._ticker.resume()
        self.refresh()

    def end_turn(self) -> None:
        if self._turn_started is not None:
            self.turn_seconds = time.monotonic() - self._turn_started
        self._turn_started = None
        self._ticker.pause()
        self.refresh()

    @property
    def context_percent(self) -> float:
        window = self.window_for(self.model or "")
        return 100.0 * self.context_tokens / window if window else 0.0

    def _timer_text(self) -> str:
        if self._turn_started is not None:
            return f"⏱ {human_duration(time.monotonic() - self._turn_started)}"
        if self.turn_seconds is not None:
            return f"⏱ {human_duration(self.turn_seconds)}"
        return ""

    def reset_usage(self) -> None:
        """A new session: no tokens, no cost, no turn yet."""
        self.input_tokens = self.output_tokens = self.context_tokens = 0
        self.session_cost = self.turn_cost = None
        self.turn_tokens = None

    def usage_text(self) -> tuple[str | None, str]:
        """(the last turn's part or None, the session's part), as rendered."""
        session = f"↑{human_tokens(self.input_tokens)} ↓{human_tokens(self.output_tokens)}"
        if self.session_cost is not None:
            session += f" {format_cost(self.session_cost)}"
        if self.turn_tokens is None:
            return None, session
        turn = f"turn ↑{human_tokens(self.turn_tokens[0])} ↓{human_tokens(self.turn_tokens[1])}"
        if self.turn_cost is not None:
            turn += f" {format_cost(self.turn_cost)}"
        return turn, "Σ " + session

    def render(self) -> Text:
        pct = self.context_percent
        ctx_style = "green" if pct < 50 else "yellow" if pct < 80 else "dark_orange" if pct < 95 else "bold red"
        parts: list[Text] = [Text("⚕ " + (self.model or "no model"), style="bold")]
        parts.append(Text(self.title or "new session", style="italic"))
        turn, session = self.usage_text()
        parts.append(Text(session))
        parts.append(Text(f"ctx {pct:.0f}% of {human_tokens(self.window_for(self.model or ''))}", style=ctx_style))
        timer = self._timer_text()
        if timer:
            parts.append(Text(timer))
        if self.folder:
            parts.append(Text("▸ " + (os.path.basename(self.folder.rstrip("/")) or "/"), style="cyan"))
        if self.yolo:
            parts.append(Text("⚠ YOLO", style="bold red"))
        if turn is not None:  # the first to go when the line is too wide
            parts.insert(2, Text(turn))
        width = max(10, self.size.width - 2)
        sep = Text(" │ ", style="dim")
        mode = _MODE_BADGES.get(self.mode)
        if mode is not None:
            width = max(10, width - mode.cell_len - sep.cell_len)
        # Drop the least important parts (title is truncated first) until it fits.
        while len(parts) > 1 and (overflow := sum(p.cell_len for p in parts) + 3 * (len(parts) - 1) - width) > 0:
            if parts[1].cell_len > 12:
                parts[1].truncate(max(12, parts[1].cell_len - overflow), overflow="ellipsis")
                continue
            if turn is not None:
                parts.pop(2)
                turn = None
                continue
            parts.pop(3 if len(parts) > 3 else -1)
        line = Text()
        for i, part in enumerate(parts):
            if i:
                line.append_text(sep)
            line.append_text(part)
        line.truncate(width, overflow="ellipsis")
        if mode is not None:
            line = Text.assemble(mode, sep, line)
        return line


_MODE_BADGES = {
    "plan": Text("⏸ PLAN", style="bold black on yellow"),
    "accept-edits": Text("✎ accept edits", style="bold magenta"),
}
"""How a mode other than `default` is shown."""
