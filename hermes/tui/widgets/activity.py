"""The live activity line above the input: what the turn is doing right now, and for how long.

This is the "nothing hangs silently" guarantee: while a turn runs, the line always says
what we are waiting for and counts the seconds; a silent upstream turns into
"waiting for the model (Ns)". With the local model the line also shows the generation
rate ("generating (12s) · 9.4 tokens/s"); a rate is shown only while the phase that
measured it lasts.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SILENCE_AFTER = 3.0
"""Seconds without any event before the line says we are waiting for the model."""


class Activity(Static):
    DEFAULT_CSS = """
    Activity {
        height: 1;
        padding: 0 1;
        color: $text-muted;
        display: none;
    }
    Activity.-active {
        display: block;
    }
    Activity.-warning {
        color: $text-warning;
    }
    """

    def __init__(self, *, silence_after: float = SILENCE_AFTER, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.silence_after = silence_after
        self.phase = ""
        self.waiting_for_model = True
        """False while tools run (silence is then the tool's, not the model's)."""
        self.rate: float | None = None
        """Tokens per second of the model call in progress (local model), or None."""
        self._since = 0.0
        self._last_event = 0.0
        self._frame = 0
        self._timer: Timer | None = None

    def start(self, phase: str = "thinking") -> None:
        now = time.monotonic()
        self.phase = phase
        self._since = now
        self._last_event = now
        self.waiting_for_model = True
        self.add_class("-active")
        if self._timer is None:
            self._timer = self.set_interval(0.1, self.tick)
        self.tick()

    def set_phase(self, phase: str, *, waiting_for_model: bool = True, warning: bool = False) -> None:
        if phase != self.phase:
            self._since = time.monotonic()
            self.rate = None
        self.phase = phase
        self.waiting_for_model = waiting_for_model
        self.set_class(warning, "-warning")
        self.tick()

    def touch(self) -> None:
        """An event arrived."""
        self._last_event = time.monotonic()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.remove_class("-active")
        self.remove_class("-warning")
        self.phase = ""
        self.rate = None

    def set_rate(self, tokens_per_second: float | None) -> None:
        """The model's generation rate, shown until the phase changes."""
        self.rate = tokens_per_second
        self.tick()

    @property
    def line(self) -> str:
        now = time.monotonic()
        silent = now - self._last_event
        if self.waiting_for_model and silent >= self.silence_after:
            return f"waiting for the model ({silent:.0f}s)"
        rate = f" · {self.rate:.1f} tokens/s" if self.rate is not None else ""
        return f"{self.phase} ({now - self._since:.0f}s){rate}"

    def tick(self) -> None:
        if not self.has_class("-active"):
            return
        self._frame = (self._frame + 1) % len(SPINNER)
        text = Text.assemble((SPINNER[self._frame] + " ", "bold"), self.line, ("  · Esc to interrupt", "dim"))
        self.update(text)
