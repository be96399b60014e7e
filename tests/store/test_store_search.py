"""Full-text search on SQLite only: the FTS5 query, the rank window, snippet cost.

The rules on both backends are in tests/storage_contract/test_store_search_contract.py."""

from __future__ import annotations

from typing import Any

import pytest

import hermes.store.sqlite.dialect as sqlite_dialect
from hermes.store.records import NewMessage
from hermes.store.sqlite.dialect import fts_query
from hermes.testing.state_db import SyncStateDb


def add(store: SyncStateDb, session_id: str, content: Any, role: str = "user") -> int:
    return store.append_message(session_id, NewMessage(role=role, content=content)).id


def test_fts_query_quotes_every_word() -> None:
    assert fts_query("") == ""
    assert fts_query("hello world") == '"hello" AND "world"*'
    assert fts_query("hello world ") == '"hello" AND "world"'
    assert fts_query('say "hi" AND bye') == '"say" AND """hi""" AND "AND" AND "bye"*'
    assert fts_query("* - ()") == ""


def test_ranking_is_bounded_to_the_newest_matches(
    store: SyncStateDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_dialect, "RANK_WINDOW", 3)
    session = store.create_session(source="cli")
    other = store.create_session(source="tui")
    best_but_old = add(store, session.id, "otter otter otter otter")
    newer = [add(store, session.id, f"otter and some other words {i}") for i in range(3)]
    tui_old = add(store, other.id, "otter")
    add(store, session.id, "otter in cli again")
    hits = store.search("otter")
    assert best_but_old not in {hit.message_id for hit in hits}
    assert len(hits) == 3
    # With a source filter the window counts only that source's matches.
    assert [hit.message_id for hit in store.search("otter", source="tui")] == [tui_old]
    monkeypatch.setattr(sqlite_dialect, "RANK_WINDOW", 100)
    assert store.search("otter")[0].message_id == best_but_old
    assert newer[0] in {hit.message_id for hit in store.search("otter")}


def test_search_reads_snippets_only_for_returned_rows(store: SyncStateDb) -> None:
    db = store.executor.connection()
    plan = " ".join(
        row[3]
        for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT messages_fts.rowid, "
            "snippet(messages_fts, 0, '>', '<', '', 8), s.id FROM messages_fts "
            "JOIN messages AS m ON m.id = messages_fts.rowid "
            "JOIN sessions AS s ON s.id = m.session_id "
            "WHERE messages_fts MATCH ? AND messages_fts.rowid >= ? AND s.source = ? "
            "ORDER BY messages_fts.rank LIMIT 20",
            ("x", 0, "cli"),
        )
    )
    assert plan.startswith("SCAN messages_fts")
    assert "TEMP B-TREE" not in plan
