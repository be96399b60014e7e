"""Tells a user who looked away: when a turn that ran `notify_after` seconds or more ends, or
waits for an approval, the terminal rings its bell or shows an OSC 9 notification
(`notify = "bell" | "osc" | "off"`).

Invariants:
- a turn the user stopped (Esc, Ctrl+C) does not notify: they are at the keyboard;
- an approval of something that is not a turn (a `!` command, asked at once) does not notify;
- what is written is one escape sequence with no control character of the text in it
  (OSC 9 ends at BEL, so the text can never end it early or start another sequence).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from textual.app import App

from hermes.config import Settings

BELL = "\a"
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_TEXT = 200


def osc9(text: str) -> str:
    """The OSC 9 notification sequence for `text` (control characters dropped, length capped)."""
    clean = _CONTROLS.sub(" ", text).strip()[:MAX_TEXT]
    return f"\x1b]9;{clean}\a"


class TurnNotifier:
    """See the module docstring. `write` puts raw text on the terminal."""

    def __init__(
        self, settings: Settings, write: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.kind = settings.notify
        self.after = settings.notify_after
        self.write = write
        self.clock = clock
        self._started: float | None = None

    def turn_started(self) -> None:
        self._started = self.clock()

    def turn_ended(self, *, interrupted: bool, what: str = "the turn is done") -> None:
        long_enough = self._long_enough()
        self._started = None
        if long_enough and not interrupted:
            self._signal(f"hermes: {what}")

    def approval_waiting(self, command: str) -> None:
        if self._long_enough():
            self._signal(f"hermes: approval needed: {command}")

    def _long_enough(self) -> bool:
        return self._started is not None and self.clock() - self._started >= self.after

    def _signal(self, text: str) -> None:
        if self.kind == "bell":
            self.write(BELL)
        elif self.kind == "osc":
            self.write(osc9(text))


def terminal_writer(app: App[object]) -> Callable[[str], None]:
    """Writes raw text to `app`'s terminal (nothing while headless, as App.bell does)."""

    def write(text: str) -> None:
        driver = app._driver  # Textual's own bell and clipboard write through it too
        if driver is not None and not app.is_headless:
            driver.write(text)

    return write
