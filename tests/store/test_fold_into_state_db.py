"""A home of an earlier version, with three SQLite files, folds into state.db.

Earlier versions kept `runs.db` (runs, receipts, instance leases) and `response_store.db`
(stored responses, conversation names) beside `state.db`, each with its own schema
history. state.db's migration `m012_runs_and_responses` copies their rows in, and the old
files are then renamed aside (`<name>.folded`). The DDL below is what the earlier code
left in those files (`old_homes`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from old_homes import OLD_RESPONSES_SCHEMA, OLD_RUNS_SCHEMA, RESPONSE_STORE_DB_SCHEMA, RUNS_DB_SCHEMA

from hermes.errors import StoreError
from hermes.store.migrations import Migrations, applied_migrations, migrate
from hermes.store.owner import current_owner
from hermes.store.records import RunRecord
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.store.sqlite.schema import STATE_MIGRATIONS

FOLD = "m012_runs_and_responses"

USAGE = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
DEAD_PID = 999_999_999


def _old_file(path: Path, statements: tuple[str, ...]) -> sqlite3.Connection:
    """The file made as the earlier code made it (WAL), left open: the caller's rows stay
    in its WAL, not yet checkpointed, until it closes."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    for statement in statements:
        db.execute(statement)
    return db


def _state_db_before_the_fold(path: Path) -> str:
    """state.db at the earlier version's schema (every migration before m012), with one
    session and one message written by the session rules; the session's id."""
    before = Migrations("state.db")
    for step in STATE_MIGRATIONS:
        if step.__name__ < FOLD:
            before.migration(step)
    raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    migrate(raw, before)
    # Rows as that schema holds them (today's rules write columns it did not have yet).
    raw.execute(
        "INSERT INTO sessions (id, source, title, started_at, updated_at, message_count) "
        "VALUES ('20250101_000000_aaaaaa', 'cli', 'before the fold', 1, 1, 1)"
    )
    raw.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES ('20250101_000000_aaaaaa', 'user', 'kept', 1)"
    )
    raw.close()
    return "20250101_000000_aaaaaa"


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    yield folder


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


async def test_a_home_with_three_files_folds_into_state_db(home: Path) -> None:
    session_id = _state_db_before_the_fold(home / "state.db")
    me = current_owner()
    runs = _old_file(home / "runs.db", RUNS_DB_SCHEMA)
    runs.execute(
        "INSERT INTO runs (run_id, status, session_id, created_at, updated_at, output, usage, owner_pid, "
        "owner_host, owner_started) VALUES ('run_done', 'completed', ?, 10.0, 20.0, 'Done.', ?, 1, 'h', 's')",
        (session_id, json.dumps(USAGE)),
    )
    runs.execute(
        "INSERT INTO runs (run_id, status, session_id, created_at, updated_at, owner_pid, owner_host, owner_started) "
        "VALUES ('run_dead', 'running', ?, 30.0, 30.0, ?, ?, 'gone')",
        (session_id, DEAD_PID, me.host),
    )
    runs.execute("INSERT INTO receipts VALUES ('scope', 'key-1', 'fp1', 'run_done', 1000.0, 1000.0, NULL, NULL)")
    runs.execute(
        "INSERT INTO receipts VALUES ('chat', 'key-2', 'fp2', 'claim_1', 1000.0, 1000.0, ?, 5000.0)",
        (json.dumps({"id": "chatcmpl-1"}),),
    )
    responses = _old_file(home / "response_store.db", RESPONSE_STORE_DB_SCHEMA)
    for n in (1, 2, 3):
        record = {"response": {"id": f"resp_{n}", "status": "completed", "output": [{"id": f"msg_{n}"}]}}
        responses.execute(
            "INSERT INTO responses VALUES (?, ?, ?, 'completed', 'h', 1, 's')", (f"resp_{n}", json.dumps(record), n)
        )
    responses.execute("INSERT INTO conversations VALUES ('chat', 'resp_3')")
    # Both old files still have their rows in an unmerged WAL while the new version opens.
    try:
        storage = open_sqlite_storage(home, response_store_size=3)
    finally:
        runs.close()
        responses.close()
    try:
        assert not (home / "runs.db").exists() and not (home / "response_store.db").exists()
        assert {"runs.db.folded", "response_store.db.folded"} <= set(_names(home))
        # Sessions: untouched.
        assert [s.title for s in await storage.sessions.list_sessions()] == ["before the fold"]
        assert [m.content for m in await storage.sessions.get_messages(session_id)] == ["kept"]
        # Runs: every column kept.
        done = await storage.runs.get("run_done")
        assert done is not None
        assert (done.status, done.output, done.usage, done.session_id) == ("completed", "Done.", USAGE, session_id)
        assert (await storage.runs.latest_for_session(session_id)).run_id == "run_dead"  # type: ignore[union-attr]
        # Receipts: a retry still finds its run; a stored answer is kept until it expires.
        again = await storage.receipts.claim_receipt("scope", "key-1", "fp-other", "run_new", now=1001.0)
        assert again is not None and again.run_id == "run_done" and again.fingerprint == "fp1"
        answered = await storage.receipts.find_receipt("chat", "key-2", now=4000.0)
        assert answered is not None and answered.answer == {"id": "chatcmpl-1"}
        # Stored responses: records, names, items, and the LRU order continues from the old clock.
        assert await storage.responses.count() == 3
        assert await storage.responses.get_conversation("chat") == "resp_3"
        assert await storage.responses.find_item("msg_2") == {"id": "msg_2"}
        assert (await storage.responses.get("resp_2"))["response"]["id"] == "resp_2"  # type: ignore[index]
        await storage.responses.put("resp_4", {"response": {"id": "resp_4"}})
        assert await storage.responses.get("resp_1") is None  # the oldest was evicted
        assert await storage.responses.get("resp_3") is not None
        # Start-up repair reads the folded rows: the dead owner's run is settled.
        await storage.repair_after_crash()
        dead = await storage.runs.get("run_dead")
        assert dead is not None and dead.status == "interrupted"
    finally:
        await storage.aclose()
    with closing(sqlite3.connect(home / "state.db")) as raw:
        assert FOLD in applied_migrations(raw) and applied_migrations(raw)[-1] == STATE_MIGRATIONS.names[-1]
    # Reopening folds nothing again and keeps everything.
    again_opened = open_sqlite_storage(home)
    try:
        assert await again_opened.runs.get("run_done") is not None
        assert await again_opened.responses.count() == 3
    finally:
        await again_opened.aclose()
    # The renamed files are whole databases (a backup the user may delete).
    with closing(sqlite3.connect(home / "runs.db.folded")) as folded:
        assert folded.execute("SELECT count(*) FROM runs").fetchone() == (2,)


