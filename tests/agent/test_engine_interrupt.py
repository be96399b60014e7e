"""Interrupt = cancelling the task that iterates the turn."""

from __future__ import annotations

import asyncio

from hermes.agent.engine import INTERRUPTED_TOOL_RESULT
from hermes.agent.events import TextDelta, ToolStarted, TurnCompleted
from hermes.agent.types import TurnRequest
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import call, text_reply, tool_reply


async def _consume_until(agent, request, predicate):
    """Start a turn in a task; return (task, events, reached) once predicate(event) is true."""
    events = []
    reached = asyncio.Event()

    async def consume():
        async for event in agent.run_turn(request):
            events.append(event)
            if predicate(event):
                reached.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(reached.wait(), 5)
    return task, events


async def test_cancel_while_streaming_closes_upstream_and_keeps_partial_text(upstream, make_agent, store):
    upstream.enqueue(text_reply("one two three four five six seven eight", chunk_delay=0.2))
    agent = make_agent()
    task, events = await _consume_until(
        agent, TurnRequest(input="count"), lambda e: isinstance(e, TextDelta) and e.text == "two "
    )
    task.cancel()
    await asyncio.wait_for(task, 30)  # the turn absorbs the cancellation and ends
    assert not task.cancelled()
    result = events[-1].result
    assert isinstance(events[-1], TurnCompleted)
    assert result.status == "interrupted"
    assert result.final_text == "one two "
    await asyncio.wait_for(upstream.requests[0].finished.wait(), 30)
    assert upstream.requests[0].client_disconnected
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "count", None),
        ("assistant", "one two ", "interrupted"),
    ]
    assert store.get_session(result.session_id).end_reason == "interrupted"


async def test_cancel_while_a_tool_runs_leaves_a_valid_history(upstream, make_agent, store):
    upstream.enqueue(
        tool_reply(
            [
                call("echo", {"text": "quick"}, id="e1"),
                call("nap_write", {"seconds": 300}, id="n1"),
                call("echo", id="e2"),
            ]
        ),
    )
    agent = make_agent()
    task, events = await _consume_until(
        agent, TurnRequest(input="work"), lambda e: isinstance(e, ToolStarted) and e.call_id == "n1"
    )
    task.cancel()
    await asyncio.wait_for(task, 30)  # the nap lasts 300 s: only the interrupt ends it in time
    result = events[-1].result
    assert result.status == "interrupted"
    tool_rows = [m for m in store.get_messages(result.session_id) if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_rows] == [
        ("e1", "echo:quick"),
        ("n1", INTERRUPTED_TOOL_RESULT),
        ("e2", INTERRUPTED_TOOL_RESULT),
    ]
    # The next turn sends a history in which every tool call has its result.
    upstream.enqueue(text_reply("resumed"))
    _, nxt = await run(agent, TurnRequest(input="go on", session_id=result.session_id))
    assert nxt.status == "completed"
    sent = upstream.requests[-1].messages
    call_ids = [tc["id"] for m in sent if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert call_ids == answered == ["e1", "n1", "e2"]


async def test_closing_the_generator_early_also_cleans_up(upstream, make_agent, store):
    upstream.enqueue(tool_reply([call("nap_write", {"seconds": 300}, id="n1")]))
    agent = make_agent()
    turn = agent.run_turn(TurnRequest(input="work"))
    session_id = None
    async for event in turn:
        if event.type == "turn.started":
            session_id = event.session_id
        if isinstance(event, ToolStarted):
            break
    await asyncio.wait_for(turn.aclose(), 30)
    rows = store.get_messages(session_id)
    assert rows[-1].role == "tool" and rows[-1].content == INTERRUPTED_TOOL_RESULT
    assert store.get_session(session_id).end_reason == "interrupted"
