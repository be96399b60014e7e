"""Prompts typed while a turn runs, waiting to be sent when it ends (shown above the prompt)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

PREVIEW_CHARS = 100


class QueuedPrompts(Static):
    """One line per queued prompt, oldest first, plus a hint; hidden when nothing is queued."""

    DEFAULT_CSS = """
    QueuedPrompts {
        height: auto;
        max-height: 6;
        padding: 0 1;
        color: $text-muted;
        display: none;
    }
    QueuedPrompts.-shown {
        display: block;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.prompts: list[str] = []

    def show_prompts(self, prompts: list[str]) -> None:
        self.prompts = list(prompts)
        self.set_class(bool(prompts), "-shown")
        text = Text()
        for prompt in prompts:
            line = " ".join(prompt.split())
            if len(line) > PREVIEW_CHARS:
                line = line[: PREVIEW_CHARS - 1] + "…"
            text.append("⏳ queued  ", style="bold")
            text.append(line + "\n")
        if prompts:
            text.append("sent when the turn ends · Alt+↑ edits the last one · Esc interrupts", style="dim italic")
        self.update(text)
