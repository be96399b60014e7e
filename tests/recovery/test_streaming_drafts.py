"""Streamed assistant text is saved to the store as a draft while it streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.agent._turn_recorder import TurnRecorder
from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import SegmentEnd, TextDelta
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.agent.types import TurnRequest
from hermes.store.records import NewMessage
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.state_db import SyncStateDb
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

WORDS = " ".join(f"w{i}" for i in range(60))


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SyncStateDb]:
    with SyncStateDb(db_path) as opened:
        yield opened


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return "echoed"


def _agent(upstream: ScriptedUpstream, store: SyncStateDb, sessions: SqliteSessions | None = None) -> Agent:
    return Agent(
        OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
        store=sessions or store.sessions,
        model="scripted-model",
        tools=ToolRegistry([Tool("echo", "echo", {"type": "object", "properties": {}}, _echo, read_only=True)]),
        options=EngineOptions(stream_retries=0, stale_timeout=10.0),
    )


class CountingSessions(SqliteSessions):
    """The real store, counting draft writes."""

    def __init__(self, store: SyncStateDb) -> None:
        super().__init__(store.state)
        self.draft_writes: list[str] = []

    async def save_draft(self, turn_id: int, content: str) -> None:
        self.draft_writes.append(content)
        await super().save_draft(turn_id, content)


async def test_a_second_connection_sees_the_text_while_it_streams(
    upstream: ScriptedUpstream, store: SyncStateDb, db_path: Path
) -> None:
    upstream.enqueue(text_reply(WORDS, chunk_delay=0.05))  # about 3 s of streaming
    agent = _agent(upstream, store)
    seen: list[str] = []
    with SyncStateDb(db_path) as reader:

        async def watch(session_id: str) -> None:
            while True:
                rows = reader.get_messages(session_id)
                if len(rows) == 2 and isinstance(rows[1].content, str):
                    seen.append(rows[1].content)
                await asyncio.sleep(0.05)

        watcher: asyncio.Task[None] | None = None
        streamed: list[str] = []
        async for event in agent.run_turn(TurnRequest(input="count")):
            if event.type == "turn.started":
                watcher = asyncio.create_task(watch(event.session_id))
            elif isinstance(event, TextDelta):
                streamed.append(event.text)
            elif event.type == "turn.completed":
                result = event.result
        assert watcher is not None
        watcher.cancel()
        await agent.aclose()
    assert result.status == "completed"
    partial = [text for text in seen if text != WORDS]
    assert partial, "no draft was visible before the answer was complete"
    assert all(WORDS.startswith(text) for text in seen)
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.content) for m in rows] == [("user", "count"), ("assistant", WORDS)]
    assert store.open_turns() == []
    assert store.integrity_check() == "ok"


async def test_no_write_per_delta(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    upstream.enqueue(text_reply(WORDS, chunk_delay=0.05))
    store = SyncStateDb(tmp_path / "state.db")
    counting = CountingSessions(store)
    try:
        agent = _agent(upstream, store, counting)
        deltas = 0
        async for event in agent.run_turn(TurnRequest(input="count")):
            deltas += isinstance(event, TextDelta)
        await agent.aclose()
    finally:
        store.close()
    assert deltas == 60
    # About one write a second over ~3 s of streaming (more if the machine is slow); never one per delta.
    assert 1 <= len(counting.draft_writes) < deltas // 2
    assert all(WORDS.startswith(text) for text in counting.draft_writes)


async def test_the_segment_before_tools_is_final_at_segment_end(
    upstream: ScriptedUpstream, store: SyncStateDb
) -> None:
    upstream.enqueue(tool_reply([call("echo", {}, id="c1")], text="Let me check first."), text_reply("Done."))
    agent = _agent(upstream, store)
    at_segment_end: list[list[tuple[str, Any, bool]]] = []
    session_id = ""
    async for event in agent.run_turn(TurnRequest(input="check")):
        if event.type == "turn.started":
            session_id = event.session_id
        if isinstance(event, SegmentEnd):
            at_segment_end.append([(m.role, m.content, bool(m.tool_calls)) for m in store.get_messages(session_id)])
    await agent.aclose()
    assert at_segment_end == [[("user", "check", False), ("assistant", "Let me check first.", True)]]
    assert [m.role for m in store.get_messages(session_id)] == ["user", "assistant", "tool", "assistant"]


async def test_drafts_with_a_manual_clock(store: SyncStateDb) -> None:
    now = [100.0]
    session = store.create_session(source="cli")
    recorder = TurnRecorder(store.sessions, session.id, interval=1.0, clock=lambda: now[0])
    await recorder.record(NewMessage(role="user", content="hi"))
    parts: list[str] = []
    for i in range(50):  # a burst within one interval: no write
        parts.append(f"{i} ")
        recorder.streamed(parts)
    await recorder.drain()
    assert [m.role for m in store.get_messages(session.id)] == ["user"]
    now[0] += 1.0
    parts.append("more")
    recorder.streamed(parts)  # the interval has passed: one write, of everything so far
    await recorder.drain()
    assert store.get_messages(session.id)[-1].content == "".join(parts)
    await recorder.record(NewMessage(role="assistant", content="final"))
    await recorder.end("completed")
    assert [(m.role, m.content) for m in store.get_messages(session.id)] == [("user", "hi"), ("assistant", "final")]


async def test_a_pause_in_the_stream_still_gets_saved(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    recorder = TurnRecorder(store.sessions, session.id, interval=0.05)
    await recorder.record(NewMessage(role="user", content="hi"))
    recorder.streamed(["Hello", " wor"])  # then nothing more arrives for a while

    async def saved() -> None:
        while store.get_messages(session.id)[-1].content != "Hello wor":
            await asyncio.sleep(0.01)

    await asyncio.wait_for(saved(), 5)
    await recorder.end("interrupted")
    assert store.open_turns() == []
    assert store.get_messages(session.id)[-1].finish_reason == "interrupted"
