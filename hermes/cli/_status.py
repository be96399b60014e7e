"""The waiting line of `chat -q`: what the turn is doing, for how long, how fast.

On a terminal one line on stderr is redrawn ten times a second ("⠋ generating (12 s,
40 s in all) · 9.4 tokens/s"); without one a plain line is printed at most every
`interval` seconds (10 by default). Phases: preparing the model (assembling, verifying,
loading), reading the prompt, generating, running a tool, waiting for the model.

Invariants:
- every write to stdout or stderr while the line may be drawn happens inside `paused()`,
  which erases the line first and holds the lock the drawing thread takes: nothing is
  ever printed after, or into, a half-drawn status;
- the line is not drawn while answer text streams or an approval prompt is open;
- `close()` erases it: the screen keeps the answer and the activity lines, no status;
- it only writes to stderr, never to stdout (`--json` stays one object per line).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from hermes.agent.events import AgentEvent
from hermes.agent.progress import ProgressUpdate
from hermes.agent.types import ApprovalCallback, ApprovalDecision, ApprovalRequest
from hermes.terminal_text import for_terminal

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PLAIN_INTERVAL = 10.0
"""Seconds between two plain status lines when stderr is not a terminal."""
REDRAW = 0.1


def plain_interval() -> float:
    """PLAIN_INTERVAL, or HERMES_TEST_STATUS_INTERVAL (the test harness's shorter one)."""
    try:
        value = float(os.environ.get("HERMES_TEST_STATUS_INTERVAL", ""))
    except ValueError:
        return PLAIN_INTERVAL
    return value if value > 0 else PLAIN_INTERVAL

ERASE = "\r\x1b[2K"


class StatusLine:
    def __init__(
        self,
        err: TextIO,
        *,
        tty: bool,
        interval: float = PLAIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.err = err
        self.tty = tty
        self.interval = interval
        self.clock = clock
        self.phase = "starting"
        self.rate: float | None = None
        self.hidden = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False
        self._frame = 0
        self._started = self._since = self._last_plain = clock()

    # ---- lifecycle ----------------------------------------------------------------

    def start(self) -> StatusLine:
        self._thread = threading.Thread(target=self._run, name="hermes-status", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        with self._lock:
            self._erase()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the line and keep it erased while the caller writes."""
        with self._lock:
            self._erase()
            yield

    # ---- what is happening --------------------------------------------------------

    def set_phase(self, phase: str) -> None:
        with self._lock:
            if phase != self.phase:
                self.phase = phase
                self._since = self.clock()
                self.rate = None

    def on_progress(self, update: ProgressUpdate) -> None:
        """Preparing the model (called from whichever thread does the work)."""
        step = update.step or "working"
        if update.total and update.done >= update.total:
            self.set_phase("preparing the model")
            return
        share = f" {100 * update.done // update.total}%" if update.total else ""
        label = f"preparing the model: {step}{share}"
        with self._lock:
            if not self.phase.startswith(f"preparing the model: {step}"):
                self._since = self.clock()
            self.phase = label

    def observe(self, event: AgentEvent) -> None:
        """Follow the turn's events (call inside `paused()`, before rendering the event)."""
        kind = event.type
        if kind in ("text.delta", "approval.requested"):
            self.hidden = True  # the answer (or a question) is being written where the line would be
            return
        if kind not in ("model.progress", "reasoning.delta"):  # these come while an answer streams too
            self.hidden = False
        if kind == "turn.started":
            self.set_phase("waiting for the model")
        elif kind == "model.progress":
            phase = "reading the prompt" if event.phase == "reading" else "generating"  # type: ignore[union-attr]
            if not self.phase.startswith(("generating ", "running ")) or event.phase == "reading":  # type: ignore[union-attr]
                self.set_phase(phase)
            if event.tokens_per_second is not None:  # type: ignore[union-attr]
                self.rate = event.tokens_per_second  # type: ignore[union-attr]
        elif kind == "reasoning.delta":
            self.set_phase("reasoning")
        elif kind == "tool.generating":
            self.set_phase(f"generating a {event.name} call")  # type: ignore[union-attr]
        elif kind == "tool.started":
            self.set_phase(f"running {event.name}")  # type: ignore[union-attr]
        elif kind in ("tool.completed", "segment.end", "context.compacted"):
            self.set_phase("waiting for the model")
        elif kind == "retrying":
            self.set_phase("reconnecting")

    def around_approval(self, approve: ApprovalCallback | None) -> ApprovalCallback | None:
        """The approver with the line erased and kept off while it asks."""
        if approve is None:
            return None

        async def ask(request: ApprovalRequest) -> ApprovalDecision:
            with self._lock:
                self._erase()
                self.hidden = True
            try:
                return await approve(request)
            finally:
                self.hidden = False

        return ask

    # ---- drawing ------------------------------------------------------------------

    def text(self) -> str:
        now = self.clock()
        phase_s, total_s = now - self._since, now - self._started
        timing = f"{phase_s:.0f} s" if abs(total_s - phase_s) < 1 else f"{phase_s:.0f} s, {total_s:.0f} s in all"
        rate = f" · {self.rate:.1f} tokens/s" if self.rate is not None else ""
        return for_terminal(f"{self.phase} ({timing}){rate}")  # the phase can name a tool the model made up

    def _run(self) -> None:
        while not self._stop.wait(REDRAW):
            self.tick()

    def tick(self) -> None:
        with self._lock:
            if self.hidden or self._stop.is_set():
                return
            if self.tty:
                self._frame = (self._frame + 1) % len(SPINNER)
                width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
                line = f"{SPINNER[self._frame]} {self.text()}"[:width]  # never wraps: one erase clears it
                self.err.write(ERASE + line)
                self.err.flush()
                self._drawn = True
            elif self.clock() - self._last_plain >= self.interval:
                self._last_plain = self.clock()
                self.err.write(f"hermes: {self.text()}\n")
                self.err.flush()

    def _erase(self) -> None:
        if self._drawn:
            self.err.write(ERASE)
            self.err.flush()
            self._drawn = False
