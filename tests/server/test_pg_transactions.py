"""PostgreSQL: a turn's writes hold no transaction open while hermes' event loop is busy.

Each turn write is one statement (autocommit: its own transaction, committed by the
server before the answer comes back), so a pooled connection never sits `idle in
transaction` waiting for a busy loop to send its next statement. Checked at the server:

- the statements hermes sends are read from PostgreSQL's own statement log
  (`log_statement = all` for the test's database only): no BEGIN, one statement per
  write of a turn (the store's writes one by one, and whole chat completions);
- `pg_stat_activity`, sampled from another thread while a burst of streamed chat
  completions runs on a loop that a CPU hog keeps busy, never shows a connection of
  the test's database `idle in transaction`.

Skips with the reason where PostgreSQL is missing (fails under CI=true): `pg_url` fixture.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _runs_fixtures import FAST
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.engine import Agent
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.server.http.app import create_app
from hermes.store.api import Storage
from hermes.store.records import NewMessage, NewSession
from hermes.testing.postgres import PostgresServer
from hermes.testing.upstream import ScriptedUpstream, text_reply

LONG_LEASE = 3600.0
"""No lease heartbeat during a test: every statement logged is a turn's."""


class StatementLog:
    """The statements PostgreSQL logs for one database from `mark()` on (its server log)."""

    def __init__(self, server: PostgresServer, url: str) -> None:
        import psycopg

        self._log = server.root / "server.log"
        self._offset = 0
        database = url.rsplit("/", 1)[1]
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {database} SET log_statement = 'all'")

    def mark(self) -> None:
        self._offset = self._log.stat().st_size

    def take(self) -> list[str]:
        """The statements logged since `mark()` (then marks again): the first line of each."""
        text = self._log.read_bytes()[self._offset :].decode("utf-8", "replace")
        self.mark()
        found = []
        for line in text.splitlines():
            for tag in ("LOG:  statement: ", "LOG:  execute "):
                if tag in line:
                    found.append(line.split(tag, 1)[1])
        return found


@pytest.fixture
def statements(pg_server: PostgresServer, pg_url: str) -> StatementLog:
    return StatementLog(pg_server, pg_url)


@pytest.fixture
async def storage(pg_url: str, statements: StatementLog) -> AsyncIterator[Storage]:
    from hermes.store.postgres import open_postgres_storage

    opened = await open_postgres_storage(pg_url, instance_lease_ttl=LONG_LEASE)
    try:
        yield opened
    finally:
        await opened.aclose()


def _begins(logged: list[str]) -> list[str]:
    return [s for s in logged if s.strip().upper() in ("BEGIN", "START TRANSACTION") or "SAVEPOINT" in s.upper()]


async def test_each_write_of_a_turn_is_one_statement(storage: Storage, statements: StatementLog) -> None:
    store = storage.sessions

    async def one(write: Any) -> Any:
        statements.mark()
        result = await write
        logged = statements.take()
        assert len(logged) == 1 and not _begins(logged), logged
        return result

    new = NewSession(id="s-one", given=True, source="api_server", title="one statement")
    turn, _ = await one(store.start_turn(new, [NewMessage(role="user", content="hello")]))
    await one(store.save_draft(turn.id, "first checkpoint"))  # inserts the draft
    await one(store.save_draft(turn.id, "first checkpoint, longer"))  # overwrites it
    await one(store.append_message("s-one", NewMessage(role="assistant", content="answer"), turn_id=turn.id))
    await one(store.finish_turn(turn.id, "s-one", "completed", input_tokens=3, output_tokens=2))
    await one(store.mark_conversation("s-one", "fingerprint"))
    # The next turn of the same session, with a continuation's two inputs in one write.
    second, records = await one(
        store.start_turn(
            "s-one",
            [NewMessage(role="tool", content="r1", tool_call_id="c1"), NewMessage(role="tool", content="r2")],
        )
    )
    await one(store.append_message("s-one", NewMessage(role="assistant", content="done"), turn_id=second.id))
    await one(store.end_turn(second.id, "completed"))
    # A turn's end with its answer and the conversation mark: one statement too.
    third, _ = await one(store.start_turn("s-one", [NewMessage(role="user", content="and?")]))
    await one(store.save_draft(third.id, "so"))
    answer = NewMessage(role="assistant", content="so it goes")
    usage = {"input_tokens": 1, "output_tokens": 1}
    ending = store.finish_turn(third.id, "s-one", "completed", **usage, answer=answer, mark="fp")
    await one(ending)

    assert [r.content for r in records] == ["r1", "r2"] and records[0].id < records[1].id
    session = await store.get_session("s-one")
    assert (session.message_count, session.input_tokens, session.end_reason) == (7, 4, "completed")
    contents = [m.content for m in await store.get_messages("s-one")]
    assert contents == ["hello", "answer", "r1", "r2", "done", "and?", "so it goes"]
    mark = await store.find_conversation(["fp"])
    assert mark is not None and mark.latest and (await store.get_turn(third.id)).end_reason == "completed"  # type: ignore[union-attr]


async def test_an_assistant_message_replaces_the_draft_in_place(storage: Storage) -> None:
    store = storage.sessions
    turn, _ = await store.start_turn(NewSession(id="s-d", given=True, source="cli"), [NewMessage("user", "q")])
    await store.save_draft(turn.id, "partial")
    record = await store.append_message("s-d", NewMessage(role="assistant", content="whole"), turn_id=turn.id)
    messages = await store.get_messages("s-d")
    assert [(m.id, m.content) for m in messages][-1] == (record.id, "whole")
    assert len(messages) == 2 and (await store.get_session("s-d")).message_count == 2
    assert (await store.get_turn(turn.id)).draft_message_id is None  # type: ignore[union-attr]


