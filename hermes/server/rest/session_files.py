"""`/api/sessions/{id}/undo`, `/redo` and `/diff`: a session's file checkpoints.

    POST /api/sessions/{id}/undo   {"turns": N, "force": false}   files back to before the
                                   last N turns, those turns hidden (kept for redo)
    POST /api/sessions/{id}/redo   {"force": false}               the newest undo, undone
    GET  /api/sessions/{id}/diff?turn=N                           turn N's change (default:
                                   the last) as a patch `git apply` accepts, per file counts

Replies: 200 `{"object": "hermes.session.undo"|"hermes.session.redo", "session_id",
"turns": [ids], "files": [paths]}`; 409 while a run is active in the session
(`run_already_active`), when a file changed since the checkpoint (`files_changed`, with
`paths`: nothing was changed), when a path would be written outside the worktree, through a
symlinked folder, or is protected (`restore_refused`, with `paths`; `force` does not
override it; nothing was changed), or when there is nothing to undo or redo
(`nothing_to_undo`; also the diff of a turn the session does not have). The rules are
hermes/checkpoints/undo.py; this module only adapts them.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hermes.agent.restore_guard import restore_guard
from hermes.checkpoints import undo as checkpoints
from hermes.server.http.errors import Conflict, NotFound, RequestValidationError, json_response
from hermes.server.http.request import coerce_bool, read_json_object, validate_session_id
from hermes.server.http.route import CLIENT_ERRORS, ERROR, Param, Reply, Route
from hermes.server.http.schema import Body, Boolean, Integer
from hermes.server.http.state import SETTINGS, STORAGE
from hermes.server.rest.background_runs import active_run_id
from hermes.store.api import AsyncSessionStore
from hermes.store.records import SessionRecord

MAX_TURN = 2**31 - 1
"""The largest turn number `?turn=` takes."""

UNDO_BODY = Body(
    "SessionUndo",
    {
        "turns": Integer(minimum=1, error=("invalid_turns", "'turns' must be a positive integer")),
        "force": Boolean(),
    },
)
REDO_BODY = Body("SessionRedo", {"force": Boolean()})


def _store(request: web.Request) -> AsyncSessionStore:
    return request.config_dict[STORAGE].sessions


async def _existing(request: web.Request) -> SessionRecord:
    """The path's session (404 for an unknown or malformed id)."""
    raw = request.match_info["session_id"]
    try:
        session_id = validate_session_id(raw, param="session_id")
    except RequestValidationError:
        raise NotFound(f"Session not found: {raw[:80]}", code="session_not_found") from None
    record = await _store(request).find_session(session_id)
    if record is None:
        raise NotFound(f"Session not found: {session_id}", code="session_not_found")
    return record


async def _settled(request: web.Request) -> SessionRecord:
    """The path's session, refused with 409 while a run is active in it."""
    record = await _existing(request)
    busy = await active_run_id(request, record.id)
    if busy is not None:
        raise Conflict("A run is active for this session; stop it first", code="run_already_active",
                       extra={"run_id": busy})  # fmt: skip
    return record


async def _body(request: web.Request, schema: Body) -> dict[str, Any]:
    body = await read_json_object(request) if request.body_exists and request.content_length != 0 else {}
    schema.validate(body)
    return body


async def undo_turns(request: web.Request) -> web.Response:
    record = await _settled(request)
    body = await _body(request, UNDO_BODY)
    turns = UNDO_BODY.properties["turns"]
    assert isinstance(turns, Integer)
    outcome = await checkpoints.undo(
        _store(request), request.config_dict[SETTINGS].home, record.id,
        turns=turns.value(body, "turns") or 1, force=coerce_bool(body.get("force"), False),
        guard=restore_guard(request.config_dict[SETTINGS]),
    )  # fmt: skip
    return json_response({"object": "hermes.session.undo", "session_id": record.id,
                          "turns": list(outcome.turns), "files": list(outcome.files)})  # fmt: skip


async def redo_turns(request: web.Request) -> web.Response:
    record = await _settled(request)
    body = await _body(request, REDO_BODY)
    outcome = await checkpoints.redo(
        _store(request), request.config_dict[SETTINGS].home, record.id, force=coerce_bool(body.get("force"), False),
        guard=restore_guard(request.config_dict[SETTINGS]),
    )
    return json_response({"object": "hermes.session.redo", "session_id": record.id,
                          "turns": list(outcome.turns), "files": list(outcome.files)})  # fmt: skip


async def turn_diff(request: web.Request) -> web.Response:
    record = await _existing(request)
    raw = request.query.get("turn")
    turn: int | None = None
    if raw is not None:
        if not raw.isascii() or not raw.isdigit() or len(raw) > 10 or not 1 <= int(raw) <= MAX_TURN:
            raise RequestValidationError("'turn' must be a positive integer", code="invalid_turn", param="turn")
        turn = int(raw)
    change = await checkpoints.turn_changes(_store(request), request.config_dict[SETTINGS].home, record.id, turn)
    return json_response({
        "object": "hermes.session.diff", "session_id": record.id, "turn": change.number, "turn_id": change.turn_id,
        "files": [{"path": f.path, "added": f.added, "removed": f.removed, "binary": f.binary} for f in change.files],
        "patch": change.patch,
    })  # fmt: skip


_SID = Param("session_id", "path", {"type": "string", "maxLength": 256})
_OUTCOME = Reply("What was restored", {"type": "object"})
_REFUSED = Reply("A run is active, a file changed since the checkpoint, or nothing to undo", ERROR)

ROUTES = (
    Route(
        "POST", "/api/sessions/{session_id}/undo", undo_turns,
        operation_id="undoSessionTurns", endpoint="session_undo", parameters=(_SID,),
        body=UNDO_BODY, body_required=False,
        responses={200: _OUTCOME, 409: _REFUSED, **CLIENT_ERRORS},
    ),
    Route(
        "POST", "/api/sessions/{session_id}/redo", redo_turns,
        operation_id="redoSessionTurns", endpoint="session_redo", parameters=(_SID,),
        body=REDO_BODY, body_required=False,
        responses={200: _OUTCOME, 409: _REFUSED, **CLIENT_ERRORS},
    ),
    Route(
        "GET", "/api/sessions/{session_id}/diff", turn_diff,
        operation_id="getSessionDiff", endpoint="session_diff",
        parameters=(_SID, Param("turn", "query", {"type": "integer", "minimum": 1, "maximum": MAX_TURN})),
        responses={
            200: Reply("The turn's patch and per-file counts", {"type": "object"}),
            409: Reply("No such turn in the session", ERROR),
            **CLIENT_ERRORS,
        },
    ),
)  # fmt: skip
