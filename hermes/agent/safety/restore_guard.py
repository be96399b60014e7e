"""What undo and redo may never write, as the confinement policy says: the front ends' guard.

    guard = restore_guard(settings)          # passed to LocalSessionFiles / checkpoints.undo
    guard(Path("/home/me/.bashrc"), Path("/home/me"))   # -> "... is never restored", or None

Undo and redo (hermes/checkpoints/undo.py) sit below the engine and cannot import this
policy, so every front end hands it down. They have nobody to ask, so what a file tool may
write only with approval is refused as well. Invariants: a path is refused when it is (as
written or resolved) one of hermes's own files or a hidden path of the confinement
(hermes/agent/safety/confinement.py), or a sensitive file of the approval policy (shell start-up
files, ~/.ssh, /etc, $HERMES_HOME; hermes/agent/safety/protected_paths.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.safety.confinement import Confinement
from hermes.agent.safety.protected_paths import sensitive_path

if TYPE_CHECKING:
    from hermes.config import Settings

__all__ = ["restore_guard", "restore_refusal"]


def restore_refusal(policy: Confinement, path: Path, worktree: Path) -> str | None:
    """Why undo or redo in `worktree` must not write the absolute `path`, else None (see the
    module docstring; a hidden folder holding the worktree hides nothing in it, as for tools)."""
    owner = policy.protected_entry(path)
    if owner is not None:
        return f"hermes's own files ({owner}) are never restored"
    secret = policy.hidden_entry(path, worktree)
    if secret is not None:
        return f"a hidden path ({secret}) is never restored"
    for form in dict.fromkeys((str(path), os.path.realpath(path))):
        sensitive = sensitive_path(form)
        if sensitive is not None:
            return f"{sensitive[1]} is never restored"
    return None


def restore_guard(settings: Settings) -> Callable[[Path, Path], str | None]:
    """The guard of `settings`' confinement policy (built once, on first use)."""
    policy: list[Confinement] = []

    def guard(path: Path, worktree: Path) -> str | None:
        if not policy:
            policy.append(Confinement.from_settings(settings))
        return restore_refusal(policy[0], path, worktree)

    return guard
