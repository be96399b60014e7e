"""`RunJournal`: one run's events and status rows, written to the storage in order.

The run's entries arrive synchronously (`Run.log`, `Run.emit`), the storage is async:
the journal queues each write and one task per run drains the queue, so the store sees
the run's events and status changes exactly in the order they happened (an event's seq
is assigned by the store; with one writer per run it is the order of `event()` calls).

Invariants:
- Writes of one run never overlap; `flush()` returns once everything queued before it
  has been written (or failed and been logged: a failing write never stops the ones
  after it, since the next status row supersedes it and the stream must still end).
- A run's first status row is written by `RunRegistry.create` before the run is
  announced, so every instance can find a run whose id it has been given.
- Once another instance has ended the stream (the orphan sweeper settled the run as
  `interrupted` because this instance's lease had expired), the journal is
  *superseded*: it drops every later write, so the settled row and the final event
  stay as they are, and it calls `on_superseded` once (the registry stops the turn).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from hermes.errors import StoreError
from hermes.store.api import AsyncRunStore, RunEventStore
from hermes.store.records import RunRecord, StoredRunEvent

logger = logging.getLogger(__name__)

_Write = Callable[[], Awaitable[object]]


class RunJournal:
    def __init__(
        self,
        run_id: str,
        events: RunEventStore,
        runs: AsyncRunStore,
        *,
        on_superseded: Callable[[], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self._events = events
        self._runs = runs
        self.on_superseded = on_superseded
        self.superseded = False
        self._last_seq = 0
        self._queue: collections.deque[_Write] = collections.deque()
        self._task: asyncio.Task[None] | None = None

    def event(self, name: str, data: dict[str, Any], *, final: bool = False) -> None:
        """Queue the next event of the run's stream (`final`: the last one)."""
        self._push(lambda: self._append(name, data, final))

    async def _append(self, name: str, data: dict[str, Any], final: bool) -> None:
        try:
            stored: StoredRunEvent = await self._events.append(self.run_id, name, data, final=final)
        except StoreError:
            if await self._ended_elsewhere():
                await self._supersede()
                return
            raise
        self._last_seq = stored.seq

    async def _ended_elsewhere(self) -> bool:
        newer = await self._events.read_after(self.run_id, self._last_seq)
        return any(event.final for event in newer)

    async def _supersede(self) -> None:
        logger.warning("run %s was settled by another instance; this instance stops it", self.run_id)
        self.superseded = True
        self._queue.clear()
        # A status row this instance wrote after the settlement must not revive the run.
        await self._runs.mark_interrupted([self.run_id])
        if self.on_superseded is not None:
            self.on_superseded()

    def status(self, record: RunRecord) -> None:
        """Queue the run's new status row."""
        self._push(lambda: self._runs.put(record))

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _push(self, write: _Write) -> None:
        if self.superseded:
            return
        self._queue.append(write)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain(), name=f"hermes-journal-{self.run_id}")

    async def _drain(self) -> None:
        while self._queue:
            write = self._queue.popleft()
            try:
                await write()
            except Exception:  # noqa: BLE001 - logged; the writes after it still happen
                logger.exception("run %s: writing to the storage failed", self.run_id)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued write is done; False when `timeout` passed first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._task is not None and not self._task.done():
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            done, _ = await asyncio.wait({self._task}, timeout=remaining)
            if not done:
                return False
        return not self._queue
