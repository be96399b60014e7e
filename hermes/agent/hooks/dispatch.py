"""Which hooks run for an event, what they get on stdin, and what their answers mean.

    hooks = Hooks.from_settings(settings)             # None when none can run
    turn_hooks = hooks.for_turn(session_id, cwd)       # config.toml's + .claude/settings.json's
    outcome = await turn_hooks.pre_tool("terminal", {"command": "rm -rf build"})

Every hook of an event whose matcher fits runs at once; their answers combine into one
HookOutcome:
- exit code 2 blocks, with the hook's stderr as the reason;
- exit code 0 with a JSON object on stdout: "decision": "block" (with "reason") blocks,
  "decision": "approve" approves (PreToolUse); Claude Code's newer
  hookSpecificOutput.permissionDecision "deny" / "allow" mean the same, and
  hookSpecificOutput.additionalContext is context;
- exit code 0 with other stdout: context (UserPromptSubmit and SessionStart);
- anything else (another exit code, a timeout, a command that cannot start) is a
  non-blocking failure: a notice, logged, and the hook counts for nothing.
Any block wins over approvals; an approval counts only when nothing blocked.

The payload (stdin) has `hook_event_name`, `session_id`, `cwd`, and per event `tool_name`
and `tool_input` (PreToolUse, PostToolUse), `tool_response` (PostToolUse), `prompt`
(UserPromptSubmit), `stop_hook_active` (Stop), `source` (SessionStart). `tool_name` is
Claude Code's name for a hook from `.claude/settings.json` (hermes/agent/hooks/names.py),
hermes' own for a config.toml hook; `hermes_tool_name` is always hermes' own.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.hooks.claude_settings import claude_hooks
from hermes.agent.hooks.names import claude_name, claude_tool_input, names_for_matching
from hermes.agent.hooks.runner import HookRun, run_hook
from hermes.agent.safety.launch import ToolLauncher
from hermes.hooks_config import HookConfig

if TYPE_CHECKING:
    from hermes.config import Settings

log = logging.getLogger("hermes.hooks")

SESSION_SOURCE = "startup"
"""SessionStart's `source` (and what its matcher is matched against): a new session."""


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """What the hooks of one event decided, together."""

    blocked: bool = False
    reason: str = ""
    """Why it was blocked (the hooks' stderr or JSON reasons, one per line)."""
    approved: bool = False
    """A PreToolUse hook approved the call (and none blocked it)."""
    context: str = ""
    """Text the hooks add for the model (UserPromptSubmit, SessionStart)."""
    notices: tuple[str, ...] = ()
    """One line per failure or block, for the person (a Status event) and the log."""


NOTHING = HookOutcome()


class Hooks:
    """The hooks an agent runs: config.toml's, and with `claude_compat` each working
    folder's `.claude/settings.json` (read at every turn, so edits apply to the next one)."""

    def __init__(
        self, configured: tuple[HookConfig, ...], launcher: ToolLauncher, *, claude_compat: bool = False,
        stop_limit: int = 3,
    ) -> None:  # fmt: skip
        self.configured = configured
        self.launcher = launcher
        self.claude_compat = claude_compat
        self.stop_limit = stop_limit

    @classmethod
    def from_settings(cls, settings: Settings, launcher: ToolLauncher | None = None) -> Hooks | None:
        if not settings.hooks and not settings.hooks_claude_compat:
            return None
        return cls(
            settings.hooks, launcher or ToolLauncher.from_settings(settings),
            claude_compat=settings.hooks_claude_compat, stop_limit=settings.hooks_stop_limit,
        )  # fmt: skip

    def listing(self, cwd: Path) -> tuple[list[HookConfig], list[str]]:
        """(every hook that runs in `cwd`, problems with the Claude Code settings files)."""
        if not self.claude_compat:
            return list(self.configured), []
        found, problems = claude_hooks(cwd)
        return [*self.configured, *found], problems

    def for_turn(self, session_id: str, cwd: Path) -> TurnHooks:
        hooks, problems = self.listing(cwd)
        return TurnHooks(hooks, self.launcher, session_id=session_id, cwd=cwd, problems=problems,
                         stop_limit=self.stop_limit)  # fmt: skip


