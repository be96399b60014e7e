"""Which session a request names, and the headers that tell the client which one answered.

Names (one place for every endpoint): `SESSION_ID_HEADER` continues a stored session,
`SESSION_KEY_HEADER` is the client's own label, echoed back and part of an
Idempotency-Key's fingerprint (it picks no session), `PLACEMENT_HEADER` says how a
conversation that named no session was placed, `CHAT_ID_HEADER` is Open WebUI's chat id.

Reading (`requested_session`): each endpoint says which ways of naming a session it
accepts (`Way`); the first of these that the request uses wins:

1. ``header``: `X-Hermes-Session-Id` (chat completions). Stripped; blank = absent; needs an
   API key (403 ``session_id_requires_auth``); the id must be path-safe (400
   ``invalid_session_id``, param the header).
2. ``body``: the body's ``session_id`` (runs). Empty = absent; path-safe (400
   ``invalid_session_id``, param ``session_id``).
3. ``chat_id``: the client's own chat, `X-OpenWebUI-Chat-Id`, else the body's
   ``metadata.chat_id`` (chat completions, Responses), stripped, blank = absent. It names no
   session outright: `hermes.server.openai.conversation` places the chat (keyed).

A request that names none of these gets its session elsewhere: a Responses chain
(``previous_response_id``, ``conversation``), the placement of a resent conversation, or
a fresh id. `session_key` reads `X-Hermes-Session-Key` (the preamble of every turn).

Writing (`session_headers`): the session id, the key when the request sent one, the
placement when the conversation was placed; the same dict goes on a JSON answer and on
an SSE stream's head.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from hermes.server.http.errors import PermissionDenied, RequestValidationError
from hermes.server.http.request import MAX_HEADER_VALUE, has_control, has_server_key, validate_session_id

__all__ = [
    "CHAT_ID_HEADER",
    "EXPOSED_HEADERS",
    "PLACEMENT_HEADER",
    "SESSION_ID_HEADER",
    "SESSION_KEY_HEADER",
    "RequestedSession",
    "Way",
    "requested_session",
    "session_headers",
    "session_key",
]

SESSION_ID_HEADER = "X-Hermes-Session-Id"
SESSION_KEY_HEADER = "X-Hermes-Session-Key"
PLACEMENT_HEADER = "X-Hermes-Session-Placement"
"""How a conversation that named no session was placed (`hermes.server.openai.conversation.How`)."""
CHAT_ID_HEADER = "X-OpenWebUI-Chat-Id"
EXPOSED_HEADERS = (SESSION_ID_HEADER, SESSION_KEY_HEADER)
"""The session headers a browser client may read (CORS expose and allow lists)."""

Way = Literal["header", "body", "chat_id"]
"""A way of naming a session, in precedence order (see the module docstring)."""
_PRECEDENCE: tuple[Way, ...] = ("header", "body", "chat_id")


@dataclass(frozen=True, slots=True)
class RequestedSession:
    """The session a request names: at most one of `session_id` and `chat_key` is set."""

    session_id: str | None = None
    """A stored session to continue (or create), named outright."""
    chat_key: str | None = None
    """The client's own chat id, to be placed as a keyed conversation."""
    named_by: Way | None = None
    """Which way named it; None when the request names no session."""


def session_key(request: web.Request) -> str | None:
    """`X-Hermes-Session-Key`: stripped; empty = absent; needs an API key; ≤256 chars."""
    raw = request.headers.get(SESSION_KEY_HEADER)
    if raw is None:
        return None
    value = raw.strip()
    if not value:
        return None
    if not has_server_key(request):
        raise PermissionDenied(
            f"{SESSION_KEY_HEADER} requires API key authentication. "
            "Configure API_SERVER_KEY to enable this feature.",
            code="session_key_requires_auth",
        )
    if has_control(value):
        raise RequestValidationError("Invalid session key", code="invalid_session_key")
    if len(value) > MAX_HEADER_VALUE:
        raise RequestValidationError("Session key too long", code="invalid_session_key")
    return value


def requested_session(request: web.Request, body: Mapping[str, Any], *ways: Way) -> RequestedSession:
    """The session `request` (with its parsed `body`) names by the first of `ways` (the
    endpoint's, any order) it uses, in the precedence of the module docstring."""
    for way in _PRECEDENCE:
        if way not in ways:
            continue
        if way == "header":
            found = _header_session(request)
            if found is not None:
                return RequestedSession(session_id=found, named_by=way)
        elif way == "body":
            raw = body.get("session_id")
            if isinstance(raw, str) and raw:
                return RequestedSession(session_id=validate_session_id(raw, param="session_id"), named_by=way)
        else:
            key = _chat_key(request.headers, body)
            if key is not None:
                return RequestedSession(chat_key=key, named_by=way)
    return RequestedSession()


def _header_session(request: web.Request) -> str | None:
    raw = request.headers.get(SESSION_ID_HEADER)
    if raw is None or not raw.strip():
        return None
    if not has_server_key(request):
        raise PermissionDenied(
            "Session continuation requires API key authentication. "
            "Configure API_SERVER_KEY to enable this feature.",
            code="session_id_requires_auth",
        )
    return validate_session_id(raw.strip(), param=SESSION_ID_HEADER)


def _chat_key(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    raw = headers.get(CHAT_ID_HEADER)
    if raw is None or not raw.strip():
        metadata = body.get("metadata")
        value = metadata.get("chat_id") if isinstance(metadata, dict) else None
        raw = value if isinstance(value, str) else None
    return raw.strip() if raw is not None and raw.strip() else None


def session_headers(session_id: str, key: str | None, *, placement: str | None = None) -> dict[str, str]:
    """The headers naming the session that answered (see the module docstring)."""
    headers = {SESSION_ID_HEADER: session_id}
    if key is not None:
        headers[SESSION_KEY_HEADER] = key
    if placement is not None:
        headers[PLACEMENT_HEADER] = placement
    return headers
