"""Keys typed before the prompt box is ready: kept, then typed into it.

Until the chat screen has mounted, opened its session and focused the prompt, the app is
busy and the keys the terminal delivers wait in its queue; read then, they would go to
whatever had focus first (or nowhere). The app holds the keys that type or edit text (and
Enter, so a whole first prompt typed early is sent) in arrival order, and once the prompt
has focus types them into it, ahead of anything typed later. Other keys (Ctrl+C, the
screen's bindings) are never held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events

if TYPE_CHECKING:
    from hermes.tui.widgets.chat_input import ChatInput

HELD_KEYS = frozenset({"enter", "backspace", "shift+enter", "ctrl+j", "alt+enter"})
"""Keys held besides printable ones: the ones that edit or send the prompt."""


class EarlyKeys:
    def __init__(self) -> None:
        self.ready = False
        self.releasing = False
        """`release` is scheduled: keys are still held until it runs, so none overtakes them."""
        self._held: list[events.Key] = []

    def hold(self, event: events.Event) -> bool:
        """True (and `event` is kept) when it is a typing key that arrived before the prompt was ready."""
        if self.ready or not isinstance(event, events.Key) or event.is_forwarded:
            return False
        if not (event.is_printable or event.key in HELD_KEYS):
            return False
        self._held.append(event)
        return True

    def release(self, prompt: ChatInput) -> int:
        """The prompt is ready: type the held keys into it, in order; how many there were.

        They are typed by the prompt itself, one after the other, not posted again as
        events: Textual looks up a key's binding (Backspace's) only once the key has
        bubbled back up to the app, behind the keys posted after it, so a burst of posted
        keys would apply a Backspace after the text that followed it."""
        self.ready = True
        held, self._held = self._held, []
        prompt.type_keys(held)
        return len(held)
