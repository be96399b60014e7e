"""One MCP server session on the official SDK (`mcp.Client`), stdio or streamable HTTP.

The SDK's client is an async context manager whose task group belongs to the task that
entered it, so each connection lives in its own runner task: the runner enters the client,
lists the tools, reports ready, then waits until `aclose()` asks it to leave. Calls are
made from the turn's tasks on the connected client. Leaving the context closes the session
and, for stdio, ends the server process (stdin closed, then SIGTERM/SIGKILL to its group).

Failures never raise out of `start()`: they become `status = "failed"` with a one-line
message (plus the last line the server wrote on stderr, when there is one).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any, TextIO

import httpx2
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from hermes.agent.mcp.spawn import stdio_command
from hermes.agent.mcp.status import StatusName
from hermes.agent.safety.launch import ToolLauncher
from hermes.mcp_config import McpServerConfig

CLOSE_GRACE = 8.0
"""Seconds the runner gets to close its session (the SDK's stdio shutdown waits up to ~6 s)."""
HTTP_CONNECT_TIMEOUT = 30.0
HTTP_READ_TIMEOUT = 300.0
MAX_TOOL_PAGES = 100


class McpCallError(Exception):
    """A call that produced no result (timeout, lost connection, protocol error)."""


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        log_dir: Path | None = None,
        cwd: Path | None = None,
        launcher: ToolLauncher | None = None,
    ) -> None:
        self.config = config
        self.launcher = launcher
        """How a stdio server starts (sandbox, allowlisted environment); see spawn.py."""
        self.log_dir = log_dir
        self.cwd = cwd
        self.status: StatusName = "starting"
        self.message = ""
        self.tools: list[mcp_types.Tool] = []
        self._client: Client | None = None
        self._closing = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._errlog: TextIO | None = None
        self._errlog_start = 0

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and list the tools within `startup_timeout`; never raises (but CancelledError)."""
        ready = asyncio.Event()
        self._runner = asyncio.create_task(self._run(ready), name=f"mcp:{self.config.name}")
        try:
            await asyncio.wait_for(ready.wait(), self.config.startup_timeout)
        except TimeoutError:
            self._fail(f"did not start within {self.config.startup_timeout:g} s")
            await self._stop_runner()
        except asyncio.CancelledError:
            await self._stop_runner()
            raise

    async def aclose(self) -> None:
        await self._stop_runner()
        if self.status in ("connected", "starting"):
            self.status = "closed"
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def _stop_runner(self) -> None:
        runner = self._runner
        if runner is None or runner.done():
            return
        self._closing.set()
        done, _ = await asyncio.wait({runner}, timeout=CLOSE_GRACE)
        if not done:
            runner.cancel()
            await asyncio.wait({runner}, timeout=CLOSE_GRACE)

    async def _run(self, ready: asyncio.Event) -> None:
        try:
            async with self._open() as client:
                self.tools = await _list_tools(client)
                self._client = client
                self.status = "connected"
                ready.set()
                await self._closing.wait()
        except Exception as exc:  # noqa: BLE001 - any failure becomes the server's status line
            if not self._closing.is_set() or self.status != "connected":
                self._fail(describe(exc))
        except BaseExceptionGroup as group:  # anyio task groups wrap failures
            self._fail(describe(group))
        finally:
            self._client = None
            ready.set()

    def _open(self) -> Client:
        config = self.config
        if config.transport == "stdio":
            spawn = stdio_command(config, self.cwd, self.launcher)
            params = StdioServerParameters(
                command=spawn.command,
                args=list(spawn.args),
                env=spawn.env or None,
                cwd=spawn.cwd,
            )
            return Client(stdio_client(params, errlog=self._open_errlog()))
        assert config.url is not None
        http = httpx2.AsyncClient(
            headers=config.headers or None,
            timeout=httpx2.Timeout(HTTP_CONNECT_TIMEOUT, read=HTTP_READ_TIMEOUT),
        )
        return Client(_http_transport(config.url, http))

    def _open_errlog(self) -> TextIO:
        """Where the server's stderr goes: $HERMES_HOME/logs/mcp-NAME.log, else /dev/null."""
        if self.log_dir is not None:
            try:
                self.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                path = self.log_dir / f"mcp-{self.config.name}.log"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                self._errlog = os.fdopen(fd, "a", encoding="utf-8")
                self._errlog_start = self._errlog.tell()
                return self._errlog
            except OSError:
                pass
        self._errlog = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed in aclose
        return self._errlog

    def _stderr_tail(self) -> str:
        """The last non-empty line the server wrote on stderr in this session."""
        if self._errlog is None or self.log_dir is None:
            return ""
        path = self.log_dir / f"mcp-{self.config.name}.log"
        try:
            with path.open("rb") as fh:
                fh.seek(self._errlog_start)
                data = fh.read()[-4000:]
        except OSError:
            return ""
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    def _fail(self, message: str, *, stderr: bool = True) -> None:
        tail = self._stderr_tail() if stderr and self.status == "starting" else ""
        if tail and tail not in message:
            message = f"{message} (stderr: {tail})"
        self.status = "failed"
        self.message = message

    # ---- calls -------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool` under `tool_timeout`; McpCallError when no result came back."""
        client = self._client
        if client is None or self.status != "connected":
            reason = f": {self.message}" if self.message else ""
            raise McpCallError(f"MCP server {self.config.name!r} is not connected{reason}")
        timeout = self.config.tool_timeout
        try:
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            raise McpCallError(f"{tool} on MCP server {self.config.name!r} timed out after {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._fail("the connection closed (the server stopped)")
                raise McpCallError(f"MCP server {self.config.name!r} stopped: {self.message}") from None
            raise McpCallError(f"MCP server {self.config.name!r} refused the call: {exc.message}") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken transport is a failed call, not a crash
            self._fail(f"lost the connection ({describe(exc)})")
            raise McpCallError(f"MCP server {self.config.name!r} is unreachable: {self.message}") from None


@contextlib.asynccontextmanager
async def _http_transport(url: str, http: httpx2.AsyncClient) -> Any:
    """streamable_http_client over our own httpx2 client (headers), closing that client too."""
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def describe(exc: BaseException) -> str:
    """One line for a failure, from the most telling exception inside any exception group."""
    leaves = [leaf for leaf in _leaves(exc) if not isinstance(leaf, asyncio.CancelledError)] or [exc]
    leaf = leaves[0]
    if isinstance(leaf, FileNotFoundError) and leaf.filename:
        return f"cannot start {leaf.filename!r}: command not found"
    if isinstance(leaf, PermissionError) and leaf.filename:
        return f"cannot start {leaf.filename!r}: permission denied"
    if isinstance(leaf, MCPError):
        if leaf.code == mcp_types.CONNECTION_CLOSED:
            return "the server closed the connection during start-up"
        return f"protocol error: {leaf.message}"
    if isinstance(leaf, httpx2.HTTPStatusError):
        return f"HTTP {leaf.response.status_code} from {leaf.request.url}"
    if isinstance(leaf, httpx2.ConnectError):
        return f"cannot connect ({leaf})"
    text = " ".join(str(leaf).split())
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__
