"""Where commands and skills are looked for, in precedence order (the first of a name wins).

Project folders come first: the working folder and each folder above it up to the
repository root (the nearest ancestor holding `.git`; outside a repository, the working
folder alone), nearest first, each with hermes' own folder before Claude Code's. Then the
user's: `$HERMES_HOME/…` (default ~/.hermes), then `~/.claude/…` for people moving over.
A folder reached twice (HERMES_HOME inside the project) is listed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Scope = Literal["project", "user"]


@dataclass(frozen=True, slots=True)
class Place:
    folder: Path
    scope: Scope

    @property
    def label(self) -> str:
        """How `/skills`, `/help` and `hermes doctor` name it: "project: /repo/.hermes/skills"."""
        return f"{self.scope}: {self.folder}"


PROJECT_COMMANDS = (".hermes/commands", ".claude/commands")
PROJECT_SKILLS = (".hermes/skills", ".agents/skills", ".claude/skills")
PROJECT_AGENTS = (".hermes/agents", ".claude/agents")


def project_chain(cwd: Path) -> list[Path]:
    """The working folder and its ancestors up to the repository root, nearest first."""
    cwd = cwd.resolve()
    chain = [cwd, *cwd.parents]
    for index, folder in enumerate(chain):
        if (folder / ".git").exists():
            return chain[: index + 1]
    return [cwd]


def _places(home: Path, cwd: Path, user_home: Path | None, project: tuple[str, ...], kind: str) -> list[Place]:
    found = [Place(folder / sub, "project") for folder in project_chain(cwd) for sub in project]
    found.append(Place(home.expanduser() / kind, "user"))
    claude_home = user_home if user_home is not None else Path.home()
    found.append(Place(claude_home / ".claude" / kind, "user"))
    unique: list[Place] = []
    seen: set[Path] = set()
    for place in found:
        key = place.folder.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(place)
    return unique


def command_places(home: Path, cwd: Path, user_home: Path | None = None) -> list[Place]:
    return _places(home, cwd, user_home, PROJECT_COMMANDS, "commands")


def skill_places(home: Path, cwd: Path, user_home: Path | None = None) -> list[Place]:
    return _places(home, cwd, user_home, PROJECT_SKILLS, "skills")


def agent_places(home: Path, cwd: Path, user_home: Path | None = None) -> list[Place]:
    """Where subagent definitions are read (hermes/agent/subagents/definitions.py)."""
    return _places(home, cwd, user_home, PROJECT_AGENTS, "agents")
