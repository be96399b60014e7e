"""Undo, redo and diffs of a stored session's turns, for every front end.

    outcome = await undo(store, home, session_id, turns=2)     # files back, the turns hidden
    outcome = await redo(store, home, session_id)              # both back again
    patch = await turn_diff(store, home, session_id, turn=3)   # a patch `git apply` accepts

`home` is `Settings.home`: the shadow repositories live under it (hermes/checkpoints/shadow.py).

Invariants:

- Undo of the newest N visible turns puts every file those turns changed back to what it
  was before the first of them changed it; redo puts each back to what the last of them
  left. Only those files are written; every other file is left alone.
- A file that differs from what the checkpoint says it should be now (edited outside
  hermes since) is never overwritten unless `force`: `FilesChangedOutside` names them
  and nothing at all is changed (neither files nor the store).
- The files are restored first, then the turns are hidden (or shown) in the store.
- Every path written or deleted lies beneath its worktree, reached with no symlink followed
  (ShadowRepo.restore); a path that is not, git's own files (a `.git` component), hermes's
  home (unless the worktree lies inside it) and whatever the front end's `guard` names (the
  confinement's protected and hidden paths) are refused with `RestoreRefused` before
  anything is changed. `force` overrides neither.
- A session with an open turn (a run in progress) refuses both: `TurnInProgress`.
- Turns that took no snapshot are hidden and shown all the same (they changed no files).
- Turn numbers (`turn=N`) count the session's visible turns from 1; None is the newest.
- With `roots` (the server's working directory and writable roots), a session that
  recorded a worktree outside every root raises `OutsideRoots` before anything is read,
  written or hidden; a session that never recorded one has no files to reach.
- A diff holds at most `max_bytes` of git's output (git is stopped there): `truncated`
  says it was cut.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes.checkpoints.shadow import Entry, FileChange, ShadowRepo, git_available, prune_session
from hermes.errors import (
    CheckpointError,
    FilesChangedOutside,
    NothingToUndo,
    RestoreRefused,
    TurnInProgress,
    UsageError,
)  # fmt: skip
from hermes.store.api import AsyncSessionStore
from hermes.store.records import TurnCheckpoint

RestoreGuard = Callable[[Path, Path], "str | None"]
"""Why a restore must not write an absolute path in a worktree, (path, worktree) -> reason,
else None: the confinement's answer (hermes/agent/safety/restore_guard.py), handed down by the front end."""

__all__ = [
    "DEFAULT_MAX_DIFF_BYTES", "OutsideRoots", "RestoreGuard", "TurnChange", "UndoOutcome", "check_roots",
    "delete_session", "path_refuser", "prune_session", "redo", "turn_changes", "turn_diff", "undo",
]  # fmt: skip

DEFAULT_MAX_DIFF_BYTES = 5 * 1024 * 1024
"""`Settings.max_diff_bytes`' default."""


class OutsideRoots(CheckpointError):
    """The session's files lie outside the folders the caller may reach (its worktree is another's)."""

    code = "session_not_found"


@dataclass(frozen=True, slots=True)
class UndoOutcome:
    """What an undo or redo did."""

    turns: tuple[int, ...]
    """The turn ids hidden (undo) or brought back (redo), oldest first."""
    files: tuple[str, ...]
    """The files written or deleted, relative to their worktree."""


@dataclass(frozen=True, slots=True)
class TurnChange:
    """One turn's change: its number among the visible turns, its files and patch."""

    number: int
    turn_id: int
    files: tuple[FileChange, ...]
    patch: str
    truncated: bool = False
    """The patch (or the file list) was cut at the diff cap."""


async def undo(
    store: AsyncSessionStore, home: Path, session_id: str, *, turns: int = 1, force: bool = False,
    roots: Sequence[Path] | None = None, guard: RestoreGuard | None = None,
) -> UndoOutcome:
    """Undo the newest `turns` visible turns (see the module docstring)."""
    if turns < 1:
        raise UsageError("the number of turns to undo must be 1 or more")
    rows = _within(await _settled(store, session_id), roots)
    visible = [t for t in rows if t.undone is None]
    if not visible:
        raise NothingToUndo(await _none_left(store, session_id, "nothing to undo: the session has no turns left"))
    group = visible[-turns:]
    files = await _move(home, group, forward=False, force=force, guard=guard)
    hidden = await store.undo_turns(session_id, len(group))
    return UndoOutcome(tuple(hidden), files)


