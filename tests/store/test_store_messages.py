"""Messages in a SQLite file: reopened, a second connection, a killed process, threads.

The rules on both backends are in tests/storage_contract/test_store_messages_contract.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from hermes.store.records import NewMessage
from hermes.testing.state_db import SyncStateDb

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


def test_content_round_trips_exactly(store: SyncStateDb, db_path: Path) -> None:
    session = store.create_session(source="cli")
    contents: list[Any] = ["plain text", "", None, PARTS, [], "[1, 2]", '{"json": "text"}']
    for content in contents:
        store.append_message(session.id, NewMessage(role="user", content=content))
    store.close()

    reopened = SyncStateDb(db_path)
    try:
        got = [m.content for m in reopened.get_messages(session.id)]
    finally:
        reopened.close()
    assert got == contents
    assert [type(c) for c in got] == [type(c) for c in contents]  # str stays str, list stays list


def test_append_is_visible_to_a_second_connection(store: SyncStateDb, db_path: Path) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="are you durable?"))
    # The first store stays open (as if its process were about to crash).
    second = SyncStateDb(db_path)
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
        from hermes.testing.state_db import SyncStateDb
        store = SyncStateDb({str(db_path)!r})
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
    store = SyncStateDb(db_path)
    try:
        assert store.get_session(session_id).title == "crashy"
        assert [m.content for m in store.get_messages(session_id)] == ["written before crash"]
        assert store.integrity_check() == "ok"
    finally:
        store.close()


async def test_concurrent_appends_from_worker_threads(store: SyncStateDb) -> None:
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
    first = SyncStateDb(db_path)
    second = SyncStateDb(db_path)
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
