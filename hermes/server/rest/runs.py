"""Background runs: POST /v1/runs, status, events (SSE with resume), stop, approval.

A run is a turn owned by the `RunRegistry` (hermes/runs/registry.py), not by the
request that started it: `POST /v1/runs` answers 202 at once, the turn goes on whether
or not anyone watches, and only `POST /v1/runs/{id}/stop` (or server shutdown) ends it
early. Admission, the driver and the SSE follower are `hermes.server.rest.background_runs`,
shared with the session chat endpoints; the `/v1/runs` wire format is translated from the
run's log when a stream is read (`hermes.server.rest.run_frames.RunFrames`).

Event streams (`GET /v1/runs/{id}/events`) give every frame an `id: <seq>`; a client
resumes with `Last-Event-ID: <seq>` (or `?after=<seq>`) and receives what it missed,
then the live events. Any number of clients may follow one run.

Any instance sharing the storage answers for any run: status and events come from the
storage, and a stop or approval for a run owned by another instance is relayed to its
owner over the storage's control channel (`CONTROL_TIMEOUT` for the owner's answer).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hermes import api_paths
from hermes.agent.types import (
    ChatMessage,
    TurnRequest,
    UserContent,
)
from hermes.ids import RUN_ID, new_session_id
from hermes.runs.idempotency import fingerprint
from hermes.runs.registry import (
    APPROVAL_CHOICES,
    ApprovalNotActive,
    ApprovalNotPending,
)
from hermes.runs.sweeper import sweep_once
from hermes.runs.utility import flatten_text
from hermes.server.http.errors import (
    ApiError,
    Conflict,
    NotFound,
    RequestValidationError,
    json_response,
)
from hermes.server.http.idempotent import Answer, answered, read_preamble
from hermes.server.http.request import (
    CONTENT_DOC,
    MAX_HEADER_VALUE,
    TEXT_PART_TYPES,
    coerce_bool,
    has_visible_payload,
    normalize_content,
    read_json_object,
)
from hermes.server.http.request_session import requested_session, session_headers
from hermes.server.http.route import (
    CLIENT_ERRORS,
    ERROR,
    IDEMPOTENCY_KEY,
    RATE_LIMITED,
    Component,
    Param,
    Reply,
    Route,
)
from hermes.server.http.schema import (
    CONTENT_PARTS_DOC,
    TEXT_PART_DOC,
    Anything,
    Array,
    Body,
    Boolean,
    String,
)
from hermes.server.http.state import SETTINGS, STORAGE
from hermes.server.rest.background_runs import (
    EVENTS_FORM_PARAM,
    MAX_MODEL_LENGTH,
    MAX_SEQ_DIGITS,
    StreamTarget,
    check_user_content,
    parse_after,
    registry_of,
    remote_target,
    requested_form,
    start_run,
    stream_run,
)
from hermes.server.rest.turn_mode import MODE_FIELD, requested_mode
from hermes.store.api import ControlUnanswered
from hermes.store.records import ControlMessage, ControlReply, RunRecord

HISTORY_ROLES = frozenset({"user", "assistant", "system"})
CONTROL_TIMEOUT = 5.0
"""Seconds a stop or approval relayed to the run's owner waits for its answer."""


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
        if not isinstance(role, str) or role not in HISTORY_ROLES:
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
        for index, item in enumerate(raw):  # strings, text parts or messages (RUN_INPUT_ITEM_DOC)
            is_message = isinstance(item, dict) and "role" in item and "content" in item
            kind = item.get("type") if isinstance(item, dict) else None
            is_part = isinstance(kind, str) and kind in TEXT_PART_TYPES and isinstance(item.get("text"), str)
            if not (isinstance(item, str) or is_message or is_part):
                raise RequestValidationError(
                    "Input items must be messages, text parts or strings",
                    code="invalid_input",
                    param=f"input[{index}]",
                )
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



_MODEL_ERROR = ("invalid_model", "'model' must be a non-empty model name")

