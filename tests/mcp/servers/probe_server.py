"""A stdio MCP server that reports what its process can see: environment and files.

Tools: `env` returns the environment as JSON; `write` tries to write a file and says
whether it could; `read` returns a file's text or the error.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
def env() -> str:
    """The server's environment as a JSON object."""
    return json.dumps(dict(os.environ))


@server.tool()
def write(path: str) -> str:
    """Write `path`; "written" or the error."""
    try:
        with open(path, "w") as fh:
            fh.write("probe")
    except OSError as exc:
        return f"error: {exc.strerror}"
    return "written"


@server.tool()
def read(path: str) -> str:
    """The text of `path`, or the error."""
    try:
        with open(path) as fh:
            return fh.read()
    except OSError as exc:
        return f"error: {exc.strerror}"


if __name__ == "__main__":
    server.run("stdio")
