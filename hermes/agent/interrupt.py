"""The explicit interrupt handle of a turn.

    interrupt = TurnInterrupt()
    async for event in agent.run_turn(request, interrupt=interrupt):
        ...
    # elsewhere, e.g. an Esc binding, a client disconnect, POST /v1/runs/{id}/stop:
    interrupt.interrupt()                                 # code "interrupted"
    interrupt.interrupt(SERVER_SHUTDOWN, "the server is shutting down")

Interrupting is the only way to stop a turn and still get its final `TurnCompleted`
(status ``interrupted``, `error_code` = the code given here). Any other cancellation of
the consuming task (a timeout, a task group, shutdown) runs the same cleanup and then
propagates. The first call wins; later calls are ignored.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes.error_codes import INTERRUPTED


class TurnInterrupt:
    """Set once; the engine listens for it while the turn runs."""

    __slots__ = ("code", "message", "_listeners")

    def __init__(self) -> None:
        self.code: str | None = None
        self.message: str | None = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.code is not None

    @property
    def listened(self) -> bool:
        """True while a turn listens (between the start and the end of `run_turn`).

        A caller whose task may not be running a turn yet (or at all) can cancel it
        instead when nobody listens.
        """
        return bool(self._listeners)

    def interrupt(self, code: str = INTERRUPTED, message: str = "interrupted by the user") -> None:
        """Ask the turn to stop; idempotent, safe from any callback on the turn's event loop."""
        if self.code is not None:
            return
        self.code = code
        self.message = message
        for listener in list(self._listeners):
            listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` on interrupt (at once if already interrupted); returns its remover."""
        self._listeners.append(listener)
        if self.code is not None:
            listener()

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove
