"""The tool loop: concurrency, ordering, failures, output caps and approvals."""

from __future__ import annotations

from pathlib import Path

from hermes.agent.events import ApprovalRequested, ToolCompleted, ToolStarted
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import call, text_reply, tool_reply


def tool_messages(upstream, index):
    return [m for m in upstream.requests[index].messages if m["role"] == "tool"]


async def test_read_only_calls_run_concurrently_results_in_call_order(upstream, make_agent):
    upstream.enqueue(
        tool_reply([call("nap", {"seconds": 0.4}, id="slow"), call("nap", {"seconds": 0.05}, id="fast")]),
        text_reply("both done"),
    )
    events, _ = await run(make_agent(), "go")
    order = [(e.type, e.call_id) for e in events if isinstance(e, (ToolStarted, ToolCompleted))]
    # Both start before either ends: they overlap.
    assert order[:2] == [("tool.started", "slow"), ("tool.started", "fast")]
    finished = [e.call_id for e in events if isinstance(e, ToolCompleted)]
    # "fast" finishing first proves they ran concurrently (in sequence "slow" ends first);
    # events in completion order…
    assert finished == ["fast", "slow"]
    assert [m["tool_call_id"] for m in tool_messages(upstream, 1)] == ["slow", "fast"]  # …transcript in call order


async def test_writing_calls_run_one_after_another(upstream, make_agent):
    upstream.enqueue(
        tool_reply([call("nap_write", {"seconds": 0.2}, id="w1"), call("nap_write", {"seconds": 0.01}, id="w2")]),
        text_reply("ok"),
    )
    events, _ = await run(make_agent(), "go")
    order = [(e.type, e.call_id) for e in events if isinstance(e, (ToolStarted, ToolCompleted))]
    assert order == [("tool.started", "w1"), ("tool.completed", "w1"), ("tool.started", "w2"), ("tool.completed", "w2")]


async def test_a_failing_tool_becomes_an_error_result_the_model_sees(upstream, make_agent):
    upstream.enqueue(
        tool_reply([call("fail", id="f"), call("refuse", id="r"), call("echo", {"text": "still"}, id="e")]),
        text_reply("handled"),
    )
    events, result = await run(make_agent(), "go")
    assert result.status == "completed"
    results = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert results["f"].is_error and results["f"].result == "Error: fail failed: RuntimeError: disk on fire"
    assert results["r"].is_error and results["r"].result == "Error: no such file: nope.txt"
    assert not results["e"].is_error
    assert [m["content"] for m in tool_messages(upstream, 1)][0].startswith("Error: fail failed")


async def test_unknown_tool_and_bad_json_are_reported_not_run(upstream, make_agent):
    upstream.enqueue(
        tool_reply([call("no_such_tool", {}, id="u"), call("echo", '{"text": "unterminated', id="j")]),
        text_reply("ok"),
    )
    events, _ = await run(make_agent(), "go")
    results = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert results["u"].is_error and "unknown tool 'no_such_tool'" in results["u"].result
    assert results["j"].is_error and "not a valid JSON object" in results["j"].result


