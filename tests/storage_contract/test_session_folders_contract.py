"""Sessions belong to a folder (`cwd`), alike on both backends; older databases upgrade
with NULL folders; ids resolve from a prefix."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from hermes.store.api import Storage
from hermes.store.records import NewMessage, NewSession


async def test_a_session_records_its_folder_and_lists_narrow_by_it(storage: Storage) -> None:
    store = storage.sessions
    a1 = await store.create_session(source="cli", cwd="/work/a")
    b1 = await store.create_session(source="tui", cwd="/work/b")
    old = await store.create_session(source="cli")
    a2 = await store.create_session(source="tui", cwd="/work/a")
    assert (await store.get_session(a1.id)).cwd == "/work/a"
    assert (await store.get_session(old.id)).cwd is None
    assert [s.id for s in await store.list_sessions(cwd="/work/a")] == [a2.id, a1.id]
    assert [s.id for s in await store.list_sessions(cwd="/work/a", source="cli")] == [a1.id]
    assert await store.count_sessions(cwd="/work/a") == 2
    assert await store.count_sessions(cwd="/work/a/") == 0  # compared exactly: no prefix match
    assert (await store.latest_session(cwd="/work/b")).id == b1.id  # type: ignore[union-attr]
    assert await store.latest_session(cwd="/elsewhere") is None
    assert (await store.latest_session()).id == a2.id  # type: ignore[union-attr]
    assert old.to_json()["cwd"] is None and a1.to_json()["cwd"] == "/work/a"


async def test_a_fork_and_a_session_started_with_its_turn_keep_the_folder(storage: Storage) -> None:
    store = storage.sessions
    parent = await store.create_session(source="tui", cwd="/work/p")
    await store.append_message(parent.id, NewMessage(role="user", content="hi"))
    child = await store.fork_session(parent.id)
    assert child.cwd == "/work/p"
    turn, _ = await store.start_turn(
        NewSession(id="with-turn", given=True, source="cli", cwd="/work/q"), [NewMessage(role="user", content="x")]
    )
    assert (await store.get_session(turn.session_id)).cwd == "/work/q"


async def test_ids_resolve_from_a_prefix(storage: Storage) -> None:
    store = storage.sessions
    for sid in ("20260101_aa_1", "20260101_ab_2", "20260101_ab_3", "x%_y"):
        await store.create_session(source="cli", session_id=sid)
    assert [s.id for s in await store.sessions_with_prefix("20260101_aa")] == ["20260101_aa_1"]
    assert sorted(s.id for s in await store.sessions_with_prefix("20260101_ab")) == ["20260101_ab_2", "20260101_ab_3"]
    assert len(await store.sessions_with_prefix("2026", limit=2)) == 2
    assert await store.sessions_with_prefix("") == []
    # No LIKE: `%` and `_` are plain characters.
    assert await store.sessions_with_prefix("2026010%") == []
    assert [s.id for s in await store.sessions_with_prefix("x%_")] == ["x%_y"]


def test_a_state_db_before_m013_upgrades_with_null_folders(tmp_path: Path) -> None:
    from hermes.store.migrations import Migrations, applied_migrations, migrate
    from hermes.store.sqlite.schema import STATE_MIGRATIONS
    from hermes.testing.state_db import SyncStateDb

    path = tmp_path / "state.db"
    before = Migrations("state.db")
    for step in STATE_MIGRATIONS:
        if step.__name__ < "m013":
            before.migration(step)
    with closing(sqlite3.connect(path, isolation_level=None)) as raw:
        migrate(raw, before)
        raw.execute("INSERT INTO sessions (id, source, started_at, updated_at) VALUES ('old', 'cli', 1, 1)")
    with SyncStateDb(path) as store:
        assert store.get_session("old").cwd is None
        new = store.create_session(source="cli", cwd="/here")
        assert [s.id for s in store.list_sessions(cwd="/here")] == [new.id]
        assert store.integrity_check() == "ok"
    with closing(sqlite3.connect(path)) as raw:
        assert "m013_session_folders" in applied_migrations(raw)


async def test_a_postgres_database_before_m014_upgrades_with_null_folders(empty_pg_url: str) -> None:
    from hermes.store.postgres import open_postgres_storage
    from hermes.store.postgres.connect import connect
    from hermes.store.postgres.migrate import applied_postgres, migrate_postgres
    from hermes.store.postgres.schema import PG_MIGRATIONS, PgMigrations

    before = PgMigrations("postgresql")
    for step in PG_MIGRATIONS:
        if step.__name__ < "m014":
            before.migration(step)
    conn = await connect(empty_pg_url)
    try:
        await migrate_postgres(conn, before)
        await conn.execute(
            "INSERT INTO hermes.sessions (id, source, started_at, updated_at) VALUES ('old', 'cli', 1, 1)"
        )
    finally:
        await conn.close()
    storage = await open_postgres_storage(empty_pg_url)
    try:
        assert (await storage.sessions.get_session("old")).cwd is None
        new = await storage.sessions.create_session(source="cli", cwd="/here")
        assert [s.id for s in await storage.sessions.list_sessions(cwd="/here")] == [new.id]
    finally:
        await storage.aclose()
    conn = await connect(empty_pg_url)
    try:
        assert "m014_session_folders" in await applied_postgres(conn)
    finally:
        await conn.close()
