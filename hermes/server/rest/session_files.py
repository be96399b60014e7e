"""`/api/sessions/{id}/undo`, `/redo` and `/diff`: a session's file checkpoints.

    POST /api/sessions/{id}/undo   {"turns": N, "force": false}   files back to before the
                                   last N turns, those turns hidden (kept for redo)
    POST /api/sessions/{id}/redo   {"force": false}               the newest undo, undone
    GET  /api/sessions/{id}/diff?turn=N                           turn N's change (default:
                                   the last) as a patch `git apply` accepts, per file counts

Replies: 200 `{"object": "hermes.session.undo"|"hermes.session.redo", "session_id",
"turns": [ids], "files": [paths]}`; the diff's 200 also has `"truncated": true|false`.
400 for a `force` that is not a JSON boolean or `turns` that is not an integer literal
from 1 to 1000 (`param` names the field). 404 (`session_not_found`, word for word as for
an unknown id) for a session whose turns recorded a worktree outside the server's
working directory and its `writable_roots`: the server reaches no other folder's files,
and a client cannot tell such a session from a missing one. 409 while a run is active in the session
(`run_already_active`), when a file changed since the checkpoint (`files_changed`, with
`paths`: nothing was changed), when a path would be written outside the worktree, through a
symlinked folder, or is protected (`restore_refused`, with `paths`; `force` does not
override it; nothing was changed), or when there is nothing to undo or redo
(`nothing_to_undo`; also the diff of a turn the session does not have). The rules are
hermes/checkpoints/undo.py; this module only adapts them.

The diff is capped at `max_diff_bytes`: git's output is read up to the cap and git is
stopped there, and the patch is cut further so that its JSON-escaped form fits the cap
too (`truncated: true`); the file list is cut at the same cap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web

from hermes.agent.safety.restore_guard import restore_guard
from hermes.checkpoints import undo as checkpoints
from hermes.server.http.errors import Conflict, NotFound, RequestValidationError, json_response
from hermes.server.http.request import read_json_object, validate_session_id
from hermes.server.http.route import CLIENT_ERRORS, ERROR, Param, Reply, Route
from hermes.server.http.schema import Body, Boolean, Integer
from hermes.server.http.state import SETTINGS, STORAGE
from hermes.server.rest.background_runs import active_run_id
from hermes.store.api import AsyncSessionStore
from hermes.store.records import SessionRecord

MAX_TURN = 2**31 - 1
"""The largest turn number `?turn=` takes."""

MAX_UNDO_TURNS = 1000
"""The most turns one undo takes back."""

_FORCE = Boolean(strict=True, error=("invalid_force", "'force' must be true or false"))
UNDO_BODY = Body(
    "SessionUndo",
    {
        "turns": Integer(
            minimum=1, maximum=MAX_UNDO_TURNS, strict=True,
            error=("invalid_turns", f"'turns' must be an integer from 1 to {MAX_UNDO_TURNS}"),
        ),
        "force": _FORCE,
    },
)  # fmt: skip
REDO_BODY = Body("SessionRedo", {"force": _FORCE})


def _store(request: web.Request) -> AsyncSessionStore:
    return request.config_dict[STORAGE].sessions


def _not_found(session_id: str) -> NotFound:
    return NotFound(f"Session not found: {session_id}", code="session_not_found")


def _roots(request: web.Request) -> tuple[Path, ...]:
    """The folders whose sessions this server's file API serves: its working directory (where
    its own turns run) and the `writable_roots` setting."""
    return (Path.cwd(), *(Path(root) for root in request.config_dict[SETTINGS].writable_roots))


async def _existing(request: web.Request) -> SessionRecord:
    """The path's session (404 for an unknown or malformed id, or one of another folder)."""
    raw = request.match_info["session_id"]
    try:
        session_id = validate_session_id(raw, param="session_id")
    except RequestValidationError:
        raise NotFound(f"Session not found: {raw[:80]}", code="session_not_found") from None
    record = await _store(request).find_session(session_id)
    if record is None:
        raise _not_found(session_id)
    try:
        await checkpoints.check_roots(_store(request), record.id, _roots(request))
    except checkpoints.OutsideRoots:
        raise _not_found(session_id) from None
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
    try:
        outcome = await checkpoints.undo(
            _store(request), request.config_dict[SETTINGS].home, record.id,
            turns=turns.value(body, "turns") or 1, force=_FORCE.value(body, "force", False), roots=_roots(request),
            guard=restore_guard(request.config_dict[SETTINGS]),
        )  # fmt: skip
    except checkpoints.OutsideRoots:  # a turn of another folder came in since `_existing`
        raise _not_found(record.id) from None
    return json_response({"object": "hermes.session.undo", "session_id": record.id,
                          "turns": list(outcome.turns), "files": list(outcome.files)})  # fmt: skip


async def redo_turns(request: web.Request) -> web.Response:
    record = await _settled(request)
    body = await _body(request, REDO_BODY)
    try:
        outcome = await checkpoints.redo(
            _store(request), request.config_dict[SETTINGS].home, record.id,
            force=_FORCE.value(body, "force", False), roots=_roots(request),
            guard=restore_guard(request.config_dict[SETTINGS]),
        )  # fmt: skip
    except checkpoints.OutsideRoots:
        raise _not_found(record.id) from None
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
    settings = request.config_dict[SETTINGS]
    try:
        change = await checkpoints.turn_changes(
            _store(request), settings.home, record.id, turn, max_bytes=settings.max_diff_bytes, roots=_roots(request)
        )
    except checkpoints.OutsideRoots:
        raise _not_found(record.id) from None
    patch, cut = fit_json(change.patch, settings.max_diff_bytes)
    return json_response({
        "object": "hermes.session.diff", "session_id": record.id, "turn": change.number, "turn_id": change.turn_id,
        "files": [{"path": f.path, "added": f.added, "removed": f.removed, "binary": f.binary} for f in change.files],
        "patch": patch, "truncated": change.truncated or cut,
    })  # fmt: skip


def fit_json(text: str, limit: int) -> tuple[str, bool]:
    """The longest-found prefix of `text` whose JSON string form (ASCII-escaped, as the
    server writes it) holds at most `limit` bytes; True when it was cut.

    Each round cuts in proportion to the overshoot, so a few rounds settle even when
    escapes (control characters, non-ASCII) crowd one part of the text."""
    cut = False
    while (size := len(json.dumps(text)) - 2) > limit:
        text = text[: min(len(text) - 1, len(text) * limit // size)]
        cut = True
    return text, cut


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
