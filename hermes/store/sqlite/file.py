"""Opening a private SQLite database file: the one way every hermes store opens its file.

`open_sqlite_file(path, migrations, what=...)` opens state.db (and, in tests, any file
with a schema history of its own).

Invariants:

- A missing database file is created by this module with mode 0600 (`O_CREAT | O_EXCL`
  with mode 0600, then `fchmod` to exactly 0600) before SQLite opens it, so it is never
  readable by others, whatever the umask, not even for a moment. A missing folder is
  created 0700. An existing file keeps its mode (`hermes doctor` reports a loose one).
- SQLite creates the `-wal`/`-shm` sidecars with the mode of the database file; any that
  already exist with another mode are set to 0600 after opening.
- The connection is in autocommit mode (`isolation_level=None`, callers write inside
  explicit `BEGIN IMMEDIATE … COMMIT`), with the WAL journal, `synchronous=NORMAL`,
  foreign keys on and a busy timeout; the database's migrations have been applied.
- `sqlite3`/`OSError` failures while opening become `StoreError` with a one-line message
  naming the file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import StoreError
from hermes.store.migrations import Migrations, migrate

__all__ = [
    "BUSY_TIMEOUT_MS",
    "JOURNAL_SIZE_LIMIT",
    "DIR_MODE",
    "FILE_MODE",
    "MEMORY",
    "SqliteFile",
    "create_private_file",
    "describe_sqlite_error",
    "open_sqlite_file",
]

MEMORY = ":memory:"
FILE_MODE = 0o600
DIR_MODE = 0o700
BUSY_TIMEOUT_MS = 5_000
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
"""`PRAGMA journal_size_limit` of every connection: a WAL reused from its start is cut back to this."""


@dataclass(frozen=True, slots=True)
class SqliteFile:
    """An opened, migrated database."""

    connection: sqlite3.Connection
    path: Path | None
    """The database file, or None for `:memory:`."""
    label: str
    """The file name for messages (":memory:" for an in-memory database)."""
    applied_migrations: list[str]
    """Migrations this open applied (empty when the schema was already current)."""


def describe_sqlite_error(exc: sqlite3.Error) -> str:
    """One line for a sqlite3 error; damage (a bare DatabaseError) gets a pointer to doctor."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if type(exc) is sqlite3.DatabaseError:
        text += " (run `hermes doctor`)"
    return text


def create_private_file(path: Path) -> None:
    """Create `path` (and its folder) private to the owner, unless it already exists."""
    folder = path.parent
    if not folder.exists():
        folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(folder, DIR_MODE)  # the umask may have cleared bits; make the mode exact
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)  # only ever narrows: the umask can clear bits, never add
    finally:
        os.close(fd)


def _tighten_sidecars(path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        sidecar = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if stat.S_IMODE(sidecar.stat().st_mode) != FILE_MODE:
                os.chmod(sidecar, FILE_MODE)


def open_sqlite_file(
    path: str | os.PathLike[str],
    migrations: Migrations,
    *,
    what: str,
    check_same_thread: bool = True,
) -> SqliteFile:
    """Open (creating and migrating when needed) the database at `path`.

    Args:
        path: the database file, or ":memory:" for a private in-memory database.
        migrations: the database's schema history; pending migrations are applied.
        what: what the database is, for error messages ("session database", …).
        check_same_thread: False when the caller serialises use from several threads
            itself (with a lock).

    Raises:
        StoreError: the file cannot be created, is not a database, or is damaged.
    """
    file = None if str(path) == MEMORY else Path(path).expanduser()
    label = MEMORY if file is None else str(file)
    try:
        if file is not None:
            create_private_file(file)
    except OSError as exc:
        raise StoreError(f"cannot create {what} {label}: {exc}") from exc
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(
            label,
            isolation_level=None,
            check_same_thread=check_same_thread,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
        db.execute("PRAGMA synchronous = NORMAL")
        applied = migrate(db, migrations)
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        raise StoreError(f"cannot open {what} {label}: {describe_sqlite_error(exc)}") from exc
    if file is not None:
        _tighten_sidecars(file)
    return SqliteFile(connection=db, path=file, label=label, applied_migrations=applied)
