"""The file snapshots of one running turn.

    files = TurnFiles(config, store, session_id, cwd, hidden=policy.hidden)
    notice = await files.before_tools()     # before a batch with a tool that can change files
    summary = await files.finish(turn_id)   # at the turn's end: "2 files changed, +3 −1"

Invariants:

- The "before" snapshot is taken once per turn, before the first batch holding a tool
  that is not read-only (file tools, `terminal`, MCP tools); a turn that never runs one
  takes no snapshot at all.
- `finish` takes the "after" snapshot only when there is a "before" one, and records both
  against the turn (`store.set_turn_checkpoint`) under refs
  `refs/hermes/<encoded session>/<turn>-before|after` (hermes/checkpoints/refs.py: any
  session id works) so pruning the session finds them.
- Checkpoints never fail a turn: a git error turns into a one-line notice and the turn
  goes on without them; a missing git is said once per `CheckpointConfig`.
- A working directory that gets no snapshots (`/`, one holding `$HOME`, one inside a
  hidden path) or whose snapshot goes past a cap (`max_files`, `timeout`) is said once
  per session and folder; later turns of that session there take no snapshot and say
  nothing, so a turn never waits on a snapshot that cannot be taken.
- The hidden paths given (the confinement policy's) are never part of a snapshot.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hermes.checkpoints.refs import session_ref_prefix
from hermes.checkpoints.scope import (
    DEFAULT_MAX_FILES,
    DEFAULT_TIMEOUT,
    SnapshotLimits,
    SnapshotRefused,
    SnapshotTooLarge,
)
from hermes.checkpoints.shadow import FileChange, ShadowRepo, Snapshot, git_available
from hermes.errors import HermesError
from hermes.store.api import AsyncSessionStore

log = logging.getLogger(__name__)

__all__ = ["CheckpointConfig", "TurnFiles", "change_summary"]


@dataclass(slots=True)
class CheckpointConfig:
    """Where snapshots live, what they leave out and their caps (from Settings)."""

    home: Path
    max_file_kb: int = 1024
    enabled: bool = True
    max_files: int = DEFAULT_MAX_FILES
    """Files one snapshot may list (0: no cap); past it the snapshot is left out."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds one snapshot may take (0: no cap); past it the snapshot is left out."""
    _git_said: bool = field(default=False, repr=False)
    _skipped: set[tuple[str, str]] = field(default_factory=set, repr=False)
    """(session id, worktree) pairs told they get no snapshots: later turns skip quietly."""

    @property
    def limits(self) -> SnapshotLimits:
        return SnapshotLimits(self.max_files, self.timeout)

    def missing_git_notice(self) -> str | None:
        """The one-line notice about a missing git, the first time only."""
        if self._git_said:
            return None
        self._git_said = True
        return "git is not installed: no file checkpoints this session (undo and diff need them)"

    def skip_from_now(self, session_id: str, worktree: Path) -> None:
        self._skipped.add((session_id, os.path.realpath(worktree)))

    def skipped(self, session_id: str, worktree: Path) -> bool:
        return (session_id, os.path.realpath(worktree)) in self._skipped


def change_summary(changes: list[FileChange]) -> str:
    """`2 files changed, +3 −1` (binary files counted, their lines not)."""
    added = sum(c.added for c in changes)
    removed = sum(c.removed for c in changes)
    files = len(changes)
    return f"{files} file{'s' if files != 1 else ''} changed, +{added} −{removed}"


class TurnFiles:
    """See the module docstring."""

    def __init__(self, config: CheckpointConfig | None, store: AsyncSessionStore | None, session_id: str,
                 cwd: Path, *, hidden: Sequence[Path] = ()) -> None:  # fmt: skip
        self._config = config
        self._store = store
        self._session_id = session_id
        self._repo: ShadowRepo | None = None
        self._cwd = cwd
        self._hidden = tuple(hidden)
        self.before: Snapshot | None = None
        self._off = config is None or not config.enabled or store is None

    async def before_tools(self) -> str | None:
        """Take the "before" snapshot if the turn has none yet; a notice to show, if any."""
        if self._off or self.before is not None:
            return None
        config = self._config
        assert config is not None
        if not git_available():
            self._off = True
            return config.missing_git_notice()
        if config.skipped(self._session_id, self._cwd):
            self._off = True
            return None
        try:
            self._repo = ShadowRepo.for_worktree(
                config.home, self._cwd, max_file_kb=config.max_file_kb, hidden=self._hidden, limits=config.limits
            )  # fmt: skip
            self.before = await self._repo.snapshot()
        except SnapshotRefused as exc:
            self._off = True
            config.skip_from_now(self._session_id, self._cwd)
            return f"no file checkpoints this session: {exc}"
        except SnapshotTooLarge as exc:
            self._off = True
            config.skip_from_now(self._session_id, self._cwd)
            return (f"no file checkpoints in this folder this session: {exc} "
                    "(settings checkpoint_max_files, checkpoint_timeout)")  # fmt: skip
        except (HermesError, OSError) as exc:
            self._off = True
            return f"no file checkpoint for this turn: {exc}"
        return _skipped_notice(self.before, config.max_file_kb)

    async def finish(self, turn_id: int | None) -> str | None:
        """Take the "after" snapshot and record both; the turn's change summary (or a notice)."""
        if self._off or self.before is None or self._repo is None or turn_id is None:
            return None
        assert self._store is not None
        prefix = f"{session_ref_prefix(self._session_id)}{turn_id}"
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
