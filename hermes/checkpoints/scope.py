"""What a snapshot may hold: which folders get none, what each leaves out, and its caps.

    reason = refusal(worktree, hidden, hermes_home)     # "/" or a folder holding $HOME: a reason
    names = hidden_within(worktree, hidden, hermes_home)  # worktree-relative paths to leave out

Invariants:

- `/`, a folder that holds the home folder (a strict ancestor of `$HOME`) and a folder
  inside a hidden path (a credential store such as ~/.ssh; `$HERMES_HOME` excepted, whose
  own files are left out instead) get no snapshots at all.
- The hidden paths (the confinement policy's list: credential stores, `$HERMES_HOME`, …)
  and hermes' own files that lie inside the worktree are never part of a snapshot: their
  content is never hashed into the shadow repository.
- A path goes into a gitignore file only when it holds no control character, so no name
  can write a second pattern (`exclude_pattern`); other names are left out by NUL-separated
  pathspecs, never by exclude lines.
- `SnapshotLimits` caps one snapshot: `max_files` files listed (0: no cap) and `timeout`
  seconds in all (0: no cap); past either the snapshot fails with `SnapshotTooLarge`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import CheckpointError

__all__ = [
    "DEFAULT_MAX_FILES", "DEFAULT_TIMEOUT", "SnapshotLimits", "SnapshotRefused", "SnapshotTooLarge",
    "exclude_pattern", "hidden_within", "read_bytes_bounded", "read_text_bounded", "refusal", "under_any",
]  # fmt: skip

DEFAULT_MAX_FILES = 20_000
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class SnapshotLimits:
    """Caps of one snapshot (see the module docstring)."""

    max_files: int = DEFAULT_MAX_FILES
    timeout: float = DEFAULT_TIMEOUT


class SnapshotRefused(CheckpointError):
    """This working directory gets no snapshots (`/`, one holding $HOME, a hidden path)."""


class SnapshotTooLarge(CheckpointError):
    """A snapshot went past its file-count or time cap and was left out."""


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def refusal(worktree: Path, hidden: Iterable[Path] = (), hermes_home: Path | None = None) -> str | None:
    """Why `worktree` gets no snapshots, or None when it may have them."""
    real = _real(worktree)
    if real == Path("/"):
        return "the working directory is / (the whole machine)"
    home = _real(Path.home())
    if home != real and home.is_relative_to(real):
        return f"the working directory {real} holds the home folder {home}"
    own = {_real(hermes_home), hermes_home} if hermes_home is not None else set()
    for secret in hidden:
        if secret in own or _real(secret) in own:
            continue  # hermes' own files are left out instead (hidden_within)
        if _inside(real, secret) or _inside(real, _real(secret)):
            return f"the working directory is inside {secret}, which tools may not see"
    return None


def hidden_within(worktree: Path, hidden: Iterable[Path], hermes_home: Path | None = None) -> list[str]:
    """The hidden paths (and hermes' own folder) strictly inside `worktree`, relative to it."""
    real = _real(worktree)
    candidates = list(hidden)
    if hermes_home is not None:
        candidates += [hermes_home, hermes_home / "checkpoints"]
    names: set[str] = set()
    for path in candidates:
        for form in (Path(os.path.normpath(path)), _real(path)):
            if form != real and form.is_relative_to(real):
                names.add(form.relative_to(real).as_posix())
    return sorted(names)


def under_any(name: str, folders: Sequence[str]) -> bool:
    """True when the worktree-relative `name` is one of `folders` or lies beneath one."""
    name = name.rstrip("/")
    return any(name == f or name.startswith(f + "/") for f in folders)


def exclude_pattern(name: str) -> str | None:
    """`name` as a gitignore pattern for exactly that path from the root, or None when a
    gitignore line cannot hold it (a control character: a newline would start a new line)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return None
    return "/" + "".join("\\" + c if c in "\\*?[!# " else c for c in name)


def read_text_bounded(path: Path, limit: int = 1 << 20) -> str:
    """`read_bytes_bounded` as text (undecodable bytes replaced)."""
    return read_bytes_bounded(path, limit).decode("utf-8", errors="replace")


def read_bytes_bounded(path: Path, limit: int = 1 << 20) -> bytes:
    """The first `limit` bytes of a regular file; b"" for anything else (a FIFO, a device,
    a missing file), so a hostile path can neither block nor flood the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)
