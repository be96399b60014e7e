"""Sessions: create, read, list by activity, rename, update, end, usage, delete."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from hermes.errors import SessionNotFound, StoreError
from hermes.store.records import NewMessage, SessionRecord
from hermes.store.sqlite.sessions import SqliteSessionStore


def test_create_and_get(store: SqliteSessionStore) -> None:
    created = store.create_session(
        source="tui", model="gpt-x", title="  My   chat ", system_prompt="be brief"
    )
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", created.id)
    assert created.title == "My chat"
    assert created.message_count == created.tool_call_count == 0
    assert created.input_tokens == created.output_tokens == 0
    assert created.ended_at is None and created.end_reason is None
    assert created.started_at == created.updated_at
    assert store.get_session(created.id) == created
    assert store.find_session(created.id) == created
    assert created.to_json()["object"] == "session"


def test_ids_are_unique(store: SqliteSessionStore) -> None:
    ids = {store.create_session(source="cli").id for _ in range(200)}
    assert len(ids) == 200


def test_explicit_id_and_duplicate(store: SqliteSessionStore) -> None:
    store.create_session(source="api_server", session_id="api-abc")
    assert store.get_session("api-abc").source == "api_server"
    with pytest.raises(StoreError, match="already exists"):
        store.create_session(source="cli", session_id="api-abc")
    assert store.count_sessions() == 1


def test_create_with_unknown_parent(store: SqliteSessionStore) -> None:
    with pytest.raises(SessionNotFound):
        store.create_session(source="cli", parent_session_id="nope")
    assert store.count_sessions() == 0


def test_unknown_ids(store: SqliteSessionStore) -> None:
    assert store.find_session("nope") is None
    calls: list[Callable[[], Any]] = [
        lambda: store.get_session("nope"),
        lambda: store.rename_session("nope", "x"),
        lambda: store.update_session("nope", model="m"),
        lambda: store.end_session("nope", "completed"),
        lambda: store.add_usage("nope", input_tokens=1, output_tokens=1),
        lambda: store.delete_session("nope"),
        lambda: store.append_message("nope", NewMessage(role="user", content="x")),
        lambda: store.get_messages("nope"),
        lambda: store.history("nope"),
        lambda: store.fork_session("nope"),
    ]
    for call in calls:
        with pytest.raises(SessionNotFound) as caught:
            call()
        assert caught.value.session_id == "nope"


def ids(sessions: list[SessionRecord]) -> list[str]:
    return [session.id for session in sessions]


def test_list_newest_activity_first(store: SqliteSessionStore) -> None:
    a = store.create_session(source="cli", title="a")
    b = store.create_session(source="cli", title="b")
    c = store.create_session(source="cli", title="c")
    assert ids(store.list_sessions()) == [c.id, b.id, a.id]

    store.append_message(a.id, NewMessage(role="user", content="bump"))
    assert ids(store.list_sessions()) == [a.id, c.id, b.id]
    store.rename_session(b.id, "b2")
    assert ids(store.list_sessions()) == [b.id, a.id, c.id]
    store.end_session(c.id, "completed")
    assert ids(store.list_sessions()) == [c.id, b.id, a.id]
    assert store.latest_session() == store.get_session(c.id)


def test_list_paging_and_count(store: SqliteSessionStore) -> None:
    created = [store.create_session(source="cli", title=str(i)) for i in range(7)]
    newest_first = ids(list(reversed(created)))
    assert ids(store.list_sessions(limit=3)) == newest_first[:3]
    assert ids(store.list_sessions(limit=3, offset=3)) == newest_first[3:6]
    assert ids(store.list_sessions(limit=3, offset=6)) == newest_first[6:]
    assert store.list_sessions(limit=3, offset=7) == []
    assert store.list_sessions(limit=0) == []
    assert store.count_sessions() == 7


def test_source_filter(store: SqliteSessionStore) -> None:
    cli = [store.create_session(source="cli") for _ in range(3)]
    api = [store.create_session(source="api_server") for _ in range(2)]
    assert ids(store.list_sessions(source="api_server")) == [api[1].id, api[0].id]
    assert ids(store.list_sessions(source="cli", limit=2)) == [cli[2].id, cli[1].id]
    assert store.count_sessions(source="cli") == 3
    assert store.count_sessions(source="api_server") == 2
    assert store.count_sessions(source="tui") == 0
    assert store.latest_session(source="cli") == store.get_session(cli[2].id)
    assert store.latest_session(source="tui") is None


def test_listing_uses_the_activity_index(store: SqliteSessionStore) -> None:
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


def test_rename(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli", title="old")
    renamed = store.rename_session(session.id, "new title")
    assert renamed.title == "new title"
    assert renamed.updated_at > session.updated_at
    assert store.get_session(session.id).title == "new title"
    assert store.rename_session(session.id, "   ").title is None


def test_update_session_changes_only_given_fields(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli", model="m1", system_prompt="p1")
    assert store.update_session(session.id, model="m2").system_prompt == "p1"
    updated = store.update_session(session.id, system_prompt="p2")
    assert (updated.model, updated.system_prompt) == ("m2", "p2")
    assert store.update_session(session.id) == updated


def test_end_session_first_reason_wins(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    store.end_session(session.id, "interrupted")
    ended = store.get_session(session.id)
    assert ended.end_reason == "interrupted"
    assert ended.ended_at is not None and ended.ended_at >= session.started_at
    store.end_session(session.id, "completed")
    assert store.get_session(session.id) == ended


def test_add_usage_accumulates(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    store.add_usage(session.id, input_tokens=100, output_tokens=20)
    store.add_usage(session.id, input_tokens=50, output_tokens=5)
    record = store.get_session(session.id)
    assert (record.input_tokens, record.output_tokens) == (150, 25)


def fts_rows(store: SqliteSessionStore, word: str) -> int:
    return int(
        store.executor.connection()
        .execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,))
        .fetchone()[0]
    )


def test_delete_removes_messages_and_search_rows(store: SqliteSessionStore) -> None:
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


def test_delete_keeps_children_and_clears_their_parent(store: SqliteSessionStore) -> None:
    parent = store.create_session(source="cli", title="p")
    store.append_message(parent.id, NewMessage(role="user", content="hi"))
    child = store.fork_session(parent.id)
    other = store.create_session(source="cli", parent_session_id=parent.id)
    store.delete_session(parent.id)
    for session_id in (child.id, other.id):
        survivor = store.get_session(session_id)
        assert survivor.parent_session_id is None
    assert [m.content for m in store.get_messages(child.id)] == ["hi"]


def test_stats(store: SqliteSessionStore) -> None:
    a = store.create_session(source="cli")
    b = store.create_session(source="api_server")
    store.create_session(source="api_server")
    store.append_message(a.id, NewMessage(role="user", content="x"))
    store.append_message(
        b.id,
        NewMessage(
            role="assistant",
            tool_calls=[
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        ),
    )
    store.add_usage(a.id, input_tokens=10, output_tokens=3)
    stats = store.stats()
    assert (stats.sessions, stats.messages, stats.tool_calls) == (3, 2, 2)
    assert (stats.input_tokens, stats.output_tokens) == (10, 3)
    assert stats.by_source == {"api_server": 2, "cli": 1}
    assert stats.db_bytes > 0


def test_stats_of_an_empty_store(store: SqliteSessionStore) -> None:
    stats = store.stats()
    assert (stats.sessions, stats.messages, stats.tool_calls, stats.by_source) == (0, 0, 0, {})
