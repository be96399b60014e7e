"""Sessions on SQLite only: the activity index and the FTS rows of a deleted session.

The rules on both backends are in tests/storage_contract/test_store_sessions_contract.py."""

from __future__ import annotations

from hermes.store.records import NewMessage
from hermes.testing.state_db import SyncStateDb


def test_listing_uses_the_activity_index(store: SyncStateDb) -> None:
    db = store.executor.connection()
    for where, params in (("", ()), ("WHERE source = ?", ("cli",))):
        plan = " ".join(
            row[3]
            for row in db.execute(
                f"EXPLAIN QUERY PLAN SELECT * FROM sessions {where} "
                "ORDER BY updated_at DESC, rowid DESC LIMIT 50",
                params,
            )
        )
        assert "TEMP B-TREE" not in plan
        assert "sessions_" in plan


def fts_rows(store: SyncStateDb, word: str) -> int:
    store.index_pending()  # new messages reach the index in batches (`fts_batches`)
    return int(
        store.executor.connection()
        .execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,))
        .fetchone()[0]
    )


def test_delete_removes_messages_and_search_rows(store: SyncStateDb) -> None:
    doomed = store.create_session(source="cli")
    kept = store.create_session(source="cli")
    store.append_message(doomed.id, NewMessage(role="user", content="platypus doomed"))
    store.append_message(
        doomed.id, NewMessage(role="user", content=[{"type": "text", "text": "platypus parts"}])
    )
    store.append_message(kept.id, NewMessage(role="user", content="platypus kept"))
    assert fts_rows(store, "platypus") == 3

    store.delete_session(doomed.id)
    assert store.find_session(doomed.id) is None
    assert fts_rows(store, "platypus") == 1
    assert fts_rows(store, "doomed") == 0
    db = store.executor.connection()
    assert db.execute(
        "SELECT count(*) FROM messages WHERE session_id = ?", (doomed.id,)
    ).fetchone()[0] == 0
    assert [hit.session.id for hit in store.search("platypus")] == [kept.id]
    assert store.get_messages(kept.id)[0].content == "platypus kept"
    assert store.integrity_check() == "ok"
