"""The file snapshots of one running turn.

    files = TurnFiles(config, store, session_id, cwd)
    notice = await files.before_tools()     # before a batch with a tool that can change files
    summary = await files.finish(turn_id)   # at the turn's end: "2 files changed, +3 −1"

Invariants:

- The "before" snapshot is taken once per turn, before the first batch holding a tool
  that is not read-only (file tools, `terminal`, MCP tools); a turn that never runs one
  takes no snapshot at all.
- `finish` takes the "after" snapshot only when there is a "before" one, and records both
  against the turn (`store.set_turn_checkpoint`) under refs
  `refs/hermes/<session>/<turn>-before|after` so pruning the session finds them.
- Checkpoints never fail a turn: a git error turns into a one-line notice and the turn
  goes on without them; a missing git is said once per `CheckpointConfig`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from hermes.checkpoints.shadow import FileChange, ShadowRepo, Snapshot, git_available
from hermes.errors import HermesError
from hermes.store.api import AsyncSessionStore

log = logging.getLogger(__name__)

__all__ = ["CheckpointConfig", "TurnFiles", "change_summary"]


@dataclass(slots=True)
class CheckpointConfig:
    """Where snapshots live and what they leave out (from Settings)."""

    home: Path
    max_file_kb: int = 1024
    enabled: bool = True
    _git_said: bool = field(default=False, repr=False)

    def missing_git_notice(self) -> str | None:
        """The one-line notice about a missing git, the first time only."""
        if self._git_said:
            return None
        self._git_said = True
        return "git is not installed: no file checkpoints this session (undo and diff need them)"


def change_summary(changes: list[FileChange]) -> str:
    """`2 files changed, +3 −1` (binary files counted, their lines not)."""
    added = sum(c.added for c in changes)
    removed = sum(c.removed for c in changes)
    files = len(changes)
    return f"{files} file{'s' if files != 1 else ''} changed, +{added} −{removed}"


class TurnFiles:
    """See the module docstring."""

    def __init__(self, config: CheckpointConfig | None, store: AsyncSessionStore | None, session_id: str,
                 cwd: Path) -> None:  # fmt: skip
        self._config = config
        self._store = store
        self._session_id = session_id
        self._repo: ShadowRepo | None = None
        self._cwd = cwd
        self.before: Snapshot | None = None
        self._off = config is None or not config.enabled or store is None

    async def before_tools(self) -> str | None:
        """Take the "before" snapshot if the turn has none yet; a notice to show, if any."""
        if self._off or self.before is not None:
            return None
        assert self._config is not None
        if not git_available():
            self._off = True
            return self._config.missing_git_notice()
        try:
            self._repo = ShadowRepo.for_worktree(self._config.home, self._cwd, max_file_kb=self._config.max_file_kb)
            self.before = await self._repo.snapshot()
        except (HermesError, OSError) as exc:
            self._off = True
            return f"no file checkpoint for this turn: {exc}"
        return _skipped_notice(self.before, self._config.max_file_kb)

    async def finish(self, turn_id: int | None) -> str | None:
        """Take the "after" snapshot and record both; the turn's change summary (or a notice)."""
        if self._off or self.before is None or self._repo is None or turn_id is None:
            return None
        assert self._store is not None
        prefix = f"refs/hermes/{self._session_id}/{turn_id}"
        try:
            after = await self._repo.snapshot(ref=f"{prefix}-after")
            await self._repo.git("update-ref", f"{prefix}-before", self.before.commit)
            await self._store.set_turn_checkpoint(
                turn_id, worktree=str(self._repo.worktree), before=self.before.commit, after=after.commit
            )
            changes = await self._repo.numstat(self.before.commit, after.commit)
        except (HermesError, OSError) as exc:
            log.warning("file checkpoint of session %s failed", self._session_id, exc_info=True)
            return f"the turn's file checkpoint failed: {exc}"
        return change_summary(changes) if changes else None


def _skipped_notice(snapshot: Snapshot, max_file_kb: int) -> str | None:
    if not snapshot.skipped:
        return None
    names = ", ".join(snapshot.skipped[:5]) + (" …" if len(snapshot.skipped) > 5 else "")
    count = len(snapshot.skipped)
    return f"checkpoint left out {count} file{'s' if count != 1 else ''} over {max_file_kb} KB: {names}"