async def test_oversized_output_is_cut_with_a_note(upstream, make_agent):
    upstream.enqueue(tool_reply([call("big", {"size": 10_000})]), text_reply("ok"))
    events, _ = await run(make_agent(), "go")
    (done,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert len(done.result) < 2_300
    assert "8,000 characters cut" in done.result and "10,000 characters" in done.result
    assert tool_messages(upstream, 1)[0]["content"] == done.result


async def test_without_an_approval_callback_risky_commands_are_denied(upstream, make_agent):
    upstream.enqueue(tool_reply([call("risky", {"command": "rm -r build"})]), text_reply("ok"))
    events, _ = await run(make_agent(), "go")
    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    assert asked.command == "rm -r build" and asked.reason == "recursive delete"
    assert tool_messages(upstream, 1)[0]["content"] == "denied: not run"


async def test_approval_once_and_for_the_session(upstream, make_agent):
    asked: list[ApprovalRequest] = []
    answers = [ApprovalDecision.ONCE, ApprovalDecision.SESSION]

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return answers[len(asked) - 1]

    upstream.enqueue(
        tool_reply([call("risky", {"target": "a"}, id="a")]),
        tool_reply([call("risky", {"target": "b"}, id="b")]),
        tool_reply([call("risky", {"target": "c"}, id="c")]),
        text_reply("ok"),
    )
    _, result = await run(make_agent(), TurnRequest(input="go", approve=approve))
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == ["ran it", "ran it", "ran it"]
    assert [r.call_id for r in asked] == ["a", "b"]  # "c" was covered by the session approval
    assert asked[0].rule == "rm-recursive" and asked[0].session_id == result.session_id


async def test_yolo_approves_without_asking(upstream, make_agent):
    upstream.enqueue(tool_reply([call("risky")]), text_reply("ok"))
    events, result = await run(make_agent(), TurnRequest(input="go", yolo=True))
    assert not any(isinstance(e, ApprovalRequested) for e in events)
    assert result.messages[2]["content"] == "ran it"


async def test_tool_steps_are_persisted_as_they_happen(upstream, make_agent, store):
    upstream.enqueue(tool_reply([call("echo", {"text": "1"}, id="t1")], text="Checking."), text_reply("All good."))
    _, result = await run(make_agent(), "go")
    rows = store.get_messages(result.session_id)
    assert [(m.role, m.content) for m in rows] == [
        ("user", "go"),
        ("assistant", "Checking."),
        ("tool", "echo:1"),
        ("assistant", "All good."),
    ]
    assert rows[1].tool_calls[0]["id"] == "t1" and rows[2].tool_call_id == "t1"
    session = store.get_session(result.session_id)
    assert session.tool_call_count == 1 and session.end_reason == "completed"
    assert (session.input_tokens, session.output_tokens) == (30, 13)


async def test_real_terminal_tool_denied_without_approver_is_an_error_result(upstream, store, tmp_path):
    from hermes.agent.engine import Agent
    from hermes.agent.providers.openai_compat import OpenAICompatProvider
    from hermes.agent.tools import default_registry

    victim = tmp_path / "build"
    victim.mkdir()
    agent = Agent(
        OpenAICompatProvider(base_url=upstream.base_url),
        store=store.sessions,
        model="m",
        tools=default_registry(),
    )
    upstream.enqueue(
        tool_reply(
            [
                call("terminal", {"command": f"rm -r {victim}"}, id="rm"),
                call("terminal", {"command": "rm -rf /"}, id="root"),
            ]
        ),
        text_reply("ok"),
    )
    try:
        events, _ = await run(agent, TurnRequest(input="clean", cwd=str(tmp_path)))
    finally:
        await agent.aclose()
    results = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert results["rm"].is_error and results["rm"].result.startswith("DENIED:")
    assert results["root"].is_error and results["root"].result.startswith("BLOCKED by the safety policy:")
    assert victim.exists()


async def test_real_terminal_tool_process_group_dies_on_interrupt(upstream, store, tmp_path):
    import asyncio
    import os

    from hermes.agent.engine import Agent
    from hermes.agent.providers.openai_compat import OpenAICompatProvider
    from hermes.agent.tools import default_registry

    pidfile = tmp_path / "child.pid"
    agent = Agent(
        OpenAICompatProvider(base_url=upstream.base_url),
        store=store.sessions,
        model="m",
        tools=default_registry(),
    )
    upstream.enqueue(tool_reply([call("terminal", {"command": f"sleep 60 & echo $! > {pidfile}; wait"})]))
    events = []

    handle = agent.start(TurnRequest(input="wait", cwd=str(tmp_path)))

    async def consume():
        async with handle:
            async for event in handle.events():
                events.append(event)

    async def until(predicate, timeout: float = 30) -> None:  # a condition wait, generous on a loaded machine
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    task = asyncio.create_task(consume())
    try:
        await until(lambda: pidfile.exists() and pidfile.read_text().strip())
        child = int(pidfile.read_text())
        handle.stop()
        await asyncio.wait_for(task, 30)  # the command waits on a 60 s sleep: only the stop ends it
    finally:
        await agent.aclose()
    assert events[-1].result.status == "interrupted"

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:  # a killed child whose parent died may linger as a zombie until reaped
            return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
        except (OSError, IndexError):
            return False

    await until(lambda: not alive(child))
    assert not alive(child), "the background child of the interrupted command survived"
