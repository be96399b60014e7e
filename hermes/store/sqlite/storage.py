"""The SQLite backend of the async storage interface: `open_sqlite_storage(home)`.

Sessions are the shared rules (`sessions.SqliteSessions`); responses, receipts, runs and
leases are adapters over the synchronous stores. Every call is a plain sqlite3 call in
the event loop's thread: the queries take well under a millisecond, so a thread hop would
cost more than it saves, and the files (0600, WAL) and speed stay what they were. The one
exception is state.db's WAL checkpoints: a thread of their own (`checkpointer`), so no
turn's commit waits for a checkpoint's page writes.
Files in `$HERMES_HOME`: state.db (sessions), response_store.db
(responses), runs.db (runs, receipts, instance leases). Run events live in the process
(`event_stream.MemoryRunEventStore`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hermes.ids import new_instance_id
from hermes.store.api import Storage, caps_of
from hermes.store.control import MemoryControlChannel
from hermes.store.event_stream import MemoryRunEventStore
from hermes.store.records import (
    ORPHAN_MESSAGE,
    RETENTION_SECONDS,
    TERMINAL_STATES,
    InstanceLease,
    Receipt,
    RunRecord,
)
from hermes.store.sqlite.repair import repair_after_crash
from hermes.store.sqlite.responses import ResponseStore
from hermes.store.sqlite.runs import RunStore
from hermes.store.sqlite.sessions import STATE_DB, SqliteSessions, SqliteSessionStore

__all__ = [
    "RUNS_DB",
    "SqliteLeases",
    "SqliteReceipts",
    "SqliteResponses",
    "SqliteRuns",
    "SqliteSessions",
    "open_sqlite_storage",
]

RUNS_DB = "runs.db"
RESPONSE_DB = "response_store.db"


class SqliteResponses:
    """`AsyncResponseStore` over `ResponseStore`."""

    def __init__(self, store: ResponseStore) -> None:
        self.sync = store

    @property
    def max_size(self) -> int:
        return self.sync.max_size

    @max_size.setter
    def max_size(self, value: int) -> None:
        self.sync.max_size = value

    async def get(self, response_id: str) -> dict[str, Any] | None:
        return self.sync.get(response_id)

    async def put(self, response_id: str, record: dict[str, Any]) -> None:
        self.sync.put(response_id, record)

    async def delete(self, response_id: str) -> bool:
        return self.sync.delete(response_id)

    async def count(self) -> int:
        return len(self.sync)

    async def get_conversation(self, name: str) -> str | None:
        return self.sync.get_conversation(name)

    async def set_conversation(self, name: str, response_id: str) -> None:
        self.sync.set_conversation(name, response_id)

    async def find_item(self, item_id: str) -> dict[str, Any] | None:
        return self.sync.find_item(item_id)


class SqliteReceipts:
    """`ReceiptStore` over `RunStore` (runs.db)."""

    def __init__(self, store: RunStore) -> None:
        self.sync = store

    @property
    def retention(self) -> float:
        return self.sync.retention

    async def find_receipt(self, scope: str, key: str, *, now: float | None = None) -> Receipt | None:
        return self.sync.find_receipt(scope, key, now=now)

    async def claim_receipt(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        *,
        now: float | None = None,
        expires_at: float | None = None,
    ) -> Receipt | None:
        return self.sync.claim_receipt(scope, key, fingerprint, run_id, now=now, expires_at=expires_at)

    async def hold_receipt(self, scope: str, key: str, run_id: str, *, expires_at: float) -> bool:
        return self.sync.hold_receipt(scope, key, run_id, expires_at=expires_at)

    async def store_answer(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        answer: dict[str, Any],
        *,
        expires_at: float,
        now: float | None = None,
    ) -> bool:
        return self.sync.store_answer(scope, key, fingerprint, run_id, answer, expires_at=expires_at, now=now)

    async def release_receipt(self, scope: str, key: str, run_id: str) -> None:
        self.sync.release_receipt(scope, key, run_id)

    async def touch_receipts(self, run_id: str, *, now: float | None = None) -> None:
        self.sync.touch_receipts(run_id, now=now)

    async def prune_receipts(self, *, now: float | None = None) -> int:
        return self.sync.prune_receipts(now=now)


class SqliteRuns:
    """`AsyncRunStore` over `RunStore` (runs.db)."""

    def __init__(self, store: RunStore) -> None:
        self.sync = store

    async def put(self, record: RunRecord) -> None:
        self.sync.put(record)

    async def get(self, run_id: str) -> RunRecord | None:
        return self.sync.get(run_id)

    async def latest_for_session(self, session_id: str) -> RunRecord | None:
        row = self.sync._execute(
            "SELECT run_id FROM runs WHERE session_id = ? ORDER BY created_at DESC, run_id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        return None if row is None else self.sync.get(row["run_id"])

    async def mark_interrupted(self, run_ids: list[str], *, message: str | None = None) -> list[str]:
        text = ORPHAN_MESSAGE if message is None else message
        return [run_id for run_id in run_ids if self.sync.mark_interrupted([run_id], message=text)]

    async def prune_runs(self, *, now: float | None = None) -> int:
        cutoff = (time.time() if now is None else now) - self.sync.retention
        terminal = ", ".join("?" for _ in TERMINAL_STATES)
        return self.sync._execute(
            f"DELETE FROM runs WHERE updated_at < ? AND status IN ({terminal})",
            (cutoff, *sorted(TERMINAL_STATES)),
        ).rowcount


class SqliteLeases:
    """`LeaseStore` in runs.db, by this host's clock."""

    def __init__(self, store: RunStore) -> None:
        self.sync = store

    async def register_instance(self, instance_id: str, *, ttl: float, host: str, pid: int) -> InstanceLease:
        now = time.time()
        self.sync._execute(
            "INSERT OR REPLACE INTO instances (instance_id, host, pid, started_at, heartbeat_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (instance_id, host, pid, now, now, now + ttl),
        )
        return InstanceLease(instance_id, host, pid, now, now, now + ttl)

    async def heartbeat(self, instance_id: str, *, ttl: float) -> InstanceLease:
        now = time.time()
        changed = self.sync._execute(
            "UPDATE instances SET heartbeat_at = ?, expires_at = ? WHERE instance_id = ?",
            (now, now + ttl, instance_id),
        ).rowcount
        if not changed:
            return await self.register_instance(instance_id, ttl=ttl, host=os.uname().nodename, pid=os.getpid())
        lease = await self._lease(instance_id)
        assert lease is not None
        return lease

    async def release_instance(self, instance_id: str) -> None:
        self.sync._execute("DELETE FROM instances WHERE instance_id = ?", (instance_id,))

    async def list_instances(self) -> list[InstanceLease]:
        rows = self.sync._execute(
            "SELECT instance_id, host, pid, started_at, heartbeat_at, expires_at FROM instances "
            "ORDER BY started_at, instance_id"
        ).fetchall()
        return [InstanceLease(*tuple(row)) for row in rows]

    async def _lease(self, instance_id: str) -> InstanceLease | None:
        row = self.sync._execute(
            "SELECT instance_id, host, pid, started_at, heartbeat_at, expires_at FROM instances "
            "WHERE instance_id = ?",
            (instance_id,),
        ).fetchone()
        return None if row is None else InstanceLease(*tuple(row))

    async def orphaned_runs(self) -> list[RunRecord]:
        terminal = ", ".join("?" for _ in TERMINAL_STATES)
        rows = self.sync._execute(
            f"SELECT run_id FROM runs WHERE status NOT IN ({terminal}) AND owner_instance IS NOT NULL "
            "AND owner_instance NOT IN (SELECT instance_id FROM instances WHERE expires_at >= ?) "
            "ORDER BY created_at, run_id",
            (*sorted(TERMINAL_STATES), time.time()),
        ).fetchall()
        records = [self.sync.get(row["run_id"]) for row in rows]
        return [record for record in records if record is not None]

    async def prune_instances(self, *, expired_for: float) -> int:
        return self.sync._execute(
            "DELETE FROM instances WHERE expires_at < ?", (time.time() - expired_for,)
        ).rowcount


