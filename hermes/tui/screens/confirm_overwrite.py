"""Ask before undo or redo overwrites files changed outside hermes since the checkpoint."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmOverwrite(ModalScreen[bool]):
    """Dismissed with True to overwrite the named files, False to leave everything as it is."""

    DEFAULT_CSS = """
    ConfirmOverwrite { align: center middle; }
    ConfirmOverwrite > Vertical {
        width: 90%;
        max-width: 90;
        height: auto;
        max-height: 90%;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    ConfirmOverwrite .confirm-title { text-style: bold; color: $text-warning; }
    ConfirmOverwrite .confirm-files { margin: 1 0; padding: 0 1; background: $boost; max-height: 12; }
    ConfirmOverwrite Horizontal { height: auto; }
    ConfirmOverwrite Button { margin-right: 1; min-width: 12; }
    """

    BINDINGS = [
        Binding("y", "decide(True)", "Overwrite"),
        Binding("n,escape", "decide(False)", "Keep"),
    ]

    def __init__(self, verb: str, paths: list[str]) -> None:
        super().__init__()
        self.verb = verb
        self.paths = paths

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                f"⚠ {len(self.paths)} file(s) changed outside hermes since the checkpoint", classes="confirm-title"
            )
            yield Static(Text("\n".join(self.paths)), classes="confirm-files", markup=False)
            yield Label(f"{self.verb.capitalize()} anyway and overwrite them?")
            with Horizontal():
                yield Button("Overwrite (y)", id="overwrite", variant="warning")
                yield Button("Keep my files (n)", id="keep", variant="primary")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "overwrite")

    def action_decide(self, overwrite: bool) -> None:
        self.dismiss(overwrite)
