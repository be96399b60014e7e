"""The `memory` tool: what the model keeps for later sessions.

    {"action": "add", "target": "memory", "content": "the repo builds with `just build`"}
    {"action": "replace", "target": "user", "old": "prefers tabs", "content": "prefers 4 spaces"}
    {"action": "remove", "target": "memory", "old": "just build"}

Invariants:

- `target` "memory" is MEMORY.md (the user's environment and projects), "user" is USER.md
  (who the user is, what they prefer); both in `$HERMES_HOME/memories/` (hermes/agent/memory).
- add appends one bullet (a repeat of an entry is not added twice); replace and remove act
  on the one entry that contains `old`, else a ToolError lists the entries (none matched)
  or the matches (several). A change over the file's cap is refused (`MemoryFull`) and
  tells the model to consolidate first. Nothing is written when a call fails.
- The change reaches new sessions' system prompts, never the running session's (its
  prompt was stored when it began), so the result says so.
- Not read-only: plan mode refuses it (hermes/agent/tools/plan_gate.py), since plan mode
  promises that nothing changes, hermes' own memory included; it needs no approval,
  since it writes only hermes' memory files, never the workspace.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes.agent.memory.entries import add_entry, check_cap, remove_entry, replace_entry
from hermes.agent.memory.files import CAP_SETTINGS, FILE_NAMES, TARGETS, MemoryFiles, Target
from hermes.agent.tools.args import check_object, optional_str, require_str
from hermes.agent.tools.base import Tool, ToolContext
from hermes.errors import ToolError

MEMORY = "memory"
ACTIONS = ("add", "replace", "remove")


def make_memory_tool(files: MemoryFiles) -> Tool:
    """The `memory` tool over the memory files of one hermes home."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        args = check_object(args)
        action = require_str(args, "action").strip().lower()
        if action not in ACTIONS:
            raise ToolError(f"argument 'action' must be one of {', '.join(ACTIONS)}, got {action[:40]!r}")
        target = (optional_str(args, "target") or "memory").strip().lower()
        if target not in TARGETS:
            raise ToolError(f"argument 'target' must be one of {', '.join(TARGETS)}, got {target[:40]!r}")
        chosen: Target = target
        name, cap = FILE_NAMES[chosen], files.caps.of(chosen)
        if action == "add":
            content = require_str(args, "content")

            def change(text: str) -> str:
                return add_entry(text, content)
        elif action == "replace":
            old, content = require_str(args, "old"), require_str(args, "content")

            def change(text: str) -> str:
                return replace_entry(text, old, content, name)
        else:
            old = optional_str(args, "old") or require_str(args, "content")

            def change(text: str) -> str:
                return remove_entry(text, old, name)

        def checked(text: str) -> str:
            after = change(text)
            check_cap(text, after, cap, name, CAP_SETTINGS[chosen])
            return after

        before, after = await asyncio.to_thread(files.update, chosen, checked)
        used = f"{name} now holds {len(after):,} of {cap:,} characters"
        if before == after:
            return f"Nothing changed: {name} already has that entry ({used})."
        done = {"add": "Saved", "replace": "Replaced the entry", "remove": "Removed the entry"}[action]
        return f"{done} in {name}; {used}. New sessions will see it (this session keeps its prompt)."

    return Tool(
        name=MEMORY,
        description=(
            "Remember something across sessions. Save durable facts only, in a few words each: on target "
            "'memory', what you learned about the user's environment and projects (build commands, layout, "
            "conventions, tools); on target 'user', who the user is and what they prefer. Action 'add' appends "
            "an entry; 'replace' rewrites the one entry containing 'old' with 'content'; 'remove' deletes the one "
            "entry containing 'old'. Each file has a size cap: when it is full, merge or remove entries first. "
            "Never store secrets or passing task details. What you save is shown in the system prompt of new sessions."
        ),
        parameters={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS), "description": "add, replace or remove."},
                "target": {
                    "type": "string",
                    "enum": list(TARGETS),
                    "description": "memory (environment and projects, default) or user (the user's profile).",
                },
                "content": {"type": "string", "description": "The entry's text (add, replace)."},
                "old": {"type": "string", "description": "A part of the one entry to replace or remove."},
            },
            "required": ["action"],
        },
        handler=run,
        read_only=False,
        preview_key="content",
    )
