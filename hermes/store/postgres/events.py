"""`PgRunEventStore`: run events as rows, announced with LISTEN/NOTIFY.

Invariants:

- An append is one statement: it reads the run's newest event, inserts the next seq
  unless that event was final, and `pg_notify`s channel `hermes_run_events` with the run
  id as payload, all in one implicit transaction, so the notification is delivered only
  once the row is committed. Two appends racing for one seq: the loser retries.
- Notifications arrive through the storage's one LISTEN connection (`postgres.listener`,
  started by the first subscription at the latest), fanned out to this store's
  subscriptions by run id. After every loss and (re)connect of that connection every
  subscription is woken, and subscriptions also re-read every POLL_INTERVAL seconds, so a
  notification lost with a dropped connection delays an event, never loses it.
- Subscriptions read history from the table, so `Last-Event-ID` / `?after=` work on any
  instance; see `event_stream.Subscription` for the ordering guarantees.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from hermes.errors import StoreError, StreamEnded
from hermes.store.event_stream import Subscription, Wakeups
from hermes.store.postgres.connect import Database
from hermes.store.postgres.listener import PgListener
from hermes.store.records import StoredRunEvent

__all__ = ["CHANNEL", "POLL_INTERVAL", "PgRunEventStore"]

logger = logging.getLogger(__name__)

CHANNEL = "hermes_run_events"
POLL_INTERVAL = 2.0
"""Seconds a caught-up subscription waits for a notification before re-reading anyway."""

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


class PgRunEventStore:
    """See the module docstring. Built by `open_postgres_storage`."""

    def __init__(self, db: Database, listener: PgListener, *, poll_interval: float = POLL_INTERVAL) -> None:
        self._db = db
        self._wakeups = Wakeups()
        self._listener = listener
        listener.on(CHANNEL, self._wakeups.wake)
        listener.on_reconnect(self._wakeups.wake_all)
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
            prepare=self._listening,
        )

    async def _listening(self) -> None:
        """Wait (bounded by CONNECT_TIMEOUT) for the LISTEN; past it subscriptions poll."""
        await self._listener.ready()

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
