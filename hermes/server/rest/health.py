"""Liveness and readiness: /health, /v1/health (public), /health/detailed (more with the key).

`/health` and `/v1/health` answer as long as the process serves HTTP, to anyone (their
`Route`s are `public`), and say only the status, the platform and the version.
`/health/detailed` is the readiness check: one cheap indexed read on each store (503
``unavailable`` when one fails, or while the server shuts down). It answers everyone
(`key_optional`), as the reference's does, with the reference's fields only (`PUBLIC_FIELDS`:
status, platform, gateway state, platforms, active agents, exit reason, update time, pid).
A request carrying the server's bearer key (or any request, when no key is configured:
then the whole API is open, as for every other route) also gets the rest: version,
`instance_id`, the storage backend (`sqlite` or `postgres`, never its location), the
store checks, the counters (requests, turns, active turns and streams) and the last
upstream error (code, URL-free message, time). A wrong key is not an error here: it gets
the public fields. Even to a holder of the key it never shows keys, URLs or file paths.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from hermes import __version__
from hermes.server.http.errors import json_response
from hermes.server.http.lifecycle import LIVE_WORK
from hermes.server.http.middleware import check_bearer
from hermes.server.http.route import Reply, Route
from hermes.server.http.schema import JSON
from hermes.server.http.state import LIMITER, METRICS, PLATFORM, RUNS, SETTINGS, STORAGE

log = logging.getLogger(__name__)

PUBLIC_FIELDS = (
    "status", "platform", "gateway_state", "platforms", "active_agents", "exit_reason", "updated_at", "pid",
)  # fmt: skip
"""What /health/detailed tells a client without the key (the reference's fields)."""


async def health(request: web.Request) -> web.Response:
    return json_response({"status": "ok", "platform": PLATFORM, "version": __version__})


def _rfc3339(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


PROBE_ID = "health-probe"
"""An id no row has: looking it up is one indexed read on each store."""


async def _probe(check: Callable[[], Awaitable[object]]) -> str:
    try:
        await check()
    except Exception:  # noqa: BLE001 - any failure means "not ready"; details would leak paths
        log.warning("readiness check failed", exc_info=True)
        return "error"
    return "ok"


async def readiness(app: web.Application) -> dict[str, str]:
    """One cheap query per store: "ok" or "error" (never the reason: it could hold a path)."""
    storage = app[STORAGE]
    return {
        "session_store": await _probe(lambda: storage.sessions.find_session(PROBE_ID)),
        "response_store": await _probe(lambda: storage.responses.get(PROBE_ID)),
        "run_store": await _probe(lambda: storage.runs.get(PROBE_ID)),
    }


async def health_detailed(request: web.Request) -> web.Response:
    app = request.app
    metrics = app[METRICS]
    limiter = app[LIMITER]
    settings = app[SETTINGS]
    live = app[LIVE_WORK]
    runs = app[RUNS]
    checks = await readiness(app)
    ready = all(value == "ok" for value in checks.values()) and not live.closing
    upstream = metrics.last_upstream_error
    body: dict[str, Any] = {
        "status": "ok" if ready else "unavailable",
        "platform": PLATFORM,
        "version": __version__,
        "gateway_state": "stopping" if live.closing else "running",
        "platforms": {},
        "active_agents": limiter.active,
        "exit_reason": None,
        "updated_at": _rfc3339(time.time()),
        "pid": os.getpid(),
        "instance_id": app[STORAGE].instance_id,
        "storage": {"backend": app[STORAGE].backend},
        "checks": checks,
        "api_server": {
            "active_runs": limiter.active,
            "active_turns": limiter.active,
            "active_background_runs": runs.active_count,
            "active_streams": live.active_streams,
            "max_concurrent_runs": settings.server_max_concurrent_runs,
            "started_at": _rfc3339(metrics.started_at),
            "uptime_seconds": round(time.time() - metrics.started_at, 3),
            "requests": metrics.requests,
            "turns": metrics.turns,
            "last_request_at": _rfc3339(metrics.last_request_at),
            "last_upstream_error": None
            if upstream is None
            else {"code": upstream.code, "message": upstream.message, "at": _rfc3339(upstream.at)},
        },
    }
    if not check_bearer(settings.server_key, request.headers.get("Authorization")):
        body = {name: body[name] for name in PUBLIC_FIELDS}
    return json_response(body, status=200 if ready else 503)


_HEALTH: JSON = {
    "type": "object",
    "required": ["status", "platform"],
    "properties": {"status": {"type": "string"}, "platform": {"type": "string"}, "version": {"type": "string"}},
}

_DETAILED: JSON = {
    "type": "object",
    "description": "Without the key: the fields status, platform, gateway_state, platforms, active_agents, "
    "exit_reason, updated_at and pid only",
    "required": ["status", "platform", "gateway_state", "platforms", "active_agents", "pid"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "unavailable"]},
        "platform": {"type": "string"},
        "version": {"type": "string"},
        "gateway_state": {"type": "string", "enum": ["running", "stopping"]},
        "platforms": {"type": "object"},
        "active_agents": {"type": "integer"},
        "exit_reason": {"type": ["string", "null"]},
        "updated_at": {"type": "string"},
        "checks": {"type": "object", "additionalProperties": {"type": "string", "enum": ["ok", "error"]}},
        "pid": {"type": "integer", "description": "The answering worker's process id"},
        "instance_id": {"type": "string", "description": "The answering instance (its lease and runs)"},
        "storage": {
            "type": "object",
            "properties": {"backend": {"type": "string", "enum": ["sqlite", "postgres"]}},
        },
        "api_server": {"type": "object"},
    },
}

ROUTES = (
    Route(
        "GET",
        "/health",
        health,
        operation_id="health",
        summary="Liveness",
        public=True,
        endpoint="health",
        responses={200: Reply("OK", _HEALTH)},
    ),
    Route(
        "GET",
        "/v1/health",
        health,
        operation_id="healthV1",
        summary="Liveness (alias)",
        public=True,
        responses={200: Reply("OK", _HEALTH)},
    ),
    Route(
        "GET",
        "/health/detailed",
        health_detailed,
        operation_id="healthDetailed",
        endpoint="health_detailed",
        summary="Readiness; with the key (or none configured) also counters (no secrets, no paths)",
        key_optional=True,
        responses={200: Reply("Ready", _DETAILED), 503: Reply("Not ready", _DETAILED)},
    ),
)
