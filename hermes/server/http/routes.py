"""The route table of `hermes serve`: every handler module's `Route`s, in one `RouteTable`.

Static on purpose: each handler module is imported here at module level, so a module
that fails to import (or declares a route the table refuses) fails `hermes serve` at
start and every server test. `create_app` registers `TABLE.route_defs()` and builds
``/openapi.json`` from the same `TABLE`.
"""

from __future__ import annotations

from hermes.server.http.route import RouteTable
from hermes.server.openai import chat, models, responses
from hermes.server.rest import health, openapi, runs, session_files, sessions

TABLE = RouteTable(
    (
        *health.ROUTES,
        *models.ROUTES,
        *chat.ROUTES,
        *responses.ROUTES,
        *runs.ROUTES,
        *sessions.ROUTES,
        *session_files.ROUTES,
        *openapi.ROUTES,
    )
)
