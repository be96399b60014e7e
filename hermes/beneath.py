"""Files written beneath an opened folder, no symlink followed on the way.

    with Folder.open(worktree) as tree:          # the folder opened from `/`, no symlink followed
        tree.check("d/x")                        # PathRefused: `..`, absolute, d/ a symlink, …
        tree.write("d/x", data, mode=0o644)      # missing folders made; temp file + rename
        tree.symlink("d/link", "target")
        tree.remove("d/x"); tree.prune_empty("d")
    write_resolved(Path("/real/dir/file"), data) # one approved real path, opened the same way

Undo and redo (hermes/checkpoints/shadow.py), write_file and patch
(hermes/agent/tools/files.py) and the ACP host's disk fallback
write only through here. It sits beside hermes/errors.py, below the engine and the
checkpoints, so both can use it.

Invariants:
- Every folder on a path is opened from its parent's descriptor and never followed when it
  is a symlink: one `openat2` with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel
  has it, else one component at a time with O_NOFOLLOW | O_DIRECTORY (missing folders made
  with mkdir relative to their parent's descriptor). `USE_OPENAT2` forces either (None:
  openat2 when the kernel answers it).
- A relative path that is empty, absolute, or holds `.`, `..`, an empty component or NUL is
  refused before anything is opened; so is a folder on the way that is a symlink or not a
  folder. `PathRefused` names the path and why.
- A file is written under a fresh temp name in its opened folder (O_EXCL | O_NOFOLLOW) and
  renamed over its name, both relative to that folder's descriptor: the file is replaced
  whole, and a symlink at the name is replaced, never followed. Deletes unlink relative to
  the folder's descriptor (unlink never follows a symlink).
- Nothing here looks a path up by name after it was opened: what is written is beneath what
  was opened.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import cast

__all__ = ["USE_OPENAT2", "Folder", "PathRefused", "openat2_available", "write_resolved"]

USE_OPENAT2: bool | None = None
"""None: use openat2 when the kernel has it; False: the O_NOFOLLOW walk; True: openat2 only."""

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the syscall is newer than the split)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_REFUSING = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EXDEV})
"""What opening a folder without following symlinks answers for a symlink or a non-folder on the way."""


class PathRefused(Exception):
    """A path that may not be written beneath its folder: `path` as given, and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_probe_lock = threading.Lock()
_probed: bool | None = None


@functools.cache
def _syscall() -> Callable[..., int]:
    call = ctypes.CDLL(None, use_errno=True).syscall
    call.restype = ctypes.c_long
    return cast("Callable[..., int]", call)


def _openat2(dir_fd: int, rel: str, flags: int) -> int:
    """openat2(dir_fd, rel) beneath dir_fd with no symlink followed; OSError as os.open raises it."""
    how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    for _ in range(16):  # EAGAIN: a rename raced the lookup; the kernel asks to retry
        fd = _syscall()(
            ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), ctypes.c_char_p(os.fsencode(rel)),
            ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)),
        )  # fmt: skip
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code not in (errno.EAGAIN, errno.EINTR):
            raise OSError(code, os.strerror(code), rel)
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), rel)


def openat2_available() -> bool:
    """Whether this kernel answers openat2 (probed once: ENOSYS, or EPERM from a seccomp filter, is no)."""
    global _probed
    with _probe_lock:
        if _probed is None and not sys.platform.startswith("linux"):
            _probed = False  # 437 is openat2 on Linux only
        if _probed is None:
            try:
                root = os.open("/", _DIR_FLAGS)
            except OSError:
                _probed = False
            else:
                try:
                    os.close(_openat2(root, ".", _DIR_FLAGS))
                    _probed = True
                except (OSError, AttributeError):
                    _probed = False
                finally:
                    os.close(root)
        return _probed


def _use_openat2() -> bool:
    return openat2_available() if USE_OPENAT2 is None else USE_OPENAT2


def _parts(rel: str) -> list[str]:
    """The components of a relative path, or PathRefused."""
    if not rel:
        raise PathRefused(rel, "is empty")
    if "\0" in rel:
        raise PathRefused(rel, "holds a NUL byte")
    if rel.startswith("/"):
        raise PathRefused(rel, "is absolute")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PathRefused(rel, "holds '..', '.' or an empty component")
    return parts


def _kind(dir_fd: int, name: str) -> str:
    try:
        found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return "cannot be opened as a folder"
    return "is a symlink" if stat.S_ISLNK(found.st_mode) else "is not a folder"


def _open_component(dir_fd: int, name: str) -> int:
    if _use_openat2():
        return _openat2(dir_fd, name, _DIR_FLAGS)
    return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)


