"""The database file: permissions, pragmas, damage handling, integrity check."""

from __future__ import annotations

import contextlib
import sqlite3
import stat
from pathlib import Path

import pytest

from hermes.errors import StoreError
from hermes.store.records import NewMessage
from hermes.store.sqlite.state_db import StateDb
from hermes.testing.state_db import SyncStateDb, open_sync_state


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_file_is_private_and_its_folder_created_0700(db_path: Path) -> None:
    assert not db_path.parent.exists()
    store = SyncStateDb(db_path)
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="hi"))
    try:
        assert mode(db_path.parent) == 0o700
        assert mode(db_path) == 0o600
        for suffix in ("-wal", "-shm"):
            sidecar = db_path.with_name(db_path.name + suffix)
            assert sidecar.exists()
            assert mode(sidecar) == 0o600
    finally:
        store.close()


def test_file_is_private_even_with_a_permissive_umask(db_path: Path) -> None:
    import os

    old = os.umask(0)
    try:
        SyncStateDb(db_path).close()
    finally:
        os.umask(old)
    assert mode(db_path) == 0o600


def test_existing_sidecars_are_tightened_on_open(db_path: Path) -> None:
    store = SyncStateDb(db_path)
    store.create_session(source="cli")
    wal = db_path.with_name(db_path.name + "-wal")
    wal.chmod(0o644)
    other = SyncStateDb(db_path)  # opened while the first keeps the WAL alive
    try:
        assert mode(wal) == 0o600
    finally:
        other.close()
        store.close()


def test_connection_pragmas(store: SyncStateDb) -> None:
    db = store.executor.connection()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_wal_is_visible_to_a_plain_sqlite_client(store: SyncStateDb, db_path: Path) -> None:
    store.create_session(source="cli")
    with sqlite3.connect(db_path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_memory_database_is_supported() -> None:
    with SyncStateDb(":memory:") as store:
        session = store.create_session(source="cli", title="x")
        assert store.get_session(session.id).title == "x"
        assert store.path is None
        assert store.stats().db_bytes > 0


def test_state_db_runs_its_session_rules_without_an_event_loop(db_path: Path) -> None:
    # `hermes sessions list`'s path: the async rules, each run to its end in this thread.
    with StateDb(db_path) as state:
        created = state.run(state.sessions.create_session(source="cli", title="  first   one "))
        assert state.run(state.sessions.get_session(created.id)).title == "first one"
        assert [s.id for s in state.run(state.sessions.list_sessions())] == [created.id]
    with open_sync_state(db_path) as store:  # the tests' face: the same rules, the same file
        assert store.get_session(created.id).title == "first one"
        assert store.count_sessions() == 1


def test_state_db_refuses_a_step_that_would_wait(db_path: Path) -> None:
    import asyncio

    async def waits() -> None:
        await asyncio.sleep(0)

    with StateDb(db_path) as state, pytest.raises(RuntimeError, match="suspended"):
        state.run(waits())


@pytest.mark.parametrize(
    "content",
    [b"this is not a database, just some text\n" * 200, b"SQLite format 3\x00" + b"\xff" * 4096],
    ids=["text", "bad-header"],
)
def test_corrupt_file_raises_store_error_with_one_line(db_path: Path, content: bytes) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(content)
    with pytest.raises(StoreError) as caught:
        SyncStateDb(db_path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(db_path) in message
    assert "hermes doctor" in message


def test_unwritable_location_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create session database"):
        SyncStateDb(blocker / "state.db")


def test_closed_store_raises_store_error(db_path: Path) -> None:
    store = SyncStateDb(db_path)
    store.close()
    store.close()  # closing twice is fine
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_integrity_check_ok(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="hello world"))
    store.append_message(
        session.id, NewMessage(role="user", content=[{"type": "text", "text": "parts here"}])
    )
    store.fork_session(session.id)
    assert store.integrity_check() == "ok"


def test_integrity_check_reports_a_stale_search_index(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="hello world"))
    store.executor.connection().execute(
        "INSERT INTO messages_fts(rowid, body) VALUES (9999, 'ghost words')"
    )
    assert store.integrity_check().startswith("search index:")


def test_integrity_check_reports_wrong_counters(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    store.executor.connection().execute(
        "UPDATE sessions SET message_count = 5 WHERE id = ?", (session.id,)
    )
    assert store.integrity_check().startswith("counters:")


def _schema_pages(db_path: Path) -> set[int]:
    """The pages of the schema table (it outgrows page 1), where SQLite can tell them."""
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        try:
            rows = db.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'").fetchall()
        except sqlite3.OperationalError:  # built without the dbstat table
            return set()
    return {int(row[0]) for row in rows}


def test_damaged_pages_give_store_errors_and_a_one_line_report(db_path: Path) -> None:
    store = SyncStateDb(db_path)
    session = store.create_session(source="cli")
    for index in range(300):
        store.append_message(session.id, NewMessage(role="user", content=f"message {index} " * 20))
    store.close()  # checkpoints the WAL into the main file
    schema = _schema_pages(db_path)
    data = bytearray(db_path.read_bytes())
    page_size = 4096
    assert len(data) > 6 * page_size
    for page in range(2, len(data) // page_size):  # keep page 1 (header) and the schema's pages
        if page + 1 in schema:  # `page` counts from 0, dbstat's pageno from 1
            continue
        start = page * page_size + 100
        data[start : start + 200] = b"\x55" * 200
    db_path.write_bytes(bytes(data))

    damaged = SyncStateDb(db_path)
    try:
        report = damaged.integrity_check()
        assert report.startswith("database: ")
        assert "\n" not in report
        with pytest.raises(StoreError) as caught:
            damaged.get_messages(session.id)
        assert "malformed" in str(caught.value) and "hermes doctor" in str(caught.value)
        assert "\n" not in str(caught.value)
    finally:
        damaged.close()


def test_every_session_operation_is_one_rule_reached_without_a_forwarder() -> None:
    # Adding a storage operation touches the rule, the protocol and a contract test: the
    # tests' synchronous face finds each operation of the protocol on the async rules.
    import inspect

    from hermes.store.api import AsyncSessionStore

    names = [n for n, v in vars(AsyncSessionStore).items() if inspect.iscoroutinefunction(v)]
    assert len(names) > 30
    with open_sync_state() as store:
        for name in names:
            assert getattr(store, name).__qualname__.startswith("SyncCalls"), name
        assert store.count_sessions() == 0
