"""Paths of `hermes serve`'s own REST routes that a hermes client spells too.

The server's route table (`hermes.server.rest.sessions`) and the remote client
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
