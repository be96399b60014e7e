"""Turning a `TurnInterrupt` into a stop of the engine code of one turn.

The engine runs inside whatever task iterates `run_turn`; there is no task of its own
and no queue between engine and consumer. So an interrupt is delivered in one of two ways:

- while the consumer awaits `__anext__` (engine code is running, e.g. reading the
  upstream or waiting for a tool), the gate cancels that task once; the cancellation
  lands at the engine's current `await`, and the engine recognises it with `own_cancel()`
  and takes it back (`Task.uncancel()`) — exactly that one, never anybody else's;
- while the generator is suspended at a `yield` (the consumer is handling an event),
  only the handle's flag is set; the engine checks it when it is resumed.

Invariants:
- `task` is set only between yields; None while suspended at a yield (a cancel sent then
  would land in the consumer's code).
- At most one cancel is sent per turn, never to the current task (it would land after the
  engine's next yield) and never to a task that is already being cancelled (its cleanup
  must not be cut short; the engine stops anyway and the foreign cancel propagates).
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes.agent.interrupt import TurnInterrupt

_CANCEL_MESSAGE = "hermes: turn interrupted through its TurnInterrupt handle"


class InterruptGate:
    __slots__ = ("_remove", "_sent_to", "task")

    def __init__(self, interrupt: TurnInterrupt | None) -> None:
        self.task: asyncio.Task[Any] | None = None
        self._sent_to: asyncio.Task[Any] | None = None
        self._remove = interrupt.add_listener(self._on_interrupt) if interrupt is not None else None

    def _on_interrupt(self) -> None:
        task = self.task
        if task is None or self._sent_to is not None or task.done() or task.cancelling():
            return
        try:
            current = asyncio.current_task()
        except RuntimeError:  # called outside the event loop: the flag is checked at the next yield
            return
        if task is current:
            return
        self._sent_to = task
        task.cancel(_CANCEL_MESSAGE)

    def own_cancel(self) -> bool:
        """Call on catching CancelledError in engine code: True when it was only ours.

        Takes our cancel request back. False when no cancel of ours was sent, or when
        another cancel is pending too (which must propagate).
        """
        task = self._sent_to
        if task is None:
            return False
        self._sent_to = None
        return task.uncancel() == 0

    def close(self) -> None:
        """Stop listening; the turn is over."""
        self.task = None
        if self._remove is not None:
            self._remove()
            self._remove = None
