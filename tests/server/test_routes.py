"""The route table is the one declaration: the router, /openapi.json and /v1/capabilities agree with it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from _api_harness import Server
from aiohttp import web

import hermes
from hermes.server.http.route import ERROR, Component, Param, Reply, Route, RouteTable
from hermes.server.http.routes import TABLE
from hermes.server.http.schema import Body, String

CAPABILITY_ENDPOINTS = {
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
    "session_search": ("GET", "/api/search"),
    "session_undo": ("POST", "/api/sessions/{session_id}/undo"),
    "session_redo": ("POST", "/api/sessions/{session_id}/redo"),
    "session_diff": ("GET", "/api/sessions/{session_id}/diff"),
    "openapi": ("GET", "/openapi.json"),
}
"""What /v1/capabilities has always listed (spelled out here: it is the wire contract)."""


async def _noop(request: web.Request) -> web.Response:
    return web.Response()


def _registered(app: web.Application) -> dict[tuple[str, str], object]:
    out = {}
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        out[(route.method, info.get("path") or info.get("formatter"))] = route.handler
    return out


async def test_the_router_holds_exactly_the_table(server: Server) -> None:
    registered = _registered(server.app)
    assert registered == {(route.method, route.path): route.handler for route in TABLE.routes}
    assert not {method for method, _ in registered} & {"HEAD", "OPTIONS"}


async def test_the_document_holds_exactly_the_router(server: Server) -> None:
    resp = await server.client.get("/openapi.json")
    assert resp.status == 200
    doc = await resp.json()
    assert doc["openapi"] == "3.1.0"
    documented = {(method.upper(), path) for path, item in doc["paths"].items() for method in item}
    assert documented == set(_registered(server.app))
    operations = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert sorted(operations) == sorted(route.operation_id for route in TABLE.routes)


async def test_capabilities_list_the_endpoints_they_always_did(server: Server) -> None:
    data = await (await server.client.get("/v1/capabilities")).json()
    assert data["endpoints"] == {name: {"method": m, "path": p} for name, (m, p) in CAPABILITY_ENDPOINTS.items()}
    flags = (
        "run_submission",
        "run_status",
        "run_events_sse",
        "run_stop",
        "run_approval_response",
        "session_resources",
        "session_chat",
        "session_chat_streaming",
        "session_fork",
    )
    assert all(data["features"][flag] is True for flag in flags)


def test_every_path_string_is_written_once() -> None:
    """Each route path is one string constant in hermes/ (the scripted model server of
    `hermes.testing.upstream` serves its own, unrelated, OpenAI routes)."""
    package = Path(hermes.__file__).parent
    paths = {route.path for route in TABLE.routes}
    found: dict[str, list[str]] = {path: [] for path in paths}
    for module in sorted(package.rglob("*.py")):
        if module in (package / "testing" / "upstream.py", package / "testing" / "anthropic_upstream.py"):
            continue  # scripted upstreams spell their vendors' paths, not hermes' routes
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and node.value in paths:
                found[node.value].append(f"{module.relative_to(package)}:{node.lineno}")
    assert {path: places for path, places in found.items() if len(places) != 1} == {}


def test_only_liveness_and_detailed_health_are_open() -> None:
    # /health/detailed answers without the key too, with the reference's fields only.
    assert TABLE.open_paths == {"/health", "/v1/health", "/health/detailed"}
    assert {route.path for route in TABLE.routes if route.public} == {"/health", "/v1/health"}


def test_a_path_parameter_must_be_declared() -> None:
    with pytest.raises(ValueError, match="path parameters"):
        Route("GET", "/things/{thing_id}", _noop, operation_id="getThing", responses={})
    with pytest.raises(ValueError, match="path parameters"):
        Route(
            "GET",
            "/things",
            _noop,
            operation_id="getThings",
            responses={},
            parameters=(Param("thing_id", "path", {"type": "string"}),),
        )


def test_a_route_or_operation_declared_twice_is_refused() -> None:
    first = Route("GET", "/things", _noop, operation_id="getThings", responses={})
    with pytest.raises(ValueError, match="route 'GET /things' declared twice"):
        RouteTable((first, Route("GET", "/things", _noop, operation_id="other", responses={})))
    with pytest.raises(ValueError, match="operationId 'getThings' declared twice"):
        RouteTable((first, Route("POST", "/things", _noop, operation_id="getThings", responses={})))


def test_a_component_name_stands_for_one_schema() -> None:
    clash = Component("Error", {"type": "string"})
    with pytest.raises(ValueError, match="'Error' defined twice"):
        RouteTable((Route("GET", "/things", _noop, operation_id="getThings", responses={200: Reply("OK", clash)}),))


def test_the_table_documents_bodies_and_the_components_they_use() -> None:
    body = Body("ThingCreate", {"name": String(required=True)})
    thing = Component("Thing", {"type": "object"})
    page = Component("ThingPage", {"type": "array", "items": thing.ref}, uses=(thing,))
    table = RouteTable(
        (
            Route(
                "POST",
                "/things",
                _noop,
                operation_id="createThing",
                body=body,
                body_required=False,
                responses={200: Reply("A page", page, sse=True), 409: Reply("Busy", ERROR)},
            ),
        )
    )
    assert table.schemas() == {
        "Error": ERROR.schema,
        "ThingCreate": body.openapi(),
        "ThingPage": page.schema,
        "Thing": thing.schema,
    }
    operation = table.paths()["/things"]["post"]
    assert operation["requestBody"] == {
        "required": False,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ThingCreate"}}},
    }
    assert set(operation["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    assert operation["responses"]["409"]["content"]["application/json"]["schema"] == ERROR.ref
