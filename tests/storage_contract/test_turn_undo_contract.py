"""Turn checkpoints and undo markers alike on both backends (hermes/store/turn_undo.py)."""

from __future__ import annotations

import pytest

from hermes.errors import StoreError
from hermes.store.api import Storage
from hermes.store.records import NewMessage, TurnCheckpoint


async def _turn(storage: Storage, session_id: str, text: str) -> int:
    store = storage.sessions
    turn, _ = await store.open_turn(session_id, NewMessage(role="user", content=text))
    await store.append_message(session_id, NewMessage(role="assistant", content=f"re {text}"), turn_id=turn.id)
    await store.end_turn(turn.id, "completed")
    return turn.id


def _texts(history: list[dict[str, object]]) -> list[object]:
    return [m["content"] for m in history]


async def test_checkpoints_are_recorded_against_the_turn(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    first = await _turn(storage, session.id, "one")
    second = await _turn(storage, session.id, "two")
    await store.set_turn_checkpoint(second, worktree="/w", before="b" * 40, after="a" * 40)
    assert await store.turn_checkpoints(session.id) == [
        TurnCheckpoint(first, session.id, None, None, None, None, True),
        TurnCheckpoint(second, session.id, "/w", "b" * 40, "a" * 40, None, True),
    ]
    with pytest.raises(StoreError):
        await store.set_turn_checkpoint(10**9, worktree="/w", before="b", after="a")


async def test_undo_hides_turns_and_redo_brings_back_the_newest_undo(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    turns = [await _turn(storage, session.id, text) for text in ("one", "two", "three")]
    assert await store.undo_turns(session.id, 1) == [turns[2]]
    assert await store.undo_turns(session.id, 1) == [turns[1]]
    assert _texts(await store.history(session.id)) == ["one", "re one"]
    assert [m.content for m in await store.get_messages(session.id)] == ["one", "re one"]
    assert (await store.get_session(session.id)).message_count == 6  # kept, not deleted
    marks = [t.undone for t in await store.turn_checkpoints(session.id)]
    assert marks == [None, 2, 1]
    assert await store.redo_turns(session.id) == [turns[1]]
    assert _texts(await store.history(session.id)) == ["one", "re one", "two", "re two"]
    assert await store.redo_turns(session.id) == [turns[2]]
    assert await store.redo_turns(session.id) == []
    assert len(await store.history(session.id)) == 6
    assert await store.undo_turns(session.id, 5) == turns
    assert await store.history(session.id) == []


async def test_a_new_turn_after_an_undo_keeps_the_undone_turns_hidden(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    await _turn(storage, session.id, "one")
    await _turn(storage, session.id, "two")
    await store.undo_turns(session.id, 1)
    await _turn(storage, session.id, "three")
    assert await store.redo_turns(session.id) == []
    assert _texts(await store.history(session.id)) == ["one", "re one", "three", "re three"]
    assert [hit.snippet for hit in await store.search("two")] == []  # hidden turns are not found either
    assert len(await store.search("three")) == 2
    child = await store.fork_session(session.id)
    assert _texts(await store.history(child.id)) == ["one", "re one", "three", "re three"]
