"""Ask before a resumed session whose folder is gone runs its tools in this folder instead."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from hermes.session_folder import FolderCheck


class FolderGoneDialog(ModalScreen[bool]):
    """Dismissed with True to run the session's tools here, False to leave it unopened."""

    DEFAULT_CSS = """
    FolderGoneDialog { align: center middle; }
    FolderGoneDialog > Vertical {
        width: 90%;
        max-width: 90;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    FolderGoneDialog .folder-title { text-style: bold; color: $text-warning; }
    FolderGoneDialog .folder-paths { margin: 1 0; padding: 0 1; background: $boost; }
    FolderGoneDialog Horizontal { height: auto; }
    FolderGoneDialog Button { margin-right: 1; min-width: 12; }
    """

    BINDINGS = [
        Binding("y", "decide(True)", "Run here"),
        Binding("n,escape", "decide(False)", "Don't open"),
    ]

    def __init__(self, check: FolderCheck) -> None:
        super().__init__()
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("⚠ This session's folder is gone", classes="folder-title")
            yield Static(
                Text(f"recorded: {self.check.folder} ({self.check.why})\nthis folder: {self.check.here}"),
                classes="folder-paths",
                markup=False,
            )
            yield Label("Open it and run its tools in this folder?")
            with Horizontal():
                yield Button("Run here (y)", id="here", variant="warning")
                yield Button("Don't open (n)", id="cancel", variant="primary")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "here")

    def action_decide(self, here: bool) -> None:
        self.dismiss(here)
