"""Reading an extension file only when it really lies in its folder and is small enough.

A command or skill file may be a symlink, but only to somewhere inside the folder it is
found in (`root`); one that leads outside (a cloned repository's `.hermes/commands/x.md →
~/.ssh/id_rsa`) is refused, and so is anything that is not a regular file or is larger
than the cap. The check is made on what is opened: the resolved path is opened without
following a final symlink, and its size and kind come from the open descriptor, so a file
swapped after the check is not read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Problem:
    """A command or skill file that was skipped, and why (for `/help`, `/skills`, `hermes doctor`)."""

    path: Path
    reason: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}"


class Refused(Exception):
    """Why a file was not read (one line for `/skills`, `/help` and `hermes doctor`)."""


def inside(path: Path, root: Path) -> Path:
    """`path` resolved, when it lies in `root` (resolved); else Refused."""
    try:
        resolved = path.resolve(strict=True)
        base = root.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise Refused(f"cannot resolve ({getattr(exc, 'strerror', None) or exc})") from None
    if resolved != base and not resolved.is_relative_to(base):
        raise Refused(f"a symlink to outside {root}")
    return resolved


def read_capped(path: Path, root: Path, *, max_bytes: int, head: int | None = None) -> str:
    """The text of `path` (its first `head` bytes when given), or Refused.

    Refused: outside `root` (after symlinks), not a regular file, larger than `max_bytes`,
    or unreadable. Undecodable bytes are replaced.
    """
    resolved = inside(path, root)
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Refused(f"cannot open ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file")
        if info.st_size > max_bytes:
            raise Refused(f"{info.st_size:,} bytes, over the cap of {max_bytes:,}")
        limit = min(max_bytes, head) if head is not None else max_bytes
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise Refused(f"cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if head is None and len(data) > max_bytes:
        raise Refused(f"over the cap of {max_bytes:,} bytes")
    return data[:limit].decode("utf-8", errors="replace")
