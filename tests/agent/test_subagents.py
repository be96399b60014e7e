"""Subagents through the scripted upstream: the `task` tool runs a child turn with a fresh
context and its own tools, stored as a session of its parent; attacks on its limits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.events import ApprovalRequested, ToolCompleted, ToolStarted
from hermes.agent.subagents.definitions import load_agents
from hermes.agent.subagents.task import READ_ONLY_TOOLS, add_subagents
from hermes.agent.tools.base import Tool, ToolContext
from hermes.agent.tools.registry import default_registry
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import Reply, Stall, call, text_reply, tool_reply

REVIEWER = """---
name: reviewer
description: Reviews code for bugs
tools: Read, Grep
---
You are REVIEWER-PROMPT, a careful reviewer.
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    return folder


def _agent(
    make_agent: Any, workspace: Path, home: Path, *, depth: int = 1, concurrency: int = 3, tools: Any = None
) -> Any:
    agent = make_agent(tools=tools if tools is not None else default_registry())
    add_subagents(agent, load_agents(home, workspace, user_home=home), depth=depth, concurrency=concurrency)
    return agent


def _task(prompt: str, *, agent: str | None = None, id: str | None = None) -> Any:
    args = {"description": "look around", "prompt": prompt, **({"agent": agent} if agent else {})}
    return call("task", args, id=id)


def _child_requests(upstream: Any) -> list[Any]:
    return [r for r in upstream.requests if "task" not in r.tool_names]


async def test_child_gets_only_its_prompt_and_read_only_tools(upstream, make_agent, store, workspace, tmp_path):
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(text_reply("noted"))
    _, first = await run(agent, TurnRequest(input="my secret is PARENT-HISTORY", cwd=str(workspace)))
    upstream.enqueue(
        tool_reply([_task("Find where alpha is mentioned.", id="t1")]),
        text_reply("alpha is in notes.txt", usage=(7, 3)),
        text_reply("The child says: notes.txt"),
    )
    events, result = await run(agent, TurnRequest(input="delegate it", session_id=first.session_id, cwd=str(workspace)))
    assert result.status == "completed"
    child = upstream.requests[2]
    sent = json.dumps(child.messages)
    assert "PARENT-HISTORY" not in sent and "delegate it" not in sent
    assert [m["role"] for m in child.messages] == ["system", "user"]
    assert child.messages[1]["content"].startswith("Find where alpha is mentioned.")
    assert sorted(child.tool_names) == sorted(READ_ONLY_TOOLS)  # depth 1: no task tool
    done = next(e for e in events if isinstance(e, ToolCompleted) and e.call_id == "t1")
    assert not done.is_error and done.result == "alpha is in notes.txt"
    # The child's usage counts in the parent's turn (20+8 parent call, 7+3 child, 10+5 parent answer).
    assert result.usage.input_tokens == 20 + 7 + 10 and result.usage.output_tokens == 8 + 3 + 5
    sessions = [s for s in store.list_sessions() if s.parent_call_id == "t1"]
    assert len(sessions) == 1
    record = sessions[0]
    assert record.parent_session_id == result.session_id and record.end_reason == "completed"
    assert record.to_json()["parent_call_id"] == "t1"
    assert record.title == "look around"


async def test_user_agent_gets_only_its_tools_and_prompt(upstream, make_agent, workspace, tmp_path):
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(
        tool_reply([_task("Review notes.txt", agent="reviewer", id="t1")]),
        tool_reply([call("read_file", {"path": "notes.txt"}, id="r1")]),
        text_reply("looks fine"),
        text_reply("Reviewed."),
    )
    events, result = await run(agent, TurnRequest(input="review", cwd=str(workspace)))
    assert result.status == "completed"
    parent = upstream.requests[0]
    task_schema = next(t for t in parent.body["tools"] if t["function"]["name"] == "task")
    assert "- reviewer: Reviews code for bugs" in task_schema["function"]["description"]
    child = upstream.requests[1]
    assert child.tool_names == ["read_file", "search_files"]
    assert "REVIEWER-PROMPT" in child.messages[0]["content"]
    # The child's tool line reaches the parent's stream under the task call.
    nested = [e for e in events if isinstance(e, (ToolStarted, ToolCompleted)) and e.parent_call_id == "t1"]
    assert [(type(e).__name__, e.call_id) for e in nested] == [("ToolStarted", "t1/r1"), ("ToolCompleted", "t1/r1")]
    assert "alpha" in nested[1].result


async def test_unknown_agent_is_an_error_the_model_reads(upstream, make_agent, workspace, tmp_path):
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(tool_reply([_task("x", agent="nobody", id="t1")]), text_reply("ok"))
    events, _ = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert done.is_error and "no agent named 'nobody'" in done.result
    assert len(upstream.requests) == 2  # no child turn was run


