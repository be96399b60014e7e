"""One middleware (`request_middleware`) and a response hook. The middleware runs these
steps in this order, each a plain function (one coroutine layer per request, not six):

0. metrics — counts requests for /health/detailed (every request, failed ones too).
1. errors — every failure of the steps below and of the handler becomes the OpenAI error
   envelope (`ApiError`, `HermesError`, aiohttp `HTTPException`, anything else → 500).
2. CORS (`check_cors`) — requests carrying a non-allowed ``Origin`` get 403; ``OPTIONS``
   preflights are answered here (200 for allowed origins, 403 otherwise).
3. auth (`check_auth`) — bearer key, constant-time comparison on bytes; only the paths of
   `public` routes (the route table's `open_paths`: liveness) and preflights are open.
   With no key configured every route is open (`hermes serve` refuses that off loopback).
4. body limit (`check_body_limit`) — declared bodies over 10 MB → 413, bad Content-Length
   → 400 (chunked bodies are capped by the app's ``client_max_size`` and mapped to the
   same 413).
5. JSON guard (`guard_json_body`) — JSON bodies with a lone UTF-16 surrogate or an integer
   beyond Python's digit limit → 400 (they parse, but nothing downstream could carry them).

Requests aiohttp's own parser rejects never reach these: `hermes.server.http.protocol`
answers them with the same envelope.

`on_response_prepare` adds the security headers and the CORS headers to *every*
response just before its head is written, including SSE responses prepared inside a
handler — which is why SSE writers never have to remember CORS themselves.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from hermes.errors import HermesError
from hermes.server.http.errors import (
    ApiError,
    AuthenticationError,
    PayloadTooLarge,
    PermissionDenied,
    RequestValidationError,
    from_hermes_error,
    from_http_exception,
)
from hermes.server.http.request import PARSED_BODY
from hermes.server.http.request_session import EXPOSED_HEADERS
from hermes.server.http.state import METRICS, ROUTE_TABLE, SETTINGS

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MAX_REQUEST_BYTES = 10_000_000

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "X-XSS-Protection": "0",
    "Referrer-Policy": "no-referrer",
}

CORS_ALLOW_METHODS = "GET, POST, PATCH, DELETE, OPTIONS"
CORS_ALLOW_HEADERS = ", ".join(
    ("Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", *EXPOSED_HEADERS, "X-Hermes-Tool-Progress")
)
CORS_EXPOSE_HEADERS = ", ".join(EXPOSED_HEADERS)
CORS_MAX_AGE = "600"


# ---- CORS -------------------------------------------------------------------------------


def origin_allowed(origins: tuple[str, ...], origin: str) -> bool:
    """Requests without an Origin (non-browser clients) always pass."""
    if not origin:
        return True
    return "*" in origins or origin in origins


def cors_headers(origins: tuple[str, ...], origin: str) -> dict[str, str] | None:
    """The CORS headers for an allowed browser origin, else None."""
    if not origin or not origins or not origin_allowed(origins, origin):
        return None
    headers = {
        "Access-Control-Allow-Methods": CORS_ALLOW_METHODS,
        "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS,
        "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS,
        "Access-Control-Max-Age": CORS_MAX_AGE,
    }
    if "*" in origins:
        headers["Access-Control-Allow-Origin"] = "*"
    else:
        headers["Access-Control-Allow-Origin"] = origin
        headers["Vary"] = "Origin"
    return headers


def check_cors(request: web.Request, origins: tuple[str, ...]) -> web.StreamResponse | None:
    """403 for a non-allowed Origin; the answer to a preflight; None: go on."""
    headers = request.headers
    origin = headers.get("Origin", "")
    if origin and not origin_allowed(origins, origin):
        raise PermissionDenied("Origin not allowed", code="origin_not_allowed")
    if request.method == "OPTIONS" and headers.get("Access-Control-Request-Method"):
        # A preflight: answered here for every path; CORS headers come from on_response_prepare.
        return web.Response(status=200)
    return None


# ---- auth -------------------------------------------------------------------------------


def check_bearer(expected: str | None, authorization: str | None) -> bool:
    """Constant-time bearer check on UTF-8 bytes; never raises for odd input."""
    if expected is None:
        return True
    if not authorization:
        return False
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    given = token.strip().encode("utf-8", "surrogatepass")
    return hmac.compare_digest(given, expected.encode("utf-8", "surrogatepass"))


def check_auth(request: web.Request, key: str | None, open_paths: frozenset[str]) -> None:
    """401 unless the bearer key matches, the path is open, or no key is configured."""
    if (
        key is not None
        and request.path not in open_paths
        and not check_bearer(key, request.headers.get("Authorization"))
    ):
        log.warning("auth failed: %s %s from %s", request.method, request.path[:200], request.remote)
        raise AuthenticationError()


# ---- body limit ---------------------------------------------------------------------------


def check_body_limit(request: web.Request) -> None:
    """413 for a declared body over MAX_REQUEST_BYTES, 400 for a bad Content-Length."""
    raw = request.headers.get("Content-Length")
    if raw is not None:
        try:
            length = int(raw)
            if length < 0:
                raise ValueError(raw)
        except ValueError:
            raise RequestValidationError("Invalid Content-Length header.", code="invalid_content_length") from None
        if length > MAX_REQUEST_BYTES:
            raise PayloadTooLarge()


# ---- JSON bodies that parse but cannot be used ---------------------------------------------

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def has_lone_surrogate(value: Any) -> bool:
    """True when any string (key or value) in the parsed JSON holds a lone UTF-16 surrogate.

    Such strings cannot be encoded as UTF-8, so no store, upstream or response could take them.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _may_hold_surrogates(raw: bytes) -> bool:
    """False when `raw` cannot decode to a lone surrogate, so the parsed body need not be walked.

    A surrogate comes from a ``\\u`` escape, from UTF-8 surrogate bytes (0xED 0xA0-0xBF, which
    json.loads lets through) or from a UTF-16/32 body (whose ASCII characters hold 0x00 bytes).
    """
    return b"\\u" in raw or b"\xed" in raw or b"\x00" in raw


