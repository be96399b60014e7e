"""Runs, idempotency receipts and instance leases on PostgreSQL.

Same semantics as `hermes.store.sqlite.runs.RunStore` for runs and receipts, safe across
instances:

- `claim_receipt` is one `INSERT … ON CONFLICT DO UPDATE … WHERE <expired>`: of two
  concurrent claims for a live key exactly one inserts, the other reads the winner;
  `store_answer` is one such statement too (`WHERE` ours, or no live claim of another).
- The partial unique index `runs_one_unsettled_per_session` refuses a second unsettled
  run of a session, whichever instance writes it: `put` raises `SessionBusy`.
- Lease times (`heartbeat_at`, `expires_at`) and the expiry test use the database's
  clock, so hosts with skewed clocks agree on which leases have expired.
"""

from __future__ import annotations

import json
import time
from typing import Any

from hermes.errors import SessionBusy
from hermes.store.postgres.connect import Database
from hermes.store.records import ORPHAN_MESSAGE, RETENTION_SECONDS, TERMINAL_STATES, InstanceLease, Receipt, RunRecord

__all__ = ["PgLeaseStore", "PgReceiptStore", "PgRunStore"]

_RUN_COLUMNS = (
    "run_id, status, created_at, updated_at, session_id, model, last_event, output, usage, "
    "error, error_code, owner_pid, owner_instance"
)
_RECEIPT_COLUMNS = "scope, key, fingerprint, run_id, created_at, updated_at, answer, expires_at"
_LIVE = "((expires_at IS NULL AND updated_at >= %s) OR (expires_at IS NOT NULL AND expires_at >= %s))"
"""SQL: the receipt is live (parameters: now - retention, now)."""
_UNSETTLED_INDEX = "runs_one_unsettled_per_session"
_LEASE_COLUMNS = "instance_id, host, pid, started_at, heartbeat_at, expires_at"
_DB_NOW = "extract(epoch from clock_timestamp())::double precision"
_TERMINAL = sorted(TERMINAL_STATES)


def _run(row: Any) -> RunRecord:
    (run_id, status, created_at, updated_at, session_id, model, last_event, output, usage,
     error, error_code, owner_pid, owner_instance) = row  # fmt: skip
    return RunRecord(
        run_id=run_id,
        status=status,
        created_at=created_at,
        updated_at=updated_at,
        session_id=session_id,
        model=model,
        last_event=last_event,
        output=output,
        usage=json.loads(usage) if usage else None,
        error=error,
        error_code=error_code,
        owner_pid=owner_pid,
        owner_instance=owner_instance,
    )


def _receipt(row: Any) -> Receipt:
    scope, key, fingerprint, run_id, created_at, updated_at, answer, expires_at = row
    return Receipt(
        scope, key, fingerprint, run_id, created_at, updated_at,
        answer=json.loads(answer) if answer is not None else None, expires_at=expires_at,
    )  # fmt: skip


def _lease(row: Any) -> InstanceLease:
    return InstanceLease(*row)


