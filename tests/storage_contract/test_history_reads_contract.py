"""The bounded history reads and the per-process history cache, alike on both backends.

`history_mark` / `history_since` / `latest_compaction` (hermes/store/rules/sessions.py) and
`SessionHistories` (hermes/agent/history.py) over them: a hit reads nothing but the mark;
an append, an undo, a redo, a compaction or a fork is seen by the next load.
"""

from __future__ import annotations

from hermes.agent.context import SUMMARY_HEADER, read_compacted_history, resume_history
from hermes.agent.history import LARGE_READ, SessionHistories
from hermes.store.api import AsyncSessionStore, Storage
from hermes.store.records import NewCompaction, NewMessage


async def _turn(store: AsyncSessionStore, session_id: str, text: str) -> None:
    turn, _ = await store.open_turn(session_id, NewMessage(role="user", content=text))
    await store.append_message(session_id, NewMessage(role="assistant", content=f"re {text}"), turn_id=turn.id)
    await store.end_turn(turn.id, "completed")


def _texts(history: list[dict[str, object]]) -> list[object]:
    return [m["content"] for m in history]


async def test_the_mark_moves_with_appends_undo_redo_and_compaction(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    empty = await store.history_mark(session.id)
    assert (empty.compaction_id, empty.count, empty.last_message_id, empty.id_sum) == (None, 0, 0, 0)
    await _turn(store, session.id, "one")
    await _turn(store, session.id, "two")
    two = await store.history_mark(session.id)
    rows = await store.get_messages(session.id)
    assert (two.count, two.last_message_id, two.id_sum) == (4, rows[-1].id, sum(r.id for r in rows))
    assert await store.history_mark(session.id) == two  # reading changes nothing
    await store.undo_turns(session.id, 1)
    undone = await store.history_mark(session.id)
    assert undone.count == 2 and undone != two
    await store.redo_turns(session.id)
    assert await store.history_mark(session.id) == two
    marker = await store.add_compaction(
        session.id, NewCompaction(summary="S", first_kept_message_id=rows[2].id, summarized_messages=2)
    )
    compacted = await store.history_mark(session.id)
    assert (compacted.compaction_id, compacted.first_message_id, compacted.count) == (marker.id, rows[2].id, 2)
    assert (await store.latest_compaction(session.id)) == marker
    assert [r.content for r in await store.history_since(session.id, rows[2].id)] == ["two", "re two"]
    assert await store.latest_compaction("nope") is None
    assert (await store.history_mark("nope")).count == 0


async def test_a_draft_is_left_out_of_the_mark_and_the_reads(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    turn, _ = await store.open_turn(session.id, NewMessage(role="user", content="q"))
    before = await store.history_mark(session.id)
    await store.save_draft(turn.id, "partial answ")
    assert await store.history_mark(session.id) == before
    assert [r.content for r in await store.history_since(session.id, 0)] == ["q"]
    await store.end_turn(turn.id, "interrupted")  # the draft is kept as the answer
    after = await store.history_mark(session.id)
    assert after.count == 2
    assert _texts(await SessionHistories(store).load(session.id)) == ["q", "partial answ"]


async def test_resume_reads_from_the_compaction_point(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    for text in ("one", "two", "three"):
        await _turn(store, session.id, text)
    rows = await store.get_messages(session.id)
    await store.add_compaction(session.id, NewCompaction(summary="first two", first_kept_message_id=rows[4].id))
    history = await read_compacted_history(store, session.id)
    assert _texts(history) == [SUMMARY_HEADER + "first two", "three", "re three"]
    assert await resume_history(store, session.id) == history  # the TUI's read, the whole transcript
    assert await SessionHistories(store).load(session.id) == history


async def test_the_cache_answers_a_hit_and_reads_only_what_was_appended(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    await _turn(store, session.id, "one")
    histories = SessionHistories(store)
    assert _texts(await histories.load(session.id)) == ["one", "re one"]
    assert _texts(await histories.load(session.id)) == ["one", "re one"]
    await _turn(store, session.id, "two")
    assert _texts(await histories.load(session.id)) == ["one", "re one", "two", "re two"]
    assert histories.reads == {"full": 1, "hit": 1, "append": 1}


async def test_undo_redo_and_compaction_invalidate_the_cache(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    for text in ("one", "two", "three"):
        await _turn(store, session.id, text)
    histories = SessionHistories(store)
    assert len(await histories.load(session.id)) == 6
    await store.undo_turns(session.id, 1)
    assert _texts(await histories.load(session.id)) == ["one", "re one", "two", "re two"]
    await _turn(store, session.id, "four")  # after the undo: an append to what the cache holds
    assert _texts(await histories.load(session.id)) == ["one", "re one", "two", "re two", "four", "re four"]
    rows = await store.get_messages(session.id)
    await store.add_compaction(session.id, NewCompaction(summary="S", first_kept_message_id=rows[4].id))
    assert _texts(await histories.load(session.id)) == [SUMMARY_HEADER + "S", "four", "re four"]
    assert histories.reads == {"full": 3, "hit": 0, "append": 1}  # first load, after the undo, after compaction


async def test_an_undo_and_an_append_between_two_loads_are_not_taken_for_appends(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    for text in ("one", "two"):
        await _turn(store, session.id, text)
    histories = SessionHistories(store)
    assert len(await histories.load(session.id)) == 4
    await store.undo_turns(session.id, 1)
    await _turn(store, session.id, "three")  # same count, a higher last id
    assert _texts(await histories.load(session.id)) == ["one", "re one", "three", "re three"]
    assert histories.reads == {"full": 2, "hit": 0, "append": 0}


async def test_a_fork_has_its_own_history_and_the_parent_keeps_its_own(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    for text in ("one", "two"):
        await _turn(store, session.id, text)
    histories = SessionHistories(store)
    assert len(await histories.load(session.id)) == 4
    rows = await store.get_messages(session.id)
    fork = await store.fork_session(session.id, at_message_id=rows[1].id)
    assert _texts(await histories.load(fork.id)) == ["one", "re one"]
    await _turn(store, fork.id, "other")
    assert _texts(await histories.load(fork.id)) == ["one", "re one", "other", "re other"]
    assert _texts(await histories.load(session.id)) == ["one", "re one", "two", "re two"]


async def test_a_cut_off_tool_call_is_answered_and_later_rows_are_read_again(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    await store.append_message(session.id, NewMessage(role="user", content="go"))
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
    await store.append_message(session.id, NewMessage(role="assistant", content=None, tool_calls=[call]))
    histories = SessionHistories(store)
    first = await histories.load(session.id)
    assert [m["role"] for m in first] == ["user", "assistant", "tool"]  # a placeholder answers the call
    await store.append_message(session.id, NewMessage(role="tool", content="done", tool_call_id="c1"))
    second = await histories.load(session.id)
    assert [m.get("content") for m in second[2:]] == ["done"]  # the real result, not the placeholder
    assert second == await store.history(session.id)


async def test_the_cache_keeps_within_its_bounds(storage: Storage) -> None:
    store = storage.sessions
    sessions = [await store.create_session(source="cli") for _ in range(3)]
    for session in sessions:
        await _turn(store, session.id, "x" * 100)
    few = SessionHistories(store, max_sessions=2)
    for session in [*sessions, sessions[0]]:
        await few.load(session.id)
    assert few.reads == {"full": 4, "hit": 0, "append": 0}  # the first session had been dropped
    await few.load(sessions[2].id)
    assert few.reads["hit"] == 1
    small = SessionHistories(store, max_chars=50)  # one message is heavier: nothing is kept
    for _ in range(2):
        assert _texts(await small.load(sessions[1].id)) == ["x" * 100, "re " + "x" * 100]
    assert small.reads == {"full": 2, "hit": 0, "append": 0}


async def test_large_reads_and_appends_equal_the_inline_ones(storage: Storage) -> None:
    """From `LARGE_READ` messages on, a read (and an append of that many) leaves the event
    loop (SQLite: a worker thread on its own connection); what it gives is the same."""
    store = storage.sessions
    session = await store.create_session(source="cli")
    for i in range(LARGE_READ // 2 + 1):
        await _turn(store, session.id, f"m{i}")
    histories = SessionHistories(store)
    first = await histories.load(session.id)
    assert first == await read_compacted_history(store, session.id) and len(first) >= LARGE_READ
    assert await store.history_since(session.id, 0, large=True) == await store.history_since(session.id, 0)
    for i in range(LARGE_READ // 2 + 1):  # another writer appends LARGE_READ messages or more
        await _turn(store, session.id, f"n{i}")
    grown = await histories.load(session.id)
    assert grown == await read_compacted_history(store, session.id) and grown[: len(first)] == first
    assert histories.reads == {"full": 1, "hit": 0, "append": 1}
