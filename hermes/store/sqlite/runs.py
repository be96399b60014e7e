"""Durable run status and idempotency receipts for `hermes serve`.

The server's run registry keeps live runs and their event logs in memory;
this module keeps what must outlive them: the last known status of every run, so
`GET /v1/runs/{id}` still answers after the events are gone or the server restarted,
and the `Idempotency-Key` receipts of `POST /v1/runs`, so a client that retries after a
lost response gets its original run back instead of a second one.

Storage is its own SQLite file (`$HERMES_HOME/runs.db`), opened by
`file.open_sqlite_file` (created 0600, WAL) with its own schema history,
`RUN_MIGRATIONS`, so it never touches the session store's. Schema:

    runs      one row per run: status, session, output, usage, error, owner (pid, host,
              start identity: see `owner.ProcessOwner`); at most one unsettled run per
              session (partial unique index `runs_one_unsettled_per_session`)
    receipts  one row per (scope, idempotency key): request fingerprint -> run id, or
              (the OpenAI endpoints) -> a claim token and, once computed, the JSON answer

Invariants:
- A run row whose status is not terminal and whose owner process is gone is stale:
  `recover_orphans()` marks such rows `interrupted` at start-up, and the owner marks
  its own in-flight rows `interrupted` when it shuts down.
- Receipts are claimed inside `BEGIN IMMEDIATE`, so two processes sharing the file
  cannot both start a run for one key; the loser sees the winner's receipt.
- A receipt with `expires_at` (an answer claim or a stored answer) is live until then;
  one without is live `retention` seconds (24 h) after its last update. Terminal run
  rows are pruned `retention` seconds after their last update; non-terminal rows are
  never pruned.
- Writing a second unsettled run for a session raises `SessionBusy` (the index above),
  so two processes cannot both start a turn of one session.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hermes.errors import SessionBusy, StoreError
from hermes.store.migrations import Migrations, execute_all
from hermes.store.owner import ProcessOwner, current_owner, owner_gone
from hermes.store.records import ORPHAN_MESSAGE, RETENTION_SECONDS, TERMINAL_STATES, Receipt, RunRecord
from hermes.store.sqlite.file import describe_sqlite_error, open_sqlite_file

T = TypeVar("T")

_LIVE = "((expires_at IS NULL AND updated_at >= ?) OR (expires_at IS NOT NULL AND expires_at >= ?))"
"""SQL: the receipt is live (parameters: now - retention, now)."""

RUN_MIGRATIONS = Migrations("runs.db")
"""Every runs.db migration, in the order it must run."""


@RUN_MIGRATIONS.migration
def m001_runs_and_receipts(db: sqlite3.Connection) -> None:
    # IF NOT EXISTS adopts files written before migrations were recorded (same DDL).
    execute_all(
        db,
        (
            """
            CREATE TABLE IF NOT EXISTS runs (
                run_id TEXT PRIMARY KEY,
                status TEXT NOT NULL,
                session_id TEXT,
                model TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                last_event TEXT,
                output TEXT,
                usage TEXT,
                error TEXT,
                error_code TEXT,
                owner_pid INTEGER
            )
            """,
            "CREATE INDEX IF NOT EXISTS runs_status ON runs(status)",
            "CREATE INDEX IF NOT EXISTS runs_updated_at ON runs(updated_at)",
            """
            CREATE TABLE IF NOT EXISTS receipts (
                scope TEXT NOT NULL,
                key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                run_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (scope, key)
            )
            """,
            "CREATE INDEX IF NOT EXISTS receipts_updated_at ON receipts(updated_at)",
        ),
    )


@RUN_MIGRATIONS.migration
def m002_owner_identity(db: sqlite3.Connection) -> None:
    # owner_pid alone cannot tell a dead owner from a new process that reused its pid.
    execute_all(
        db,
        (
            "ALTER TABLE runs ADD COLUMN owner_host TEXT",
            "ALTER TABLE runs ADD COLUMN owner_started TEXT",
        ),
    )


@RUN_MIGRATIONS.migration
def m003_run_owner_instances(db: sqlite3.Connection) -> None:
    # Ownership by lease (hermes.store.api.LeaseStore): a run names the instance that
    # owns it; an instance whose lease has expired no longer owns anything.
    execute_all(
        db,
        (
            "ALTER TABLE runs ADD COLUMN owner_instance TEXT",
            "CREATE INDEX runs_owner_instance ON runs(owner_instance)",
            """
            CREATE TABLE instances (
                instance_id TEXT PRIMARY KEY,
                host TEXT NOT NULL,
                pid INTEGER NOT NULL,
                started_at REAL NOT NULL,
                heartbeat_at REAL NOT NULL,
                expires_at REAL NOT NULL
            )
            """,
        ),
    )


@RUN_MIGRATIONS.migration
def m004_receipt_answers(db: sqlite3.Connection) -> None:
    # The OpenAI endpoints' Idempotency-Key receipts hold their finished JSON answer, and
    # live until `expires_at` (a claim still computing lapses unless refreshed).
    execute_all(
        db,
        (
            "ALTER TABLE receipts ADD COLUMN answer TEXT",
            "ALTER TABLE receipts ADD COLUMN expires_at REAL",
            "CREATE INDEX receipts_run ON receipts(run_id)",
        ),
    )


@RUN_MIGRATIONS.migration
def m005_one_unsettled_run_per_session(db: sqlite3.Connection) -> None:
    # Older files may hold several unsettled runs of one session (a crashed process's):
    # all but the newest are settled `interrupted` before the index can hold.
    execute_all(
        db,
        (
            f"""
            UPDATE runs SET status = 'interrupted', error_code = 'interrupted',
                error = '{ORPHAN_MESSAGE}', last_event = 'run.interrupted'
            WHERE session_id IS NOT NULL AND status NOT IN ({_terminal_sql()}) AND EXISTS (
                SELECT 1 FROM runs AS newer
                WHERE newer.session_id = runs.session_id AND newer.status NOT IN ({_terminal_sql()})
                    AND (newer.created_at > runs.created_at
                         OR (newer.created_at = runs.created_at AND newer.run_id > runs.run_id))
            )
            """,
            "CREATE UNIQUE INDEX runs_one_unsettled_per_session ON runs(session_id) "
            f"WHERE status NOT IN ({_terminal_sql()})",
        ),
    )


class RunStore:
    """SQLite-backed run rows and receipts. Every call is short and synchronous."""

    def __init__(self, path: str | Path, *, retention: float = RETENTION_SECONDS) -> None:
        opened = open_sqlite_file(path, RUN_MIGRATIONS, what="run store")
        self.path = opened.label
        self.retention = retention
        self.applied_migrations = opened.applied_migrations
        """Migrations this open applied (empty when the schema was already current)."""
        opened.connection.row_factory = sqlite3.Row
        self._db: sqlite3.Connection | None = opened.connection

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("the run store is closed")
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ---- runs ---------------------------------------------------------------------

    def put(self, record: RunRecord) -> None:
        """Insert or replace the row of `record.run_id`.

        When the owner is this process, its host and start identity are recorded too.
        """
        me = current_owner()
        mine = record.owner_pid == me.pid
        try:
            self.db.execute(
                """
                INSERT INTO runs (run_id, status, session_id, model, created_at,
                    updated_at, last_event, output, usage, error, error_code, owner_pid,
                    owner_host, owner_started, owner_instance)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (run_id) DO UPDATE SET status = excluded.status,
                    session_id = excluded.session_id, model = excluded.model,
                    created_at = excluded.created_at, updated_at = excluded.updated_at,
                    last_event = excluded.last_event, output = excluded.output,
                    usage = excluded.usage, error = excluded.error,
                    error_code = excluded.error_code, owner_pid = excluded.owner_pid,
                    owner_host = excluded.owner_host, owner_started = excluded.owner_started,
                    owner_instance = excluded.owner_instance
                """,
                (
                    record.run_id,
                    record.status,
                    record.session_id,
                    record.model,
                    record.created_at,
                    record.updated_at,
                    record.last_event,
                    record.output,
                    json.dumps(record.usage) if record.usage is not None else None,
                    record.error,
                    record.error_code,
                    record.owner_pid,
                    me.host if mine else None,
                    me.started if mine else None,
                    record.owner_instance,
                ),
            )
        except sqlite3.IntegrityError as exc:
            if record.session_id is not None and "runs.session_id" in str(exc):
                raise SessionBusy(record.session_id) from None
            raise StoreError(f"run store {self.path}: {describe_sqlite_error(exc)}") from None
        except sqlite3.Error as exc:
            raise StoreError(f"run store {self.path}: {describe_sqlite_error(exc)}") from None

    def get(self, run_id: str) -> RunRecord | None:
        row = self._execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return _record(row) if row is not None else None

    def mark_interrupted(self, run_ids: list[str], *, message: str = ORPHAN_MESSAGE) -> int:
        """Settle the given non-terminal runs as `interrupted`. Returns how many changed."""
        if not run_ids:
            return 0
        now = time.time()
        changed = 0
        for run_id in run_ids:
            cursor = self._execute(
                f"""
                UPDATE runs SET status = 'interrupted', updated_at = ?, error = ?,
                    error_code = 'interrupted', last_event = 'run.interrupted'
                WHERE run_id = ? AND status NOT IN ({_terminal_sql()})
                """,
                (now, message, run_id),
            )
            changed += cursor.rowcount
        return changed

    def recover_orphans(self, *, alive: frozenset[int] | None = None) -> int:
        """Mark `interrupted` every unsettled run whose owner process no longer runs.

        Args:
            alive: pids known to be alive (default: `owner.owner_gone` decides, which also
                sees a pid reused by another process); this process's own pid counts
                as alive unless its recorded start identity is another process's.
        """
        rows = self._execute(
            "SELECT run_id, owner_pid, owner_host, owner_started FROM runs "
            f"WHERE status NOT IN ({_terminal_sql()})"
        ).fetchall()
        me = current_owner()
        orphans = []
        for row in rows:
            pid = row["owner_pid"]
            started = row["owner_started"]
            if pid == me.pid and (started is None or started == me.started):
                continue
            if alive is not None:
                is_alive = pid in alive
            elif pid is None:
                is_alive = False
            elif row["owner_host"] is None:  # written before identities were recorded
                is_alive = _pid_alive(pid)
            else:
                is_alive = not owner_gone(ProcessOwner(row["owner_host"], pid, started or ""))
            if not is_alive:
                orphans.append(row["run_id"])
        return self.mark_interrupted(orphans)

    # ---- receipts -----------------------------------------------------------------

    def find_receipt(self, scope: str, key: str, *, now: float | None = None) -> Receipt | None:
        """The live receipt for (scope, key), or None (expired receipts do not count)."""
        now = time.time() if now is None else now
        row = self._execute(
            f"SELECT * FROM receipts WHERE scope = ? AND key = ? AND {_LIVE}",
            (scope, key, now - self.retention, now),
        ).fetchone()
        return _receipt(row) if row is not None else None

    def claim_receipt(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        run_id: str,
        *,
        now: float | None = None,
        expires_at: float | None = None,
    ) -> Receipt | None:
        """Record that (scope, key) starts `run_id` (with `expires_at`: a claim computing
        an answer, lapsing then unless held longer or answered).

        Returns None when the claim succeeded, or the live receipt that got there first.
        An expired receipt for the same key is replaced.
        """
        now = time.time() if now is None else now

        def claim(db: sqlite3.Connection) -> Receipt | None:
            row = db.execute(
                f"SELECT * FROM receipts WHERE scope = ? AND key = ? AND {_LIVE}",
                (scope, key, now - self.retention, now),
            ).fetchone()
            if row is not None:
                return _receipt(row)
            db.execute(
                """
                INSERT OR REPLACE INTO receipts
                    (scope, key, fingerprint, run_id, created_at, updated_at, answer, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, NULL, ?)
                """,
                (scope, key, fingerprint, run_id, now, now, expires_at),
            )
            return None

        return self._immediate(claim)

    def hold_receipt(self, scope: str, key: str, run_id: str, *, expires_at: float) -> bool:
        """Extend the claim `run_id` holds on (scope, key); False when it holds none."""
        return bool(
            self._execute(
                "UPDATE receipts SET expires_at = ? "
                "WHERE scope = ? AND key = ? AND run_id = ? AND answer IS NULL AND expires_at IS NOT NULL",
                (expires_at, scope, key, run_id),
            ).rowcount
        )

    def store_answer(
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
        """Store the answer of (scope, key) computed by `run_id`: settles its claim, or
        replaces the key's receipt unless another claim is computing. True when stored."""
        now = time.time() if now is None else now

        def store(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT * FROM receipts WHERE scope = ? AND key = ?", (scope, key)).fetchone()
            if row is not None and row["run_id"] != run_id:
                other = _receipt(row)
                if other.pending and other.expires_at is not None and other.expires_at >= now:
                    return False
            db.execute(
                """
                INSERT OR REPLACE INTO receipts
                    (scope, key, fingerprint, run_id, created_at, updated_at, answer, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (scope, key, fingerprint, run_id, now, now, json.dumps(answer), expires_at),
            )
            return True

        return self._immediate(store)

    def release_receipt(self, scope: str, key: str, run_id: str) -> None:
        """Drop the claim `run_id` holds on (scope, key) (its computation failed)."""
        self._execute(
            "DELETE FROM receipts WHERE scope = ? AND key = ? AND run_id = ? AND answer IS NULL",
            (scope, key, run_id),
        )

    def touch_receipts(self, run_id: str, *, now: float | None = None) -> None:
        """Restart the retention clock of the receipts of `run_id` (it just settled)."""
        now = time.time() if now is None else now
        self._execute("UPDATE receipts SET updated_at = ? WHERE run_id = ?", (now, run_id))

    # ---- housekeeping --------------------------------------------------------------

    def prune(self, *, now: float | None = None) -> int:
        """Drop expired receipts and settled run rows. Returns rows removed."""
        now = time.time() if now is None else now
        cutoff = now - self.retention
        removed = self.prune_receipts(now=now)
        removed += self._execute(
            f"DELETE FROM runs WHERE updated_at < ? AND status IN ({_terminal_sql()})", (cutoff,)
        ).rowcount
        return removed

    def prune_receipts(self, *, now: float | None = None) -> int:
        """Drop the receipts that are no longer live. Returns rows removed."""
        now = time.time() if now is None else now
        return self._execute(f"DELETE FROM receipts WHERE NOT ({_LIVE})", (now - self.retention, now)).rowcount

    def _immediate(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(db)` inside `BEGIN IMMEDIATE` (committed unless it raises)."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
                db.execute("COMMIT")
                return result
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"run store {self.path}: {describe_sqlite_error(exc)}") from None

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"run store {self.path}: {describe_sqlite_error(exc)}") from None


def open_run_store(path: str | Path) -> RunStore:
    """Open (creating if needed, mode 0600) the run store at `path`."""
    return RunStore(path)


# ---- helpers -------------------------------------------------------------------------


def _terminal_sql() -> str:
    return ", ".join(f"'{state}'" for state in sorted(TERMINAL_STATES))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _record(row: sqlite3.Row) -> RunRecord:
    usage = json.loads(row["usage"]) if row["usage"] else None
    return RunRecord(
        run_id=row["run_id"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        session_id=row["session_id"],
        model=row["model"],
        last_event=row["last_event"],
        output=row["output"],
        usage=usage,
        error=row["error"],
        error_code=row["error_code"],
        owner_pid=row["owner_pid"],
        owner_instance=row["owner_instance"],
    )


def _receipt(row: sqlite3.Row) -> Receipt:
    return Receipt(
        scope=row["scope"],
        key=row["key"],
        fingerprint=row["fingerprint"],
        run_id=row["run_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        answer=json.loads(row["answer"]) if row["answer"] is not None else None,
        expires_at=row["expires_at"],
    )
