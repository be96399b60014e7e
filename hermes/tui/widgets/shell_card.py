"""The card of a `!` command: `$ command`, its output as it arrives (the last lines), then
how it ended (exit code, stopped, not run)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from hermes.agent.shell_passthrough import CONTEXT_HEAD

SHOWN_LINES = 40
"""Lines of output the card keeps on screen (the newest); the context holds the full result."""


class ShellCard(Static):
    DEFAULT_CSS = """
    ShellCard {
        padding: 0 1;
        margin: 0 0 1 0;
        border-left: wide $accent;
        background: $boost;
    }
    ShellCard.-failed {
        border-left: wide $warning;
    }
    """

    def __init__(self, command: str, *, where: str) -> None:
        super().__init__(markup=False)
        self.command = command
        self.where = where
        self.output = ""
        self.status = "running… (Esc stops it)"
        self._redraw()

    @property
    def text(self) -> str:
        """What the card shows, as plain text."""
        return self._content().plain

    def add_output(self, chunk: str) -> None:
        self.output += chunk
        # Keep memory bounded: only the tail is ever shown.
        if len(self.output) > 64_000:
            self.output = self.output[-32_000:]
        self._redraw()

    def finish(self, status: str, *, failed: bool = False) -> None:
        self.status = status
        self.set_class(failed, "-failed")
        self._redraw()

    def _content(self) -> Text:
        lines = self.output.rstrip("\n").split("\n") if self.output else []
        cut = len(lines) - SHOWN_LINES
        text = Text()
        text.append(f"$ {self.command}", style="bold")
        text.append(f"   {self.where}\n", style="dim")
        if cut > 0:
            text.append(f"… {cut} earlier lines\n", style="dim")
        for line in lines[-SHOWN_LINES:]:
            text.append(line + "\n")
        text.append(self.status, style="dim italic")
        return text

    def _redraw(self) -> None:
        self.update(self._content())


def replayed_shell_card(text: str) -> ShellCard | None:
    """The card of a stored `!` context (agent/shell_passthrough.context_message), else None."""
    head, _, rest = text.partition("\n")
    if head != CONTEXT_HEAD or not rest.startswith("$ "):
        return None
    command_line, _, rest = rest.partition("\n")
    where_line, _, result = rest.partition("\n")
    where = where_line[len("(in ") : -1] if where_line.startswith("(in ") and where_line.endswith(")") else ""
    card = ShellCard(command_line[2:], where=where)
    status, _, output = result.partition("\n")
    card.add_output(output)
    card.finish(f"{status} · context of the next message")
    return card
