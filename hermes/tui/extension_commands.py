"""Custom commands and skills in the chat TUI: the completion entries, running one, `/skills`.

The catalogs are read for the chat's working folder each time they are needed (typing `/`,
`/help`, running a command): `load_commands` keeps each folder's parsed files until one
changes, so a command file written while the TUI runs is there at the next `/`.
Skills are the agent's (`agent.skills`, read when the agent was built, and listed in the
system prompt of its new sessions). A remote agent has none here: the server's agent lists
the skills of the server's own folder, and `/skills` says so.

A built-in command always wins: a custom command or skill with a built-in's name (or alias)
is left out of completion and reported by `/help` and `/skills`.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from hermes.extensions.commands import CommandCatalog, load_commands
from hermes.extensions.invoke import resolve
from hermes.extensions.skills import SkillCatalog

if TYPE_CHECKING:
    from hermes.tui.command_screen import CommandScreen

REMOTE_SKILLS = (
    "skills: this is a remote session — the server's agent lists the skills of the server's own "
    "folder in its system prompt and loads them with its skill tool; none are read here"
)


@dataclass(frozen=True, slots=True)
class Catalogs:
    commands: CommandCatalog
    skills: SkillCatalog | None
    """None: a remote agent (its skills are the server's)."""


@dataclass(frozen=True, slots=True)
class CustomEntry:
    """One custom command or skill as the completion menu and `/help` show it."""

    name: str
    help: str
    args: str
    kind: str
    """"command" or "skill"."""


def catalogs(chat: CommandScreen) -> Catalogs:
    cwd = Path(chat.cwd or os.getcwd())
    commands = load_commands(chat.settings.home, cwd)
    skills: SkillCatalog | None = getattr(chat.agent, "skills", None)
    return Catalogs(commands, skills)


def entries(found: Catalogs, reserved: Collection[str]) -> list[CustomEntry]:
    """Commands, then skills, by name; none with a built-in's name, a skill never under a command's."""
    listed: list[CustomEntry] = []
    taken = set(reserved)
    for command in found.commands.commands:
        if command.name not in taken:
            taken.add(command.name)
            listed.append(CustomEntry(command.name, command.description, command.argument_hint, "command"))
    for skill in found.skills.skills if found.skills is not None else ():
        if skill.name not in taken:
            taken.add(skill.name)
            listed.append(CustomEntry(skill.name, f"skill: {skill.description}", "[request]", "skill"))
    return listed


def clashes(found: Catalogs, reserved: Collection[str]) -> list[str]:
    """One line per custom command or skill a built-in hides."""
    lines = [
        f"/{command.name} ({command.path}) is ignored: a built-in command has that name"
        for command in found.commands.commands
        if command.name in reserved
    ]
    skills = found.skills.skills if found.skills is not None else ()
    lines += [
        f"skill {skill.name} cannot be run as /{skill.name}: a built-in command has that name (the model still sees it)"
        for skill in skills
        if skill.name in reserved
    ]
    return lines


def invoke(chat: CommandScreen, name: str, arg: str, reserved: Collection[str]) -> None:
    """Expand `/name arg` and send it as the prompt (queued behind a running turn)."""
    found = catalogs(chat)
    invocation = resolve(f"/{name} {arg}", found.commands, found.skills, reserved)
    if invocation is None:
        chat.say(f"/{name} is gone: its file was removed or changed", "warning")
        return
    chat.turns.submit(invocation.prompt, origin=invocation.origin)


def help_section(found: Catalogs, reserved: Collection[str], width: int) -> Text:
    """What `/help` adds after the built-in commands ("" when there is nothing custom)."""
    listed = entries(found, reserved)
    lines = Text()
    if listed:
        lines.append("Custom commands and skills\n", style="bold")
        for entry in listed:
            usage = f"/{entry.name} {entry.args}".rstrip()
            lines.append(f"  {usage:<{width}}", style="bold")
            lines.append(f"{entry.help}\n")
    for line in clashes(found, reserved):
        lines.append(f"  ⚠ {line}\n", style="yellow")
    if found.commands.problems:
        lines.append(f"  ⚠ {len(found.commands.problems)} command file(s) skipped:\n", style="yellow")
        for problem in found.commands.problems[:10]:
            lines.append(f"    {problem.line()}\n")
    return lines


def skills_report(found: Catalogs, reserved: Collection[str]) -> Text:
    """What `/skills` shows: each skill with its source, then what was skipped and why."""
    if found.skills is None:
        return Text(REMOTE_SKILLS)
    catalog = found.skills
    lines = Text()
    if not catalog.skills:
        lines.append(
            "no skills: add a folder with a SKILL.md (front matter: name, description) under "
            ".hermes/skills/, .agents/skills/ or .claude/skills/ of the project, or $HERMES_HOME/skills/ "
            "or ~/.claude/skills/ (new sessions of a new `hermes chat` see it)\n"
        )
    else:
        lines.append("Skills (the model sees each name and description; /NAME [request] runs one)\n", style="bold")
        for skill in catalog.skills:
            lines.append(f"  {skill.name}", style="bold")
            lines.append(f"  {skill.description}\n")
            lines.append(f"    {skill.source} → {skill.folder}\n", style="dim")
    for skill in catalog.shadowed:
        lines.append(f"  ⚠ {skill.path} is hidden by the skill {skill.name} found before it\n", style="yellow")
    for line in clashes(Catalogs(CommandCatalog(), catalog), reserved):
        lines.append(f"  ⚠ {line}\n", style="yellow")
    for problem in catalog.problems:
        lines.append(f"  ⚠ skipped {problem.line()}\n", style="yellow")
    return lines
