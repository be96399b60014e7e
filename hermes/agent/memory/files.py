"""Reading and changing the memory files, safely.

    files = MemoryFiles(home, MemoryCaps(memory=4000, user=2000))
    files.read("memory")                          # "" when missing
    files.update("user", lambda text: new_text)   # locked read-change-write

Invariants:

- The folder is `<home>/memories` (mode 0700); the files are `MEMORY.md` and `USER.md`
  (mode 0600). `home` is resolved once (the person chose it); below it nothing is
  followed: the folder is opened with O_NOFOLLOW from home's descriptor (hermes/beneath.py),
  and a file is opened with O_NOFOLLOW from the folder's. A symlink at `memories`,
  `MEMORY.md`, `USER.md` or the lock file is refused (`MemoryRefused`), never followed or
  replaced; so is a name that is not a folder or not a regular file.
- A write is a temp file + rename in the opened folder (beneath.Folder.write): a reader
  sees the old text or the new, never a part.
- `update` holds an exclusive `flock` on `memories/.lock` from its read to its rename, so
  two sessions (threads or processes) changing a file at once both land: the second reads
  what the first wrote. Taking the lock waits at most `lock_timeout` seconds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes.beneath import Folder, PathRefused
from hermes.errors import ToolError

Target = Literal["memory", "user"]
TARGETS: tuple[Target, ...] = ("memory", "user")
FOLDER = "memories"
FILE_NAMES: dict[Target, str] = {"memory": "MEMORY.md", "user": "USER.md"}
CAP_SETTINGS: dict[Target, str] = {"memory": "memory_max_chars", "user": "user_memory_max_chars"}
LOCK_FILE = ".lock"
DEFAULT_CAPS = {"memory": 4000, "user": 2000}

MAX_READ = 256 * 1024
"""Bytes of a file read at most (a hand-edited file may be larger; the prompt takes its cap of it)."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class MemoryRefused(ToolError):
    """The memory folder or a file in it is a symlink or of the wrong kind: nothing was read or written."""


@dataclass(frozen=True, slots=True)
class MemoryCaps:
    """Characters each file may hold (settings memory_max_chars, user_memory_max_chars)."""

    memory: int = DEFAULT_CAPS["memory"]
    user: int = DEFAULT_CAPS["user"]

    def of(self, target: Target) -> int:
        return self.memory if target == "memory" else self.user


class MemoryFiles:
    """The two memory files of one hermes home (see the module docstring)."""

    def __init__(self, home: Path, caps: MemoryCaps | None = None, *, lock_timeout: float = 10.0) -> None:
        self.home = home
        self.caps = caps or MemoryCaps()
        self.lock_timeout = lock_timeout

    @property
    def folder(self) -> Path:
        return self.home / FOLDER

    def path(self, target: Target) -> Path:
        return self.folder / FILE_NAMES[target]

    # ---- reading -----------------------------------------------------------------------

    def read(self, target: Target) -> str:
        """The file's text ("" when it or the folder is missing); MemoryRefused for a symlink."""
        try:
            with self._opened_folder(create=False) as folder:
                return _read_at(folder.fd, FILE_NAMES[target], self.path(target))
        except FileNotFoundError:
            return ""

    # ---- changing ----------------------------------------------------------------------

    def update(self, target: Target, change: Callable[[str], str]) -> tuple[str, str]:
        """Under the lock: read the file, write `change(text)` when it differs; (before, after).

        `change` raises to leave the file as it was.
        """
        with self._opened_folder(create=True) as folder, self._locked(folder.fd):
            name = FILE_NAMES[target]
            before = _read_at(folder.fd, name, self.path(target))
            after = change(before)
            if after != before:
                _write(folder, name, after)
            return before, after

    def ensure(self, target: Target) -> Path:
        """Make the folder and an empty file when missing (for `hermes memory edit`); the file's path."""
        with self._opened_folder(create=True) as folder, self._locked(folder.fd):
            name = FILE_NAMES[target]
            try:
                _read_at(folder.fd, name, self.path(target), missing_ok=False)
            except FileNotFoundError:
                _write(folder, name, "")
        return self.path(target)

    def refresh(self, target: Target, text: str) -> None:
        """Replace the file with `text` under the lock (an editor's result, cleaned)."""
        with self._opened_folder(create=True) as folder, self._locked(folder.fd):
            _write(folder, FILE_NAMES[target], text)

    # ---- the folder and the lock -------------------------------------------------------

    @contextlib.contextmanager
    def _opened_folder(self, *, create: bool) -> Iterator[Folder]:
        """`<home>/memories` opened without following a symlink (made, with home, when `create`)."""
        home = self.home.expanduser()
        if create:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
        home = home.resolve()
        try:
            parent = Folder.open(home)
        except PathRefused as exc:
            if not create and "does not exist" in exc.reason:
                raise FileNotFoundError(errno.ENOENT, "no hermes home", str(home)) from None
            raise MemoryRefused(f"cannot open hermes' home {home}: {exc.reason}") from None
        try:
            fd = self._open_memories(parent.fd, create=create)
        finally:
            parent.close()
        folder = Folder(fd, home / FOLDER)
        try:
            yield folder
        finally:
            folder.close()

    def _open_memories(self, home_fd: int, *, create: bool) -> int:
        try:
            fd = os.open(FOLDER, _DIR_FLAGS, dir_fd=home_fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(FOLDER, 0o700, dir_fd=home_fd)
            return self._open_memories(home_fd, create=False)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise MemoryRefused(
                    f"refusing to use {self.folder}: it is a symlink or not a folder (memory lives in a real folder)"
                ) from None
            raise
        try:
            found = os.fstat(fd)
            if found.st_uid == os.getuid() and stat.S_IMODE(found.st_mode) != 0o700:
                os.fchmod(fd, 0o700)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextlib.contextmanager
    def _locked(self, folder_fd: int) -> Iterator[None]:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(LOCK_FILE, flags, 0o600, dir_fd=folder_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise MemoryRefused(f"refusing to use {self.folder / LOCK_FILE}: it is a symlink") from None
            raise
        try:
            deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise ToolError(
                            f"the memory files are locked by another session ({self.folder / LOCK_FILE}) "
                            f"for over {self.lock_timeout:g}s; try again"
                        ) from None
                    time.sleep(0.02)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


def _read_at(folder_fd: int, name: str, shown: Path, *, missing_ok: bool = True) -> str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder_fd)
    except FileNotFoundError:
        if missing_ok:
            return ""
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemoryRefused(f"refusing to read {shown}: it is a symlink") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise MemoryRefused(f"refusing to read {shown}: it is not a regular file")
        return handle.read(MAX_READ).decode("utf-8", errors="replace")


def _write(folder: Folder, name: str, text: str) -> None:
    found = folder.lstat(name)
    if found is not None and not stat.S_ISREG(found.st_mode):
        kind = "a symlink" if stat.S_ISLNK(found.st_mode) else "not a regular file"
        raise MemoryRefused(f"refusing to write {folder.path / name}: it is {kind}")
    folder.write(name, text.encode("utf-8"), mode=0o600)
