"""Sessions and messages behave alike on both backends (AsyncSessionStore)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hermes.errors import MessageNotFound, SessionNotFound, StoreError
from hermes.store.api import AsyncSessionStore, Storage
from hermes.store.records import NewMessage, SessionRecord


def ids(sessions: list[SessionRecord]) -> list[str]:
    return [session.id for session in sessions]


async def test_backends_satisfy_the_protocols(storage: Storage) -> None:
    from hermes.store.api import (
        AsyncResponseStore,
        AsyncRunStore,
        LeaseStore,
        ReceiptStore,
        RunEventStore,
    )

    assert isinstance(storage.sessions, AsyncSessionStore)
    assert isinstance(storage.responses, AsyncResponseStore)
    assert isinstance(storage.receipts, ReceiptStore)
    assert isinstance(storage.runs, AsyncRunStore)
    assert isinstance(storage.run_events, RunEventStore)
    assert isinstance(storage.leases, LeaseStore)


async def test_create_and_get(storage: Storage) -> None:
    store = storage.sessions
    created = await store.create_session(source="tui", model="gpt-x", title="  My   chat ", system_prompt="be brief")
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", created.id)
    assert created.title == "My chat"
    assert created.message_count == created.tool_call_count == 0
    assert created.ended_at is None and created.end_reason is None
    assert created.started_at == created.updated_at
    assert await store.get_session(created.id) == created
    assert await store.find_session(created.id) == created


async def test_explicit_id_duplicate_and_unknown_parent(storage: Storage) -> None:
    store = storage.sessions
    await store.create_session(source="api_server", session_id="api-abc")
    assert (await store.get_session("api-abc")).source == "api_server"
    with pytest.raises(StoreError, match="already exists"):
        await store.create_session(source="cli", session_id="api-abc")
    with pytest.raises(SessionNotFound):
        await store.create_session(source="cli", parent_session_id="nope")
    assert await store.count_sessions() == 1


async def test_unknown_ids(storage: Storage) -> None:
    store = storage.sessions
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


async def test_list_newest_activity_first_paging_and_source(storage: Storage) -> None:
    store = storage.sessions
    a = await store.create_session(source="cli", title="a")
    b = await store.create_session(source="cli", title="b")
    c = await store.create_session(source="tui", title="c")
    assert ids(await store.list_sessions()) == [c.id, b.id, a.id]
    await store.append_message(a.id, NewMessage(role="user", content="bump"))
    assert ids(await store.list_sessions()) == [a.id, c.id, b.id]
    await store.rename_session(b.id, "b2")
    assert ids(await store.list_sessions(limit=2)) == [b.id, a.id]
    assert ids(await store.list_sessions(limit=2, offset=2)) == [c.id]
    assert ids(await store.list_sessions(source="cli")) == [b.id, a.id]
    assert await store.count_sessions() == 3
    assert await store.count_sessions(source="tui") == 1
    assert (await store.latest_session()) == await store.get_session(b.id)
    assert (await store.latest_session(source="tui")) == await store.get_session(c.id)
    assert await store.latest_session(source="api_server") is None


async def test_rename_update_end_usage(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli", model="m1", system_prompt="p1")
    renamed = await store.rename_session(session.id, "  new   title ")
    assert renamed.title == "new title" and renamed.updated_at > session.updated_at
    assert (await store.rename_session(session.id, "   ")).title is None
    updated = await store.update_session(session.id, model="m2")
    assert (updated.model, updated.system_prompt) == ("m2", "p1")
    await store.end_session(session.id, "completed")
    await store.end_session(session.id, "failed")
    ended = await store.get_session(session.id)
    assert ended.end_reason == "completed" and ended.ended_at is not None
    await store.add_usage(session.id, input_tokens=10, output_tokens=3)
    await store.add_usage(session.id, input_tokens=5, output_tokens=2)
    used = await store.get_session(session.id)
    assert (used.input_tokens, used.output_tokens) == (15, 5)


async def test_messages_round_trip_and_counters(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:x"}},
    ]
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}},
        {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
    ]
    tricky = "NUL \x00 inside, emoji 🎉, quotes ' \" and back\\slash"
    appended = [
        await store.append_message(session.id, NewMessage(role="user", content=parts)),
        await store.append_message(
            session.id, NewMessage(role="assistant", content=None, tool_calls=calls, reasoning="think", token_count=7)
        ),
        await store.append_message(
            session.id, NewMessage(role="tool", content=tricky, tool_call_id="c1", tool_name="terminal")
        ),
        await store.append_message(session.id, NewMessage(role="assistant", content="", finish_reason="stop")),
    ]
    stored = await store.get_messages(session.id)
    assert stored == appended
    assert stored[0].content == parts and stored[2].content == tricky and stored[3].content == ""
    assert stored[1].tool_calls == calls and stored[1].reasoning == "think" and stored[1].token_count == 7
    assert [m.id for m in stored] == sorted(m.id for m in stored)
    record = await store.get_session(session.id)
    assert (record.message_count, record.tool_call_count) == (4, 2)
    assert [m.id for m in await store.get_messages(session.id, limit=2, offset=1)] == [m.id for m in stored[1:3]]
    history = await store.history(session.id)
    assert history[1]["tool_calls"] == calls
    assert history[2] == {"role": "tool", "content": tricky, "tool_call_id": "c1", "name": "terminal"}


async def test_content_of_another_type_is_rejected(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    with pytest.raises(TypeError):
        await storage.sessions.append_message(session.id, NewMessage(role="user", content=42))  # type: ignore[arg-type]
    assert (await storage.sessions.get_session(session.id)).message_count == 0


async def test_concurrent_appends_keep_counters_exact(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="api_server")
    await asyncio.gather(
        *(storage.sessions.append_message(session.id, NewMessage(role="user", content=f"m{i}")) for i in range(20))
    )
    assert (await storage.sessions.get_session(session.id)).message_count == 20
    assert len(await storage.sessions.get_messages(session.id)) == 20


async def test_delete_keeps_children_and_removes_search_rows(storage: Storage) -> None:
    store = storage.sessions
    parent = await store.create_session(source="cli", title="parent")
    await store.append_message(parent.id, NewMessage(role="user", content="unicorn sighting"))
    child = await store.fork_session(parent.id)
    await store.delete_session(parent.id)
    assert await store.find_session(parent.id) is None
    assert (await store.get_session(child.id)).parent_session_id is None
    hits = await store.search("unicorn")
    assert [hit.session.id for hit in hits] == [child.id]


async def test_stats(storage: Storage) -> None:
    store = storage.sessions
    empty = await store.stats()
    assert (empty.sessions, empty.messages, empty.by_source) == (0, 0, {})
    a = await store.create_session(source="cli")
    b = await store.create_session(source="api_server")
    await store.append_message(a.id, NewMessage(role="user", content="x"))
    await store.append_message(
        b.id, NewMessage(role="assistant", tool_calls=[{"id": "1", "type": "function", "function": {}}])
    )
    await store.add_usage(b.id, input_tokens=4, output_tokens=2)
    stats = await store.stats()
    assert (stats.sessions, stats.messages, stats.tool_calls) == (2, 2, 1)
    assert (stats.input_tokens, stats.output_tokens) == (4, 2)
    assert stats.by_source == {"api_server": 1, "cli": 1}
    assert stats.db_bytes > 0


# -- fork ----------------------------------------------------------------------------


async def test_fork_copies_messages_and_branches_the_parent(storage: Storage) -> None:
    store = storage.sessions
    parent = await store.create_session(source="tui", title="Plan", model="m", system_prompt="sp")
    first = await store.append_message(parent.id, NewMessage(role="user", content="one"))
    await store.append_message(
        parent.id, NewMessage(role="assistant", tool_calls=[{"id": "t", "type": "function", "function": {}}])
    )
    await store.append_message(parent.id, NewMessage(role="user", content="three"))
    child = await store.fork_session(parent.id)
    assert child.title == "Plan #2" and child.parent_session_id == parent.id
    assert (child.source, child.model, child.system_prompt) == ("tui", "m", "sp")
    assert (child.message_count, child.tool_call_count) == (3, 1)
    copied = await store.get_messages(child.id)
    originals = await store.get_messages(parent.id)
    assert [(m.role, m.content, m.timestamp) for m in copied] == [(m.role, m.content, m.timestamp) for m in originals]
    assert (await store.get_session(parent.id)).end_reason == "branched"

    partial = await store.fork_session(parent.id, at_message_id=first.id, source="cli")
    assert partial.title == "Plan #3" and partial.source == "cli" and partial.message_count == 1
    again = await store.fork_session(partial.id)
    assert again.title == "Plan #4"
    named = await store.fork_session(parent.id, title=" Other ")
    assert named.title == "Other"
    with pytest.raises(MessageNotFound):
        await store.fork_session(parent.id, at_message_id=copied[0].id)


async def test_fork_of_an_untitled_session(storage: Storage) -> None:
    parent = await storage.sessions.create_session(source="cli")
    child = await storage.sessions.fork_session(parent.id)
    assert child.title is not None and child.title.startswith("Session ") and child.title.endswith(" #2")


async def test_concurrent_forks_get_distinct_titles(storage: Storage) -> None:
    parent = await storage.sessions.create_session(source="cli", title="Race")
    children = await asyncio.gather(*(storage.sessions.fork_session(parent.id) for _ in range(5)))
    assert sorted(child.title or "" for child in children) == [f"Race #{n}" for n in range(2, 7)]
