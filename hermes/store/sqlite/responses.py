"""Stored Responses API records (`response_store.db`).

A record is whatever the server stores for one response id — in practice
``{"response": <envelope>, "conversation_history": [...], "instructions": str | None,
"session_id": str}`` — kept as JSON. The store is LRU-bounded: `get` refreshes a record,
`put` evicts the least recently used ones beyond `max_size`. Conversation names map to
the newest response id of that conversation; a mapping disappears with the response it
points at (on delete and on eviction), so a reused name simply starts a new
conversation.

The database is opened by `file.open_sqlite_file` (created 0600 whatever the umask,
WAL) and its schema is `RESPONSE_MIGRATIONS`. ``path=":memory:"`` keeps everything in
memory (tests). `sqlite3` exceptions never leave this module: they become `StoreError`.

Crash safety: each row also keeps its envelope's `status` and the process that wrote it
(`owner.ProcessOwner`), so start-up repair (`hermes.store.sqlite.repair`) can settle the
`in_progress` records of a process that died mid-response (`in_progress()`, `settle()`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.errors import StoreError
from hermes.store.migrations import Migrations, execute_all
from hermes.store.owner import ProcessOwner, current_owner
from hermes.store.sqlite.file import MEMORY, describe_sqlite_error, open_sqlite_file

__all__ = ["RESPONSE_MIGRATIONS", "ResponseStore"]

RESPONSE_MIGRATIONS = Migrations("response_store.db")
"""Every response_store.db migration, in the order it must run."""


@RESPONSE_MIGRATIONS.migration
def m001_responses(db: sqlite3.Connection) -> None:
    # IF NOT EXISTS adopts files written before migrations were recorded (same DDL).
    execute_all(
        db,
        (
            """
            CREATE TABLE IF NOT EXISTS responses (
                response_id TEXT PRIMARY KEY,
                data        TEXT NOT NULL,
                accessed_at INTEGER NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS responses_accessed ON responses(accessed_at)",
            """
            CREATE TABLE IF NOT EXISTS conversations (
                name        TEXT PRIMARY KEY,
                response_id TEXT NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS conversations_response ON conversations(response_id)",
        ),
    )


@RESPONSE_MIGRATIONS.migration
def m002_status_and_owner(db: sqlite3.Connection) -> None:
    # The envelope's status and the writing process, as columns: start-up repair finds
    # the `in_progress` records of dead writers with one indexed query.
    execute_all(
        db,
        (
            "ALTER TABLE responses ADD COLUMN status TEXT",
            "ALTER TABLE responses ADD COLUMN owner_host TEXT",
            "ALTER TABLE responses ADD COLUMN owner_pid INTEGER",
            "ALTER TABLE responses ADD COLUMN owner_started TEXT",
            """
            UPDATE responses SET status = CASE WHEN json_valid(data)
                THEN json_extract(data, '$.response.status') END
            """,
            "CREATE INDEX responses_in_progress ON responses(response_id) WHERE status = 'in_progress'",
        ),
    )


def _envelope_status(record: dict[str, Any]) -> str | None:
    response = record.get("response")
    status = response.get("status") if isinstance(response, dict) else None
    return status if isinstance(status, str) else None


@dataclass(frozen=True, slots=True)
class PendingResponse:
    """A stored response still `in_progress`, with the process that wrote it."""

    response_id: str
    record: dict[str, Any]
    owner: ProcessOwner | None
    """None for records written before owners were recorded."""


class ResponseStore:
    """See the module docstring.

    Args:
        path: the database file (created 0600, with its folder 0700, when missing), or
            ":memory:".
        max_size: how many responses to keep (least recently used ones are evicted).

    Raises:
        StoreError: the file cannot be created, is not a database, or is damaged.
    """

    def __init__(self, path: str | Path = MEMORY, *, max_size: int = 1000) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.max_size = max_size
        opened = open_sqlite_file(path, RESPONSE_MIGRATIONS, what="response store")
        self.path = opened.path
        self._label = opened.label
        self._db = opened.connection
        self.applied_migrations = opened.applied_migrations
        """Migrations this open applied (empty when the schema was already current)."""
        with self._errors():
            row = self._db.execute("SELECT COALESCE(MAX(accessed_at), 0) FROM responses").fetchone()
        self._clock = int(row[0])

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"response store {self._label}: {describe_sqlite_error(exc)}") from exc

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed when the block exits cleanly."""
        with self._errors():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    # ---- records --------------------------------------------------------------------

    def get(self, response_id: str) -> dict[str, Any] | None:
        """The record, refreshed as most recently used; None when unknown (or corrupt)."""
        with self._errors():
            row = self._db.execute(
                "SELECT data FROM responses WHERE response_id = ?", (response_id,)
            ).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except json.JSONDecodeError:
            self.delete(response_id)
            return None
        with self._errors():
            self._db.execute(
                "UPDATE responses SET accessed_at = ? WHERE response_id = ?",
                (self._tick(), response_id),
            )
        return data if isinstance(data, dict) else None

    def put(self, response_id: str, record: dict[str, Any]) -> None:
        """Insert or replace, then evict the least recently used beyond max_size."""
        data = json.dumps(record)
        owner = current_owner()
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO responses(response_id, data, accessed_at, status, "
                "owner_host, owner_pid, owner_started) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (response_id, data, self._tick(), _envelope_status(record),
                 owner.host, owner.pid, owner.started),
            )  # fmt: skip
            (count,) = db.execute("SELECT COUNT(*) FROM responses").fetchone()
            excess = count - self.max_size
            if excess > 0:
                victims = [
                    (victim,)
                    for (victim,) in db.execute(
                        "SELECT response_id FROM responses ORDER BY accessed_at ASC LIMIT ?",
                        (excess,),
                    ).fetchall()
                ]
                db.executemany("DELETE FROM responses WHERE response_id = ?", victims)
                db.executemany("DELETE FROM conversations WHERE response_id = ?", victims)

    def in_progress(self) -> list[PendingResponse]:
        """Every record whose envelope is still `in_progress` (an indexed query)."""
        with self._errors():
            rows = self._db.execute(
                "SELECT response_id, data, owner_host, owner_pid, owner_started FROM responses "
                "WHERE status = 'in_progress' ORDER BY accessed_at"
            ).fetchall()
        pending: list[PendingResponse] = []
        for response_id, data, host, pid, started in rows:
            try:
                record = json.loads(data)
            except json.JSONDecodeError:
                continue
            if not isinstance(record, dict):
                continue
            owner = None if host is None or pid is None else ProcessOwner(host, pid, started or "")
            pending.append(PendingResponse(response_id, record, owner))
        return pending

    def settle(self, response_id: str, record: dict[str, Any]) -> bool:
        """Replace a record that is still `in_progress` (its recency unchanged).

        Returns False, changing nothing, when the record is gone or no longer in progress
        (its writer finished it meanwhile).
        """
        with self._write() as db:
            cursor = db.execute(
                "UPDATE responses SET data = ?, status = ? "
                "WHERE response_id = ? AND status = 'in_progress'",
                (json.dumps(record), _envelope_status(record), response_id),
            )
        return cursor.rowcount > 0

    def delete(self, response_id: str) -> bool:
        """Remove a record and every conversation name pointing at it."""
        with self._write() as db:
            cursor = db.execute("DELETE FROM responses WHERE response_id = ?", (response_id,))
            db.execute("DELETE FROM conversations WHERE response_id = ?", (response_id,))
        return cursor.rowcount > 0

    def __len__(self) -> int:
        with self._errors():
            (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    # ---- conversation names -----------------------------------------------------------

    def get_conversation(self, name: str) -> str | None:
        with self._errors():
            row = self._db.execute(
                "SELECT response_id FROM conversations WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else str(row[0])

    def set_conversation(self, name: str, response_id: str) -> None:
        with self._errors():
            self._db.execute(
                "INSERT OR REPLACE INTO conversations(name, response_id) VALUES (?, ?)",
                (name, response_id),
            )

    def close(self) -> None:
        self._db.close()

    # ---- output items -----------------------------------------------------------------

    def find_item(self, item_id: str) -> dict[str, Any] | None:
        """The output item with this id in any stored response (for ``item_reference``)."""
        with self._errors():
            row = self._db.execute(
                "SELECT item.value FROM responses, json_each("
                " CASE WHEN json_valid(responses.data) THEN responses.data ELSE '{}' END, '$.response.output') AS item"
                " WHERE CASE WHEN item.type = 'object' THEN json_extract(item.value, '$.id') END = ? LIMIT 1",
                (item_id,),
            ).fetchone()
        if row is None:
            return None
        try:
            item = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return item if isinstance(item, dict) else None
