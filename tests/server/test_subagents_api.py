"""Subagents through a real server on loopback: a child's tool calls stream as tool progress
under the `task` call, and the child's session names its parent in the REST session JSON."""

from __future__ import annotations

from _api_harness import MakeServer, parse_sse

from hermes.agent.subagents.definitions import AgentCatalog
from hermes.agent.subagents.task import add_subagents
from hermes.agent.tools.registry import default_registry
from hermes.testing.upstream import call, text_reply, tool_reply


async def test_child_tool_lines_are_tool_progress_and_its_session_names_the_parent(make_server: MakeServer) -> None:
    server = await make_server(tools=default_registry())
    add_subagents(server.agent, AgentCatalog(), depth=1, concurrency=3)
    task = call("task", {"description": "look", "prompt": "list the files"}, id="t1")
    server.upstream.enqueue(
        tool_reply([task]),
        tool_reply([call("list_files", {}, id="l1")]),
        text_reply("two files"),
        text_reply("The subagent found two files."),
    )
    response = await server.client.post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "delegate"}], "stream": True},
        headers=server.auth,
    )
    body = await response.text()
    progress = [f.json() for f in parse_sse(body) if f.event == "hermes.tool.progress"]
    started = [(p["toolCallId"], p.get("parentToolCallId")) for p in progress if p["status"] == "running"]
    assert started == [("t1", None), ("t1/l1", "t1")]
    assert "tools" not in server.upstream.requests[1].body or "task" not in server.upstream.requests[1].tool_names
    listed = await (await server.client.get("/api/sessions", headers=server.auth)).json()
    children = [s for s in listed["data"] if s.get("parent_call_id") == "t1"]
    assert len(children) == 1
    got = await (await server.client.get(f"/api/sessions/{children[0]['id']}", headers=server.auth)).json()
    child = got["session"]
    parent_id = next(s["id"] for s in listed["data"] if s["id"] != child["id"])
    assert child["parent_session_id"] == parent_id and child["parent_call_id"] == "t1"
