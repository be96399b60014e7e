"""/v1/models and /v1/capabilities.

The capabilities' ``endpoints`` are the routes of the app's table that name an
`endpoint` (`hermes.server.http.route.Route`); a feature is advertised when its route is there.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from hermes import api_paths
from hermes.runs.idempotency import ANSWER_RETENTION_SECONDS
from hermes.server.http.errors import json_response
from hermes.server.http.request_session import SESSION_ID_HEADER, SESSION_KEY_HEADER
from hermes.server.http.route import UNAUTHORIZED, Reply, Route
from hermes.server.http.schema import JSON
from hermes.server.http.state import AGENT, PLATFORM, ROUTE_TABLE, SETTINGS

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


async def capabilities(request: web.Request) -> web.Response:
    settings = request.config_dict[SETTINGS]
    endpoints = request.config_dict[ROUTE_TABLE].endpoints()
    progress = settings.server_tool_progress_events.strip().lower()
    features: dict[str, Any] = {
        "chat_completions": True,
        "chat_completions_streaming": True,
        "responses_api": True,
        "responses_streaming": True,
        "responses_store": {"supported": True, "max_stored": settings.server_response_store_size},
        "idempotency": {"supported": True, "durable": True, "retention_seconds": int(ANSWER_RETENTION_SECONDS)},
        "run_submission": "runs" in endpoints,
        "run_status": "run_status" in endpoints,
        "run_events_sse": "run_events" in endpoints,
        "run_stop": "run_stop" in endpoints,
        "run_approval_response": "run_approval" in endpoints,
        "tool_progress_events": progress not in ("false", "0", "no", "off"),
        "tool_progress_events_mode": progress,
        "reasoning_streaming": True,
        "session_resources": "sessions" in endpoints,
        "session_chat": "session_chat" in endpoints,
        "session_chat_streaming": "session_chat_stream" in endpoints,
        "session_fork": "session_fork" in endpoints,
        "session_continuity_header": SESSION_ID_HEADER,
        "session_key_header": SESSION_KEY_HEADER,
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
        "endpoints": {name: {"method": route.method, "path": route.path} for name, route in endpoints.items()},
    }
    return json_response(body)


_MODEL_LIST: JSON = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {"object": {"const": "list"}, "data": {"type": "array"}},
}

ROUTES = (
    Route(
        "GET",
        api_paths.MODELS,
        list_models,
        operation_id="listModels",
        summary="The advertised model",
        endpoint="models",
        responses={200: Reply("OK", _MODEL_LIST), 401: UNAUTHORIZED},
    ),
    Route(
        "GET",
        "/v1/capabilities",
        capabilities,
        operation_id="capabilities",
        endpoint="capabilities",
        summary="Machine-readable description of this server",
        responses={200: Reply("OK", {"type": "object"}), 401: UNAUTHORIZED},
    ),
)
