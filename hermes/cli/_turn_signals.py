"""Ctrl+C (SIGINT) and SIGTERM during a one-shot turn (`hermes chat -q`, local or remote).

Invariants:
- The first signal asks the turn to stop: it winds down and the command exits 130 with its
  result. A second one stops waiting for that: the task running the turn is cancelled.
- A signal that arrives before the turn has started is applied when `attach` gives the
  turn's handle, so it is never lost.
- The handlers are installed for the `with` block only.
"""

from __future__ import annotations

import asyncio
import signal
from types import TracebackType
from typing import Protocol

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stoppable(Protocol):
    def stop(self) -> None: ...


class TurnSignals:
    """Use as `with TurnSignals() as signals:` inside the task that runs the turn."""

    def __init__(self) -> None:
        self.stop_asked = False
        """True once a signal asked the turn to stop (the command then exits 130)."""
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._handle: Stoppable | None = None

    def attach(self, handle: Stoppable) -> None:
        self._handle = handle
        if self.stop_asked:
            handle.stop()

    def __enter__(self) -> TurnSignals:
        for sig in SIGNALS:
            self._loop.add_signal_handler(sig, self._on_signal)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for sig in SIGNALS:
            self._loop.remove_signal_handler(sig)

    def _on_signal(self) -> None:
        if self.stop_asked:
            self._task.cancel()
            return
        self.stop_asked = True
        if self._handle is not None:
            self._handle.stop()
