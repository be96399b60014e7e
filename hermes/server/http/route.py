"""A route declared once: method, path, handler, parameters, request body and replies.

    ROUTES = (
        Route("GET", "/v1/runs/{run_id}", get_run, operation_id="getRun",
              parameters=(RUN_ID,), responses={200: Reply("Status", RUN_STATUS), **CLIENT_ERRORS}),
    )

A `RouteTable` of such entries is the only source of both the aiohttp routes
(`RouteTable.route_defs`) and the OpenAPI ``paths`` and ``components.schemas``
(`RouteTable.paths`, `RouteTable.schemas`), so each path string is written once, beside
its handler. Invariants, checked when a table is built:

- (method, path) and operationId are unique;
- the ``{name}`` segments of a path are exactly its declared path `Param`s;
- a component name (request `Body` or reply `Component`) stands for one schema.

A GET is registered without HEAD, so the router holds exactly the table. The shared
pieces every document has (the `ERROR` envelope, the `SHARED_REPLIES`) live here too.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal

from aiohttp import web

from hermes.server.http.schema import IDEMPOTENCY_KEY_SCHEMA, JSON, Body

Method = Literal["GET", "POST", "PATCH", "DELETE"]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Component:
    """A named schema (``#/components/schemas/<name>``); `uses` are the components it refers to."""

    name: str
    schema: JSON
    uses: tuple[Component, ...] = ()

    @property
    def ref(self) -> JSON:
        return {"$ref": f"#/components/schemas/{self.name}"}


ERROR = Component(
    "Error",
    {
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
    },
)
"""The OpenAI error envelope every error reply carries."""

SSE_EVENT: JSON = {
    "type": "object",
    "description": "One Server-Sent Event; `data` is a JSON document, or `[DONE]` at the end of a chat stream.",
    "required": ["data"],
    "properties": {
        "event": {"type": "string"},
        "data": {"type": "string"},
        "id": {"type": "string"},
        "retry": {"type": "integer", "minimum": 0},
    },
}
"""The schema of each event of a ``text/event-stream`` reply (OpenAPI 3.1: `schema` describes one event)."""


def _json_content(schema: JSON) -> JSON:
    return {"application/json": {"schema": schema}}


@dataclass(frozen=True)
class Reply:
    """One documented response: JSON (a `Component` or an inline schema), SSE, both, or neither."""

    description: str
    json: Component | JSON | None = None
    sse: bool = False

    def document(self) -> JSON:
        content: JSON = {}
        match self.json:
            case Component() as component:
                content.update(_json_content(component.ref))
            case None:
                pass
            case schema:
                content.update(_json_content(schema))
        if self.sse:
            content["text/event-stream"] = {"schema": SSE_EVENT}
        return {"description": self.description, "content": content} if content else {"description": self.description}

    def components(self) -> tuple[Component, ...]:
        return (self.json,) if isinstance(self.json, Component) else ()


@dataclass(frozen=True)
class SharedReply:
    """A response every route may refer to (``#/components/responses/<name>``): an `ERROR` envelope."""

    name: str
    description: str

    def document(self) -> JSON:
        return {"$ref": f"#/components/responses/{self.name}"}

    def components(self) -> tuple[Component, ...]:
        return (ERROR,)


BAD_REQUEST = SharedReply("BadRequest", "Malformed request")
UNAUTHORIZED = SharedReply("Unauthorized", "Missing or invalid API key")
FORBIDDEN = SharedReply("Forbidden", "Origin or feature not allowed")
NOT_FOUND = SharedReply("NotFound", "Unknown resource")
PAYLOAD_TOO_LARGE = SharedReply("PayloadTooLarge", "Body over 10 MB")
RATE_LIMITED = SharedReply("RateLimited", "Too many concurrent turns")
SHARED_REPLIES = (BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, PAYLOAD_TOO_LARGE, RATE_LIMITED)
"""Every document's ``components.responses``."""

CLIENT_ERRORS: dict[int, Reply | SharedReply] = {400: BAD_REQUEST, 401: UNAUTHORIZED, 404: NOT_FOUND}
"""The error replies every resource endpoint documents."""

TURN_ERRORS: dict[int, Reply | SharedReply] = {
    400: BAD_REQUEST,
    401: UNAUTHORIZED,
    403: FORBIDDEN,
    413: PAYLOAD_TOO_LARGE,
    429: RATE_LIMITED,
}
"""The error replies of the OpenAI turn endpoints (a body, browser origins, the turn limit)."""


def shared_responses() -> JSON:
    """``components.responses``: each shared reply with its `ERROR` body."""
    return {shared.name: Reply(shared.description, ERROR).document() for shared in SHARED_REPLIES}


@dataclass(frozen=True)
class Param:
    """A path, query or header parameter. Path parameters are always required."""

    name: str
    where: Literal["path", "query", "header"]
    schema: JSON
    required: bool = False

    def document(self) -> JSON:
        return {
            "name": self.name,
            "in": self.where,
            "required": self.required or self.where == "path",
            "schema": self.schema,
        }


IDEMPOTENCY_KEY = Param("Idempotency-Key", "header", IDEMPOTENCY_KEY_SCHEMA)

_PATH_PARAM = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class Route:
    """One operation: what aiohttp registers and what the OpenAPI document says about it."""

    method: Method
    path: str
    handler: Handler
    _: KW_ONLY
    operation_id: str
    responses: Mapping[int, Reply | SharedReply]
    summary: str | None = None
    parameters: tuple[Param, ...] = ()
    body: Body | None = None
    """The schema the handler validates its JSON body with (documented as the request body)."""
    body_required: bool = True
    public: bool = False
    """Served without the API key (documented as ``security: []``)."""
    key_optional: bool = False
    """Served with or without the API key; the handler shows a holder of the key more
    (documented as ``security: [{}, {"bearer": []}]``)."""
    endpoint: str | None = None
    """The route's name in `/v1/capabilities` ``endpoints`` (None: not listed there)."""

    def __post_init__(self) -> None:
        in_path = _PATH_PARAM.findall(self.path)
        declared = [param.name for param in self.parameters if param.where == "path"]
        if sorted(in_path) != sorted(declared):
            raise ValueError(f"{self.method} {self.path}: path parameters {in_path} declared as {declared}")

    def route_def(self) -> web.RouteDef:
        if self.method == "GET":  # aiohttp adds a HEAD route beside a GET unless told not to
            return web.get(self.path, self.handler, allow_head=False)
        return web.route(self.method, self.path, self.handler)

    def operation(self) -> JSON:
        """The OpenAPI operation object."""
        operation: JSON = {"operationId": self.operation_id}
        if self.summary is not None:
            operation["summary"] = self.summary
        if self.public:
            operation["security"] = []
        elif self.key_optional:
            operation["security"] = [{}, {"bearer": []}]
        if self.parameters:
            operation["parameters"] = [param.document() for param in self.parameters]
        if self.body is not None:
            operation["requestBody"] = {"required": self.body_required, "content": _json_content(self.body.ref)}
        operation["responses"] = {str(status): reply.document() for status, reply in self.responses.items()}
        return operation

    def components(self) -> tuple[Component, ...]:
        return tuple(component for reply in self.responses.values() for component in reply.components())


@dataclass(frozen=True)
class RouteTable:
    """Every route of the app, in registration order; see the module docstring for its invariants."""

    routes: tuple[Route, ...]
    open_paths: frozenset[str] = field(init=False)
    """Paths of the `public` and `key_optional` routes (the auth middleware lets them through
    without a key)."""

    def __post_init__(self) -> None:
        _unique("route", [f"{route.method} {route.path}" for route in self.routes])
        _unique("operationId", [route.operation_id for route in self.routes])
        open_paths = frozenset(route.path for route in self.routes if route.public or route.key_optional)
        object.__setattr__(self, "open_paths", open_paths)
        self.schemas()  # a component name bound to two schemas fails here, at import

    def route_defs(self) -> list[web.RouteDef]:
        return [route.route_def() for route in self.routes]

    def paths(self) -> JSON:
        """OpenAPI ``paths``: sorted by path, operations in table order."""
        paths: dict[str, JSON] = {}
        for route in self.routes:
            paths.setdefault(route.path, {})[route.method.lower()] = route.operation()
        return dict(sorted(paths.items()))

    def schemas(self) -> dict[str, JSON]:
        """``components.schemas``: `ERROR`, then every request body and reply component the routes use."""
        schemas: dict[str, JSON] = {}

        def add(name: str, schema: JSON) -> None:
            if schemas.setdefault(name, schema) != schema:
                raise ValueError(f"OpenAPI schema {name!r} defined twice")

        def add_component(component: Component) -> None:
            add(component.name, component.schema)
            for used in component.uses:
                add_component(used)

        add_component(ERROR)
        for route in self.routes:
            if route.body is not None:
                add(route.body.name, route.body.openapi())
            for component in route.components():
                add_component(component)
        return schemas

    def endpoints(self) -> dict[str, Route]:
        """The routes `/v1/capabilities` lists, by their `endpoint` name."""
        return {route.endpoint: route for route in self.routes if route.endpoint is not None}


def _unique(what: str, names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} declared twice")
        seen.add(name)
