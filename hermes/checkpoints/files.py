"""`SessionFiles`: undo, redo and diffs of one session store's turns, local or remote.

    files: SessionFiles = LocalSessionFiles(storage.sessions, settings.home)   # this machine
    files: SessionFiles = RemoteSessions(client)                              # a hermes serve
    outcome = await files.undo(session_id, turns=2)

The chat TUI (hermes/tui/file_commands.py) and `hermes sessions undo|redo|diff` drive
either without asking which one they have. Invariants (both implementations):
- the rules are hermes/checkpoints/undo.py's, applied where the files are: a remote
  session's files are the server's, restored by the server;
- a path outside the worktree, behind a symlinked folder or protected raises
  `RestoreRefused` and changes nothing, `force` or not;
- a file changed outside hermes since the checkpoint raises `FilesChangedOutside` with its
  paths and changes nothing; `force=True` overwrites it;
- nothing to undo or redo, or a turn the session does not have, raises `NothingToUndo`;
- a diff is cut at the diff cap (`max_diff_bytes` here, the server's setting remotely) and
  says so (`TurnChange.truncated`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from hermes.checkpoints import undo as rules
from hermes.checkpoints.undo import RestoreGuard, TurnChange, UndoOutcome
from hermes.store.api import AsyncSessionStore

__all__ = ["LocalSessionFiles", "SessionFiles"]


class SessionFiles(Protocol):
    """Undo, redo and diffs of a session's turns (see the module docstring)."""

    async def undo(self, session_id: str, *, turns: int = 1, force: bool = False) -> UndoOutcome: ...

    async def redo(self, session_id: str, *, force: bool = False) -> UndoOutcome: ...

    async def turn_changes(self, session_id: str, turn: int | None = None) -> TurnChange: ...


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
        """The front end's confinement (hermes/agent/restore_guard.py): what undo and redo never write."""

    async def undo(self, session_id: str, *, turns: int = 1, force: bool = False) -> UndoOutcome:
        return await rules.undo(self.store, self.home, session_id, turns=turns, force=force, guard=self.guard)

    async def redo(self, session_id: str, *, force: bool = False) -> UndoOutcome:
        return await rules.redo(self.store, self.home, session_id, force=force, guard=self.guard)

    async def turn_changes(self, session_id: str, turn: int | None = None) -> TurnChange:
        return await rules.turn_changes(self.store, self.home, session_id, turn, max_bytes=self.max_diff_bytes)
