"""The editor's files and terminals as the tools' host (hermes/agent/tool_host.py), over ACP.

    host = client_host(conn, session_id, capabilities)   # None: the client offers neither

Invariants:
- `fs/read_text_file` and `fs/write_text_file` are used only when the client advertised
  `fs.readTextFile` / `fs.writeTextFile`; `terminal/*` only when it advertised `terminal`.
  A part the client does not offer stays None, so hermes' own tool (with the sandbox) runs.
- A delegated command is `bash -c COMMAND` in the tool's working directory, run the way the
  editor runs its terminals: hermes' classification (that of `sandbox = off`, since no
  sandbox applies there) and approval come first; its sandbox and environment allowlist
  do not apply. Its terminal is always released, also when the call
  times out (killed first) or the turn is stopped (killed first).
- `sandbox = "on"` keeps commands here, in the sandbox, whatever the client offers (the
  caller passes `terminals=False`): asked-for confinement is never given away.
- A client error is raised as a ToolError (the model reads it as the tool's error).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from acp import RequestError
from acp.interfaces import Client
from acp.schema import ClientCapabilities, TerminalOutputResponse

from hermes.agent.tool_host import ToolHost
from hermes.errors import ToolError

OUTPUT_BYTE_LIMIT = 50_000
"""Output the client keeps of a delegated command (it cuts from the start)."""
KILL_WAIT = 2.0


@dataclass(frozen=True, slots=True)
class ClientFiles:
    """File reads and writes through the client (`fs/*`): its buffers, saved or not."""

    conn: Client
    session_id: str
    can_read: bool
    can_write: bool

    async def read_text(self, path: Path) -> str:
        if not self.can_read:
            return await asyncio.to_thread(path.read_text, encoding="utf-8", errors="surrogateescape")
        try:
            response = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except RequestError as exc:
            raise ToolError(f"the editor could not read {path}: {exc}") from None
        return response.content

    async def write_text(self, path: Path, text: str) -> None:
        if not self.can_write:  # `path` is the real path the file tool checked: written as is
            from hermes.beneath import PathRefused, write_resolved

            try:
                await asyncio.to_thread(write_resolved, path, text.encode("utf-8", errors="surrogateescape"))
            except PathRefused as exc:
                raise ToolError(f"the write to {path} was refused: {exc.reason}; nothing was written") from None
            return
        try:
            await self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text)
        except RequestError as exc:
            raise ToolError(f"the editor could not write {path}: {exc}") from None


@dataclass(frozen=True, slots=True)
class ClientTerminal:
    """The terminal tool's commands in the client's terminals (`terminal/*`)."""

    conn: Client
    session_id: str

    async def run(self, command: str, cwd: Path, timeout: float) -> str:
        try:
            created = await self.conn.create_terminal(
                session_id=self.session_id,
                command="bash",
                args=["-c", command],
                cwd=str(cwd),
                output_byte_limit=OUTPUT_BYTE_LIMIT,
            )
        except RequestError as exc:
            raise ToolError(f"the editor could not start the command: {exc}") from None
        terminal_id = created.terminal_id
        timed_out = False
        try:
            try:
                await asyncio.wait_for(
                    self.conn.wait_for_terminal_exit(session_id=self.session_id, terminal_id=terminal_id), timeout
                )
            except TimeoutError:
                timed_out = True
                await self.conn.kill_terminal(session_id=self.session_id, terminal_id=terminal_id)
            output = await self.conn.terminal_output(session_id=self.session_id, terminal_id=terminal_id)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.shield(self.conn.kill_terminal(session_id=self.session_id, terminal_id=terminal_id)),
                    KILL_WAIT,
                )
            raise
        except RequestError as exc:
            raise ToolError(f"the editor's terminal failed: {exc}") from None
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.shield(self.conn.release_terminal(session_id=self.session_id, terminal_id=terminal_id)),
                    KILL_WAIT,
                )
        return _format(output, timeout if timed_out else None)


def _format(output: TerminalOutputResponse, timed_out: float | None) -> str:
    """The same shape as the local terminal tool's result (exit code, then the output)."""
    lines: list[str] = []
    if timed_out is not None:
        lines.append(f"Command timed out after {timed_out:g} s; it was killed.")
    status = output.exit_status
    if status is not None and status.signal:
        lines.append(f"exit code: -1 (killed by {status.signal})")
    else:
        lines.append(f"exit code: {status.exit_code if status is not None else None}")
    if output.truncated:
        lines.append(f"[output cut: only its last {OUTPUT_BYTE_LIMIT:,} bytes were kept]")
    text = output.output.rstrip("\n")
    lines += ["--- output ---", text] if text else ["(no output)"]
    return "\n".join(lines)


def client_host(
    conn: Client, session_id: str, capabilities: ClientCapabilities | None, *, terminals: bool = True
) -> ToolHost | None:
    """The host the client's capabilities allow (`terminals=False`: commands stay here);
    None when it offers neither files nor terminals."""
    if capabilities is None:
        return None
    fs = capabilities.fs
    can_read = bool(fs is not None and fs.read_text_file)
    can_write = bool(fs is not None and fs.write_text_file)
    files = ClientFiles(conn, session_id, can_read, can_write) if can_read or can_write else None
    commands = ClientTerminal(conn, session_id) if terminals and capabilities.terminal else None
    if files is None and commands is None:
        return None
    return ToolHost(files=files, commands=commands)
