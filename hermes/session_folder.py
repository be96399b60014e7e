"""Where a resumed session's tools run: the folder it belongs to, checked before a turn.

    check = check_folder(record.cwd, here=os.getcwd())
    check.state      here | elsewhere | gone | unknown
    check.run_in     the folder its tools run in (None: gone, the front end must ask or stop)
    check.notice()   the one line a front end shows (None when it is this folder)

A session records its folder resolved (`hermes.agent.engine.session_folder`). On resume:

- `here`: it is this folder;
- `elsewhere`: another folder that still is the same directory: the tools run there, and
  the front end says so;
- `gone`: the recorded folder no longer exists, is no longer a directory, or its path now
  passes through a symlink (resolving it gives another path: a folder swapped for a link
  to somewhere else). Its tools must not run anywhere without the user choosing: the TUI
  asks, `chat -q` stops with one line;
- `unknown`: a session from before folders were recorded: it runs here, as it always did.

The TUI and `chat -q` share it (it imports only `hermes.errors`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from hermes.errors import HermesError

__all__ = ["FolderCheck", "FolderGone", "check_folder", "short_folder"]

FolderState = Literal["here", "elsewhere", "gone", "unknown"]


@dataclass(frozen=True, slots=True)
class FolderCheck:
    """Where a session's tools run, against the front end's folder `here`."""

    state: FolderState
    here: str
    """The front end's folder, resolved."""
    folder: str | None
    """The session's recorded folder (None: not recorded)."""
    why: str | None = None
    """For `gone`: what happened to the folder."""

    @property
    def run_in(self) -> str | None:
        """The folder the session's tools run in; None when it is gone."""
        if self.state == "gone":
            return None
        if self.state == "elsewhere":
            return self.folder
        return self.here

    def notice(self) -> str | None:
        """The line a front end shows on resume (None: nothing to say)."""
        if self.state == "elsewhere":
            return f"this session belongs to {self.folder}: its tools run there, not in {self.here}"
        if self.state == "gone":
            return f"this session's folder {self.folder} {self.why}"
        return None


class FolderGone(HermesError):
    """Raised by front ends that cannot ask (`chat -q`) for a `gone` folder."""

    code = "session_folder_gone"

    def __init__(self, check: FolderCheck) -> None:
        super().__init__(
            f"{check.notice()}: its tools will not run anywhere else; open it in the TUI "
            "(hermes chat -r ID) to choose a folder, or start a new session"
        )


def check_folder(recorded: str | None, *, here: str) -> FolderCheck:
    """Where the session recorded in `recorded` runs, seen from folder `here` (see the module docstring)."""
    resolved_here = os.path.realpath(here)
    if not recorded:
        return FolderCheck("unknown", resolved_here, None)
    why = _gone(recorded)
    if why is not None:
        return FolderCheck("gone", resolved_here, recorded, why)
    if recorded == resolved_here:
        return FolderCheck("here", resolved_here, recorded)
    return FolderCheck("elsewhere", resolved_here, recorded)


def _gone(folder: str) -> str | None:
    """Why `folder` is no longer the folder the session recorded (None: it still is)."""
    if not os.path.isabs(folder):
        return "is not an absolute path"
    if os.path.realpath(folder) != os.path.normpath(folder):
        return f"is now a link to {os.path.realpath(folder)}"
    if not os.path.exists(folder):
        return "no longer exists"
    if not os.path.isdir(folder):
        return "is no longer a folder"
    return None


def short_folder(folder: str | None, *, home: str | None = None) -> str:
    """`folder` for a narrow column: `~` for the home folder, "-" when unknown."""
    if not folder:
        return "-"
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (folder == home or folder.startswith(home.rstrip("/") + "/")):
        return "~" + folder[len(home.rstrip("/")) :]
    return folder
