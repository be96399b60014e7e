"""Which process owns a half-done record, and whether that process is gone.

Several hermes processes share one `$HERMES_HOME` (a TUI open while `hermes serve` starts),
so start-up repair must only touch records whose owning process has died. A record's owner
is a `ProcessOwner`: host name, pid, and the process's start identity.

Invariants:

- `started` is `"<boot id>:<start time in clock ticks>"` on Linux (from /proc), so a pid
  reused by another process, or the same pid after a reboot, is a different owner. Where
  /proc is not available it is "" and only the pid is checked.
- `owner_gone(owner)` is True only when this host can prove the owner is no longer
  running: same host and (another boot, or no such pid, or a zombie, or the pid now
  belongs to a process started at another time). An owner on another host is never
  called gone (this host cannot check it).
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessOwner", "current_owner", "owner_gone", "pid_exists"]

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessOwner:
    host: str
    pid: int
    started: str
    """`"<boot id>:<start ticks>"`, or "" where it cannot be read."""


def _boot_id() -> str:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or ')'.
    return text[text.rfind(")") + 2 :].split()


def _start_identity(pid: int) -> str:
    boot = _boot_id()
    fields = _stat_fields(pid)
    if not boot or fields is None or len(fields) < 20:
        return ""
    return f"{boot}:{fields[19]}"  # field 22 of stat: start time in clock ticks since boot


@functools.cache
def _this_process(pid: int) -> ProcessOwner:
    return ProcessOwner(host=socket.gethostname(), pid=pid, started=_start_identity(pid))


def current_owner() -> ProcessOwner:
    """This process (recomputed after a fork, since the pid changes)."""
    return _this_process(os.getpid())


def pid_exists(pid: int) -> bool:
    """Whether a process `pid` exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_gone(owner: ProcessOwner) -> bool:
    """True when `owner` has provably stopped running (see the module invariants)."""
    if owner.host != socket.gethostname():
        return False
    if owner.pid <= 0:
        return True
    boot, _, ticks = owner.started.partition(":")
    if boot and _boot_id() and boot != _boot_id():
        return True
    if not pid_exists(owner.pid):
        return True
    fields = _stat_fields(owner.pid)
    if fields is None:
        return False  # no /proc to look at: the pid exists, so assume it is the owner
    with contextlib.suppress(IndexError):
        if fields[0] in ("Z", "X"):  # killed, not yet reaped by its parent
            return True
        if ticks and fields[19] != ticks:
            return True
    return False