class PgRunStore:
    def __init__(self, db: Database, *, retention: float = RETENTION_SECONDS) -> None:
        self._db = db
        self.retention = retention

    async def put(self, record: RunRecord) -> None:
        import psycopg

        async with self._db.connection() as conn:
            try:
                await self._put(conn, record)
            except psycopg.errors.UniqueViolation as exc:
                if record.session_id is not None and exc.diag.constraint_name == _UNSETTLED_INDEX:
                    raise SessionBusy(record.session_id) from None
                raise

    async def _put(self, conn: Any, record: RunRecord) -> None:
        await conn.execute(
            f"INSERT INTO hermes.runs ({_RUN_COLUMNS}) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (run_id) DO UPDATE SET status = EXCLUDED.status, "
            "created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, "
            "session_id = EXCLUDED.session_id, model = EXCLUDED.model, "
            "last_event = EXCLUDED.last_event, output = EXCLUDED.output, usage = EXCLUDED.usage, "
            "error = EXCLUDED.error, error_code = EXCLUDED.error_code, "
            "owner_pid = EXCLUDED.owner_pid, owner_instance = EXCLUDED.owner_instance "
            # A settled run stays settled: a late write of its owner (whose lease lapsed
            # while another instance settled it) cannot bring it back or change how it ended.
            "WHERE NOT (hermes.runs.status = ANY(%s)) OR hermes.runs.status = EXCLUDED.status",
            (
                record.run_id,
                record.status,
                record.created_at,
                record.updated_at,
                record.session_id,
                record.model,
                record.last_event,
                record.output,
                json.dumps(record.usage) if record.usage is not None else None,
                record.error,
                record.error_code,
                record.owner_pid,
                record.owner_instance,
                _TERMINAL,
            ),
        )

    async def get(self, run_id: str) -> RunRecord | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(f"SELECT {_RUN_COLUMNS} FROM hermes.runs WHERE run_id = %s", (run_id,))
            row = await cursor.fetchone()
        return None if row is None else _run(row)

    async def latest_for_session(self, session_id: str) -> RunRecord | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM hermes.runs WHERE session_id = %s "
                "ORDER BY created_at DESC, run_id DESC LIMIT 1",
                (session_id,),
            )
            row = await cursor.fetchone()
        return None if row is None else _run(row)

    async def mark_interrupted(self, run_ids: list[str], *, message: str | None = None) -> list[str]:
        if not run_ids:
            return []
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "UPDATE hermes.runs SET status = 'interrupted', updated_at = %s, error = %s, "
                "error_code = 'interrupted', last_event = 'run.interrupted' "
                "WHERE run_id = ANY(%s) AND status <> ALL(%s) RETURNING run_id",
                (time.time(), ORPHAN_MESSAGE if message is None else message, list(run_ids), _TERMINAL),
            )
            changed = {str(run_id) for (run_id,) in await cursor.fetchall()}
        return [run_id for run_id in run_ids if run_id in changed]

    async def prune_runs(self, *, now: float | None = None) -> int:
        cutoff = (time.time() if now is None else now) - self.retention
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM hermes.runs WHERE updated_at < %s AND status = ANY(%s)", (cutoff, _TERMINAL)
            )
            return int(cursor.rowcount)


class PgReceiptStore:
    def __init__(self, db: Database, *, retention: float = RETENTION_SECONDS) -> None:
        self._db = db
        self.retention = retention

    async def find_receipt(self, scope: str, key: str, *, now: float | None = None) -> Receipt | None:
        now = time.time() if now is None else now
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_RECEIPT_COLUMNS} FROM hermes.receipts WHERE scope = %s AND key = %s AND {_LIVE}",
                (scope, key, now - self.retention, now),
            )
            row = await cursor.fetchone()
        return None if row is None else _receipt(row)

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
        now = time.time() if now is None else now
        cutoff = now - self.retention
        async with self._db.connection() as conn:
            for _ in range(8):
                cursor = await conn.execute(
                    f"INSERT INTO hermes.receipts ({_RECEIPT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, NULL, %s) "
                    "ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                    "run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, "
                    "updated_at = EXCLUDED.updated_at, answer = NULL, expires_at = EXCLUDED.expires_at "
                    "WHERE NOT ((hermes.receipts.expires_at IS NULL AND hermes.receipts.updated_at >= %s) "
                    "OR (hermes.receipts.expires_at IS NOT NULL AND hermes.receipts.expires_at >= %s)) "
                    "RETURNING run_id",
                    (scope, key, fingerprint, run_id, now, now, expires_at, cutoff, now),
                )
                if await cursor.fetchone() is not None:
                    return None
                cursor = await conn.execute(
                    f"SELECT {_RECEIPT_COLUMNS} FROM hermes.receipts WHERE scope = %s AND key = %s",
                    (scope, key),
                )
                row = await cursor.fetchone()
                if row is not None:
                    return _receipt(row)
                # The winner's row was pruned in between: claim again.
        return await self.find_receipt(scope, key, now=now)

    async def hold_receipt(self, scope: str, key: str, run_id: str, *, expires_at: float) -> bool:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "UPDATE hermes.receipts SET expires_at = %s WHERE scope = %s AND key = %s AND run_id = %s "
                "AND answer IS NULL AND expires_at IS NOT NULL",
                (expires_at, scope, key, run_id),
            )
            return bool(cursor.rowcount)

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
        now = time.time() if now is None else now
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"INSERT INTO hermes.receipts ({_RECEIPT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                "run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, "
                "updated_at = EXCLUDED.updated_at, answer = EXCLUDED.answer, expires_at = EXCLUDED.expires_at "
                "WHERE hermes.receipts.run_id = EXCLUDED.run_id OR NOT (hermes.receipts.answer IS NULL "
                "AND hermes.receipts.expires_at IS NOT NULL AND hermes.receipts.expires_at >= %s) "
                "RETURNING run_id",
                (scope, key, fingerprint, run_id, now, now, json.dumps(answer), expires_at, now),
            )
            return await cursor.fetchone() is not None

    async def release_receipt(self, scope: str, key: str, run_id: str) -> None:
        async with self._db.connection() as conn:
            await conn.execute(
                "DELETE FROM hermes.receipts WHERE scope = %s AND key = %s AND run_id = %s AND answer IS NULL",
                (scope, key, run_id),
            )

    async def touch_receipts(self, run_id: str, *, now: float | None = None) -> None:
        async with self._db.connection() as conn:
            await conn.execute(
                "UPDATE hermes.receipts SET updated_at = %s WHERE run_id = %s",
                (time.time() if now is None else now, run_id),
            )

    async def prune_receipts(self, *, now: float | None = None) -> int:
        now = time.time() if now is None else now
        cutoff = now - self.retention
        async with self._db.connection() as conn:
            cursor = await conn.execute(f"DELETE FROM hermes.receipts WHERE NOT {_LIVE}", (cutoff, now))
            return int(cursor.rowcount)


class PgLeaseStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def register_instance(self, instance_id: str, *, ttl: float, host: str, pid: int) -> InstanceLease:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"INSERT INTO hermes.instances ({_LEASE_COLUMNS}) "
                f"VALUES (%s, %s, %s, {_DB_NOW}, {_DB_NOW}, {_DB_NOW} + %s) "
                "ON CONFLICT (instance_id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, "
                "started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at, "
                f"expires_at = EXCLUDED.expires_at RETURNING {_LEASE_COLUMNS}",
                (instance_id, host, pid, ttl),
            )
            row = await cursor.fetchone()
        assert row is not None
        return _lease(row)

    async def heartbeat(self, instance_id: str, *, ttl: float) -> InstanceLease:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"UPDATE hermes.instances SET heartbeat_at = {_DB_NOW}, expires_at = {_DB_NOW} + %s "
                f"WHERE instance_id = %s RETURNING {_LEASE_COLUMNS}",
                (ttl, instance_id),
            )
            row = await cursor.fetchone()
        if row is None:
            import os

            return await self.register_instance(instance_id, ttl=ttl, host=os.uname().nodename, pid=os.getpid())
        return _lease(row)

    async def release_instance(self, instance_id: str) -> None:
        async with self._db.connection() as conn:
            await conn.execute("DELETE FROM hermes.instances WHERE instance_id = %s", (instance_id,))

    async def list_instances(self) -> list[InstanceLease]:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_LEASE_COLUMNS} FROM hermes.instances ORDER BY started_at, instance_id"
            )
            rows = await cursor.fetchall()
        return [_lease(row) for row in rows]

    async def orphaned_runs(self) -> list[RunRecord]:
        columns = ", ".join(f"r.{name.strip()}" for name in _RUN_COLUMNS.split(","))
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {columns} FROM hermes.runs AS r "
                "WHERE r.status <> ALL(%s) AND r.owner_instance IS NOT NULL AND NOT EXISTS ("
                "SELECT 1 FROM hermes.instances AS i WHERE i.instance_id = r.owner_instance "
                f"AND i.expires_at >= {_DB_NOW}) ORDER BY r.created_at, r.run_id",
                (_TERMINAL,),
            )
            rows = await cursor.fetchall()
        return [_run(row) for row in rows]

    async def prune_instances(self, *, expired_for: float) -> int:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"DELETE FROM hermes.instances WHERE expires_at < {_DB_NOW} - %s", (expired_for,)
            )
            return int(cursor.rowcount)
