"""A run's log read as SSE frames: each wire format is translated here, when a stream is read.

A run's journal holds the engine's own events and the run's own entries
(`hermes.runs.run_log`); no wire format is stored. A stream picks its form:

    run            GET /v1/runs/{id}/events of a POST /v1/runs run: unnamed frames
                   `{"event", "run_id", "timestamp", …}`, ASCII JSON
    session_chat   /api/sessions/{id}/chat/stream (and the runs endpoint for its runs):
                   named frames stamped with session_id, run_id, seq, ts
    engine         `?events=engine` on either: named frames `event: <type>` whose data is
                   the event's one JSON form (`event_to_dict`), what the remote client reads

Invariants:
- Translation is a function of the log alone, so every reader on every instance gets the
  same frames. A stream always reads the log from its start and sends the frames after
  the client's `Last-Event-ID` (the translators keep state: a segment's text, a tool's
  preview, the turn's result).
- Frame ids: in the `run` and `session_chat` forms, frames are numbered 1, 2, 3… in the
  order they are sent (one entry may give several frames, or none); in the `engine` form
  a frame's id is its entry's seq.
- Logs written before this form (wire frames of one vocabulary) are served as they were
  written, one frame per entry with its seq as id, in the format they were written in;
  their `run.settled` (added by an orphan sweep) reads as `run.<status>`. In the engine
  form such a log gives only a failed `TurnCompleted` at its end.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Literal, assert_never

from hermes.agent.events import (
    AgentEvent,
    ApprovalRequested,
    ClientToolCalls,
    ContextCompacted,
    ModelProgress,
    ReasoningDelta,
    Retrying,
    SegmentEnd,
    Status,
    StreamStalled,
    TextDelta,
    ToolCallGenerating,
    ToolCompleted,
    ToolOutput,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
    event_to_dict,
)
from hermes.agent.types import TurnResult, TurnStatus
from hermes.error_codes import AGENT_ERROR
from hermes.runs.registry import APPROVAL_CHOICES
from hermes.runs.run_log import (
    RUN_SETTLED,
    ApprovalResponded,
    LogEntry,
    RunKind,
    RunOpened,
    RunSettled,
    entry_data,
    is_legacy_log,
    read_entry,
)
from hermes.runs.wire import status_payload, usage_json
from hermes.server.http.sse import encode_frame
from hermes.store.records import StoredRunEvent

logger = logging.getLogger(__name__)

StreamForm = Literal["run", "session_chat", "engine"]
ENGINE_FORM = "engine"
"""The value of `?events=` that asks for the engine's own events."""
THINKING = "_thinking"
"""The `tool_name` of a reasoning delta in the session chat vocabulary."""
LEGACY_ENGINE_ERROR = "This run was journaled by an earlier hermes; its events cannot be read in the engine's form."

Frames = list[tuple[str, dict[str, Any]]]


def message_id_of(run_id: str) -> str:
    """The id of a session chat run's assistant message: `msg_` + 32 hex, the same for
    every reader of the run."""
    return "msg_" + hashlib.sha256(run_id.encode()).hexdigest()[:32]


def turn_messages(result: TurnResult) -> list[dict[str, Any]]:
    """This turn's assistant and tool messages (the user message left out), client-safe."""
    out = []
    for message in result.messages:
        role = message.get("role")
        if role not in ("assistant", "tool"):
            continue
        item: dict[str, Any] = {"role": role, "content": message.get("content")}
        if message.get("tool_calls"):
            item["tool_calls"] = message["tool_calls"]
        if role == "tool":
            item["tool_call_id"] = message.get("tool_call_id")
            item["tool_name"] = message.get("name")
        out.append(item)
    return out


def approval_json(event: ApprovalRequested) -> dict[str, Any]:
    """A pending approval as the run's status shows it (`PendingApproval.to_json`)."""
    return {
        "request_id": event.call_id,
        "tool_name": event.tool_name,
        "command": event.command,
        "reason": event.reason,
        "grant": event.grant,
        "choices": [c for c in APPROVAL_CHOICES if c != "session" or event.grant is not None],
    }


def _responded(entry: ApprovalResponded) -> Frames:
    return [entry_data(entry)]


