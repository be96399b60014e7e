"""The ACP agent: hermes' backend behind `initialize`, `session/*` (the SDK's `acp.Agent`).

    async with open_backend(settings) as backend:                 # hermes/backend.py
        agent = HermesAcpAgent(backend, await backend.open_agent())
        await acp.run_agent(agent, writer, reader)

Invariants:
- A session made here is an ordinary hermes session with source "acp": `session/new`
  reserves its id and the first prompt creates it in the store (titled by that prompt),
  so it is listed, searched, forked and resumed like any other. `session/load` takes any
  stored hermes session, whatever made it, and replays its transcript first; which one is
  `resolve_session`'s answer to its id (the same rule as `hermes chat --resume`).
- One turn per session at a time (`session/prompt` while one runs is refused); the turn is
  the engine's (`Agent.start` → `TurnHandle`), its events sent as updates in order
  (hermes/acp/updates.py) before the prompt's response.
- `session/cancel` stops the running turn through its handle (the engine ends running
  tools and the model request at once); the prompt then answers stopReason "cancelled".
- A failed turn answers the prompt with a JSON-RPC internal error carrying hermes' error
  code; what it streamed before stays sent.
- Tools read and write files through the client where it advertised `fs.*`, and run
  commands in its terminals where it advertised `terminal` (hermes/acp/client_host.py);
  approvals go to `session/request_permission` (hermes/acp/permission.py).
- `session/list` lists the whole store (stable protocol); `session/resume`, `session/fork`
  and `session/close` are written too but only reach hermes where the SDK's unstable
  protocol is on (it is not: the SDK answers them "method not found" then).
- Every session offers hermes' modes (default, accept-edits, plan) as ACP session modes
  in its new/load/resume/fork answer; `session/set_mode` sets the mode of its next turns.
- MCP servers named in `session/new`/`session/load` join the agent's tools (a server name
  already connected is not started twice); all close with the agent.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.helpers import update_available_commands
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AudioContentBlock,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
)

from hermes import __version__
from hermes.acp.client_host import client_host
from hermes.acp.commands import available_commands, expanded_prompt
from hermes.acp.mcp import AnyMcpServer, server_configs
from hermes.acp.modes import mode_from_id, mode_state
from hermes.acp.permission import approver
from hermes.acp.updates import history_updates, stop_reason, turn_updates
from hermes.agent.attach.images import ImageRefused, image_from_bytes, with_images
from hermes.agent.attach.mentions import expand_mentions_async
from hermes.agent.modes import DEFAULT_MODE, Mode
from hermes.agent.safety.confinement import Confinement
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import TurnRequest, UserContent
from hermes.backend import Backend, ChatAgent, resolve_session
from hermes.errors import SessionNotFound
from hermes.ids import new_session_id

if TYPE_CHECKING:
    from hermes.agent.mcp import McpManager
    from hermes.extensions.skills import SkillCatalog

log = logging.getLogger(__name__)

SOURCE = "acp"
LIST_PAGE = 50

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)


@dataclass(slots=True)
class AcpSession:
    id: str
    cwd: Path
    handle: TurnHandle | None = None
    mode: Mode = DEFAULT_MODE
    """What its turns run in (session/set_mode; hermes/acp/modes.py)."""


class HermesAcpAgent:
    """See the module docstring."""

    def __init__(self, backend: Backend, agent: ChatAgent) -> None:
        self.backend = backend
        self.agent = agent
        self.store = backend.sessions
        self.sessions: dict[str, AcpSession] = {}
        self._conn: Client | None = None
        self._capabilities: ClientCapabilities | None = None
        self._mcp: list[McpManager] = []
        self._mcp_names: set[str] = set()
        self._announcements: set[asyncio.Task[None]] = set()
        """available_commands_update sends in flight (kept so none is collected early)."""

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        assert self._conn is not None, "the connection calls on_connect first"
        return self._conn

    async def aclose(self) -> None:
        for session in self.sessions.values():
            if session.handle is not None:
                await session.handle.aclose()
        for manager in self._mcp:
            await manager.aclose()

    # ---- initialize --------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._capabilities = client_capabilities
        if client_info is not None:
            log.info("client %s %s", client_info.name, client_info.version)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="hermes", title="hermes", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        return None  # no auth methods are offered: the endpoint's key is hermes' own setting

    # ---- sessions ----------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[AnyMcpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session = AcpSession(new_session_id(), _directory(cwd))
        await self._connect_mcp(mcp_servers, session.cwd)
        self.sessions[session.id] = session
        self._announce_commands(session.id, session.cwd)
        return NewSessionResponse(session_id=session.id, modes=mode_state(session.mode))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[AnyMcpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        session_id = await self._stored(session_id)
        session = AcpSession(session_id, _directory(cwd))
        await self._connect_mcp(mcp_servers, session.cwd)
        for update in history_updates(await self.store.history(session_id), session.cwd):
            await self.conn.session_update(session_id=session_id, update=update)
        self.sessions[session_id] = session
        self._announce_commands(session_id, session.cwd)
        return LoadSessionResponse(modes=mode_state(session.mode))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[AnyMcpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """session/load without the replay."""
        session_id = await self._stored(session_id)
        session = AcpSession(session_id, _directory(cwd))
        await self._connect_mcp(mcp_servers, session.cwd)
        self.sessions[session_id] = session
        self._announce_commands(session_id, session.cwd)
        return ResumeSessionResponse(modes=mode_state(session.mode))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[AnyMcpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """A copy of a stored session (hermes' fork), open for prompts."""
        fork = await self.store.fork_session(await self._stored(session_id), source=SOURCE)
        session = AcpSession(fork.id, _directory(cwd))
        await self._connect_mcp(mcp_servers, session.cwd)
        self.sessions[fork.id] = session
        self._announce_commands(fork.id, session.cwd)
        return ForkSessionResponse(session_id=fork.id, modes=mode_state(session.mode))

    def _announce_commands(self, session_id: str, cwd: Path) -> None:
        """Send the session's custom commands and skills (available_commands_update) once the
        response that opens it has gone out; nothing when there are none."""
        commands = available_commands(self.backend.settings.home, cwd, self.agent.skills)
        if not commands:
            return

        async def send() -> None:
            await asyncio.sleep(0)  # after the response that names the session
            await self.conn.session_update(session_id=session_id, update=update_available_commands(commands))

        task = asyncio.get_running_loop().create_task(send())
        self._announcements.add(task)
        task.add_done_callback(self._announcements.discard)

    async def _stored(self, session_id: str) -> str:
        """The stored session `session_id` names (as `--resume` finds it), else resource_not_found."""
        try:
            found = await resolve_session(self.store, resume=session_id)
        except SessionNotFound:
            raise RequestError.resource_not_found(f"hermes session {session_id}") from None
        assert found is not None
        return found

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The stored hermes sessions of folder `cwd` (every folder's when None), newest
        first, in pages of LIST_PAGE; each with its recorded folder (the asked-for one, or
        this process's, for a session from before folders were recorded)."""
        offset = int(cursor) if cursor and cursor.isdigit() else 0
        folder = os.path.realpath(cwd) if cwd else None
        records = await self.store.list_sessions(limit=LIST_PAGE + 1, offset=offset, cwd=folder)
        where = cwd or str(Path.cwd())
        infos = [
            SessionInfo(
                session_id=record.id,
                cwd=record.cwd or where,
                title=record.title,
                updated_at=datetime.fromtimestamp(record.updated_at, UTC).isoformat(),
            )
            for record in records[:LIST_PAGE]
        ]
        more = str(offset + LIST_PAGE) if len(records) > LIST_PAGE else None
        return ListSessionsResponse(sessions=infos, next_cursor=more)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        session = self.sessions.pop(session_id, None)
        if session is not None and session.handle is not None:
            await session.handle.aclose()
        return None

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse | None:
        """The session's next turns run in `mode_id` (a running turn keeps the mode it started with)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "message": "unknown session"})
        session.mode = mode_from_id(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        raise RequestError.method_not_found("session/set_config_option")

    async def _connect_mcp(self, servers: list[AnyMcpServer] | None, cwd: Path) -> None:
        configs = [config for config in server_configs(servers, cwd) if config.name not in self._mcp_names]
        if not configs:
            return
        from hermes.agent.mcp import McpManager
        from hermes.agent.safety.launch import ToolLauncher

        settings = self.backend.settings
        manager = McpManager(
            configs, log_dir=settings.home / "logs", cwd=cwd, launcher=ToolLauncher.from_settings(settings)
        )
        self._mcp.append(manager)
        self._mcp_names.update(config.name for config in configs)
        for status in await manager.start(self.agent.tools):
            if status.failed:
                log.warning("%s", status.line())

    # ---- turns -------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "message": "unknown session"})
        if session.handle is not None:
            raise RequestError.invalid_request({"message": "a prompt of this session is still running"})
        settings = self.backend.settings
        content = await expand_prompt(
            with_command_expanded(prompt_content(prompt), settings.home, session.cwd, self.agent.skills),
            session.cwd,
            Confinement.from_settings(settings),
        )
        for note in content.notes:  # a mention that attached nothing, said before the answer
            await self.conn.session_update(session_id=session_id, update=update_agent_message_text(f"⚠ {note}\n\n"))
        request = TurnRequest(
            input=content.input,
            session_id=session_id,
            source=SOURCE,
            approve=approver(self.conn, session_id),
            yolo=settings.yolo,
            cwd=str(session.cwd),
            mode=session.mode,
            host=client_host(self.conn, session_id, self._capabilities, terminals=settings.sandbox != "on"),
        )
        handle = self.agent.start(request)
        session.handle = handle
        try:
            async with handle:
                async for event in handle.events():
                    for update in turn_updates(event, session.cwd):
                        await self.conn.session_update(session_id=session_id, update=update)
        except TurnCrashed as crash:
            raise RequestError.internal_error({"message": str(crash.cause)}) from None
        finally:
            session.handle = None
        result = handle.result
        if result is None:
            raise RequestError.internal_error({"message": "the turn ended without a result"})
        if result.status == "failed":
            raise RequestError.internal_error({"message": result.error, "code": result.error_code})
        return PromptResponse(stop_reason=stop_reason(result))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.handle is not None:
            session.handle.stop()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def _directory(cwd: str) -> Path:
    path = Path(cwd).expanduser()
    if not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"cwd": cwd, "message": "cwd must be an existing absolute directory"})
    return path


def prompt_text(blocks: list[PromptBlock]) -> str:
    """The user's prompt as one text: its text, with linked and embedded resources named
    (an embedded text resource is included in a <context> block)."""
    parts: list[str] = []
    for block in blocks:
        match block:
            case TextContentBlock():
                parts.append(block.text)
            case ResourceContentBlock():
                parts.append(f"@{block.uri}")
            case EmbeddedResourceContentBlock():
                resource = block.resource
                if isinstance(resource, TextResourceContents):
                    parts.append(f'<context uri="{resource.uri}">\n{resource.text}\n</context>')
                else:
                    parts.append(f"@{resource.uri}")
            case AudioContentBlock():
                parts.append(f"[{block.type} left out: hermes takes text and images over ACP]")
            case ImageContentBlock():
                pass  # an image part of its own (prompt_content)
    return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class ExpandedPrompt:
    input: UserContent
    notes: tuple[str, ...]


async def expand_prompt(content: UserContent, cwd: Path, confinement: Confinement) -> ExpandedPrompt:
    """The prompt's `@` mentions (and resource links, written as `@file:///…`) expanded in its text."""
    text = content if isinstance(content, str) else str(content[0]["text"])
    expansion = await expand_mentions_async(text, cwd, confinement)
    if isinstance(content, str):
        return ExpandedPrompt(expansion.text, expansion.notes)
    return ExpandedPrompt([{"type": "text", "text": expansion.text}, *content[1:]], expansion.notes)


def with_command_expanded(content: UserContent, home: Path, cwd: Path, skills: SkillCatalog | None) -> UserContent:
    """`content` with its text replaced by the custom command or skill it invokes, if any."""
    text = content if isinstance(content, str) else str(content[0]["text"])
    expanded = expanded_prompt(text, home, cwd, skills)
    return expanded if isinstance(content, str) else [{"type": "text", "text": expanded}, *content[1:]]


def prompt_content(blocks: list[PromptBlock]) -> UserContent:
    """The turn's input: `prompt_text`, followed by the prompt's images as `image_url` parts
    (each checked by its bytes: PNG, JPEG, GIF or WebP, within the size limit)."""
    images = []
    for number, block in enumerate(blocks, start=1):
        if not isinstance(block, ImageContentBlock):
            continue
        name = block.uri or f"image {number}"
        try:
            data = base64.b64decode(block.data, validate=True)
            images.append(image_from_bytes(name, data))
        except (ValueError, ImageRefused) as exc:
            message = str(exc) if isinstance(exc, ImageRefused) else f"{name}: the image data is not base64"
            raise RequestError.invalid_params({"message": message}) from None
    return with_images(prompt_text(blocks), images)
