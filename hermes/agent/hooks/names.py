"""Claude Code's tool names and hermes' own, so one hooks file serves both agents.

    Claude Code          hermes
    Bash                 terminal
    Write                write_file
    Edit, MultiEdit      patch
    Read                 read_file
    Glob                 list_files
    Grep                 search_files

A hook's matcher is tried against both names of the tool (so "Bash" and "terminal" both
match hermes' terminal); MCP tools are `mcp__SERVER__TOOL` in both agents.
"""

from __future__ import annotations

from typing import Any

CLAUDE_NAMES: dict[str, str] = {
    "terminal": "Bash",
    "write_file": "Write",
    "patch": "Edit",
    "read_file": "Read",
    "list_files": "Glob",
    "search_files": "Grep",
}
"""hermes' tool name -> the Claude Code tool that does the same."""

CLAUDE_ALIASES: dict[str, tuple[str, ...]] = {"patch": ("MultiEdit",)}
"""Further Claude Code names a matcher may use for a hermes tool."""


def names_for_matching(tool_name: str) -> tuple[str, ...]:
    """Every name a matcher is tried against: hermes' own, then Claude Code's."""
    claude = CLAUDE_NAMES.get(tool_name)
    if claude is None:
        return (tool_name,)
    return (tool_name, claude, *CLAUDE_ALIASES.get(tool_name, ()))


def claude_name(tool_name: str) -> str:
    """The name a Claude Code hook knows the tool by (hermes' name when there is none)."""
    return CLAUDE_NAMES.get(tool_name, tool_name)


def claude_tool_input(tool_input: dict[str, Any], cwd: str) -> dict[str, Any]:
    """The arguments as a Claude Code hook reads them: `file_path` (absolute) beside `path`."""
    path = tool_input.get("path")
    if not isinstance(path, str) or "file_path" in tool_input:
        return tool_input
    absolute = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
    return {**tool_input, "file_path": absolute}