class RunFrames:
    """The log → the `GET /v1/runs/{id}/events` vocabulary."""

    def __init__(self) -> None:
        self.result: TurnResult | None = None

    def frames(self, entry: LogEntry) -> Frames:
        match entry:
            case RunOpened():
                return []
            case ApprovalResponded():
                return _responded(entry)
            case RunSettled():
                data: dict[str, Any] = {"status": entry.status}
                if entry.from_result and self.result is not None:
                    data.update(session_id=entry.session_id, output=self.result.final_text,
                                usage=usage_json(self.result.usage))  # fmt: skip
                if entry.reports_error:
                    data.update(error=entry.error, error_code=entry.error_code)
                return [(f"run.{entry.status}", data)]
            case _:
                return self._event(entry)

    def _event(self, event: AgentEvent) -> Frames:
        match event:
            case TurnStarted():
                return [("run.started", {"session_id": event.session_id, "model": event.model})]
            case TextDelta():
                return [("message.delta", {"delta": event.text})]
            case ReasoningDelta():
                return [("reasoning.delta", {"delta": event.text})]
            case ToolStarted():
                return [("tool.started", {"tool": event.name, "call_id": event.call_id, "preview": event.preview,
                                          "arguments": event.arguments})]  # fmt: skip
            case ToolCompleted():
                data = {"tool": event.name, "call_id": event.call_id, "duration": round(event.duration, 3),
                        "is_error": event.is_error}
                return [("tool.completed", data)]
            case ApprovalRequested():
                return [("approval.request", approval_json(event))]
            case Status() | Retrying() | StreamStalled() | ContextCompacted():
                return [("status", status_payload(event))]
            case TurnCompleted():
                self.result = event.result
                return []
            case SegmentEnd() | ToolCallGenerating() | ModelProgress() | ToolOutput() | ClientToolCalls():
                return []  # runs pass no client tools
            case _:
                assert_never(event)


class SessionFrames:
    """The log → the `/api/sessions/{id}/chat/stream` vocabulary (named frames)."""

    def __init__(self, run_id: str) -> None:
        self.message_id = message_id_of(run_id)
        self.result: TurnResult | None = None
        self._segment: list[str] = []
        self._tools: dict[str, tuple[str, dict[str, Any]]] = {}

    def frames(self, entry: LogEntry) -> Frames:
        match entry:
            case RunOpened():
                return [
                    ("run.started", {"user_message": {"role": "user", "content": entry.input},
                                     "runtime": {"model": entry.model}}),
                    ("message.started", {"message": {"id": self.message_id, "role": "assistant"}}),
                ]  # fmt: skip
            case ApprovalResponded():
                return _responded(entry)
            case RunSettled():
                return self._settled(entry)
            case _:
                return self._event(entry)

    def _settled(self, entry: RunSettled) -> Frames:
        result = self.result
        if entry.from_result and result is not None:
            outcome: dict[str, Any] = {"status": entry.status, "completed": entry.status == "completed"}
            if entry.status != "completed":
                outcome.update(error=entry.error, error_code=entry.error_code)
            return [
                ("assistant.completed", {"message_id": self.message_id, "content": result.final_text, **outcome}),
                (f"run.{entry.status}", {"message_id": self.message_id, **outcome,
                                         "messages": turn_messages(result), "usage": usage_json(result.usage),
                                         "turn_status": result.status, "context_tokens": result.context_tokens}),
                ("done", {}),
            ]  # fmt: skip
        if entry.status == "failed":
            return [("error", {"message": entry.error or ""}), ("done", {})]
        data: dict[str, Any] = {"status": entry.status}
        if entry.reports_error:
            data.update(error=entry.error, error_code=entry.error_code)
        return [(f"run.{entry.status}", data), ("done", {})]

    def _event(self, event: AgentEvent) -> Frames:
        mid = self.message_id
        match event:
            case TextDelta():
                self._segment.append(event.text)
                return [("assistant.delta", {"message_id": mid, "delta": event.text})]
            case SegmentEnd():
                text = "".join(self._segment)
                self._segment = []
                if not text.strip():
                    return []
                return [("assistant.commentary", {"message_id": mid, "text": text, "already_streamed": True})]
            case ReasoningDelta():
                return [("tool.progress", {"message_id": mid, "tool_name": THINKING, "delta": event.text})]
            case ToolStarted():
                self._tools[event.call_id] = (event.preview, event.arguments)
                return [("tool.started", {"message_id": mid, "tool_name": event.name, "call_id": event.call_id,
                                          "preview": event.preview, "args": event.arguments})]  # fmt: skip
            case ToolCompleted():
                preview, args = self._tools.pop(event.call_id, ("", event.arguments))
                return [(
                    "tool.failed" if event.is_error else "tool.completed",
                    {"message_id": mid, "tool_name": event.name, "call_id": event.call_id, "preview": preview,
                     "args": args, "duration": round(event.duration, 3), "is_error": event.is_error,
                     "result": event.result},
                )]  # fmt: skip
            case ApprovalRequested():
                return [("approval.request", {"message_id": mid, **approval_json(event)})]
            case Status() | Retrying() | StreamStalled() | ContextCompacted():
                return [("status", status_payload(event))]
            case TurnCompleted():
                self.result = event.result
                return []
            case TurnStarted() | ToolCallGenerating() | ModelProgress() | ToolOutput() | ClientToolCalls():
                return []  # session chat passes no client tools
            case _:
                assert_never(event)


