"""The footer line of a remote session: which `hermes serve` holds it.

Shown above the key footer only when the chat drives a server (`hermes chat --server`);
a local session has no such line, so its layout is unchanged.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class RemoteLine(Static):
    DEFAULT_CSS = """
    RemoteLine {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-accent;
    }
    """

    def __init__(self, server: str, *, id: str | None = None) -> None:
        self.server = server
        self.text = f"⇄ remote session · {server}"
        super().__init__(Text(self.text), markup=False, id=id)
