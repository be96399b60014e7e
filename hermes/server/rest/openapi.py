"""GET /openapi.json: the OpenAPI 3.1 document of every route.

Fragments come from the route table (`hermes.server.http.routes`): each handler module's
``OPENAPI_PATHS`` (path → path item, covering its ``ROUTES``) and ``OPENAPI_SCHEMAS``
(merged into ``components.schemas``; names must be unique). Shared pieces defined here
may be referenced by any fragment: ``#/components/schemas/Error`` (the OpenAI error
envelope) and
``#/components/responses/{BadRequest,Unauthorized,Forbidden,NotFound,PayloadTooLarge,RateLimited}``.

`create_app` builds the document once per app; it is what the schema-based fuzz test
(tests/server/test_api_fuzz.py) drives.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiohttp import web

from hermes import __version__
from hermes.server.http.errors import json_response
from hermes.server.http.state import OPENAPI_DOCUMENT

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}


def _error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def build_document(
    path_items: Iterable[dict[str, dict[str, Any]]], components: Iterable[dict[str, dict[str, Any]]]
) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}
    for fragment in path_items:
        for path, item in fragment.items():
            paths.setdefault(path, {}).update(item)
    for fragment in components:
        for name, schema in fragment.items():
            if name in schemas and schemas[name] != schema:
                raise ValueError(f"OpenAPI schema {name!r} defined twice")
            schemas[name] = schema
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hermes serve",
            "version": __version__,
            "description": "OpenAI-compatible agent server: chat completions, responses, runs and sessions.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas,
            "responses": {
                "BadRequest": _error_response("Malformed request"),
                "Unauthorized": _error_response("Missing or invalid API key"),
                "Forbidden": _error_response("Origin or feature not allowed"),
                "NotFound": _error_response("Unknown resource"),
                "PayloadTooLarge": _error_response("Body over 10 MB"),
                "RateLimited": _error_response("Too many concurrent turns"),
            },
        },
    }


async def openapi_document(request: web.Request) -> web.Response:
    return json_response(request.app[OPENAPI_DOCUMENT])


ROUTES = [web.get("/openapi.json", openapi_document, allow_head=False)]

OPENAPI_PATHS: dict[str, dict[str, Any]] = {
    "/openapi.json": {
        "get": {
            "operationId": "openapi",
            "summary": "This document",
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                "401": {"$ref": "#/components/responses/Unauthorized"},
            },
        }
    }
}
