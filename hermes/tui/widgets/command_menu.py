"""The slash-command completion list shown above the input while a command is typed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from hermes.tui.commands import Command, complete


class CommandMenu(OptionList):
    """Lists the commands matching what is typed; never takes focus (the input drives it)."""

    DEFAULT_CSS = """
    CommandMenu {
        display: none;
        height: auto;
        max-height: 8;
        border: none;
        padding: 0 1;
        background: $boost;
    }
    CommandMenu.-visible {
        display: block;
    }
    """
    can_focus = False

    def __init__(self, *, id: str | None = None, extra: Callable[[], Sequence[Command]] | None = None) -> None:
        super().__init__(id=id)
        self._commands: list[Command] = []
        self._extra = extra
        """The custom commands and skills to offer after the built-ins (read when the menu opens)."""

    @property
    def is_open(self) -> bool:
        """True while the completions are shown. (Not `visible`: that is Widget's own, settable.)"""
        return self.has_class("-visible")

    def show_for(self, text: str) -> None:
        """Show completions when `text` is a command name being typed ("/se"), else hide."""
        if not text.startswith("/") or " " in text or "\n" in text:
            self.hide()
            return
        self._commands = complete(text[1:], self._extra() if self._extra is not None else ())
        if not self._commands:
            self.hide()
            return
        self.clear_options()
        for command in self._commands:
            label = Text.assemble((command.usage, "bold"), "  ", (command.help, "dim"))
            self.add_option(Option(label, id=command.name))
        self.highlighted = 0
        self.add_class("-visible")

    def hide(self) -> None:
        self.remove_class("-visible")
        self._commands = []

    def move(self, step: int) -> None:
        if self._commands:
            current = self.highlighted or 0
            self.highlighted = (current + step) % len(self._commands)

    def selected(self) -> Command | None:
        if not self._commands or self.highlighted is None:
            return None
        return self._commands[self.highlighted]