async def redo(
    store: AsyncSessionStore, home: Path, session_id: str, *, force: bool = False,
    roots: Sequence[Path] | None = None, guard: RestoreGuard | None = None,
) -> UndoOutcome:  # fmt: skip
    """Bring back the turns of the newest undo, files included (see the module docstring)."""
    rows = _within(await _settled(store, session_id), roots)
    markers = [t.undone for t in rows if t.undone is not None]
    if not markers:
        raise NothingToUndo("nothing to redo")
    group = [t for t in rows if t.undone == max(markers)]
    if any(t.undone is None and t.turn_id > group[-1].turn_id for t in rows):
        raise NothingToUndo("nothing to redo: the conversation went on after the undo")
    files = await _move(home, group, forward=True, force=force, guard=guard)
    shown = await store.redo_turns(session_id)
    return UndoOutcome(tuple(shown), files)


async def turn_changes(store: AsyncSessionStore, home: Path, session_id: str, turn: int | None = None,
                       *, color: bool = False, max_bytes: int = DEFAULT_MAX_DIFF_BYTES,
                       roots: Sequence[Path] | None = None) -> TurnChange:  # fmt: skip
    """The change of visible turn number `turn` (None: the newest), its patch cut at `max_bytes`."""
    visible = [t for t in _within(await store.turn_checkpoints(session_id), roots) if t.undone is None]
    if not visible:
        raise NothingToUndo(await _none_left(store, session_id, "the session has no turns"))
    if turn is None:
        turn = len(visible)
    if not 1 <= turn <= len(visible):
        count = f"{len(visible)} turn{'s' if len(visible) != 1 else ''}"
        raise NothingToUndo(f"no turn {turn}: the session has {count}")
    row = visible[turn - 1]
    if row.worktree is None or row.before is None or row.after is None:
        return TurnChange(turn, row.turn_id, (), "")
    repo = _repo(home, row.worktree)
    changes, files_cut = await repo.numstat_capped(row.before, row.after, max_bytes)
    patch = await repo.diff_capped(row.before, row.after, max_bytes, color=color)
    return TurnChange(turn, row.turn_id, tuple(changes), patch.text, files_cut or patch.truncated)


async def turn_diff(store: AsyncSessionStore, home: Path, session_id: str, turn: int | None = None,
                    *, max_bytes: int = DEFAULT_MAX_DIFF_BYTES) -> str:  # fmt: skip
    """The patch of visible turn number `turn` (None: the newest); empty when it changed no file."""
    return (await turn_changes(store, home, session_id, turn, max_bytes=max_bytes)).patch


async def delete_session(store: AsyncSessionStore, home: Path, session_id: str) -> None:
    """Delete the session from the store, then its snapshots (`prune_session`)."""
    await store.delete_session(session_id)
    await prune_session(home, session_id)


# ---- internals ---------------------------------------------------------------------


async def _none_left(store: AsyncSessionStore, session_id: str, message: str) -> str:
    """`message`, and for a fork where its own turns end: the fork point, and where the
    turns before it are (a fork's diff and undo reach back to its fork point, not past it)."""
    record = await store.find_session(session_id)
    if record is None or record.parent_session_id is None:
        return message
    parent = record.parent_session_id
    return (
        f"{message} since it was forked from {parent}; the turns before the fork point are "
        f"{parent}'s (hermes sessions diff {parent})"
    )


async def _settled(store: AsyncSessionStore, session_id: str) -> list[TurnCheckpoint]:
    rows = await store.turn_checkpoints(session_id)
    if any(not t.ended for t in rows):
        raise TurnInProgress(session_id)
    return rows


async def check_roots(store: AsyncSessionStore, session_id: str, roots: Sequence[Path]) -> None:
    """`OutsideRoots` when the session recorded a worktree outside every one of `roots`."""
    _within(await store.turn_checkpoints(session_id), roots)


