"""Schema migrations: one mechanism for every SQLite database hermes keeps.

Each database declares its schema history as a `Migrations` list of functions, registered
with `@<list>.migration` in the order they must run (`session_schema.SESSION_MIGRATIONS`
for state.db, `responses.RESPONSE_MIGRATIONS`, `run_store.RUN_MIGRATIONS`). `migrate()`
brings a connection up to date and records what it applied in the database itself.

Invariants:

- A migration is identified by its function name (`m001_sessions`, …), unique within its
  list; names never change once released, and new migrations are only ever appended.
- `migrate()` applies each pending migration exactly once, inside its own
  `BEGIN IMMEDIATE` transaction, and records its name in `_migrations` in that same
  transaction: a crash leaves the database either before or after a whole migration, and
  two processes opening the same file cannot both apply one.
- Migrations only use `Connection.execute` (never `executescript`, which would commit the
  surrounding transaction).
- A database's first migration may use `CREATE … IF NOT EXISTS` only to adopt files
  written before migrations were recorded, and then repeats that old DDL exactly; every
  later migration assumes the schema its predecessors left.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator

__all__ = ["Migration", "Migrations", "applied_migrations", "execute_all", "migrate"]

Migration = Callable[[sqlite3.Connection], None]


class Migrations:
    """The ordered schema history of one database."""

    def __init__(self, database: str) -> None:
        self.database = database
        """The database this history belongs to (e.g. "state.db"), for messages."""
        self._steps: list[Migration] = []

    def migration(self, fn: Migration) -> Migration:
        """Register `fn` as the next migration (a decorator)."""
        if fn.__name__ in self.names:
            raise ValueError(f"{self.database}: migration {fn.__name__} is registered twice")
        self._steps.append(fn)
        return fn

    @property
    def names(self) -> list[str]:
        return [fn.__name__ for fn in self._steps]

    def __iter__(self) -> Iterator[Migration]:
        return iter(list(self._steps))

    def __len__(self) -> int:
        return len(self._steps)


def execute_all(db: sqlite3.Connection, statements: tuple[str, ...]) -> None:
    """Run each statement in order (inside the caller's transaction)."""
    for statement in statements:
        db.execute(statement)


def _ensure_ledger(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )


def applied_migrations(db: sqlite3.Connection) -> list[str]:
    """Names recorded in `_migrations`, in the order they were applied."""
    _ensure_ledger(db)
    rows = db.execute("SELECT name FROM _migrations ORDER BY rowid").fetchall()
    return [str(name) for (name,) in rows]


def migrate(db: sqlite3.Connection, migrations: Migrations) -> list[str]:
    """Apply every pending migration; return the names applied now (empty when up to date).

    `db` must be in autocommit mode (`isolation_level=None`) with no open transaction.
    Safe against another process migrating the same file at the same time: the pending
    check is repeated inside each write transaction.
    """
    done = set(applied_migrations(db))
    applied: list[str] = []
    for fn in migrations:
        name = fn.__name__
        if name in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            already = db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone()
            if already is None:
                fn(db)
                db.execute(
                    "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, time.time())
                )
                applied.append(name)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    return applied
