"""Stopping a turn: the turn handle's stop(), other cancellations, aclose(), and failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hermes.agent.engine import INTERRUPTED_TOOL_RESULT
from hermes.agent.events import TextDelta, ToolCompleted, ToolStarted, TurnCompleted
from hermes.agent.tools.base import Tool, ToolRegistry
from hermes.agent.tools.terminal import TERMINAL_TOOL
from hermes.agent.types import TurnRequest
from hermes.error_codes import INTERNAL_ERROR, INTERRUPTED, SERVER_SHUTDOWN
from hermes.errors import StoreError
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import call, text_reply, tool_reply


async def _consume_until(agent, request, predicate):
    """Start a turn and consume it in a task; return (handle, task, events) once predicate(event) is true."""
    events = []
    reached = asyncio.Event()
    handle = agent.start(request)

    async def consume():
        async with handle:
            async for event in handle.events():
                events.append(event)
                if predicate(event):
                    reached.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(reached.wait(), 30)
    return handle, task, events


def _process_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (dead, waiting for a reaper that may be slow) is not alive."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _wait_for_pid(pid_file: Path) -> int:
    """The host pid of the sleeper (the shell's own `$$` is namespaced when the sandbox is on)."""
    async with asyncio.timeout(30):
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.01)
        argv = ["sleep", _sleep_arg(pid_file)]
        while True:
            for pid in _pids_with_argv(argv):
                return pid
            await asyncio.sleep(0.01)


def _sleep_arg(pid_file: Path) -> str:
    """A sleep duration unique to this call, so its process can be found in /proc."""
    return f"30.{abs(hash(str(pid_file))) % 10**9:09d}"


def _pids_with_argv(argv: list[str]) -> list[int]:
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _sleeper_call(tmp_path: Path, call_id: str = "t1") -> tuple[dict, Path]:
    """A terminal call whose shell writes a ready marker and then becomes a uniquely named sleep."""
    pid_file = tmp_path / f"{call_id}.pid"
    command = f"echo $$ > {pid_file}; exec sleep {_sleep_arg(pid_file)}"
    return call("terminal", {"command": command}, id=call_id), pid_file


def _assert_every_start_completed(events) -> None:
    started = [e.call_id for e in events if isinstance(e, ToolStarted)]
    completed = [e.call_id for e in events if isinstance(e, ToolCompleted)]
    assert sorted(started) == sorted(completed)
    last_completion = max((i for i, e in enumerate(events) if isinstance(e, ToolCompleted)), default=-1)
    assert last_completion < len(events) - 1 and isinstance(events[-1], TurnCompleted)


# ---- the handle's stop() ------------------------------------------------------------


async def test_interrupt_while_streaming_closes_upstream_and_keeps_partial_text(upstream, make_agent, store):
    upstream.enqueue(text_reply("one two three four five six seven eight", chunk_delay=0.2))
    agent = make_agent()
    handle, task, events = await _consume_until(
        agent, TurnRequest(input="count"), lambda e: isinstance(e, TextDelta) and e.text == "two "
    )
    handle.stop()  # the consumer is awaiting the next chunk: engine code is running
    await asyncio.wait_for(task, 30)
    assert not task.cancelled()
    assert isinstance(events[-1], TurnCompleted)
    result = events[-1].result
    assert (result.status, result.error_code, result.error) == ("interrupted", INTERRUPTED, "interrupted by the user")
    assert result.final_text == "one two "
    await asyncio.wait_for(upstream.requests[0].finished.wait(), 30)
    assert upstream.requests[0].client_disconnected
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "count", None),
        ("assistant", "one two ", "interrupted"),
    ]
    assert store.get_session(result.session_id).end_reason == "interrupted"


