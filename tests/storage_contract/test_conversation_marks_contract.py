"""Conversation marks: which session a resent conversation continues (both backends)."""

from __future__ import annotations

import asyncio

import pytest

from hermes.errors import MessageNotFound
from hermes.store.api import AsyncSessionStore
from hermes.store.records import NewMessage


async def _session_with(store: AsyncSessionStore, *texts: str) -> tuple[str, list[int]]:
    session = await store.create_session(source="api_server")
    ids = []
    for index, text in enumerate(texts):
        role = "user" if index % 2 == 0 else "assistant"
        ids.append((await store.append_message(session.id, NewMessage(role=role, content=text))).id)
    return session.id, ids


async def test_a_mark_names_the_newest_message_and_is_latest_until_the_session_moves_on(
    store: AsyncSessionStore,
) -> None:
    sid, ids = await _session_with(store, "hi", "hello")
    mark = await store.mark_conversation(sid, "fp-1")
    assert (mark.session_id, mark.fingerprint, mark.message_id, mark.latest) == (sid, "fp-1", ids[-1], True)
    assert await store.find_conversation(["fp-1"]) == mark

    await store.append_message(sid, NewMessage(role="user", content="more"))
    moved = await store.find_conversation(["fp-1"])
    assert moved is not None and moved.message_id == ids[-1] and not moved.latest


async def test_the_first_listed_fingerprint_wins_then_the_latest_then_the_newest(store: AsyncSessionStore) -> None:
    first, _ = await _session_with(store, "a", "b")
    second, _ = await _session_with(store, "a", "b")
    await store.mark_conversation(first, "short")
    await store.mark_conversation(second, "short")
    found = await store.find_conversation(["short"])
    assert found is not None and found.session_id == second  # the newest of two latest marks

    await store.append_message(second, NewMessage(role="user", content="c"))
    found = await store.find_conversation(["short"])
    assert found is not None and found.session_id == first  # latest before moved-on

    await store.append_message(second, NewMessage(role="assistant", content="d"))
    await store.mark_conversation(second, "long")
    found = await store.find_conversation(["long", "short"])
    assert found is not None and (found.session_id, found.fingerprint) == (second, "long")
    assert await store.find_conversation(["unknown"]) is None
    assert await store.find_conversation([]) is None


async def test_marking_again_moves_the_mark_and_marks_go_with_their_session(store: AsyncSessionStore) -> None:
    sid, _ = await _session_with(store, "a", "b")
    await store.mark_conversation(sid, "fp")
    newest = await store.append_message(sid, NewMessage(role="user", content="c"))
    again = await store.mark_conversation(sid, "fp")
    assert again.message_id == newest.id and again.latest

    await store.delete_session(sid)
    assert await store.find_conversation(["fp"]) is None


async def test_a_session_without_messages_cannot_be_marked(store: AsyncSessionStore) -> None:
    session = await store.create_session(source="api_server")
    with pytest.raises(MessageNotFound):
        await store.mark_conversation(session.id, "fp")


async def test_a_mark_is_claimed_once_until_it_is_marked_again(store: AsyncSessionStore) -> None:
    sid, _ = await _session_with(store, "a", "b")
    await store.mark_conversation(sid, "fp")
    results = await asyncio.gather(*(store.claim_conversation(sid, "fp") for _ in range(3)))
    assert sorted(results) == [False, False, True]
    found = await store.find_conversation(["fp"])
    assert found is not None and found.latest and found.claimed and not found.open
    assert not await store.claim_conversation(sid, "unknown")

    await store.append_message(sid, NewMessage(role="user", content="c"))
    await store.append_message(sid, NewMessage(role="assistant", content="d"))
    await store.mark_conversation(sid, "fp")  # marked again: open again
    assert await store.claim_conversation(sid, "fp")


async def test_a_mark_behind_the_newest_message_cannot_be_claimed(store: AsyncSessionStore) -> None:
    sid, _ = await _session_with(store, "a", "b")
    await store.mark_conversation(sid, "fp")
    await store.append_message(sid, NewMessage(role="user", content="typed in the TUI"))
    assert not await store.claim_conversation(sid, "fp")
