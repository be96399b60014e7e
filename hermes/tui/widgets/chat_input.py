"""The multi-line prompt: Enter sends, Shift+Enter / Ctrl+J insert a newline, Up/Down walk
history, Ctrl+X Ctrl+E asks for the prompt in $EDITOR (Ctrl+X then any other key cuts, as
Ctrl+X alone does in a TextArea, and goes on with that key)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from hermes.tui.widgets.command_menu import CommandMenu
from hermes.tui.widgets.mention_menu import MentionMenu, mention_query

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "alt+enter"})


class ChatInput(TextArea):
    """A TextArea that submits on Enter and completes slash commands through a `CommandMenu`."""

    DEFAULT_CSS = """
    ChatInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $border-blurred;
        padding: 0 1;
    }
    ChatInput:focus {
        border: tall $primary;
    }
    """

    @dataclass
    class Submitted(Message):
        """The user pressed Enter on a non-empty prompt."""

        chat_input: ChatInput
        value: str

        @property
        def control(self) -> ChatInput:
            return self.chat_input

    @dataclass
    class EditorRequested(Message):
        """Ctrl+X Ctrl+E: edit the prompt in $VISUAL / $EDITOR."""

        chat_input: ChatInput

    @dataclass
    class MentionTyped(Message):
        """An `@` mention is being typed: `query` is what follows the `@` (None: none is)."""

        chat_input: ChatInput
        query: str | None

    @dataclass
    class PastedText(Message):
        """A paste that may be image paths (a terminal's drag and drop): the screen decides."""

        chat_input: ChatInput
        text: str

    def __init__(
        self, *, menu: CommandMenu | None = None, mentions: MentionMenu | None = None, id: str | None = None
    ) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=False,
            highlight_cursor_line=False,
            placeholder="Message hermes · Enter sends · Shift+Enter new line · / commands",
        )
        self.menu = menu
        self.mentions = mentions
        self.paste_filter: Callable[[str], bool] | None = None
        """True for a paste the screen takes instead (image paths); None: every paste is text."""
        self.prompt_history: list[str] = []
        self._history_index: int | None = None
        self._draft = ""
        self._chord = False
        """Ctrl+X was pressed: Ctrl+E next opens the editor."""

    # -- history --------------------------------------------------------------------

    def remember(self, value: str) -> None:
        if value and (not self.prompt_history or self.prompt_history[-1] != value):
            self.prompt_history.append(value)
        self._history_index = None

    def _history_step(self, step: int) -> bool:
        if not self.prompt_history:
            return False
        if self._history_index is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(self.prompt_history) - 1
        else:
            index = self._history_index + step
        if index >= len(self.prompt_history):
            self._history_index = None
            self._set_text(self._draft)
            return True
        if index < 0:
            return True
        self._history_index = index
        self._set_text(self.prompt_history[index])
        return True

    def put_back(self, value: str) -> None:
        """Show `value` (text given back to the user: a queued prompt) with the cursor at its
        end, so what is typed next follows it."""
        self._set_text(value)

    def _set_text(self, value: str) -> None:
        self.load_text(value)
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document[last])))

    # -- keys -----------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self._chord:
            self._chord = False
            if key == "ctrl+e":
                event.stop()
                event.prevent_default()
                self.post_message(self.EditorRequested(self))
                return
            self.action_cut()  # what the pending Ctrl+X does alone; then this key as usual
        if key == "ctrl+x":
            self._chord = True
            event.stop()
            event.prevent_default()
            return
        menu = self.menu if self.menu is not None and self.menu.is_open else None
        mentions = self.mentions if self.mentions is not None and self.mentions.is_open else None
        handled = True
        if mentions is not None and key in ("escape", "up", "down", "tab", "enter"):
            self._mention_key(mentions, key)
        elif menu is not None and key == "escape":
            menu.hide()
        elif menu is not None and key in ("up", "down"):
            menu.move(-1 if key == "up" else 1)
        elif menu is not None and key in ("tab", "enter"):
            command = menu.selected()
            typed_in_full = command is not None and self.text.strip().lower() == f"/{command.name}"
            if command is not None and not (key == "enter" and typed_in_full):
                self._set_text(f"/{command.name} ")
            menu.hide()
            if key == "enter" and command is not None and (typed_in_full or not command.args):
                self._submit()
        elif key == "enter":
            self._submit()
        elif key in NEWLINE_KEYS:
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
        elif key == "up" and self.cursor_location[0] == 0:
            handled = self._history_step(-1)
        elif key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            handled = self._history_step(1)
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def _mention_key(self, mentions: MentionMenu, key: str) -> None:
        """Up/Down choose a path, Tab/Enter put it in place of the `@…` being typed, Esc closes."""
        if key in ("up", "down"):
            mentions.move(-1 if key == "up" else 1)
            return
        path = mentions.selected() if key != "escape" else None
        query = mentions.query_text
        mentions.hide()
        if path is None or query is None:
            return
        row, column = self.cursor_location
        start = (row, column - len(query))
        self._replace_via_keyboard(path if path.endswith("/") else path + " ", start, (row, column))

    def complete_mention(self) -> None:
        """Tell the screen what `@` mention (if any) is being typed at the cursor."""
        if self.mentions is None:
            return
        row, column = self.cursor_location
        query = mention_query(self.document[row][:column])
        if query is None and not self.mentions.is_open:
            return
        self.post_message(self.MentionTyped(self, query))

    async def _on_paste(self, event: events.Paste) -> None:
        if self.paste_filter is not None and self.paste_filter(event.text):
            event.stop()
            event.prevent_default()
            self.post_message(self.PastedText(self, event.text))
            return
        await super()._on_paste(event)

    def type_keys(self, keys: list[events.Key]) -> None:
        """Type `keys` (held while the prompt was not ready) as they would have typed:
        characters, new lines, Backspace, and Enter, which sends what is typed so far."""
        for key in keys:
            if key.key == "enter":
                self._submit()
            elif key.key in NEWLINE_KEYS:
                self.insert("\n")
            elif key.key == "backspace":
                self.action_delete_left()
            elif key.is_printable and key.character is not None:
                self.insert(key.character)

    def _submit(self) -> None:
        value = self.text
        if not value.strip():
            return
        self.remember(value)
        self.clear()
        if self.menu is not None:
            self.menu.hide()
        if self.mentions is not None:
            self.mentions.hide()
        self.post_message(self.Submitted(self, value))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self.menu is not None:
            self.menu.show_for(self.text)
        self.complete_mention()
