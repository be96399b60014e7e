"""`hermes chat -q "/name arguments"`: a custom command or skill becomes the prompt.

The commands are read from this process's folder (and the user's), local or `--server`
alike: the expansion happens here and the server gets the expanded prompt. Skills are
the agent's: a local agent's are this folder's; a remote agent has none here (the server's
agent lists its own folder's skills to the model), so `/skill-name` over `--server` is sent
as typed, with a note on stderr. A TUI built-in's name is never taken by a custom command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes.extensions.commands import load_commands
from hermes.extensions.invoke import Invocation, resolve, split_command
from hermes.extensions.skills import SkillCatalog


@dataclass(frozen=True, slots=True)
class SlashPrompt:
    prompt: str
    """What is sent: the expansion, or the text as typed."""
    note: str | None = None
    """One line for stderr: which command it came from, or why it was sent as typed."""
    invocation: Invocation | None = None


def expand_slash_prompt(text: str, *, home: Path, cwd: Path, skills: SkillCatalog | None) -> SlashPrompt:
    parts = split_command(text)
    if parts is None:
        return SlashPrompt(text)
    from hermes.tui.commands import builtin_names  # only for a prompt that starts with "/"

    name = parts[0]
    reserved = builtin_names()
    if name in reserved:
        return SlashPrompt(text, f"/{name} is a command of the TUI, not of -q: sent as typed")
    invocation = resolve(text, load_commands(home, cwd), skills, reserved)
    if invocation is None:
        where = " (skills over --server are the server's)" if skills is None else ""
        return SlashPrompt(text, f"/{name} is not a custom command or skill here{where}: sent as typed")
    return SlashPrompt(invocation.prompt, invocation.origin, invocation)
