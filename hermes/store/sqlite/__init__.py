"""The SQLite backend: one file, `$HERMES_HOME/state.db`.

`open_sqlite_storage(home)` opens it as one `Storage` (`assemble`); `StateDb` is the file
alone (`state_db`: `hermes doctor`, `hermes db upgrade`, `hermes sessions list`).
What only SQLite has lives here: the file (`file`), the executor and dialect, the schema
history (`schema`, with the fold of the older runs.db and response_store.db,
`folded_files`), FTS5 search batches, WAL flushes and process-owned crash repair.
The rules of every record kind are in `hermes.store.rules`; this backend only executes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.store.sqlite.state_db import StateDb

if TYPE_CHECKING:
    from hermes.store.sqlite.assemble import open_sqlite_storage

__all__ = ["StateDb", "open_sqlite_storage"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the whole storage (runs, events, asyncio) is more than a
    # caller of state.db alone needs.
    if name == "open_sqlite_storage":
        from hermes.store.sqlite.assemble import open_sqlite_storage

        return open_sqlite_storage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
