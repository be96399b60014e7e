"""The SQLite backend: three files in `$HERMES_HOME` (state.db, response_store.db, runs.db).

`open_sqlite_storage(home)` opens all three as one `Storage`; `SqliteSessionStore` is
state.db alone with a synchronous face (tests, benchmarks, `hermes doctor`). Connections,
the dialect, migrations and what only SQLite has (FTS5 search, integrity checks, runs
and leases in runs.db) live here; the session rules are `hermes.store.sessions`.
"""

from __future__ import annotations

from hermes.store.sqlite.sessions import SqliteSessionStore
from hermes.store.sqlite.storage import open_sqlite_storage

__all__ = ["SqliteSessionStore", "open_sqlite_storage"]
