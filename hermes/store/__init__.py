"""Storage. `api.Storage` is the interface (`open_storage`); `open_session_store(path)` opens
SQLite sessions alone, for callers that work on one state.db file."""

from __future__ import annotations

import os

from hermes.store.records import (
    MessageRecord,
    NewMessage,
    RepairedTurn,
    SearchHit,
    SessionRecord,
    StoreStats,
    TurnRecord,
)
from hermes.store.sqlite.state_db import SqliteSessionStore

__all__ = [
    "MessageRecord",
    "NewMessage",
    "RepairedTurn",
    "SearchHit",
    "SessionRecord",
    "SqliteSessionStore",
    "StoreStats",
    "TurnRecord",
    "open_session_store",
]


def open_session_store(path: str | os.PathLike[str]) -> SqliteSessionStore:
    """Open (creating and migrating when needed) the session database at `path`.

    `path` is the database file, normally `$HERMES_HOME/state.db`, or ":memory:".
    Raises StoreError when the file cannot be created or is not a usable database.
    """
    return SqliteSessionStore(path)
