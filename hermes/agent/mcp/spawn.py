"""How a stdio MCP server is started: the one place that builds its command.

A stdio server is a tool process like `terminal`'s commands and starts the same way,
through the `ToolLauncher` (hermes/agent/safety/launch.py):
- its environment is the tool environment (the core variables such as PATH, HOME and LANG,
  those `tool_env_passthrough` names, never hermes's keys or database URL: see
  safety/tool_env.py) plus the server's own `env` table, which is the user's explicit
  choice for that server and is passed as written, and nothing else;
- its program line runs under the supervisor (the server, and every process it started,
  dies with hermes) and, when the sandbox is active, inside bubblewrap with its working
  folder as the one writable place;
- the per-call `[tool_limits]` do not apply: a server is not one call but lives as long as
  the session, and a CPU-seconds limit would end it after a while.

`stdio_command` is that seam; everything else takes its result as it is.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from hermes.agent.safety.launch import ToolLauncher
from hermes.mcp_config import McpServerConfig


@dataclass(frozen=True, slots=True)
class SpawnCommand:
    command: str
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    """The whole environment of the server process (the tool environment + its `env`)."""
    cwd: Path | None = None


def stdio_command(
    server: McpServerConfig, default_cwd: Path | None = None, launcher: ToolLauncher | None = None
) -> SpawnCommand:
    """The process to start for a stdio server (relative cwd resolves against `default_cwd`).

    `launcher` defaults to a plain one (no sandbox, the default tool environment). Raises
    FileNotFoundError (filename = the command) when the program does not exist.
    """
    assert server.command is not None, "stdio_command is only for command servers"
    launcher = launcher or ToolLauncher()
    cwd = server.cwd
    if cwd is not None and not cwd.is_absolute() and default_cwd is not None:
        cwd = default_cwd / cwd
    workdir = cwd or default_cwd or Path.cwd()
    env = {**launcher.env(), **server.env}
    _require_program(server.command, workdir, env.get("PATH"))
    argv = launcher.argv(
        [server.command, *server.args], workdir, expose=_paths_to_read(server, workdir, env), limited=False
    )
    return SpawnCommand(command=argv[0], args=tuple(argv[1:]), env=env, cwd=workdir)


def _paths_to_read(server: McpServerConfig, cwd: Path, env: dict[str, str]) -> tuple[Path, ...]:
    """What a server must be able to read inside the sandbox: its program (a virtualenv's
    program: the whole environment) and every argument that names an existing path."""
    assert server.command is not None
    found = server.command if os.sep in server.command else shutil.which(server.command, path=env.get("PATH"))
    paths: list[Path] = []
    if found is not None:
        program = Path(found) if Path(found).is_absolute() else cwd / found
        paths.append(program.parent)
        if (program.parent.parent / "pyvenv.cfg").is_file():
            paths.append(program.parent.parent)
    for arg in server.args:
        candidate = Path(arg) if Path(arg).is_absolute() else cwd / arg
        if os.sep in arg and candidate.exists():
            paths.append(candidate)
    return tuple(paths)


def _require_program(command: str, cwd: Path, path: str | None) -> None:
    """FileNotFoundError naming `command` when it cannot be run (before the supervisor would
    report it less clearly from inside the process)."""
    if os.sep in command:
        program = Path(command) if Path(command).is_absolute() else cwd / command
        found = program.is_file() and os.access(program, os.X_OK)
    else:
        found = shutil.which(command, path=path) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
