"""`LocalSessionFiles`: undo, redo and diffs of a local session store's turns.

    files = LocalSessionFiles(storage.sessions, settings.home, guard=...)   # this machine
    outcome = await files.undo(session_id, turns=2)

It is the local `SessionFiles` (hermes/backend.py, where the protocol and its invariants
live; `RemoteSessions` is the server's), which `open_backend` hands the chat TUI
(hermes/tui/file_commands.py) and `hermes sessions undo|redo|diff`. The rules are
hermes/checkpoints/undo.py's; a diff is cut at `max_diff_bytes` and says so
(`TurnChange.truncated`); `guard` is the front end's confinement (what undo and redo
never write).
"""

from __future__ import annotations

from pathlib import Path

from hermes.checkpoints import undo as rules
from hermes.checkpoints.undo import RestoreGuard, TurnChange, UndoOutcome
from hermes.store.api import AsyncSessionStore

__all__ = ["LocalSessionFiles"]


class LocalSessionFiles:
    """`SessionFiles` of a local store, whose shadow repositories live under `home`."""

    def __init__(
        self, store: AsyncSessionStore, home: Path, *, max_diff_bytes: int = rules.DEFAULT_MAX_DIFF_BYTES,
        guard: RestoreGuard | None = None,
    ) -> None:
        self.store = store
        self.home = home
        self.max_diff_bytes = max_diff_bytes
        self.guard = guard
        """The front end's confinement (hermes/agent/safety/restore_guard.py): what undo and redo never write."""

    async def undo(self, session_id: str, *, turns: int = 1, force: bool = False) -> UndoOutcome:
        return await rules.undo(self.store, self.home, session_id, turns=turns, force=force, guard=self.guard)

    async def redo(self, session_id: str, *, force: bool = False) -> UndoOutcome:
        return await rules.redo(self.store, self.home, session_id, force=force, guard=self.guard)

    async def turn_changes(self, session_id: str, turn: int | None = None) -> TurnChange:
        return await rules.turn_changes(self.store, self.home, session_id, turn, max_bytes=self.max_diff_bytes)
