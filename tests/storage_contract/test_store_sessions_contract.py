"""Sessions on both backends: create, read, list by activity, rename, update, end, usage, delete."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hermes.errors import SessionNotFound, StoreError
from hermes.store.api import AsyncSessionStore
from hermes.store.records import NewMessage, SessionRecord


async def test_create_and_get(store: AsyncSessionStore) -> None:
    created = await store.create_session(
        source="tui", model="gpt-x", title="  My   chat ", system_prompt="be brief"
    )
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", created.id)
    assert created.title == "My chat"
    assert created.message_count == created.tool_call_count == 0
    assert created.input_tokens == created.output_tokens == 0
    assert created.ended_at is None and created.end_reason is None
    assert created.started_at == created.updated_at
    assert await store.get_session(created.id) == created
    assert await store.find_session(created.id) == created
    assert created.to_json()["object"] == "session"


async def test_ids_are_unique(store: AsyncSessionStore) -> None:
    ids = {(await store.create_session(source="cli")).id for _ in range(200)}
    assert len(ids) == 200


async def test_explicit_id_and_duplicate(store: AsyncSessionStore) -> None:
    await store.create_session(source="api_server", session_id="api-abc")
    assert (await store.get_session("api-abc")).source == "api_server"
    with pytest.raises(StoreError, match="already exists"):
        await store.create_session(source="cli", session_id="api-abc")
    assert await store.count_sessions() == 1


async def test_create_with_unknown_parent(store: AsyncSessionStore) -> None:
    with pytest.raises(SessionNotFound):
        await store.create_session(source="cli", parent_session_id="nope")
    assert await store.count_sessions() == 0


async def test_unknown_ids(store: AsyncSessionStore) -> None:
    assert await store.find_session("nope") is None
    calls: list[Callable[[], Awaitable[Any]]] = [
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
            await call()
        assert caught.value.session_id == "nope"


def ids(sessions: list[SessionRecord]) -> list[str]:
    return [session.id for session in sessions]


async def test_list_newest_activity_first(store: AsyncSessionStore) -> None:
    a = await store.create_session(source="cli", title="a")
    b = await store.create_session(source="cli", title="b")
    c = await store.create_session(source="cli", title="c")
    assert ids(await store.list_sessions()) == [c.id, b.id, a.id]

    await store.append_message(a.id, NewMessage(role="user", content="bump"))
    assert ids(await store.list_sessions()) == [a.id, c.id, b.id]
    await store.rename_session(b.id, "b2")
    assert ids(await store.list_sessions()) == [b.id, a.id, c.id]
    await store.end_session(c.id, "completed")
    assert ids(await store.list_sessions()) == [c.id, b.id, a.id]
    assert await store.latest_session() == await store.get_session(c.id)


async def test_list_paging_and_count(store: AsyncSessionStore) -> None:
    created = [await store.create_session(source="cli", title=str(i)) for i in range(7)]
    newest_first = ids(list(reversed(created)))
    assert ids(await store.list_sessions(limit=3)) == newest_first[:3]
    assert ids(await store.list_sessions(limit=3, offset=3)) == newest_first[3:6]
    assert ids(await store.list_sessions(limit=3, offset=6)) == newest_first[6:]
    assert await store.list_sessions(limit=3, offset=7) == []
    assert await store.list_sessions(limit=0) == []
    assert await store.count_sessions() == 7


async def test_source_filter(store: AsyncSessionStore) -> None:
    cli = [await store.create_session(source="cli") for _ in range(3)]
    api = [await store.create_session(source="api_server") for _ in range(2)]
    assert ids(await store.list_sessions(source="api_server")) == [api[1].id, api[0].id]
    assert ids(await store.list_sessions(source="cli", limit=2)) == [cli[2].id, cli[1].id]
    assert await store.count_sessions(source="cli") == 3
    assert await store.count_sessions(source="api_server") == 2
    assert await store.count_sessions(source="tui") == 0
    assert await store.latest_session(source="cli") == await store.get_session(cli[2].id)
    assert await store.latest_session(source="tui") is None


async def test_rename(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli", title="old")
    renamed = await store.rename_session(session.id, "new title")
    assert renamed.title == "new title"
    assert renamed.updated_at > session.updated_at
    assert (await store.get_session(session.id)).title == "new title"
    assert (await store.rename_session(session.id, "   ")).title is None


async def test_update_session_changes_only_given_fields(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli", model="m1", system_prompt="p1")
    assert (await store.update_session(session.id, model="m2")).system_prompt == "p1"
    updated = await store.update_session(session.id, system_prompt="p2")
    assert (updated.model, updated.system_prompt) == ("m2", "p2")
    assert await store.update_session(session.id) == updated


async def test_end_session_first_reason_wins(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await store.end_session(session.id, "interrupted")
    ended = await store.get_session(session.id)
    assert ended.end_reason == "interrupted"
    assert ended.ended_at is not None and ended.ended_at >= session.started_at
    await store.end_session(session.id, "completed")
    assert await store.get_session(session.id) == ended


async def test_add_usage_accumulates(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="cli")
    await store.add_usage(session.id, input_tokens=100, output_tokens=20)
    await store.add_usage(session.id, input_tokens=50, output_tokens=5)
    record = await store.get_session(session.id)
    assert (record.input_tokens, record.output_tokens) == (150, 25)


async def test_delete_keeps_children_and_clears_their_parent(store: AsyncSessionStore) -> None:
    parent = await store.create_session(source="cli", title="p")
    await store.append_message(parent.id, NewMessage(role="user", content="hi"))
    child = await store.fork_session(parent.id)
    other = await store.create_session(source="cli", parent_session_id=parent.id)
    await store.delete_session(parent.id)
    for session_id in (child.id, other.id):
        survivor = await store.get_session(session_id)
        assert survivor.parent_session_id is None
    assert [m.content for m in await store.get_messages(child.id)] == ["hi"]


async def test_stats(store: AsyncSessionStore) -> None:
    a = await store.create_session(source="cli")
    b = await store.create_session(source="api_server")
    await store.create_session(source="api_server")
    await store.append_message(a.id, NewMessage(role="user", content="x"))
    await store.append_message(
        b.id,
        NewMessage(
            role="assistant",
            tool_calls=[
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        ),
    )
    await store.add_usage(a.id, input_tokens=10, output_tokens=3)
    stats = await store.stats()
    assert (stats.sessions, stats.messages, stats.tool_calls) == (3, 2, 2)
    assert (stats.input_tokens, stats.output_tokens) == (10, 3)
    assert stats.by_source == {"api_server": 2, "cli": 1}
    assert stats.db_bytes > 0


async def test_stats_of_an_empty_store(store: AsyncSessionStore) -> None:
    stats = await store.stats()
    assert (stats.sessions, stats.messages, stats.tool_calls, stats.by_source) == (0, 0, 0, {})


async def test_a_subagent_session_names_its_parent_and_call(store: AsyncSessionStore) -> None:
    from hermes.store.records import NewSession

    parent = await store.create_session(source="cli", title="Parent")
    child = NewSession(id="child-1", given=True, source="cli", title="look", parent_session_id=parent.id,
                       parent_call_id="call_7")  # fmt: skip
    turn, _ = await store.start_turn(child, [NewMessage(role="user", content="find it")])
    record = await store.get_session(turn.session_id)
    assert (record.parent_session_id, record.parent_call_id) == (parent.id, "call_7")
    assert record.to_json()["parent_call_id"] == "call_7"
    assert (await store.get_session(parent.id)).parent_call_id is None
