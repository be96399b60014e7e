"""The configured storage backend for one CLI command: opened, repaired, closed.

    with opened_storage(settings) as opened:
        record = opened.run(opened.storage.sessions.get_session(session_id))

One event loop (`asyncio.Runner`) lives for the command, so a command can await the
store, ask the user something, and await again on the same connections. Before the
command reads anything, what a crashed hermes left half-done is repaired, so crashed
turns show as interrupted: on SQLite exactly as before (`repair_after_crash` on
state.db, judged by owner processes), on PostgreSQL through the session store
(`repair_abandoned_turns`, judged by instance leases).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from hermes.config import Settings
    from hermes.store.api import Storage

T = TypeVar("T")

__all__ = ["OpenedStorage", "opened_storage"]


@dataclass(frozen=True, slots=True)
class OpenedStorage:
    storage: Storage
    runner: asyncio.Runner

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        """Await `step` on the command's loop and return its result."""
        return self.runner.run(step)


@contextlib.contextmanager
def opened_storage(settings: Settings) -> Iterator[OpenedStorage]:
    """Open `open_storage(settings)`, repair, yield, close (StoreError/ConfigError on failure)."""
    from hermes.store.storage import open_storage

    with asyncio.Runner() as runner:
        storage = runner.run(open_storage(settings))
        try:
            runner.run(_repair(storage))
            yield OpenedStorage(storage, runner)
        finally:
            runner.run(storage.aclose())


async def _repair(storage: Storage) -> None:
    from hermes.store.sqlite_async import SqliteSessions

    if isinstance(storage.sessions, SqliteSessions):
        from hermes.store.repair import repair_after_crash

        repair_after_crash(storage.sessions.sync)
    else:
        await storage.sessions.repair_abandoned_turns()
