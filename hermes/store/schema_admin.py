"""Schema version of the configured backend: read it (`status`) or bring it up to date
(`upgrade`). Used by `hermes db status|upgrade`.

SQLite: the one file, `$HERMES_HOME/state.db` (runs.db and response_store.db of older
versions are folded into it by its migration `m012_runs_and_responses`). `status` opens an
existing file read-only and never creates one (a missing file is reported as such, all
pending). PostgreSQL: the one database, `status` only reads `hermes._migrations`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes.config import Settings
from hermes.errors import StoreError
from hermes.store.api import Backend
from hermes.store.configured import backend_for
from hermes.store.migrations import Migrations, MigrationStatus, migration_status
from hermes.store.sqlite.file import describe_sqlite_error
from hermes.store.sqlite.schema import STATE_MIGRATIONS
from hermes.store.sqlite.state_db import STATE_DB, StateDb

__all__ = ["SchemaReport", "schema_status", "schema_upgrade"]

_SQLITE_FILES: tuple[tuple[str, Migrations], ...] = ((STATE_DB, STATE_MIGRATIONS),)


@dataclass(frozen=True, slots=True)
class SchemaReport:
    backend: Backend
    location: str
    """$HERMES_HOME, or the PostgreSQL URL with its password masked."""
    databases: list[MigrationStatus]
    applied_now: dict[str, list[str]]
    """For `upgrade`: database -> migrations this call applied (empty for `status`)."""

    @property
    def current(self) -> bool:
        return all(status.current for status in self.databases)


def _sqlite_file_status(path: Path, migrations: Migrations) -> MigrationStatus:
    if not path.exists():
        return migration_status(str(path), migrations, [], exists=False)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            has_ledger = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
            ).fetchone()
            rows = db.execute("SELECT name FROM _migrations ORDER BY rowid").fetchall() if has_ledger else []
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {describe_sqlite_error(exc)}") from None
    return migration_status(str(path), migrations, [str(name) for (name,) in rows])


async def schema_status(settings: Settings) -> SchemaReport:
    """Where each database of the configured backend stands (changes nothing)."""
    if backend_for(settings.database_url) == "postgres":
        from hermes.store.postgres.connect import mask_database_url
        from hermes.store.postgres.migrate import status_url

        url = (settings.database_url or "").strip()
        return SchemaReport("postgres", mask_database_url(url), [await status_url(url)], {})
    statuses = [_sqlite_file_status(settings.home / name, history) for name, history in _SQLITE_FILES]
    return SchemaReport("sqlite", str(settings.home), statuses, {})


async def schema_upgrade(settings: Settings) -> SchemaReport:
    """Apply every pending migration of the configured backend, then report."""
    applied: dict[str, list[str]] = {}
    if backend_for(settings.database_url) == "postgres":
        from hermes.store.postgres.connect import mask_database_url
        from hermes.store.postgres.migrate import migrate_url

        url = (settings.database_url or "").strip()
        applied[mask_database_url(url)] = await migrate_url(url)
    else:
        settings.ensure_home()
        with StateDb(settings.home / STATE_DB) as state:
            applied[str(settings.home / STATE_DB)] = state.applied_migrations
    report = await schema_status(settings)
    return SchemaReport(report.backend, report.location, report.databases, applied)
