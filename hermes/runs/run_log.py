"""What a run's journal holds: the engine's own events, and three entries of the run itself.

Every entry is stored as (name, data): an engine event as its `type` and the rest of its
one JSON form (`hermes.agent.events.event_to_dict`); the run's own entries as below. No
entry belongs to a wire format: each format (the /v1/runs frames, the session chat
frames, the engine form the remote client reads) is translated from this log when a
stream is read (`hermes.server.rest.run_frames`).

    run.opened           {kind, model, input}        first, when the driver starts the turn
    <engine event>       event_to_dict(event)        in the order the turn produced them
    approval.responded   {choice, resolved, request_id?}
    run.settled          {status, session_id, from_result, error?, error_code?}   final

Invariants:
- `run.settled` is the last entry of every log and the only final one. `from_result`:
  the run settled from its turn's `TurnCompleted`, which is in the log before it; else
  it settled without a result (a crash, a stop before the turn began, shutdown, or the
  orphan sweeper), and `error`/`error_code`, when present, say why.
- `ModelProgress` and `ToolOutput` are never journaled (live status only).
- Logs written before this form (wire frames of the /v1/runs or session chat vocabulary)
  open with neither `run.opened` nor `run.settled`; `is_legacy_log` tells them apart and
  the readers serve them as they were written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from hermes.agent.events import AgentEvent, event_from_dict, event_to_dict
from hermes.messages import UserContent

RunKind = Literal["run", "session_chat"]
"""How the run was started, which is its streams' default format. `run`: POST /v1/runs.
`session_chat`: /api/sessions/{id}/chat[/stream]."""

RUN_OPENED = "run.opened"
RUN_SETTLED = "run.settled"
APPROVAL_RESPONDED = "approval.responded"


@dataclass(frozen=True, slots=True)
class RunOpened:
    kind: RunKind
    model: str | None
    input: UserContent
    """The user's content of the turn."""


@dataclass(frozen=True, slots=True)
class ApprovalResponded:
    choice: str
    resolved: int
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunSettled:
    status: str
    """completed | failed | cancelled | interrupted."""
    session_id: str | None = None
    from_result: bool = False
    error: str | None = None
    error_code: str | None = None
    reports_error: bool = False
    """Whether `error` and `error_code` belong to what the streams report of the end."""


LogEntry: TypeAlias = AgentEvent | RunOpened | ApprovalResponded | RunSettled


def entry_data(entry: RunOpened | ApprovalResponded | RunSettled) -> tuple[str, dict[str, Any]]:
    """The (name, data) a run entry is stored as."""
    match entry:
        case RunOpened():
            return RUN_OPENED, {"kind": entry.kind, "model": entry.model, "input": entry.input}
        case ApprovalResponded():
            data: dict[str, Any] = {"choice": entry.choice, "resolved": entry.resolved}
            if entry.request_id is not None:
                data["request_id"] = entry.request_id
            return APPROVAL_RESPONDED, data
        case RunSettled():
            data = {"status": entry.status, "session_id": entry.session_id, "from_result": entry.from_result}
            if entry.reports_error:
                data["error"] = entry.error
                data["error_code"] = entry.error_code
            return RUN_SETTLED, data


def event_data(event: AgentEvent) -> tuple[str, dict[str, Any]]:
    """The (name, data) an engine event is stored as."""
    data = event_to_dict(event)
    return data.pop("type"), data


def read_entry(name: str, data: dict[str, Any]) -> LogEntry:
    """The entry stored as (name, data).

    Raises:
        ValueError: not an entry of this form (a legacy frame, or damaged data).
    """
    if name == RUN_OPENED:
        kind = data.get("kind")
        model = data.get("model")
        return RunOpened(
            kind="session_chat" if kind == "session_chat" else "run",
            model=model if isinstance(model, str) else None,
            input=data.get("input") or "",
        )
    if name == APPROVAL_RESPONDED:
        request_id = data.get("request_id")
        return ApprovalResponded(
            choice=str(data.get("choice", "")),
            resolved=int(data.get("resolved", 0)),
            request_id=request_id if isinstance(request_id, str) else None,
        )
    if name == RUN_SETTLED:
        session_id = data.get("session_id")
        return RunSettled(
            status=str(data.get("status", "failed")),
            session_id=session_id if isinstance(session_id, str) else None,
            from_result=bool(data.get("from_result")),
            error=data.get("error") if isinstance(data.get("error"), str) else None,
            error_code=data.get("error_code") if isinstance(data.get("error_code"), str) else None,
            reports_error="error" in data or "error_code" in data,
        )
    return event_from_dict({"type": name, **data})


def is_legacy_log(first_name: str) -> bool:
    """Whether a log whose first entry is named `first_name` predates this form."""
    return first_name not in (RUN_OPENED, RUN_SETTLED)
