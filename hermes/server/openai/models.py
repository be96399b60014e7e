"""/v1/models and /v1/capabilities."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from hermes.server.http.errors import json_response
from hermes.server.http.state import AGENT, PLATFORM, SETTINGS

_CREATED = int(time.time())


async def list_models(request: web.Request) -> web.Response:
    name = request.config_dict[SETTINGS].server_model_name
    agent = request.config_dict[AGENT]
    return json_response(
        {
            "object": "list",
            "data": [
                {
                    "id": name,
                    "object": "model",
                    "created": _CREATED,
                    "owned_by": "hermes",
                    "permission": [],
                    "root": name,
                    "parent": None,
                    # What answers behind the agent (e.g. the bundled local model).
                    "hermes": {"provider": agent.provider.name, "model": agent.model},
                }
            ],
        }
    )


ENDPOINTS: dict[str, tuple[str, str]] = {
    "health": ("GET", "/health"),
    "health_detailed": ("GET", "/health/detailed"),
    "models": ("GET", "/v1/models"),
    "capabilities": ("GET", "/v1/capabilities"),
    "chat_completions": ("POST", "/v1/chat/completions"),
    "responses": ("POST", "/v1/responses"),
    "response_get": ("GET", "/v1/responses/{response_id}"),
    "response_delete": ("DELETE", "/v1/responses/{response_id}"),
    "runs": ("POST", "/v1/runs"),
    "run_status": ("GET", "/v1/runs/{run_id}"),
    "run_events": ("GET", "/v1/runs/{run_id}/events"),
    "run_approval": ("POST", "/v1/runs/{run_id}/approval"),
    "run_stop": ("POST", "/v1/runs/{run_id}/stop"),
    "sessions": ("GET", "/api/sessions"),
    "session_create": ("POST", "/api/sessions"),
    "session": ("GET", "/api/sessions/{session_id}"),
    "session_update": ("PATCH", "/api/sessions/{session_id}"),
    "session_delete": ("DELETE", "/api/sessions/{session_id}"),
    "session_messages": ("GET", "/api/sessions/{session_id}/messages"),
    "session_fork": ("POST", "/api/sessions/{session_id}/fork"),
    "session_chat": ("POST", "/api/sessions/{session_id}/chat"),
    "session_chat_stream": ("POST", "/api/sessions/{session_id}/chat/stream"),
    "openapi": ("GET", "/openapi.json"),
}


def _registered(app: web.Application) -> set[tuple[str, str]]:
    out = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if path:
            out.add((route.method, path))
    return out


async def capabilities(request: web.Request) -> web.Response:
    settings = request.config_dict[SETTINGS]
    registered = _registered(request.app)
    has = {name: (m, p) in registered for name, (m, p) in ENDPOINTS.items()}
    progress = settings.server_tool_progress_events.strip().lower()
    features: dict[str, Any] = {
        "chat_completions": True,
        "chat_completions_streaming": True,
        "responses_api": True,
        "responses_streaming": True,
        "responses_store": {"supported": True, "max_stored": settings.server_response_store_size},
        "idempotency": {"supported": True, "durable": False, "retention_seconds": 300},
        "run_submission": has["runs"],
        "run_status": has["run_status"],
        "run_events_sse": has["run_events"],
        "run_stop": has["run_stop"],
        "run_approval_response": has["run_approval"],
        "tool_progress_events": progress not in ("false", "0", "no", "off"),
        "tool_progress_events_mode": progress,
        "reasoning_streaming": True,
        "session_resources": has["sessions"],
        "session_chat": has["session_chat"],
        "session_chat_streaming": has["session_chat_stream"],
        "session_fork": has["session_fork"],
        "session_continuity_header": "X-Hermes-Session-Id",
        "session_key_header": "X-Hermes-Session-Key",
        "cors": bool(settings.server_cors_origins),
        "max_concurrent_runs": settings.server_max_concurrent_runs,
        "keepalive_seconds": settings.server_keepalive_seconds,
        "openapi": True,
    }
    body = {
        "object": "hermes.api_server.capabilities",
        "platform": PLATFORM,
        "model": settings.server_model_name,
        "auth": {"type": "bearer", "required": settings.server_key is not None},
        "runtime": {
            "mode": "server_agent",
            "tool_execution": "server",
            "split_runtime": False,
            "description": (
                "Tools run on the API-server host, in the server's working directory; commands that "
                "need approval are denied unless approved through the runs API or the server runs with --yolo."
            ),
        },
        "features": features,
        "endpoints": {
            name: {"method": method, "path": path}
            for name, (method, path) in ENDPOINTS.items()
            if has[name] or name in ("health", "health_detailed")
        },
    }
    return json_response(body)


ROUTES = [
    web.get("/v1/models", list_models, allow_head=False),
    web.get("/v1/capabilities", capabilities, allow_head=False),
]

OPENAPI_PATHS: dict[str, dict[str, Any]] = {
    "/v1/models": {
        "get": {
            "operationId": "listModels",
            "summary": "The advertised model",
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["object", "data"],
                                "properties": {"object": {"const": "list"}, "data": {"type": "array"}},
                            }
                        }
                    },
                },
                "401": {"$ref": "#/components/responses/Unauthorized"},
            },
        }
    },
    "/v1/capabilities": {
        "get": {
            "operationId": "capabilities",
            "summary": "Machine-readable description of this server",
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
            },
        }
    },
}
