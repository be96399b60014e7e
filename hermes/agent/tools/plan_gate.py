"""Plan mode's gate in front of every tool call: what a read-only turn may not run.

    plan_refusal(tool, args) -> str | None     None: the call may run; else its result text

In plan mode a call runs only when its tool is read-only (`Tool.read_only`: read_file,
list_files, search_files, todo) or it is a `terminal` command that only reads
(read_only_commands.not_read_only). Every other tool — write_file, patch, memory, an MCP tool,
any tool added later — is refused before its handler runs, so nothing it would do happens.
The refusal starts with "DENIED:" (approval.REFUSAL_PREFIXES), so it is reported as an error.
"""

from __future__ import annotations

from typing import Any

from hermes.agent.tools.base import Tool
from hermes.agent.tools.read_only_commands import not_read_only

_LEAVE = (
    "Do not try another way to make the change. Finish investigating, then present your plan; "
    "the user leaves plan mode (Shift+Tab or /mode default) to have it carried out."
)


def plan_refusal(tool: Tool, args: dict[str, Any]) -> str | None:
    """The refusal of a call of `tool` with `args` in plan mode, or None when it may run."""
    if tool.name == "terminal":
        command = args.get("command")
        if not isinstance(command, str):
            return None  # the tool rejects the arguments itself and runs nothing
        reason = not_read_only(command)
        if reason is None:
            return None
        return (
            f"DENIED: plan mode is on, so this command was not run: plan mode runs only commands that "
            f"read (ls, cat, grep, rg, git status/diff/log, …), and {reason}. {_LEAVE}"
        )
    if tool.read_only:
        return None
    return (
        f"DENIED: plan mode is on, so {tool.name} was not run and nothing was changed: plan mode only "
        f"reads files and runs read-only commands. {_LEAVE}"
    )
