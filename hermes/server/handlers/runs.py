"""Background runs: POST /v1/runs, status, events (SSE with resume), stop, approval.

A run is a turn owned by the `RunRegistry` (hermes/server/runs.py), not by the request
that started it: `POST /v1/runs` answers 202 at once, the turn goes on whether or not
anyone watches, and only `POST /v1/runs/{id}/stop` (or server shutdown) ends it early.

Event streams (`GET /v1/runs/{id}/events`) give every frame an `id: <seq>`; a client
resumes with `Last-Event-ID: <seq>` (or `?after=<seq>`) and receives what it missed,
then the live events. Any number of clients may follow one run. Runs started by the
session chat endpoints are followed the same way, in their own (named) frame format.

This module also holds what the session chat handlers share with it: `start_run`
(admission: capacity, one active run per session) and `stream_run` (the SSE pump).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Mapping
from typing import Any, assert_never

from aiohttp import web

from hermes.agent.events import (
    AgentEvent,
    ApprovalRequested,
    ReasoningDelta,
    Retrying,
    SegmentEnd,
    Status,
    StreamStalled,
    TextDelta,
    ToolCallGenerating,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.types import ApprovalDecision, ChatMessage, TurnRequest, TurnResult, UserContent
from hermes.ids import RUN_ID, new_session_id
from hermes.server.errors import ApiError, Conflict, NotFound, RequestValidationError, json_response
from hermes.server.idempotency import validate_key
from hermes.server.request import (
    coerce_bool,
    flatten_text,
    has_visible_payload,
    normalize_content,
    optional_str,
    read_json_object,
    session_key_header,
    validate_session_id,
)
from hermes.server.runs import (
    APPROVAL_CHOICES,
    ApprovalNotPending,
    EventTranslator,
    Run,
    RunEvent,
    RunKind,
    RunRegistry,
    TurnRunner,
    drive_turn,
)
from hermes.server.sse import ClientDisconnected, SSEStream, encode_frame
from hermes.server.state import AGENT, LIMITER, SETTINGS
from hermes.store.run_store import open_run_store

RUNS = web.AppKey("hermes.runs", RunRegistry)
"""The run registry of this app (set by `init_app`)."""

RUNS_DB = "runs.db"
MAX_SEQ_DIGITS = 18
MAX_MODEL_LENGTH = 256
HISTORY_ROLES = frozenset({"user", "assistant", "system"})


# ---- app wiring --------------------------------------------------------------------------


def init_app(app: web.Application) -> None:
    """Create the registry; open the run store at start-up, settle runs at shutdown."""
    settings = app[SETTINGS]
    registry = RunRegistry(None, max_concurrent=0)  # the app-wide TurnLimiter caps turns
    app[RUNS] = registry

    async def open_store(app: web.Application) -> None:
        settings.ensure_home()
        store = open_run_store(settings.home / RUNS_DB)
        store.recover_orphans()
        store.prune()
        registry.store = store

    async def settle_runs(app: web.Application) -> None:
        await registry.shutdown(timeout=2.0)

    async def close_store(app: web.Application) -> None:
        if registry.store is not None:
            registry.store.close()
            registry.store = None

    app.on_startup.append(open_store)
    app.on_shutdown.append(settle_runs)
    app.on_cleanup.append(close_store)


def registry_of(request: web.Request) -> RunRegistry:
    return request.config_dict[RUNS]


# ---- starting and streaming runs (shared with the session handlers) -----------------------


def start_run(
    request: web.Request,
    *,
    kind: RunKind,
    turn: TurnRequest,
    translator: EventTranslator,
    session_id: str,
) -> Run:
    """Admit and start one background turn. Nothing is written before admission passes.

    Raises:
        Conflict: the session already has a running turn (`run_already_active`).
        RateLimited: the server runs `max_concurrent_runs` turns already (429).
    """
    registry = registry_of(request)
    if registry.closing:
        raise ApiError("The server is shutting down.", status=503, code="server_shutting_down",
                       headers={"Retry-After": "1"})
    busy = registry.active_for_session(session_id)
    if busy is not None:
        raise Conflict(
            "A run is already active for this session",
            code="run_already_active",
            extra={"run_id": busy.run_id},
        )
    admission = contextlib.ExitStack()
    admission.enter_context(request.config_dict[LIMITER].admit())
    settings = request.config_dict[SETTINGS]
    turn.session_id = session_id
    turn.source = "api_server"
    turn.yolo = turn.yolo or settings.yolo
    agent: TurnRunner = request.config_dict[AGENT]  # type: ignore[assignment]
    run = registry.create(kind=kind, session_id=session_id, model=turn.model or _agent_model(agent))
    task = registry.start(run, drive_turn(registry, run, agent, turn, translator))
    task.add_done_callback(lambda _: admission.close())
    return run


def _agent_model(agent: object) -> str | None:
    model = getattr(agent, "model", None)
    return model if isinstance(model, str) else None


def parse_after(request: web.Request) -> int:
    """The last seq the client has: `Last-Event-ID` header, else `?after=`; 0 when absent."""
    raw = request.headers.get("Last-Event-ID")
    param = "Last-Event-ID"
    if raw is None or not raw.strip():
        raw, param = request.query.get("after"), "after"
    if raw is None or not raw.strip():
        return 0
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > MAX_SEQ_DIGITS:
        raise RequestValidationError(
            f"{param} must be a non-negative integer event id", code="invalid_last_event_id", param=param
        )
    return int(text)


def frame(run: Run, event: RunEvent) -> bytes:
    """One SSE frame in the run's format.

    `run` (POST /v1/runs): unnamed, `{"event", "run_id", "timestamp", …}`, ASCII JSON.
    `session_chat`: named `event: <name>`, payload stamped with session_id, run_id, seq, ts.
    """
    if run.kind == "run":
        payload = {"event": event.name, "run_id": run.run_id, "timestamp": event.ts, **event.data}
        return encode_frame(payload, id=event.seq)
    payload = {**event.data, "session_id": run.session_id, "run_id": run.run_id, "seq": event.seq, "ts": event.ts}
    return encode_frame(payload, event=event.name, id=event.seq, ensure_ascii=False)


async def stream_run(
    request: web.Request, run: Run, *, after: int = 0, headers: Mapping[str, str] | None = None
) -> web.StreamResponse:
    """Follow `run` over SSE from `after`. A disconnect ends this stream, never the run."""
    stream = SSEStream(
        request,
        headers={"X-Hermes-Run-Id": run.run_id, **(headers or {})},
        ensure_ascii=run.kind == "run",
    )
    await stream.prepare()

    async def pump() -> None:
        async for event in run.follow(after):
            await stream.send_raw(frame(run, event))

    pumping = asyncio.create_task(pump())
    gone = asyncio.create_task(stream.wait_disconnected())
    try:
        await asyncio.wait({pumping, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pumping, gone):
            task.cancel()
        for task in (pumping, gone):
            with contextlib.suppress(asyncio.CancelledError, ClientDisconnected):
                await task
    await stream.close(comment="stream closed" if run.kind == "run" and not stream.disconnected else None)
    return stream.response


# ---- the /v1/runs event vocabulary ----------------------------------------------------------


def usage_json(result: TurnResult) -> dict[str, int]:
    return {
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "total_tokens": result.usage.total_tokens,
    }


class RunEventsTranslator:
    """Engine events → the `GET /v1/runs/{id}/events` vocabulary."""

    def on_start(self, run: Run) -> None:
        pass

    def on_event(self, run: Run, event: AgentEvent) -> None:
        match event:
            case TurnStarted():
                run.emit("run.started", {"session_id": event.session_id, "model": event.model})
            case TextDelta():
                run.emit("message.delta", {"delta": event.text})
            case ReasoningDelta():
                run.emit("reasoning.delta", {"delta": event.text})
            case ToolStarted():
                run.emit(
                    "tool.started",
                    {"tool": event.name, "call_id": event.call_id, "preview": event.preview, "arguments": event.arguments},
                )
            case ToolCompleted():
                run.emit(
                    "tool.completed",
                    {"tool": event.name, "call_id": event.call_id, "duration": round(event.duration, 3),
                     "error": event.is_error},
                )
            case ApprovalRequested():
                pending = run.approvals.get(event.call_id)
                run.emit("approval.request", pending.to_json() if pending else {"request_id": event.call_id})
            case StreamStalled():
                run.emit("status", {"kind": "stream_stalled", "text": event.message, "tools": list(event.tool_names)})
            case Retrying():
                run.emit("status", {"kind": "retrying", "text": event.reason, "attempt": event.attempt,
                                    "max_attempts": event.max_attempts})
            case Status():
                run.emit("status", {"kind": event.kind, "text": event.text})
            case SegmentEnd() | ToolCallGenerating() | TurnCompleted():
                pass
            case _:
                assert_never(event)

    def on_result(self, run: Run, result: TurnResult, status: str) -> None:
        data: dict[str, Any] = {"status": status, "session_id": run.session_id, "output": result.final_text,
                                "usage": usage_json(result)}
        if status != "completed":
            data["error"] = run.error
            data["error_code"] = run.error_code
        run.emit(f"run.{status}", data)

    def on_error(self, run: Run, message: str) -> None:
        run.emit("run.failed", {"status": "failed", "error": message, "error_code": run.error_code})


# ---- POST /v1/runs ------------------------------------------------------------------------


def _history(value: Any, param: str) -> list[ChatMessage]:
    if not isinstance(value, list):
        raise RequestValidationError(f"'{param}' must be an array of messages", code="invalid_history", param=param)
    history: list[ChatMessage] = []
    for index, item in enumerate(value):
        where = f"{param}[{index}]"
        if not isinstance(item, dict):
            raise RequestValidationError("Each history entry must be an object", code="invalid_history", param=where)
        role = item.get("role")
        if role not in HISTORY_ROLES:
            raise RequestValidationError(
                "History roles must be user, assistant or system", code="invalid_history", param=f"{where}.role"
            )
        content = normalize_content(item.get("content"), f"{where}.content")
        if role == "system":
            content = flatten_text(content)
        history.append({"role": role, "content": content})
    return history


def parse_run_input(body: dict[str, Any]) -> tuple[UserContent, list[ChatMessage] | None]:
    """`input` (a string, or messages whose last one is the turn) → (content, implied history)."""
    raw = body.get("input")
    if raw is None or raw == "" or raw == []:
        raise RequestValidationError("Missing 'input' field", code="missing_input", param="input")
    implied: list[ChatMessage] | None = None
    if isinstance(raw, str):
        content: UserContent = normalize_content(raw, "input")
    elif isinstance(raw, list):
        last = raw[-1]
        where = f"input[{len(raw) - 1}]"
        if isinstance(last, dict) and "content" in last:
            content = normalize_content(last.get("content"), f"{where}.content")
        elif isinstance(last, (str, dict)):
            content = normalize_content(last, where)
        else:
            raise RequestValidationError("Input items must be messages or strings", code="invalid_input", param=where)
        earlier = [item for item in raw[:-1] if isinstance(item, dict) and "role" in item and "content" in item]
        if earlier:
            implied = _history(earlier, "input")
    else:
        raise RequestValidationError("'input' must be a string or an array", code="invalid_input", param="input")
    if not has_visible_payload(content):
        raise RequestValidationError("No user message found in input", code="missing_input", param="input")
    return check_user_content(content, "input"), implied


def check_user_content(content: UserContent, param: str) -> UserContent:
    """A turn's user content must show something and carry no NUL characters."""
    texts = [content] if isinstance(content, str) else [str(p.get("text", "")) for p in content]
    if any("\x00" in text for text in texts):
        raise RequestValidationError("Text must not contain NUL characters", code="invalid_content", param=param)
    return content


