"""`PgRunEventStore`: run events as rows, announced with LISTEN/NOTIFY.

Invariants:

- An append is one statement: it reads the run's newest event, inserts the next seq
  unless that event was final, and `pg_notify`s channel `hermes_run_events` with the run
  id as payload, all in one implicit transaction, so the notification is delivered only
  once the row is committed. Two appends racing for one seq: the loser retries.
- Each store keeps one LISTEN connection (started by the first subscription) and fans
  notifications out to its subscriptions by run id. After (re)connecting it wakes every
  subscription, and subscriptions also re-read every POLL_INTERVAL seconds, so a
  notification lost with a dropped connection delays an event, never loses it.
- Subscriptions read history from the table, so `Last-Event-ID` / `?after=` work on any
  instance; see `event_stream.Subscription` for the ordering guarantees.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from hermes.errors import StoreError, StreamEnded
from hermes.store.event_stream import Subscription, Wakeups
from hermes.store.postgres.connect import CONNECT_TIMEOUT, Database
from hermes.store.records import StoredRunEvent

__all__ = ["CHANNEL", "POLL_INTERVAL", "PgRunEventStore"]

logger = logging.getLogger(__name__)

CHANNEL = "hermes_run_events"
POLL_INTERVAL = 2.0
"""Seconds a caught-up subscription waits for a notification before re-reading anyway."""
_RECONNECT_MAX = 5.0

_APPEND = f"""
WITH last AS (
    SELECT seq, final FROM hermes.run_events WHERE run_id = %(run)s ORDER BY seq DESC LIMIT 1
), ins AS (
    INSERT INTO hermes.run_events (run_id, seq, name, data, ts, final)
    SELECT %(run)s, coalesce((SELECT seq FROM last), 0) + 1, %(name)s, %(data)s, %(ts)s, %(final)s
    WHERE NOT coalesce((SELECT final FROM last), false)
    RETURNING seq
)
SELECT seq, pg_notify('{CHANNEL}', %(run)s) FROM ins
"""


def _event(row: Any) -> StoredRunEvent:
    run_id, seq, name, data, ts, final = row
    return StoredRunEvent(run_id=run_id, seq=int(seq), name=name, data=json.loads(data), ts=ts, final=bool(final))


class _Listener:
    """One LISTEN connection that wakes this process's subscriptions."""

    def __init__(self, url: str, wakeups: Wakeups) -> None:
        self._url = url
        self._wakeups = wakeups
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._closed = False

    async def ready(self) -> None:
        """Start listening (once) and wait until the first LISTEN is in place.

        Bounded by CONNECT_TIMEOUT; past it subscriptions still work by polling.
        """
        if self._closed:
            return
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="hermes-run-events-listener")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), CONNECT_TIMEOUT)

    async def _run(self) -> None:
        import psycopg

        delay = 0.1
        while not self._closed:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
                )
                try:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    self._wakeups.wake_all()
                    delay = 0.1
                    async for note in conn.notifies():
                        self._wakeups.wake(note.payload)
                finally:
                    with contextlib.suppress(psycopg.Error, OSError):
                        await conn.close()
            except (psycopg.Error, OSError) as exc:
                logger.warning("run events: LISTEN connection lost (%s); reconnecting", type(exc).__name__)
            self._wakeups.wake_all()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RECONNECT_MAX)

    async def aclose(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class PgRunEventStore:
    """See the module docstring. Built by `open_postgres_storage`."""

    def __init__(self, db: Database, *, poll_interval: float = POLL_INTERVAL) -> None:
        self._db = db
        self._wakeups = Wakeups()
        self._listener = _Listener(db.url, self._wakeups)
        self._poll_interval = poll_interval

    async def append(
        self,
        run_id: str,
        name: str,
        data: dict[str, Any] | None = None,
        *,
        final: bool = False,
        ts: float | None = None,
    ) -> StoredRunEvent:
        import psycopg

        payload = dict(data or {})
        stamp = time.time() if ts is None else ts
        params = {"run": run_id, "name": name, "data": json.dumps(payload), "ts": stamp, "final": final}
        for _ in range(16):
            try:
                async with self._db.connection() as conn:
                    cursor = await conn.execute(_APPEND, params)
                    row = await cursor.fetchone()
            except StoreError as exc:
                if isinstance(exc.__context__, psycopg.errors.UniqueViolation):
                    continue
                raise
            if row is None:
                raise StreamEnded(f"run {run_id}: its event stream has ended")
            return StoredRunEvent(run_id=run_id, seq=int(row[0]), name=name, data=payload, ts=stamp, final=final)
        raise StoreError(f"run {run_id}: could not append an event (too many concurrent writers)")

    async def read_after(self, run_id: str, after: int = 0, *, limit: int | None = None) -> list[StoredRunEvent]:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "SELECT run_id, seq, name, data, ts, final FROM hermes.run_events "
                "WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                (run_id, max(after, 0), None if limit is None else max(limit, 0)),
            )
            rows = await cursor.fetchall()
        return [_event(row) for row in rows]

    def subscribe(self, run_id: str, after: int = 0) -> Subscription:
        return Subscription(
            run_id,
            after,
            self.read_after,
            self._wakeups,
            poll_interval=self._poll_interval,
            prepare=self._listener.ready,
        )

    async def delete_events(self, run_id: str) -> None:
        async with self._db.connection() as conn:
            await conn.execute("DELETE FROM hermes.run_events WHERE run_id = %s", (run_id,))

    async def prune_events(self, *, before: float) -> int:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM hermes.run_events AS e USING "
                "(SELECT run_id FROM hermes.run_events WHERE final AND ts < %s) AS ended "
                "WHERE e.run_id = ended.run_id",
                (before,),
            )
            return int(cursor.rowcount)

    async def aclose(self) -> None:
        await self._listener.aclose()