RUN_INPUT_ITEM_DOC = {
    "anyOf": [
        {"type": "string"},
        TEXT_PART_DOC,
        {"type": "object", "required": ["role", "content"],
         "properties": {"role": {"enum": sorted(HISTORY_ROLES)}, "content": CONTENT_DOC}},
    ]
}
"""An `input` item: a string, a text part, or a message (`parse_run_input`)."""
_SEQ_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 10**MAX_SEQ_DIGITS - 1}
"""An event id (`parse_after`: at most MAX_SEQ_DIGITS digits)."""
HISTORY_ITEM_DOC = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"enum": sorted(HISTORY_ROLES)},
        "content": {"anyOf": [{"type": "string"}, CONTENT_PARTS_DOC, {"type": "null"}]},
    },
}
"""One `conversation_history` entry, as `_history` checks it."""

RUN_CREATE = Body(
    "RunCreate",
    {
        "input": Anything(
            required=True,
            documented={"oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "minItems": 1, "items": RUN_INPUT_ITEM_DOC},
            ]},
        ),
        "instructions": String(),
        "model": String(min_length=1, max_length=MAX_MODEL_LENGTH, value_error=_MODEL_ERROR),
        "previous_response_id": String(description="Accepted for compatibility; runs are not chained."),
        "session_id": String(max_length=MAX_HEADER_VALUE, value_error=("invalid_session_id", "Session ID too long")),
        "conversation_history": Array(
            items=Anything(documented=HISTORY_ITEM_DOC),
            error=("invalid_history", "'{name}' must be an array of messages"),
        ),
        "mode": MODE_FIELD,
    },
)
"""`input`, the history items and the session id's characters are checked by the parsers
below (per-item params such as ``input[1].role``)."""
RUN_CREATE_FIELDS = tuple(RUN_CREATE.properties)
"""What an Idempotency-Key's fingerprint covers (with the session key): every field a run reads."""

RUN_APPROVAL = Body(
    "RunApproval",
    {
        "choice": Anything(
            required=True, documented={"enum": ["once", "session", "deny", "approve", "approved", "allow"]}
        ),
        "request_id": String(
            min_length=1,
            max_length=256,
            error=("invalid_approval_request", "'request_id' must be a non-empty string of at most 256 characters"),
        ),
        "all": Boolean(),
    },
)
"""`choice` (or its alias `decision`) is matched case-insensitively, with aliases, by `approve_run`."""


async def create_run(request: web.Request) -> web.StreamResponse:
    preamble = await read_preamble(request)
    body = preamble.body
    RUN_CREATE.validate(body)
    content, implied_history = parse_run_input(body)
    instructions: str | None = body.get("instructions")
    model: str | None = body.get("model")
    if model is not None and not model.strip():
        raise RequestValidationError(_MODEL_ERROR[1], code=_MODEL_ERROR[0], param="model")
    asked = requested_session(request, body, "body")
    history = None
    if body.get("conversation_history") is not None:
        history = _history(body["conversation_history"], "conversation_history")
    elif implied_history:
        history = implied_history
    turn = TurnRequest(
        input=content,
        history=history,
        system_prompt=flatten_text(normalize_content(instructions, "instructions")) if instructions else None,
        model=model,
        mode=requested_mode(body),
    )

    async def run(watch: bool) -> Answer:  # after the Idempotency-Key's receipt: a replay starts nothing
        session_id = asked.session_id or new_session_id()
        started = await start_run(request, kind="run", turn=turn, session_id=session_id)
        return Answer(
            202,
            {"object": "hermes.run", "run_id": started.run_id, "status": "started", "session_id": session_id,
             "replayed": False},
            {**session_headers(session_id, preamble.session_key), "Location": f"{api_paths.RUNS}/{started.run_id}"},
        )

    async def replayed(answer: Answer) -> Answer:
        """A replay names the same run, with its status now."""
        run_id = str(answer.body["run_id"])
        status = await registry_of(request).status(run_id)
        now = {"status": status["status"], "session_id": status.get("session_id")} if status else {"status": "unknown"}
        return Answer(
            202, {**answer.body, **now, "replayed": True}, {**answer.headers, "Idempotency-Replayed": "true"}
        )

    return await answered(
        request, preamble, run, endpoint="runs",
        fingerprint=lambda: fingerprint(body, RUN_CREATE_FIELDS, session_key=preamble.session_key),
        ttl=request.config_dict[STORAGE].receipts.retention, replayed=replayed, refuse_reuse=True,
    )  # fmt: skip


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
    status = await registry_of(request).status(run_id)
    if status is None:
        raise _not_found(run_id)
    return json_response(status)


