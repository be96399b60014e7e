"""`create_app`: the one factory behind `hermes serve` and every server test.

    app = create_app(settings)                          # opens state.db, response_store.db, builds the agent
    app = create_app(settings, agent=agent, sessions=store, responses=ResponseStore())   # tests

Collaborators that are passed in are used as they are (and left open); the ones the
factory opens itself are closed by the app's cleanup context.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web

from hermes.config import Settings
from hermes.server import routes
from hermes.server.idempotency import IdempotencyCache
from hermes.server.middleware import MAX_REQUEST_BYTES, MIDDLEWARES, on_response_prepare
from hermes.server.state import (
    AGENT,
    BACKGROUND,
    IDEMPOTENCY,
    LIMITER,
    METRICS,
    RESPONSES,
    SESSIONS,
    SETTINGS,
    ServerMetrics,
    TurnLimiter,
)
from hermes.store.responses import ResponseStore

log = logging.getLogger(__name__)


def create_app(
    settings: Settings,
    *,
    agent: Any | None = None,
    sessions: Any | None = None,
    responses: ResponseStore | None = None,
    idempotency: IdempotencyCache | None = None,
) -> web.Application:
    """Build the aiohttp application.

    Args:
        settings: resolved settings (server_* fields, paths under ``home``).
        agent: the `hermes.agent.engine.Agent` to run turns on; built with
            `hermes.agent.factory.build_agent(settings, sessions)` when omitted.
        sessions: the `SessionStore`; opened at ``settings.state_db_path`` when omitted.
        responses: the `ResponseStore`; opened at ``settings.response_db_path`` when omitted.
        idempotency: the in-memory idempotency cache (a fresh one when omitted).
    """
    owned: list[Any] = []
    if sessions is None:
        from hermes.store import open_session_store

        settings.ensure_home()
        sessions = open_session_store(settings.state_db_path)
        owned.append(sessions)
    if responses is None:
        settings.ensure_home()
        responses = ResponseStore(settings.response_db_path, max_size=settings.server_response_store_size)
        owned.append(responses)
    mcp = None
    if agent is None:
        from hermes.agent.factory import build_agent
        from hermes.agent.mcp import McpManager

        agent = build_agent(settings, sessions)
        mcp = McpManager.from_settings(settings, cwd=Path.cwd())

    app = web.Application(middlewares=MIDDLEWARES, client_max_size=MAX_REQUEST_BYTES)
    app[SETTINGS] = settings
    app[AGENT] = agent
    app[SESSIONS] = sessions
    app[RESPONSES] = responses
    app[IDEMPOTENCY] = idempotency or IdempotencyCache()
    app[LIMITER] = TurnLimiter(settings.server_max_concurrent_runs)
    app[METRICS] = ServerMetrics(started_at=time.time())
    app[BACKGROUND] = set()
    app.on_response_prepare.append(on_response_prepare)

    async def resources(app: web.Application) -> AsyncIterator[None]:
        if mcp is not None:  # before the socket is bound, so the first request has the tools
            for status in await mcp.start(agent.tools):
                if status.failed:
                    log.warning("hermes serve: %s", status.line())
        yield
        for task in list(app[BACKGROUND]):
            task.cancel()
        for task in list(app[BACKGROUND]):
            with contextlib.suppress(BaseException):
                await task
        if mcp is not None:
            await mcp.aclose()
        for resource in owned:
            resource.close()

    app.cleanup_ctx.append(resources)
    app.add_routes(routes.ROUTES)
    for module in routes.HANDLER_MODULES:
        init = getattr(module, "init_app", None)
        if init is not None:
            init(app)
    return app
