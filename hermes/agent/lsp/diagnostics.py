"""Diagnostics after edits: `LanguageServers.after_edit(path, before, after, cwd)`.

After `write_file` or `patch` changed a file, the file's language server (started on the
first edit of that language in that working folder, and kept) is shown the text before
and after the edit; the problems the edit introduced are returned as lines for the tool
result, errors first.

Invariants:
- one wait: an edit waits at most `timeout` seconds in all (a server still starting keeps
  starting for the next edit); nothing found in time is no lines, never an error;
- "introduced" is the multiset difference of (severity, source, code, message) between the
  diagnostics of the text before and after, so a problem that moved lines is not new;
  when the text before is unknown (a new file) every problem is new;
- only errors and warnings are reported (no style linter's warnings), at most `limit` of
  them, with the count of the rest;
- servers start the way MCP servers do (hermes/agent/mcp/spawn.py): the tool environment,
  under the supervisor and, when the sandbox is on, inside it; `aclose` stops them all;
- a server that failed to start or died is not started again for that folder (one line
  says so, once).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent.lsp.languages import language_id, language_of, server_command
from hermes.agent.lsp.rpc import LspConnection, LspError
from hermes.agent.mcp.spawn import stdio_command
from hermes.agent.safety.launch import ToolLauncher
from hermes.mcp_config import McpServerConfig

START_TIMEOUT = 60.0
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
STYLE_SOURCES = frozenset({"pycodestyle", "pydocstyle", "mccabe", "autopep8", "yapf", "black", "ruff-format"})
"""Linters of layout and style: their warnings are not problems an edit must fix."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    line: int
    """1-based."""
    column: int
    """1-based."""
    severity: int
    message: str
    source: str | None = None
    code: str | None = None

    @property
    def identity(self) -> tuple[int, str | None, str | None, str]:
        return self.severity, self.source, self.code, self.message

    def describe(self, shown_path: str) -> str:
        where = f"{shown_path}:{self.line}:{self.column}"
        origin = f" [{self.source}{' ' + self.code if self.code else ''}]" if self.source else ""
        return f"  {where} {SEVERITY.get(self.severity, 'problem')}: {' '.join(self.message.split())}{origin}"


def parse_diagnostic(raw: Any) -> Diagnostic | None:
    try:
        start = raw["range"]["start"]
        code = raw.get("code")
        return Diagnostic(
            line=int(start["line"]) + 1,
            column=int(start["character"]) + 1,
            severity=int(raw.get("severity") or 1),
            message=str(raw["message"]),
            source=str(raw["source"]) if raw.get("source") else None,
            code=str(code) if code not in (None, "") else None,
        )
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class _Document:
    version: int
    diagnostics: list[Diagnostic] | None = None
    """The latest published for this version (None: none yet)."""
    published: asyncio.Event = field(default_factory=asyncio.Event)


class _Server:
    """One language server for one working folder."""

    def __init__(self, name: str, connection: LspConnection) -> None:
        self.name = name
        self.connection = connection
        self.documents: dict[str, _Document] = {}
        connection.on_notification = self._notified

    def _notified(self, method: str, params: Any) -> None:
        if method != "textDocument/publishDiagnostics" or not isinstance(params, dict):
            return
        document = self.documents.get(str(params.get("uri")))
        if document is None:
            return
        version = params.get("version")
        if isinstance(version, int) and version != document.version:
            return  # about an older text
        found = [d for d in map(parse_diagnostic, params.get("diagnostics") or []) if d is not None]
        document.diagnostics = found
        document.published.set()

    async def diagnostics_of(self, path: Path, text: str, deadline: float) -> list[Diagnostic] | None:
        """Show the server `text` as the file's content; its diagnostics (None: not in time)."""
        uri = path.as_uri()
        document = self.documents.get(uri)
        if document is None:
            document = self.documents[uri] = _Document(version=1)
            item = {"uri": uri, "languageId": language_id(path), "version": 1, "text": text}
            self.connection.notify("textDocument/didOpen", {"textDocument": item})
        else:
            document.version += 1
            document.diagnostics, document.published = None, asyncio.Event()
            self.connection.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": document.version}, "contentChanges": [{"text": text}]},
            )
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return None
        try:
            async with asyncio.timeout(remaining):
                await document.published.wait()
        except TimeoutError:
            return None
        return document.diagnostics

    def knows(self, path: Path) -> list[Diagnostic] | None:
        document = self.documents.get(path.as_uri())
        return document.diagnostics if document is not None else None


