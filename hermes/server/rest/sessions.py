"""The sessions REST API: /api/sessions CRUD, paged messages, fork, chat, chat/stream, search.

Sessions are the rows of the shared session store (`state.db`): the ones the TUI and
CLI made are listed here too, and every turn run through this API is one more session
row with source `api_server`.

`chat` and `chat/stream` run their turn as a background run of the `RunRegistry`
(see hermes/server/rest/background_runs.py), so a stream's client may disconnect without
stopping the turn; it reattaches with `GET /v1/runs/{run_id}/events` (or by posting
to `chat/stream` again with `Last-Event-ID`) and answers approvals with
`POST /v1/runs/{run_id}/approval`. History always comes from the store.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiohttp import web

from hermes import api_paths
from hermes.agent.engine import session_folder
from hermes.agent.types import TurnRequest, UserContent
from hermes.checkpoints import undo as checkpoints
from hermes.errors import MessageNotFound
from hermes.ids import new_session_id
from hermes.runs.registry import Run
from hermes.runs.utility import flatten_text
from hermes.runs.wire import Outcome, usage_json
from hermes.server.http.errors import (
    AgentIncomplete,
    ApiError,
    Conflict,
    NotFound,
    RequestValidationError,
    json_response,
)
from hermes.server.http.request import (
    MAX_HEADER_VALUE,
    SESSION_ID_PATTERN,
    has_visible_payload,
    normalize_content,
    read_json_object,
    validate_session_id,
)
from hermes.server.http.request_session import session_headers, session_key
from hermes.server.http.route import CLIENT_ERRORS, ERROR, RATE_LIMITED, Param, Reply, Route
from hermes.server.http.schema import (
    CONTENT_PARTS_DOC,
    TURN_PARTS_DOC,
    TURN_TEXT_DOC,
    Anything,
    Body,
    Integer,
    String,
    Text,
)
from hermes.server.http.state import SETTINGS, STORAGE
from hermes.server.rest.background_runs import (
    EVENTS_FORM_PARAM,
    MAX_MODEL_LENGTH,
    StreamTarget,
    active_run_id,
    check_user_content,
    parse_after,
    registry_of,
    requested_form,
    start_run,
    stream_run,
)
from hermes.server.rest.run_frames import turn_messages
from hermes.server.rest.session_shapes import (
    MESSAGE_PAGE,
    SESSION_ENVELOPE,
    SESSION_PAGE,
    message_json,
    session_json,
)
from hermes.server.rest.turn_mode import MODE_FIELD, requested_mode
from hermes.store.api import AsyncSessionStore
from hermes.store.records import SessionRecord

MAX_TITLE = 256
MAX_SYSTEM_PROMPT = 65_536
MAX_END_REASON = 64
LIST_LIMIT = (50, 200)
"""(default, maximum) of `GET /api/sessions?limit=`."""
MESSAGES_LIMIT = (100, 500)
PATCHABLE = frozenset({"title", "end_reason"})
KNOWN_UNSUPPORTED = frozenset({"pinned", "archived", "hidden", "unread"})


# ---- JSON shapes ----------------------------------------------------------------------


async def _costs(request: web.Request, session_ids: list[str]) -> dict[str, float | None]:
    """Each session's cost in US dollars from its usage rows; None where a model's price is unknown."""
    prices = request.app[SETTINGS].prices
    return prices.per_session(await _store(request).session_usage(session_ids), session_ids)


async def _session_envelope(request: web.Request, record: SessionRecord, status: int = 200) -> web.Response:
    run = await registry_of(request).active_anywhere(record.id)
    cost = (await _costs(request, [record.id]))[record.id]
    return json_response(
        {"object": "hermes.session", "session": session_json(record, run, cost_usd=cost)}, status=status
    )


# ---- request parsing --------------------------------------------------------------------


def _store(request: web.Request) -> AsyncSessionStore:
    return request.config_dict[STORAGE].sessions


def _path_session_id(request: web.Request) -> str:
    raw = request.match_info["session_id"]
    try:
        return validate_session_id(raw, param="session_id")
    except RequestValidationError:
        raise NotFound(f"Session not found: {raw[:80]}", code="session_not_found") from None


async def _existing(request: web.Request) -> SessionRecord:
    session_id = _path_session_id(request)
    record = await _store(request).find_session(session_id)
    if record is None:
        raise NotFound(f"Session not found: {session_id}", code="session_not_found")
    return record


async def _optional_body(request: web.Request) -> dict[str, Any]:
    """The JSON object body, or {} when the request has none."""
    if not request.body_exists:
        return {}
    if request.content_length == 0:
        return {}
    return await read_json_object(request)


def _int_query(request: web.Request, name: str, default: int, *, low: int, high: int | None = None) -> int:
    given = request.query.getall(name, [])
    if len(given) > 1:
        raise RequestValidationError(f"'{name}' must be given once", code=f"invalid_{name}", param=name)
    raw = given[0] if given else None
    if raw is None:
        return default
    text = raw.strip()
    if not text.isascii() or not text.lstrip("-").isdigit() or len(text) > _QUERY_INT_DIGITS:
        raise RequestValidationError(f"'{name}' must be an integer", code=f"invalid_{name}", param=name)
    value = int(text)
    if value < low or (high is not None and value > high):
        bound = f" between {low} and {high}" if high is not None else f" of at least {low}"
        raise RequestValidationError(f"'{name}' must be an integer{bound}", code=f"invalid_{name}", param=name)
    return value


SOURCE_PATTERN = "^[A-Za-z0-9_-]{1,64}$"
SOURCE_RE = re.compile(SOURCE_PATTERN)
"""A session source: a short identifier (``api_server``, ``cli``, ``my-tool``)."""
_QUERY_INT_DIGITS = 12
_OFFSET_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 10**_QUERY_INT_DIGITS - 1}

_SESSION_ID = String(
    max_length=MAX_HEADER_VALUE,
    pattern=SESSION_ID_PATTERN,
    error=("invalid_session_id", "'{name}' must be a string"),
    value_error=("invalid_session_id", "Session ID too long"),
)
_TITLE = Text(code="invalid_title", min_length=1, max_length=MAX_TITLE)
_MODEL = Text(code="invalid_model", min_length=1, max_length=MAX_MODEL_LENGTH)
_AT_MESSAGE_ID = Integer(minimum=1, error=("invalid_message_id", "'at_message_id' must be a positive integer"))
_END_REASON = Text(code="invalid_end_reason", min_length=1, max_length=MAX_END_REASON)

SESSION_CREATE = Body(
    "SessionCreate",
    {
        "id": _SESSION_ID,
        "title": _TITLE,
        "system_prompt": Text(code="invalid_system_prompt", max_length=MAX_SYSTEM_PROMPT, multiline=True),
        "source": Anything(documented={"type": "string", "pattern": "^$|" + SOURCE_PATTERN}),
        "model": _MODEL,
    },
)
"""`session_id` is accepted as an alias of `id`; ids are path-safe (`validate_session_id`)."""
SESSION_PATCH = Body("SessionPatch", {"title": _TITLE, "end_reason": _END_REASON}, closed=True)
SESSION_FORK = Body(
    "SessionFork",
    {
        "title": _TITLE,
        "at_message_id": _AT_MESSAGE_ID,
    },
)
SESSION_CHAT = Body(
    "SessionChat",
    {
        "message": Anything(
            required=True,
            documented={"anyOf": [TURN_TEXT_DOC, TURN_PARTS_DOC]},
            description="`input` is accepted as an alias.",
        ),
        "system_message": Anything(
            documented={"anyOf": [{"type": "string"}, CONTENT_PARTS_DOC]},
            description="`instructions` is accepted as an alias.",
        ),
        "model": _MODEL,
        "mode": MODE_FIELD,
    },
)


def _title(body: dict[str, Any]) -> str | None:
    title = _TITLE.text(body, "title")
    if title is not None and not title.strip():
        raise RequestValidationError("'title' must not be blank", code="invalid_title", param="title")
    return title.strip() if title is not None else None


# ---- CRUD -------------------------------------------------------------------------------


async def list_sessions(request: web.Request) -> web.Response:
    limit = _int_query(request, "limit", LIST_LIMIT[0], low=1, high=LIST_LIMIT[1])
    offset = _int_query(request, "offset", 0, low=0)
    source = request.query.get("source") or None
    if source is not None and not SOURCE_RE.fullmatch(source):
        raise RequestValidationError("'source' is not a valid source name", code="invalid_source", param="source")
    cwd = _folder_query(request)
    store = _store(request)
    prefix = request.query.get("id_prefix")
    if prefix is not None:
        # The sessions whose id starts with it (how a client resolves a short id); one page.
        if not prefix or len(prefix) > 256:
            raise RequestValidationError("'id_prefix' must be 1 to 256 characters", param="id_prefix")
        records = await store.sessions_with_prefix(prefix, limit=limit)
        total = len(records)
    else:
        records = await store.list_sessions(limit=limit, offset=offset, source=source, cwd=cwd)
        total = await store.count_sessions(source=source, cwd=cwd)
    registry = registry_of(request)
    active = await asyncio.gather(*(registry.active_anywhere(r.id) for r in records))  # indexed lookups
    costs = await _costs(request, [r.id for r in records])
    return json_response(
        {
            "object": "list",
            "data": [session_json(r, run, cost_usd=costs[r.id]) for r, run in zip(records, active, strict=True)],
            "limit": limit,
            "offset": offset,
            "total": total,
            "has_more": offset + len(records) < total,
        }
    )


def _folder_query(request: web.Request) -> str | None:
    """`?cwd=`: the sessions of that folder (an absolute path, compared as recorded)."""
    cwd = request.query.get("cwd")
    if cwd is None:
        return None
    if not cwd.startswith("/") or len(cwd) > 4096 or "\x00" in cwd:
        raise RequestValidationError("'cwd' must be an absolute path", code="invalid_cwd", param="cwd")
    return cwd


async def create_session(request: web.Request) -> web.Response:
    body = await _optional_body(request)
    raw_id = body.get("id", body.get("session_id"))
    id_param = "id" if "id" in body else "session_id"
    _SESSION_ID.check(raw_id, id_param)
    session_id = validate_session_id(raw_id, param=id_param) if raw_id else None
    title = _title(body)
    system_prompt = SESSION_CREATE.text(body, "system_prompt")
    raw_source = body.get("source")
    if raw_source is not None and not isinstance(raw_source, str):
        raise RequestValidationError("'source' must be a string", code="invalid_source", param="source")
    source = raw_source or "api_server"
    if not SOURCE_RE.fullmatch(source):
        raise RequestValidationError("'source' must be a short identifier", code="invalid_source", param="source")
    model = _MODEL.text(body, "model")
    store = _store(request)
    if session_id is not None and await store.find_session(session_id) is not None:
        raise Conflict(f"Session already exists: {session_id}", code="session_exists", param=id_param)
    record = await store.create_session(
        source=source,
        model=model,
        title=title,
        system_prompt=system_prompt,
        session_id=session_id or new_session_id(),
        cwd=session_folder(None),  # the server's folder: where its turns run the tools
    )
    return await _session_envelope(request, record, status=201)


async def get_session(request: web.Request) -> web.Response:
    return await _session_envelope(request, await _existing(request))


async def patch_session(request: web.Request) -> web.Response:
    record = await _existing(request)
    body = await read_json_object(request)
    for name in body:
        if name not in PATCHABLE:
            detail = " (not stored by hermes)" if name in KNOWN_UNSUPPORTED else ""
            raise RequestValidationError(
                f"Field '{name[:64]}' cannot be changed{detail}; supported: title, end_reason",
                code="unsupported_session_field",
                param=name[:64],
            )
    title = _title(body)
    end_reason = _END_REASON.text(body, "end_reason")
    if end_reason is not None and not end_reason.strip():
        raise RequestValidationError("'end_reason' must not be blank", code="invalid_end_reason", param="end_reason")
    store = _store(request)
    if title is not None:
        await store.rename_session(record.id, title)
    if end_reason is not None:
        await store.end_session(record.id, end_reason.strip())
    return await _session_envelope(request, await store.get_session(record.id))


async def delete_session(request: web.Request) -> web.Response:
    record = await _existing(request)
    busy = await active_run_id(request, record.id)
    if busy is not None:
        raise Conflict("A run is active for this session; stop it first", code="run_already_active",
                       extra={"run_id": busy})  # fmt: skip
    await checkpoints.delete_session(_store(request), request.config_dict[SETTINGS].home, record.id)
    return json_response({"object": "hermes.session.deleted", "id": record.id, "deleted": True})


async def session_messages(request: web.Request) -> web.Response:
    record = await _existing(request)
    limit = _int_query(request, "limit", MESSAGES_LIMIT[0], low=1, high=MESSAGES_LIMIT[1])
    offset = _int_query(request, "offset", 0, low=0)
    order = request.query.get("order", "oldest")
    if order not in ("oldest", "latest"):
        raise RequestValidationError("'order' must be oldest or latest", code="invalid_order", param="order")
    store = _store(request)
    if order == "oldest":
        rows = await store.get_messages(record.id, limit=limit, offset=offset)
    else:
        total = (await store.get_session(record.id)).message_count
        end = max(0, total - offset)
        start = max(0, end - limit)
        rows = list(reversed(await store.get_messages(record.id, limit=end - start, offset=start))) if end else []
    return json_response(
        {
            "object": "list",
            "session_id": record.id,
            "data": [message_json(row) for row in rows],
            "pagination": {"limit": limit, "offset": offset, "order": order, "returned": len(rows)},
        }
    )


async def fork_session(request: web.Request) -> web.Response:
    record = await _existing(request)
    body = await _optional_body(request)
    if body.get("id") is not None or body.get("session_id") is not None:
        raise RequestValidationError(
            "Choosing the id of a fork is not supported", code="unsupported_session_field", param="id"
        )
    title = _title(body)
    at = _AT_MESSAGE_ID.value(body, "at_message_id")
    try:
        fork = await _store(request).fork_session(record.id, at_message_id=at, title=title, source="api_server")
    except MessageNotFound as exc:  # the session exists (not a 404); its state lacks that message
        raise Conflict(exc.message, code=exc.code, param="at_message_id") from None
    return await _session_envelope(request, fork, status=201)


SEARCH_LIMIT = (20, 200)
"""(default, maximum) of `GET /api/search?limit=`."""


async def search_sessions(request: web.Request) -> web.Response:
    """Full-text search of message text, best match first (`hermes sessions search`)."""
    query = request.query.get("q", "").strip()
    if not query:
        raise RequestValidationError("Missing 'q' (the words to find)", code="missing_query", param="q")
    limit = _int_query(request, "limit", SEARCH_LIMIT[0], low=1, high=SEARCH_LIMIT[1])
    source = request.query.get("source") or None
    if source is not None and not SOURCE_RE.fullmatch(source):
        raise RequestValidationError("'source' is not a valid source name", code="invalid_source", param="source")
    hits = await _store(request).search(query, limit=limit + 1, source=source)
    data = [
        {"object": "search_hit", "session": session_json(hit.session), "message_id": hit.message_id,
         "role": hit.role, "snippet": hit.snippet}
        for hit in hits[:limit]
    ]  # fmt: skip
    return json_response({"object": "list", "data": data, "has_more": len(hits) > limit})


# ---- chat -------------------------------------------------------------------------------------


def _chat_input(body: dict[str, Any]) -> tuple[UserContent, str | None, str | None]:
    """(user content, system prompt, model) from a chat body."""
    name = "message" if "message" in body else "input"
    raw = body.get(name)
    if raw is None:
        raise RequestValidationError("Missing 'message' field", code="missing_message", param="message")
    content = normalize_content(raw, name)
    if not has_visible_payload(content):
        raise RequestValidationError("Missing 'message' field", code="missing_message", param=name)
    check_user_content(content, name)
    system = None
    prompt_name = "system_message" if "system_message" in body else "instructions"
    raw_system = body.get(prompt_name)
    if raw_system is not None:
        if not isinstance(raw_system, (str, list)):
            raise RequestValidationError(
                f"'{prompt_name}' must be a string", code="invalid_system_prompt", param=prompt_name
            )
        system = flatten_text(normalize_content(raw_system, prompt_name)) or None
    model = _MODEL.text(body, "model")
    if model is not None and not model.strip():
        raise RequestValidationError("'model' must be a non-empty model name", code="invalid_model", param="model")
    return content, system, model


def _chat_headers(record: SessionRecord, run: Run | None, key: str | None) -> dict[str, str]:
    headers = session_headers(record.id, key)
    if run is not None:
        headers["X-Hermes-Run-Id"] = run.run_id
    return headers


async def _start_chat(request: web.Request, record: SessionRecord, body: dict[str, Any]) -> Run:
    content, system, model = _chat_input(body)
    turn = TurnRequest(input=content, system_prompt=system, model=model, mode=requested_mode(body))
    return await start_run(
        request, kind="session_chat", turn=turn, session_id=record.id
    )


async def session_chat(request: web.Request) -> web.Response:
    key = session_key(request)
    record = await _existing(request)
    body = await read_json_object(request)
    run = await _start_chat(request, record, body)
    await registry_of(request).wait(run)
    headers = _chat_headers(record, run, key)
    result = run.result
    outcome = Outcome.of(result)
    usage = usage_json(result.usage) if result is not None else None
    text = result.final_text if result is not None else ""
    if outcome.hard_failure:
        raise AgentIncomplete(
            outcome.error or run.error or "Agent run did not produce a response.",
            extra={"hermes": outcome.hermes},
            headers=headers,
        )
    data: dict[str, Any] = {
        "object": "hermes.session.chat.completion",
        "status": run.status,
        "session_id": record.id,
        "run_id": run.run_id,
        "message": {"role": "assistant", "content": text},
        "messages": turn_messages(result) if result is not None else [],
        "usage": usage,
        "runtime": {"model": run.model},
    }
    if outcome.hermes is not None:
        data["hermes"] = outcome.hermes
    return json_response(data, headers={**headers, **outcome.headers()})


async def session_chat_stream(request: web.Request) -> web.StreamResponse:
    key = session_key(request)
    requested_form(request)  # a bad `?events=` is refused before a turn starts
    record = await _existing(request)
    if request.headers.get("Last-Event-ID") is not None:
        # A reconnect: follow the session's latest run from where the client was.
        after = parse_after(request)
        target = await _resume_target(request, record)
    else:
        after = 0
        body = await read_json_object(request)
        target = StreamTarget.of(await _start_chat(request, record, body))
    return await stream_run(request, target, after=after, headers=_chat_headers(record, None, key))


async def _resume_target(request: web.Request, record: SessionRecord) -> StreamTarget:
    """The session's newest run to resume: one running here, else the newest any instance
    stored (its events come from the storage wherever it runs)."""
    run = registry_of(request).latest_for_session(record.id)
    if run is not None:
        return StreamTarget.of(run)
    storage = request.config_dict[STORAGE]
    stored = await storage.runs.latest_for_session(record.id)
    if stored is None:
        raise NotFound("No run of this session to resume", code="run_not_found")
    # Events that live in their run's process are gone with it.
    gone = stored.terminal or not storage.caps.run_events_survive_process
    if gone and not await storage.run_events.read_after(stored.run_id, 0, limit=1):
        raise ApiError(
            f"Events of run {stored.run_id} are no longer kept; GET /v1/runs/{stored.run_id} has its status.",
            status=410,
            type="invalid_request_error",
            code="run_events_expired",
        )
    return StreamTarget(stored.run_id, "session_chat", record.id)


# ---- routes -------------------------------------------------------------------------------------

_SESSIONS = api_paths.SESSIONS
_ONE_SESSION = "/api/sessions/{session_id}"
_SID = Param("session_id", "path", {"type": "string", "maxLength": 256})
_OFFSET = Param("offset", "query", _OFFSET_SCHEMA)
_BUSY = Reply("A run is active", ERROR)

ROUTES = (
    Route(
        "GET",
        _SESSIONS,
        list_sessions,
        operation_id="listSessions",
        endpoint="sessions",
        summary="Sessions, newest activity first",
        parameters=(
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": LIST_LIMIT[1]}),
            _OFFSET,
            Param("source", "query", {"type": "string", "pattern": "^$|" + SOURCE_PATTERN}),
            Param("cwd", "query", {"type": "string", "pattern": r"^/[^\x00]*$", "maxLength": 4096}),
            Param("id_prefix", "query", {"type": "string", "minLength": 1, "maxLength": 256}),
        ),
        responses={200: Reply("A page", SESSION_PAGE), **CLIENT_ERRORS},
    ),
    Route(
        "POST",
        _SESSIONS,
        create_session,
        operation_id="createSession",
        endpoint="session_create",
        summary="Create a session",
        body=SESSION_CREATE,
        body_required=False,
        responses={201: Reply("Created", SESSION_ENVELOPE), 409: Reply("Exists", ERROR), **CLIENT_ERRORS},
    ),
    Route(
        "GET",
        _ONE_SESSION,
        get_session,
        operation_id="getSession",
        endpoint="session",
        parameters=(_SID,),
        responses={200: Reply("The session", SESSION_ENVELOPE), **CLIENT_ERRORS},
    ),
    Route(
        "PATCH",
        _ONE_SESSION,
        patch_session,
        operation_id="patchSession",
        endpoint="session_update",
        parameters=(_SID,),
        body=SESSION_PATCH,
        responses={200: Reply("Updated", SESSION_ENVELOPE), **CLIENT_ERRORS},
    ),
    Route(
        "DELETE",
        _ONE_SESSION,
        delete_session,
        operation_id="deleteSession",
        endpoint="session_delete",
        parameters=(_SID,),
        responses={200: Reply("Deleted", {"type": "object"}), 409: _BUSY, **CLIENT_ERRORS},
    ),
    Route(
        "GET",
        "/api/sessions/{session_id}/messages",
        session_messages,
        operation_id="getSessionMessages",
        endpoint="session_messages",
        parameters=(
            _SID,
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": MESSAGES_LIMIT[1]}),
            _OFFSET,
            Param("order", "query", {"enum": ["oldest", "latest"]}),
        ),
        responses={200: Reply("A page of messages", MESSAGE_PAGE), **CLIENT_ERRORS},
    ),
    Route(
        "POST",
        "/api/sessions/{session_id}/fork",
        fork_session,
        operation_id="forkSession",
        endpoint="session_fork",
        parameters=(_SID,),
        body=SESSION_FORK,
        body_required=False,
        responses={
            201: Reply("The fork", SESSION_ENVELOPE),
            **CLIENT_ERRORS,
            409: Reply("No such message in the session", ERROR),
        },
    ),
    Route(
        "GET",
        api_paths.SEARCH,
        search_sessions,
        operation_id="searchSessions",
        endpoint="session_search",
        summary="Full-text search of message text, best match first",
        parameters=(
            Param("q", "query", {"type": "string", "minLength": 1, "pattern": r"\S"}, required=True),
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT[1]}),
            Param("source", "query", {"type": "string", "pattern": "^$|" + SOURCE_PATTERN}),
        ),
        responses={200: Reply("Hits: session, message_id, role, snippet", {"type": "object"}), **CLIENT_ERRORS},
    ),
    Route(
        "POST",
        "/api/sessions/{session_id}/chat",
        session_chat,
        operation_id="sessionChat",
        endpoint="session_chat",
        summary="One turn with the stored history",
        parameters=(_SID,),
        body=SESSION_CHAT,
        responses={
            200: Reply("The answer", {"type": "object"}),
            409: _BUSY,
            429: RATE_LIMITED,
            502: Reply("No usable answer", ERROR),
            **CLIENT_ERRORS,
        },
    ),
    Route(
        "POST",
        "/api/sessions/{session_id}/chat/stream",
        session_chat_stream,
        operation_id="sessionChatStream",
        endpoint="session_chat_stream",
        summary="One streamed turn (SSE, named events with id:)",
        parameters=(_SID, EVENTS_FORM_PARAM),
        body=SESSION_CHAT,
        responses={200: Reply("Event stream", sse=True), 409: _BUSY, 429: RATE_LIMITED, **CLIENT_ERRORS},
    ),
)
