"""The event loop of one CLI command (`CommandLoop`).

    loop = CommandLoop()
    record = loop.run(sessions.get_session(session_id))
    loop.close()

One event loop lives for the command, so a command can await the store, ask the user
something, and await again on the same connections (hermes/cli/_sessions_source.py opens
the backend on it): an `asyncio.Runner` in this thread, or, when this thread already runs
a loop (the CLI called from async code), a private loop in a helper thread that this
thread waits on.
"""

from __future__ import annotations

import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

__all__ = ["CommandLoop"]


class CommandLoop:
    """The event loop of one command (see the module docstring); `close()` when done."""

    def __init__(self) -> None:
        import asyncio  # here, not at import: a command that never runs a loop never loads it

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._runner: asyncio.Runner | None = asyncio.Runner()
            self._thread: threading.Thread | None = None
            return
        self._runner = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hermes-cli-loop", daemon=True)
        self._thread.start()

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        """Await `step` on the command's loop and return its result (or raise its error)."""
        import asyncio

        if self._runner is not None:
            return self._runner.run(step)
        return asyncio.run_coroutine_threadsafe(step, self._loop).result()

    def close(self) -> None:
        import asyncio

        if self._runner is not None:
            self._runner.close()
            return
        assert self._thread is not None
        asyncio.run_coroutine_threadsafe(self._loop.shutdown_asyncgens(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
