"""GET /openapi.json: the OpenAPI 3.1 document of every route.

Generated, never written by hand: ``paths`` and ``components.schemas`` come from the
app's `RouteTable` (each `Route` entry, its request `Body` and its reply components),
``components.responses`` from `hermes.server.http.route.SHARED_REPLIES`. `create_app`
builds the document once per app; it is what the schema-based fuzz test
(tests/server/test_api_fuzz.py) drives.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hermes import __version__
from hermes.server.http.errors import json_response
from hermes.server.http.route import UNAUTHORIZED, Reply, Route, RouteTable, shared_responses
from hermes.server.http.state import OPENAPI_DOCUMENT


def build_document(table: RouteTable) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hermes serve",
            "version": __version__,
            "description": "OpenAI-compatible agent server: chat completions, responses, runs and sessions.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": table.paths(),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": table.schemas(),
            "responses": shared_responses(),
        },
    }


async def openapi_document(request: web.Request) -> web.Response:
    return json_response(request.app[OPENAPI_DOCUMENT])


ROUTES = (
    Route(
        "GET",
        "/openapi.json",
        openapi_document,
        operation_id="openapi",
        endpoint="openapi",
        summary="This document",
        responses={200: Reply("OK", {"type": "object"}), 401: UNAUTHORIZED},
    ),
)
