"""MCP tools as hermes `Tool`s: schema, approval, call, result text.

A call runs like any built-in tool (the engine's registry, ToolStarted/ToolCompleted, the
output cap). With `approval = "ask"` each call goes through `ToolContext.request_approval`
(rule `mcp:<server>`; "allow for this session" covers the one tool asked about, with any
arguments, and the request says so: grants.tool_grant); the
default runs without asking, like the read-only built-ins. Errors reach the model as
error results: `ToolError` for a result flagged `is_error`, a timeout, or a lost server.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hermes.agent.safety.grants import tool_grant
from hermes.agent.tools.base import Tool, ToolContext, ToolHandler
from hermes.errors import ToolError

if TYPE_CHECKING:
    import mcp_types

    from hermes.agent.mcp.connection import McpConnection

DESCRIPTION_LIMIT = 1024


def input_schema(raw: dict[str, Any] | None) -> dict[str, Any]:
    """The tool's JSON schema as the model gets it: always an object schema."""
    schema = dict(raw or {})
    if schema.get("type") != "object":
        schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


def make_tool(connection: McpConnection, tool: mcp_types.Tool, name: str) -> Tool:
    server = connection.config.name
    description = " ".join((tool.description or tool.title or tool.name).split())[:DESCRIPTION_LIMIT]
    annotations = tool.annotations
    read_only = bool(annotations is not None and annotations.read_only_hint)
    return Tool(
        name=name,
        description=f"[MCP server {server}] {description}",
        parameters=input_schema(tool.input_schema),
        handler=_handler(connection, tool.name, name),
        read_only=read_only,
    )


def _handler(connection: McpConnection, remote_name: str, name: str) -> ToolHandler:
    from hermes.agent.mcp.connection import McpCallError

    async def call(args: dict[str, Any], ctx: ToolContext) -> str:
        config = connection.config
        if config.approval == "ask":
            shown = f"{remote_name}({json.dumps(args, ensure_ascii=False)[:300]})"
            reason = f"tool of MCP server {config.name} (approval = \"ask\")"
            rule = f"mcp:{config.name}"
            if not await ctx.request_approval(name, shown, reason, rule, tool_grant(name, config.name)):
                who = "the user denied it" if ctx.approve is not None else "no one can approve it in this session"
                return (
                    f"DENIED: {name} was not run. It needs approval ({reason}) [rule: {rule}] and {who}. "
                    "Do not retry it; ask the user how to proceed."
                )
        try:
            result = await connection.call(remote_name, args)
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        text = result_text(result)
        if result.is_error:
            raise ToolError(text or f"{remote_name} failed (the MCP server gave no details)")
        return text

    return call


def result_text(result: mcp_types.CallToolResult) -> str:
    """What the model reads: text blocks as they are, other blocks as one-line placeholders."""
    parts: list[str] = []
    for block in result.content:
        match block.type:
            case "text":
                parts.append(block.text)
            case "image" | "audio":
                parts.append(f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4:,} bytes]")
            case "resource_link":
                parts.append(f"[resource: {block.uri}]")
            case "resource":
                resource = block.resource
                text = getattr(resource, "text", None)
                parts.append(text if isinstance(text, str) else f"[resource: {resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)
