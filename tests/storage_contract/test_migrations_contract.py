"""One migration mechanism on both backends: ordered, recorded, applied once under a lock."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from old_homes import RUNS_DB_SCHEMA

from hermes.config import Settings
from hermes.errors import StoreError
from hermes.store.records import RunRecord
from hermes.store.schema_admin import schema_status, schema_upgrade
from hermes.store.sqlite.schema import STATE_MIGRATIONS


async def _applied(url: str) -> list[str]:
    from hermes.store.postgres.connect import connect
    from hermes.store.postgres.migrate import applied_postgres

    conn = await connect(url)
    try:
        return await applied_postgres(conn)
    finally:
        await conn.close()


async def test_postgres_empty_database_is_migrated_once(empty_pg_url: str) -> None:
    from hermes.store.postgres.migrate import migrate_url, status_url
    from hermes.store.postgres.schema import PG_MIGRATIONS

    before = await status_url(empty_pg_url)
    assert before.applied == [] and before.pending == PG_MIGRATIONS.names and not before.current
    assert await migrate_url(empty_pg_url) == PG_MIGRATIONS.names
    assert await migrate_url(empty_pg_url) == []
    after = await status_url(empty_pg_url)
    assert after.current and after.applied == PG_MIGRATIONS.names
    assert "****" not in after.database  # no password in this URL; nothing to mask


async def test_postgres_concurrent_openers_apply_each_migration_once(empty_pg_url: str) -> None:
    from hermes.store.postgres import open_postgres_storage
    from hermes.store.postgres.schema import PG_MIGRATIONS

    opened = await asyncio.gather(*(open_postgres_storage(empty_pg_url) for _ in range(4)))
    try:
        session = await opened[0].sessions.create_session(source="cli")
        assert await opened[3].sessions.get_session(session.id) == session
    finally:
        for storage in opened:
            await storage.aclose()
    assert await _applied(empty_pg_url) == PG_MIGRATIONS.names


def test_postgres_concurrent_upgrade_processes(empty_pg_url: str, tmp_path: Path) -> None:
    """Two `hermes db upgrade` processes started together: both succeed, one applies."""
    import json
    import os
    import subprocess
    import sys

    from hermes.store.postgres.schema import PG_MIGRATIONS

    env = {**os.environ, "HERMES_DATABASE_URL": empty_pg_url, "HERMES_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "hermes", "db", "upgrade", "--json"]
    procs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    applied_now: list[list[str]] = [
        [name for names in json.loads(out)["applied_now"].values() for name in names] for out, _ in outputs
    ]
    assert sorted(applied_now, key=len) == [[], PG_MIGRATIONS.names]
    assert asyncio.run(_applied(empty_pg_url)) == PG_MIGRATIONS.names


async def test_postgres_failed_migration_rolls_back_and_releases_the_lock(empty_pg_url: str) -> None:
    from hermes.store.postgres.connect import connect
    from hermes.store.postgres.migrate import migrate_postgres, migrate_url
    from hermes.store.postgres.schema import PG_MIGRATIONS, PgMigrations

    broken = PgMigrations("postgresql")
    for step in PG_MIGRATIONS:
        broken.migration(step)

    @broken.migration
    async def m999_broken(conn: Any) -> None:
        await conn.execute("CREATE TABLE hermes.half_done (x int)")
        await conn.execute("SELECT no_such_function()")

    import psycopg

    conn = await connect(empty_pg_url)
    try:
        with pytest.raises(psycopg.Error):
            await migrate_postgres(conn, broken)
        cursor = await conn.execute("SELECT to_regclass('hermes.half_done')")
        assert (await cursor.fetchone()) == (None,)
    finally:
        await conn.close()
    assert await _applied(empty_pg_url) == PG_MIGRATIONS.names
    assert await asyncio.wait_for(migrate_url(empty_pg_url), 30) == []  # the lock was released


@pytest.mark.usefixtures("pg_driver")  # the driver is what reports an unreachable server
async def test_unreachable_postgres_is_a_one_line_store_error() -> None:
    from hermes.store.postgres import open_postgres_storage

    with pytest.raises(StoreError) as caught:
        await open_postgres_storage("postgresql://hermes:s3cret@127.0.0.1:1/nothing")
    message = str(caught.value)
    assert "s3cret" not in message and "****" in message and "\n" not in message


async def test_schema_status_and_upgrade_on_sqlite(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    before = await schema_status(settings)
    assert before.backend == "sqlite" and not before.current
    assert all(not status.exists for status in before.databases)
    assert not (tmp_path / "home").exists()  # status creates nothing
    upgraded = await schema_upgrade(settings)
    assert upgraded.current
    assert upgraded.applied_now == {str(tmp_path / "home" / "state.db"): STATE_MIGRATIONS.names}
    assert "m012_runs_and_responses" in STATE_MIGRATIONS.names  # runs and responses live in state.db
    again = await schema_upgrade(settings)
    assert again.current and not any(again.applied_now.values())
    assert [status.database for status in again.databases] == [str(tmp_path / "home" / "state.db")]
    assert not (tmp_path / "home" / "runs.db").exists() and not (tmp_path / "home" / "response_store.db").exists()
    assert ((tmp_path / "home" / "state.db").stat().st_mode & 0o777) == 0o600


def _unsettled_rows() -> list[tuple[str, str, float]]:
    """Rows written before the one-unsettled-run index: two unsettled runs of s1 (r1 the
    older), one of s2, and a settled one of s1."""
    return [("r1", "s1", 1.0), ("r2", "s1", 2.0), ("r3", "s2", 1.0)]


async def test_sqlite_runs_db_settles_duplicate_unsettled_runs_then_refuses_a_second(tmp_path: Path) -> None:
    """runs.db written before its one-unsettled-run index, folded into state.db."""
    from hermes.errors import SessionBusy
    from hermes.store.sqlite.assemble import open_sqlite_storage

    home = tmp_path / "home"
    home.mkdir()
    with closing(sqlite3.connect(home / "runs.db", isolation_level=None)) as db:
        for statement in RUNS_DB_SCHEMA:
            if "runs_one_unsettled" not in statement:
                db.execute(statement)
        for run_id, session, created in _unsettled_rows():
            db.execute(
                "INSERT INTO runs (run_id, status, session_id, created_at, updated_at) VALUES (?, 'running', ?, ?, ?)",
                (run_id, session, created, created),
            )
        db.execute(
            "INSERT INTO runs (run_id, status, session_id, created_at, updated_at) "
            "VALUES ('r0', 'completed', 's1', 0, 0)"
        )
    storage = open_sqlite_storage(home)
    store = storage.runs
    try:
        statuses = {
            run_id: (await store.get(run_id) or pytest.fail(run_id)).status for run_id in ("r0", "r1", "r2", "r3")
        }
        assert statuses == {"r0": "completed", "r1": "interrupted", "r2": "running", "r3": "running"}
        with pytest.raises(SessionBusy) as busy:
            await store.put(RunRecord("r4", "queued", 3.0, 3.0, session_id="s1"))
        assert busy.value.session_id == "s1" and await store.get("r4") is None
        await store.put(RunRecord("r2", "completed", 2.0, 4.0, session_id="s1"))  # r2 settles: s1 is free
        await store.put(RunRecord("r4", "queued", 3.0, 3.0, session_id="s1"))
        await store.put(RunRecord("r5", "queued", 3.0, 3.0))  # runs without a session are not limited
        await store.put(RunRecord("r6", "queued", 3.0, 3.0))
    finally:
        await storage.aclose()


async def test_postgres_settles_duplicate_unsettled_runs_then_refuses_a_second(empty_pg_url: str) -> None:
    from hermes.errors import SessionBusy
    from hermes.store.postgres import open_postgres_storage
    from hermes.store.postgres.connect import connect
    from hermes.store.postgres.migrate import migrate_postgres
    from hermes.store.postgres.schema import PG_MIGRATIONS, PgMigrations

    before = PgMigrations("postgresql")
    for step in PG_MIGRATIONS:
        if step.__name__ < "m008":
            before.migration(step)
    conn = await connect(empty_pg_url)
    try:
        await migrate_postgres(conn, before)
        for run_id, session, created in _unsettled_rows():
            await conn.execute(
                "INSERT INTO hermes.runs (run_id, status, session_id, created_at, updated_at) "
                "VALUES (%s, 'running', %s, %s, %s)",
                (run_id, session, created, created),
            )
    finally:
        await conn.close()
    storage = await open_postgres_storage(empty_pg_url)
    try:
        assert await _applied(empty_pg_url) == PG_MIGRATIONS.names
        records = {run_id: await storage.runs.get(run_id) for run_id in ("r1", "r2", "r3")}
        assert {run_id: record.status for run_id, record in records.items() if record} == {
            "r1": "interrupted", "r2": "running", "r3": "running",
        }  # fmt: skip
        with pytest.raises(SessionBusy):
            await storage.runs.put(RunRecord("r4", "queued", 3.0, 3.0, session_id="s1"))
        assert await storage.runs.get("r4") is None
        await storage.runs.put(RunRecord("r2", "completed", 2.0, 4.0, session_id="s1"))
        await storage.runs.put(RunRecord("r4", "queued", 3.0, 3.0, session_id="s1"))
        async with await connect(empty_pg_url) as admin:
            cursor = await admin.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'hermes' AND indexname = %s",
                ("runs_one_unsettled_per_session",),
            )
            (indexdef,) = await cursor.fetchone() or pytest.fail("index missing")
            cursor = await admin.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'hermes' "
                "AND table_name = 'receipts' ORDER BY ordinal_position"
            )
            columns = [name for (name,) in await cursor.fetchall()]
        assert "UNIQUE" in indexdef and "WHERE" in indexdef
        assert columns[-2:] == ["answer", "expires_at"]
    finally:
        await storage.aclose()
