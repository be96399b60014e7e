"""Typed application state (`web.AppKey`s) shared by every handler module.

`create_app` (hermes/server/app.py) fills every key before the app starts; handlers
read them with ``request.app[KEY]`` (or ``request.config_dict[KEY]``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from hermes.agent.engine import Agent
from hermes.config import Settings
from hermes.server.errors import RateLimited
from hermes.server.idempotency import IdempotencyCache
from hermes.server.run_registry import RunRegistry
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
AGENT = web.AppKey("hermes.agent", Agent)
"""The agent every endpoint runs turns on."""
SESSIONS: web.AppKey[SessionStore] = web.AppKey("hermes.sessions")
"""The session store (state.db)."""
RESPONSES = web.AppKey("hermes.responses", ResponseStore)
"""The stored responses (response_store.db)."""
IDEMPOTENCY = web.AppKey("hermes.idempotency", IdempotencyCache)
"""The in-memory idempotency cache for the non-streaming OpenAI endpoints."""
LIMITER = web.AppKey("hermes.limiter", TurnLimiter)
METRICS = web.AppKey("hermes.metrics", ServerMetrics)
RUNS = web.AppKey("hermes.runs", RunRegistry)
"""The background runs of this app (`hermes.server.background_runs.attach_run_registry`)."""
OPENAPI_DOCUMENT: web.AppKey[dict[str, Any]] = web.AppKey("hermes.openapi")
"""The OpenAPI document, built once by `create_app` from the route table."""