async def test_stop_from_the_consumer_while_it_handles_an_event(upstream, make_agent, store):
    upstream.enqueue(text_reply("one two three four", chunk_delay=0.05))
    agent = make_agent()
    events = []
    async with agent.start(TurnRequest(input="count")) as handle:
        async for event in handle.events():
            events.append(event)
            if isinstance(event, TextDelta) and event.text == "two ":
                handle.stop(SERVER_SHUTDOWN, "the server is shutting down")
    assert isinstance(events[-1], TurnCompleted)
    result = events[-1].result
    assert (result.status, result.error_code, result.error) == (
        "interrupted",
        SERVER_SHUTDOWN,
        "the server is shutting down",
    )
    assert result.final_text == "one two "
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one ", "two "]
    assert store.get_session(result.session_id).end_reason == "interrupted"


async def test_a_handle_stopped_before_the_turn_runs_stops_it_at_once(upstream, make_agent, store):
    agent = make_agent()
    async with agent.start(TurnRequest(input="hi")) as handle:
        handle.stop()
        events = [e async for e in handle.events()]
    assert [e.type for e in events] == ["turn.started", "turn.completed"]
    assert events[-1].result.status == "interrupted"
    assert upstream.requests == []
    assert store.get_session(events[-1].result.session_id).end_reason == "interrupted"


async def test_interrupt_while_a_tool_runs_completes_it_and_leaves_a_valid_history(upstream, make_agent, store):
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
    handle, task, events = await _consume_until(
        agent, TurnRequest(input="work"), lambda e: isinstance(e, ToolStarted) and e.call_id == "n1"
    )
    handle.stop()
    await asyncio.wait_for(task, 30)
    result = events[-1].result
    assert result.status == "interrupted"
    _assert_every_start_completed(events)
    interrupted = [e for e in events if isinstance(e, ToolCompleted) and e.call_id == "n1"]
    assert len(interrupted) == 1 and interrupted[0].is_error
    assert interrupted[0].result == INTERRUPTED_TOOL_RESULT and "interrupted" in interrupted[0].result
    assert not any(isinstance(e, ToolStarted) and e.call_id == "e2" for e in events)
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


async def test_interrupt_kills_the_tool_process_before_the_turn_completes(upstream, make_agent, store, tmp_path):
    sleeper, pid_file = _sleeper_call(tmp_path)
    upstream.enqueue(tool_reply([sleeper]))
    agent = make_agent(tools=ToolRegistry([TERMINAL_TOOL]))
    handle, task, events = await _consume_until(
        agent, TurnRequest(input="work", cwd=str(tmp_path)), lambda e: isinstance(e, ToolStarted)
    )
    pid = await _wait_for_pid(pid_file)
    assert _process_alive(pid)
    handle.stop()
    await asyncio.wait_for(task, 30)
    assert not _process_alive(pid)
    assert events[-1].result.status == "interrupted"
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(e.call_id, e.is_error) for e in completed] == [("t1", True)]


# ---- other cancellations propagate after the same cleanup ---------------------------


async def test_aclose_returns_only_after_the_tool_process_is_gone(upstream, make_agent, store, tmp_path):
    sleeper, pid_file = _sleeper_call(tmp_path)
    upstream.enqueue(tool_reply([sleeper]))
    agent = make_agent(tools=ToolRegistry([TERMINAL_TOOL]))
    turn = agent.run_turn(TurnRequest(input="work", cwd=str(tmp_path)))
    session_id = None
    async for event in turn:
        if event.type == "turn.started":
            session_id = event.session_id
        if isinstance(event, ToolStarted):
            break
    pid = await _wait_for_pid(pid_file)
    assert _process_alive(pid)
    await asyncio.wait_for(turn.aclose(), 30)
    assert not _process_alive(pid)
    rows = store.get_messages(session_id)
    assert rows[-1].role == "tool" and rows[-1].content == INTERRUPTED_TOOL_RESULT
    assert store.get_session(session_id).end_reason == "interrupted"


