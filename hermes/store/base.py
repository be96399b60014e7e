"""The session store interface and its record types.

Plain storage: no agent logic, no HTTP. Implementations must be safe to call from the
asyncio loop (each call is short) and must make every `append_message` durable before
returning, so a crash mid-turn keeps what was written.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from hermes.messages import ChatMessage
from hermes.store.owner import ProcessOwner


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    source: str
    """cli, tui or api_server."""
    title: str | None
    model: str | None
    parent_session_id: str | None
    started_at: float
    """Unix seconds."""
    updated_at: float
    """Unix seconds of the newest activity (message appended, rename, end)."""
    ended_at: float | None
    end_reason: str | None
    """e.g. completed, interrupted, failed, branched."""
    message_count: int
    tool_call_count: int
    input_tokens: int
    output_tokens: int
    system_prompt: str | None

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape used by `--json` output and the REST API."""
        data = asdict(self)
        data["object"] = "session"
        return data


@dataclass(frozen=True, slots=True)
class MessageRecord:
    id: int
    session_id: str
    role: str
    """system, user, assistant or tool."""
    content: str | list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    tool_name: str | None
    reasoning: str | None
    finish_reason: str | None
    timestamp: float
    token_count: int | None

    def to_openai(self) -> ChatMessage:
        """This message as an OpenAI Chat Completions message."""
        message: ChatMessage = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if self.role == "tool":
            message["tool_call_id"] = self.tool_call_id or ""
            if self.tool_name:
                message["name"] = self.tool_name
        return message

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["object"] = "message"
        return data


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append. Build one from an OpenAI message with `from_openai`."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    token_count: int | None = None

    @classmethod
    def from_openai(
        cls,
        message: ChatMessage,
        *,
        reasoning: str | None = None,
        finish_reason: str | None = None,
        token_count: int | None = None,
    ) -> NewMessage:
        return cls(
            role=message["role"],
            content=message.get("content"),
            tool_calls=message.get("tool_calls") or None,
            tool_call_id=message.get("tool_call_id"),
            tool_name=message.get("name"),
            reasoning=reasoning if reasoning is not None else message.get("reasoning_content"),
            finish_reason=finish_reason,
            token_count=token_count,
        )


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn of a session: who runs it, and whether it has ended."""

    id: int
    session_id: str
    after_message_id: int
    """The turn's messages are the session's messages with a larger id (up to the next turn's)."""
    draft_message_id: int | None
    """The assistant message its streaming text is checkpointed into, while there is one."""
    started_at: float
    ended_at: float | None
    end_reason: str | None
    owner: ProcessOwner
    """The process running (or that ran) the turn."""
    owner_instance: str | None = None
    """The storage instance (`Storage.instance_id`) whose lease owns the turn (PostgreSQL);
    None on SQLite, where the owner process alone decides."""


@dataclass(frozen=True, slots=True)
class RepairedTurn:
    """What start-up repair did to one turn whose owner process had died."""

    turn_id: int
    session_id: str
    kept_text: bool
    """A checkpointed draft was kept as the assistant message."""
    placeholders: int
    """Tool calls that got the "server stopped" placeholder result."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    session: SessionRecord
    message_id: int
    role: str
    snippet: str
    """Matched text with the match wrapped in >>> <<<."""

    def to_json(self) -> dict[str, Any]:
        return {
            "object": "search_hit",
            "session": self.session.to_json(),
            "message_id": self.message_id,
            "role": self.role,
            "snippet": self.snippet,
        }


@dataclass(frozen=True, slots=True)
class StoreStats:
    sessions: int
    messages: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    by_source: dict[str, int] = field(default_factory=dict)
    db_bytes: int = 0


@dataclass(frozen=True, slots=True)
class NewCompaction:
    """A compaction marker to record: the messages before `first_kept_message_id` were
    replaced by `summary` in what the model sees from then on (the store keeps them)."""

    summary: str
    first_kept_message_id: int
    summarized_messages: int = 0
    before_tokens: int = 0
    after_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    id: int
    session_id: str
    summary: str
    first_kept_message_id: int
    summarized_messages: int
    before_tokens: int
    after_tokens: int
    created_at: float
    """Unix seconds."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["object"] = "compaction"
        return data


@runtime_checkable
class CompactionLog(Protocol):
    """Compaction markers of sessions (a store that keeps them implements this too)."""

    def add_compaction(self, session_id: str, marker: NewCompaction) -> CompactionRecord:
        """Record a marker; SessionNotFound for an unknown session."""
        ...

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's markers, oldest first (empty for an unknown session)."""
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Sessions and their messages. Unknown ids raise SessionNotFound / MessageNotFound."""

    def create_session(
        self,
        *,
        source: str,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
    ) -> SessionRecord: ...

    def get_session(self, session_id: str) -> SessionRecord: ...

    def find_session(self, session_id: str) -> SessionRecord | None: ...

    def latest_session(self, *, source: str | None = None) -> SessionRecord | None:
        """The session with the newest activity."""
        ...

    def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None
    ) -> list[SessionRecord]:
        """Newest activity first."""
        ...

    def count_sessions(self, *, source: str | None = None) -> int: ...

    def rename_session(self, session_id: str, title: str) -> SessionRecord: ...

    def update_session(
        self,
        session_id: str,
        *,
        model: str | None = None,
        system_prompt: str | None = None,
    ) -> SessionRecord: ...

    def end_session(self, session_id: str, reason: str) -> None: ...

    def add_usage(self, session_id: str, *, input_tokens: int, output_tokens: int) -> None: ...

    def delete_session(self, session_id: str) -> None:
        """Delete the session and its messages (children keep their rows, parent link cleared)."""
        ...

    def append_message(
        self, session_id: str, message: NewMessage, *, turn_id: int | None = None
    ) -> MessageRecord:
        """Durable when it returns. Updates message/tool-call counts and updated_at.

        With `turn_id`, an assistant message replaces that turn's draft (keeping the
        draft's id and place), when it has one.
        """
        ...

    # -- turns and checkpoints (crash safety) --

    def begin_turn(self, session_id: str, *, owner: ProcessOwner | None = None) -> TurnRecord:
        """Open a turn owned by `owner` (default: this process); its messages follow."""
        ...

    def save_draft(self, turn_id: int, content: str) -> None:
        """Checkpoint the streaming assistant text of an open turn (creates or updates its draft).

        No-op when the turn has ended.
        """
        ...

    def end_turn(self, turn_id: int, reason: str) -> None:
        """End an open turn; a draft still open is kept as a message (finish_reason `reason`)."""
        ...

    def get_turn(self, turn_id: int) -> TurnRecord | None: ...

    def find_turn(self, session_id: str, *, started_at_or_after: float) -> TurnRecord | None:
        """The session's first turn that started at or after the given time."""
        ...

    def turn_messages(self, turn_id: int) -> list[MessageRecord]:
        """The turn's messages, oldest first (a draft included)."""
        ...

    def repair_abandoned_turns(
        self, is_gone: Callable[[ProcessOwner], bool] | None = None
    ) -> list[RepairedTurn]:
        """End every open turn whose owner is gone (default test: `owner.owner_gone`).

        Each such turn ends "interrupted": its draft is kept as the assistant message,
        every unanswered tool call gets the SERVER_STOPPED_TOOL_RESULT result, and the
        session is ended "interrupted" (first reason wins). Open turns of live owners
        are never touched. Cheap when nothing is open (an indexed query).
        """
        ...

    def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Oldest first."""
        ...

    def history(self, session_id: str) -> list[ChatMessage]:
        """The transcript as OpenAI messages (no system prompt), ready to send again.

        Drafts are left out, and it is valid for strict endpoints (see
        `transcript.valid_transcript`) even where the stored rows are not.
        """
        ...

    def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
    ) -> SessionRecord:
        """Copy the messages (all, or up to and including at_message_id) into a new session.

        The parent's end_reason becomes "branched"; the child has parent_session_id set
        and title "<parent title> #2" (#3… when taken) unless a title is given.
        """
        ...

    def search(
        self, query: str, *, limit: int = 20, source: str | None = None
    ) -> list[SearchHit]:
        """Full-text search over message content, best match first (drafts left out)."""
        ...

    def stats(self) -> StoreStats: ...

    def transaction(self) -> AbstractContextManager[None]:
        """The writes inside the block form one transaction, committed when it exits.

        The block must not await (it holds the store's lock)."""
        ...

    def close(self) -> None: ...
