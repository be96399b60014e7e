"""The two files older versions kept beside state.db, folded into it once.

Before one file, `$HERMES_HOME` held `runs.db` (runs, receipts, instance leases) and
`response_store.db` (stored responses, conversation names), each with its own schema
history. state.db's migration `m012_runs_and_responses` copies their rows in
(`copy_into`), inside its own `BEGIN IMMEDIATE` transaction on state.db, so two processes
opening the home cannot both fold, and a crash leaves state.db either before the fold
(the old files still whole) or after it.

Invariants:

- Every column the old table and state.db's table share is copied; columns an old file
  never had stay NULL (a response's `status` is then read from its JSON, as the old
  file's own migration did).
- Once state.db has the fold recorded, the old files are renamed aside
  (`set_aside`: `runs.db` -> `runs.db.folded`, with any `-wal`/`-shm`), never deleted:
  they stay as a backup the user may remove. A file that appears again later (an older
  hermes run on the same home) is renamed aside unread.
- A damaged old file fails the migration (state.db is left unchanged) with a message
  naming the file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

__all__ = ["FOLDED_FILES", "FOLDED_SUFFIX", "copy_into", "set_aside"]

FOLDED_FILES: dict[str, tuple[str, ...]] = {
    "runs.db": ("runs", "receipts", "instances"),
    "response_store.db": ("responses", "conversations"),
}
"""Each old file's name and the tables it held (state.db has each, same name)."""
FOLDED_SUFFIX = ".folded"


def _main_file(db: sqlite3.Connection) -> Path | None:
    for _seq, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return Path(file) if file else None
    return None


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in db.execute(f"PRAGMA table_info({table})").fetchall()]


def copy_into(db: sqlite3.Connection) -> None:
    """Copy the rows of the old files beside `db`'s file into its tables (inside the
    caller's transaction). Nothing to do for `:memory:` or a home without them."""
    main = _main_file(db)
    if main is None:
        return
    for name, tables in FOLDED_FILES.items():
        path = main.with_name(name)
        if not path.is_file():
            continue
        try:
            # Closing the last connection flushes the old file's WAL into it.
            old = sqlite3.connect(str(path), isolation_level=None)
            try:
                for table in tables:
                    theirs = _columns(old, table)
                    shared = [column for column in _columns(db, table) if column in theirs]
                    if not shared:
                        continue
                    listed = ", ".join(shared)
                    rows = old.execute(f"SELECT {listed} FROM {table}").fetchall()
                    marks = ", ".join("?" for _ in shared)
                    db.executemany(f"INSERT OR IGNORE INTO {table} ({listed}) VALUES ({marks})", rows)
            finally:
                old.close()
        except sqlite3.Error as exc:
            raise sqlite3.DatabaseError(f"cannot fold {path} into {main.name}: {exc}") from exc
    db.execute(
        "UPDATE responses SET status = CASE WHEN json_valid(data) THEN json_extract(data, '$.response.status') END "
        "WHERE status IS NULL"
    )


def set_aside(folder: Path) -> list[Path]:
    """Rename the old files in `folder` aside (state.db holds their rows); the new names."""
    moved: list[Path] = []
    for name in FOLDED_FILES:
        for suffix in ("", "-wal", "-shm"):
            path = folder / (name + suffix)
            if not path.exists():
                continue
            target = folder / (name + FOLDED_SUFFIX + suffix)
            with contextlib.suppress(FileNotFoundError):
                os.replace(path, target)
                moved.append(target)
    return moved
