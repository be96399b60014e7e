"""The core tool set: one place that decides which tools a default agent has."""

from __future__ import annotations

from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.base import Tool, ToolRegistry
from hermes.agent.tools.files import (
    LIST_FILES_TOOL,
    PATCH_TOOL,
    READ_FILE_TOOL,
    SEARCH_FILES_TOOL,
    WRITE_FILE_TOOL,
)
from hermes.agent.tools.terminal import TERMINAL_TOOL, make_terminal_tool
from hermes.agent.tools.todo import TODO_TOOL

CORE_TOOLS: tuple[Tool, ...] = (
    TERMINAL_TOOL,
    READ_FILE_TOOL,
    WRITE_FILE_TOOL,
    PATCH_TOOL,
    LIST_FILES_TOOL,
    SEARCH_FILES_TOOL,
    TODO_TOOL,
)


def default_registry(launcher: ToolLauncher | None = None) -> ToolRegistry:
    """A fresh registry holding the core tools (callers may register more on it).

    `launcher` decides how the terminal tool starts commands (sandbox, environment) and the
    confinement policy every tool follows; without one, commands run unsandboxed, still
    supervised and with the allowlisted environment, under `Confinement.default()`.
    """
    if launcher is None:
        return ToolRegistry(CORE_TOOLS)
    registry = ToolRegistry(make_terminal_tool(launcher) if tool is TERMINAL_TOOL else tool for tool in CORE_TOOLS)
    registry.confinement = launcher.confinement
    return registry
