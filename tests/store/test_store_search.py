"""Full-text search: snippets, ranking, hostile queries, source filter."""

from __future__ import annotations

from typing import Any

import pytest

import hermes.store.sqlite.dialect as sqlite_dialect
from hermes.store.records import NewMessage
from hermes.store.sqlite.dialect import fts_query
from hermes.store.sqlite.sessions import SqliteSessionStore

HOSTILE = [
    'foo"bar', '"', '""', '"unterminated', "AND", "OR", "NOT", "NEAR", "a AND", "AND OR NOT",
    "NEAR(a b)", "-x", "x -y", "*", "**", "foo*", "*foo", "(", ")", "(foo", "foo)", "((()))",
    "^", "^foo", "body:foo", "body : foo", ":", "{body}: x", "+", "a + b", "foo'bar", "\\",
    "%", "_", "\x00", "\t\n", "日本語のテキスト", "émoji 🎉", "🎉", "naïve café",
    "x" * 5000, "SELECT * FROM sessions; --", "NOT foo", "foo NOT", "OR foo OR",
]  # fmt: skip


def add(store: SqliteSessionStore, session_id: str, content: Any, role: str = "user") -> int:
    return store.append_message(session_id, NewMessage(role=role, content=content)).id


def test_snippet_marks_the_match(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli", title="infra")
    message_id = add(store, session.id, "How do I restart the docker compose stack cleanly?")
    (hit,) = store.search("docker")
    assert hit.message_id == message_id
    assert hit.role == "user"
    assert hit.session == store.get_session(session.id)
    assert ">>>docker<<<" in hit.snippet
    assert hit.snippet.count(">>>") == 1
    assert hit.to_json()["object"] == "search_hit"


def test_long_content_gets_a_short_snippet(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    add(store, session.id, "filler " * 300 + "needle " + "filler " * 300)
    (hit,) = store.search("needle")
    assert ">>>needle<<<" in hit.snippet
    assert "…" in hit.snippet
    assert len(hit.snippet) < 200


def test_best_match_first(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    weak = add(store, session.id, "kubernetes " + "lorem ipsum dolor sit amet " * 40)
    strong = add(store, session.id, "kubernetes kubernetes kubernetes cluster")
    medium = add(store, session.id, "kubernetes cluster " + "lorem ipsum " * 5)
    assert [hit.message_id for hit in store.search("kubernetes")] == [strong, medium, weak]


def test_all_words_are_required_and_the_last_is_a_prefix(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    both = add(store, session.id, "python asyncio tutorial")
    add(store, session.id, "python packaging")
    prefix = add(store, session.id, "configure the pytest plugin")
    assert [hit.message_id for hit in store.search("asyncio python")] == [both]
    assert [hit.message_id for hit in store.search("pyte")] == [prefix]
    assert store.search("pyte ") == []  # trailing space: a whole word
    assert {hit.message_id for hit in store.search("pyth")} == {both}.union(
        {hit.message_id for hit in store.search("python")}
    )


def test_stemming_and_diacritics(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    running = add(store, session.id, "the tests were running slowly")
    cafe = add(store, session.id, "meet at the Café Zoë")
    assert [hit.message_id for hit in store.search("run ")] == [running]
    assert [hit.message_id for hit in store.search("cafe zoe")] == [cafe]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(store: SqliteSessionStore, query: str) -> None:
    session = store.create_session(source="cli")
    add(store, session.id, 'foo bar AND OR NOT near body x y a b 日本語のテキスト café "quoted"')
    hits = store.search(query)
    assert isinstance(hits, list)


@pytest.mark.parametrize(
    ("query", "expected"),
    [("AND", 1), ("NOT foo", 1), ("foo\"bar", 1), ("(foo)", 1), ("-foo", 1), ("NEAR", 0),
     ("OR foo", 1), ("日本語のテキスト", 1), ("naïve", 1)],
)  # fmt: skip
def test_operators_are_searched_as_words(
    store: SqliteSessionStore, query: str, expected: int
) -> None:
    session = store.create_session(source="cli")
    add(store, session.id, "foo bar AND or NOT 日本語のテキスト naive")
    assert len(store.search(query)) == expected


def test_empty_and_punctuation_only_queries_return_nothing(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    add(store, session.id, "something")
    for query in ("", "   ", "*", '""', "()", "-", "🎉"):
        assert store.search(query) == []
    assert store.search("something", limit=0) == []


def test_fts_query_quotes_every_word() -> None:
    assert fts_query("") == ""
    assert fts_query("hello world") == '"hello" AND "world"*'
    assert fts_query("hello world ") == '"hello" AND "world"'
    assert fts_query('say "hi" AND bye') == '"say" AND """hi""" AND "AND" AND "bye"*'
    assert fts_query("* - ()") == ""


def test_source_filter_and_limit(store: SqliteSessionStore) -> None:
    cli = store.create_session(source="cli")
    api = store.create_session(source="api_server")
    for index in range(5):
        add(store, cli.id, f"deploy step {index}")
        add(store, api.id, f"deploy via api {index}")
    assert {hit.session.source for hit in store.search("deploy", source="api_server")} == {
        "api_server"
    }
    assert len(store.search("deploy", source="api_server")) == 5
    assert len(store.search("deploy", source="cli", limit=2)) == 2
    assert len(store.search("deploy")) == 10
    assert store.search("deploy", source="tui") == []


def test_content_parts_are_searchable_by_their_text_only(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    message_id = add(
        store,
        session.id,
        [
            {"type": "text", "text": "describe this giraffe"},
            {"type": "image_url", "image_url": {"url": "https://example.com/zebra.png"}},
        ],
    )
    assert [hit.message_id for hit in store.search("giraffe")] == [message_id]
    assert store.search("zebra") == []
    assert store.search("image_url") == []


def test_tool_output_is_indexed_up_to_a_prefix(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    add(store, session.id, "early marker " + "x " * 5000 + "late marker", role="tool")
    assert len(store.search("early")) == 1
    assert store.search("late") == []


def test_assistant_and_tool_roles_are_reported(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    add(store, session.id, "answer about walrus", role="assistant")
    add(store, session.id, "walrus.txt", role="tool")
    assert sorted(hit.role for hit in store.search("walrus")) == ["assistant", "tool"]


def test_ranking_is_bounded_to_the_newest_matches(
    store: SqliteSessionStore, monkeypatch: pytest.MonkeyPatch
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


def test_search_reads_snippets_only_for_returned_rows(store: SqliteSessionStore) -> None:
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
