"""MCP servers as tools: `mcp__<server>__<tool>`, on the official `mcp` SDK.

    manager = McpManager.from_settings(settings)       # None when no server is configured
    statuses = await manager.start(agent.tools)       # concurrent, each under its startup_timeout
    ...                                                # turns call the tools like built-ins
    await manager.aclose()                             # every session closed, stdio children gone

Nothing here imports the SDK until a server is started, so `hermes --help` stays fast.
"""

from __future__ import annotations

from hermes.agent.mcp.manager import McpManager
from hermes.agent.mcp.status import McpServerStatus

__all__ = ["McpManager", "McpServerStatus"]