def _fingerprint(body: dict[str, Any], session_key: str | None) -> str:
    blob = json.dumps({"body": body, "session_key": session_key or ""}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _receipt_scope(request: web.Request) -> str:
    key = request.config_dict[SETTINGS].server_key or ""
    return hashlib.sha256(b"runs\0" + key.encode("utf-8", "surrogatepass")).hexdigest()


async def create_run(request: web.Request) -> web.Response:
    idem_key = validate_key(request.headers.get("Idempotency-Key"))
    session_key = session_key_header(request)
    body = await read_json_object(request)
    content, implied_history = parse_run_input(body)
    instructions = optional_str(body, "instructions")
    model = optional_str(body, "model")
    if model is not None and (not model.strip() or len(model) > MAX_MODEL_LENGTH):
        raise RequestValidationError("'model' must be a non-empty model name", code="invalid_model", param="model")
    optional_str(body, "previous_response_id")  # accepted for compatibility; not chained here
    raw_session = optional_str(body, "session_id")
    session_id = validate_session_id(raw_session, param="session_id") if raw_session else None
    history = None
    if body.get("conversation_history") is not None:
        history = _history(body["conversation_history"], "conversation_history")
    elif implied_history:
        history = implied_history

    headers = {"X-Hermes-Session-Key": session_key} if session_key else {}
    registry = registry_of(request)
    store = registry.store
    scope = _receipt_scope(request)
    fingerprint = _fingerprint(body, session_key)
    if idem_key is not None and store is not None:
        receipt = store.find_receipt(scope, idem_key)
        if receipt is not None:
            return _replay(registry, receipt.run_id, receipt.fingerprint, fingerprint, headers)

    session_id = session_id or new_session_id()
    turn = TurnRequest(
        input=content,
        history=history,
        system_prompt=flatten_text(normalize_content(instructions, "instructions")) if instructions else None,
        model=model,
    )
    run = start_run(request, kind="run", turn=turn, translator=RunEventsTranslator(), session_id=session_id)
    if idem_key is not None and store is not None:
        store.claim_receipt(scope, idem_key, fingerprint, run.run_id)
    return json_response(
        {"object": "hermes.run", "run_id": run.run_id, "status": "started", "session_id": session_id,
         "replayed": False},
        status=202,
        headers={**headers, "Location": f"/v1/runs/{run.run_id}"},
    )


def _replay(
    registry: RunRegistry, run_id: str, stored: str, given: str, headers: dict[str, str]
) -> web.Response:
    if stored != given:
        raise Conflict(
            "Idempotency-Key was already used with a different request payload",
            code="idempotency_key_conflict",
            param="Idempotency-Key",
        )
    status = registry.status(run_id)
    return json_response(
        {"object": "hermes.run", "run_id": run_id, "status": status["status"] if status else "unknown",
         "session_id": status.get("session_id") if status else None, "replayed": True},
        status=202,
        headers={**headers, "Idempotency-Replayed": "true", "Location": f"/v1/runs/{run_id}"},
    )


# ---- status, events, stop, approval -------------------------------------------------------------


def _run_id(request: web.Request) -> str:
    run_id = request.match_info["run_id"]
    if not RUN_ID.match(run_id):
        raise _not_found(run_id)
    return run_id


def _not_found(run_id: str) -> NotFound:
    return NotFound(f"Run not found: {run_id[:80]}", code="run_not_found")


async def get_run(request: web.Request) -> web.Response:
    run_id = _run_id(request)
    status = registry_of(request).status(run_id)
    if status is None:
        raise _not_found(run_id)
    return json_response(status)


async def run_events(request: web.Request) -> web.StreamResponse:
    run_id = _run_id(request)
    after = parse_after(request)
    registry = registry_of(request)
    run = registry.get(run_id)
    if run is None:
        if registry.status(run_id) is not None:
            raise ApiError(
                f"Events of run {run_id} are no longer kept; GET /v1/runs/{run_id} has its status.",
                status=410,
                type="invalid_request_error",
                code="run_events_expired",
            )
        raise _not_found(run_id)
    return await stream_run(request, run, after=after)


async def stop_run(request: web.Request) -> web.Response:
    run_id = _run_id(request)
    registry = registry_of(request)
    run = registry.get(run_id)
    if run is None:
        status = registry.status(run_id)
        if status is None:
            raise _not_found(run_id)
        if status["status"] in ("completed", "failed", "cancelled", "interrupted"):
            return json_response(status)
        raise Conflict("Run is not active in this server process", code="run_not_active")
    if run.terminal:
        return json_response(run.to_json())
    await registry.stop(run)
    return json_response({"object": "hermes.run", "run_id": run.run_id, "status": run.status})


_CHOICE_ALIASES = {"approve": "once", "approved": "once", "allow": "once", "yes": "once", "reject": "deny", "no": "deny"}


async def approve_run(request: web.Request) -> web.Response:
    run_id = _run_id(request)
    body = await read_json_object(request)
    raw = body.get("choice", body.get("decision"))
    param = "choice" if "choice" in body else "decision"
    if not isinstance(raw, str):
        raise RequestValidationError(
            f"'choice' must be one of: {', '.join(APPROVAL_CHOICES)}", code="invalid_approval_choice", param=param
        )
    choice = _CHOICE_ALIASES.get(raw.strip().lower(), raw.strip().lower())
    if choice not in APPROVAL_CHOICES:
        raise RequestValidationError(
            f"'choice' must be one of: {', '.join(APPROVAL_CHOICES)}", code="invalid_approval_choice", param=param
        )
    request_id = body.get("request_id")
    if request_id is not None and (not isinstance(request_id, str) or not request_id or len(request_id) > 256):
        raise RequestValidationError(
            "'request_id' must be a non-empty string of at most 256 characters",
            code="invalid_approval_request",
            param="request_id",
        )
    resolve_all = coerce_bool(body.get("all", body.get("resolve_all")), False)
    registry = registry_of(request)
    run = registry.get(run_id)
    if run is None:
        if registry.status(run_id) is None:
            raise _not_found(run_id)
        raise Conflict("Run has no active approval session", code="approval_not_active")
    if run.terminal:
        raise Conflict("Run has no active approval session", code="approval_not_active")
    try:
        resolved = run.resolve_approval(ApprovalDecision(choice), request_id, resolve_all=resolve_all)
    except ApprovalNotPending as exc:
        raise Conflict(str(exc), code="approval_not_pending") from None
    data: dict[str, Any] = {"choice": choice, "resolved": resolved}
    if request_id is not None:
        data["request_id"] = request_id
    run.emit("approval.responded", data)
    return json_response({"object": "hermes.run.approval_response", "run_id": run_id, **data})


ROUTES = [
    web.post("/v1/runs", create_run),
    web.get("/v1/runs/{run_id}", get_run, allow_head=False),
    web.get("/v1/runs/{run_id}/events", run_events, allow_head=False),
    web.post("/v1/runs/{run_id}/stop", stop_run),
    web.post("/v1/runs/{run_id}/approval", approve_run),
]


# ---- OpenAPI ----------------------------------------------------------------------------------

_RUN_ID_PARAM = {
    "name": "run_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^run_[0-9a-f]{32}$"},
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, **_json(schema)}