def _open_dir(root_fd: int, parts: list[str], *, create: bool, shown: str, base: str = "") -> int:
    """A descriptor of the folder root/parts (the caller closes it), opened without following
    a symlink; missing folders made when `create`, else FileNotFoundError. A folder on the
    way that is a symlink or no folder is a PathRefused naming it (after `base`, how
    root_fd is shown)."""
    if not parts:
        return os.dup(root_fd)
    if _use_openat2():
        with contextlib.suppress(OSError):  # else the walk below makes what is missing, or says which part failed
            return _openat2(root_fd, "/".join(parts), _DIR_FLAGS)
    fd = os.dup(root_fd)
    try:
        for depth, name in enumerate(parts, 1):
            try:
                try:
                    child = _open_component(fd, name)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    child = _open_component(fd, name)
            except FileNotFoundError:
                raise
            except OSError as exc:
                if exc.errno not in _REFUSING:
                    raise
                raise PathRefused(shown, f"its folder {base}{'/'.join(parts[:depth])} {_kind(fd, name)}") from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_at(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    """Replace `name` in the opened folder with `data` (temp file + rename, both at dir_fd).

    `mode`: the new file's permission bits; None keeps an existing regular file's, and a
    new file gets 0666 minus the umask.
    """
    try:
        existing: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if mode is None and existing is not None and stat.S_ISREG(existing.st_mode):
        mode = stat.S_IMODE(existing.st_mode)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600 if mode is not None else 0o666, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _fd_path(fd: int) -> str | None:
    """Where the kernel says an open descriptor is (None without /proc)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


class Folder:
    """An opened folder; paths below it are opened from its descriptor (see the module docstring)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def open(cls, path: Path) -> Folder:
        """Open the absolute, symlink-free `path` from `/`, following no symlink."""
        if not path.is_absolute() or os.path.normpath(path) != str(path):
            raise PathRefused(str(path), "is not an absolute, normalised path")
        root = os.open("/", _DIR_FLAGS)
        try:
            return cls(_open_dir(root, list(path.parts[1:]), create=False, shown=str(path), base="/"), path)
        except FileNotFoundError:
            raise PathRefused(str(path), "does not exist") from None
        finally:
            os.close(root)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- looking ------------------------------------------------------------------------

    def check(self, rel: str) -> None:
        """PathRefused unless `rel` could be written now: a relative path whose existing
        folders are real folders beneath this one (missing ones are fine: they are made)."""
        parts = _parts(rel)
        try:
            os.close(_open_dir(self.fd, parts[:-1], create=False, shown=rel))
        except FileNotFoundError:
            return

    def lstat(self, rel: str) -> os.stat_result | None:
        """The entry at `rel` (a symlink as itself), None when it or its folder is missing."""
        parts = _parts(rel)
        try:
            folder = _open_dir(self.fd, parts[:-1], create=False, shown=rel)
        except FileNotFoundError:
            return None
        try:
            return os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(folder)

    # --- writing ------------------------------------------------------------------------

    def write(self, rel: str, data: bytes, *, mode: int | None = None) -> None:
        """Make `rel` a regular file holding `data` (its folders made as needed)."""
        parts = _parts(rel)
        folder = _open_dir(self.fd, parts[:-1], create=True, shown=rel)
        try:
            _write_at(folder, parts[-1], data, mode)
        finally:
            os.close(folder)

    def symlink(self, rel: str, target: str) -> None:
        """Make `rel` a symlink to `target` (its folders made as needed; the link is never followed)."""
        parts = _parts(rel)
        folder = _open_dir(self.fd, parts[:-1], create=True, shown=rel)
        try:
            existing = self._entry(folder, parts[-1])
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), rel)
            tmp = f".{parts[-1][:200]}.{secrets.token_hex(6)}.tmp"
            os.symlink(target, tmp, dir_fd=folder)
            try:
                os.rename(tmp, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=folder)
                raise
        finally:
            os.close(folder)

    def remove(self, rel: str) -> bool:
        """Delete the file or symlink `rel` (never a folder); whether something was deleted."""
        parts = _parts(rel)
        try:
            folder = _open_dir(self.fd, parts[:-1], create=False, shown=rel)
        except FileNotFoundError:
            return False
        try:
            existing = self._entry(folder, parts[-1])
            if existing is None or stat.S_ISDIR(existing.st_mode):
                return False
            os.unlink(parts[-1], dir_fd=folder)
            return True
        finally:
            os.close(folder)

    def prune_empty(self, rel_folder: str) -> None:
        """Remove `rel_folder` and then each folder above it while empty, never this folder itself."""
        if not rel_folder:
            return
        parts = _parts(rel_folder)
        while parts:
            try:
                parent = _open_dir(self.fd, parts[:-1], create=False, shown=rel_folder)
            except (FileNotFoundError, PathRefused):
                return
            try:
                os.rmdir(parts[-1], dir_fd=parent)  # a symlink is refused (ENOTDIR), never followed
            except OSError:
                return
            finally:
                os.close(parent)
            parts = parts[:-1]

    @staticmethod
    def _entry(folder: int, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None


def write_resolved(target: Path, data: bytes) -> None:
    """Replace the file at the absolute real path `target` with `data` (see `Folder.write`).

    Its folders are opened from `/` without following a symlink (missing ones are made), so
    the file written is the one at `target`: a symlink swapped in on the way since `target`
    was resolved and approved is a PathRefused, never a write elsewhere. Where /proc is
    mounted, the opened folder's own path is compared with `target`'s folder as well.
    An existing file keeps its permission bits.
    """
    if not target.is_absolute() or os.path.normpath(target) != str(target) or target == target.parent:
        raise PathRefused(str(target), "is not an absolute, normalised file path")
    root = os.open("/", _DIR_FLAGS)
    try:
        folder = _open_dir(root, list(target.parent.parts[1:]), create=True, shown=str(target), base="/")
    finally:
        os.close(root)
    try:
        opened = _fd_path(folder)
        if opened is not None and opened != str(target.parent):
            raise PathRefused(str(target), f"its folder opened as {opened}, not {target.parent}")
        _write_at(folder, target.name, data, None)
    finally:
        os.close(folder)
