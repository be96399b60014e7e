"""One backend for every front end: the agent, the sessions and their files, local or remote.

    async with open_backend(settings, server=url_or_None, key=key, model=flag) as backend:
        session_id = await resolve_session(backend.sessions, continue_last=c, resume=r)
        agent = await backend.open_agent(progress=on_progress, defer_mcp=True)
        handle = agent.start(TurnRequest(input="hi", session_id=session_id))

Local (no `server`): the configured storage (the SQLite files, or PostgreSQL), repaired of
the turns a crashed owner left open; its sessions; `LocalSessionFiles` under the home, with
the diff cap and the confinement's restore guard; and on `open_agent` the runtime
(hermes/runtime.py: the agent on that storage, MCP). Remote (`server`, with the bearer
`key` the CLI resolved): the server's sessions REST API (`RemoteSessions`, which is also
its files) and a `RemoteAgent`; the server is asked once on opening, so an unreachable
server or a wrong key is the first error, before anything else is read or drawn.

The TUI, `chat -q`, the sessions commands and ACP open a backend only here and pick a
session only with `resolve_session`, so a flag behaves the same local and remote.

Invariants:
- `model` (the `-m` flag) picks the model of this backend's turns: locally it replaces the
  configured one, remotely it is sent with every turn (None: the server uses its own);
- the agent is built on the first `open_agent`, after the storage's repair, so a wrong
  `--resume` fails before a model is loaded; a second call returns the same agent;
- closing runs in reverse: MCP and the agent, then the storage or the HTTP client, also
  when opening failed halfway;
- a turn is a `TurnHandle` either way (a remote one is `RemoteTurn`, whose one difference
  is that leaving does not stop the server's run).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hermes.errors import SessionNotFound, UsageError

if TYPE_CHECKING:
    from hermes.agent.events import ContextCompacted
    from hermes.agent.factory import ProviderChoice
    from hermes.agent.instructions import ProjectInstructions
    from hermes.agent.mcp import McpManager
    from hermes.agent.mcp.status import McpServerStatus
    from hermes.agent.model_choices import ModelListing
    from hermes.agent.progress import ProgressCallback
    from hermes.agent.tools.base import ToolRegistry
    from hermes.agent.turn_handle import TurnHandle
    from hermes.agent.types import ChatMessage, TurnRequest
    from hermes.checkpoints.undo import TurnChange, UndoOutcome
    from hermes.config import Settings
    from hermes.extensions.skills import SkillCatalog
    from hermes.remote.client import RemoteClient
    from hermes.runtime import Runtime
    from hermes.store.api import Storage
    from hermes.store.records import CompactionRecord, MessageRecord, SearchHit, SessionRecord, UsageTotal

__all__ = [
    "Backend",
    "ChatAgent",
    "ChatSessions",
    "AmbiguousSessionId",
    "NoSessionToContinue",
    "SessionFiles",
    "find_session_id",
    "open_backend",
    "resolve_session",
]


# ---- what a front end drives ------------------------------------------------------------


class ChatAgent(Protocol):
    """Starts turns (`hermes.agent.engine.Agent`, `hermes.remote.agent.RemoteAgent`).

    A turn's events are the engine's own event types either way, ending with one
    `TurnCompleted`, through the one consumer side of `TurnHandle`.
    """

    tools: ToolRegistry
    instructions: ProjectInstructions | None
    skills: SkillCatalog | None
    """The skills its system prompt lists (None: a remote agent's are the server's own)."""

    model: str

    def context_window(self, model: str | None = None) -> int: ...

    def start(self, request: TurnRequest) -> TurnHandle: ...

    async def compact(self, session_id: str, *, model: str | None = None) -> ContextCompacted | None: ...

    async def list_models(self) -> list[ModelListing]: ...


class ChatSessions(Protocol):
    """The sessions a front end lists, opens, forks, renames and deletes
    (`AsyncSessionStore`, `RemoteSessions`)."""

    async def get_session(self, session_id: str) -> SessionRecord: ...

    async def find_session(self, session_id: str) -> SessionRecord | None: ...

    async def latest_session(self, *, source: str | None = None, cwd: str | None = None) -> SessionRecord | None: ...

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, cwd: str | None = None
    ) -> list[SessionRecord]: ...

    async def count_sessions(self, *, source: str | None = None, cwd: str | None = None) -> int: ...

    async def sessions_with_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]: ...

    async def search(self, query: str, *, limit: int = 20, source: str | None = None) -> list[SearchHit]: ...

    async def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]: ...

    async def history(self, session_id: str) -> list[ChatMessage]: ...

    async def compactions(self, session_id: str) -> list[CompactionRecord]: ...

    async def session_usage(self, session_ids: Sequence[str]) -> list[UsageTotal]: ...

    async def rename_session(self, session_id: str, title: str) -> SessionRecord: ...

    async def update_session(
        self, session_id: str, *, model: str | None = None, system_prompt: str | None = None
    ) -> SessionRecord: ...

    async def delete_session(self, session_id: str) -> None: ...

    async def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
    ) -> SessionRecord: ...


class SessionFiles(Protocol):
    """Undo, redo and diffs of a session's turns, where the files are
    (`hermes.checkpoints.files.LocalSessionFiles`, `RemoteSessions`).

    Both apply hermes/checkpoints/undo.py's rules: a path outside the worktree, behind a
    symlinked folder or protected raises `RestoreRefused` and changes nothing, `force` or
    not; a file changed outside hermes since the checkpoint raises `FilesChangedOutside`
    (nothing changed; `force=True` overwrites it); nothing to undo or redo, or a turn the
    session does not have, raises `NothingToUndo`; a diff is cut at the diff cap
    (`max_diff_bytes` here, the server's setting remotely) and says so.
    """

    async def undo(self, session_id: str, *, turns: int = 1, force: bool = False) -> UndoOutcome: ...

    async def redo(self, session_id: str, *, force: bool = False) -> UndoOutcome: ...

    async def turn_changes(self, session_id: str, turn: int | None = None) -> TurnChange: ...


# ---- which session ----------------------------------------------------------------------


class NoSessionToContinue(SessionNotFound):
    """`--continue` with no stored session (of this folder, when one is given), the same
    local and remote."""

    def __init__(self, cwd: str | None = None) -> None:
        super().__init__("(newest)")
        if cwd is None:
            self.message = "no session to continue: start one without --continue"
        else:
            self.message = (
                f"no session of this folder ({cwd}) to continue: start one without --continue, "
                "or add --any-folder to continue the newest of any folder"
            )
        self.args = (self.message,)


class AmbiguousSessionId(UsageError):
    """A session id prefix that more than one session has (the candidates are listed)."""

    code = "ambiguous_session_id"

    def __init__(self, prefix: str, candidates: Sequence[SessionRecord], more: bool) -> None:
        listed = ", ".join(
            f"{record.id} ({record.title})" if record.title else record.id for record in candidates
        )
        tail = ", …" if more else ""
        super().__init__(f"session id {prefix!r} is ambiguous: it starts {listed}{tail}; type more of it")
        self.candidates = [record.id for record in candidates]


PREFIX_CANDIDATES = 8
"""How many sessions an ambiguous id prefix lists."""


async def find_session_id(sessions: ChatSessions, text: str) -> str:
    """The session `text` names: its full id, else the one id that starts with it.

    SessionNotFound when none does; AmbiguousSessionId (listing them) when several do."""
    text = text.strip()
    if not text:
        raise UsageError("a session id is empty")
    exact = await sessions.find_session(text)
    if exact is not None:
        return exact.id
    found = await sessions.sessions_with_prefix(text, limit=PREFIX_CANDIDATES + 1)
    if not found:
        raise SessionNotFound(text)
    if len(found) > 1:
        raise AmbiguousSessionId(text, found[:PREFIX_CANDIDATES], len(found) > PREFIX_CANDIDATES)
    return found[0].id


async def resolve_session(
    sessions: ChatSessions, *, continue_last: bool = False, resume: str | None = None, cwd: str | None = None
) -> str | None:
    """The session a front end opens: `--resume ID` (its full id or any unique prefix:
    SessionNotFound, AmbiguousSessionId), `--continue` the newest session of folder `cwd`
    (None: of any folder; one must exist: NoSessionToContinue), else None (the first turn
    makes a new one). `cwd` is compared with the folder a session recorded, resolved."""
    if continue_last and resume:
        raise UsageError("use either --continue or --resume, not both")
    if resume:
        return await find_session_id(sessions, resume)
    if continue_last:
        folder = os.path.realpath(cwd) if cwd is not None else None
        latest = await sessions.latest_session(cwd=folder)
        if latest is None:
            raise NoSessionToContinue(folder)
        return latest.id
    return None


# ---- the backend ------------------------------------------------------------------------


@dataclass(eq=False)
class Backend:
    """What `open_backend` yields (see the module docstring)."""

    settings: Settings
    sessions: ChatSessions
    files: SessionFiles
    server: str | None
    """The server's base URL; None: this machine."""
    storage: Storage | None
    """The local storage (None for a server)."""
    model: str | None
    """The `-m` flag (None: the configured model here, the server's own there)."""
    _stack: contextlib.AsyncExitStack = field(repr=False)
    _client: RemoteClient | None = field(default=None, repr=False)
    _agent: ChatAgent | None = field(default=None, repr=False)
    _runtime: Runtime | None = field(default=None, repr=False)
    _choice: ProviderChoice | None = field(default=None, repr=False)

    @property
    def remote(self) -> bool:
        return self.server is not None

    @property
    def mcp(self) -> McpManager | None:
        """The local runtime's MCP manager (None: remote, no servers, or no agent yet)."""
        return self._runtime.mcp if self._runtime is not None else None

    @property
    def remote_notice(self) -> str | None:
        """The one line that says what a remote session does not do (None locally)."""
        if self.server is None:
            return None
        from hermes.remote.agent import NOT_OFFERED

        return NOT_OFFERED

    def provider_choice(self) -> ProviderChoice | None:
        """The local provider the settings select (ConfigError when none is usable); None remotely."""
        if self.server is not None:
            return None
        if self._choice is None:
            from hermes.agent.factory import choose_provider

            self._choice = choose_provider(self.settings)
        return self._choice

    def notices(self) -> list[str]:
        """The start-up lines of a local agent: a provider chosen on its own, a sandbox
        that is off; none remotely (the server's own policy applies)."""
        choice = self.provider_choice()
        if choice is None:
            return []
        from hermes.agent.safety.sandbox import sandbox_notice

        return [notice for notice in (choice.notice, sandbox_notice(self.settings)) if notice]

    async def open_agent(
        self,
        *,
        progress: ProgressCallback | None = None,
        defer_mcp: bool = False,
        report_mcp: Callable[[McpServerStatus], None] | None = None,
        cwd: Path | None = None,
    ) -> ChatAgent:
        """The agent of this backend, built on the first call (see the module docstring)."""
        if self._agent is not None:
            return self._agent
        if self.server is not None:
            from hermes.remote.agent import RemoteAgent

            assert self._client is not None
            remote = RemoteAgent(self._client, model=self.model)
            await remote.load_server_model()  # the front end names the server's model from the start
            self._agent = remote
            return self._agent
        from hermes.runtime import open_runtime

        runtime = await self._stack.enter_async_context(
            open_runtime(
                self.settings,
                storage=self.storage,
                repair=_repaired_already,
                choice=self.provider_choice(),
                progress=progress,
                defer_mcp=defer_mcp,
                report_mcp=report_mcp,
                cwd=cwd,
            )
        )
        self._runtime = runtime
        self._agent = runtime.agent
        return runtime.agent

    async def start_mcp(self, report: Callable[[McpServerStatus], None] | None = None) -> None:
        """Connect a deferred local MCP start (nothing remotely: the server runs its own)."""
        if self._runtime is not None:
            await self._runtime.start_mcp(report)


@contextlib.asynccontextmanager
async def open_backend(
    settings: Settings, server: str | None = None, key: str | None = None, *, model: str | None = None
) -> AsyncIterator[Backend]:
    """Open the local storage, or attach to the server at `server` (see the module docstring)."""
    async with contextlib.AsyncExitStack() as stack:
        if server:
            yield await _open_remote(settings, server, key, model, stack)
        else:
            yield await _open_local(settings.replace(model=model) if model else settings, model, stack)


async def _open_local(settings: Settings, model: str | None, stack: contextlib.AsyncExitStack) -> Backend:
    from hermes.checkpoints.files import LocalSessionFiles
    from hermes.store.configured import open_storage

    settings.ensure_home()
    storage = await open_storage(settings)
    stack.push_async_callback(storage.aclose)
    await storage.sessions.repair_abandoned_turns()  # before --continue picks one
    sessions = storage.sessions
    files = LocalSessionFiles(
        sessions, settings.home, max_diff_bytes=settings.max_diff_bytes, guard=_lazy_restore_guard(settings)
    )
    return Backend(settings, sessions, files, None, storage, model, stack)


async def _open_remote(
    settings: Settings, server: str, key: str | None, model: str | None, stack: contextlib.AsyncExitStack
) -> Backend:
    from hermes.remote.client import RemoteClient
    from hermes.remote.sessions import RemoteSessions

    client = RemoteClient(server, key)
    stack.push_async_callback(client.aclose)
    sessions = RemoteSessions(client)
    await sessions.count_sessions()  # reachable, and the key is right: else this is the first error
    return Backend(settings, sessions, sessions, client.base_url, None, model, stack, client)


async def _repaired_already(storage: Storage) -> None:
    """`open_runtime`'s repair step: `_open_local` repaired the storage when it opened it."""


def _lazy_restore_guard(settings: Settings) -> Callable[[Path, Path], str | None]:
    """The confinement's restore guard (hermes/agent/safety/restore_guard.py), loaded on first use:
    only undo and redo need it, and the engine is heavy to import for the other commands."""

    loaded: list[Callable[[Path, Path], str | None]] = []

    def guard(path: Path, worktree: Path) -> str | None:
        if not loaded:
            from hermes.agent.safety.restore_guard import restore_guard

            loaded.append(restore_guard(settings))
        return loaded[0](path, worktree)

    return guard
