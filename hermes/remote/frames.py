"""Session chat stream frames → the engine's event types, at the remote client's edge.

The server's `SessionChatTranslator` (hermes/server/rest/sessions.py) turns engine events
into named frames; `FrameReader` turns them back, so the TUI's renderer and the CLI's
`-q` renderer draw a remote turn with the same code as a local one. Invariants:
- one frame gives at most one event, except the run's end, which gives `TurnCompleted`;
- a frame is read once: the caller drops frames whose seq it has already seen (a resumed
  stream replays from its Last-Event-ID, never before it);
- frames the engine has no event for (`message.started`, `assistant.completed`, `done`)
  only update the reader's state.
"""

from __future__ import annotations

from typing import Any

from hermes import error_codes
from hermes.agent.events import (
    AgentEvent,
    ApprovalRequested,
    ContextCompacted,
    ReasoningDelta,
    Retrying,
    SegmentEnd,
    Status,
    StatusKind,
    StreamStalled,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.types import TurnResult, TurnStatus, Usage
from hermes.remote.client import SseFrame

THINKING = "_thinking"
"""The `tool_name` of a reasoning delta in the session chat vocabulary."""
RUN_ENDS = frozenset({"run.completed", "run.failed", "run.cancelled", "run.interrupted"})
_STATUS_KINDS: frozenset[str] = frozenset(
    {"waiting", "streaming_disabled", "max_iterations", "repeated_tool_call", "info"}
)
_PARTIAL_CODES = frozenset({error_codes.OUTPUT_TRUNCATED, error_codes.STREAM_STALLED, error_codes.MAX_ITERATIONS})


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    return value if isinstance(value, str) else ""


def _int(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    return value if isinstance(value, int) else 0


class FrameReader:
    """Reads one remote turn's frames (see the module docstring)."""

    def __init__(self, session_id: str, model: str) -> None:
        self.session_id = session_id
        self.model = model
        self.run_id: str | None = None
        self.final_text = ""
        self.result: TurnResult | None = None
        self.finished = False
        """The `done` frame (or the run's end) was read: the stream has nothing more."""

    def read(self, frame: SseFrame) -> AgentEvent | None:
        data = frame.data
        if isinstance(data.get("run_id"), str):
            self.run_id = data["run_id"]
        match frame.event:
            case "run.started":
                runtime = data.get("runtime")
                model = runtime.get("model") if isinstance(runtime, dict) else None
                self.model = model if isinstance(model, str) and model else self.model
                return TurnStarted(session_id=self.session_id, model=self.model)
            case "assistant.delta":
                return TextDelta(_text(data, "delta"))
            case "assistant.commentary":
                return SegmentEnd()
            case "tool.progress" if data.get("tool_name") == THINKING:
                return ReasoningDelta(_text(data, "delta"))
            case "tool.started":
                arguments = data.get("args") if isinstance(data.get("args"), dict) else {}
                return ToolStarted(
                    call_id=_text(data, "call_id"),
                    name=_text(data, "tool_name"),
                    arguments=arguments or {},
                    preview=_text(data, "preview"),
                )
            case "tool.completed" | "tool.failed":
                arguments = data.get("args") if isinstance(data.get("args"), dict) else {}
                duration = data.get("duration")
                return ToolCompleted(
                    call_id=_text(data, "call_id"),
                    name=_text(data, "tool_name"),
                    result=_text(data, "result"),
                    duration=float(duration) if isinstance(duration, (int, float)) else 0.0,
                    is_error=bool(data.get("is_error")) or frame.event == "tool.failed",
                    arguments=arguments or {},
                )
            case "approval.request":
                return ApprovalRequested(
                    call_id=_text(data, "request_id"),
                    tool_name=_text(data, "tool_name"),
                    command=_text(data, "command"),
                    reason=_text(data, "reason"),
                    grant=data["grant"] if isinstance(data.get("grant"), str) else None,
                )
            case "status":
                return _status(data)
            case "assistant.completed":
                self.final_text = _text(data, "content")
                return None
            case name if name in RUN_ENDS:
                self.finished = True
                self.result = self._result(data)
                return TurnCompleted(self.result)
            case "error":
                self.finished = True
                self.result = self.failed(_text(data, "message") or "the server reported an error")
                return TurnCompleted(self.result)
            case "done":
                self.finished = True
                return None
            case _:
                return None

    def _result(self, data: dict[str, Any]) -> TurnResult:
        usage_data = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        usage = Usage(input_tokens=_int(usage_data or {}, "input_tokens"),
                      output_tokens=_int(usage_data or {}, "output_tokens"))  # fmt: skip
        error_code = data.get("error_code") if isinstance(data.get("error_code"), str) else None
        return TurnResult(
            session_id=self.session_id,
            status=self._turn_status(data, error_code),
            final_text=self.final_text,
            messages=[m for m in data.get("messages") or [] if isinstance(m, dict)],
            usage=usage,
            model=self.model,
            error=data.get("error") if isinstance(data.get("error"), str) else None,
            error_code=error_code,
            context_tokens=_int(data, "context_tokens"),
        )

    def _turn_status(self, data: dict[str, Any], error_code: str | None) -> TurnStatus:
        given = data.get("turn_status")
        if given in ("completed", "partial", "failed", "interrupted"):
            return given  # type: ignore[no-any-return]
        status = data.get("status")
        if status == "completed":
            return "completed"
        if status in ("cancelled", "interrupted"):
            return "interrupted"
        return "partial" if self.final_text and error_code in _PARTIAL_CODES else "failed"

    def failed(self, message: str, code: str = error_codes.AGENT_ERROR, status: TurnStatus = "failed") -> TurnResult:
        """The result of a turn whose stream ended without the run's own end."""
        return TurnResult(
            session_id=self.session_id,
            status=status,
            final_text=self.final_text,
            model=self.model,
            error=message,
            error_code=code,
        )


def _status(data: dict[str, Any]) -> AgentEvent:
    kind, text = _text(data, "kind"), _text(data, "text")
    match kind:
        case "retrying":
            return Retrying(attempt=_int(data, "attempt"), max_attempts=_int(data, "max_attempts"), reason=text,
                            delay=0.0)  # fmt: skip
        case "stream_stalled":
            tools = data.get("tools") if isinstance(data.get("tools"), list) else []
            return StreamStalled(tool_names=tuple(str(t) for t in tools or []), message=text)
        case "context_compacted":
            reason = data.get("reason")
            return ContextCompacted(
                before_tokens=_int(data, "before_tokens"),
                after_tokens=_int(data, "after_tokens"),
                summarized_messages=0,
                kept_messages=0,
                reason=reason if reason in ("threshold", "overflow", "manual") else "threshold",
            )
        case _:
            status_kind: StatusKind = kind if kind in _STATUS_KINDS else "info"  # type: ignore[assignment]
            return Status(kind=status_kind, text=text)
