"""The route table of `hermes serve`: every route, and every OpenAPI fragment, in one place.

Static on purpose: each handler module is imported here at module level, so a module
that fails to import fails `hermes serve` at start and every server test.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hermes.server.openai import chat, models, responses
from hermes.server.rest import health, openapi, runs, sessions

ROUTES: list[web.RouteDef] = [
    *health.ROUTES,
    *models.ROUTES,
    *chat.ROUTES,
    *responses.ROUTES,
    *runs.ROUTES,
    *sessions.ROUTES,
    *openapi.ROUTES,
]

OPENAPI_PATHS: list[dict[str, dict[str, Any]]] = [
    health.OPENAPI_PATHS,
    models.OPENAPI_PATHS,
    chat.OPENAPI_PATHS,
    responses.OPENAPI_PATHS,
    runs.OPENAPI_PATHS,
    sessions.OPENAPI_PATHS,
    openapi.OPENAPI_PATHS,
]
"""Path items per handler module, in the order of `ROUTES`."""

OPENAPI_SCHEMAS: list[dict[str, dict[str, Any]]] = [
    chat.OPENAPI_SCHEMAS,
    responses.OPENAPI_SCHEMAS,
    runs.OPENAPI_SCHEMAS,
    sessions.OPENAPI_SCHEMAS,
]
"""Shared components (``#/components/schemas/<Name>``) the path items refer to."""
