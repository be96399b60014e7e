"""Schema migrations of state.db: applied once, in order, recorded in `_migrations`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes.store.migrations import Migrations, applied_migrations, migrate
from hermes.store.sqlite.schema import STATE_MIGRATIONS
from hermes.testing.state_db import SyncStateDb

RECORDED = "SELECT name, applied_at FROM _migrations ORDER BY rowid"


def schema(db: sqlite3.Connection) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for kind, name in db.execute("SELECT type, name FROM sqlite_master"):
        found.setdefault(kind, set()).add(name)
    return found


def columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def test_migrate_memory_creates_the_schema() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    applied = migrate(db, STATE_MIGRATIONS)
    assert applied == STATE_MIGRATIONS.names
    assert applied[:3] == ["m001_sessions", "m002_messages", "m003_messages_fts"]

    found = schema(db)
    assert {"_migrations", "sessions", "messages", "messages_fts"} <= found["table"]
    assert found["view"] == {"messages_fts_source"}
    assert {
        "sessions_updated_at",
        "sessions_source_updated_at",
        "sessions_parent",
        "sessions_title",
        "messages_session",
    } <= found["index"]
    assert {  # no insert trigger: new messages are indexed in batches (m010, `fts_batches`)
        "messages_fts_before_delete",
        "messages_fts_before_update",
        "messages_fts_after_update",
    } == found["trigger"]
    (fts_sql,) = db.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'messages_fts'"
    ).fetchone()
    assert "fts5" in fts_sql and "content='messages_fts_source'" in fts_sql

    assert columns(db, "sessions") == [
        "id", "source", "title", "model", "parent_session_id", "started_at", "updated_at",
        "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
        "output_tokens", "system_prompt", "cwd", "parent_call_id",
    ]  # fmt: skip
    assert columns(db, "messages") == [
        "id", "session_id", "role", "content", "content_is_parts", "parts_text", "tool_calls",
        "tool_call_id", "tool_name", "reasoning", "finish_reason", "timestamp", "token_count",
        "draft", "undone",
    ]  # fmt: skip
    assert columns(db, "turns") == [
        "id", "session_id", "after_message_id", "draft_message_id", "started_at", "ended_at",
        "end_reason", "owner_host", "owner_pid", "owner_started", "worktree", "checkpoint_before",
        "checkpoint_after", "undone",
    ]  # fmt: skip
    assert applied_migrations(db) == applied


def test_migrate_twice_is_a_no_op() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db, STATE_MIGRATIONS)
    before = db.execute(RECORDED).fetchall()
    assert migrate(db, STATE_MIGRATIONS) == []
    assert db.execute(RECORDED).fetchall() == before


def test_reopening_a_file_does_not_rerun_migrations(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first = SyncStateDb(path)
    assert first.applied_migrations == STATE_MIGRATIONS.names
    session = first.create_session(source="cli", title="kept")
    first.close()
    with sqlite3.connect(path) as raw:
        recorded = raw.execute(RECORDED).fetchall()

    second = SyncStateDb(path)
    try:
        assert second.applied_migrations == []
        assert second.get_session(session.id).title == "kept"
    finally:
        second.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute(RECORDED).fetchall() == recorded


def test_a_failing_migration_is_rolled_back_and_not_recorded() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)

    def m999_broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        conn.execute("THIS IS NOT SQL")

    with_broken = Migrations("state.db")
    for fn in STATE_MIGRATIONS:
        with_broken.migration(fn)
    with_broken.migration(m999_broken)
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, with_broken)
    assert "m999_broken" not in applied_migrations(db)
    assert "half_done" not in schema(db)["table"]
    assert "m003_messages_fts" in applied_migrations(db)
    assert not db.in_transaction


def test_migration_names_are_ordered_and_unique() -> None:
    names = STATE_MIGRATIONS.names
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    assert all(name[0] == "m" and name[1:4].isdigit() for name in names)


def test_a_name_cannot_be_registered_twice() -> None:
    history = Migrations("x.db")

    @history.migration
    def m001_first(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE one (x)")

    def again(db: sqlite3.Connection) -> None: ...

    again.__name__ = "m001_first"
    with pytest.raises(ValueError, match="m001_first is registered twice"):
        history.migration(again)
    assert history.names == ["m001_first"]