async def guard_json_body(request: web.Request) -> None:
    """400 for JSON bodies Python parses but hermes cannot carry: lone surrogates, huge integers.

    Bodies that are not valid JSON pass through: each handler reports those itself
    ("Invalid JSON in request body"). The body stays cached on the request for the handler,
    and so does the parsed value (`PARSED_BODY`, taken by `read_json_object`): parsed once.
    Only for a request that may carry a body (BODY_METHODS, `can_read_body`).
    """
    raw = await request.read()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        data = None  # the handler's own JSON error
    except ValueError:  # int() beyond sys.get_int_max_str_digits
        raise RequestValidationError(
            "Invalid JSON in request body: a number has too many digits", code="invalid_json"
        ) from None
    if data is not None and _may_hold_surrogates(raw) and has_lone_surrogate(data):
        raise RequestValidationError(
            "Invalid JSON in request body: a string holds a lone UTF-16 surrogate", code="invalid_json"
        )
    request[PARSED_BODY] = data


# ---- the middleware ------------------------------------------------------------------------


@web.middleware
async def request_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The steps of the module docstring, in order, around `handler`."""
    app = request.app
    metrics = app.get(METRICS)
    if metrics is not None:
        metrics.requests += 1
        metrics.last_request_at = time.time()
    try:
        settings = app[SETTINGS]
        preflight = check_cors(request, settings.server_cors_origins)
        if preflight is not None:
            return preflight
        check_auth(request, settings.server_key, app[ROUTE_TABLE].open_paths)
        check_body_limit(request)
        if request.method in BODY_METHODS and request.can_read_body:
            await guard_json_body(request)
        return await handler(request)
    except ApiError as exc:
        return exc.to_response()
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return from_http_exception(exc).to_response()
    except HermesError as exc:
        return from_hermes_error(exc).to_response()
    except (ConnectionResetError, ConnectionAbortedError):
        raise  # the client is gone: nothing to answer
    except Exception as exc:
        log.exception("unhandled error in %s %s", request.method, request.path)
        error = ApiError(f"Internal server error: {exc}", status=500, type="server_error", code="internal_error")
        return error.to_response()


# ---- headers on every response ------------------------------------------------------------


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    settings = request.app.get(SETTINGS)  # no sub-apps: the app holds every key
    if settings is None:
        return
    headers = cors_headers(settings.server_cors_origins, request.headers.get("Origin", ""))
    if headers:
        for name, value in headers.items():
            response.headers.setdefault(name, value)


MIDDLEWARES = [request_middleware]
