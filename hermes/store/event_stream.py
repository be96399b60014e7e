"""Run-event subscriptions shared by both backends, and the in-process event log.

A subscription reads the stored events after its `last_seq`, hands them out one by one,
and when it has caught up waits for a wake-up (an append announced for its run) before
reading again. Invariants:

- The waiter is registered before the first read and cleared before every read, so an
  append that lands between a read and the wait still wakes it: no event is missed.
- Events are handed out in seq order without gaps or repeats: every read asks for
  seq > last_seq and `last_seq` moves only when an event is handed out.
- After handing out a `final` event the subscription is finished, and one started after
  the final event's seq is finished from the start; `aclose()` finishes it at once (a
  pending `next()` returns promptly).
- `poll_interval` (PostgreSQL) re-reads even without a wake-up, so a notification lost
  with a dropped LISTEN connection delays an event, never loses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Self

from hermes.errors import StreamEnded
from hermes.store.records import StoredRunEvent

__all__ = ["MemoryRunEventStore", "Subscription", "Wakeups"]

ReadAfter = Callable[[str, int], Awaitable[list[StoredRunEvent]]]


class Wakeups:
    """Per-run waiters, woken when an event of their run was appended."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

    def add(self, run_id: str) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters.setdefault(run_id, set()).add(event)
        return event

    def remove(self, run_id: str, event: asyncio.Event) -> None:
        waiters = self._waiters.get(run_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[run_id]

    def wake(self, run_id: str) -> None:
        for event in self._waiters.get(run_id, ()):
            event.set()

    def wake_all(self) -> None:
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()

    def __len__(self) -> int:
        return sum(len(waiters) for waiters in self._waiters.values())


class Subscription:
    """`hermes.store.api.EventSubscription` over a read function and a `Wakeups`."""

    def __init__(
        self,
        run_id: str,
        after: int,
        read_after: ReadAfter,
        wakeups: Wakeups,
        *,
        poll_interval: float | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.last_seq = max(after, 0)
        self._read_after = read_after
        self._wakeups = wakeups
        self._poll_interval = poll_interval
        self._buffer: list[StoredRunEvent] = []
        self._finished = False
        self._closed = False
        self._start_checked = self.last_seq == 0
        self._wake = wakeups.add(run_id)
        self._prepare = prepare
        """Awaited once before the first read (PostgreSQL: the LISTEN is in place)."""

    async def next(self, timeout: float | None = None) -> StoredRunEvent | None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + max(timeout, 0.0)
        while True:
            if self._finished or self._closed:
                self._unregister()
                raise StopAsyncIteration
            if self._buffer:
                event = self._buffer.pop(0)
                self.last_seq = event.seq
                if event.final:
                    self._finished = True
                return event
            if self._prepare is not None:
                prepare, self._prepare = self._prepare, None
                await prepare()
            self._wake.clear()
            self._buffer = await self._read_after(self.run_id, self.last_seq)
            if self._buffer or self._closed:
                continue
            if not self._start_checked:
                # Started after a seq: when that event was the final one, this is the end.
                self._start_checked = True
                before = await self._read_after(self.run_id, self.last_seq - 1)
                if before and before[0].seq == self.last_seq and before[0].final:
                    self._finished = True
                    continue
            wait = None if deadline is None else deadline - loop.time()
            if wait is not None and wait <= 0:
                return None
            if self._poll_interval is not None:
                wait = self._poll_interval if wait is None else min(wait, self._poll_interval)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def __anext__(self) -> StoredRunEvent:
        while True:
            event = await self.next()
            if event is not None:
                return event

    def __aiter__(self) -> AsyncIterator[StoredRunEvent]:
        return self

    async def aclose(self) -> None:
        self._closed = True
        self._wake.set()
        self._unregister()

    def _unregister(self) -> None:
        self._wakeups.remove(self.run_id, self._wake)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class MemoryRunEventStore:
    """`RunEventStore` kept in this process: the SQLite backend's run events.

    SQLite serves one process on one host, so a run's events live with the process that
    runs it, as the server always kept them (appending is a list append, no disk write
    per streamed token). They do not survive a restart; the run's status does (the runs table).
    """

    def __init__(self) -> None:
        self._streams: dict[str, list[StoredRunEvent]] = {}
        self._wakeups = Wakeups()

    async def append(
        self,
        run_id: str,
        name: str,
        data: dict[str, Any] | None = None,
        *,
        final: bool = False,
        ts: float | None = None,
    ) -> StoredRunEvent:
        stream = self._streams.setdefault(run_id, [])
        if stream and stream[-1].final:
            raise StreamEnded(f"run {run_id}: its event stream has ended")
        event = StoredRunEvent(
            run_id=run_id,
            seq=len(stream) + 1,
            name=name,
            data=dict(data or {}),
            ts=time.time() if ts is None else ts,
            final=final,
        )
        stream.append(event)
        self._wakeups.wake(run_id)
        return event

    async def read_after(self, run_id: str, after: int = 0, *, limit: int | None = None) -> list[StoredRunEvent]:
        stream = self._streams.get(run_id, [])
        start = max(after, 0)
        end = len(stream) if limit is None else start + max(limit, 0)
        return stream[start:end]

    def subscribe(self, run_id: str, after: int = 0) -> Subscription:
        return Subscription(run_id, after, self.read_after, self._wakeups)

    async def delete_events(self, run_id: str) -> None:
        self._streams.pop(run_id, None)

    async def prune_events(self, *, before: float) -> int:
        stale = [
            run_id
            for run_id, stream in self._streams.items()
            if stream and stream[-1].final and stream[-1].ts < before
        ]
        removed = 0
        for run_id in stale:
            removed += len(self._streams.pop(run_id))
        return removed
