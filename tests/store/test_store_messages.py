"""Messages: exact round-trips, counters, history shape, durability, threads."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from hermes.store.records import NewMessage
from hermes.store.sqlite.sessions import SqliteSessionStore

PARTS: list[dict[str, Any]] = [
    {"type": "text", "text": "What is in this picture? ünïcødé ✓"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
    {"type": "text", "text": ""},
]
TOOL_CALLS: list[dict[str, Any]] = [
    {"id": "call_1", "type": "function",
     "function": {"name": "terminal", "arguments": '{"command": "ls -la"}'}},
    {"id": "call_2", "type": "function",
     "function": {"name": "read_file", "arguments": '{"path": "a \\"quoted\\" name"}'}},
]  # fmt: skip


def test_content_round_trips_exactly(store: SqliteSessionStore, db_path: Path) -> None:
    session = store.create_session(source="cli")
    contents: list[Any] = ["plain text", "", None, PARTS, [], "[1, 2]", '{"json": "text"}']
    for content in contents:
        store.append_message(session.id, NewMessage(role="user", content=content))
    store.close()

    reopened = SqliteSessionStore(db_path)
    try:
        got = [m.content for m in reopened.get_messages(session.id)]
    finally:
        reopened.close()
    assert got == contents
    assert [type(c) for c in got] == [type(c) for c in contents]  # str stays str, list stays list


def test_append_returns_what_get_messages_returns(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    parts = [dict(part) for part in PARTS]
    returned = store.append_message(
        session.id,
        NewMessage(role="user", content=parts, reasoning="r", finish_reason="stop", token_count=7),
    )
    parts.append({"type": "text", "text": "mutated after append"})
    (stored,) = store.get_messages(session.id)
    assert returned == stored
    assert stored.content == PARTS
    assert (stored.reasoning, stored.finish_reason, stored.token_count) == ("r", "stop", 7)
    assert stored.to_json()["object"] == "message"


def test_content_of_another_type_is_rejected(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    try:
        bad = NewMessage(role="user", content={"a": 1})  # type: ignore[arg-type]
        store.append_message(session.id, bad)
    except TypeError:
        pass
    else:
        raise AssertionError("a dict content should be rejected")
    assert store.get_session(session.id).message_count == 0


def test_tool_calls_round_trip_and_counts(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="list files"))
    call = store.append_message(
        session.id, NewMessage(role="assistant", content=None, tool_calls=TOOL_CALLS)
    )
    store.append_message(
        session.id,
        NewMessage(role="tool", content="a.txt", tool_call_id="call_1", tool_name="terminal"),
    )
    store.append_message(
        session.id,
        NewMessage(role="tool", content="text", tool_call_id="call_2", tool_name="read_file"),
    )
    store.append_message(
        session.id, NewMessage(role="assistant", content="done", tool_calls=TOOL_CALLS[:1])
    )
    record = store.get_session(session.id)
    assert record.message_count == 5
    assert record.tool_call_count == 3
    assert record.updated_at >= call.timestamp
    messages = store.get_messages(session.id)
    assert messages[1].tool_calls == TOOL_CALLS
    assert messages[1].content is None
    assert messages[2].tool_call_id == "call_1" and messages[2].tool_name == "terminal"
    assert messages[0].tool_calls is None


def test_get_messages_order_limit_offset(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli")
    other = store.create_session(source="cli")
    for index in range(6):
        store.append_message(session.id, NewMessage(role="user", content=f"m{index}"))
        store.append_message(other.id, NewMessage(role="user", content=f"other{index}"))
    all_messages = store.get_messages(session.id)
    assert [m.content for m in all_messages] == [f"m{i}" for i in range(6)]
    assert [m.id for m in all_messages] == sorted(m.id for m in all_messages)
    timestamps = [m.timestamp for m in all_messages]
    assert timestamps == sorted(timestamps)
    assert [m.content for m in store.get_messages(session.id, limit=2)] == ["m0", "m1"]
    assert [m.content for m in store.get_messages(session.id, limit=2, offset=3)] == ["m3", "m4"]
    assert [m.content for m in store.get_messages(session.id, offset=5)] == ["m5"]
    assert store.get_messages(session.id, offset=6) == []


def test_history_is_ready_to_resend(store: SqliteSessionStore) -> None:
    session = store.create_session(source="cli", system_prompt="you are hermes")
    store.append_message(session.id, NewMessage(role="user", content=PARTS))
    store.append_message(
        session.id,
        NewMessage(role="assistant", content=None, tool_calls=TOOL_CALLS[:1], reasoning="think"),
    )
    store.append_message(
        session.id,
        NewMessage(role="tool", content="a.txt", tool_call_id="call_1", tool_name="terminal"),
    )
    store.append_message(session.id, NewMessage(role="assistant", content="There is a.txt"))
    assert store.history(session.id) == [
        {"role": "user", "content": PARTS},
        {"role": "assistant", "content": None, "tool_calls": TOOL_CALLS[:1]},
        {"role": "tool", "content": "a.txt", "tool_call_id": "call_1", "name": "terminal"},
        {"role": "assistant", "content": "There is a.txt"},
    ]


def test_from_openai_round_trip(store: SqliteSessionStore) -> None:
    session = store.create_session(source="api_server")
    sent = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": TOOL_CALLS},
        {"role": "tool", "content": "out", "tool_call_id": "call_1", "name": "terminal"},
        {"role": "tool", "content": "text", "tool_call_id": "call_2", "name": "read_file"},
    ]
    for message in sent:
        store.append_message(session.id, NewMessage.from_openai(message))
    assert store.history(session.id) == sent


def test_append_is_visible_to_a_second_connection(store: SqliteSessionStore, db_path: Path) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="are you durable?"))
    # The first store stays open (as if its process were about to crash).
    second = SqliteSessionStore(db_path)
    try:
        assert [m.content for m in second.get_messages(session.id)] == ["are you durable?"]
        assert second.get_session(session.id).message_count == 1
    finally:
        second.close()


def test_append_survives_a_killed_process(db_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from hermes.store.records import NewMessage
        from hermes.store.sqlite.sessions import SqliteSessionStore
        store = SqliteSessionStore({str(db_path)!r})
        session = store.create_session(source="cli", title="crashy")
        store.append_message(session.id, NewMessage(role="user", content="written before crash"))
        print(session.id, flush=True)
        os._exit(9)  # no close, no cleanup: like a crash mid-turn
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert result.returncode == 9, result.stderr
    session_id = result.stdout.strip()
    store = SqliteSessionStore(db_path)
    try:
        assert store.get_session(session_id).title == "crashy"
        assert [m.content for m in store.get_messages(session_id)] == ["written before crash"]
        assert store.integrity_check() == "ok"
    finally:
        store.close()


async def test_concurrent_appends_from_worker_threads(store: SqliteSessionStore) -> None:
    session = store.create_session(source="tui")

    def append(worker: int) -> None:
        for index in range(25):
            store.append_message(
                session.id,
                NewMessage(role="assistant", content=f"w{worker}-{index}", tool_calls=TOOL_CALLS),
            )
            store.list_sessions(limit=5)

    await asyncio.gather(*(asyncio.to_thread(append, worker) for worker in range(6)))
    record = store.get_session(session.id)
    assert record.message_count == 150
    assert record.tool_call_count == 300
    contents = {m.content for m in store.get_messages(session.id)}
    assert contents == {f"w{w}-{i}" for w in range(6) for i in range(25)}
    assert store.integrity_check() == "ok"


def test_two_stores_writing_the_same_file(db_path: Path) -> None:
    first = SqliteSessionStore(db_path)
    second = SqliteSessionStore(db_path)
    try:
        session = first.create_session(source="cli")
        for index in range(10):
            (first if index % 2 else second).append_message(
                session.id, NewMessage(role="user", content=str(index))
            )
        assert [m.content for m in first.get_messages(session.id)] == [str(i) for i in range(10)]
        assert second.get_session(session.id).message_count == 10
    finally:
        first.close()
        second.close()
