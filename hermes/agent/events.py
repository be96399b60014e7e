"""The typed event vocabulary of a turn.

A turn's handle (`Agent.start(...).events()`) delivers these, in order, and ends with
exactly one `TurnCompleted` (unless the consumer left with `aclose()` or the turn's task
was cancelled: then no more events).
Front ends translate them at their edge (SSE frames, Textual messages, terminal lines);
nothing else invents event dicts.

Ordering invariants:
- `TextDelta`s of one assistant segment arrive in upstream order and never interleave
  with another attempt's (a retried request starts only when nothing was delivered).
- `SegmentEnd` follows the last `TextDelta` of a segment whose message carries tool
  calls, before any `ToolStarted` of that batch.
- Every `ToolStarted` is followed by exactly one `ToolCompleted` with the same
  `call_id`, before `TurnCompleted` (calls stopped by an interrupt complete with
  `is_error=True` and a result saying they were interrupted).
- `ClientToolCalls`, when there is one, comes right before `TurnCompleted`, after the
  `ToolCompleted` of every hermes tool of the same model response.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, assert_never, cast, get_args

from hermes.agent.client_tools import ClientToolCall
from hermes.agent.types import TurnResult, Usage


@dataclass(frozen=True, slots=True)
class TurnStarted:
    session_id: str
    model: str
    type: Literal["turn.started"] = "turn.started"


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible assistant text."""

    text: str
    type: Literal["text.delta"] = "text.delta"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Model reasoning ("thinking"); never part of the answer text."""

    text: str
    type: Literal["reasoning.delta"] = "reasoning.delta"


@dataclass(frozen=True, slots=True)
class SegmentEnd:
    """The current assistant text segment is closed; tools are about to run."""

    last: bool = False
    """No more text follows in this turn: the response's other calls are the client's, and
    the turn ends once hermes' own calls of it ran."""
    type: Literal["segment.end"] = "segment.end"


@dataclass(frozen=True, slots=True)
class ToolCallGenerating:
    """A tool call's name is known while its arguments still stream."""

    call_id: str
    name: str
    index: int
    type: Literal["tool.generating"] = "tool.generating"


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: dict[str, Any]
    preview: str
    """One-line human summary of the arguments (e.g. the command)."""
    parent_call_id: str | None = None
    """A subagent's tool call, shown under the parent's `task` call with this id (its own
    `call_id` is "<parent call id>/<the child's call id>"); None: a call of this turn."""
    type: Literal["tool.started"] = "tool.started"


@dataclass(frozen=True, slots=True)
class ToolCompleted:
    call_id: str
    name: str
    result: str
    """Exactly what the model sees as the tool message content."""
    duration: float
    is_error: bool
    arguments: dict[str, Any] = field(default_factory=dict)
    parent_call_id: str | None = None
    """As ToolStarted's: a subagent's call, under the parent's `task` call."""
    type: Literal["tool.completed"] = "tool.completed"


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """The newest lines a running tool (a command) wrote, for a live preview.

    A tail, not the whole output (that is in `ToolCompleted.result`): at most a few lines,
    at most a few times a second. Like `ModelProgress` it is live only: never stored,
    never journaled, not sent by the server; `chat -q --json` leaves it out."""

    call_id: str
    name: str
    text: str
    type: Literal["tool.output"] = "tool.output"


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """A command needs the user's approval; the approval callback is being asked."""

    call_id: str
    tool_name: str
    command: str
    reason: str
    grant: str | None = None
    """What "allow for this session" would allow (ApprovalRequest.grant); None: not offered."""
    type: Literal["approval.requested"] = "approval.requested"


@dataclass(frozen=True, slots=True)
class StreamStalled:
    """The stream went silent mid tool-call; those calls were not executed."""

    tool_names: tuple[str, ...]
    message: str
    type: Literal["stream.stalled"] = "stream.stalled"


@dataclass(frozen=True, slots=True)
class Retrying:
    """A model request failed transiently and is being retried."""

    attempt: int
    """The attempt about to start (2 for the first retry)."""
    max_attempts: int
    reason: str
    delay: float
    type: Literal["retrying"] = "retrying"


@dataclass(frozen=True, slots=True)
class ContextCompacted:
    """Older messages of the request were replaced by a summary (the store keeps them all)."""

    before_tokens: int
    """Estimated size of the request before compaction."""
    after_tokens: int
    """Estimated size after: system prompt + summary + recent messages."""
    summarized_messages: int
    kept_messages: int
    reason: Literal["threshold", "overflow", "manual"]
    """threshold: the request passed compact_at × context_window; overflow: the upstream
    refused it as too long; manual: `/compact`."""
    summary: str = ""
    type: Literal["context.compacted"] = "context.compacted"


