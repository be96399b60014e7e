"""`hermes mcp list|add|remove`: the MCP servers of config.toml; `hermes mcp serve`: hermes as one.

    hermes mcp list [--json]                       start each server, show its status and tools
    hermes mcp add NAME -- COMMAND [ARGS…]         a stdio server
    hermes mcp add NAME --url URL [--header K=V]   a streamable-HTTP server
    hermes mcp remove NAME
    hermes mcp serve [-m MODEL] [--yolo] [--turn-timeout S] [--server URL]   speak MCP on stdio

`list --json` prints `{"object": "list", "data": [{"name", "status", "tools", …}]}` on
stdout whatever state the servers are in: `status` is `connected`, `failed` (with a
`message`) or `disabled`. add/remove edit config.toml in place (other settings and
comments are kept, the file stays 0600).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hermes.cli._common import load_settings, print_json
from hermes.cli._server_key import KEY_FILE_OPTION, KEY_OPTION
from hermes.errors import UsageError

app = typer.Typer(
    help="List, add and remove MCP servers (tools from other programs); serve hermes as one.", no_args_is_help=True
)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help='Print {"object": "list", "data": [...]}.')) -> None:
    """Start every configured server and show its status and tools."""
    import asyncio

    from hermes.agent.mcp import McpManager

    settings = load_settings()
    manager = McpManager.from_settings(settings, cwd=Path.cwd())

    async def collect() -> list[dict[str, object]]:
        if manager is None:
            return []
        try:
            statuses = await manager.start()
        finally:
            await manager.aclose()
        return [
            {**status.to_json(), "tools": [_tool_json(t.name, t.tool, t.description) for t in status.tools]}
            for status in statuses
        ]

    data = asyncio.run(collect())
    if as_json:
        print_json({"object": "list", "data": data})
        return
    if not data:
        typer.echo(f"no MCP servers configured (add one with `hermes mcp add NAME -- COMMAND`; {settings.config_path})")
        return
    for server in data:
        status = str(server["status"])
        detail = f": {server['message']}" if server.get("message") else ""
        typer.echo(f"{server['name']}  {status}{detail}  ({server['transport']}: {server['target']})")
        for tool in server["tools"]:  # type: ignore[attr-defined]
            description = f"  {tool['description']}" if tool["description"] else ""
            typer.echo(f"  {tool['name']}{description}"[:160])


def _tool_json(name: str, tool: str, description: str) -> dict[str, str]:
    return {"name": name, "tool": tool, "description": description}


@app.command("add")
def add(
    name: str = typer.Argument(..., help="Server name; its tools are offered as mcp__NAME__TOOL."),
    command: Annotated[
        list[str] | None, typer.Argument(help="After `--`: the command that starts a stdio server, and its arguments.")
    ] = None,
    url: str | None = typer.Option(None, "--url", help="URL of a streamable-HTTP server, e.g. http://127.0.0.1:8000/mcp."),
    header: Annotated[
        list[str] | None, typer.Option("--header", help="HTTP header K=V for --url servers; repeatable.")
    ] = None,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="Environment variable K=V for command servers; repeatable.")
    ] = None,
    cwd: str | None = typer.Option(None, "--cwd", help="Working directory of a command server."),
    approval: str = typer.Option("auto", "--approval", help='"auto" runs calls without asking; "ask" asks first.'),
    startup_timeout: float | None = typer.Option(None, "--startup-timeout", help="Seconds to start (default 10)."),
    tool_timeout: float | None = typer.Option(None, "--tool-timeout", help="Seconds per call (default 60)."),
) -> None:
    """Add a server to config.toml: `NAME -- COMMAND ARGS…` or `NAME --url URL`."""
    from hermes.config import read_config_text, write_config_text
    from hermes.mcp_config import add_server_text, parse_server

    if bool(command) == bool(url):
        raise UsageError("give either a command after `--` (stdio) or --url URL (streamable HTTP)")
    if header and not url:
        raise UsageError("--header is for --url servers")
    if (env or cwd) and url:
        raise UsageError("--env and --cwd are for command servers")
    entry: dict[str, object] = {"approval": approval}
    if command:
        entry.update(command=command[0], args=list(command[1:]))
        if env:
            entry["env"] = _pairs("--env", env)
        if cwd:
            entry["cwd"] = cwd
    else:
        entry["url"] = url
        if header:
            entry["headers"] = _pairs("--header", header)
    if startup_timeout is not None:
        entry["startup_timeout"] = startup_timeout
    if tool_timeout is not None:
        entry["tool_timeout"] = tool_timeout
    settings = load_settings()
    server = parse_server(name, entry, "hermes mcp add")
    write_config_text(settings, add_server_text(read_config_text(settings), server))
    typer.echo(f"added MCP server {name!r} ({server.transport}: {server.target}) to {settings.config_path}")


@app.command("remove")
def remove(name: str = typer.Argument(..., help="Server name.")) -> None:
    """Remove a server from config.toml."""
    from hermes.config import read_config_text, write_config_text
    from hermes.mcp_config import remove_server_text

    settings = load_settings()
    write_config_text(settings, remove_server_text(read_config_text(settings), name))
    typer.echo(f"removed MCP server {name!r} from {settings.config_path}")


def _pairs(flag: str, items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} takes KEY=VALUE, not {item!r}")
        out[key.strip()] = value
    return out


@app.command("serve")
def serve(
    model: str | None = typer.Option(None, "-m", "--model", help="Model name for this server's turns."),
    yolo: bool = typer.Option(False, "--yolo", help="Approve every command that is not hard-blocked."),
    turn_timeout: float = typer.Option(
        1800.0, "--turn-timeout", metavar="SECONDS", help="Stop a chat turn that runs longer than this."
    ),
    server: str | None = typer.Option(
        None, "--server", metavar="URL", help="Run the turns on this hermes serve (its sessions, its policy)."
    ),
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Serve hermes over MCP on stdio: a `chat` tool and the sessions as hermes://sessions/{id}."""
    from hermes.cli._server_key import server_key
    from hermes.mcp_server.server import run

    if not turn_timeout > 0:
        raise UsageError("--turn-timeout must be a positive number of seconds")
    settings = load_settings(model=model, yolo=yolo or None)
    server = server or settings.server_url
    if server and yolo:
        raise UsageError("--yolo does not reach a server: its own approval policy applies (hermes serve --yolo)")
    key = server_key(settings.server_key, key=key, key_file=key_file) if server else None
    run(settings, timeout=turn_timeout, server=server, key=key)
