"""`hermes mcp serve --server URL`: the MCP `chat` tool and the session resources on a real
`hermes serve` (SQLite), driven by the MCP SDK's stdio client. The MCP process has a home of
its own with no storage: the turns, the history and the sessions are the server's.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types
import pytest
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from hermes.testing.upstream import Reply, ScriptedUpstream, Stall, call, text_reply, tool_reply

from ._remote_serve import KEY, REPO, ServeProcess, serve_env


@pytest.fixture
async def serve(tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[ServeProcess]:
    work = tmp_path / "work"
    work.mkdir()
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream), work)
    await process.start()
    yield process
    await process.kill()


def texts(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


async def test_chat_and_resources_go_to_the_server(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    (serve.cwd / "somefolder").mkdir()
    upstream.enqueue(
        text_reply("Remote hello."),
        tool_reply([call("terminal", {"command": "rm -rf somefolder"}, id="call_rm")]),
        text_reply("Not deleted."),
        Reply([Stall(3600)]),
        text_reply("After the stop."),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(tmp_path / "client-home"), PYTHONPATH=str(REPO))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermes", "mcp", "serve", "--server", serve.url, "--key", KEY],
        env=env,
        cwd=tmp_path,
    )
    with (tmp_path / "mcp.err").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 60)
            first = await session.call_tool("chat", {"prompt": "say hello"}, read_timeout_seconds=60)
            assert isinstance(first, mcp_types.CallToolResult) and not first.is_error, first
            assert first.structured_content is not None
            session_id = first.structured_content["session_id"]
            assert first.structured_content["answer"] == "Remote hello."

            second = await session.call_tool(
                "chat", {"prompt": "delete somefolder", "session_id": session_id}, read_timeout_seconds=60
            )
            assert isinstance(second, mcp_types.CallToolResult) and not second.is_error, second
            assert texts(second).startswith("Not deleted.")
            sent = [m for m in upstream.requests[1].messages if m["role"] != "system"]
            assert [m["content"] for m in sent] == ["say hello", "Remote hello.", "delete somefolder"]
            tool_message = next(m for m in upstream.requests[2].messages if m["role"] == "tool")
            assert "denied" in str(tool_message["content"]).lower()  # nobody approves: the server refused

            # A cancelled call stops the server's run too: the session takes the next turn.
            stalled = asyncio.create_task(
                session.call_tool("chat", {"prompt": "stall", "session_id": session_id}, read_timeout_seconds=60)
            )
            async with asyncio.timeout(30):
                while len(upstream.requests) < 4:
                    await asyncio.sleep(0.05)
            stalled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stalled
            async with asyncio.timeout(30):
                while True:
                    again = await session.call_tool(
                        "chat", {"prompt": "again", "session_id": session_id}, read_timeout_seconds=60
                    )
                    assert isinstance(again, mcp_types.CallToolResult)
                    if not again.is_error:
                        break
                    await asyncio.sleep(0.3)  # the server's run is still winding down
            assert again.structured_content is not None
            assert again.structured_content["answer"] == "After the stop."

            listed = (await session.list_resources()).resources
            assert [r.uri for r in listed] == [f"hermes://sessions/{session_id}"]
            read = (await session.read_resource(f"hermes://sessions/{session_id}")).contents[0]
            assert isinstance(read, mcp_types.TextResourceContents)
            assert "say hello" in read.text and "delete somefolder" in read.text and "After the stop." in read.text
    assert (serve.cwd / "somefolder").is_dir()
    assert not (tmp_path / "client-home" / "state.db").exists()  # nothing was stored on the client side


async def test_a_wrong_key_is_one_line_on_stderr_before_any_protocol(serve: ServeProcess, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(tmp_path / "client-home"), PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", "mcp", "serve", "--server", serve.url, "--key", "wrong-key",
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode not in (0, None)
    assert out == b""
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes: "), lines