StatusKind = Literal[
    "waiting",
    "streaming_disabled",
    "max_iterations",
    "repeated_tool_call",
    "info",
    "checkpoint",
    "files_changed",
    "fallback",
    "hook",
]


@dataclass(frozen=True, slots=True)
class Status:
    """Lifecycle information for a status line (not part of the transcript)."""

    kind: StatusKind
    text: str
    type: Literal["status"] = "status"


@dataclass(frozen=True, slots=True)
class ModelProgress:
    """How far the current model call is, for live status lines (local model only).

    Never part of the transcript, never stored, not sent by the server; `chat -q --json`
    leaves it out too. Emitted at most a few times a second.
    """

    phase: Literal["reading", "generating"]
    """reading: the model reads the prompt (no token yet); generating: tokens are coming,
    also while a tool call's JSON is written and nothing is shown yet."""
    tokens: int = 0
    tokens_per_second: float | None = None
    type: Literal["model.progress"] = "model.progress"


@dataclass(frozen=True, slots=True)
class ClientToolCalls:
    """The model called client tools: the turn ends (right after this) waiting for their
    results; hermes' own calls of the same response have completed before."""

    calls: tuple[ClientToolCall, ...]
    type: Literal["client_tool.calls"] = "client_tool.calls"


@dataclass(frozen=True, slots=True)
class TurnCompleted:
    result: TurnResult
    type: Literal["turn.completed"] = "turn.completed"


AgentEvent: TypeAlias = (
    TurnStarted
    | TextDelta
    | ReasoningDelta
    | SegmentEnd
    | ToolCallGenerating
    | ToolStarted
    | ToolCompleted
    | ToolOutput
    | ApprovalRequested
    | StreamStalled
    | Retrying
    | Status
    | ContextCompacted
    | ModelProgress
    | ClientToolCalls
    | TurnCompleted
)


EventType = Literal[
    "turn.started",
    "text.delta",
    "reasoning.delta",
    "segment.end",
    "tool.generating",
    "tool.started",
    "tool.completed",
    "tool.output",
    "approval.requested",
    "stream.stalled",
    "retrying",
    "status",
    "context.compacted",
    "model.progress",
    "client_tool.calls",
    "turn.completed",
]
"""The `type` of every event of `AgentEvent` (a test checks that the two lists agree)."""
EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))


def event_to_dict(event: AgentEvent) -> dict[str, Any]:
    """The one JSON form of an event (`type` first): `--json` output and the run journal."""
    from dataclasses import asdict

    data = asdict(event)
    return {"type": data.pop("type"), **data}


def event_from_dict(data: dict[str, Any]) -> AgentEvent:
    """The event `event_to_dict` gave `data` for: `event_from_dict(event_to_dict(e)) == e`.

    Raises:
        ValueError: `data` is not the JSON form of an event (unknown type, missing or
            unknown fields).
    """
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        raise ValueError(f"not an engine event type: {str(kind)[:64]!r}")
    fields = {name: value for name, value in data.items() if name != "type"}
    try:
        return _event_of(cast(EventType, kind), fields)
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed {kind} event: {exc}") from None


def _event_of(kind: EventType, fields: dict[str, Any]) -> AgentEvent:
    match kind:
        case "turn.started":
            return TurnStarted(**fields)
        case "text.delta":
            return TextDelta(**fields)
        case "reasoning.delta":
            return ReasoningDelta(**fields)
        case "segment.end":
            return SegmentEnd(**fields)
        case "tool.generating":
            return ToolCallGenerating(**fields)
        case "tool.started":
            return ToolStarted(**fields)
        case "tool.completed":
            return ToolCompleted(**fields)
        case "tool.output":
            return ToolOutput(**fields)
        case "approval.requested":
            return ApprovalRequested(**fields)
        case "stream.stalled":
            return StreamStalled(**{**fields, "tool_names": tuple(fields["tool_names"])})
        case "retrying":
            return Retrying(**fields)
        case "status":
            return Status(**fields)
        case "context.compacted":
            return ContextCompacted(**fields)
        case "model.progress":
            return ModelProgress(**fields)
        case "client_tool.calls":
            return ClientToolCalls(**{**fields, "calls": _client_calls(fields["calls"])})
        case "turn.completed":
            return TurnCompleted(**{**fields, "result": _turn_result(fields["result"])})
        case _:
            assert_never(kind)


def _client_calls(items: list[dict[str, Any]]) -> tuple[ClientToolCall, ...]:
    return tuple(ClientToolCall(**item) for item in items)


def _turn_result(data: dict[str, Any]) -> TurnResult:
    return TurnResult(**{
        **data,
        "usage": Usage(**data.get("usage", {})),
        "client_calls": _client_calls(data.get("client_calls", [])),
    })  # fmt: skip
