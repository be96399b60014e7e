"""Turns, drafts, repair, compaction markers and transaction() alike on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from hermes.errors import SessionNotFound, StoreError
from hermes.store.api import Storage
from hermes.store.owner import ProcessOwner
from hermes.store.records import NewCompaction, NewMessage, NewSession, TurnRecord
from hermes.store.transcript import SERVER_STOPPED_TOOL_RESULT
from hermes.testing.state_db import SyncStateDb

CALLS = [
    {"id": "call_a", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}},
    {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
]


def user(text: str) -> NewMessage:
    return NewMessage(role="user", content=text)


# -- turns and drafts ----------------------------------------------------------------


async def test_a_turn_is_owned_by_this_process_and_its_storage(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="api_server")
    await storage.sessions.append_message(session.id, user("before"))
    turn = await storage.sessions.begin_turn(session.id)
    assert (turn.session_id, turn.ended_at, turn.end_reason, turn.draft_message_id) == (session.id, None, None, None)
    assert (turn.owner.host, turn.owner.pid) == (socket.gethostname(), os.getpid())
    expected_instance = storage.instance_id if storage.backend == "postgres" else None
    assert turn.owner_instance == expected_instance
    assert await storage.sessions.get_turn(turn.id) == turn
    assert await storage.sessions.turn_messages(turn.id) == []  # the earlier message is not the turn's
    with pytest.raises(SessionNotFound):
        await storage.sessions.begin_turn("nope")


async def test_open_turn_writes_the_turn_and_its_first_message_together(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    await store.append_message(session.id, user("before"))
    turn, first = await store.open_turn(session.id, user("hello"))
    assert (turn.session_id, turn.ended_at, turn.draft_message_id) == (session.id, None, None)
    assert (turn.owner.host, turn.owner.pid) == (socket.gethostname(), os.getpid())
    assert turn.owner_instance == (storage.instance_id if storage.backend == "postgres" else None)
    assert await store.get_turn(turn.id) == turn
    assert (first.role, first.content) == ("user", "hello")
    assert await store.turn_messages(turn.id) == [first]  # "before" is not the turn's
    assert (await store.get_session(session.id)).message_count == 2
    with pytest.raises(SessionNotFound):
        await store.open_turn("nope", user("x"))


async def test_a_preferred_id_a_session_has_is_replaced_by_a_fresh_one_in_the_same_write(storage: Storage) -> None:
    store = storage.sessions
    preferred = NewSession(id="api-preferred", given=False, source="api_server")
    first, _ = await store.start_turn(preferred, [user("one")])
    second, _ = await store.start_turn(preferred, [user("two")])
    assert first.session_id == "api-preferred" and second.session_id != "api-preferred"
    created = await store.create_session(source="api_server", session_id="api-preferred", fresh_if_taken=True)
    assert created.id not in ("api-preferred", second.session_id)
    for session_id, text in ((first.session_id, "one"), (second.session_id, "two")):
        assert [m.content for m in await store.get_messages(session_id)] == [text]
    with pytest.raises(StoreError, match="already exists"):  # a given id is never replaced
        await store.start_turn(NewSession(id="api-preferred", given=True, source="api_server"), [user("x")])
    assert await store.count_sessions() == 3


async def test_postgres_a_preferred_id_taken_while_the_write_waits_gets_a_fresh_one(
    pg_storage: Storage, pg_url: str
) -> None:
    import psycopg

    # Another instance's write creates the id and commits only once ours waits on it.
    async with (
        await psycopg.AsyncConnection.connect(pg_url) as other,
        await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as watcher,
    ):
        await other.execute(
            "INSERT INTO hermes.sessions (id, source, started_at, updated_at) VALUES ('api-race', 'api_server', 0, 0)"
        )
        ours = asyncio.ensure_future(
            pg_storage.sessions.start_turn(NewSession(id="api-race", given=False, source="api_server"), [user("hi")])
        )
        waiting = None
        while not waiting:  # each look is a round trip: our statement gets sent meanwhile
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            waiting = (await cursor.fetchone() or (0,))[0]
            assert not ours.done(), ours
        await other.commit()
        turn, _ = await ours
    assert turn.session_id != "api-race"
    assert [m.content for m in await pg_storage.sessions.get_messages(turn.session_id)] == ["hi"]
    assert (await pg_storage.sessions.get_session("api-race")).message_count == 0


async def test_finish_turn_ends_turn_adds_usage_and_ends_the_session_at_once(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(session.id, user("hello"))
    await store.save_draft(turn.id, "partial answ")
    await store.finish_turn(turn.id, session.id, "interrupted", input_tokens=7, output_tokens=3)
    ended = await store.get_turn(turn.id)
    assert ended is not None and (ended.end_reason, ended.draft_message_id) == ("interrupted", None)
    kept = (await store.get_messages(session.id))[-1]
    assert (kept.role, kept.content, kept.finish_reason) == ("assistant", "partial answ", "interrupted")
    record = await store.get_session(session.id)
    assert (record.input_tokens, record.output_tokens, record.end_reason) == (7, 3, "interrupted")
    # A second turn: usage adds up, the session's first end reason stays.
    second, _ = await store.open_turn(session.id, user("again"))
    await store.finish_turn(second.id, session.id, "completed", input_tokens=1, output_tokens=1)
    record = await store.get_session(session.id)
    assert (record.input_tokens, record.output_tokens, record.end_reason) == (8, 4, "interrupted")


async def test_finish_turn_of_another_session_changes_nothing(storage: Storage) -> None:
    store = storage.sessions
    mine = await store.create_session(source="api_server")
    other = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(mine.id, user("hello"))
    with pytest.raises(StoreError):
        await store.finish_turn(turn.id, other.id, "completed", input_tokens=5, output_tokens=5)
    with pytest.raises(SessionNotFound):
        await store.finish_turn(turn.id, "nope", "completed", input_tokens=5, output_tokens=5)
    assert (await store.get_turn(turn.id)).ended_at is None  # type: ignore[union-attr]
    record = await store.get_session(other.id)
    assert (record.input_tokens, record.end_reason) == (0, None)


async def test_finish_turn_writes_the_answer_in_place_of_the_draft_and_marks_it(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(session.id, user("hello"))
    await store.save_draft(turn.id, "hal")
    answer = NewMessage(role="assistant", content="hallo!", reasoning="thought", finish_reason="stop")
    record = await store.finish_turn(
        turn.id, session.id, "completed", input_tokens=4, output_tokens=2, answer=answer, mark="fp-answer"
    )
    assert record is not None and (record.role, record.content, record.finish_reason) == ("assistant", "hallo!", "stop")
    messages = await store.get_messages(session.id)
    assert [(m.role, m.content) for m in messages] == [("user", "hello"), ("assistant", "hallo!")]
    assert messages[-1] == record  # the draft's row became the answer: one row, counted once
    ended = await store.get_turn(turn.id)
    assert ended is not None and (ended.end_reason, ended.draft_message_id) == ("completed", None)
    stored = await store.get_session(session.id)
    assert (stored.message_count, stored.input_tokens, stored.output_tokens, stored.end_reason) == (
        2, 4, 2, "completed",
    )  # fmt: skip
    mark = await store.find_conversation(["fp-answer"])
    assert mark is not None and (mark.session_id, mark.message_id, mark.latest) == (session.id, record.id, True)
    assert [m.content for m in await store.turn_messages(turn.id)] == ["hello", "hallo!"]


async def test_finish_turn_appends_an_answer_when_no_draft_is_open(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(session.id, user("hello"))
    await store.append_message(
        session.id, NewMessage(role="assistant", content=None, tool_calls=CALLS[:1]), turn_id=turn.id
    )
    await store.append_message(
        session.id, NewMessage(role="tool", content="ok", tool_call_id="call_a", tool_name="terminal"), turn_id=turn.id
    )
    record = await store.finish_turn(
        turn.id, session.id, "completed", input_tokens=0, output_tokens=0,
        answer=NewMessage(role="assistant", content="done"), mark="fp",
    )  # fmt: skip
    assert record is not None
    stored = await store.get_session(session.id)
    assert (stored.message_count, stored.tool_call_count) == (4, 1)
    assert [m.content for m in await store.get_messages(session.id)][-1] == "done"
    mark = await store.find_conversation(["fp"])
    assert mark is not None and mark.message_id == record.id and mark.latest
    assert await store.session_usage([session.id]) == []  # no tokens: no usage row


async def test_finish_turn_marks_the_newest_message_without_an_answer(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(session.id, user("hello"))
    await store.save_draft(turn.id, "half an answ")
    assert await store.finish_turn(
        turn.id, session.id, "interrupted", input_tokens=1, output_tokens=1, mark="fp-stop"
    ) is None  # fmt: skip
    kept = (await store.get_messages(session.id))[-1]
    assert (kept.content, kept.finish_reason) == ("half an answ", "interrupted")
    mark = await store.find_conversation(["fp-stop"])
    assert mark is not None and mark.message_id == kept.id and mark.latest  # at the kept draft


async def test_a_failed_finish_writes_no_answer_and_no_mark(storage: Storage) -> None:
    store = storage.sessions
    mine = await store.create_session(source="api_server")
    other = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(mine.id, user("hello"))
    answer = NewMessage(role="assistant", content="lost")
    with pytest.raises(StoreError):
        await store.finish_turn(turn.id, other.id, "completed", input_tokens=1, output_tokens=0, answer=answer, mark="")
    assert [m.content for m in await store.get_messages(mine.id)] == ["hello"]
    assert [m.content for m in await store.get_messages(other.id)] == []
    assert await store.find_conversation([""]) is None
    assert (await store.get_session(other.id)).message_count == 0
    with pytest.raises(ValueError, match="assistant"):
        await store.finish_turn(turn.id, mine.id, "completed", input_tokens=0, output_tokens=0, answer=user("no"))


async def test_finish_turn_appends_the_answer_of_a_turn_already_ended(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    turn, _ = await store.open_turn(session.id, user("hello"))
    await store.save_draft(turn.id, "kept")
    await store.end_turn(turn.id, "interrupted")
    record = await store.finish_turn(
        turn.id, session.id, "completed", input_tokens=0, output_tokens=0,
        answer=NewMessage(role="assistant", content="late"),
    )  # fmt: skip
    assert record is not None
    assert [m.content for m in await store.get_messages(session.id)] == ["hello", "kept", "late"]
    stored = await store.get_session(session.id)
    assert (stored.message_count, stored.end_reason) == (3, "completed")
    ended = await store.get_turn(turn.id)
    assert ended is not None and ended.end_reason == "interrupted"  # its first end stays


async def test_the_answer_replaces_the_draft_in_place(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")
    turn = await store.begin_turn(session.id)
    question = await store.append_message(session.id, user("write"), turn_id=turn.id)
    await store.save_draft(turn.id, "Once")
    await store.save_draft(turn.id, "Once upon")
    opened = await store.get_turn(turn.id)
    assert opened is not None and opened.draft_message_id is not None
    rows = await store.get_messages(session.id)
    assert [(m.role, m.content) for m in rows] == [("user", "write"), ("assistant", "Once upon")]
    assert (await store.get_session(session.id)).message_count == 2  # a draft counts like any row
    assert await store.history(session.id) == [{"role": "user", "content": "write"}]  # drafts are never sent

    answer = await store.append_message(
        session.id,
        NewMessage(role="assistant", content="Once upon a time", tool_calls=CALLS[:1], finish_reason="tool_calls"),
        turn_id=turn.id,
    )
    assert answer.id == opened.draft_message_id  # same id, same place
    assert (answer.content, answer.tool_calls, answer.finish_reason) == ("Once upon a time", CALLS[:1], "tool_calls")
    record = await store.get_session(session.id)
    assert (record.message_count, record.tool_call_count) == (2, 1)
    current = await store.get_turn(turn.id)
    assert current is not None and current.draft_message_id is None
    result = NewMessage(role="tool", content="a.txt", tool_call_id="call_a", tool_name="terminal")
    tool = await store.append_message(session.id, result, turn_id=turn.id)
    assert [m.id for m in await store.turn_messages(turn.id)] == [question.id, answer.id, tool.id]
    assert await store.get_messages(session.id) == [question, answer, tool]
    assert [m["role"] for m in await store.history(session.id)] == ["user", "assistant", "tool"]


async def test_end_turn_keeps_a_leftover_draft_and_later_drafts_are_ignored(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="tui")
    turn = await store.begin_turn(session.id)
    await store.append_message(session.id, user("go"), turn_id=turn.id)
    await store.save_draft(turn.id, "partial answ")
    await store.end_turn(turn.id, "cancelled")
    ended = await store.get_turn(turn.id)
    assert ended is not None and (ended.end_reason, ended.draft_message_id) == ("cancelled", None)
    assert ended.ended_at is not None
    await store.end_turn(turn.id, "completed")  # the first end wins
    await store.save_draft(turn.id, "too late")  # no-op once ended
    rows = await store.get_messages(session.id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "go", None),
        ("assistant", "partial answ", "cancelled"),
    ]
    assert (await store.get_turn(turn.id)).end_reason == "cancelled"  # type: ignore[union-attr]
    assert (await store.get_session(session.id)).message_count == 2
    assert (await store.history(session.id))[-1] == {"role": "assistant", "content": "partial answ"}
    # An answer after the end is a new message, not a rewrite of the kept draft.
    late = await store.append_message(session.id, NewMessage(role="assistant", content="x"), turn_id=turn.id)
    assert late.id > rows[-1].id and (await store.get_session(session.id)).message_count == 3


async def test_turn_messages_stop_where_the_next_turn_starts(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    first = await store.begin_turn(session.id)
    one = await store.append_message(session.id, user("one"), turn_id=first.id)
    reply = await store.append_message(session.id, NewMessage(role="assistant", content="1"), turn_id=first.id)
    await store.end_turn(first.id, "completed")
    second = await store.begin_turn(session.id)
    two = await store.append_message(session.id, user("two"), turn_id=second.id)
    assert second.after_message_id == reply.id
    assert [m.id for m in await store.turn_messages(first.id)] == [one.id, reply.id]
    assert [m.id for m in await store.turn_messages(second.id)] == [two.id]


async def test_unknown_and_mismatched_turns(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    other = await store.create_session(source="cli")
    turn = await store.begin_turn(session.id)
    assert await store.get_turn(10**9) is None
    for call in (
        lambda: store.save_draft(10**9, "x"),
        lambda: store.end_turn(10**9, "completed"),
        lambda: store.turn_messages(10**9),
        lambda: store.append_message(session.id, NewMessage(role="assistant", content="x"), turn_id=10**9),
    ):
        with pytest.raises(StoreError, match="no turn"):
            await call()
    with pytest.raises(StoreError, match="belongs to session"):
        await store.append_message(other.id, NewMessage(role="assistant", content="x"), turn_id=turn.id)
    assert (await store.get_session(other.id)).message_count == 0


async def test_fork_leaves_drafts_out(storage: Storage) -> None:
    store = storage.sessions
    parent = await store.create_session(source="cli", title="Draft")
    turn = await store.begin_turn(parent.id)
    await store.append_message(parent.id, user("hi"), turn_id=turn.id)
    await store.save_draft(turn.id, "streaming…")
    child = await store.fork_session(parent.id)
    assert child.message_count == 1
    assert [m.content for m in await store.get_messages(child.id)] == ["hi"]


async def test_search_finds_a_draft_only_once_it_is_a_real_message(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    kept = await store.begin_turn(session.id)
    await store.save_draft(kept.id, "zebra crossing")
    answered = await store.begin_turn(session.id)
    await store.save_draft(answered.id, "giraffe draft")
    assert await store.search("zebra") == [] and await store.search("giraffe") == []
    await store.end_turn(kept.id, "cancelled")
    [hit] = await store.search("zebra")
    assert hit.role == "assistant" and ">>>zebra<<<" in hit.snippet
    await store.append_message(session.id, NewMessage(role="assistant", content="giraffe answer"), turn_id=answered.id)
    [hit] = await store.search("giraffe")
    assert "answer" in hit.snippet and await store.search("draft") == []


# -- repair ----------------------------------------------------------------------------


async def dead_owners_turn(storage: Storage, request: pytest.FixtureRequest, session_id: str, how: str) -> TurnRecord:
    """An open turn of `session_id` whose owner is gone: a reaped process (SQLite), or an
    instance whose lease expired (`how="expired"`) or is missing (PostgreSQL)."""
    if storage.backend == "sqlite":
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait(timeout=30)
        owner = ProcessOwner(host=socket.gethostname(), pid=proc.pid, started="")
        turn: TurnRecord = SyncStateDb.wrap(storage.sessions.state).begin_turn(session_id, owner=owner)  # type: ignore[attr-defined]
        return turn
    from hermes.store.postgres import open_postgres_storage

    other = await open_postgres_storage(request.getfixturevalue("pg_url"), instance_lease_ttl=300)
    try:
        turn = await other.sessions.begin_turn(session_id)
    finally:
        await other.aclose()  # releases the lease: missing
    if how == "expired":
        await storage.leases.register_instance(other.instance_id, ttl=-5, host="elsewhere", pid=1)
    return turn


@contextlib.asynccontextmanager
async def another_live_instance(storage: Storage, request: pytest.FixtureRequest) -> AsyncIterator[Storage | None]:
    """On PostgreSQL a second instance with a live lease (None on SQLite)."""
    if storage.backend == "sqlite":
        yield None
        return
    from hermes.store.postgres import open_postgres_storage

    other = await open_postgres_storage(request.getfixturevalue("pg_url"), instance_lease_ttl=300)
    try:
        yield other
    finally:
        await other.aclose()


async def test_repair_ends_only_the_turns_whose_owner_is_gone(storage: Storage, request: pytest.FixtureRequest) -> None:
    store = storage.sessions
    drafted = await store.create_session(source="api_server")
    turn_a = await dead_owners_turn(storage, request, drafted.id, "expired")
    await store.append_message(drafted.id, user("write"), turn_id=turn_a.id)
    await store.save_draft(turn_a.id, "Once upon a time")

    tooled = await store.create_session(source="api_server")
    turn_b = await dead_owners_turn(storage, request, tooled.id, "missing")
    await store.append_message(tooled.id, user("look"), turn_id=turn_b.id)
    await store.save_draft(turn_b.id, "Checking.")
    await store.append_message(
        tooled.id, NewMessage(role="assistant", content="Checking.", tool_calls=CALLS), turn_id=turn_b.id
    )
    result = NewMessage(role="tool", content="a.txt", tool_call_id="call_a", tool_name="terminal")
    await store.append_message(tooled.id, result, turn_id=turn_b.id)
    await store.end_session(tooled.id, "failed")  # the first end reason wins

    mine = await store.create_session(source="tui")
    live_turn = await store.begin_turn(mine.id)
    await store.save_draft(live_turn.id, "Hel")

    async with another_live_instance(storage, request) as other:
        theirs = None
        if other is not None:
            theirs = await other.sessions.begin_turn(mine.id)
            await other.sessions.save_draft(theirs.id, "Wor")

        repaired = await store.repair_abandoned_turns()
        assert sorted((r.turn_id, r.session_id, r.kept_text, r.placeholders) for r in repaired) == sorted(
            [(turn_a.id, drafted.id, True, 0), (turn_b.id, tooled.id, False, 1)]
        )
        assert await store.repair_abandoned_turns() == []  # idempotent

        for live in (live_turn, theirs):
            if live is not None:
                current = await store.get_turn(live.id)
                assert current is not None and current.ended_at is None and current.draft_message_id is not None
        assert (await store.get_session(mine.id)).end_reason is None

    rows = await store.get_messages(drafted.id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "write", None),
        ("assistant", "Once upon a time", "interrupted"),
    ]
    assert (await store.get_session(drafted.id)).end_reason == "interrupted"
    ended = await store.get_turn(turn_a.id)
    assert ended is not None and (ended.end_reason, ended.draft_message_id) == ("interrupted", None)
    assert (await store.history(drafted.id))[-1] == {"role": "assistant", "content": "Once upon a time"}

    rows = await store.get_messages(tooled.id)
    assert [(m.role, m.tool_call_id, m.content) for m in rows] == [
        ("user", None, "look"),
        ("assistant", None, "Checking."),
        ("tool", "call_a", "a.txt"),
        ("tool", "call_b", SERVER_STOPPED_TOOL_RESULT),
    ]
    assert rows[-1].tool_name == "read_file"
    record = await store.get_session(tooled.id)
    assert (record.message_count, record.tool_call_count, record.end_reason) == (4, 2, "failed")


async def test_repair_with_nothing_open_does_nothing(storage: Storage) -> None:
    session = await storage.sessions.create_session(source="cli")
    turn = await storage.sessions.begin_turn(session.id)
    await storage.sessions.end_turn(turn.id, "completed")
    assert await storage.sessions.repair_abandoned_turns() == []


# -- compaction markers ----------------------------------------------------------------


async def test_compaction_markers_are_recorded_listed_forked_and_deleted(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli", title="Long")
    messages = [await store.append_message(session.id, user(f"m{n}")) for n in range(5)]
    first = await store.add_compaction(
        session.id,
        NewCompaction(summary="s1", first_kept_message_id=messages[2].id, summarized_messages=2,
                      before_tokens=100, after_tokens=10),
    )  # fmt: skip
    assert (first.session_id, first.summary, first.first_kept_message_id) == (session.id, "s1", messages[2].id)
    assert (first.summarized_messages, first.before_tokens, first.after_tokens) == (2, 100, 10)
    second = await store.add_compaction(session.id, NewCompaction(summary="s2", first_kept_message_id=messages[4].id))
    assert second.id > first.id and second.created_at >= first.created_at
    assert await store.compactions(session.id) == [first, second]
    assert await store.compactions("nope") == []
    with pytest.raises(SessionNotFound):
        await store.add_compaction("nope", NewCompaction(summary="x", first_kept_message_id=1))

    # A fork keeps the markers that fall inside what it copies, pointing at the copies.
    child = await store.fork_session(session.id, at_message_id=messages[3].id)
    copies = await store.get_messages(child.id)
    [copied] = await store.compactions(child.id)
    assert (copied.summary, copied.first_kept_message_id, copied.before_tokens) == ("s1", copies[2].id, 100)
    early = await store.fork_session(session.id, at_message_id=messages[1].id)
    assert await store.compactions(early.id) == []

    await store.delete_session(session.id)
    assert await store.compactions(session.id) == []
    assert len(await store.compactions(child.id)) == 1


# -- transaction() -----------------------------------------------------------------------


async def test_the_block_commits_together(storage: Storage) -> None:
    store = storage.sessions
    async with store.transaction():
        session = await store.create_session(source="api_server")
        turn = await store.begin_turn(session.id)
        await store.append_message(session.id, user("q"), turn_id=turn.id)
        assert (await store.get_session(session.id)).message_count == 1  # the block reads its own writes
        if storage.backend == "postgres":
            # Another task (a fresh context) uses the pool and cannot see it before the commit.
            outside = asyncio.create_task(store.find_session(session.id), context=contextvars.Context())
            assert await outside is None
    await store.append_message(session.id, NewMessage(role="assistant", content="a"), turn_id=turn.id)
    async with store.transaction():
        await store.end_turn(turn.id, "completed")
        await store.add_usage(session.id, input_tokens=3, output_tokens=1)
        await store.end_session(session.id, "completed")
    ended = await store.get_session(session.id)
    assert (ended.end_reason, ended.input_tokens, ended.message_count) == ("completed", 3, 2)
    assert (await store.get_turn(turn.id)).end_reason == "completed"  # type: ignore[union-attr]


async def test_an_exception_leaving_the_block_undoes_all_of_it(storage: Storage) -> None:
    store = storage.sessions
    kept = await store.create_session(source="cli")
    with pytest.raises(RuntimeError, match="boom"):
        async with store.transaction():
            session = await store.create_session(source="cli")
            turn = await store.begin_turn(session.id)
            await store.append_message(session.id, user("hi"), turn_id=turn.id)
            await store.save_draft(turn.id, "dra")
            await store.add_compaction(session.id, NewCompaction(summary="s", first_kept_message_id=1))
            await store.append_message(kept.id, user("lost"))
            raise RuntimeError("boom")
    assert await store.find_session(session.id) is None
    assert await store.get_turn(turn.id) is None
    assert await store.compactions(session.id) == []
    assert await store.get_messages(kept.id) == []
    assert (await store.get_session(kept.id)).message_count == 0
    assert await store.count_sessions() == 1
    await store.append_message(kept.id, user("after"))  # the store is usable again
    assert (await store.get_session(kept.id)).message_count == 1


async def test_a_failed_write_caught_inside_leaves_the_rest(storage: Storage) -> None:
    store = storage.sessions
    async with store.transaction():
        session = await store.create_session(source="cli")
        with pytest.raises(SessionNotFound):
            await store.append_message("no-such-session", user("lost"))
        await store.append_message(session.id, user("kept"))
    assert [m.content for m in await store.get_messages(session.id)] == ["kept"]


async def test_a_nested_block_that_fails_is_undone_alone(storage: Storage) -> None:
    store = storage.sessions
    async with store.transaction():
        session = await store.create_session(source="cli")
        await store.append_message(session.id, user("outer"))
        with pytest.raises(RuntimeError):
            async with store.transaction():
                await store.append_message(session.id, user("inner"))
                raise RuntimeError("undo the inner block")
        await store.append_message(session.id, user("after"))
    assert [m.content for m in await store.get_messages(session.id)] == ["outer", "after"]
    assert (await store.get_session(session.id)).message_count == 2


async def test_a_task_started_in_a_block_that_outlives_it_still_works(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="cli")
    go = asyncio.Event()

    async def later() -> None:
        await go.wait()
        await store.append_message(session.id, user("from the task"))

    async with store.transaction():
        await store.append_message(session.id, user("in the block"))
        task = asyncio.create_task(later())  # inherits the block's context
    go.set()
    await asyncio.wait_for(task, 10)
    async with store.transaction():  # the block's connection is free for others again
        await store.append_message(session.id, user("next block"))
    assert [m.content for m in await store.get_messages(session.id)] == ["in the block", "from the task", "next block"]


async def test_transactions_of_concurrent_tasks_stay_apart(storage: Storage) -> None:
    store = storage.sessions
    session = await store.create_session(source="api_server")

    async def turn(n: int) -> None:
        for _ in range(3):
            async with store.transaction():
                await store.append_message(session.id, user(f"q{n}"))
                await store.append_message(session.id, NewMessage(role="assistant", content=f"a{n}"))

    await asyncio.gather(*(turn(n) for n in range(4)))
    assert (await store.get_session(session.id)).message_count == 24
    assert len(await store.get_messages(session.id)) == 24


async def test_postgres_a_database_error_in_the_block_commits_nothing(pg_storage: Storage) -> None:
    store = pg_storage.sessions
    with pytest.raises(StoreError, match="nothing was committed"):
        async with store.transaction():
            session = await store.create_session(source="cli")
            with pytest.raises(StoreError, match="out of range"):
                await store.append_message(session.id, NewMessage(role="assistant", content="x", token_count=2**40))
    assert await store.find_session(session.id) is None



async def test_start_up_repair_is_a_storage_operation(storage: Storage, request: pytest.FixtureRequest) -> None:
    session = await storage.sessions.create_session(source="api_server")
    turn = await dead_owners_turn(storage, request, session.id, "expired")
    await storage.repair_after_crash()
    after = await storage.sessions.get_turn(turn.id)
    assert after is not None
    if storage.caps.multi_instance:
        assert after.ended_at is None  # leases decide, in the orphan sweeper
    else:
        assert after.end_reason == "interrupted"  # a dead process's turn, repaired at start-up
        assert (await storage.sessions.get_session(session.id)).end_reason == "interrupted"