async def test_a_generated_session_id_that_is_taken_is_replaced(storage: Storage) -> None:
    store = storage.sessions
    await store.create_session(source="cli", session_id="taken-id")
    turn, _ = await store.start_turn(NewSession(id="taken-id", given=False, source="cli"), [NewMessage("user", "x")])
    assert turn.session_id != "taken-id"
    assert (await store.get_session(turn.session_id)).message_count == 1
    with pytest.raises(Exception, match="already exists"):
        await store.start_turn(NewSession(id="taken-id", given=True, source="cli"), [NewMessage("user", "y")])


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
async def client(storage: Storage, upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[TestClient]:
    settings = Settings.load({"home": str(tmp_path / "home"), "model": "scripted-model"}, env={})
    settings.ensure_home()
    agent = Agent(
        OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"), store=storage.sessions,
        model="scripted-model", tools=ToolRegistry([]), options=FAST, system_prompt="Test agent.",
    )  # fmt: skip
    client = TestClient(TestServer(create_app(settings, storage=storage, agent=agent)))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        await agent.aclose()


async def _complete(client: TestClient, text: str, *, stream: bool) -> str:
    body = {"model": "scripted-model", "messages": [{"role": "user", "content": text}], "stream": stream}
    resp = await client.post("/v1/chat/completions", json=body)
    assert resp.status == 200, await resp.text()
    return await resp.text()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_chat_completion_opens_no_transaction(
    client: TestClient, upstream: ScriptedUpstream, statements: StatementLog, stream: bool
) -> None:
    upstream.enqueue(text_reply("warm up."), text_reply("one two three four."))
    await _complete(client, "warm up", stream=stream)
    statements.mark()
    await _complete(client, "count my statements", stream=stream)
    logged = statements.take()
    assert _begins(logged) == [], logged
    writes = [s for s in logged if not s.split(":", 1)[-1].lstrip().upper().startswith("SELECT")]
    # A new conversation's derived session is neither claimed (no receipt taken or
    # released) nor looked up: the opening write creates it, or a fresh one where a session
    # has the derived id. What is left is the turn's own two writes: the opening (session,
    # turn, input) and the end (the answer, the turn's end, usage, the session's end and
    # the conversation mark).
    assert [s for s in logged if "hermes.receipts" in s] == []
    assert len(writes) == 2 and len(logged) == len(writes), logged


@pytest.mark.parametrize("stream", [False, True])
async def test_a_resent_conversation_is_marked_by_the_turns_end_write(
    client: TestClient, upstream: ScriptedUpstream, statements: StatementLog, stream: bool
) -> None:
    # Chat completions and Responses alike: the conversation mark rides on the turn's end
    # statement (which also ends the turn), never a write of its own after the answer.
    upstream.enqueue(text_reply("Hi there."), text_reply("Still here."), text_reply("Yes."), text_reply("Sure."))
    for url, first in (("/v1/chat/completions", "messages"), ("/v1/responses", "input")):
        opening = [{"role": "user", "content": f"hello over {url}"}]
        resp = await client.post(url, json={"model": "scripted-model", first: opening, "stream": stream})
        assert resp.status == 200, await resp.text()
        session = resp.headers["X-Hermes-Session-Id"]
        await resp.read()
        statements.mark()
        resent = [*opening, {"role": "assistant", "content": "Hi there." if "chat" in url else "Yes."},
                  {"role": "user", "content": "still there?"}]  # fmt: skip
        resp = await client.post(url, json={"model": "scripted-model", first: resent, "stream": stream})
        assert resp.status == 200, await resp.text()
        assert resp.headers["X-Hermes-Session-Id"] == session  # the resent conversation continued it
        await resp.read()
        marks = [w for w in statements.take() if "conversation_marks" in w and "INSERT" in w.upper()]
        assert len(marks) == 1 and "UPDATE hermes.turns" in marks[0], marks


async def test_a_busy_loop_never_leaves_a_transaction_open(
    client: TestClient, upstream: ScriptedUpstream, pg_server: PostgresServer, pg_url: str
) -> None:
    import psycopg

    streams = 12
    for i in range(streams):
        upstream.enqueue(text_reply(" ".join(f"w{i}.{n}" for n in range(40))))
    database = pg_url.rsplit("/", 1)[1]
    seen: list[tuple[Any, ...]] = []
    samples = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal samples
        with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
            while not done.is_set():
                rows = conn.execute(
                    "SELECT pid, state, left(query, 80) FROM pg_stat_activity "
                    "WHERE datname = %s AND state LIKE 'idle in transaction%%'",
                    (database,),
                ).fetchall()
                seen.extend(rows)
                samples += 1

    async def hog() -> None:
        # Keeps the loop busy in 20 ms slices, as relaying thousands of chunks does.
        while not done.is_set():
            until = time.perf_counter() + 0.02
            while time.perf_counter() < until:
                pass
            await asyncio.sleep(0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    hogging = asyncio.ensure_future(hog())
    try:
        bodies = await asyncio.gather(*(_complete(client, f"busy {i}", stream=True) for i in range(streams)))
    finally:
        done.set()
        await hogging
        sampler.join(30)
    assert all("[DONE]" in body for body in bodies)
    assert samples > 0
    assert seen == [], seen