async def test_files_from_before_migrations_were_recorded_fold_too(home: Path) -> None:
    """The earliest files: no ledger, fewer columns, several unsettled runs of a session."""
    runs = _old_file(home / "runs.db", OLD_RUNS_SCHEMA)
    runs.execute(
        "INSERT INTO runs (run_id, status, session_id, created_at, updated_at, output, usage, owner_pid) "
        "VALUES ('run_old', 'completed', 's1', 10.0, 20.0, 'Done.', ?, 1)",
        (json.dumps(USAGE),),
    )
    for n, created in ((1, 30.0), (2, 40.0)):
        runs.execute(
            "INSERT INTO runs (run_id, status, session_id, created_at, updated_at, owner_pid) "
            f"VALUES ('run_live_{n}', 'running', 's2', {created}, {created}, {DEAD_PID})"
        )
    runs.execute("INSERT INTO receipts VALUES ('scope', 'key-1', 'fp1', 'run_old', 1000.0, 1000.0)")
    runs.close()
    responses = _old_file(home / "response_store.db", ())
    responses.executescript(OLD_RESPONSES_SCHEMA)
    for n in (1, 2, 3):
        data = {"n": n, "response": {"status": "in_progress" if n == 2 else "completed"}}
        responses.execute("INSERT INTO responses VALUES (?, ?, ?)", (f"resp_{n}", json.dumps(data), n))
    responses.execute("INSERT INTO conversations VALUES ('chat', 'resp_3')")
    responses.close()

    storage = open_sqlite_storage(home, response_store_size=3)
    try:
        run = await storage.runs.get("run_old")
        assert run is not None
        assert (run.status, run.output, run.usage, run.owner_instance) == ("completed", "Done.", USAGE, None)
        await storage.runs.put(RunRecord("run_new", "running", 50.0, 50.0, owner_instance="i-1"))
        assert (await storage.runs.get("run_new")).owner_instance == "i-1"  # type: ignore[union-attr]
        # Of the two unsettled runs of one session only the newest stays unsettled.
        assert (await storage.runs.get("run_live_1")).status == "interrupted"  # type: ignore[union-attr]
        assert (await storage.runs.get("run_live_2")).status == "running"  # type: ignore[union-attr]
        receipt = await storage.receipts.claim_receipt("scope", "key-1", "fp2", "run_new", now=1001.0)
        assert receipt is not None and receipt.run_id == "run_old"
        # A response's status is read from its JSON, as the old file's own migration did.
        assert [pending.response_id for pending in await storage.responses.in_progress()] == ["resp_2"]  # type: ignore[attr-defined]
        assert await storage.responses.get_conversation("chat") == "resp_3"
        await storage.responses.put("resp_4", {"n": 4})
        assert await storage.responses.get("resp_1") is None
        assert await storage.responses.get("resp_3") == {"n": 3, "response": {"status": "completed"}}
    finally:
        await storage.aclose()


async def test_a_damaged_old_file_fails_the_open_and_changes_nothing(home: Path) -> None:
    session_id = _state_db_before_the_fold(home / "state.db")
    (home / "runs.db").write_bytes(b"this is not a database, just some text " * 200)
    with pytest.raises(StoreError) as caught:
        open_sqlite_storage(home)
    message = str(caught.value)
    assert "runs.db" in message and "\n" not in message
    # Nothing folded, nothing renamed: state.db is still before the fold.
    assert (home / "runs.db").exists() and not (home / "runs.db.folded").exists()
    with closing(sqlite3.connect(home / "state.db")) as raw:
        assert FOLD not in applied_migrations(raw)
        assert raw.execute("SELECT name FROM sqlite_master WHERE name = 'runs'").fetchone() is None
        assert raw.execute("SELECT id FROM sessions").fetchall() == [(session_id,)]


async def test_an_old_file_that_appears_after_the_fold_is_set_aside_unread(home: Path) -> None:
    first = open_sqlite_storage(home)
    await first.aclose()
    runs = _old_file(home / "runs.db", RUNS_DB_SCHEMA)
    runs.execute("INSERT INTO runs (run_id, status, created_at, updated_at) VALUES ('run_late', 'completed', 1, 1)")
    runs.close()
    storage = open_sqlite_storage(home)
    try:
        assert await storage.runs.get("run_late") is None
    finally:
        await storage.aclose()
    assert _names(home).count("runs.db.folded") == 1 and "runs.db" not in _names(home)


async def test_a_home_without_old_files_makes_no_others(home: Path) -> None:
    storage = open_sqlite_storage(home)
    await storage.aclose()
    assert [name for name in _names(home) if not name.startswith("state.db")] == []
