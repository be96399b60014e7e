"""A new session (Ctrl+N, /new) reads the AGENTS.md files again.

The agent's project instructions are read once at start; a file created, changed or
removed while the TUI is open would otherwise be missed by every later session. A new
session's system prompt is built from `agent.instructions`, so reloading them before its
first turn is enough. A remote agent has none of its own (the server reads its own files):
nothing is read then.
"""

from __future__ import annotations

from pathlib import Path

from hermes.agent.instructions import ProjectInstructions, load_project_instructions
from hermes.backend import ChatAgent
from hermes.config import Settings


def reload_instructions(agent: ChatAgent, settings: Settings, cwd: str | None) -> str | None:
    """Read the AGENTS.md files for `cwd` into `agent.instructions`; the line to show when
    they changed (what is loaded now, or that there are none), else None."""
    before = agent.instructions
    if before is None:
        return None
    after = load_project_instructions(settings, Path(cwd) if cwd else None)
    agent.instructions = after
    if _same(before, after):
        return None
    return after.notice or after.summary or "project instructions: none now (no AGENTS.md found)"


def _same(a: ProjectInstructions, b: ProjectInstructions) -> bool:
    return a.text == b.text and a.files == b.files
