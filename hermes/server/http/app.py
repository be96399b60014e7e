"""`create_app`: the one factory behind `hermes serve` and every server test.

    app = create_app(settings)                        # opens the configured storage
    app = create_app(settings, storage=storage, agent=agent)   # tests: collaborators passed in

Collaborators that are passed in are used as they are (and left open); the ones the
factory opens itself are closed by the app's cleanup. PostgreSQL storage is opened (and
migrated) by the app's start-up, before the socket is bound, so the schema exists before
`/health` answers; SQLite storage opens synchronously here, as it always did.

Start-up is two cleanup contexts, closed in reverse: the runtime (`hermes.runtime.
open_runtime`: storage, repair, agent, MCP) and, on PostgreSQL, the instance's duties:
the orphan sweeper (`hermes.runs.sweeper`) for the runs of dead instances.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from aiohttp import web

from hermes.agent.engine import Agent
from hermes.config import Settings
from hermes.runs.admission import TurnLimiter
from hermes.runs.idempotency import IdempotentAnswers
from hermes.runs.sweeper import sweep_forever
from hermes.runs.turn_log import TurnLog
from hermes.runtime import open_runtime
from hermes.server.http import routes
from hermes.server.http.lifecycle import LIVE_WORK, LiveWork
from hermes.server.http.middleware import MAX_REQUEST_BYTES, MIDDLEWARES, on_response_prepare
from hermes.server.http.state import (
    AGENT,
    IDEMPOTENCY,
    LIMITER,
    METRICS,
    OPENAPI_DOCUMENT,
    ROUTE_TABLE,
    SETTINGS,
    STORAGE,
    TURN_LOG,
    ServerMetrics,
)
from hermes.server.openai.conversation import CONVERSATIONS, ConversationLocks
from hermes.server.rest.background_runs import attach_run_registry
from hermes.server.rest.openapi import build_document
from hermes.store.api import Storage
from hermes.store.configured import open_storage_at_once

if TYPE_CHECKING:
    from hermes.agent.mcp.status import McpServerStatus

log = logging.getLogger(__name__)

SHUTDOWN_DRAIN_SECONDS = 2.5
"""Seconds shutdown waits for interrupted turns to write their terminal frames."""


def create_app(
    settings: Settings,
    *,
    storage: Storage | None = None,
    agent: Agent | None = None,
    idempotency: IdempotentAnswers | None = None,
) -> web.Application:
    """Build the aiohttp application.

    Args:
        settings: resolved settings (server_* fields, `database_url`, paths under ``home``).
        storage: every store of one backend; opened (and closed at cleanup) when omitted:
            `open_storage(settings)` at start-up, or for SQLite with an agent to build,
            at once.
        agent: the agent to run turns on; built with `build_agent` when omitted.
        idempotency: the Idempotency-Key answers of the OpenAI endpoints, kept as the
            storage's receipts (default policy when omitted).
    """
    if not settings.server_memory:  # the server's sessions neither read nor write $HERMES_HOME/memories
        settings = settings.replace(memory=False)
    app = web.Application(middlewares=MIDDLEWARES, client_max_size=MAX_REQUEST_BYTES)
    app[SETTINGS] = settings
    owned: Storage | None = None
    if storage is None and agent is None:
        # Storage that opens without an event loop (SQLite files) opens now, so the agent
        # exists when `create_app` returns (`hermes serve` reads its instructions before start).
        storage = owned = open_storage_at_once(settings)
        if owned is not None:
            agent = _build_agent(settings, owned)
    if storage is not None:
        app[STORAGE] = storage
    if agent is not None:
        app[AGENT] = agent
    app[IDEMPOTENCY] = idempotency or IdempotentAnswers()
    app[LIMITER] = TurnLimiter(settings.server_max_concurrent_runs)
    app[CONVERSATIONS] = ConversationLocks()
    app[METRICS] = ServerMetrics(started_at=time.time())
    app[TURN_LOG] = TurnLog()
    app[ROUTE_TABLE] = routes.TABLE
    app[OPENAPI_DOCUMENT] = build_document(routes.TABLE)
    app.on_response_prepare.append(on_response_prepare)

    async def runtime(app: web.Application) -> AsyncIterator[None]:
        """Storage (opened here when not given: migrated before the socket is bound),
        repair, the agent and MCP (before the socket is bound, so the first request has
        their tools): `open_runtime`, closed at cleanup."""

        async def repair(opened: Storage) -> None:
            await _repair_at_start(settings, opened)

        async with open_runtime(
            settings, storage=storage, agent=agent, owned=owned is not None, repair=repair, report_mcp=_log_mcp
        ) as started:
            app[STORAGE] = started.storage
            app[AGENT] = started.agent
            yield

    async def instance_duties(app: web.Application) -> AsyncIterator[None]:
        """PostgreSQL: sweep the runs and turns of dead instances (the storage keeps this
        instance's own lease alive)."""
        current = app[STORAGE]
        if not current.caps.multi_instance:
            yield
            return
        ttl = settings.instance_lease_ttl
        sweeper = asyncio.create_task(sweep_forever(current, ttl=ttl), name=f"hermes-sweeper-{current.instance_id}")
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper

    app.cleanup_ctx.extend([runtime, instance_duties])
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
    # store: turns are interrupted first, background runs settle (their journals reach
    # the storage), then every stream has written its terminal frame (bounded by
    # SHUTDOWN_DRAIN_SECONDS).
    app.on_shutdown.append(interrupt_turns)
    attach_run_registry(app)
    app.on_shutdown.append(wait_for_streams)
    app.add_routes(routes.TABLE.route_defs())
    return app


async def _repair_at_start(settings: Settings, storage: Storage) -> None:
    """What crashed processes left (by dead process where the storage repairs at start-up;
    by lease, in the orphan sweeper, where it does not). Then expired receipts and runs are
    pruned."""
    await storage.repair_after_crash()
    await storage.receipts.prune_receipts()
    await storage.runs.prune_runs()


def _build_agent(settings: Settings, storage: Storage) -> Agent:
    from hermes.agent.factory import build_agent

    return build_agent(settings, storage.sessions)


def _log_mcp(status: McpServerStatus) -> None:
    log.warning("hermes serve: %s", status.line())