async def run_events(request: web.Request) -> web.StreamResponse:
    run_id = _run_id(request)
    after = parse_after(request)
    requested_form(request)
    registry = registry_of(request)
    run = registry.get(run_id)
    if run is not None:
        return await stream_run(request, StreamTarget.of(run), after=after)
    record = await registry.record(run_id)
    if record is None:
        raise _not_found(run_id)
    storage = request.config_dict[STORAGE]
    stored = await storage.run_events.read_after(run_id, 0, limit=1)
    # Events kept in the process that runs the run: none here means none anywhere.
    if not stored and (record.terminal or not storage.caps.run_events_survive_process):
        raise ApiError(
            f"Events of run {run_id} are no longer kept; GET /v1/runs/{run_id} has its status.",
            status=410,
            type="invalid_request_error",
            code="run_events_expired",
        )
    return await stream_run(request, await remote_target(request, run_id, record.session_id), after=after)


async def _relay(request: web.Request, record: RunRecord, message: ControlMessage) -> ControlReply:
    """Send `message` to the run's owner and return its answer.

    An owner that does not answer within CONTROL_TIMEOUT may be dead: on PostgreSQL one
    sweep runs at once, and a run it settled answers "not active" (its row says why);
    otherwise 503 `run_owner_unavailable`.
    """
    storage = request.config_dict[STORAGE]
    owner = record.owner_instance
    if owner is None or owner == storage.instance_id:
        return ControlReply(ok=False, code="run_not_active", message="Run is not active in this server process")
    try:
        return await storage.control.request(owner, message, timeout=CONTROL_TIMEOUT)
    except ControlUnanswered:
        pass
    if storage.caps.multi_instance:
        # The owner may be dead: settle its orphans now rather than at the next sweep.
        await sweep_once(storage, ttl=request.config_dict[SETTINGS].instance_lease_ttl)
        settled = await storage.runs.get(record.run_id)
        if settled is not None and settled.terminal:
            return ControlReply(ok=False, code="run_not_active", message="Run has settled")
    raise ApiError(
        f"The instance running {record.run_id} did not answer; if it is gone, the run "
        "is settled as interrupted shortly.",
        status=503,
        type="server_error",
        code="run_owner_unavailable",
        headers={"Retry-After": "1"},
    )


async def stop_run(request: web.Request) -> web.Response:
    run_id = _run_id(request)
    registry = registry_of(request)
    run = registry.get(run_id)
    if run is None:
        record = await registry.record(run_id)
        if record is None:
            raise _not_found(run_id)
        if record.terminal:
            return json_response(record.to_json())
        reply = await _relay(request, record, ControlMessage("stop", run_id))
        if not reply.ok:
            settled = await registry.record(run_id)
            if settled is not None and settled.terminal:  # it settled while the message travelled
                return json_response(settled.to_json())
            raise Conflict(reply.message or "Run is not active", code=reply.code or "run_not_active")
        return json_response({"object": "hermes.run", "run_id": run_id, "status": reply.data.get("status")})
    if run.terminal:
        return json_response(run.to_json())
    await registry.stop(run)
    return json_response({"object": "hermes.run", "run_id": run.run_id, "status": run.status})


