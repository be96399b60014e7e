"""The MCP servers a client names in `session/new` / `session/load`, as hermes' server entries.

Invariants:
- stdio and (streamable) HTTP servers are supported, as `[mcp_servers]` entries are; an SSE
  server is left out with a log line (initialize does not advertise `mcp.sse`).
- A server's name is made a valid hermes name (other characters become '-'); stdio servers
  start in the session's working directory.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from hermes.mcp_config import McpServerConfig

log = logging.getLogger(__name__)

AnyMcpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def server_name(raw: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "-", raw).strip("-_").replace("__", "_")[:40]
    return name or "server"


def server_configs(servers: Sequence[AnyMcpServer] | None, cwd: Path) -> list[McpServerConfig]:
    configs: list[McpServerConfig] = []
    for server in servers or ():
        match server:
            case McpServerStdio():
                env = {variable.name: variable.value for variable in server.env}
                configs.append(
                    McpServerConfig(
                        server_name(server.name), command=server.command, args=tuple(server.args), env=env, cwd=cwd
                    )
                )
            case HttpMcpServer():
                headers = {header.name: header.value for header in server.headers}
                configs.append(McpServerConfig(server_name(server.name), url=server.url, headers=headers))
            case SseMcpServer() | AcpMcpServer():
                log.warning("MCP server %s: transport not supported over ACP; left out", server.name)
    return configs
