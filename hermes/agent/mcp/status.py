"""What `hermes mcp list`, `/mcp`, `doctor` and start-up notices say about a server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

StatusName = Literal["connected", "failed", "disabled", "starting", "closed"]


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    name: str
    """The name offered to the model (`mcp__server__tool`)."""
    tool: str
    """The name on the server."""
    description: str = ""


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    name: str
    transport: Literal["stdio", "http"]
    target: str
    """Command line or URL."""
    status: StatusName
    message: str = ""
    """Why it failed (one line); empty when connected."""
    tools: tuple[McpToolInfo, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def line(self) -> str:
        """One line for a notice, stderr or a log."""
        if self.status == "failed":
            return f"MCP server {self.name!r} failed: {self.message}"
        if self.status == "connected":
            count = len(self.tools)
            return f"MCP server {self.name!r}: connected, {count} tool{'s' if count != 1 else ''}"
        return f"MCP server {self.name!r}: {self.status}"

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "status": self.status,
            "transport": self.transport,
            "target": self.target,
            "tools": [tool.name for tool in self.tools],
        }
        if self.message:
            data["message"] = self.message
        return data
