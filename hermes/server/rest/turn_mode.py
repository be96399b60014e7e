"""The `mode` field of a turn request (`/v1/runs`, `/api/sessions/{id}/chat[/stream]`).

Absent or null: `default`. Anything but one of hermes/agent/modes.MODES is a 400
`invalid_mode` naming the modes.
"""

from __future__ import annotations

from typing import Any

from hermes.agent.modes import DEFAULT_MODE, MODES, Mode, is_mode
from hermes.server.http.schema import String

_NAMES = ", ".join(MODES)
MODE_FIELD = String(
    enum=MODES,
    error=("invalid_mode", f"'{{name}}' must be a string: one of {_NAMES}"),
    value_error=("invalid_mode", f"'{{name}}' must be one of {_NAMES}"),
    description=(
        "default; accept-edits (workspace edits never ask); plan (read-only: writes and changing commands are refused)."
    ),
)


def requested_mode(body: dict[str, Any]) -> Mode:
    """The body's mode (default when absent); RequestValidationError (400) for any other value."""
    raw = body.get("mode")
    MODE_FIELD.check(raw, "mode")
    return raw if is_mode(raw) else DEFAULT_MODE