def _within(rows: list[TurnCheckpoint], roots: Sequence[Path] | None) -> list[TurnCheckpoint]:
    """`rows`, unless one recorded a worktree outside every root (then `OutsideRoots`)."""
    if roots is None:
        return rows
    real = [os.path.realpath(root) for root in roots]
    for row in rows:
        if row.worktree is None:
            continue
        tree = os.path.realpath(row.worktree)
        if not any(tree == root or tree.startswith(root.rstrip("/") + "/") for root in real):
            raise OutsideRoots("Session not found")
    return rows


def _repo(home: Path, worktree: str) -> ShadowRepo:
    if not git_available():
        raise CheckpointError("git is not installed: file checkpoints cannot be read")
    return ShadowRepo.for_worktree(home, Path(worktree))


def path_refuser(home: Path, worktree: Path, guard: RestoreGuard | None) -> Callable[[str], str | None]:
    """Why a restore in `worktree` must not write a relative path, else None (see the module docstring)."""
    own = Path(os.path.realpath(home))

    def refuse(path: str) -> str | None:
        if ".git" in path.split("/"):
            return "git's own files (.git) are never restored"
        absolute = worktree / path
        inside_own = worktree == own or own in worktree.parents  # the person chose to work there
        if not inside_own and (absolute == own or own in absolute.parents):
            return f"hermes's own files ({own}) are never restored"
        return guard(absolute, worktree) if guard is not None else None

    return refuse


async def _move(
    home: Path, group: Sequence[TurnCheckpoint], *, forward: bool, force: bool, guard: RestoreGuard | None
) -> tuple[str, ...]:
    """Restore the files of `group` to before it (undo) or after it (redo)."""
    by_tree: dict[str, list[TurnCheckpoint]] = {}
    for row in group:
        if row.worktree is not None and row.before is not None and row.after is not None:
            by_tree.setdefault(row.worktree, []).append(row)
    plans: list[tuple[ShadowRepo, dict[str, Entry | None]]] = []
    conflicts: list[str] = []
    for worktree, rows in by_tree.items():
        repo = _repo(home, worktree)
        if str(repo.worktree) != worktree:  # recorded as a real path: a symlink now stands on the way
            raise RestoreRefused([(worktree, f"the worktree now leads to {repo.worktree} through a symlink")])
        first: dict[str, TurnCheckpoint] = {}
        last: dict[str, TurnCheckpoint] = {}
        for row in rows:
            assert row.before is not None and row.after is not None
            for path in await repo.changed(row.before, row.after):
                first.setdefault(path, row)
                last[path] = row
        if not first:
            continue
        now = await repo.entries((await repo.snapshot()).commit)
        cache: dict[str, dict[str, Entry]] = {}
        targets: dict[str, Entry | None] = {}
        for path in sorted(first):
            before_commit = first[path].before
            after_commit = last[path].after
            assert before_commit is not None and after_commit is not None
            old, new = await _entry(repo, cache, before_commit, path), await _entry(repo, cache, after_commit, path)
            expected, target = (old, new) if forward else (new, old)
            if now.get(path) != expected:
                conflicts.append(path)
            targets[path] = target
        plans.append((repo, targets))
    refusals = [refusal for repo, targets in plans for refusal in _refusals(repo, targets, home, guard)]
    if refusals:
        raise RestoreRefused(refusals)
    if conflicts and not force:
        raise FilesChangedOutside(conflicts)
    written: list[str] = []
    for repo, targets in plans:
        await repo.restore(targets, refuse=path_refuser(home, repo.worktree, guard))
        written.extend(targets)
    return tuple(written)


def _refusals(
    repo: ShadowRepo, targets: dict[str, Entry | None], home: Path, guard: RestoreGuard | None
) -> list[tuple[str, str]]:
    """(path, why) for each target the restore would refuse: checked for every worktree before
    any is written, so a refused path in one worktree changes nothing in another."""
    try:
        repo.check_targets(targets, refuse=path_refuser(home, repo.worktree, guard))
    except RestoreRefused as exc:
        return exc.refusals
    return []


async def _entry(repo: ShadowRepo, cache: dict[str, dict[str, Entry]], commit: str, path: str) -> Entry | None:
    if commit not in cache:
        cache[commit] = await repo.entries(commit)
    return cache[commit].get(path)
