"""Harness of the ACP tests: `hermes acp` as a real subprocess, driven by the ACP SDK's own client side.

The scripted upstream runs on the test's loop over HTTP; hermes is started with
`sys.executable -m hermes acp`, a tmp HERMES_HOME and the upstream's URL, through
`acp.spawn_agent_process`. `EditorClient` is the editor: it records every session update,
answers permission requests as told, serves `fs/*` from its own buffers (which may differ
from the disk), and every message both ways is kept as a transcript.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from hermes.testing.upstream import ScriptedUpstream


@dataclass
class EditorClient:
    """The test's ACP client (see the module docstring)."""

    answer: str | None = "allow_once"
    """The option id a permission request is answered with; None: the request is cancelled."""
    buffers: dict[str, str] = field(default_factory=dict)
    """Open buffers by absolute path: fs/read_text_file serves these, fs/write_text_file fills them."""
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[ToolCallUpdate] = field(default_factory=list)
    offered: list[list[str]] = field(default_factory=list)
    """The option ids of each permission request, in order."""
    reads: list[str] = field(default_factory=list)
    first_update: asyncio.Event = field(default_factory=asyncio.Event)
    tool_started: asyncio.Event = field(default_factory=asyncio.Event)

    def kinds(self) -> list[str]:
        return [update.session_update for _, update in self.updates]

    def text(self) -> str:
        return "".join(
            update.content.text for _, update in self.updates if update.session_update == "agent_message_chunk"
        )

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append(tool_call)
        ids = [option.option_id for option in options]
        self.offered.append(ids)
        assert set(ids) in ({"allow_once", "allow_always", "reject_once"}, {"allow_once", "reject_once"})
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.first_update.set()
        if update.session_update == "tool_call":
            self.tool_started.set()

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, command: str, session_id: str, **kwargs: Any) -> CreateTerminalResponse:
        raise NotImplementedError("this client does not offer terminals")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        raise NotImplementedError

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        raise NotImplementedError

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        raise NotImplementedError

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        raise NotImplementedError

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


@dataclass
class TerminalEditorClient(EditorClient):
    """An editor that offers terminals (`terminal/*`): it records each command and answers
    every one with exit code 0 and the output `ran: COMMAND`, without running anything."""

    commands: list[list[str]] = field(default_factory=list)

    async def create_terminal(self, command: str, session_id: str, **kwargs: Any) -> CreateTerminalResponse:
        self.commands.append([command, *(kwargs.get("args") or [])])
        return CreateTerminalResponse(terminal_id=f"t{len(self.commands)}")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        shown = self.commands[int(terminal_id[1:]) - 1][-1]
        return TerminalOutputResponse(
            output=f"ran: {shown}\n", truncated=False, exit_status=TerminalExitStatus(exit_code=0)
        )

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        return None

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        return WaitForTerminalExitResponse(exit_code=0)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        return None


def capabilities(*, fs: bool = False, terminal: bool = False) -> ClientCapabilities:
    return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal)


@dataclass
class Transcript:
    """Every JSON-RPC message of a connection, in order, as (direction, message)."""

    lines: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def observe(self, event: StreamEvent) -> None:
        # The observer sits on the client's side: outgoing is client → agent.
        self.lines.append(("client->agent" if event.direction.value == "outgoing" else "agent->client", event.message))

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            for direction, message in self.lines:
                out.write(json.dumps({"dir": direction, **message}, ensure_ascii=False) + "\n")


def hermes_env(home: Path, upstream: ScriptedUpstream, sandbox: str = "off") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_STREAM_STALE_TIMEOUT="5",
        HERMES_SANDBOX=sandbox,
    )
    return env


@asynccontextmanager
async def hermes_acp(
    client: EditorClient,
    home: Path,
    upstream: ScriptedUpstream,
    transcript: Transcript | None = None,
    cwd: Path | None = None,
    sandbox: str = "off",
) -> AsyncIterator[ClientSideConnection]:
    """`hermes acp` spawned with the SDK; the connection to it, closed (and hermes gone) after."""
    observers = [transcript.observe] if transcript is not None else None
    async with spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "hermes",
        "acp",
        env=hermes_env(home, upstream, sandbox),
        cwd=cwd,
        observers=observers,
    ) as (conn, process):
        yield conn
    assert process.returncode is not None or await asyncio.wait_for(process.wait(), 10) is not None
