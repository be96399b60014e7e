"""Paths of `hermes serve`'s own REST routes that a hermes client spells too.

The server's route tables (`hermes.server.rest.sessions`, `.runs`) and the remote client
(`hermes.remote`) both take these constants, so each path string is written once
(tests/server/test_routes.py checks it). Paths with parameters are built by the client
from these bases.
"""

from __future__ import annotations

from typing import Final

SESSIONS: Final = "/api/sessions"
"""List (GET) and create (POST); one session is `SESSIONS/{session_id}`."""
SEARCH: Final = "/api/search"
"""Full-text search of message text."""
MODELS: Final = "/v1/models"
"""The advertised model (and, under `hermes`, the model that answers behind it)."""
RUNS: Final = "/v1/runs"
"""Start a run (POST); one run is `RUNS/{run_id}`, with `/events`, `/stop` and `/approval`."""
