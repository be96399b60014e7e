"""Applying and reporting the PostgreSQL schema history (`schema.PG_MIGRATIONS`).

Same rules as SQLite's `hermes.store.migrations.migrate`, with PostgreSQL's own lock:

- The whole check-and-apply runs under a session-level `pg_advisory_lock(MIGRATION_LOCK)`,
  so instances starting together apply each migration exactly once: the others wait,
  then find it recorded. The wait is bounded by `lock_timeout` (LOCK_TIMEOUT_MS).
- Each pending migration runs in its own transaction together with the insert of its name
  into `hermes._migrations`: a crash leaves the database before or after a whole
  migration (PostgreSQL DDL is transactional).
- The lock is released (and the connection's settings restored) whatever happens.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from hermes.errors import StoreError
from hermes.store.migrations import MigrationStatus, migration_status
from hermes.store.postgres.connect import connect, describe_pg_error, mask_database_url
from hermes.store.postgres.schema import PG_MIGRATIONS, PgMigrations

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MIGRATION_LOCK", "applied_postgres", "migrate_postgres", "migrate_url", "status_url"]

MIGRATION_LOCK = 0x6865726D6573
"""The advisory lock key ("hermes" in ASCII) held while migrating."""
LOCK_TIMEOUT_MS = 120_000


async def applied_postgres(conn: AsyncConnection[Any]) -> list[str]:
    """Names recorded in hermes._migrations in the order applied ([] when there is none)."""
    cursor = await conn.execute("SELECT to_regclass('hermes._migrations') IS NOT NULL")
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return []
    cursor = await conn.execute("SELECT name FROM hermes._migrations ORDER BY seq")
    return [str(name) for (name,) in await cursor.fetchall()]


async def migrate_postgres(conn: AsyncConnection[Any], migrations: PgMigrations = PG_MIGRATIONS) -> list[str]:
    """Apply every pending migration; return the names applied now (empty when current).

    `conn` must be in autocommit mode with no open transaction.
    """
    await conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        await conn.execute("CREATE SCHEMA IF NOT EXISTS hermes")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS hermes._migrations ("
            "name text PRIMARY KEY, applied_at double precision NOT NULL, "
            "seq bigint GENERATED ALWAYS AS IDENTITY)"
        )
        done = set(await applied_postgres(conn))
        applied: list[str] = []
        for step in migrations:
            name = step.__name__
            if name in done:
                continue
            async with conn.transaction():
                await step(conn)
                await conn.execute(
                    "INSERT INTO hermes._migrations (name, applied_at) VALUES (%s, %s)", (name, time.time())
                )
            applied.append(name)
        return applied
    finally:
        # A broken connection drops its session lock by itself; never mask the real error.
        with contextlib.suppress(Exception):
            await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            await conn.execute("RESET lock_timeout")


async def migrate_url(url: str, migrations: PgMigrations = PG_MIGRATIONS) -> list[str]:
    """Connect to `url`, apply pending migrations, disconnect (StoreError on failure)."""
    import psycopg

    conn = await connect(url)
    try:
        return await migrate_postgres(conn, migrations)
    except psycopg.Error as exc:
        raise StoreError(f"cannot migrate {mask_database_url(url)}: {describe_pg_error(exc)}") from None
    finally:
        await conn.close()


async def status_url(url: str, migrations: PgMigrations = PG_MIGRATIONS) -> MigrationStatus:
    """Where the database at `url` stands against `migrations` (changes nothing)."""
    import psycopg

    conn = await connect(url)
    try:
        applied = await applied_postgres(conn)
    except psycopg.Error as exc:
        raise StoreError(f"cannot read {mask_database_url(url)}: {describe_pg_error(exc)}") from None
    finally:
        await conn.close()
    return migration_status(mask_database_url(url), migrations, applied)
