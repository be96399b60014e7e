"""Background WAL flushes: commits stop flushing the WAL, a thread does it instead."""

from __future__ import annotations

import time
from pathlib import Path

from hermes.store.records import NewMessage
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.testing.state_db import SyncStateDb


def _fill(store: SyncStateDb, messages: int) -> None:
    session = store.create_session(source="cli")
    for i in range(messages):
        store.append_message(session.id, NewMessage(role="user", content=f"message {i} " + "x" * 2000))


def _until(condition, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_commits_leave_the_wal_to_the_background_thread(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SyncStateDb(path)
    store.flush_wal_in_background(interval=0.05)
    try:
        assert store.executor.connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        before = path.stat().st_size
        _fill(store, 600)  # about 1.2 MB of pages, past the default 1000-page trigger
        # The pages reach the database file only through the thread's flushes.
        assert _until(lambda: path.stat().st_size > before + 1_000_000), path.stat().st_size
        # The file grows while a flush runs; its count goes up once the flush returns.
        flusher = store._wal_flusher
        assert flusher is not None and _until(lambda: flusher.flushes > 0)
        thread = store._wal_flusher._thread
    finally:
        store.close()
    assert thread is not None and not thread.is_alive()


def test_without_the_thread_commits_do_not_flush(tmp_path: Path) -> None:
    # The control: with the writer's own flushes off and no thread, the file stays small.
    path = tmp_path / "state.db"
    store = SyncStateDb(path)
    try:
        store.executor.connection().execute("PRAGMA wal_autocheckpoint = 0")
        before = path.stat().st_size
        _fill(store, 600)
        assert path.stat().st_size < before + 100_000
    finally:
        store.close()


def test_the_server_storage_flushes_in_the_background(tmp_path: Path) -> None:
    import asyncio

    storage = open_sqlite_storage(tmp_path)
    sync = storage.sessions.state  # type: ignore[attr-defined]
    assert sync.executor.connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    asyncio.run(storage.aclose())
    assert sync._wal_flusher is None  # stopped with the storage


def _wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _hold_old_snapshot(path: Path):  # type: ignore[no-untyped-def]
    """A reader in an open read transaction: the WAL cannot be reused from its start."""
    import sqlite3

    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM messages").fetchall()
    return reader


def test_every_connection_limits_the_journal(tmp_path: Path) -> None:
    from hermes.store.sqlite.file import JOURNAL_SIZE_LIMIT

    store = SyncStateDb(tmp_path / "state.db")
    try:
        limit = store.executor.connection().execute("PRAGMA journal_size_limit").fetchone()[0]
        assert limit == JOURNAL_SIZE_LIMIT == 64 * 1024 * 1024
    finally:
        store.close()


def test_a_wal_past_the_size_is_truncated_once_readers_let_go(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SyncStateDb(path)
    store.flush_wal_in_background(interval=0.05, truncate_at=256 * 1024)
    try:
        _fill(store, 1)
        reader = _hold_old_snapshot(path)
        try:
            _fill(store, 600)  # ~1.2 MB of frames the reader's snapshot keeps in the WAL
            assert _wal_bytes(path) > 1_000_000
        finally:
            reader.close()
        flusher = store._wal_flusher
        assert flusher is not None
        assert _until(lambda: _wal_bytes(path) == 0, timeout=30), _wal_bytes(path)
        assert _until(lambda: flusher.truncations >= 1)
        # Writes go on after the cut, and the data is all there.
        _fill(store, 3)
        assert store.stats().messages == 604
    finally:
        store.close()


def test_below_the_size_the_wal_is_not_truncated(tmp_path: Path) -> None:
    # The control: the same writes with a threshold above them leave the WAL file its size.
    path = tmp_path / "state.db"
    store = SyncStateDb(path)
    store.flush_wal_in_background(interval=0.05, truncate_at=64 * 1024 * 1024)
    try:
        _fill(store, 1)
        reader = _hold_old_snapshot(path)
        try:
            _fill(store, 600)
        finally:
            reader.close()
        flushes = store._wal_flusher.flushes if store._wal_flusher else 0
        assert _until(lambda: store._wal_flusher is not None and store._wal_flusher.flushes >= flushes + 5)
        assert _wal_bytes(path) > 1_000_000
        assert store._wal_flusher is not None and store._wal_flusher.truncations == 0
    finally:
        store.close()
