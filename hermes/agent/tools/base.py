"""Tool, ToolContext and ToolRegistry: the contract between the engine and each tool.

A tool is an async function `(args, ctx) -> str`. It raises `ToolError` for failures
the model should read (bad path, no match); the engine turns any exception into an
error result, so a tool can never crash a turn. Cancellation (interrupt) must be
honoured: a tool that starts processes kills them when cancelled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hermes.agent.events import AgentEvent
from hermes.agent.hooks.dispatch import TurnHooks
from hermes.agent.modes import DEFAULT_MODE, Mode
from hermes.agent.safety.confinement import Confinement
from hermes.agent.safety.grants import Grant, hook_may_approve, session_grant
from hermes.agent.tool_host import ToolHost
from hermes.agent.types import ApprovalCallback, ApprovalDecision, ApprovalRequest, ChatMessage, Usage


class EditDiagnostics(Protocol):
    """What `write_file` and `patch` ask after a change (`hermes.agent.lsp.LanguageServers`)."""

    async def after_edit(self, path: Path, before: str | None, after: str, cwd: Path) -> str:
        """Lines naming the problems the edit introduced; "" for none."""
        ...


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use. One per turn; shared by the turn's tool calls."""

    session_id: str
    cwd: Path
    call_id: str = ""
    approve: ApprovalCallback | None = None
    yolo: bool = False
    session_approvals: set[str] = field(default_factory=set)
    """Keys of the grants given "for this session" (hermes/agent/safety/grants.py); owned by the Agent, per session."""
    on_approval_request: Callable[[ApprovalRequest], None] | None = None
    """Engine hook to surface an ApprovalRequested event before the callback is asked."""
    on_output: Callable[[str, str], None] | None = None
    """Engine hook for a running call's newest output lines (call_id, text): a ToolOutput event."""
    source: str = "cli"
    """Front end of the turn (cli, tui, api_server); the file tools guard secrets for api_server."""
    confinement: Confinement | None = None
    """Where the turn's tools may write and what they may not see; None: the default policy."""
    host: ToolHost | None = None
    """Where files are read and written and commands run when not here (see hermes/agent/tool_host.py)."""
    transcript: list[ChatMessage] | None = None
    """The messages the model sees this turn (the engine's live list); the todo tool reads its plan here."""
    mode: Mode = DEFAULT_MODE
    """The turn's mode (hermes/agent/modes.py); in plan mode tools/plan_gate.py refuses what could change anything."""
    diagnostics: EditDiagnostics | None = None
    """Language servers asked what an edit broke (hermes/agent/lsp); None: no diagnostics."""
    hooks: TurnHooks | None = None
    """The turn's PreToolUse/PostToolUse hooks (hermes/agent/hooks); None: none run."""
    hook_approved: bool = False
    """A PreToolUse hook approved this call: its approval requests are answered yes, except
    the rules a hook never answers (grants.HOOK_NEVER_APPROVES: protected paths, secret reads)."""
    on_event: Callable[[AgentEvent], None] | None = None
    """Set by the tool batch: puts a progress event (a subagent's tool lines) into the turn's stream."""
    add_usage: Callable[[Usage], None] | None = None
    """Set by the engine: counts a subagent's model usage in this turn's usage."""
    depth: int = 0
    """How deep this turn is in a chain of subagents (0: a turn a person or client started)."""

    @property
    def policy(self) -> Confinement:
        if self.confinement is None:
            self.confinement = Confinement.default()
        return self.confinement

    async def request_approval(
        self, tool_name: str, command: str, reason: str, rule: str, grant: Grant | None = None
    ) -> bool:
        """Ask the front end. No callback means deny. A SESSION answer gives the grant of
        grants.session_grant (`grant`, default: `command` exactly as shown; none for the
        rules that always ask), and a later request with the same grant is not asked."""
        scope = session_grant(tool_name, command, rule, grant)
        if self.hook_approved and hook_may_approve(rule):
            return True
        if self.yolo or (scope is not None and scope.key in self.session_approvals):
            return True
        request = ApprovalRequest(
            session_id=self.session_id,
            call_id=self.call_id,
            tool_name=tool_name,
            command=command,
            reason=reason,
            rule=rule,
            grant=scope.covers if scope is not None else None,
        )
        if self.on_approval_request is not None:
            self.on_approval_request(request)
        if self.approve is None:
            return False
        decision = await self.approve(request)
        if decision == ApprovalDecision.SESSION:
            if scope is not None:
                self.session_approvals.add(scope.key)
            return True
        return decision == ApprovalDecision.ONCE


ToolHandler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""
    handler: ToolHandler
    read_only: bool = False
    """Read-only tools of one batch run concurrently; others run in call order."""
    preview_key: str | None = None
    """Argument shown as the one-line preview (e.g. "command", "path")."""

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def preview(self, args: dict[str, Any], width: int = 120) -> str:
        value = args.get(self.preview_key) if self.preview_key else None
        text = str(value) if value is not None else ", ".join(f"{k}={v!r}" for k, v in args.items())
        text = " ".join(text.split())
        return text if len(text) <= width else text[: width - 1] + "…"


class ToolRegistry:
    def only(self, names: Iterable[str]) -> ToolRegistry:
        """A registry of the named tools (those it has; in this one's order) under the same policy."""
        wanted = set(names)
        subset = ToolRegistry(tool for tool in self._tools.values() if tool.name in wanted)
        subset.confinement = self.confinement
        return subset

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self.confinement: Confinement | None = None
        """The policy its tools run under (set by whoever builds the tool set); None: default."""
        self._tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool
        self._schemas = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """The tools' schemas: the same dicts on every call (a provider may keep their
        encoded JSON), in a new list; never change them in place."""
        if self._schemas is None:
            self._schemas = [tool.schema() for tool in self._tools.values()]
        return list(self._schemas)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tools.values())
