"""`hermes mcp serve` (a real process) driven by the MCP SDK's stdio client and ClientSession.

The model is the scripted upstream (HERMES_BASE_URL); every call runs a real hermes turn
in the server's folder, with the real store, tools and sandbox policy.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp import MCPError, StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp_harness import SERVERS, hermes_env, run_hermes, stdio_entry, write_config

from hermes.testing.upstream import Reply, ScriptedUpstream, Stall, call, text_reply, tool_reply

CALL_TIMEOUT = 60.0


@asynccontextmanager
async def hermes_mcp(
    home: Path, upstream: ScriptedUpstream, cwd: Path, *args: str, **env: str
) -> AsyncIterator[ClientSession]:
    """`hermes mcp serve ARGS` in `cwd`, initialized; its stderr goes to cwd/../serve.err."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermes", "mcp", "serve", *args],
        env=hermes_env(home, upstream, HERMES_LSP="false", **env),
        cwd=cwd,
    )
    with (cwd.parent / "serve.err").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), CALL_TIMEOUT)
            yield session


def texts(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


async def chat(session: ClientSession, progress: Any = None, **arguments: Any) -> mcp_types.CallToolResult:
    result = await session.call_tool("chat", arguments, read_timeout_seconds=CALL_TIMEOUT, progress_callback=progress)
    assert isinstance(result, mcp_types.CallToolResult)
    return result


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


async def test_chat_continues_its_session_and_the_session_is_a_markdown_resource(
    upstream: ScriptedUpstream, hermes_home: Path, workdir: Path
) -> None:
    upstream.enqueue(text_reply("Paris is the capital."), text_reply("About two million people."))
    async with hermes_mcp(hermes_home, upstream, workdir) as session:
        tools = (await session.list_tools()).tools
        assert [tool.name for tool in tools] == ["chat"]
        assert tools[0].input_schema["required"] == ["prompt"]
        assert set(tools[0].input_schema["properties"]) == {"prompt", "session_id"}

        first = await chat(session, prompt="What is the capital of France?")
        assert not first.is_error, texts(first)
        assert first.structured_content is not None
        session_id = first.structured_content["session_id"]
        assert first.structured_content == {
            "session_id": session_id,
            "answer": "Paris is the capital.",
            "status": "completed",
        }
        assert "Paris is the capital." in texts(first) and session_id in texts(first)

        second = await chat(session, prompt="How many people live there?", session_id=session_id)
        assert not second.is_error, texts(second)
        assert second.structured_content == {
            "session_id": session_id,
            "answer": "About two million people.",
            "status": "completed",
        }
        # The second request carries the first exchange.
        sent = upstream.requests[1].messages
        assert [m["role"] for m in sent][-3:] == ["user", "assistant", "user"]
        contents = [str(m.get("content")) for m in sent]
        assert any("What is the capital of France?" in c for c in contents)
        assert any("Paris is the capital." in c for c in contents)
        assert "How many people live there?" in contents[-1]

        listed = (await session.list_resources()).resources
        assert [r.uri for r in listed] == [f"hermes://sessions/{session_id}"]
        assert listed[0].mime_type == "text/markdown"
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["hermes://sessions/{id}"]

        read = await session.read_resource(f"hermes://sessions/{session_id}")
        (contents_0,) = read.contents
        assert isinstance(contents_0, mcp_types.TextResourceContents)
        assert contents_0.mime_type == "text/markdown"
        markdown = contents_0.text
        assert f"- id: `{session_id}`" in markdown and "- source: mcp" in markdown
        for text in ("What is the capital of France?", "How many people live there?", "About two million people."):
            assert text in markdown
    assert len(upstream.requests) == 2


async def test_unknown_session_and_bad_arguments_are_tool_errors_and_the_server_goes_on(
    upstream: ScriptedUpstream, hermes_home: Path, workdir: Path
) -> None:
    upstream.enqueue(text_reply("still here"))
    async with hermes_mcp(hermes_home, upstream, workdir) as session:
        unknown = await chat(session, prompt="hello", session_id="20200101_000000_nosuch")
        assert unknown.is_error
        assert "no hermes session '20200101_000000_nosuch'" in texts(unknown)

        for arguments in (
            {},
            {"prompt": 5},
            {"prompt": "  "},
            {"prompt": "x", "session_id": 3},
            {"prompt": "x", "extra": 1},
        ):
            bad = await chat(session, **arguments)
            assert bad.is_error, arguments
            assert texts(bad)

        with pytest.raises(MCPError) as missing:
            await session.read_resource("hermes://sessions/20200101_000000_nosuch")
        assert missing.value.code == mcp_types.INVALID_PARAMS
        with pytest.raises(MCPError):
            await session.read_resource("file:///etc/passwd")

        ok = await chat(session, prompt="are you there?")
        assert not ok.is_error and ok.structured_content is not None
        assert ok.structured_content["answer"] == "still here"
    assert len(upstream.requests) == 1  # nothing reached the model before the one good call


async def test_a_command_that_needs_approval_is_refused(
    upstream: ScriptedUpstream, hermes_home: Path, workdir: Path
) -> None:
    victim = workdir / "somefolder"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -rf somefolder"}, id="call_rm")]),
        text_reply("I could not delete it."),
    )
    reports: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, message))

    async with hermes_mcp(hermes_home, upstream, workdir) as session:
        result = await chat(session, progress=on_progress, prompt="delete somefolder")
        assert not result.is_error, texts(result)
    assert reports == [(1, "terminal: rm -rf somefolder")]  # the tool it started, as progress
    assert (victim / "keep.txt").read_text() == "precious"
    tool_messages = [m for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert len(tool_messages) == 1 and tool_messages[0]["tool_call_id"] == "call_rm"
    assert "denied" in str(tool_messages[0]["content"]).lower()


async def test_a_busy_session_is_refused_and_a_cancelled_call_stops_its_turn(
    upstream: ScriptedUpstream, hermes_home: Path, workdir: Path
) -> None:
    upstream.enqueue(text_reply("first"), Reply([Stall(3600)]))
    async with hermes_mcp(hermes_home, upstream, workdir) as session:
        first = await chat(session, prompt="start")
        assert first.structured_content is not None
        session_id = first.structured_content["session_id"]

        stalled = asyncio.create_task(chat(session, prompt="take forever", session_id=session_id))
        async with asyncio.timeout(30):
            while len(upstream.requests) < 2:
                await asyncio.sleep(0.05)
        busy = await chat(session, prompt="me too", session_id=session_id)
        assert busy.is_error
        assert "already running a turn" in texts(busy)

        stalled.cancel()  # the SDK client sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await stalled

        # The turn stops: the session takes a turn again soon (a turn that went on would
        # hold it for the upstream's hour-long stall).
        upstream.enqueue(text_reply("after the stop"))
        async with asyncio.timeout(20):
            while True:
                again = await chat(session, prompt="again", session_id=session_id)
                if not (again.is_error and "already running" in texts(again)):
                    break
                await asyncio.sleep(0.2)
        assert not again.is_error, texts(again)
        assert again.structured_content is not None and again.structured_content["answer"] == "after the stop"
        markdown = (await session.read_resource(f"hermes://sessions/{session_id}")).contents[0]
        assert isinstance(markdown, mcp_types.TextResourceContents)
        assert "take forever" in markdown.text and "after the stop" in markdown.text


async def test_a_turn_past_the_timeout_is_stopped_and_answered_as_an_error(
    upstream: ScriptedUpstream, hermes_home: Path, workdir: Path
) -> None:
    upstream.enqueue(Reply([Stall(3600)]))
    async with hermes_mcp(hermes_home, upstream, workdir, "--turn-timeout", "2") as session:
        started = asyncio.get_running_loop().time()
        result = await chat(session, prompt="this will stall")
        assert asyncio.get_running_loop().time() - started < 20
        assert result.is_error
        assert "longer than 2 s" in texts(result)
        assert result.structured_content is not None and result.structured_content["status"] == "interrupted"


def raw_server(home: Path, upstream: ScriptedUpstream, cwd: Path, **env: str) -> subprocess.Popen[str]:
    """`hermes mcp serve` on pipes, for speaking JSON-RPC lines to it directly."""
    return subprocess.Popen(
        [sys.executable, "-m", "hermes", "mcp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=hermes_env(home, upstream, HERMES_LSP="false", **env),
    )


def send(proc: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_closing_stdin_stops_a_running_turn_and_ends_the_server(
    upstream: ScriptedUpstream, hermes_home: Path, workdir: Path
) -> None:
    upstream.enqueue(Reply([Stall(3600)]))
    proc = raw_server(hermes_home, upstream, workdir)
    assert proc.stdout is not None and proc.stdin is not None
    send(proc, INITIALIZE)
    assert json.loads(proc.stdout.readline())["id"] == 1
    send(proc, INITIALIZED)
    call_chat = {"name": "chat", "arguments": {"prompt": "a turn the client walks away from"}}
    send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_chat})
    deadline = time.monotonic() + 30
    while not upstream.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.requests, "the turn never reached the model"
    proc.stdin.close()
    try:
        proc.wait(timeout=20)  # the turn is stopped (not left to its hour-long stall) and the server ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        assert proc.stderr is not None
        stderr = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    listed = run_hermes("sessions", "list", "--json", home=hermes_home)
    assert listed.returncode == 0, listed.stderr
    assert "a turn the client walks away from" in listed.stdout


def test_a_turn_timeout_must_be_positive(hermes_home: Path) -> None:
    result = run_hermes("mcp", "serve", "--turn-timeout", "0", home=hermes_home)
    assert result.returncode == 2
    assert "--turn-timeout must be a positive number of seconds" in result.stderr
    assert result.stdout == ""


def test_stdout_carries_only_the_protocol(upstream: ScriptedUpstream, hermes_home: Path, workdir: Path) -> None:
    """hermes' own notices (a broken MCP server of its own) go to stderr; a command the turn
    runs writes to its own pipes, never to the protocol's stdout."""
    write_config(hermes_home, stdio_entry("bad", "broken_server.py"))
    assert (SERVERS / "broken_server.py").exists()
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "echo LEAK-MARKER; echo LEAK-ERR >&2"})]), text_reply("plain answer")
    )
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chat", "arguments": {"prompt": "hi"}}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "mcp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workdir,
        env=hermes_env(hermes_home, upstream, HERMES_LSP="false", HERMES_SANDBOX="off"),
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: list[dict[str, Any]] = []
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" in message:
            replies.append(json.loads(proc.stdout.readline()))
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert stdout == ""  # nothing after the last answer either
    assert [reply["id"] for reply in replies] == [1, 2]
    assert all(reply["jsonrpc"] == "2.0" and "result" in reply for reply in replies)
    assert replies[1]["result"]["structuredContent"]["answer"] == "plain answer"
    assert "MISSING_TOKEN" in stderr  # the broken server's failure, reported on stderr
    tool_result = [m for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert "LEAK-MARKER" in str(tool_result[0]["content"])  # the command ran, its output went to the model


def test_what_native_code_writes_while_hermes_opens_goes_to_stderr(tmp_path: Path) -> None:
    """The opening phase diverts fd 1 itself (a C library or a child started then writes there)."""
    script = (
        "import os, subprocess, sys\n"
        "from hermes.mcp_server.server import _stdout_on_stderr\n"
        "with _stdout_on_stderr():\n"
        "    os.write(1, b'NATIVE\\n')\n"
        "    print('PYTHON')\n"
        "    subprocess.run(['echo', 'CHILD'], check=True)\n"
        "os.write(1, b'PROTOCOL\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=hermes_env(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "PROTOCOL\n"
    assert proc.stderr.split() == ["NATIVE", "PYTHON", "CHILD"]
