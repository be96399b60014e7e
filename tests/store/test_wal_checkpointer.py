"""Background WAL checkpoints: commits stop checkpointing, a thread does it instead."""

from __future__ import annotations

import time
from pathlib import Path

from hermes.store.records import NewMessage
from hermes.store.sqlite.sessions import SqliteSessionStore
from hermes.store.sqlite.storage import open_sqlite_storage


def _fill(store: SqliteSessionStore, messages: int) -> None:
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
    store = SqliteSessionStore(path)
    store.checkpoint_in_background(interval=0.05)
    try:
        assert store.executor.connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        before = path.stat().st_size
        _fill(store, 600)  # about 1.2 MB of pages, past the default 1000-page trigger
        # The pages reach the database file only through the thread's checkpoints.
        assert _until(lambda: path.stat().st_size > before + 1_000_000), path.stat().st_size
        assert store._checkpointer is not None and store._checkpointer.checkpoints > 0
        thread = store._checkpointer._thread
    finally:
        store.close()
    assert thread is not None and not thread.is_alive()


def test_without_the_thread_commits_do_not_checkpoint(tmp_path: Path) -> None:
    # The control: with the writer's own checkpoints off and no thread, the file stays small.
    path = tmp_path / "state.db"
    store = SqliteSessionStore(path)
    try:
        store.executor.connection().execute("PRAGMA wal_autocheckpoint = 0")
        before = path.stat().st_size
        _fill(store, 600)
        assert path.stat().st_size < before + 100_000
    finally:
        store.close()


def test_the_server_storage_checkpoints_in_the_background(tmp_path: Path) -> None:
    import asyncio

    storage = open_sqlite_storage(tmp_path)
    sync = storage.sessions.sync  # type: ignore[attr-defined]
    assert sync.executor.connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    asyncio.run(storage.aclose())
    assert sync._checkpointer is None  # stopped with the storage
