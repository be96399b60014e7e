"""`SyncStateDb.transaction()`: several writes, one commit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes.errors import SessionNotFound, StoreError
from hermes.store.records import NewMessage, NewSession
from hermes.testing.state_db import SyncStateDb


def _other_reader(db_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(db_path)


def test_writes_inside_are_committed_together_when_the_block_exits(store: SyncStateDb, db_path: Path) -> None:
    reader = _other_reader(db_path)
    try:
        with store.transaction():
            session = store.create_session(source="cli")
            store.append_message(session.id, NewMessage(role="user", content="hi"))
            # Not visible to another connection before the block ends.
            assert reader.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        assert reader.execute("SELECT count(*) FROM messages").fetchone()[0] == 1
    finally:
        reader.close()
    assert store.get_session(session.id).message_count == 1


def test_an_exception_leaving_the_block_undoes_all_of_it(store: SyncStateDb) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        session = store.create_session(source="cli")
        store.append_message(session.id, NewMessage(role="user", content="hi"))
        raise RuntimeError("boom")
    assert store.find_session(session.id) is None


def test_a_failed_write_caught_inside_is_undone_alone(store: SyncStateDb) -> None:
    with store.transaction():
        session = store.create_session(source="cli")
        with pytest.raises(SessionNotFound):
            store.append_message("no-such-session", NewMessage(role="user", content="lost"))
        store.append_message(session.id, NewMessage(role="user", content="kept"))
    assert [m.content for m in store.get_messages(session.id)] == ["kept"]
    assert store.integrity_check() == "ok"


def test_a_plain_turn_commits_three_times(store: SyncStateDb) -> None:
    # What the engine does for one answer without tools: open, answer, end.
    commits: list[str] = []
    store.executor.connection().set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    with store.transaction():
        session = store.create_session(source="api_server")
        turn = store.begin_turn(session.id)
        store.append_message(session.id, NewMessage(role="user", content="q"), turn_id=turn.id)
    store.append_message(session.id, NewMessage(role="assistant", content="a"), turn_id=turn.id)
    with store.transaction():
        store.end_turn(turn.id, "completed")
        store.add_usage(session.id, input_tokens=3, output_tokens=1)
        store.end_session(session.id, "completed")
    assert len(commits) == 3
    ended = store.get_session(session.id)
    assert (ended.end_reason, ended.input_tokens, ended.message_count) == ("completed", 3, 2)


async def test_a_turns_writes_take_no_savepoints(store: SyncStateDb) -> None:
    # The rules' nested transactions (a rule calling a rule) join the open one.
    logged: list[str] = []
    store.executor.connection().set_trace_callback(logged.append)
    rules = store.sessions
    new = NewSession(id="s-turn", given=True, source="api_server")
    turn, _ = await rules.start_turn(new, [NewMessage(role="user", content="q")])
    await rules.save_draft(turn.id, "partial")
    await rules.append_message("s-turn", NewMessage(role="assistant", content="a"), turn_id=turn.id)
    await rules.finish_turn(turn.id, "s-turn", "completed", input_tokens=3, output_tokens=1)
    assert not [sql for sql in logged if "SAVEPOINT" in sql or sql.startswith("RELEASE")], logged
    assert logged.count("COMMIT") == 4
    ended = store.get_session("s-turn")
    assert (ended.end_reason, ended.input_tokens, ended.message_count) == ("completed", 3, 2)
    assert [m.content for m in store.get_messages("s-turn")] == ["q", "a"]


_NEW = "INSERT INTO hermes.sessions (id, source, started_at, updated_at) VALUES (?, 'x', 1, 1)"


async def test_a_nested_rule_that_fails_undoes_the_enclosing_rule(store: SyncStateDb) -> None:
    db = store.executor
    with pytest.raises(StoreError):
        async with db.transaction():
            await db.execute(_NEW, ("a",))
            async with db.transaction():
                await db.execute("INSERT INTO hermes.no_such_table VALUES (1)")
    assert store.find_session("a") is None
    assert not store.executor.connection().in_transaction


async def test_a_rule_that_fails_in_a_callers_block_is_undone_alone(store: SyncStateDb) -> None:
    db = store.executor
    async with db.block():
        await db.execute(_NEW, ("a",))
        with pytest.raises(StoreError):
            async with db.transaction():
                await db.execute(
                    "INSERT INTO hermes.sessions (id, source, started_at, updated_at) VALUES ('b', 'x', 1, 1)"
                )
                await db.execute("INSERT INTO hermes.no_such_table VALUES (1)")
        async with db.transaction():  # the next rule is a savepoint of the block again
            await db.execute(_NEW, ("c",))
    assert [store.find_session(i) is not None for i in "abc"] == [True, False, True]
