"""Full-text search on both backends: snippets, ranking, hostile queries, source filter."""

from __future__ import annotations

from typing import Any

import pytest

from hermes.store.api import AsyncSessionStore
from hermes.store.records import NewMessage

HOSTILE = [
    'foo"bar', '"', '""', '"unterminated', "AND", "OR", "NOT", "NEAR", "a AND", "AND OR NOT",
    "NEAR(a b)", "-x", "x -y", "*", "**", "foo*", "*foo", "(", ")", "(foo", "foo)", "((()))",
    "^", "^foo", "body:foo", "body : foo", ":", "{body}: x", "+", "a + b", "foo'bar", "\\",
    "%", "_", "\x00", "\t\n", "日本語のテキスト", "émoji 🎉", "🎉", "naïve café",
    "x" * 5000, "SELECT * FROM sessions; --", "NOT foo", "foo NOT", "OR foo OR",
]  # fmt: skip


async def add(store: AsyncSessionStore, session_id: str, content: Any, role: str = "user") -> int:
    return (await store.append_message(session_id, NewMessage(role=role, content=content))).id


async def test_snippet_marks_the_match(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli", title="infra")
    message_id = await add(store, session.id, "How do I restart the docker compose stack cleanly?")
    (hit,) = await store.search("docker")
    assert hit.message_id == message_id
    assert hit.role == "user"
    assert hit.session == await store.get_session(session.id)
    assert ">>>docker<<<" in hit.snippet
    assert hit.snippet.count(">>>") == 1
    assert hit.to_json()["object"] == "search_hit"


async def test_long_content_gets_a_short_snippet(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await add(store, session.id, "filler " * 300 + "needle " + "filler " * 300)
    (hit,) = await store.search("needle")
    assert ">>>needle<<<" in hit.snippet
    assert "…" in hit.snippet
    assert len(hit.snippet) < 200


async def test_best_match_first(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    weak = await add(store, session.id, "kubernetes " + "lorem ipsum dolor sit amet " * 40)
    strong = await add(store, session.id, "kubernetes kubernetes kubernetes cluster")
    medium = await add(store, session.id, "kubernetes cluster " + "lorem ipsum " * 5)
    assert [hit.message_id for hit in await store.search("kubernetes")] == [strong, medium, weak]


async def test_all_words_are_required_and_the_last_is_a_prefix(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    both = await add(store, session.id, "python asyncio tutorial")
    await add(store, session.id, "python packaging")
    prefix = await add(store, session.id, "configure the pytest plugin")
    assert [hit.message_id for hit in await store.search("asyncio python")] == [both]
    assert [hit.message_id for hit in await store.search("pyte")] == [prefix]
    assert await store.search("pyte ") == []  # trailing space: a whole word
    assert {hit.message_id for hit in await store.search("pyth")} == {both}.union(
        {hit.message_id for hit in await store.search("python")}
    )


async def test_stemming_and_diacritics(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    running = await add(store, session.id, "the tests were running slowly")
    cafe = await add(store, session.id, "meet at the Café Zoë")
    assert [hit.message_id for hit in await store.search("run ")] == [running]
    assert [hit.message_id for hit in await store.search("cafe zoe")] == [cafe]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_raise(store: AsyncSessionStore, query: str) -> None:
    session = await store.create_session(source="cli")
    await add(store, session.id, 'foo bar AND OR NOT near body x y a b 日本語のテキスト café "quoted"')
    hits = await store.search(query)
    assert isinstance(hits, list)


@pytest.mark.parametrize(
    ("query", "expected"),
    [("AND", 1), ("NOT foo", 1), ("foo\"bar", 1), ("(foo)", 1), ("-foo", 1), ("NEAR", 0),
     ("OR foo", 1), ("日本語のテキスト", 1), ("naïve", 1)],
)  # fmt: skip
async def test_operators_are_searched_as_words(
    store: AsyncSessionStore, query: str, expected: int
) -> None:
    session = await store.create_session(source="cli")
    await add(store, session.id, "foo bar AND or NOT 日本語のテキスト naive")
    assert len(await store.search(query)) == expected


async def test_empty_and_punctuation_only_queries_return_nothing(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await add(store, session.id, "something")
    for query in ("", "   ", "*", '""', "()", "-", "🎉"):
        assert await store.search(query) == []
    assert await store.search("something", limit=0) == []


async def test_source_filter_and_limit(store: AsyncSessionStore) -> None:
    cli = await store.create_session(source="cli")
    api = await store.create_session(source="api_server")
    for index in range(5):
        await add(store, cli.id, f"deploy step {index}")
        await add(store, api.id, f"deploy via api {index}")
    assert {hit.session.source for hit in await store.search("deploy", source="api_server")} == {
        "api_server"
    }
    assert len(await store.search("deploy", source="api_server")) == 5
    assert len(await store.search("deploy", source="cli", limit=2)) == 2
    assert len(await store.search("deploy")) == 10
    assert await store.search("deploy", source="tui") == []


async def test_content_parts_are_searchable_by_their_text_only(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    message_id = await add(
        store,
        session.id,
        [
            {"type": "text", "text": "describe this giraffe"},
            {"type": "image_url", "image_url": {"url": "https://example.com/zebra.png"}},
        ],
    )
    assert [hit.message_id for hit in await store.search("giraffe")] == [message_id]
    assert await store.search("zebra") == []
    assert await store.search("image_url") == []


async def test_tool_output_is_indexed_up_to_a_prefix(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await add(store, session.id, "early marker " + "x " * 5000 + "late marker", role="tool")
    assert len(await store.search("early")) == 1
    assert await store.search("late") == []


async def test_assistant_and_tool_roles_are_reported(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await add(store, session.id, "answer about walrus", role="assistant")
    await add(store, session.id, "walrus.txt", role="tool")
    assert sorted(hit.role for hit in await store.search("walrus")) == ["assistant", "tool"]
