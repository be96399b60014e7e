"""state.db files written by earlier versions still open and migrate.

(runs.db and response_store.db of earlier versions: tests/store/test_fold_into_state_db.py.)
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from hermes.store.migrations import applied_migrations


def test_a_state_db_before_m006_drops_its_drafts_from_search(tmp_path: Path) -> None:
    """A draft indexed under m003's view stops being searchable; kept, it is found again."""
    from hermes.store.migrations import Migrations, migrate
    from hermes.store.sqlite.schema import STATE_MIGRATIONS
    from hermes.testing.state_db import SyncStateDb

    path = tmp_path / "state.db"
    before_m006 = Migrations("state.db")
    for step in STATE_MIGRATIONS:
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
    with SyncStateDb(path) as store:
        assert "m006_drafts_not_searchable" in store.applied_migrations
        assert [hit.message_id for hit in store.search("zebra")] == [1]
        assert store.integrity_check() == "ok"
        store.end_turn(1, "interrupted")
        assert sorted(hit.message_id for hit in store.search("zebra")) == [1, 2]
        assert store.integrity_check() == "ok"
    assert "m006_drafts_not_searchable" in applied_migrations(sqlite3.connect(path))
