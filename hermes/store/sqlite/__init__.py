"""The SQLite backend: three files in `$HERMES_HOME` (state.db, response_store.db, runs.db).

`open_sqlite_storage(home)` opens all three as one `Storage`; `SqliteSessionStore` is
state.db alone with a synchronous face (tests, benchmarks, `hermes doctor`). Connections,
the dialect, migrations and what only SQLite has (FTS5 search, integrity checks, runs
and leases in runs.db) live here; the session rules are `hermes.store.sessions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.store.sqlite.sessions import SqliteSessionStore

if TYPE_CHECKING:
    from hermes.store.sqlite.storage import open_sqlite_storage

__all__ = ["SqliteSessionStore", "open_sqlite_storage"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the whole storage (runs, events, asyncio) is more than a
    # caller of state.db alone needs.
    if name == "open_sqlite_storage":
        from hermes.store.sqlite.storage import open_sqlite_storage

        return open_sqlite_storage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
