"""All configured MCP servers of one agent: start them together, offer their tools, close them.

`start()` connects every enabled server concurrently (each under its own
`startup_timeout`), registers the tools of those that connected in the agent's
`ToolRegistry`, and returns one `McpServerStatus` per server. A server that fails is a
status with a one-line message; it never stops the others. `aclose()` closes every
session (stdio servers exit) and may be called more than once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.mcp.naming import tool_name, unique_name
from hermes.agent.mcp.status import McpServerStatus, McpToolInfo
from hermes.agent.tools.base import ToolRegistry
from hermes.mcp_config import McpServerConfig

if TYPE_CHECKING:
    from hermes.agent.mcp.connection import McpConnection
    from hermes.agent.safety.launch import ToolLauncher
    from hermes.config import Settings


class McpManager:
    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        log_dir: Path | None = None,
        cwd: Path | None = None,
        launcher: ToolLauncher | None = None,
    ) -> None:
        self.servers = tuple(servers)
        self.launcher = launcher
        """How stdio servers start (sandbox, allowlisted environment); None: no sandbox."""
        self.log_dir = log_dir
        self.cwd = cwd
        self._connections: dict[str, McpConnection] = {}
        self._tool_names: dict[str, list[McpToolInfo]] = {}
        self._started = False

    @classmethod
    def from_settings(cls, settings: Settings, *, cwd: Path | None = None) -> McpManager | None:
        """A manager for the configured servers, or None when there are none."""
        if not settings.mcp_servers:
            return None
        from hermes.agent.safety.launch import ToolLauncher

        # The sandbox applies to stdio servers as it does to `terminal`.
        launcher = ToolLauncher.from_settings(settings)
        return cls(settings.mcp_servers, log_dir=settings.home / "logs", cwd=cwd, launcher=launcher)

    async def start(self, registry: ToolRegistry | None = None) -> list[McpServerStatus]:
        """Connect every enabled server; register the tools of the connected ones in `registry`."""
        if self._started:
            return self.statuses()
        self._started = True
        enabled = [server for server in self.servers if server.enabled]
        if enabled:
            from hermes.agent.mcp.connection import McpConnection

            for server in enabled:
                self._connections[server.name] = McpConnection(
                    server, log_dir=self.log_dir, cwd=self.cwd, launcher=self.launcher
                )
            await asyncio.gather(*(connection.start() for connection in self._connections.values()))
        if registry is not None:
            self.register(registry)
        return self.statuses()

    def register(self, registry: ToolRegistry) -> None:
        from hermes.agent.mcp.tools import make_tool

        taken = set(registry.names())
        for name, connection in self._connections.items():
            if connection.status != "connected":
                continue
            infos: list[McpToolInfo] = []
            for tool in connection.tools:
                offered = unique_name(tool_name(name, tool.name), taken)
                taken.add(offered)
                registry.register(make_tool(connection, tool, offered))
                infos.append(McpToolInfo(offered, tool.name, " ".join((tool.description or "").split())))
            self._tool_names[name] = infos

    def statuses(self) -> list[McpServerStatus]:
        out = []
        for server in self.servers:
            connection = self._connections.get(server.name)
            if not server.enabled:
                out.append(McpServerStatus(server.name, server.transport, server.target, "disabled"))
                continue
            if connection is None:
                out.append(McpServerStatus(server.name, server.transport, server.target, "starting"))
                continue
            tools = self._tool_names.get(server.name)
            if tools is None:
                tools = [
                    McpToolInfo(tool_name(server.name, t.name), t.name, " ".join((t.description or "").split()))
                    for t in connection.tools
                ]
            out.append(
                McpServerStatus(
                    server.name,
                    server.transport,
                    server.target,
                    connection.status,
                    connection.message,
                    tuple(tools) if connection.status == "connected" else (),
                )
            )
        return out

    def failures(self) -> list[McpServerStatus]:
        return [status for status in self.statuses() if status.failed]

    async def aclose(self) -> None:
        connections = list(self._connections.values())
        if connections:
            await asyncio.gather(*(connection.aclose() for connection in connections), return_exceptions=True)


async def start_mcp(
    settings: Settings,
    registry: ToolRegistry,
    report: Callable[[McpServerStatus], None],
    *,
    cwd: Path | None = None,
) -> McpManager | None:
    """Start the configured servers into `registry`; `report` gets each failed one.

    Returns the manager to close when the agent closes (None when nothing is configured).
    """
    manager = McpManager.from_settings(settings, cwd=cwd)
    if manager is None:
        return None
    try:
        await manager.start(registry)
    except BaseException:
        await manager.aclose()
        raise
    for status in manager.failures():
        report(status)
    return manager