_ERRORS = {
    "400": {"$ref": "#/components/responses/BadRequest"},
    "401": {"$ref": "#/components/responses/Unauthorized"},
    "404": {"$ref": "#/components/responses/NotFound"},
}

OPENAPI_SCHEMAS: dict[str, dict[str, Any]] = {
    "RunStatus": {
        "type": "object",
        "required": ["object", "run_id", "status"],
        "properties": {
            "object": {"const": "hermes.run"},
            "run_id": {"type": "string"},
            "status": {
                "enum": ["queued", "running", "waiting_for_approval", "stopping", "completed", "failed",
                         "cancelled", "interrupted"],
            },
            "created_at": {"type": "number"},
            "updated_at": {"type": "number"},
            "session_id": {"type": ["string", "null"]},
            "model": {"type": ["string", "null"]},
            "last_event": {"type": ["string", "null"]},
            "output": {"type": ["string", "null"]},
            "usage": {"type": ["object", "null"]},
            "error": {"type": ["string", "null"]},
            "error_code": {"type": ["string", "null"]},
            "approval": {"type": "object"},
        },
    },
    "RunCreate": {
        "type": "object",
        "required": ["input"],
        "properties": {
            "input": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1}]},
            "instructions": {"type": "string"},
            "session_id": {"type": "string", "maxLength": 256},
            "model": {"type": "string", "maxLength": 256},
            "conversation_history": {"type": "array", "items": {"type": "object"}},
            "previous_response_id": {"type": "string"},
        },
    },
}

