"""Schema migrations: one mechanism for every database hermes keeps, on both backends.

Each database declares its schema history as a `Migrations` list of functions, registered
with `@<list>.migration` in the order they must run: on SQLite
`schema.STATE_MIGRATIONS` for state.db (the one file: the rows of the older
runs.db and response_store.db are folded into it by its m012); on PostgreSQL
`postgres.schema.PG_MIGRATIONS` (every record kind in one database). Applying brings a
database up to date and records the name of each migration it applied in the database itself (`_migrations` on SQLite,
`hermes._migrations` on PostgreSQL); `pending_names()` compares a list with that record.
`migrate()` below applies SQLite lists; `postgres.migrate.migrate_postgres()` applies the
PostgreSQL one with the same rules, under `pg_advisory_lock` instead of `BEGIN IMMEDIATE`.

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
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = [
    "Migration",
    "MigrationHistory",
    "MigrationStatus",
    "Migrations",
    "applied_migrations",
    "execute_all",
    "migrate",
    "migration_status",
    "pending_names",
]

Migration = Callable[[sqlite3.Connection], None]
"""A SQLite migration step."""

StepT = TypeVar("StepT", bound=Callable[..., Any])


class MigrationHistory(Generic[StepT]):
    """The ordered schema history of one database, whatever its backend.

    The step type is the backend's: `Migrations` holds SQLite steps, and
    `postgres.schema.PgMigrations` async steps taking a psycopg connection. The
    bookkeeping (names, order, duplicates) is the same for both.
    """

    def __init__(self, database: str) -> None:
        self.database = database
        """The database this history belongs to (e.g. "state.db"), for messages."""
        self._steps: list[StepT] = []

    def migration(self, fn: StepT) -> StepT:
        """Register `fn` as the next migration (a decorator)."""
        if fn.__name__ in self.names:
            raise ValueError(f"{self.database}: migration {fn.__name__} is registered twice")
        self._steps.append(fn)
        return fn

    @property
    def names(self) -> list[str]:
        return [fn.__name__ for fn in self._steps]

    def __iter__(self) -> Iterator[StepT]:
        return iter(list(self._steps))

    def __len__(self) -> int:
        return len(self._steps)


class Migrations(MigrationHistory[Migration]):
    """The ordered schema history of one SQLite database."""


@dataclass(frozen=True, slots=True)
class MigrationStatus:
    """Where one database stands against its schema history (`hermes db status`)."""

    database: str
    """What the database is: a SQLite file path, or the masked PostgreSQL URL."""
    applied: list[str]
    """Names recorded in the database, in the order they were applied."""
    pending: list[str]
    """Names of the history not yet applied, in the order they will run."""
    unknown: list[str]
    """Names recorded in the database that this version of hermes does not know (the
    database was upgraded by a newer hermes)."""
    exists: bool = True
    """False when the database (file) does not exist yet: everything is pending."""

    @property
    def current(self) -> bool:
        return self.exists and not self.pending


def pending_names(migrations: MigrationHistory[Any], applied: list[str]) -> list[str]:
    """The names of `migrations` not in `applied`, in order."""
    done = set(applied)
    return [name for name in migrations.names if name not in done]


def migration_status(
    database: str, migrations: MigrationHistory[Any], applied: list[str], *, exists: bool = True
) -> MigrationStatus:
    known = set(migrations.names)
    return MigrationStatus(
        database=database,
        applied=list(applied),
        pending=pending_names(migrations, applied),
        unknown=[name for name in applied if name not in known],
        exists=exists,
    )


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