async def test_two_task_calls_of_one_step_run_at_once(upstream, make_agent, workspace, tmp_path):
    barrier = asyncio.Barrier(2)

    async def rendezvous(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            await asyncio.wait_for(barrier.wait(), 10)
        except TimeoutError:
            return "alone"
        return "together"

    tools = default_registry()
    tools.register(Tool("rendezvous", "meet", {"type": "object", "properties": {}}, rendezvous, read_only=True))
    agents = workspace / ".hermes" / "agents"
    agents.mkdir(parents=True)
    (agents / "meeter.md").write_text("---\ndescription: meets\ntools:\n  - rendezvous\n---\nMeet.\n")
    agent = _agent(make_agent, workspace, tmp_path / "home", tools=tools)
    upstream.enqueue(
        tool_reply([_task("a", agent="meeter", id="ta"), _task("b", agent="meeter", id="tb")]),
        tool_reply([call("rendezvous", {}, id="m")]),
        tool_reply([call("rendezvous", {}, id="m")]),
        text_reply("child done"),
        text_reply("child done"),
        text_reply("both done"),
    )
    events, result = await asyncio.wait_for(run(agent, TurnRequest(input="go", cwd=str(workspace))), 60)
    assert result.status == "completed"
    meets = [e for e in events if isinstance(e, ToolCompleted) and e.name == "rendezvous"]
    assert sorted(e.call_id for e in meets) == ["ta/m", "tb/m"]
    assert [e.result for e in meets] == ["together", "together"]


async def test_concurrency_setting_limits_children_of_one_parent(upstream, make_agent, workspace, tmp_path):
    running = 0
    most = 0

    async def hold(args: dict[str, Any], ctx: ToolContext) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.3)
        running -= 1
        return "held"

    tools = default_registry()
    tools.register(Tool("hold", "hold", {"type": "object", "properties": {}}, hold, read_only=True))
    agents = workspace / ".hermes" / "agents"
    agents.mkdir(parents=True)
    (agents / "holder.md").write_text("---\ndescription: holds\ntools: [hold]\n---\nHold.\n")
    agent = _agent(make_agent, workspace, tmp_path / "home", tools=tools, concurrency=1)
    upstream.enqueue(
        tool_reply([_task("a", agent="holder", id="ta"), _task("b", agent="holder", id="tb")]),
        tool_reply([call("hold", {}, id="h")]),
        text_reply("one"),
        tool_reply([call("hold", {}, id="h")]),
        text_reply("two"),
        text_reply("done"),
    )
    _, result = await asyncio.wait_for(run(agent, TurnRequest(input="go", cwd=str(workspace))), 60)
    assert result.status == "completed" and most == 1


async def test_default_child_cannot_write_attack(upstream, make_agent, workspace, tmp_path):
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(
        tool_reply([_task("change notes", id="t1")]),
        tool_reply(
            [
                call("write_file", {"path": "notes.txt", "content": "pwned"}, id="w"),
                call("terminal", {"command": "echo pwned > notes.txt"}, id="x"),
            ]
        ),
        text_reply("I could not"),
        text_reply("ok"),
    )
    events, result = await run(agent, TurnRequest(input="go", cwd=str(workspace), yolo=True))
    assert result.status == "completed"
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert done["t1/w"].is_error and "unknown tool 'write_file'" in done["t1/w"].result
    assert done["t1/x"].is_error and done["t1/x"].result.startswith("DENIED: plan mode is on")


async def test_writer_agent_of_a_planning_parent_is_refused_attack(upstream, make_agent, workspace, tmp_path):
    agents = workspace / ".hermes" / "agents"
    agents.mkdir(parents=True)
    (agents / "writer.md").write_text("---\ndescription: writes\ntools: Write, Edit, Bash\n---\nWrite.\n")
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(
        tool_reply([_task("write", agent="writer", id="t1")]),
        tool_reply([call("write_file", {"path": "notes.txt", "content": "pwned"}, id="w")]),
        text_reply("refused"),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="go", cwd=str(workspace), mode="plan", yolo=True))
    assert upstream.requests[1].tool_names == ["terminal", "write_file", "patch"]
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert done["t1/w"].is_error and done["t1/w"].result.startswith("DENIED: plan mode is on")
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"


