"""`Runs`: durable run rows (`AsyncRunStore`), written once for both backends.

Invariants:

- A run row outlives the process that ran it: `GET /v1/runs/{id}` answers after a
  restart. Terminal rows are pruned `retention` seconds after their last update;
  unsettled rows never are.
- At most one unsettled run per session: the partial unique index
  `runs_one_unsettled_per_session` refuses a second one, whichever process or instance
  writes it, and `put` raises `SessionBusy`.
- Where runs are settled by other instances (`Dialect.settled_runs_final`, PostgreSQL) a
  settled row stays settled: a late write of its owner cannot bring it back.
- A row written by this process records its host and start identity beside its pid
  (`owner.ProcessOwner`), so start-up repair tells a dead owner from a reused pid.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from hermes.errors import SessionBusy, StoreError
from hermes.store.owner import current_owner
from hermes.store.records import ORPHAN_MESSAGE, RETENTION_SECONDS, TERMINAL_STATES, RunRecord
from hermes.store.sql import Dialect, Executor, Row

__all__ = ["RUN_COLUMNS", "TERMINAL_SQL", "UNSETTLED_INDEX", "Runs", "UnsettledRun", "run_record"]

RUN_COLUMNS = (
    "run_id, status, created_at, updated_at, session_id, model, last_event, output, usage, "
    "error, error_code, owner_pid, owner_instance"
)
"""A run's columns in `run_record` order."""
TERMINAL_SQL = ", ".join(f"'{state}'" for state in sorted(TERMINAL_STATES))
"""The terminal states as an SQL list (`status IN (…)`)."""
UNSETTLED_INDEX = "runs_one_unsettled_per_session"

_UPSERT = (
    f"INSERT INTO hermes.runs ({RUN_COLUMNS}, owner_host, owner_started) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, "
    "created_at = excluded.created_at, updated_at = excluded.updated_at, "
    "session_id = excluded.session_id, model = excluded.model, "
    "last_event = excluded.last_event, output = excluded.output, usage = excluded.usage, "
    "error = excluded.error, error_code = excluded.error_code, owner_pid = excluded.owner_pid, "
    "owner_host = excluded.owner_host, owner_started = excluded.owner_started, "
    "owner_instance = excluded.owner_instance"
)
_SETTLED_STAYS = f" WHERE hermes.runs.status NOT IN ({TERMINAL_SQL}) OR hermes.runs.status = excluded.status"


def run_record(row: Row) -> RunRecord:
    """The `RunRecord` of a row selecting `RUN_COLUMNS`."""
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


@dataclass(frozen=True, slots=True)
class UnsettledRun:
    """An unsettled run's id and the process that owns it (start-up repair's input)."""

    run_id: str
    owner_pid: int | None
    owner_host: str | None
    """None for rows written before owner identities were recorded."""
    owner_started: str | None


class Runs:
    """See the module docstring."""

    def __init__(self, db: Executor, dialect: Dialect, *, retention: float = RETENTION_SECONDS) -> None:
        self._db = db
        self._dialect = dialect
        self.retention = retention
        self._upsert = _UPSERT + (_SETTLED_STAYS if dialect.settled_runs_final else "")

    async def put(self, record: RunRecord) -> None:
        """Insert or replace the row of `record.run_id` (`SessionBusy`: its session has
        another unsettled run)."""
        me = current_owner()
        mine = record.owner_pid == me.pid
        params: tuple[Any, ...] = (
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
            me.host if mine else None,
            me.started if mine else None,
        )
        try:
            await self._db.execute(self._upsert, params)
        except StoreError as exc:
            if record.session_id is not None and self._dialect.unique_violation(exc, UNSETTLED_INDEX):
                raise SessionBusy(record.session_id) from None
            raise

    async def get(self, run_id: str) -> RunRecord | None:
        row = await self._db.fetch_one(f"SELECT {RUN_COLUMNS} FROM hermes.runs WHERE run_id = ?", (run_id,))
        return None if row is None else run_record(row)

    async def latest_for_session(self, session_id: str) -> RunRecord | None:
        row = await self._db.fetch_one(
            f"SELECT {RUN_COLUMNS} FROM hermes.runs WHERE session_id = ? ORDER BY created_at DESC, run_id DESC LIMIT 1",
            (session_id,),
        )
        return None if row is None else run_record(row)

    async def mark_interrupted(self, run_ids: list[str], *, message: str | None = None) -> list[str]:
        """Settle the given unsettled runs `interrupted`; the ids that changed, in order."""
        now = time.time()
        text = ORPHAN_MESSAGE if message is None else message
        changed: list[str] = []
        for run_id in run_ids:
            count = await self._db.execute(
                "UPDATE hermes.runs SET status = 'interrupted', updated_at = ?, error = ?, "
                "error_code = 'interrupted', last_event = 'run.interrupted' "
                f"WHERE run_id = ? AND status NOT IN ({TERMINAL_SQL})",
                (now, text, run_id),
            )
            if count:
                changed.append(run_id)
        return changed

    async def unsettled(self) -> list[UnsettledRun]:
        """Every unsettled run with its owner process (for start-up repair)."""
        rows = await self._db.fetch_all(
            "SELECT run_id, owner_pid, owner_host, owner_started FROM hermes.runs "
            f"WHERE status NOT IN ({TERMINAL_SQL}) ORDER BY created_at, run_id"
        )
        return [UnsettledRun(*row) for row in rows]

    async def prune_runs(self, *, now: float | None = None) -> int:
        """Drop the settled rows last updated more than `retention` seconds ago."""
        cutoff = (time.time() if now is None else now) - self.retention
        return await self._db.execute(
            f"DELETE FROM hermes.runs WHERE updated_at < ? AND status IN ({TERMINAL_SQL})", (cutoff,)
        )