_CHOICE_ALIASES = {
    "approve": "once", "approved": "once", "allow": "once", "yes": "once", "reject": "deny", "no": "deny"
}


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
    RUN_APPROVAL.validate({**body, "choice": raw})
    request_id: str | None = body.get("request_id")
    resolve_all = coerce_bool(body.get("all", body.get("resolve_all")), False)
    registry = registry_of(request)
    run = registry.get(run_id)
    if run is None:
        record = await registry.record(run_id)
        if record is None:
            raise _not_found(run_id)
        if record.terminal:
            raise Conflict("Run has no active approval session", code="approval_not_active")
        args: dict[str, Any] = {"choice": choice, "all": resolve_all}
        if request_id is not None:
            args["request_id"] = request_id
        reply = await _relay(request, record, ControlMessage("approval", run_id, args))
        if not reply.ok:
            if reply.code in (None, "run_not_active"):
                raise Conflict("Run has no active approval session", code="approval_not_active")
            raise Conflict(reply.message or "Run has no active approval session", code=reply.code)
        data = reply.data
    else:
        try:
            data = run.answer_approval(choice, request_id, resolve_all=resolve_all)
        except ApprovalNotActive as exc:
            raise Conflict(str(exc), code="approval_not_active") from None
        except ApprovalNotPending as exc:
            raise Conflict(str(exc), code="approval_not_pending") from None
    return json_response({"object": "hermes.run.approval_response", "run_id": run_id, **data})


# ---- routes -------------------------------------------------------------------------------------

RUN_STATUS = Component(
    "RunStatus",
    {
        "type": "object",
        "required": ["object", "run_id", "status"],
        "properties": {
            "object": {"const": "hermes.run"},
            "run_id": {"type": "string"},
            "status": {
                "enum": [
                    "queued",
                    "running",
                    "waiting_for_approval",
                    "stopping",
                    "completed",
                    "failed",
                    "cancelled",
                    "interrupted",
                ],
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
)

_RUN_ID = Param("run_id", "path", {"type": "string", "pattern": "^run_[0-9a-f]{32}$"})
_NOT_ANSWERED = Reply("The instance running it did not answer", ERROR)

ROUTES = (
    Route(
        "POST",
        api_paths.RUNS,
        create_run,
        operation_id="createRun",
        endpoint="runs",
        summary="Start a background turn (202); Idempotency-Key makes retries safe",
        parameters=(IDEMPOTENCY_KEY,),
        body=RUN_CREATE,
        responses={
            202: Reply("Started (or replayed)", {"type": "object"}),
            409: Reply("The session is busy, or this Idempotency-Key's first request is still being answered", ERROR),
            429: RATE_LIMITED,
            **CLIENT_ERRORS,
        },
    ),
    Route(
        "GET",
        "/v1/runs/{run_id}",
        get_run,
        operation_id="getRun",
        endpoint="run_status",
        summary="Run status (live, or from the durable store)",
        parameters=(_RUN_ID,),
        responses={200: Reply("Status", RUN_STATUS), **CLIENT_ERRORS},
    ),
    Route(
        "GET",
        "/v1/runs/{run_id}/events",
        run_events,
        operation_id="getRunEvents",
        endpoint="run_events",
        summary="SSE events with `id:`; resume with Last-Event-ID or ?after=",
        parameters=(_RUN_ID, Param("after", "query", _SEQ_SCHEMA), Param("Last-Event-ID", "header", _SEQ_SCHEMA),
                    EVENTS_FORM_PARAM),
        responses={200: Reply("Event stream", sse=True), 410: Reply("Events expired", ERROR), **CLIENT_ERRORS},
    ),
    Route(
        "POST",
        "/v1/runs/{run_id}/stop",
        stop_run,
        operation_id="stopRun",
        endpoint="run_stop",
        summary="Interrupt a run; it settles `cancelled`",
        parameters=(_RUN_ID,),
        responses={
            200: Reply("Stopping, or already settled", {"type": "object"}),
            409: Reply("Not active here", ERROR),
            503: _NOT_ANSWERED,
            **CLIENT_ERRORS,
        },
    ),
    Route(
        "POST",
        "/v1/runs/{run_id}/approval",
        approve_run,
        operation_id="approveRun",
        endpoint="run_approval",
        summary="Answer the run's pending command approval",
        parameters=(_RUN_ID,),
        body=RUN_APPROVAL,
        responses={
            200: Reply("Resolved", {"type": "object"}),
            409: Reply("Nothing pending", ERROR),
            503: _NOT_ANSWERED,
            **CLIENT_ERRORS,
        },
    ),
)
