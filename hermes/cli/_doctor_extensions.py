"""`hermes doctor`'s `commands`, `skills` and `agents` (subagent definitions) checks: what was
found for this folder, and what was skipped and why (a warning: hermes works, the file is just not used)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from hermes.agent.subagents.definitions import load_agents
from hermes.extensions.commands import load_commands
from hermes.extensions.files import Problem
from hermes.extensions.skills import load_skills

Result = tuple[str, Literal["ok", "warning"], str]


def _result(name: str, found: list[str], problems: tuple[Problem, ...], hidden: list[str]) -> Result | None:
    if not found and not problems and not hidden:
        return None
    listed = ", ".join(found) if found else "none"
    detail = f"{len(found)} for this folder: {listed}"
    notes = [f"skipped {problem.line()}" for problem in problems] + hidden
    if notes:
        return name, "warning", f"{detail}; " + "; ".join(notes)
    return name, "ok", detail


def extension_checks(home: Path, cwd: Path) -> list[Result]:
    """The `commands`, `skills` and `agents` checks for `cwd` (each left out when there is nothing to say;
    never raises for a bad file)."""
    from hermes.tui.commands import builtin_names

    reserved = builtin_names()
    commands = load_commands(home, cwd)
    skills = load_skills(home, cwd)
    ignored = [
        f"/{command.name} ({command.path}) is ignored: a built-in command has that name"
        for command in commands.commands
        if command.name in reserved
    ]
    ignored += [f"{command.path} is hidden by /{command.name} found before it" for command in commands.shadowed]
    hidden = [f"{skill.path} is hidden by the skill {skill.name} found before it" for skill in skills.shadowed]
    results = [
        _result("commands", [f"/{c.name}" for c in commands.commands], commands.problems, ignored),
        _result("skills", [s.name for s in skills.skills], skills.problems, hidden),
    ]
    agents = load_agents(home, cwd)
    results.append(_result("agents", [a.name for a in agents.agents], agents.problems, []))
    return [result for result in results if result is not None]
