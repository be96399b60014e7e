"""`create_app`: the one factory behind `hermes serve` and every server test.

    app = create_app(settings)                          # opens state.db, response_store.db, builds the agent
    app = create_app(settings, agent=agent, sessions=store, responses=ResponseStore())   # tests

Collaborators that are passed in are used as they are (and left open); the ones the
factory opens itself are closed by the app's cleanup context.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from hermes.agent.engine import Agent
from hermes.config import Settings
from hermes.server import routes
from hermes.server.background_runs import attach_run_registry
from hermes.server.handlers.openapi import build_document
from hermes.server.idempotency import IdempotencyCache
from hermes.server.lifecycle import LIVE_WORK, LiveWork
from hermes.server.middleware import MAX_REQUEST_BYTES, MIDDLEWARES, on_response_prepare
from hermes.server.state import (
    AGENT,
    IDEMPOTENCY,
    LIMITER,
    METRICS,
    OPENAPI_DOCUMENT,
    RESPONSES,
    SESSIONS,
    SETTINGS,
    ServerMetrics,
    TurnLimiter,
)
from hermes.store.base import SessionStore
from hermes.store.responses import ResponseStore

log = logging.getLogger(__name__)

SHUTDOWN_DRAIN_SECONDS = 2.5
"""Seconds shutdown waits for interrupted turns to write their terminal frames."""


def create_app(
    settings: Settings,
    *,
    agent: Agent | None = None,
    sessions: SessionStore | None = None,
    responses: ResponseStore | None = None,
    idempotency: IdempotencyCache | None = None,
) -> web.Application:
    """Build the aiohttp application.

    Args:
        settings: resolved settings (server_* fields, paths under ``home``).
        agent: the agent to run turns on; built with
            `hermes.agent.factory.build_agent(settings, sessions)` when omitted.
        sessions: the session store; opened at ``settings.state_db_path`` when omitted.
        responses: the stored responses; opened at ``settings.response_db_path`` when omitted.
        idempotency: the in-memory idempotency cache (a fresh one when omitted).
    """
    owned_sessions: SessionStore | None = None
    owned_responses: ResponseStore | None = None
    if sessions is None:
        from hermes.store import open_session_store

        settings.ensure_home()
        sessions = owned_sessions = open_session_store(settings.state_db_path)
    if responses is None:
        settings.ensure_home()
        responses = owned_responses = ResponseStore(
            settings.response_db_path, max_size=settings.server_response_store_size
        )
    from hermes.store.repair import repair_after_crash

    repair_after_crash(sessions, responses, runs_db=settings.home / "runs.db")  # what crashed processes left
    mcp = None
    owns_agent = agent is None
    if agent is None:
        from hermes.agent.factory import build_agent
        from hermes.agent.mcp import McpManager
        from hermes.store.sqlite import SqliteSessionStore
        from hermes.store.sqlite_async import SqliteSessions

        assert isinstance(sessions, SqliteSessionStore)
        agent = build_agent(settings, SqliteSessions(sessions))  # engine-store:
        mcp = McpManager.from_settings(settings, cwd=Path.cwd())
    tools = agent.tools

    app = web.Application(middlewares=MIDDLEWARES, client_max_size=MAX_REQUEST_BYTES)
    app[SETTINGS] = settings
    app[AGENT] = agent
    app[SESSIONS] = sessions
    app[RESPONSES] = responses
    app[IDEMPOTENCY] = idempotency or IdempotencyCache()
    app[LIMITER] = TurnLimiter(settings.server_max_concurrent_runs)
    app[METRICS] = ServerMetrics(started_at=time.time())
    app[OPENAPI_DOCUMENT] = build_document(routes.OPENAPI_PATHS, routes.OPENAPI_SCHEMAS)
    app.on_response_prepare.append(on_response_prepare)

    async def resources(app: web.Application) -> AsyncIterator[None]:
        if mcp is not None:  # before the socket is bound, so the first request has the tools
            for status in await mcp.start(tools):
                if status.failed:
                    log.warning("hermes serve: %s", status.line())
        yield
        if mcp is not None:
            await mcp.aclose()
        if owns_agent:  # its provider's pooled connections
            await agent.aclose()
        if owned_sessions is not None:
            owned_sessions.close()
        if owned_responses is not None:
            owned_responses.close()

    app.cleanup_ctx.append(resources)
    metrics = app[METRICS]
    live = app[LIVE_WORK] = LiveWork(lambda result: metrics.note_outcome(result.error_code, result.error, time.time()))

    async def interrupt_turns(app: web.Application) -> None:
        live.begin_shutdown()

    async def wait_for_streams(app: web.Application) -> None:
        if not await live.drained(SHUTDOWN_DRAIN_SECONDS):
            log.warning(
                "hermes serve: %d turn(s) and %d stream(s) still open at shutdown",
                live.active_turns,
                live.active_streams,
            )

    # on_shutdown runs before aiohttp cancels handlers and before any cleanup closes a
    # store: turns are interrupted first, background runs settle, then every stream has
    # written its terminal frame (bounded by SHUTDOWN_DRAIN_SECONDS).
    app.on_shutdown.append(interrupt_turns)
    attach_run_registry(app)
    app.on_shutdown.append(wait_for_streams)
    app.add_routes(routes.ROUTES)
    return app
