"""Custom commands and skills over ACP: listed to the editor, expanded when a prompt starts with one.

`available_commands(...)` is what `available_commands_update` sends after a session opens:
the custom commands of the session's folder (and the user's), then the agent's skills (the
ones its system prompt lists), by name. A prompt `/name arguments` whose name is one of them
is sent to the model expanded (`expanded_prompt`); anything else is sent as typed. hermes
has no built-in slash commands over ACP, so nothing is reserved here.
"""

from __future__ import annotations

from pathlib import Path

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from hermes.extensions.commands import load_commands
from hermes.extensions.invoke import resolve
from hermes.extensions.skills import SkillCatalog


def available_commands(home: Path, cwd: Path, skills: SkillCatalog | None) -> list[AvailableCommand]:
    commands = load_commands(home, cwd)
    listed: list[AvailableCommand] = []
    taken: set[str] = set()
    for command in commands.commands:
        taken.add(command.name)
        hint = command.argument_hint or "arguments"
        listed.append(
            AvailableCommand(
                name=command.name,
                description=command.description or f"custom command ({command.path})",
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)),
            )
        )
    for skill in skills.skills if skills is not None else ():
        if skill.name not in taken:
            listed.append(
                AvailableCommand(
                    name=skill.name,
                    description=f"skill: {skill.description}",
                    input=AvailableCommandInput(root=UnstructuredCommandInput(hint="request")),
                )
            )
    return listed


def expanded_prompt(text: str, home: Path, cwd: Path, skills: SkillCatalog | None) -> str:
    """`text`, or the expansion of the custom command or skill it invokes."""
    invocation = resolve(text, load_commands(home, cwd), skills)
    return invocation.prompt if invocation is not None else text
