"""The system prompt: short on purpose (small local models read it every turn).

A new session's prompt is `build_system_prompt`: the configured prompt (or the built-in
one with the facts a model needs), then the project instructions, then the skills' names
and descriptions (hermes/extensions/skills.py, sorted; never a body), then the memory
(hermes/agent/memory/section.py). It is stored with the session and reused byte for byte
when the session continues, so the upstream's prompt cache holds even if AGENTS.md or the
memory files change meanwhile.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform

from hermes.agent.instructions import ProjectInstructions
from hermes.extensions.skills import SkillCatalog, prompt_section

BASE_PROMPT = """You are hermes, an AI agent working in the user's terminal.
Be direct and concise. Use the tools to inspect and change files and to run commands
instead of guessing; read a file before you patch it. Prefer read_file, search_files and
list_files over shell commands for reading. For multi-step work, keep a plan with todo.
Never run destructive commands unless the user asked for them. When you are done, answer
in plain Markdown."""


WORKING_DIRECTORY = "Working directory: "
"""How the built-in prompt names the session's folder (one line; `working_directory_of` reads it)."""


def default_system_prompt(cwd: str | None = None, *, now: _dt.datetime | None = None) -> str:
    """The built-in prompt plus the facts a model needs: where, what OS, what date."""
    where = cwd or os.getcwd()
    today = (now or _dt.datetime.now()).date().isoformat()  # YYYY-MM-DD
    return f"{BASE_PROMPT}\n\n{WORKING_DIRECTORY}{where}\nOS: {_os_name()}\nDate: {today}"


@functools.cache
def _os_name() -> str:
    return platform.system()


def working_directory_of(system_prompt: str) -> str | None:
    """The folder a built-in system prompt names, or None (a configured prompt names none)."""
    for line in system_prompt.splitlines():
        if line.startswith(WORKING_DIRECTORY):
            return line[len(WORKING_DIRECTORY) :].strip() or None
    return None


def build_system_prompt(
    configured: str | None,
    cwd: str | None = None,
    instructions: ProjectInstructions | None = None,
    *,
    now: _dt.datetime | None = None,
    skills: SkillCatalog | None = None,
    memory: str = "",
) -> str:
    """The prompt of a new session: `configured` (else the default), the project instructions,
    the skills, the memory section."""
    parts = [configured or default_system_prompt(cwd, now=now)]
    if instructions is not None and instructions.text:
        parts.append(instructions.text)
    listing = prompt_section(skills)
    if listing:
        parts.append(listing)
    if memory:
        parts.append(memory)
    return "\n\n".join(parts)
