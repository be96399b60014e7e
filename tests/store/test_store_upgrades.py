"""Files written before response_store.db and runs.db recorded migrations still open.

The DDL below is what the earlier code ran on every open (`CREATE … IF NOT EXISTS`, no
`_migrations` table), copied verbatim; it must never change.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from hermes.store.migrations import applied_migrations
from hermes.store.sqlite.responses import RESPONSE_MIGRATIONS, ResponseStore
from hermes.store.sqlite.runs import RUN_MIGRATIONS, RunStore

OLD_RESPONSES_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    response_id TEXT PRIMARY KEY,
    data        TEXT NOT NULL,
    accessed_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_accessed ON responses(accessed_at);
CREATE TABLE IF NOT EXISTS conversations (
    name        TEXT PRIMARY KEY,
    response_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_response ON conversations(response_id);
"""

OLD_RUNS_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        session_id TEXT,
        model TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        last_event TEXT,
        output TEXT,
        usage TEXT,
        error TEXT,
        error_code TEXT,
        owner_pid INTEGER
    )
    """,
    "CREATE INDEX IF NOT EXISTS runs_status ON runs(status)",
    "CREATE INDEX IF NOT EXISTS runs_updated_at ON runs(updated_at)",
    """
    CREATE TABLE IF NOT EXISTS receipts (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        run_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (scope, key)
    )
    """,
    "CREATE INDEX IF NOT EXISTS receipts_updated_at ON receipts(updated_at)",
)


def schema_of(path: Path) -> set[tuple[str, str]]:
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name != '_migrations'"
        ).fetchall()
    return {(kind, name) for kind, name in rows}


def test_an_old_response_store_upgrades_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "response_store.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as old:
        old.execute("PRAGMA journal_mode=WAL")
        old.executescript(OLD_RESPONSES_SCHEMA)
        for n in (1, 2, 3):
            old.execute(
                "INSERT INTO responses VALUES (?, ?, ?)", (f"resp_{n}", json.dumps({"n": n}), n)
            )
        old.execute("INSERT INTO conversations VALUES ('chat', 'resp_3')")
    old_schema = schema_of(path)

    store = ResponseStore(path, max_size=3)
    try:
        assert store.applied_migrations == RESPONSE_MIGRATIONS.names == ["m001_responses", "m002_status_and_owner"]
        # m002 adds only the in_progress index (and columns) to the adopted schema.
        assert schema_of(path) == old_schema | {("index", "responses_in_progress")}
        assert len(store) == 3
        assert store.get("resp_2") == {"n": 2}
        assert store.get_conversation("chat") == "resp_3"
        # The LRU clock continues from the old rows: resp_1 is still the oldest.
        store.put("resp_4", {"n": 4})
        assert store.get("resp_1") is None
        assert store.get("resp_3") == {"n": 3}
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as raw:
        assert applied_migrations(raw) == ["m001_responses", "m002_status_and_owner"]

    again = ResponseStore(path, max_size=3)
    try:
        assert again.applied_migrations == []
        assert again.get("resp_4") == {"n": 4}
    finally:
        again.close()


def test_an_old_run_store_upgrades_and_keeps_runs_and_receipts(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as old:
        old.execute("PRAGMA journal_mode=WAL")
        for statement in OLD_RUNS_SCHEMA:
            old.execute(statement)
        old.execute(
            "INSERT INTO runs (run_id, status, session_id, created_at, updated_at, output, usage, owner_pid) "
            "VALUES ('run_old', 'completed', 's1', 10.0, 20.0, 'Done.', ?, 1)",
            (json.dumps({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}),),
        )
        old.execute(
            "INSERT INTO receipts VALUES ('scope', 'key-1', 'fp1', 'run_old', 1000.0, 1000.0)"
        )
    old_schema = schema_of(path)

    store = RunStore(path)
    try:
        assert store.applied_migrations == RUN_MIGRATIONS.names
        assert RUN_MIGRATIONS.names[:5] == [
            "m001_runs_and_receipts",
            "m002_owner_identity",
            "m003_run_owner_instances",
            "m004_receipt_answers",
            "m005_one_unsettled_run_per_session",
        ]
        # m001 adopts the old tables as they are; m002 adds columns; m003 adds the lease
        # objects; m004 the receipts' answer columns and index; m005 the one-unsettled-run index.
        assert schema_of(path) == old_schema | {
            ("index", "runs_owner_instance"),
            ("table", "instances"),
            ("index", "receipts_run"),
            ("index", "runs_one_unsettled_per_session"),
        }
        run = store.get("run_old")
        assert run is not None
        assert (run.status, run.output, run.usage) == (
            "completed",
            "Done.",
            {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        )
        receipt = store.claim_receipt("scope", "key-1", "fp2", "run_new", now=1001.0)
        assert receipt is not None and receipt.run_id == "run_old"
    finally:
        store.close()

    again = RunStore(path)
    try:
        assert again.applied_migrations == []
        assert again.get("run_old") is not None
    finally:
        again.close()


def test_a_state_db_before_m006_drops_its_drafts_from_search(tmp_path: Path) -> None:
    """A draft indexed under m003's view stops being searchable; kept, it is found again."""
    from hermes.store.migrations import Migrations, migrate
    from hermes.store.sqlite.session_schema import SESSION_MIGRATIONS
    from hermes.store.sqlite.sessions import SqliteSessionStore

    path = tmp_path / "state.db"
    before_m006 = Migrations("state.db")
    for step in SESSION_MIGRATIONS:
        if step.__name__ < "m006":
            before_m006.migration(step)
    with closing(sqlite3.connect(path, isolation_level=None)) as raw:
        migrate(raw, before_m006)
        raw.execute(
            "INSERT INTO sessions (id, source, started_at, updated_at, message_count) VALUES ('s', 'cli', 1, 1, 2)"
        )
        raw.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'user', 'zebra one', 1)")
        raw.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, draft) "
            "VALUES ('s', 'assistant', 'zebra two', 1, 1)"
        )
        raw.execute(
            "INSERT INTO turns (session_id, after_message_id, draft_message_id, started_at, owner_host, owner_pid, "
            "owner_started) VALUES ('s', 0, 2, 1, 'h', 1, '')"
        )
        assert raw.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'zebra'").fetchone() == (2,)
    with SqliteSessionStore(path) as store:
        assert "m006_drafts_not_searchable" in store.applied_migrations
        assert [hit.message_id for hit in store.search("zebra")] == [1]
        assert store.integrity_check() == "ok"
        store.end_turn(1, "interrupted")
        assert sorted(hit.message_id for hit in store.search("zebra")) == [1, 2]
        assert store.integrity_check() == "ok"
    assert "m006_drafts_not_searchable" in applied_migrations(sqlite3.connect(path))
