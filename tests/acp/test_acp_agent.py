"""`hermes acp` (a subprocess) driven by the ACP Python SDK's client side.

Covers: initialize, a text turn (answer and thoughts), a tool turn with permission asked
and granted, one denied, cancel mid-stream (the prompt answers within 1 s), session/load
of a stored session, fs/* delegation to the client's buffers, and the model's plan (todo).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from _acp_harness import EditorClient, Transcript, capabilities, hermes_acp
from acp import PROTOCOL_VERSION, text_block
from acp.schema import McpServerStdio

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

TRANSCRIPTS = os.environ.get("HERMES_TEST_ACP_TRANSCRIPTS")
"""A folder to save each test's JSON-RPC transcript in (the issue's evidence); unset: none."""


def _save(transcript: Transcript, name: str) -> None:
    if TRANSCRIPTS:
        transcript.dump(Path(TRANSCRIPTS) / f"{name}.jsonl")


async def test_initialize_and_a_text_turn_with_thoughts(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("Hello from hermes.", reasoning="The user greets me."))
    client, transcript = EditorClient(), Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session
        assert init.agent_info is not None and init.agent_info.name == "hermes"
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("say hello")])
    _save(transcript, "text_turn")
    assert response.stop_reason == "end_turn"
    assert client.text() == "Hello from hermes."
    thoughts = [u.content.text for _, u in client.updates if u.session_update == "agent_thought_chunk"]
    assert "".join(thoughts) == "The user greets me."
    assert {sid for sid, _ in client.updates} == {session.session_id}
    assert upstream.requests[0].body["messages"][-1]["content"] == "say hello"
    store = open_sync_state(hermes_home / "state.db")
    try:
        record = store.get_session(session.session_id)
        assert record.source == "acp" and record.title == "say hello"
        assert [m["role"] for m in store.history(session.session_id)] == ["user", "assistant"]
    finally:
        store.close()


async def test_a_tool_turn_asks_permission_and_runs_when_granted(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.o").write_text("x")
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -r build && echo removed"}, id="call_rm")]),
        text_reply("Removed the build folder."),
    )
    client, transcript = EditorClient(answer="allow_once"), Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("clean the build")])
    _save(transcript, "permission_granted")
    assert response.stop_reason == "end_turn"
    assert not (tmp_path / "build").exists()
    (asked,) = client.permissions
    assert asked.tool_call_id == "call_rm" and asked.title == "rm -r build && echo removed"
    assert asked.kind == "execute"
    kinds = client.kinds()
    assert kinds.index("tool_call") < kinds.index("tool_call_update") < kinds.index("agent_message_chunk")
    start = next(u for _, u in client.updates if u.session_update == "tool_call")
    assert (start.tool_call_id, start.kind, start.title) == ("call_rm", "execute", "rm -r build && echo removed")
    done = next(u for _, u in client.updates if u.session_update == "tool_call_update")
    assert done.status == "completed"
    assert "removed" in done.content[-1].content.text and "exit code: 0" in done.content[-1].content.text
    assert client.text() == "Removed the build folder."


async def test_a_denied_tool_call_is_not_run_and_reported_failed(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "build").mkdir()
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -r build"}, id="call_rm")]),
        text_reply("I did not remove it."),
    )
    client, transcript = EditorClient(answer="reject_once"), Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("clean the build")])
    _save(transcript, "permission_denied")
    assert response.stop_reason == "end_turn"
    assert (tmp_path / "build").is_dir()
    assert len(client.permissions) == 1
    done = next(u for _, u in client.updates if u.session_update == "tool_call_update")
    assert done.status == "failed" and "DENIED: this command was not run" in done.content[-1].content.text
    tool_message = upstream.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("DENIED")


async def test_cancel_mid_stream_ends_the_prompt_within_a_second(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("one two three four five six").stall_after(3))
    client, transcript = EditorClient(), Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        prompt = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=[text_block("count")]))
        await asyncio.wait_for(client.first_update.wait(), 20)
        asked = time.monotonic()
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(prompt, 5)
        elapsed = time.monotonic() - asked
    _save(transcript, "cancel")
    assert response.stop_reason == "cancelled"
    assert elapsed < 1.0, elapsed
    assert client.text().startswith("one")
    store = open_sync_state(hermes_home / "state.db")
    try:
        assert store.get_session(session.session_id).end_reason == "interrupted"
    finally:
        store.close()


async def test_cancel_while_a_command_runs_kills_it_within_a_second(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(tool_reply([call("terminal", {"command": "sleep 30 && touch finished"}, id="call_sleep")]))
    client = EditorClient()
    async with hermes_acp(client, hermes_home, upstream) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        prompt = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=[text_block("wait")]))
        await asyncio.wait_for(client.tool_started.wait(), 20)
        asked = time.monotonic()
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(prompt, 5)
        elapsed = time.monotonic() - asked
    assert response.stop_reason == "cancelled"
    assert elapsed < 1.0, elapsed
    done = next(u for _, u in client.updates if u.session_update == "tool_call_update")
    assert done.tool_call_id == "call_sleep" and done.status == "failed"
    assert not (tmp_path / "finished").exists()


async def test_session_load_replays_a_stored_session(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("alpha\nbeta\n")
    upstream.enqueue(
        tool_reply([call("read_file", {"path": "notes.txt"}, id="call_read")], text="Reading it."),
        text_reply("It lists alpha and beta."),
    )
    first = EditorClient()
    async with hermes_acp(first, hermes_home, upstream) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("what is in notes.txt?")])

    upstream.enqueue(text_reply("Still alpha and beta."))
    client, transcript = EditorClient(), Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        await conn.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
        replayed = list(client.updates)
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("and now?")])
        listed = await conn.list_sessions(cwd=str(tmp_path))
    _save(transcript, "load")
    assert [u.session_update for _, u in replayed] == [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    user, said, start, done, answer = (u for _, u in replayed)
    assert user.content.text == "what is in notes.txt?"
    assert said.content.text == "Reading it." and answer.content.text == "It lists alpha and beta."
    assert (start.tool_call_id, start.kind, start.title) == ("call_read", "read", "Read notes.txt")
    assert start.locations[0].path == str(notes)
    assert done.status == "completed" and "1|alpha" in done.content[0].content.text
    assert response.stop_reason == "end_turn"
    assert [(info.session_id, info.title, info.cwd) for info in listed.sessions] == [
        (session.session_id, "what is in notes.txt?", str(tmp_path.resolve()))  # the folder it recorded
    ]
    history = upstream.requests[-1].body["messages"]
    assert [m["role"] for m in history[1:]] == ["user", "assistant", "tool", "assistant", "user"]


async def test_the_todo_tool_is_sent_as_a_plan_and_load_replays_the_latest(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    first = [
        {"content": "Read the notes", "status": "in_progress", "priority": "high"},
        {"content": "Summarise them", "status": "pending"},
    ]
    second = [{**first[0], "status": "completed"}, {**first[1], "status": "in_progress"}]
    upstream.enqueue(
        tool_reply([call("todo", {"todos": first}, id="call_plan1")]),
        tool_reply([call("todo", {"todos": second}, id="call_plan2")]),
        text_reply("Done."),
    )
    client, transcript = EditorClient(), Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("plan it")])
        live = list(client.updates)
        client.updates.clear()
        await conn.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
        replayed = [u for _, u in client.updates]
    _save(transcript, "plan")
    assert response.stop_reason == "end_turn"
    assert [u.session_update for _, u in live] == ["plan", "plan", "agent_message_chunk"]
    plans = [[(e.content, e.priority, e.status) for e in u.entries] for _, u in live[:2]]
    assert plans == [
        [("Read the notes", "high", "in_progress"), ("Summarise them", "medium", "pending")],
        [("Read the notes", "high", "completed"), ("Summarise them", "medium", "in_progress")],
    ]
    assert [u.session_update for u in replayed] == ["user_message_chunk", "agent_message_chunk", "plan"]
    assert [(e.content, e.priority, e.status) for e in replayed[-1].entries] == plans[1]


async def test_file_tools_read_and_write_through_the_clients_buffers(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    source = tmp_path / "app.py"
    source.write_text("print('on disk')\n")
    upstream.enqueue(
        tool_reply([call("read_file", {"path": "app.py"}, id="call_read")]),
        tool_reply(
            [call("patch", {"path": "app.py", "old_string": "unsaved", "new_string": "edited"}, id="call_patch")]
        ),
        text_reply("Done."),
    )
    client = EditorClient(buffers={str(source): "print('unsaved')\n"})
    transcript = Transcript()
    async with hermes_acp(client, hermes_home, upstream, transcript) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs=True))
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("edit app.py")])
    _save(transcript, "fs_delegation")
    assert response.stop_reason == "end_turn"
    read_result = upstream.requests[1].body["messages"][-1]
    assert read_result["role"] == "tool" and "1|print('unsaved')" in read_result["content"]
    assert client.buffers[str(source)] == "print('edited')\n"
    assert source.read_text() == "print('on disk')\n"  # the editor saves, not hermes
    assert client.reads.count(str(source)) == 2
    edit = next(u for _, u in client.updates if u.session_update == "tool_call" and u.tool_call_id == "call_patch")
    assert edit.kind == "edit" and edit.locations[0].path == str(source)
    (diff,) = edit.content
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(source), "unsaved", "edited")


async def test_mcp_servers_named_in_session_new_join_the_tools(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    server = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "stdio_server.py"
    upstream.enqueue(
        tool_reply([call("mcp__x__y", {"text": "hi"}, id="call_mcp")]),
        text_reply("The server echoed."),
    )
    client = EditorClient()
    async with hermes_acp(client, hermes_home, upstream) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        stdio = McpServerStdio(name="x", command=sys.executable, args=[str(server)], env=[])
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[stdio])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("echo hi")])
    assert response.stop_reason == "end_turn"
    assert "mcp__x__y" in {tool["function"]["name"] for tool in upstream.requests[0].body["tools"]}
    done = next(u for _, u in client.updates if u.session_update == "tool_call_update")
    assert done.status == "completed" and done.content[-1].content.text.startswith("echo from x: hi")
    start = next(u for _, u in client.updates if u.session_update == "tool_call")
    assert (start.kind, start.title) == ("other", "mcp__x__y")
