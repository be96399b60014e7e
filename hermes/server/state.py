"""Typed application state (`web.AppKey`s) shared by every handler module.

`create_app` (hermes/server/app.py) fills these before the app starts; handlers read
them with ``request.app[KEY]`` (or ``request.config_dict[KEY]``). Handler modules that
need state of their own define their own ``web.AppKey`` and set it in an ``init_app``
hook (see hermes/server/routes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes.config import Settings
from hermes.server.errors import RateLimited

if TYPE_CHECKING:
    from hermes.server.idempotency import IdempotencyCache
    from hermes.store.base import SessionStore
    from hermes.store.responses import ResponseStore


class TurnLimiter:
    """Counts turns in flight across every agent endpoint; beyond `limit` → 429.

    Only in-flight work counts (not open streams that have finished their turn).
    ``limit <= 0`` disables the cap.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    @contextlib.contextmanager
    def admit(self) -> Iterator[None]:
        if self.limit > 0 and self.active >= self.limit:
            raise RateLimited(f"Too many concurrent runs (max {self.limit})")
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1


@dataclass
class ServerMetrics:
    """Counters for /health/detailed (no secrets, no paths)."""

    started_at: float
    requests: int = 0
    turns: int = 0
    last_request_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


SETTINGS = web.AppKey("hermes.settings", Settings)
AGENT = web.AppKey("hermes.agent", object)
"""The `hermes.agent.engine.Agent` every endpoint runs turns on."""
SESSIONS = web.AppKey("hermes.sessions", object)
"""The `SessionStore` (state.db)."""
RESPONSES = web.AppKey("hermes.responses", object)
"""The `ResponseStore` (response_store.db)."""
IDEMPOTENCY = web.AppKey("hermes.idempotency", object)
"""The in-memory `IdempotencyCache` for non-streaming OpenAI endpoints."""
LIMITER = web.AppKey("hermes.limiter", TurnLimiter)
METRICS = web.AppKey("hermes.metrics", ServerMetrics)
BACKGROUND = web.AppKey("hermes.background", set)
"""Strong references to fire-and-forget tasks (shared idempotent computations…)."""


def sessions(app: web.Application) -> SessionStore:
    return app[SESSIONS]  # type: ignore[return-value]


def responses(app: web.Application) -> ResponseStore:
    return app[RESPONSES]  # type: ignore[return-value]


def idempotency(app: web.Application) -> IdempotencyCache:
    return app[IDEMPOTENCY]  # type: ignore[return-value]


def background_tasks(app: web.Application) -> set[asyncio.Task[Any]]:
    return app[BACKGROUND]