class TurnHooks:
    """The hooks of one turn, in its session and working folder."""

    def __init__(
        self, hooks: list[HookConfig], launcher: ToolLauncher, *, session_id: str, cwd: Path,
        problems: list[str] | None = None, stop_limit: int = 3,
    ) -> None:  # fmt: skip
        self.hooks = hooks
        self.launcher = launcher
        self.session_id = session_id
        self.cwd = cwd
        self.stop_limit = stop_limit
        self._problems = list(problems or [])

    def take_problems(self) -> list[str]:
        """Problems found reading the hooks (once: the first caller shows them)."""
        problems, self._problems = self._problems, []
        return problems

    async def pre_tool(self, tool_name: str, tool_input: dict[str, Any]) -> HookOutcome:
        return await self._tool_event("PreToolUse", tool_name, tool_input, {})

    async def post_tool(self, tool_name: str, tool_input: dict[str, Any], response: str, is_error: bool) -> HookOutcome:
        extra = {"tool_response": response, "tool_is_error": is_error}
        return await self._tool_event("PostToolUse", tool_name, tool_input, extra)

    async def user_prompt(self, prompt: str) -> HookOutcome:
        return await self._run("UserPromptSubmit", self._matching("UserPromptSubmit"), lambda hook: {"prompt": prompt})

    async def stop(self, *, active: bool) -> HookOutcome:
        return await self._run("Stop", self._matching("Stop"), lambda hook: {"stop_hook_active": active})

    async def session_start(self) -> HookOutcome:
        hooks = self._matching("SessionStart", SESSION_SOURCE)
        return await self._run("SessionStart", hooks, lambda hook: {"source": SESSION_SOURCE})

    # ---- helpers ---------------------------------------------------------------------

    def _matching(self, event: str, *names: str) -> list[HookConfig]:
        return [hook for hook in self.hooks if hook.event == event and (not names or hook.matches(*names))]

    async def _tool_event(
        self, event: str, tool_name: str, tool_input: dict[str, Any], extra: dict[str, Any]
    ) -> HookOutcome:
        hooks = self._matching(event, *names_for_matching(tool_name))

        def fields(hook: HookConfig) -> dict[str, Any]:
            if hook.from_claude:
                shown, given = claude_name(tool_name), claude_tool_input(tool_input, str(self.cwd))
            else:
                shown, given = tool_name, tool_input
            return {"tool_name": shown, "hermes_tool_name": tool_name, "tool_input": given, **extra}

        return await self._run(event, hooks, fields, subject=tool_name)

    async def _run(self, event: str, hooks: list[HookConfig], fields: Any, subject: str = "") -> HookOutcome:
        if not hooks:
            return NOTHING
        base = {"hook_event_name": event, "session_id": self.session_id, "cwd": str(self.cwd)}
        runs = await asyncio.gather(
            *(run_hook(hook, {**base, **fields(hook)}, self.cwd, self.launcher) for hook in hooks)
        )
        return combine(event, list(runs), subject)


def combine(event: str, runs: list[HookRun], subject: str = "") -> HookOutcome:
    """The one outcome of an event's hook runs (see the module docstring)."""
    reasons: list[str] = []
    contexts: list[str] = []
    notices: list[str] = []
    approved = False
    what = f"{event} hook" + (f" on {subject}" if subject else "")
    for run in runs:
        if run.failed:
            notice = run.describe_failure()
            log.warning("%s", notice)
            notices.append(notice)
            continue
        if run.blocked:
            reasons.append(run.stderr.strip() or f"blocked by the {what} `{run.hook.command}`")
            continue
        answer = run.output_json()
        if answer is None:
            if run.stdout.strip():
                contexts.append(run.stdout.strip())
            continue
        decision, reason, context = _decision(answer)
        if decision == "block":
            reasons.append(reason or f"blocked by the {what} `{run.hook.command}`")
        elif decision == "approve":
            approved = True
        if context:
            contexts.append(context)
    if reasons:
        reason = "\n".join(reasons)
        first = " ".join(reason.split())
        notices.append(f"{what} blocked: {first[:200]}")
        return HookOutcome(blocked=True, reason=reason, context="\n\n".join(contexts), notices=tuple(notices))
    return HookOutcome(approved=approved, context="\n\n".join(contexts), notices=tuple(notices))


def _decision(answer: dict[str, Any]) -> tuple[str | None, str, str]:
    """(block | approve | None, reason, context) of a hook's JSON answer."""
    decision = answer.get("decision")
    reason = answer.get("reason")
    specific = answer.get("hookSpecificOutput")
    context = ""
    if isinstance(specific, dict):
        permission = specific.get("permissionDecision")
        if permission in ("deny", "allow"):
            decision = "block" if permission == "deny" else "approve"
            reason = specific.get("permissionDecisionReason", reason)
        extra = specific.get("additionalContext")
        if isinstance(extra, str):
            context = extra.strip()
    if decision not in ("block", "approve"):
        decision = None
    return decision, reason.strip() if isinstance(reason, str) else "", context
