"""The todo tool: checked input, the plan as its result, read back from the transcript,
kept by a stored session (resume and fork) through the real engine and store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import ToolCompleted
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.registry import default_registry
from hermes.agent.tools.todo import TODO_TOOL, TodoItem, latest_plan, plan_summary, read_plan
from hermes.agent.types import ChatMessage, TurnRequest
from hermes.errors import ToolError
from hermes.testing.state_db import open_sync_state
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

PLAN = [
    {"content": "read the failing test", "status": "completed"},
    {"content": "fix  the parser", "status": "in_progress", "priority": "high"},
    {"content": "run the suite", "status": "pending", "priority": "low"},
]


def ctx(transcript: list[ChatMessage] | None = None) -> ToolContext:
    return ToolContext(session_id="s", cwd=Path("."), transcript=transcript)


async def todo(args: dict[str, Any], transcript: list[ChatMessage] | None = None) -> str:
    return await TODO_TOOL.handler(args, ctx(transcript))


async def test_a_write_answers_the_whole_plan_with_every_field() -> None:
    result = await todo({"todos": PLAN})
    assert json.loads(result) == {
        "todos": [
            {"content": "read the failing test", "status": "completed", "priority": "medium"},
            {"content": "fix the parser", "status": "in_progress", "priority": "high"},
            {"content": "run the suite", "status": "pending", "priority": "low"},
        ]
    }
    plan = read_plan(result)
    assert plan is not None and plan[1] == TodoItem("fix the parser", "in_progress", "high")
    assert plan_summary(plan) == "1/3 done · now: fix the parser"


async def test_a_list_sent_as_a_json_string_is_accepted() -> None:
    assert await todo({"todos": json.dumps(PLAN)}) == await todo({"todos": PLAN})


@pytest.mark.parametrize(
    ("todos", "message"),
    [
        ([{"content": "x", "status": "done"}], "todos[0].status must be one of pending, in_progress, completed"),
        ([{"content": "  ", "status": "pending"}], "todos[0].content must be a non-empty string"),
        ([{"status": "pending"}], "todos[0].content must be a non-empty string"),
        ([{"content": "x", "status": "pending", "priority": "urgent"}], "todos[0].priority must be one of"),
        (
            [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}],
            "at most one item may be in_progress, got 2: a; b",
        ),
        ("not json", "argument 'todos' must be a list"),
        ({"content": "x"}, "argument 'todos' must be a list"),
        (["x"], "todos[0] must be an object"),
    ],
)
async def test_bad_input_is_a_clear_tool_error(todos: Any, message: str) -> None:
    with pytest.raises(ToolError, match=message.replace("[", r"\[").replace("]", r"\]")):
        await todo({"todos": todos})


def _todo_exchange(call_id: str, result: str) -> list[ChatMessage]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "todo", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


async def test_a_read_answers_the_latest_good_plan_of_the_transcript() -> None:
    first = await todo({"todos": PLAN[:1]})
    second = await todo({"todos": PLAN})
    transcript: list[ChatMessage] = [
        {"role": "user", "content": "go"},
        *_todo_exchange("a", first),
        *_todo_exchange("b", second),
        *_todo_exchange("c", "Error: todos[0].status must be one of pending, in_progress, completed"),
        {"role": "tool", "tool_call_id": "not-a-todo", "content": first},
    ]
    assert await todo({}, transcript) == second
    assert latest_plan(transcript) == read_plan(second)
    assert json.loads(await todo({})) == {"todos": []}
    assert latest_plan([]) is None


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
async def agent(upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[Agent]:
    db = open_sync_state(tmp_path / "state.db")
    agent = Agent(
        OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
        store=db.sessions,
        model="scripted-model",
        tools=default_registry(),
        options=EngineOptions(stream_retries=0, stale_timeout=5.0),
    )
    yield agent
    await agent.aclose()
    db.close()


async def test_the_plan_lives_in_the_stored_session_resumed_and_forked(
    upstream: ScriptedUpstream, agent: Agent, tmp_path: Path
) -> None:
    upstream.enqueue(tool_reply([call("todo", {"todos": PLAN}, id="w")]), text_reply("planned"))
    events, first = await collect_turn(agent, TurnRequest(input="plan it", cwd=str(tmp_path)))
    (written,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert not written.is_error
    assert agent.store is not None
    stored = await agent.store.history(first.session_id)
    assert latest_plan(stored) == read_plan(written.result)

    fork = await agent.store.fork_session(first.session_id)
    for session_id in (first.session_id, fork.id):
        upstream.enqueue(tool_reply([call("todo", {}, id="r")]), text_reply("read"))
        events, _ = await collect_turn(agent, TurnRequest(input="where are we", session_id=session_id))
        (read,) = [e for e in events if isinstance(e, ToolCompleted)]
        assert read.result == written.result
