"""What the chat TUI drives: a turn source and a session store, local or remote.

The local runtime (`hermes.agent.engine.Agent` over an `AsyncSessionStore`) and a remote
`hermes serve` (`hermes.remote`: `RemoteAgent` over `RemoteSessions`) both satisfy these
protocols; the screens and widgets take them and never ask which one they have. A turn's
events are the engine's own event types either way, ending with one `TurnCompleted`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Protocol

from hermes.agent.events import AgentEvent, ContextCompacted
from hermes.agent.instructions import ProjectInstructions
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import ChatMessage, TurnRequest, TurnResult
from hermes.store.records import CompactionRecord, MessageRecord, SearchHit, SessionRecord, UsageTotal


class TurnStream(Protocol):
    """A running turn: its events, its stop, its close (`TurnHandle`, `RemoteTurn`)."""

    result: TurnResult | None

    def events(self) -> AsyncGenerator[AgentEvent, None]: ...

    def stop(self) -> None: ...

    async def aclose(self, grace: float = ...) -> None: ...


class ChatAgent(Protocol):
    """Starts turns (`Agent`, `RemoteAgent`)."""

    tools: ToolRegistry
    instructions: ProjectInstructions | None

    model: str

    def context_window(self, model: str | None = None) -> int: ...

    def start(self, request: TurnRequest) -> TurnStream: ...

    async def compact(self, session_id: str, *, model: str | None = None) -> ContextCompacted | None: ...


class ChatSessions(Protocol):
    """The sessions the TUI lists, opens, forks, renames and deletes (`AsyncSessionStore`,
    `RemoteSessions`)."""

    async def get_session(self, session_id: str) -> SessionRecord: ...

    async def find_session(self, session_id: str) -> SessionRecord | None: ...

    async def latest_session(self, *, source: str | None = None) -> SessionRecord | None: ...

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]: ...

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
