"""From what the user typed (`/name arguments`) to the prompt the model gets.

One resolution for every front end (the TUI, `chat -q`, ACP): a front end's built-in
commands come first and are never shadowed (`reserved`), then the custom commands, then
the skills. Names match case-insensitively and in full (the TUI's unique-prefix matching
is its own, over the same table).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes.extensions.commands import CommandCatalog, expand
from hermes.extensions.skills import SkillCatalog, skill_prompt

InvocationKind = Literal["command", "skill"]
_COMMAND = re.compile(r"/([A-Za-z]\S*)(?:\s+(.*))?\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Invocation:
    prompt: str
    """The text sent as the user's prompt."""
    name: str
    arguments: str
    kind: InvocationKind
    path: Path
    """The command's file, or the skill's SKILL.md."""

    @property
    def origin(self) -> str:
        """One line for the transcript: which command the prompt came from."""
        typed = f"/{self.name} {self.arguments}".strip()
        typed = typed if len(typed) <= 80 else typed[:79] + "…"
        return f"{typed}  ({self.kind}: {self.path})"


def split_command(text: str) -> tuple[str, str] | None:
    """("name", "arguments") when `text` is `/name …` (one slash, a letter first), else None."""
    match = _COMMAND.match(text.strip())
    if match is None or "/" in match.group(1):
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def resolve(
    text: str,
    commands: CommandCatalog,
    skills: SkillCatalog | None,
    reserved: Collection[str] = (),
) -> Invocation | None:
    """The custom command or skill `text` invokes, expanded; None when it invokes neither."""
    parts = split_command(text)
    if parts is None:
        return None
    name, arguments = parts
    if name in reserved:
        return None
    command = commands.get(name)
    if command is not None:
        return Invocation(expand(command, arguments), name, arguments, "command", command.path)
    skill = skills.get(name) if skills is not None else None
    if skill is not None:
        return Invocation(skill_prompt(skill, arguments), name, arguments, "skill", skill.path)
    return None
