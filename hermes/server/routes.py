"""The declarative route table: every route of `hermes serve`, in one place.

`ROUTES` concatenates the ``ROUTES`` lists of the handler modules in `HANDLER_MODULES`
(order matters only for documentation). `create_app` adds them with one
``app.add_routes(ROUTES)`` and calls each module's optional ``init_app(app)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from aiohttp import web

from hermes.server.handlers import chat, health, models, openapi, responses


def _optional(name: str) -> ModuleType | None:
    """Import a handler module another engineer is still writing; None until it exists.

    Only the module's own absence is tolerated: an ImportError raised *inside* it surfaces.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


HANDLER_MODULES: list[ModuleType] = [
    module
    for module in (
        health,
        models,
        chat,
        responses,
        _optional("hermes.server.handlers.runs"),
        _optional("hermes.server.handlers.sessions"),
        openapi,
    )
    if module is not None
]

ROUTES: list[web.RouteDef] = [route for module in HANDLER_MODULES for route in module.ROUTES]