class LanguageServers:
    """The language servers of one agent, by (language, working folder)."""

    def __init__(
        self,
        *,
        launcher: ToolLauncher | None = None,
        configured: Mapping[str, tuple[str, ...]] | None = None,
        timeout: float = 5.0,
        limit: int = 10,
    ) -> None:
        self.launcher = launcher or ToolLauncher()
        self.configured = dict(configured or {})
        self.timeout = timeout
        self.limit = limit
        self._servers: dict[tuple[str, Path], asyncio.Task[_Server | None]] = {}
        self._failed: dict[tuple[str, Path], str] = {}

    def command_for(self, language: str) -> tuple[str, ...] | None:
        return server_command(language, self.configured, self.launcher.env().get("PATH"))

    async def after_edit(self, path: Path, before: str | None, after: str, cwd: Path) -> str:
        """Lines naming the problems the edit introduced ("" when none, or none in time)."""
        language = language_of(path)
        if language is None:
            return ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        key = (language, cwd)
        server = await self._server(key, deadline)
        if server is None:
            failed = self._failed.pop(key, None)  # said once
            return f"(no diagnostics: {failed})" if failed else ""
        previous = server.knows(path)
        if previous is None and before is not None:
            previous = await server.diagnostics_of(path, before, deadline)
        current = await server.diagnostics_of(path, after, deadline)
        if current is None:
            return ""
        return self._report(server.name, path, cwd, current, previous or [], known_before=previous is not None)

    def _report(
        self,
        name: str,
        path: Path,
        cwd: Path,
        current: list[Diagnostic],
        previous: list[Diagnostic],
        *,
        known_before: bool,
    ) -> str:
        left = Counter(d.identity for d in previous)
        introduced: list[Diagnostic] = []
        for diagnostic in current:
            if left[diagnostic.identity] > 0:
                left[diagnostic.identity] -= 1
            elif diagnostic.severity == 1 or (diagnostic.severity == 2 and diagnostic.source not in STYLE_SOURCES):
                introduced.append(diagnostic)
        if not introduced:
            return ""
        introduced.sort(key=lambda d: (d.severity, d.line, d.column))
        shown = _shown_path(path, cwd)
        noun = "problem" if len(introduced) == 1 else "problems"
        since = "" if known_before else " (the file's earlier state is unknown: some may be older)"
        lines = [f"Diagnostics from {name} after this edit: {len(introduced)} new {noun}{since}"]
        lines += [d.describe(shown) for d in introduced[: self.limit]]
        if len(introduced) > self.limit:
            lines.append(f"  … and {len(introduced) - self.limit} more")
        return "\n".join(lines)

    async def _server(self, key: tuple[str, Path], deadline: float) -> _Server | None:
        task = self._servers.get(key)
        if task is None:
            command = self.command_for(key[0])
            if command is None:
                return None
            task = self._servers[key] = asyncio.create_task(self._start(key, command))
        remaining = max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            async with asyncio.timeout(remaining):
                server = await asyncio.shield(task)
        except TimeoutError:
            return None  # still starting: the next edit may have it
        if server is not None and not server.connection.alive:
            self._failed[key] = f"{server.name} stopped"
            self._servers[key] = _done(None)
            return None
        return server

    async def _start(self, key: tuple[str, Path], command: tuple[str, ...]) -> _Server | None:
        language, root = key
        name = os.path.basename(command[0])
        try:
            config = McpServerConfig(name=f"lsp-{language}", command=command[0], args=tuple(command[1:]))
            spawn = stdio_command(config, root, self.launcher)
            connection = await LspConnection.start(
                spawn.command, spawn.args, env=spawn.env, cwd=spawn.cwd or root
            )
        except OSError as exc:
            self._failed[key] = f"{name} did not start ({exc.strerror or exc})"
            return None
        try:
            await connection.request("initialize", _initialize_params(root), timeout=START_TIMEOUT)
            connection.notify("initialized", {})
        except LspError as exc:
            self._failed[key] = f"{name} did not start ({exc})"
            await connection.close(timeout=1.0)
            return None
        return _Server(name, connection)

    async def aclose(self) -> None:
        tasks, self._servers = list(self._servers.values()), {}
        for task in tasks:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                server = await task
                if server is not None:
                    await server.connection.close()


def _done(value: _Server | None) -> asyncio.Task[_Server | None]:
    async def settled() -> _Server | None:
        return value

    return asyncio.get_running_loop().create_task(settled())


def _initialize_params(root: Path) -> dict[str, Any]:
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "hermes"},
        "rootUri": root.as_uri(),
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name or str(root)}],
        "capabilities": {
            "textDocument": {
                "synchronization": {"didSave": False, "dynamicRegistration": False},
                "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
            },
            "workspace": {"configuration": True, "workspaceFolders": True},
        },
    }


def _shown_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)
