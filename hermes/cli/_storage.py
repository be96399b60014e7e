"""The configured storage backend for one CLI command: opened, repaired, closed.

    with opened_storage(settings) as opened:
        record = opened.run(opened.storage.sessions.get_session(session_id))

One event loop lives for the command, so a command can await the store, ask the user
something, and await again on the same connections: an `asyncio.Runner` in this thread,
or, when this thread already runs a loop (the CLI called from async code), a private
loop in a helper thread that this thread waits on. Before the
command reads anything, what a crashed hermes left half-done is repaired, so crashed
turns show as interrupted: on SQLite exactly as before (`repair_after_crash` on
state.db, judged by owner processes), on PostgreSQL through the session store
(`repair_abandoned_turns`, judged by instance leases).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

    from hermes.config import Settings
    from hermes.store.api import Storage

T = TypeVar("T")

__all__ = ["CommandLoop", "OpenedStorage", "opened_storage"]


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
        self._thread = threading.Thread(target=self._loop.run_forever, name="hermes-cli-storage", daemon=True)
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


@dataclass(frozen=True, slots=True)
class OpenedStorage:
    storage: Storage
    loop: CommandLoop

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        """Await `step` on the command's loop and return its result."""
        return self.loop.run(step)


@contextlib.contextmanager
def opened_storage(settings: Settings) -> Iterator[OpenedStorage]:
    """Open `open_storage(settings)`, repair, yield, close (StoreError/ConfigError on failure)."""
    from hermes.store.storage import open_storage

    loop = CommandLoop()
    try:
        storage = loop.run(open_storage(settings))
        try:
            loop.run(_repair(storage))
            yield OpenedStorage(storage, loop)
        finally:
            loop.run(storage.aclose())
    finally:
        loop.close()


async def _repair(storage: Storage) -> None:
    """Turns a crashed owner left open (a dead process on SQLite, a dead instance on PostgreSQL)."""
    await storage.sessions.repair_abandoned_turns()