class _SqliteCloser:
    def __init__(self, sessions: SqliteSessionStore, responses: ResponseStore, runs: RunStore) -> None:
        self._stores = (sessions, responses, runs)
        self._closed = False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for store in self._stores:
            store.close()


def open_sqlite_storage(
    home: str | os.PathLike[str],
    *,
    response_store_size: int = 1000,
    retention: float = RETENTION_SECONDS,
) -> Storage:
    """Open (creating 0600 and migrating when needed) the three SQLite files in `home`.

    Raises:
        StoreError: a file cannot be created, is not a database, or is damaged.
    """
    folder = Path(home).expanduser()
    sessions = SqliteSessionStore(folder / STATE_DB)
    sessions.checkpoint_in_background()  # a turn's commits never pay for a checkpoint
    sessions.index_in_background()  # nor for the search index (`fts_batches`)
    try:
        responses = ResponseStore(folder / RESPONSE_DB, max_size=response_store_size)
        try:
            runs = RunStore(folder / RUNS_DB, retention=retention)
        except BaseException:
            responses.close()
            raise
    except BaseException:
        sessions.close()
        raise
    instance_id = new_instance_id()
    return Storage(
        backend="sqlite",
        location=str(folder),
        instance_id=instance_id,
        sessions=SqliteSessions(sessions),
        responses=SqliteResponses(responses),
        receipts=SqliteReceipts(runs),
        runs=SqliteRuns(runs),
        run_events=MemoryRunEventStore(),
        leases=SqliteLeases(runs),
        closer=_SqliteCloser(sessions, responses, runs),
        control=MemoryControlChannel(instance_id),
        repairer=_ProcessRepair(sessions, responses, folder / RUNS_DB),
        caps=caps_of("sqlite"),
    )


class _ProcessRepair:
    """Start-up repair of what dead processes left in the three files (`repair`)."""

    def __init__(self, sessions: SqliteSessionStore, responses: ResponseStore, runs_db: Path) -> None:
        self._sessions = sessions
        self._responses = responses
        self._runs_db = runs_db

    async def repair_after_crash(self) -> None:
        repair_after_crash(self._sessions, self._responses, runs_db=self._runs_db)