async def test_writer_agent_asks_the_parents_approver(upstream, make_agent, workspace, tmp_path):
    agents = workspace / ".hermes" / "agents"
    agents.mkdir(parents=True)
    (agents / "writer.md").write_text("---\ndescription: writes\ntools: write_file\n---\nWrite.\n")
    outside = tmp_path / "outside.txt"
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.DENY

    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(
        tool_reply([_task("write", agent="writer", id="t1")]),
        tool_reply([call("write_file", {"path": str(outside), "content": "x"}, id="w")]),
        text_reply("denied"),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="go", cwd=str(workspace), approve=deny))
    assert asked and asked[0].tool_name == "write_file" and asked[0].call_id == "t1/w"
    shown = [e for e in events if isinstance(e, ApprovalRequested)]  # in the parent's stream, same id
    assert [e.call_id for e in shown] == ["t1/w"]
    assert not outside.exists()
    # Nobody to approve: refused without asking.
    upstream.enqueue(
        tool_reply([_task("write", agent="writer", id="t2")]),
        tool_reply([call("write_file", {"path": str(outside), "content": "x"}, id="w")]),
        text_reply("denied"),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert done["t2/w"].is_error and not outside.exists()


async def test_depth_two_gives_the_child_a_task_tool(upstream, make_agent, workspace, tmp_path):
    agent = _agent(make_agent, workspace, tmp_path / "home", depth=2)
    upstream.enqueue(tool_reply([_task("deeper", id="t1")]), text_reply("child"), text_reply("ok"))
    await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    assert "task" in upstream.requests[1].tool_names
    # A task call from a child at the limit is refused even if the model names the tool.
    agent = _agent(make_agent, workspace, tmp_path / "home2", depth=1)
    upstream.enqueue(
        tool_reply([_task("deeper", id="t1")]),
        tool_reply([_task("deepest", id="t2")]),
        text_reply("child"),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert done["t1/t2"].is_error and "unknown tool 'task'" in done["t1/t2"].result
    assert len(upstream.requests) == 7  # the grandchild never ran


async def test_stopping_the_parent_stops_the_child(upstream, make_agent, store, workspace, tmp_path):
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(tool_reply([_task("slow", id="t1")]), Reply([Stall()]))
    handle = agent.start(TurnRequest(input="go", cwd=str(workspace)))
    events = []
    async with handle:

        async def consume() -> None:
            async for event in handle.events():
                events.append(event)

        consumer = asyncio.create_task(consume())
        for _ in range(300):
            if len(upstream.requests) == 2:
                break
            await asyncio.sleep(0.05)
        assert len(upstream.requests) == 2
        handle.stop()
        await asyncio.wait_for(consumer, 30)
    assert handle.result is not None and handle.result.status == "interrupted"
    await asyncio.wait_for(upstream.requests[1].finished.wait(), 30)
    assert upstream.requests[1].client_disconnected
    child = next(s for s in store.list_sessions() if s.parent_call_id == "t1")
    assert child.end_reason == "interrupted"
    done = next(e for e in events if isinstance(e, ToolCompleted) and e.call_id == "t1")
    assert done.is_error


async def test_sessions_commands_show_the_child_and_its_parent(
    upstream, make_agent, store, workspace, tmp_path, monkeypatch
):
    from typer.testing import CliRunner

    from hermes.cli.main import app

    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(tool_reply([_task("look", id="t1")]), text_reply("found"), text_reply("ok"))
    _, result = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    child = next(s for s in store.list_sessions() if s.parent_call_id == "t1")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))  # the store's state.db
    runner = CliRunner()
    listed = await asyncio.to_thread(runner.invoke, app, ["sessions", "list", "--json"], catch_exceptions=False)
    by_id = {item["id"]: item for item in json.loads(listed.stdout)["data"]}
    assert by_id[child.id]["parent_session_id"] == result.session_id and by_id[child.id]["parent_call_id"] == "t1"
    assert by_id[result.session_id]["parent_call_id"] is None
    shown = await asyncio.to_thread(runner.invoke, app, ["sessions", "show", child.id], catch_exceptions=False)
    assert f"subagent of {result.session_id} (task call t1)" in shown.stdout


def test_a_child_tool_line_survives_the_event_json_round_trip() -> None:
    from hermes.agent.events import event_from_dict, event_to_dict

    started = ToolStarted("t1/r1", "read_file", {"path": "a"}, "a", parent_call_id="t1")
    completed = ToolCompleted("t1/r1", "read_file", "x", 0.1, False, {"path": "a"}, parent_call_id="t1")
    for event in (started, completed):
        assert event_from_dict(event_to_dict(event)) == event  # the remote TUI nests it too


async def test_an_agents_model_is_the_childs(upstream, make_agent, workspace, tmp_path):
    agents = workspace / ".hermes" / "agents"
    agents.mkdir(parents=True)
    (agents / "fast.md").write_text("---\ndescription: quick looks\nmodel: small-model\n---\nBe quick.\n")
    agent = _agent(make_agent, workspace, tmp_path / "home")
    upstream.enqueue(tool_reply([_task("look", agent="fast", id="t1")]), text_reply("seen"), text_reply("ok"))
    await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    assert [r.body["model"] for r in upstream.requests] == ["scripted-model", "small-model", "scripted-model"]
    assert sorted(upstream.requests[1].tool_names) == sorted(READ_ONLY_TOOLS)  # no tools listed: the default
