"""Stored Responses API records (`response_store.db`).

A record is whatever the server stores for one response id — in practice
``{"response": <envelope>, "conversation_history": [...], "instructions": str | None,
"session_id": str}`` — kept as JSON. The store is LRU-bounded: `get` refreshes a record,
`put` evicts the least recently used ones beyond `max_size`. Conversation names map to
the newest response id of that conversation; a mapping disappears with the response it
points at (on delete and on eviction), so a reused name simply starts a new
conversation.

The database file (and its WAL/SHM side files) is created owner-only (0600) whatever
the umask. ``path=":memory:"`` keeps everything in memory (tests).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from hermes.errors import StoreError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    response_id TEXT PRIMARY KEY,
    data        TEXT NOT NULL,
    accessed_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_accessed ON responses(accessed_at);
CREATE TABLE IF NOT EXISTS conversations (
    name        TEXT PRIMARY KEY,
    response_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_response ON conversations(response_id);
"""


def _create_owner_only(path: Path) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


class ResponseStore:
    """See the module docstring."""

    def __init__(self, path: str | Path = ":memory:", *, max_size: int = 1000) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.max_size = max_size
        self.path = None if str(path) == ":memory:" else Path(path)
        try:
            if self.path is not None:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                _create_owner_only(self.path)
            self._db = sqlite3.connect(str(path), isolation_level=None)
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            if self.path is not None:
                self._secure_sidecars()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open response store {path}: {exc}") from exc
        row = self._db.execute("SELECT COALESCE(MAX(accessed_at), 0) FROM responses").fetchone()
        self._clock = int(row[0])

    def _secure_sidecars(self) -> None:
        assert self.path is not None
        for suffix in ("-wal", "-shm"):
            sidecar = self.path.with_name(self.path.name + suffix)
            if sidecar.exists():
                os.chmod(sidecar, 0o600)

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    # ---- records --------------------------------------------------------------------

    def get(self, response_id: str) -> dict[str, Any] | None:
        """The record, refreshed as most recently used; None when unknown (or corrupt)."""
        row = self._db.execute("SELECT data FROM responses WHERE response_id = ?", (response_id,)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except json.JSONDecodeError:
            self.delete(response_id)
            return None
        self._db.execute("UPDATE responses SET accessed_at = ? WHERE response_id = ?", (self._tick(), response_id))
        return data if isinstance(data, dict) else None

    def put(self, response_id: str, record: dict[str, Any]) -> None:
        """Insert or replace, then evict the least recently used beyond max_size."""
        data = json.dumps(record)
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO responses(response_id, data, accessed_at) VALUES (?, ?, ?)",
                (response_id, data, self._tick()),
            )
            (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
            excess = count - self.max_size
            if excess > 0:
                victims = [
                    r[0]
                    for r in self._db.execute(
                        "SELECT response_id FROM responses ORDER BY accessed_at ASC LIMIT ?", (excess,)
                    )
                ]
                self._db.executemany("DELETE FROM responses WHERE response_id = ?", [(v,) for v in victims])
                self._db.executemany("DELETE FROM conversations WHERE response_id = ?", [(v,) for v in victims])

    def delete(self, response_id: str) -> bool:
        """Remove a record and every conversation name pointing at it."""
        with self._db:
            self._db.execute("BEGIN")
            cur = self._db.execute("DELETE FROM responses WHERE response_id = ?", (response_id,))
            self._db.execute("DELETE FROM conversations WHERE response_id = ?", (response_id,))
        return cur.rowcount > 0

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    # ---- conversation names -----------------------------------------------------------

    def get_conversation(self, name: str) -> str | None:
        row = self._db.execute("SELECT response_id FROM conversations WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_conversation(self, name: str, response_id: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO conversations(name, response_id) VALUES (?, ?)", (name, response_id)
        )

    def close(self) -> None:
        self._db.close()
