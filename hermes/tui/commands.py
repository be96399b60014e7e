"""Slash commands of the chat TUI: one table, prefix matching, completion.

The table is data; `HermesApp` maps each command name to an `action_*`-style handler.
Matching is case-insensitive and accepts a unique prefix (`/ses` → `/sessions`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.agent.instructions import ProjectInstructions


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    """Without the slash."""
    help: str
    args: str = ""
    """Argument hint shown in completion and /help, e.g. "[title]"."""
    aliases: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.args}".rstrip()


COMMANDS: tuple[Command, ...] = (
    Command("new", "start a new session"),
    Command("fork", "fork this session and continue in the copy", "[title]", ("branch",)),
    Command("sessions", "browse, search, open, rename or delete sessions", aliases=("resume", "switch")),
    Command("title", "show or set this session's title", "[title]"),
    Command("model", "show or change the model", "[name]"),
    Command("reasoning", "show or hide reasoning blocks", "[show|hide]"),
    Command("focus", "answer-only view: hide reasoning and tool cards"),
    Command("copy", "copy the last answer to the clipboard (OSC 52)"),
    Command("export", "write this session as Markdown", "[path]"),
    Command("context", "show the project instructions (AGENTS.md) in the system prompt"),
    Command("theme", "switch between dark and light themes", "[dark|light]"),
    Command("mcp", "list MCP servers and their tools"),
    Command("compact", "summarise older messages now to free the context window"),
    Command("help", "list commands and keys"),
    Command("quit", "leave hermes", aliases=("exit",)),
)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    command: Command | None
    """None when the name matched nothing (or several commands)."""
    name: str
    """The name as typed."""
    arg: str
    candidates: tuple[Command, ...] = ()
    """Commands an ambiguous prefix could mean."""


def is_command(text: str) -> bool:
    """Slash commands start with one "/" followed by a letter (so "/etc/hosts?" is a prompt)."""
    stripped = text.lstrip()
    return len(stripped) > 1 and stripped[0] == "/" and stripped[1].isalpha() and "/" not in stripped.split()[0][1:]


def complete(prefix: str) -> list[Command]:
    """Commands whose name or alias starts with `prefix` (without the slash)."""
    prefix = prefix.lower()
    return [c for c in COMMANDS if c.name.startswith(prefix) or any(a.startswith(prefix) for a in c.aliases)]


def parse(text: str) -> ParsedCommand:
    head, _, arg = text.strip()[1:].partition(" ")
    name = head.lower()
    arg = arg.strip()
    for command in COMMANDS:
        if name == command.name or name in command.aliases:
            return ParsedCommand(command, head, arg)
    matches = complete(name)
    if len(matches) == 1:
        return ParsedCommand(matches[0], head, arg)
    return ParsedCommand(None, head, arg, tuple(matches))


def context_report(instructions: ProjectInstructions | None) -> str:
    """What `/context` prints: each AGENTS.md loaded, its size, and what the cap cut."""
    if instructions is None or instructions.max_bytes <= 0:
        return "project instructions: off (instructions_max_bytes = 0)"
    if not instructions.files:
        return "project instructions: none (no AGENTS.md in $HERMES_HOME or from the repository root to here)"
    head = (
        f"project instructions: {instructions.included_bytes:,} of at most "
        f"{instructions.max_bytes:,} bytes in the system prompt of new sessions"
    )
    lines = [head]
    for item in instructions.files:
        if item.error is not None:
            state = f"not loaded: {item.error}"
        elif item.truncated:
            state = f"{item.included:,} of {item.size:,} bytes (cut)"
        else:
            state = f"{item.size:,} bytes"
        lines.append(f"  {item.path}  {state}")
    if instructions.truncated:
        lines.append("  the rest was cut: raise instructions_max_bytes to load it")
    return "\n".join(lines)
