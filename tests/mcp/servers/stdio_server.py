"""A small MCP server over stdio, built on the SDK's MCPServer (FastMCP in mcp 1.x).

Tools: `y` echoes its text back with a marker, `fail` answers with an error result,
`slow` sleeps for the given seconds, `die` ends the server process mid-call.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("x")


@server.tool()
def y(text: str) -> str:
    """Echo `text` back, marked so tests can tell it came from this server."""
    return f"echo from x: {text} (pid {os.getpid()})"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with `reason`."""
    raise ValueError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def die() -> str:
    """End the server process without answering."""
    sys.stdout.flush()
    os._exit(3)


if __name__ == "__main__":
    pidfile = os.environ.get("MCP_TEST_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as fh:
            fh.write(str(os.getpid()))
    server.run("stdio")
