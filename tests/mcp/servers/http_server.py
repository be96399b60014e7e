"""A small MCP server over streamable HTTP, built on the SDK's MCPServer (FastMCP in mcp 1.x).

Binds 127.0.0.1 on a free port and prints `PORT <n>` on stdout once it listens.
Tool `add` adds two integers; `header` returns the value of a request header.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("web")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"sum is {a + b}"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of request header `name` (or "missing")."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), "missing")


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    uvicorn_server = uvicorn.Server(config)
    serving = asyncio.create_task(uvicorn_server.serve(sockets=[sock]))
    while not uvicorn_server.started:
        if serving.done():
            serving.result()
        await asyncio.sleep(0.01)
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    await serving


if __name__ == "__main__":
    asyncio.run(main())
