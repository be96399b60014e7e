"""Typed HTTP errors and the OpenAI error envelope.

Handlers raise `ApiError` subclasses with structured fields; the error middleware
(`hermes.server.http.middleware.request_middleware`) turns every one of them — and every
`HermesError`, aiohttp `HTTPException` and unexpected exception — into one body shape:

    {"error": {"message": str, "type": str, "param": str | None, "code": str | None, ...extra}}

Nothing encodes a code inside a message string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from hermes.error_codes import AGENT_INCOMPLETE
from hermes.errors import (
    ConfigError,
    FilesChangedOutside,
    HermesError,
    MessageNotFound,
    NothingToUndo,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimited,
    RestoreRefused,
    RunAlreadyActive,
    ServiceClosing,
    SessionNotFound,
    StoreError,
    TooManyTurns,
    TurnInProgress,
    UsageError,
)


class ApiError(Exception):
    """An error with an HTTP status and an OpenAI envelope.

    Attributes:
        status: HTTP status code.
        message: human-readable text (never carries a code prefix).
        type: OpenAI error type (invalid_request_error, server_error, rate_limit_error…).
        code: machine-readable code, or None.
        param: the offending request field (e.g. ``messages[2].content``), or None.
        headers: extra response headers (e.g. ``Retry-After``).
        extra: additional keys merged into the ``error`` object (e.g. ``hermes``).
    """

    status: int = 500
    type: str = "server_error"
    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if type is not None:
            self.type = type
        if code is not None:
            self.code = code
        self.param = param
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.message, type=self.type, code=self.code, param=self.param, **self.extra)

    def to_response(self) -> web.Response:
        return json_response(self.body(), status=self.status, headers=self.headers)


class RequestValidationError(ApiError):
    """A malformed request: bad JSON, a missing or mistyped field, a bad header."""

    status = 400
    type = "invalid_request_error"


class AuthenticationError(ApiError):
    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"

    def __init__(self, message: str = "Invalid API key") -> None:
        super().__init__(message)


class PermissionDenied(ApiError):
    status = 403
    type = "invalid_request_error"
    code = "forbidden"


class NotFound(ApiError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"


class Conflict(ApiError):
    status = 409
    type = "invalid_request_error"
    code = "conflict"


class PayloadTooLarge(ApiError):
    status = 413
    type = "invalid_request_error"
    code = "body_too_large"

    def __init__(self, message: str = "Request body too large.") -> None:
        super().__init__(message)


class RateLimited(ApiError):
    status = 429
    type = "rate_limit_error"
    code = "rate_limit_exceeded"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class AgentIncomplete(ApiError):
    """The agent produced no usable answer (502 with the `hermes` outcome block)."""

    status = 502
    type = "server_error"
    code = AGENT_INCOMPLETE


def error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The OpenAI error envelope."""
    error: dict[str, Any] = {"message": message, "type": type, "param": param, "code": code}
    error.update(extra)
    return {"error": error}


def json_response(
    data: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON response (ASCII-escaped, like the reference server)."""
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers=headers,
        content_type="application/json",
    )


_HTTP_CODES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "bad_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    413: ("invalid_request_error", "body_too_large"),
    415: ("invalid_request_error", "unsupported_media_type"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def from_http_exception(exc: web.HTTPException) -> ApiError:
    """Translate an aiohttp HTTPException (router 404/405, body too large…)."""
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return PayloadTooLarge()
    status = exc.status
    type_, code = _HTTP_CODES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    headers = {k: v for k, v in exc.headers.items() if k.lower() in ("allow", "retry-after")}
    message = exc.reason or "Error"
    if isinstance(exc, web.HTTPNotFound):
        message = "Not found"
    elif isinstance(exc, web.HTTPMethodNotAllowed):
        message = f"Method {exc.method} not allowed"
    return ApiError(message, status=status, type=type_, code=code, headers=headers)


def from_hermes_error(exc: HermesError) -> ApiError:
    """Translate a deliberate hermes error raised below the HTTP layer."""
    if isinstance(exc, (SessionNotFound, MessageNotFound)):
        return NotFound(exc.message, code=exc.code)
    if isinstance(exc, RunAlreadyActive):
        return Conflict(exc.message, code=exc.code, extra={"run_id": exc.run_id} if exc.run_id is not None else None)
    if isinstance(exc, (FilesChangedOutside, RestoreRefused)):
        return Conflict(exc.message, code=exc.code, extra={"paths": exc.paths})
    if isinstance(exc, (NothingToUndo, TurnInProgress)):
        return Conflict(exc.message, code=exc.code)
    if isinstance(exc, TooManyTurns):
        return RateLimited(exc.message)
    if isinstance(exc, ServiceClosing):
        return ApiError(exc.message, status=503, code=exc.code, headers={"Retry-After": "1"})
    if isinstance(exc, UsageError):
        return RequestValidationError(exc.message, code=exc.code)
    if isinstance(exc, ProviderRateLimited):
        return ApiError(exc.message, status=429, type="rate_limit_error", code=exc.code, headers={"Retry-After": "1"})
    if isinstance(exc, ProviderAuthError):
        return ApiError(exc.message, status=502, type="server_error", code=exc.code)
    if isinstance(exc, ProviderError):
        return ApiError(exc.message, status=502, type="server_error", code=exc.code)
    if isinstance(exc, StoreError):
        return ApiError(exc.message, status=503, type="server_error", code=exc.code)
    if isinstance(exc, ConfigError):
        return ApiError(exc.message, status=500, type="server_error", code=exc.code)
    return ApiError(exc.message, status=500, type="server_error", code=exc.code)