class EngineFrames:
    """The log → the engine's own events (what the remote client reads).

    A run that settled without a result ends with a `TurnCompleted` made from its
    `run.settled`, so the stream of every run ends with exactly one `TurnCompleted`.
    """

    def __init__(self, session_id: str | None) -> None:
        self.session_id = session_id or ""
        self.model = ""

    def frames(self, entry: LogEntry) -> Frames:
        match entry:
            case RunOpened():
                self.model = entry.model or self.model
                return []
            case ApprovalResponded():
                return []
            case RunSettled():
                if entry.from_result:
                    return []  # its TurnCompleted was sent
                return self._event(TurnCompleted(self._ended(entry)))
            case _:
                return self._event(entry)

    def _event(self, event: AgentEvent) -> Frames:
        if isinstance(event, TurnStarted):
            self.session_id, self.model = event.session_id, event.model
        data = event_to_dict(event)
        return [(event.type, data)]

    def _ended(self, entry: RunSettled) -> TurnResult:
        status: TurnStatus = "failed" if entry.status in ("failed", "completed") else "interrupted"
        return TurnResult(
            session_id=entry.session_id or self.session_id,
            status=status,
            final_text="",
            model=self.model,
            error=entry.error,
            error_code=entry.error_code,
        )

    def legacy_end(self) -> Frames:
        result = TurnResult(self.session_id, "failed", "", model=self.model, error=LEGACY_ENGINE_ERROR,
                            error_code=AGENT_ERROR)  # fmt: skip
        return self._event(TurnCompleted(result))


class LogReader:
    """One stream's reading of a run's log: stored entries in, encoded frames out.

    Feed it the log from its first entry (`read`); it returns the frames with ids after
    `after`, in `form`.
    """

    def __init__(self, run_id: str, session_id: str | None, form: StreamForm, *, after: int = 0) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.form = form
        self.after = after
        self._count = 0
        self._legacy: bool | None = None
        self._translator = _translator(run_id, session_id, form)

    def read(self, stored: StoredRunEvent) -> bytes:
        if self._legacy is None:
            self._legacy = is_legacy_log(stored.name)
        if self._legacy:
            return self._legacy_frame(stored)
        try:
            entry = read_entry(stored.name, stored.data)
        except ValueError as exc:  # a damaged entry: the rest of the log still reads
            logger.warning("run %s: entry %d is unreadable: %s", self.run_id, stored.seq, exc)
            return b""
        return b"".join(self._encode(stored, name, data) for name, data in self._translator.frames(entry))

    def _encode(self, stored: StoredRunEvent, name: str, data: dict[str, Any]) -> bytes:
        if self.form == "engine":
            frame_id = stored.seq
        else:
            self._count += 1
            frame_id = self._count
        if frame_id <= self.after:
            return b""
        return _encode(self.form, self.run_id, self.session_id, frame_id, stored.ts, name, data)

    def _legacy_frame(self, stored: StoredRunEvent) -> bytes:
        """An entry of a log written before this form, as it was written."""
        name, data = stored.name, stored.data
        if self.form == "engine":
            if not stored.final or not isinstance(self._translator, EngineFrames):
                return b""
            return b"".join(self._encode(stored, n, d) for n, d in self._translator.legacy_end())
        if name == RUN_SETTLED:  # an orphan sweep of this hermes ended an earlier one's log
            status = str(data.get("status", "interrupted"))
            name = f"run.{status}"
            data = {key: data[key] for key in ("status", "error", "error_code") if key in data}
        if stored.seq <= self.after:
            return b""
        return _encode(self.form, self.run_id, self.session_id, stored.seq, stored.ts, name, data)


def _translator(run_id: str, session_id: str | None, form: StreamForm) -> RunFrames | SessionFrames | EngineFrames:
    match form:
        case "run":
            return RunFrames()
        case "session_chat":
            return SessionFrames(run_id)
        case "engine":
            return EngineFrames(session_id)
        case _:
            assert_never(form)


def _encode(
    form: StreamForm, run_id: str, session_id: str | None, frame_id: int, ts: float, name: str, data: dict[str, Any]
) -> bytes:
    match form:
        case "run":
            return encode_frame({"event": name, "run_id": run_id, "timestamp": ts, **data}, id=frame_id)
        case "session_chat":
            payload = {**data, "session_id": session_id, "run_id": run_id, "seq": frame_id, "ts": ts}
            return encode_frame(payload, event=name, id=frame_id, ensure_ascii=False)
        case "engine":
            return encode_frame(data, event=name, id=frame_id, ensure_ascii=False)
        case _:
            assert_never(form)


def form_of(kind: RunKind, requested: str | None) -> StreamForm:
    """The form of a stream: the engine's when asked for, else the run's own kind."""
    return "engine" if requested == ENGINE_FORM else kind
