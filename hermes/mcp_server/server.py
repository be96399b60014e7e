"""`hermes mcp serve`: the MCP server on this process's stdin and stdout (the SDK's low-level `Server`).

    async with open_backend(settings) as backend:            # hermes/backend.py, local
        ...build_server(McpTurns(...), backend.sessions).run(…stdio…)

Offers the `chat` tool (hermes/mcp_server/turns.py) and the sessions as resources
(hermes/mcp_server/resources.py).

Invariants:
- stdout carries the protocol and nothing else: while the backend opens, fd 1 and
  Python's stdout point at stderr (native code and the children started then included);
  while serving, the SDK's `stdio_server` keeps fd 1 for the protocol on a
  private descriptor and points fd 1 (what `print` and child processes reach) at stderr;
- logs, start-up notices and the status of hermes' own MCP servers go to stderr, at
  WARNING unless HERMES_LOG_LEVEL says otherwise;
- a bad call (unknown tool, wrong argument types, unknown or busy session) is a tool
  error result (`isError`), never a crash of the server; an unknown resource is a
  JSON-RPC invalid-params error;
- the server ends when the client closes stdin; running turns are stopped first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from hermes import __version__
from hermes.backend import ChatSessions
from hermes.config import Settings
from hermes.mcp_server.resources import UnknownResource, list_sessions, read_session, templates
from hermes.mcp_server.turns import ChatAnswer, ChatRefused, McpTurns

log = logging.getLogger("hermes.mcp_server")

CHAT_TOOL = "chat"
INSTRUCTIONS = (
    "hermes is a coding agent working in the folder this server was started in. Call `chat` with a "
    "prompt to run one hermes turn (it reads files, edits them and runs commands there); pass the "
    "returned session_id to continue the same conversation. Past sessions are resources "
    "hermes://sessions/{id} (Markdown)."
)

_CHAT_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "description": "What hermes should do or answer."},
        "session_id": {
            "type": "string",
            "description": "Continue this hermes session (the session_id of an earlier answer); "
            "leave it out to start a new one.",
        },
    },
    "required": ["prompt"],
    "additionalProperties": False,
}
_CHAT_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string", "description": "Pass it to the next call to continue."},
        "answer": {"type": "string"},
        "status": {"type": "string", "enum": ["completed", "partial", "failed", "interrupted"]},
    },
    "required": ["session_id", "answer", "status"],
}


def chat_tool() -> types.Tool:
    return types.Tool(
        name=CHAT_TOOL,
        title="Ask hermes",
        description="Run one hermes agent turn in the server's folder and return its answer and session_id. "
        "Commands and edits that need approval are refused (nobody can approve them here).",
        input_schema=_CHAT_INPUT,
        output_schema=_CHAT_OUTPUT,
        annotations=types.ToolAnnotations(title="Ask hermes", read_only_hint=False, open_world_hint=True),
    )


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def answer_result(answer: ChatAnswer) -> types.CallToolResult:
    """The answer as text (then the session id) and as structured content; a failed or
    stopped turn is a tool error that says why."""
    structured = {"session_id": answer.session_id, "answer": answer.text, "status": answer.status}
    session_line = f"session_id: {answer.session_id}"
    if answer.status in ("failed", "interrupted"):
        reason = answer.error or answer.status
        lines = [f"hermes: the turn {answer.status}: {reason}"]
        if answer.text:
            lines.append(f"What it answered before that:\n{answer.text}")
        lines.append(session_line)
        return types.CallToolResult(
            content=[types.TextContent(text="\n\n".join(lines))], structured_content=structured, is_error=True
        )
    text = answer.text
    if answer.status == "partial":
        text = f"{text}\n\n[incomplete answer: {answer.error or 'cut off'}]"
    return types.CallToolResult(
        content=[types.TextContent(text=text), types.TextContent(text=session_line)],
        structured_content=structured,
    )


def build_server(turns: McpTurns, sessions: ChatSessions) -> Server[Any]:
    """The low-level MCP server: the `chat` tool and the session resources."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[chat_tool()])

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != CHAT_TOOL:
            return error_result(f"unknown tool {params.name!r}: this server offers {CHAT_TOOL!r}")
        arguments = params.arguments or {}
        prompt = arguments.get("prompt")
        session_id = arguments.get("session_id")
        unknown = sorted(set(arguments) - {"prompt", "session_id"})
        if unknown:
            return error_result(f"unknown argument(s) {', '.join(unknown)}: chat takes prompt and session_id")
        if not isinstance(prompt, str):
            return error_result("prompt is required and must be a string")
        if session_id is not None and not isinstance(session_id, str):
            return error_result("session_id must be a string")

        async def progress(count: float, message: str) -> None:
            await ctx.session.report_progress(count, None, message)  # a no-op unless the client asked

        try:
            answer = await turns.chat(prompt, session_id or None, progress=progress)
        except ChatRefused as exc:
            return error_result(f"hermes: {exc}")
        return answer_result(answer)

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await list_sessions(sessions))

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=templates())

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = await read_session(sessions, params.uri)
        except UnknownResource as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc), {"uri": params.uri}) from None
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "hermes",
        version=__version__,
        title="hermes",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


async def serve_stdio(
    settings: Settings, *, timeout: float, cwd: Path, server: str | None = None, key: str | None = None
) -> None:
    """Open the backend (local, or the `hermes serve` at `server`), then serve MCP on stdio
    until the client closes stdin."""
    from hermes.agent.mcp.status import McpServerStatus
    from hermes.backend import open_backend

    def report_mcp(status: McpServerStatus) -> None:
        log.warning("%s", status.line())

    async with contextlib.AsyncExitStack() as stack:
        # Anything written while hermes opens goes to stderr; fd 1 is the SDK's to claim below.
        with _stdout_on_stderr():
            backend = await stack.enter_async_context(open_backend(settings, server, key))
            for notice in backend.notices():
                log.warning("%s", notice)
            agent = await backend.open_agent(report_mcp=report_mcp, cwd=cwd)
            if agent.instructions is not None and agent.instructions.notice:
                log.warning("%s", agent.instructions.notice)
        turns = McpTurns(agent, backend.sessions, cwd=cwd, timeout=timeout, yolo=settings.yolo)
        protocol = build_server(turns, backend.sessions)
        async with stdio_server() as (read_stream, write_stream):
            await protocol.run(read_stream, write_stream, protocol.create_initialization_options())


@contextlib.contextmanager
def _stdout_on_stderr() -> Iterator[None]:
    """fd 1 and sys.stdout point at stderr inside the block; both are restored after it."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run(settings: Settings, *, timeout: float, server: str | None = None, key: str | None = None) -> None:
    """Serve MCP on stdio until the client closes it."""
    level = os.environ.get("HERMES_LOG_LEVEL", "WARNING").upper()
    if not isinstance(logging.getLevelName(level), int):
        level = "WARNING"
    logging.basicConfig(stream=sys.stderr, level=level, format="hermes mcp: %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve_stdio(settings, timeout=timeout, cwd=Path.cwd(), server=server, key=key))
