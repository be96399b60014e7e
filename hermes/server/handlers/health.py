"""Liveness and readiness: /health, /v1/health, /health/detailed (no auth, no secrets)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from hermes import __version__
from hermes.server.errors import json_response
from hermes.server.state import LIMITER, METRICS, SETTINGS

PLATFORM = "hermes-agent"


async def health(request: web.Request) -> web.Response:
    return json_response({"status": "ok", "platform": PLATFORM, "version": __version__})


def _rfc3339(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


async def health_detailed(request: web.Request) -> web.Response:
    metrics = request.config_dict[METRICS]
    limiter = request.config_dict[LIMITER]
    settings = request.config_dict[SETTINGS]
    body: dict[str, Any] = {
        "status": "ok",
        "platform": PLATFORM,
        "version": __version__,
        "gateway_state": "running",
        "platforms": {},
        "active_agents": limiter.active,
        "exit_reason": None,
        "updated_at": _rfc3339(time.time()),
        "pid": os.getpid(),
        "api_server": {
            "active_runs": limiter.active,
            "max_concurrent_runs": settings.server_max_concurrent_runs,
            "started_at": _rfc3339(metrics.started_at),
            "uptime_seconds": round(time.time() - metrics.started_at, 3),
            "requests": metrics.requests,
            "turns": metrics.turns,
            "last_request_at": _rfc3339(metrics.last_request_at),
        },
    }
    return json_response(body)


ROUTES = [
    web.get("/health", health, allow_head=False),
    web.get("/v1/health", health, allow_head=False),
    web.get("/health/detailed", health_detailed, allow_head=False),
]

_HEALTH = {
    "type": "object",
    "required": ["status", "platform"],
    "properties": {"status": {"type": "string"}, "platform": {"type": "string"}, "version": {"type": "string"}},
}

OPENAPI_PATHS: dict[str, dict[str, Any]] = {
    "/health": {
        "get": {
            "operationId": "health",
            "summary": "Liveness",
            "security": [],
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": _HEALTH}}}},
        }
    },
    "/v1/health": {
        "get": {
            "operationId": "healthV1",
            "summary": "Liveness (alias)",
            "security": [],
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": _HEALTH}}}},
        }
    },
    "/health/detailed": {
        "get": {
            "operationId": "healthDetailed",
            "summary": "Readiness and counters (no secrets, no paths)",
            "security": [],
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
            },
        }
    },
}
