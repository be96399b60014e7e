"""The one opener of private SQLite files, as state.db uses it.

Each test runs once per kind of record state.db holds (sessions, stored responses, runs),
each written through its real rules.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import StoreError
from hermes.store.migrations import applied_migrations
from hermes.store.records import NewMessage, RunRecord
from hermes.store.rules.responses import Responses
from hermes.store.rules.runs import Runs
from hermes.store.sqlite import file as sqlite_file
from hermes.store.sqlite.executor import run_now
from hermes.store.sqlite.schema import STATE_MIGRATIONS
from hermes.testing.state_db import SyncStateDb


def _write_session(store: Any) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="hi"))


def _write_response(store: Any) -> None:
    run_now(Responses(store.executor, store.dialect).put("resp_1", {"response": {"id": "resp_1"}}))


def _write_run(store: Any) -> None:
    run = RunRecord(run_id="run_1", status="running", created_at=1.0, updated_at=1.0)
    run_now(Runs(store.executor, store.dialect).put(run))


STATE = "state.db"
STORES = {
    "sessions": (SyncStateDb, _write_session, STATE_MIGRATIONS.names),
    "responses": (SyncStateDb, _write_response, STATE_MIGRATIONS.names),
    "runs": (SyncStateDb, _write_run, STATE_MIGRATIONS.names),
}


@pytest.fixture(params=sorted(STORES))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opened(kind: str) -> Iterator[Callable[[Path], Any]]:
    made: list[Any] = []

    def open_store(path: Path) -> Any:
        store = STORES[kind][0](path)
        made.append(store)
        return store

    yield open_store
    for store in made:
        store.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_and_sidecars_are_private_with_a_permissive_umask(
    kind: str, opened: Callable[[Path], Any], tmp_path: Path
) -> None:
    path = tmp_path / "home" / STATE
    old = os.umask(0)
    try:
        store = opened(path)
        STORES[kind][1](store)
    finally:
        os.umask(old)
    assert mode(path.parent) == 0o700
    assert mode(path) == 0o600
    for suffix in ("-wal", "-shm"):
        sidecar = path.with_name(path.name + suffix)
        assert sidecar.exists()
        assert mode(sidecar) == 0o600


def test_the_file_is_private_before_sqlite_first_opens_it(
    kind: str, opened: Callable[[Path], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / STATE
    seen: list[int] = []
    real_connect = sqlite3.connect

    def connect(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        seen.append(mode(Path(database)))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite_file.sqlite3, "connect", connect)
    old = os.umask(0)
    try:
        opened(path)
    finally:
        os.umask(old)
    assert seen == [0o600]


def test_a_restrictive_umask_still_gives_an_owner_readable_file(
    kind: str, opened: Callable[[Path], Any], tmp_path: Path
) -> None:
    path = tmp_path / "home" / STATE
    old = os.umask(0o277)
    try:
        store = opened(path)
        STORES[kind][1](store)
    finally:
        os.umask(old)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_an_existing_file_keeps_its_mode_and_loose_sidecars_are_tightened(
    kind: str, opened: Callable[[Path], Any], tmp_path: Path
) -> None:
    path = tmp_path / STATE
    first = opened(path)
    STORES[kind][1](first)  # keeps the WAL alive while the second store opens
    path.chmod(0o640)
    wal = path.with_name(path.name + "-wal")
    wal.chmod(0o644)
    opened(path)
    assert mode(path) == 0o640  # left to the user; `hermes doctor` reports it
    assert mode(wal) == 0o600


def test_pragmas_and_recorded_migrations(kind: str, opened: Callable[[Path], Any], tmp_path: Path) -> None:
    path = tmp_path / STATE
    store = opened(path)
    assert store.applied_migrations == STORES[kind][2]
    with closing(sqlite3.connect(path)) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert applied_migrations(raw) == STORES[kind][2]
    opened_db = sqlite_file.open_sqlite_file(path, STATE_MIGRATIONS, what="test database")
    try:
        db = opened_db.connection
        assert opened_db.applied_migrations == []
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == sqlite_file.BUSY_TIMEOUT_MS
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert db.isolation_level is None
    finally:
        opened_db.connection.close()


def test_reopening_applies_nothing_and_keeps_data(kind: str, opened: Callable[[Path], Any], tmp_path: Path) -> None:
    path = tmp_path / STATE
    first = opened(path)
    STORES[kind][1](first)
    first.close()
    again = opened(path)
    assert again.applied_migrations == []


def test_a_file_that_is_not_a_database_is_a_one_line_store_error(
    kind: str, opened: Callable[[Path], Any], tmp_path: Path
) -> None:
    path = tmp_path / STATE
    path.write_bytes(b"this is not a database, just some text " * 200)
    with pytest.raises(StoreError) as caught:
        opened(path)
    message = str(caught.value)
    assert str(path) in message and "\n" not in message
    assert "hermes doctor" in message


def test_a_folder_that_cannot_be_created_is_a_store_error(
    kind: str, opened: Callable[[Path], Any], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create"):
        opened(blocker / "sub" / STATE)


def test_memory_databases_are_migrated_and_touch_no_file(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = STORES[kind][0](":memory:")
    try:
        STORES[kind][1](store)
        assert store.applied_migrations == STORES[kind][2]
    finally:
        store.close()
    assert list(tmp_path.iterdir()) == []
