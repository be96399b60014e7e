"""Where the tools' files and commands live when that is not this process (`ToolHost`).

A front end whose user works in another program (an editor over ACP) may hand a turn a
`ToolHost`: `files` reads and writes text files through that program (so its unsaved
buffers are what the tools see and change), `commands` runs the terminal tool's commands
through it. Either may be None: that part then runs here, as without a host.

Invariants:
- A host changes where bytes come from and go to, never the checks: hidden paths,
  confinement, protected files, approvals and command classification run before any host
  call, exactly as for local files and commands.
- Paths given to a host are absolute and resolved (the tools' `fsutil.resolve`).
- `CommandRunner.run` returns the tool's result text (exit code and output); when it is
  cancelled (the turn is stopped) it ends the command before the cancel propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class FileAccess(Protocol):
    async def read_text(self, path: Path) -> str:
        """The file's current text (an open buffer's, where the host has one)."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace the file's whole text (creating it)."""
        ...


class CommandRunner(Protocol):
    async def run(self, command: str, cwd: Path, timeout: float) -> str:
        """Run a shell command line in `cwd`; the terminal tool's result text."""
        ...


@dataclass(frozen=True, slots=True)
class ToolHost:
    """The host's file access and command runner; None: that part runs in this process."""

    files: FileAccess | None = None
    commands: CommandRunner | None = None