OPENAPI_PATHS: dict[str, dict[str, Any]] = {
    "/v1/runs": {
        "post": {
            "operationId": "createRun",
            "summary": "Start a background turn (202); Idempotency-Key makes retries safe",
            "parameters": [
                {"name": "Idempotency-Key", "in": "header", "required": False,
                 "schema": {"type": "string", "minLength": 1, "maxLength": 255}},
            ],
            "requestBody": {"required": True, **_json({"$ref": "#/components/schemas/RunCreate"})},
            "responses": {
                "202": _ok("Started (or replayed)", {"type": "object"}),
                "409": _ok(
                    "Idempotency-Key reused with another payload, or the session is busy",
                    {"$ref": "#/components/schemas/Error"},
                ),
                "429": {"$ref": "#/components/responses/RateLimited"},
                **_ERRORS,
            },
        }
    },
    "/v1/runs/{run_id}": {
        "get": {
            "operationId": "getRun",
            "summary": "Run status (live, or from the durable store)",
            "parameters": [_RUN_ID_PARAM],
            "responses": {"200": _ok("Status", {"$ref": "#/components/schemas/RunStatus"}), **_ERRORS},
        }
    },
    "/v1/runs/{run_id}/events": {
        "get": {
            "operationId": "getRunEvents",
            "summary": "SSE events with `id:`; resume with Last-Event-ID or ?after=",
            "parameters": [
                _RUN_ID_PARAM,
                {"name": "after", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0}},
                {"name": "Last-Event-ID", "in": "header", "required": False,
                 "schema": {"type": "integer", "minimum": 0}},
            ],
            "responses": {
                "200": {"description": "Event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                "410": _ok("Events expired", {"$ref": "#/components/schemas/Error"}),
                **_ERRORS,
            },
        }
    },
    "/v1/runs/{run_id}/stop": {
        "post": {
            "operationId": "stopRun",
            "summary": "Interrupt a run; it settles `cancelled`",
            "parameters": [_RUN_ID_PARAM],
            "responses": {
                "200": _ok("Stopping, or already settled", {"type": "object"}),
                "409": _ok("Not active here", {"$ref": "#/components/schemas/Error"}),
                **_ERRORS,
            },
        }
    },
    "/v1/runs/{run_id}/approval": {
        "post": {
            "operationId": "approveRun",
            "summary": "Answer the run's pending command approval",
            "parameters": [_RUN_ID_PARAM],
            "requestBody": {
                "required": True,
                **_json({
                    "type": "object",
                    "required": ["choice"],
                    "properties": {
                        "choice": {"enum": ["once", "session", "deny", "approve", "approved", "allow"]},
                        "request_id": {"type": "string", "minLength": 1, "maxLength": 256},
                        "all": {"type": "boolean"},
                    },
                }),
            },
            "responses": {
                "200": _ok("Resolved", {"type": "object"}),
                "409": _ok("Nothing pending", {"$ref": "#/components/schemas/Error"}),
                **_ERRORS,
            },
        }
    },
}
