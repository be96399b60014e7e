"""hermes' modes as ACP session modes (`modes` in session/new and session/load, `session/set_mode`).

The ids are hermes' own mode names (hermes/agent/modes.py); an unknown id is an
invalid-params error that names them.
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import SessionMode, SessionModeState

from hermes.agent.modes import MODE_HELP, MODES, Mode, is_mode

_NAMES: dict[Mode, str] = {"default": "Default", "accept-edits": "Accept edits", "plan": "Plan (read-only)"}


def mode_state(current: Mode) -> SessionModeState:
    """The modes offered, and `current` as the session's mode."""
    return SessionModeState(
        current_mode_id=current,
        available_modes=[SessionMode(id=mode, name=_NAMES[mode], description=MODE_HELP[mode]) for mode in MODES],
    )


def mode_from_id(mode_id: str) -> Mode:
    """The mode `mode_id` names; RequestError (invalid params) for any other id."""
    if not is_mode(mode_id):
        raise RequestError.invalid_params(
            {"modeId": mode_id, "message": f"unknown mode {mode_id!r}: use one of {', '.join(MODES)}"}
        )
    return mode_id