async def test_closing_the_generator_mid_tool_writes_the_placeholder_after_the_tool_stopped(
    upstream, make_agent, store
):
    upstream.enqueue(tool_reply([call("nap_write", {"seconds": 300}, id="n1")]))
    agent = make_agent()
    turn = agent.run_turn(TurnRequest(input="work"))
    session_id = None
    async for event in turn:
        if event.type == "turn.started":
            session_id = event.session_id
        if isinstance(event, ToolStarted):
            break
    nap_tasks = [t for t in asyncio.all_tasks() if "_invoke" in repr(t.get_coro())]
    assert nap_tasks and not any(t.done() for t in nap_tasks)
    await asyncio.wait_for(turn.aclose(), 30)
    assert all(t.done() for t in nap_tasks)
    rows = store.get_messages(session_id)
    assert rows[-1].role == "tool" and rows[-1].content == INTERRUPTED_TOOL_RESULT
    assert store.get_session(session_id).end_reason == "interrupted"


async def test_a_timeout_around_a_turn_raises_after_cleanup(upstream, make_agent, store, tmp_path):
    sleeper, pid_file = _sleeper_call(tmp_path)
    upstream.enqueue(tool_reply([sleeper]))
    agent = make_agent(tools=ToolRegistry([TERMINAL_TOOL]))
    events = []
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(30) as deadline:
            async for event in agent.run_turn(TurnRequest(input="work", cwd=str(tmp_path))):
                events.append(event)
                if isinstance(event, ToolStarted):
                    pid = await _wait_for_pid(pid_file)
                    assert _process_alive(pid)
                    deadline.reschedule(asyncio.get_running_loop().time())
    assert not _process_alive(pid)
    assert not any(isinstance(e, TurnCompleted) for e in events)
    session_id = events[0].session_id
    rows = store.get_messages(session_id)
    assert [(m.role, m.content) for m in rows][-1] == ("tool", INTERRUPTED_TOOL_RESULT)
    assert store.get_session(session_id).end_reason == "interrupted"


async def test_a_timeout_while_streaming_raises_and_keeps_partial_text(upstream, make_agent, store):
    upstream.enqueue(text_reply("one two three four five six", chunk_delay=0.2))
    agent = make_agent()
    events = []
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(30) as deadline:
            async for event in agent.run_turn(TurnRequest(input="count")):
                events.append(event)
                if isinstance(event, TextDelta) and event.text == "two ":
                    # Expire while the engine waits for the next chunk.
                    deadline.reschedule(asyncio.get_running_loop().time() + 0.05)
    session_id = events[0].session_id
    rows = store.get_messages(session_id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "count", None),
        ("assistant", "one two ", "interrupted"),
    ]
    assert store.get_session(session_id).end_reason == "interrupted"


async def test_cancelling_the_consumer_task_propagates(upstream, make_agent, store):
    upstream.enqueue(text_reply("one two three four five six", chunk_delay=0.2))
    agent = make_agent()
    handle, task, events = await _consume_until(
        agent, TurnRequest(input="count"), lambda e: isinstance(e, TextDelta) and e.text == "two "
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    assert task.cancelled()
    assert not any(isinstance(e, TurnCompleted) for e in events)
    handle.stop()  # too late: the turn is over; nothing is cancelled any more
    assert store.get_session(events[0].session_id).end_reason == "interrupted"


# ---- unexpected failures -------------------------------------------------------------


async def test_a_store_error_mid_turn_fails_the_turn_and_ends_the_session(upstream, make_agent, store, monkeypatch):
    upstream.enqueue(text_reply("the answer"))
    sessions = store.sessions
    agent = make_agent(store=sessions)
    real_finish = sessions.finish_turn
    calls = {"n": 0}

    async def finish_failing_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:  # the turn's end, with the assistant's answer
            assert kwargs["answer"] is not None
            raise StoreError("database is locked")
        return await real_finish(*args, **kwargs)

    monkeypatch.setattr(sessions, "finish_turn", finish_failing_once)
    events, result = await run(agent, TurnRequest(input="hi"))
    assert events[0].type == "turn.started"
    assert (result.status, result.error_code, result.error) == ("failed", StoreError.code, "database is locked")
    assert store.get_session(result.session_id).end_reason == "failed"
    # What was delivered is kept once, and the result's transcript is what the store holds.
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.content, m.finish_reason) for m in rows] == [
        ("user", "hi", None),
        ("assistant", "the answer", "failed"),
    ]
    assert [(m["role"], m["content"]) for m in result.messages] == [("user", "hi"), ("assistant", "the answer")]


