"""Pick a model: each provider's models, grouped, with the one in use marked.

Opened by `/model` with no argument. Enter picks the highlighted model (the screen's
result is its `NAME/MODEL` id); Esc keeps the current one. A provider that could not
list its models shows why, in a line that cannot be picked.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from hermes.agent.model_choices import ModelListing


class ModelPicker(ModalScreen[str | None]):
    DEFAULT_CSS = """
    ModelPicker { align: center middle; }
    ModelPicker > Vertical {
        width: 80%;
        max-width: 90;
        height: auto;
        max-height: 80%;
        border: thick $primary;
        background: $surface;
        padding: 1 2;
    }
    ModelPicker Label { width: 100%; }
    ModelPicker OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, listings: list[ModelListing], current: str) -> None:
        super().__init__()
        self.listings = listings
        self.current = current

    def compose(self) -> ComposeResult:
        options: list[Option | None] = []
        for listing in self.listings:
            if options:
                options.append(None)  # a separator between providers
            options.append(Option(f"── {listing.provider}", disabled=True))
            if listing.error:
                options.append(Option(f"   cannot list: {listing.error}", disabled=True))
            for model in listing.models:
                mark = "● " if self._is_current(model) else "  "
                options.append(Option(f" {mark}{model}", id=model))
        with Vertical():
            yield Label("Model for the next turns · Enter picks · Esc keeps it")
            yield OptionList(*options, id="models")

    def on_mount(self) -> None:
        menu = self.query_one(OptionList)
        ids = [option.id for option in menu.options]
        wanted = next((i for i, oid in enumerate(ids) if oid is not None and self._is_current(oid)), None)
        if wanted is None:
            wanted = next((i for i, oid in enumerate(ids) if oid is not None), None)
        if wanted is not None:
            menu.highlighted = wanted
        menu.focus()

    def _is_current(self, model: str) -> bool:
        return model == self.current or (model.startswith("default/") and self._bare(model) == self.current)

    @staticmethod
    def _bare(model: str) -> str:
        return model.split("/", 1)[1] if "/" in model else model

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
