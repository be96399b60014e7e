"""Session storage. `SessionStore` is the interface; `open_session_store(path)` the SQLite one."""

from __future__ import annotations

import os

from hermes.store.base import (
    MessageRecord,
    NewMessage,
    RepairedTurn,
    SearchHit,
    SessionRecord,
    SessionStore,
    StoreStats,
    TurnRecord,
)
from hermes.store.sqlite import SqliteSessionStore

__all__ = [
    "MessageRecord",
    "NewMessage",
    "RepairedTurn",
    "SearchHit",
    "SessionRecord",
    "SessionStore",
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
