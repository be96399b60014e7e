"""How a stdio MCP server is started: the one place that builds its command.

The sandbox (hermes/agent/sandbox.py) wraps this command the way it wraps `terminal`:
`stdio_command` is the seam, everything else takes its result as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hermes.mcp_config import McpServerConfig


@dataclass(frozen=True, slots=True)
class SpawnCommand:
    command: str
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    """Added over the SDK's small default environment (HOME, PATH, …)."""
    cwd: Path | None = None


def stdio_command(server: McpServerConfig, default_cwd: Path | None = None) -> SpawnCommand:
    """The process to start for a stdio server (relative cwd resolves against `default_cwd`)."""
    assert server.command is not None, "stdio_command is only for command servers"
    cwd = server.cwd
    if cwd is not None and not cwd.is_absolute() and default_cwd is not None:
        cwd = default_cwd / cwd
    return SpawnCommand(command=server.command, args=server.args, env=dict(server.env), cwd=cwd)
