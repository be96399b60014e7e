"""Typed application state (`web.AppKey`s) shared by every handler module.

`create_app` (hermes/server/http/app.py) fills every key before the app starts; handlers
read them with ``request.app[KEY]`` (or ``request.config_dict[KEY]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from hermes.agent.engine import Agent
from hermes.config import Settings
from hermes.runs.admission import TurnLimiter
from hermes.runs.idempotency import IdempotentAnswers
from hermes.runs.registry import RunRegistry
from hermes.runs.turn_log import TurnLog
from hermes.server.http.route import RouteTable
from hermes.store.api import Storage

PLATFORM = "hermes-agent"
"""The platform name `/health` and `/v1/models` report."""

_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+")


UPSTREAM_ERROR_CODES = frozenset(
    {"provider_error", "authentication_failed", "provider_timeout", "provider_unreachable", "rate_limited",
     "streaming_unsupported"}
)
"""Turn error codes that mean the model endpoint failed (`hermes.errors.ProviderError` and subclasses)."""


@dataclass(frozen=True, slots=True)
class UpstreamError:
    code: str
    message: str
    """Redacted, without URLs, at most 200 characters."""
    at: float


@dataclass
class ServerMetrics:
    """Counters for /health/detailed (no secrets, no paths)."""

    started_at: float
    requests: int = 0
    turns: int = 0
    last_request_at: float | None = None
    last_upstream_error: UpstreamError | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def turn_started(self) -> None:
        self.turns += 1

    def note_outcome(self, error_code: str | None, error: str | None, at: float) -> None:
        """Remember a turn's failure when the model endpoint caused it."""
        if error_code in UPSTREAM_ERROR_CODES:
            text = _URL.sub("<url>", error or "")
            self.last_upstream_error = UpstreamError(error_code, text[:200], at)


SETTINGS = web.AppKey("hermes.settings", Settings)
AGENT = web.AppKey("hermes.agent", Agent)
"""The agent every endpoint runs turns on."""
STORAGE = web.AppKey("hermes.storage", Storage)
"""Every store (sessions, responses, receipts, runs, run events, leases, control channel)
of the configured backend; set by `create_app`, or at start-up when the app opens it."""
IDEMPOTENCY = web.AppKey("hermes.idempotency", IdempotentAnswers)
"""Idempotency-Key answers of the non-streaming OpenAI endpoints (receipts in the storage)."""
LIMITER = web.AppKey("hermes.limiter", TurnLimiter)
METRICS = web.AppKey("hermes.metrics", ServerMetrics)
TURN_LOG = web.AppKey("hermes.turn_log", TurnLog)
"""One log line per failed or cancelled turn, failed tool and upstream error (`hermes.runs.turn_log`)."""
RUNS = web.AppKey("hermes.runs", RunRegistry)
"""The background runs of this app (`hermes.server.rest.background_runs.attach_run_registry`)."""
ROUTE_TABLE = web.AppKey("hermes.routes", RouteTable)
"""The app's routes (`hermes.server.http.routes.TABLE`): what the router holds, which paths
need no key, what `/v1/capabilities` lists."""
OPENAPI_DOCUMENT: web.AppKey[dict[str, Any]] = web.AppKey("hermes.openapi")
"""The OpenAPI document, built once by `create_app` from the route table."""
