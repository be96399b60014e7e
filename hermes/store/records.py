"""The records that cross the storage interface, and their constants.

Every record is a frozen dataclass; both backends (SQLite, PostgreSQL) return exactly
these types, and nothing above the store builds them from rows. Unix seconds everywhere.
A run whose status is in TERMINAL_STATES is settled and never changes status again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from hermes.messages import ChatMessage
from hermes.store.owner import ProcessOwner

__all__ = [
    "INTERRUPTED",
    "ORPHAN_MESSAGE",
    "RETENTION_SECONDS",
    "TERMINAL_STATES",
    "CompactionRecord",
    "ConversationMark",
    "HistoryMark",
    "ControlMessage",
    "ControlReply",
    "InstanceLease",
    "MessageRecord",
    "NewCompaction",
    "NewMessage",
    "NewSession",
    "Receipt",
    "RepairedTurn",
    "RunRecord",
    "RunState",
    "SearchHit",
    "SessionRecord",
    "StoreStats",
    "StoredRunEvent",
    "TurnCheckpoint",
    "TurnRecord",
    "UsageTotal",
]

RunState = Literal[
    "queued",
    "running",
    "waiting_for_approval",
    "stopping",
    "completed",
    "failed",
    "cancelled",
    "interrupted",
]

TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "cancelled", "interrupted"})

RETENTION_SECONDS = 24 * 3600.0
"""How long receipts and settled run rows are kept after their last update."""

ORPHAN_MESSAGE = "The server stopped before this run settled."

INTERRUPTED = "interrupted"
"""end_reason (and a kept draft's finish_reason) of a turn whose owner is gone."""

IMPORTED = "imported"
"""finish_reason of a message a new session took from the client's resent history (the
conversation began where hermes never saw it): part of the transcript, never a turn's."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    source: str
    """cli, tui, api_server or acp."""
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
    cwd: str | None = None
    """The folder the session belongs to: where its tools run (the front end's working
    directory when it was created, resolved; None: created before sessions recorded one)."""
    parent_call_id: str | None = None
    """The `task` tool call of the parent session that ran this session as a subagent
    (hermes/agent/subagents); None for every other session (a fork has only its parent)."""

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
class NewSession:
    """A session to create together with its first turn (`AsyncSessionStore.start_turn`).

    `id` is the caller's (`given`: a session with that id existing is a StoreError) or
    one it prefers, generated or derived (replaced by a fresh one when a session has it,
    in the same write; the turn names the one used)."""

    id: str
    given: bool
    source: str
    model: str | None = None
    title: str | None = None
    system_prompt: str | None = None
    cwd: str | None = None
    """The folder the session belongs to (`SessionRecord.cwd`)."""
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    """A subagent's session: the parent session and its `task` call that runs it."""


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn of a session: who runs it, and whether it has ended."""

    id: int
    session_id: str
    after_message_id: int
    """The turn's messages are the session's messages with a larger id (up to the next turn's)."""
    draft_message_id: int | None
    """The assistant message its streaming text is saved into as a draft, while there is one."""
    started_at: float
    ended_at: float | None
    end_reason: str | None
    owner: ProcessOwner
    """The process running (or that ran) the turn."""
    owner_instance: str | None = None
    """The storage instance (`Storage.instance_id`) whose lease owns the turn (PostgreSQL);
    None on SQLite, where the owner process alone decides."""


@dataclass(frozen=True, slots=True)
class TurnCheckpoint:
    """A turn's file checkpoints and undo state (see hermes/checkpoints)."""

    turn_id: int
    session_id: str
    worktree: str | None
    """The working tree (real path) its snapshots are of; None: the turn took none."""
    before: str | None
    """The snapshot commit taken before the turn's first tool that can change files."""
    after: str | None
    """The snapshot commit taken when the turn ended."""
    undone: int | None
    """The undo marker hiding the turn (with its messages); None while it is visible."""
    ended: bool
    """The turn has ended (an open turn is running, or awaits repair)."""


@dataclass(frozen=True, slots=True)
class RepairedTurn:
    """What start-up repair did to one turn whose owner process had died."""

    turn_id: int
    session_id: str
    kept_text: bool
    """A saved draft was kept as the assistant message."""
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
class UsageTotal:
    """Tokens counted for one model, summed over a session (`session_usage`) or a UTC day
    (`usage_totals`); the other key is None. `model` is None where no model was known."""

    model: str | None
    input_tokens: int
    """Every prompt token, the cached ones included."""
    cached_input_tokens: int
    """The part of `input_tokens` the provider reported as served from its cache."""
    output_tokens: int
    session_id: str | None = None
    day: str | None = None
    """YYYY-MM-DD (UTC) of the writes summed."""


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


@dataclass(frozen=True, slots=True)
class HistoryMark:
    """What a session's model-ready history is made of, in a few numbers (`history_mark`).

    The history is the latest compaction's summary (when there is one) plus the visible
    (not undone), finished (not draft) messages from its first kept message on. Two marks
    are equal when those are the same: a stored message's content never changes once it
    is no draft, so an append, an undo or redo, or a new compaction changes the mark.
    """

    compaction_id: int | None
    first_message_id: int
    """The first message id the history may hold: the compaction's first kept one, else 0."""
    count: int
    last_message_id: int
    """0 when there is no message."""
    id_sum: int
    """The sum of the messages' ids: with `count`, it tells an undo-and-append apart from an append."""


@dataclass(frozen=True, slots=True)
class ConversationMark:
    """A point of a session's transcript that a client resending its history names.

    `fingerprint` is the front end's hash of the conversation as a client resends it
    (opaque to the store); `message_id` the session's newest message when it was marked.
    """

    session_id: str
    fingerprint: str
    message_id: int
    marked_at: float
    latest: bool
    """Whether `message_id` is still the session's newest message (the session ends there)."""
    claimed: bool = False
    """Whether one request has already taken the mark to continue the session from it."""

    @property
    def open(self) -> bool:
        """Whether a request may still continue the session from here (`claim_conversation`)."""
        return self.latest and not self.claimed


@dataclass(frozen=True, slots=True)
class RunRecord:
    """The durable status of one run (the body of `GET /v1/runs/{id}`)."""

    run_id: str
    status: str
    created_at: float
    updated_at: float
    session_id: str | None = None
    model: str | None = None
    last_event: str | None = None
    """Name of the newest event the run emitted (e.g. `run.completed`)."""
    output: str | None = None
    """The final assistant text, once there is one."""
    usage: dict[str, int] | None = None
    error: str | None = None
    error_code: str | None = None
    owner_pid: int | None = None
    owner_instance: str | None = None
    """The instance (lease holder, `hermes.store.api.InstanceLease`) running it, if any."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATES

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "object": "hermes.run",
            "run_id": self.run_id,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "session_id": self.session_id,
            "model": self.model,
            "last_event": self.last_event,
            "output": self.output,
            "usage": self.usage,
        }
        if self.error is not None:
            data["error"] = self.error
        if self.error_code is not None:
            data["error_code"] = self.error_code
        return data


@dataclass(frozen=True, slots=True)
class Receipt:
    """An Idempotency-Key already used: which request (fingerprint) started which run, or
    (the OpenAI endpoints) which claim computes its answer, and the answer once stored."""

    scope: str
    key: str
    fingerprint: str
    run_id: str
    """The run started for the key, or the token of the claim computing its answer."""
    created_at: float
    updated_at: float = field(default=0.0)
    answer: dict[str, Any] | None = None
    """The finished JSON answer replayed for the key; None for a run's receipt or a claim
    still computing."""
    expires_at: float | None = None
    """When the receipt lapses (a claim or a stored answer); None: `retention` seconds
    after `updated_at`."""

    @property
    def pending(self) -> bool:
        """A claim whose answer is still being computed."""
        return self.expires_at is not None and self.answer is None


@dataclass(frozen=True, slots=True)
class StoredRunEvent:
    """One event of a run's stream, numbered 1, 2, 3… per run (the SSE `id:`)."""

    run_id: str
    seq: int
    name: str
    data: dict[str, Any]
    ts: float
    """Unix seconds when it was appended."""
    final: bool = False
    """True for the last event of the stream: subscriptions end after yielding it."""


@dataclass(frozen=True, slots=True)
class InstanceLease:
    """A running `hermes serve` instance and how long its lease holds."""

    instance_id: str
    host: str
    pid: int
    started_at: float
    heartbeat_at: float
    expires_at: float
    """Unix seconds by the database's clock (PostgreSQL) or the host's (SQLite)."""


@dataclass(frozen=True, slots=True)
class ControlMessage:
    """A request to the instance that owns a run: `stop` it, or answer its `approval`."""

    op: str
    """"stop", "approval" or "status" (the owner's live view of the run); an instance
    answers an op it does not know with `unknown_op`."""
    run_id: str
    args: dict[str, Any] = field(default_factory=dict)
    """JSON-safe arguments of the op (approval: choice, request_id, all)."""


@dataclass(frozen=True, slots=True)
class ControlReply:
    """The owner's answer: `ok`, or a failure `code` + one-line `message`, plus JSON `data`."""

    ok: bool
    data: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    message: str | None = None
