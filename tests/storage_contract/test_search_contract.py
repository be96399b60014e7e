"""Full-text search behaves alike on both backends: FTS5 on SQLite, tsvector on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from hermes.store.api import Storage
from hermes.store.records import NewMessage

HOSTILE = [
    'foo"bar', '"', '""', '"unterminated', "AND", "OR", "NOT", "NEAR", "a AND", "NEAR(a b)", "-x",
    "x -y", "*", "**", "foo*", "*foo", "(", ")", "((()))", "^foo", "body:foo", ":", "{body}: x",
    "a + b", "foo'bar", "\\", "%", "_", "\x00", "a\x00b", "\t\n", "日本語のテキスト", "émoji 🎉",
    "naïve café", "x" * 5000, "SELECT * FROM sessions; --", "foo & bar | !baz", "a <-> b", "x:*",
    "'quoted'", "foo:A", "!!", "$$", "E'\\x00'",
]  # fmt: skip


async def add(storage: Storage, session_id: str, content: Any, role: str = "user") -> int:
    return (await storage.sessions.append_message(session_id, NewMessage(role=role, content=content))).id


async def test_snippet_marks_the_match(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli", title="infra")
    message_id = await add(storage, session.id, "How do I restart the docker compose stack cleanly?")
    (hit,) = await storage.sessions.search("docker")
    assert hit.message_id == message_id and hit.role == "user"
    assert hit.session == await storage.sessions.get_session(session.id)
    assert ">>>docker<<<" in hit.snippet and hit.snippet.count(">>>") == 1


async def test_long_content_gets_a_short_snippet(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    await add(storage, session.id, "filler " * 300 + "needle " + "filler " * 300)
    (hit,) = await storage.sessions.search("needle")
    assert ">>>needle<<<" in hit.snippet
    assert "…" in hit.snippet
    assert len(hit.snippet) < 200


async def test_best_match_first(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    weak = await add(storage, session.id, "kubernetes " + "lorem ipsum dolor sit amet " * 40)
    strong = await add(storage, session.id, "kubernetes kubernetes kubernetes cluster")
    medium = await add(storage, session.id, "kubernetes cluster " + "lorem ipsum " * 5)
    assert [hit.message_id for hit in await storage.sessions.search("kubernetes")] == [strong, medium, weak]


async def test_all_words_are_required_and_the_last_is_a_prefix(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    both = await add(storage, session.id, "python asyncio tutorial")
    await add(storage, session.id, "python packaging")
    prefix = await add(storage, session.id, "configure the pytest plugin")
    search = storage.sessions.search
    assert [hit.message_id for hit in await search("asyncio python")] == [both]
    assert [hit.message_id for hit in await search("pyte")] == [prefix]
    assert await search("pyte ") == []
    assert len(await search("pyth")) == 2


async def test_stemming_and_diacritics(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    running = await add(storage, session.id, "the tests were running slowly")
    cafe = await add(storage, session.id, "meet at the Café Zoë")
    assert [hit.message_id for hit in await storage.sessions.search("run ")] == [running]
    assert [hit.message_id for hit in await storage.sessions.search("cafe zoe")] == [cafe]
    assert [hit.message_id for hit in await storage.sessions.search("café")] == [cafe]


async def test_hostile_queries_never_raise(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    await add(storage, session.id, 'foo bar AND OR NOT near body x y a b 日本語のテキスト café "quoted"')
    for query in HOSTILE:
        assert isinstance(await storage.sessions.search(query), list), query


@pytest.mark.parametrize(
    ("query", "expected"),
    [("AND", 1), ("NOT foo", 1), ('foo"bar', 1), ("(foo)", 1), ("-foo", 1), ("NEAR", 0),
     ("OR foo", 1), ("日本語のテキスト", 1), ("naïve", 1), ("the", 1)],
)  # fmt: skip
async def test_operators_and_stop_words_are_searched_as_words(storage: Storage, query: str, expected: int) -> None:
    session = await storage.sessions.create_session(source="cli")
    await add(storage, session.id, "foo bar AND or NOT the 日本語のテキスト naive")
    assert len(await storage.sessions.search(query)) == expected


async def test_empty_and_punctuation_only_queries_return_nothing(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    await add(storage, session.id, "something")
    for query in ("", "   ", "*", '""', "()", "-", "🎉"):
        assert await storage.sessions.search(query) == []
    assert await storage.sessions.search("something", limit=0) == []


async def test_source_filter_and_limit(storage: Storage) -> None:
    cli = await storage.sessions.create_session(source="cli")
    api = await storage.sessions.create_session(source="api_server")
    for index in range(5):
        await add(storage, cli.id, f"deploy step {index}")
        await add(storage, api.id, f"deploy via api {index}")
    search = storage.sessions.search
    assert {hit.session.source for hit in await search("deploy", source="api_server")} == {"api_server"}
    assert len(await search("deploy", source="api_server")) == 5
    assert len(await search("deploy", source="cli", limit=2)) == 2
    assert len(await search("deploy")) == 10
    assert await search("deploy", source="tui") == []


async def test_content_parts_are_searchable_by_their_text_only(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    message_id = await add(
        storage,
        session.id,
        [
            {"type": "text", "text": "describe this giraffe"},
            {"type": "image_url", "image_url": {"url": "https://example.com/zebra.png"}},
        ],
    )
    assert [hit.message_id for hit in await storage.sessions.search("giraffe")] == [message_id]
    assert await storage.sessions.search("zebra") == []
    assert await storage.sessions.search("image_url") == []


async def test_tool_output_is_indexed_up_to_a_prefix(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    await add(storage, session.id, "early marker " + "x " * 5000 + "late marker", role="tool")
    assert len(await storage.sessions.search("early")) == 1
    assert await storage.sessions.search("late") == []


async def test_assistant_and_tool_roles_are_reported(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    await add(storage, session.id, "answer about walrus", role="assistant")
    await add(storage, session.id, "walrus.txt", role="tool")
    assert sorted(hit.role for hit in await storage.sessions.search("walrus")) == ["assistant", "tool"]


async def test_ranking_is_bounded_to_the_newest_matches(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes.store.postgres.search as pg_sessions
    import hermes.store.sqlite.dialect as sqlite_sessions

    for module in (pg_sessions, sqlite_sessions):
        monkeypatch.setattr(module, "RANK_WINDOW", 3)
    session = await storage.sessions.create_session(source="cli")
    other = await storage.sessions.create_session(source="tui")
    best_but_old = await add(storage, session.id, "otter otter otter otter")
    newer = [await add(storage, session.id, f"otter and some other words {i}") for i in range(3)]
    tui_old = await add(storage, other.id, "otter")
    await add(storage, session.id, "otter in cli again")
    hits = await storage.sessions.search("otter")
    assert best_but_old not in {hit.message_id for hit in hits}
    assert len(hits) == 3
    assert [hit.message_id for hit in await storage.sessions.search("otter", source="tui")] == [tui_old]
    for module in (pg_sessions, sqlite_sessions):
        monkeypatch.setattr(module, "RANK_WINDOW", 100)
    assert (await storage.sessions.search("otter"))[0].message_id == best_but_old
    assert newer[0] in {hit.message_id for hit in await storage.sessions.search("otter")}


@pytest.mark.parametrize(
    ("query", "found"),
    [("config", True), ("config.py", True), ("config.py ", True), ("py ", True), ("foo-bar", True),
     ("bar ", True), ("3.14", True), ("14 ", True), ("example.com", True), ("user_name", True)],
)  # fmt: skip
async def test_punctuation_separates_words(storage: Storage, query: str, found: bool) -> None:
    session = await storage.sessions.create_session(source="cli")
    message_id = await add(
        storage, session.id, "edit config.py then foo-bar with pi=3.14 at https://example.com as user_name"
    )
    hits = await storage.sessions.search(query)
    assert ([hit.message_id for hit in hits] == [message_id]) is found
    assert ">>>" in hits[0].snippet