async def test_a_store_error_storing_tool_calls_leaves_no_orphan_results(upstream, make_agent, store, monkeypatch):
    upstream.enqueue(tool_reply([call("echo", {"text": "x"}, id="e1")], text="Checking."))
    sessions = store.sessions
    agent = make_agent(store=sessions)
    real_append = sessions.append_message

    async def refuse_tool_calls(session_id, message, **kwargs):
        if message.role == "assistant" and message.tool_calls:
            raise StoreError("database is locked")
        return await real_append(session_id, message, **kwargs)

    monkeypatch.setattr(sessions, "append_message", refuse_tool_calls)
    events, result = await run(agent, TurnRequest(input="hi"))
    assert result.status == "failed"
    assert not any(isinstance(e, ToolStarted) for e in events)
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.content) for m in rows] == [("user", "hi"), ("assistant", "Checking.")]
    assert store.get_session(result.session_id).end_reason == "failed"


async def test_a_bug_fails_the_turn_with_internal_error(upstream, make_agent, store, monkeypatch):
    upstream.enqueue(tool_reply([call("echo", {"text": "x"}, id="e1")]))
    agent = make_agent()

    def broken_preview(*args, **kwargs):
        raise KeyError("preview")

    monkeypatch.setattr(Tool, "preview", broken_preview)
    _, result = await run(agent, TurnRequest(input="hi"))
    assert (result.status, result.error_code) == ("failed", INTERNAL_ERROR)
    assert "KeyError" in result.error
    # The open call got a placeholder: the history stays valid for the next turn.
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.tool_call_id) for m in rows if m.role == "tool"] == [("tool", "e1")]
    assert store.get_session(result.session_id).end_reason == "failed"


async def test_a_broken_store_still_ends_the_turn_with_turn_completed(upstream, make_agent, store, monkeypatch):
    upstream.enqueue(text_reply("the answer"))
    sessions = store.sessions
    agent = make_agent(store=sessions)
    real_append = sessions.append_message

    async def append_then_break(session_id, message, **kwargs):
        if message.role == "user":
            return await real_append(session_id, message, **kwargs)
        raise StoreError("disk I/O error")

    async def broken(*args, **kwargs):
        raise StoreError("disk I/O error")

    monkeypatch.setattr(sessions, "append_message", append_then_break)
    monkeypatch.setattr(sessions, "end_session", broken)
    monkeypatch.setattr(sessions, "finish_turn", broken)  # the turn's end (with its answer)
    _, result = await run(agent, TurnRequest(input="hi"))
    assert (result.status, result.error_code) == ("failed", StoreError.code)
    assert "the session could not be ended" in result.error
    monkeypatch.undo()
    assert store.get_session(result.session_id).end_reason is None


async def test_a_stop_does_not_swallow_a_cancel_that_arrives_with_it(upstream, make_agent, store):
    upstream.enqueue(text_reply("one two three four five six", chunk_delay=0.2))
    agent = make_agent()
    handle, task, events = await _consume_until(
        agent, TurnRequest(input="count"), lambda e: isinstance(e, TextDelta) and e.text == "two "
    )
    handle.stop()
    task.cancel()  # e.g. a shutdown's task group, at the same moment
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    assert not any(isinstance(e, TurnCompleted) for e in events)
    assert store.get_session(events[0].session_id).end_reason == "interrupted"
