"""`!` shell mode: a command the user runs, as the `terminal` tool runs a command, whose
output becomes the user's context for the next turn.

    outcome = await run_user_command(command, cwd, launcher, approve=…, on_output=…)
    if outcome.context is not None: store it as a user message; no model call is made

Invariants:
- the command goes through the terminal tool's own gate and runner: classify_command
  (block never runs; approve runs only when `approve` says yes — no callback: no) and
  run_command under the same ToolLauncher (sandbox, allowlisted environment, limits,
  supervisor: nothing outlives it), with the working folder as the one writable root and
  the terminal's default timeout;
- cancelling the call (Esc) kills the command's processes (run_command's own cleanup) and
  re-raises; a stopped, blocked or denied command gives no context;
- the context names the command and the folder and holds the formatted result, cut to
  `limit` characters as a tool result is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes.agent._tool_exec import cap_output
from hermes.agent.safety.approval import blocked_message, classify_command
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.terminal import DEFAULT_TIMEOUT, run_command
from hermes.agent.types import ApprovalCallback, ApprovalDecision, ApprovalRequest

SHELL_PREFIX = "!"
CONTEXT_HEAD = "[The user ran this shell command themselves (`!` in hermes); its output is context for what follows.]"
"""First line of every stored `!` context: how the transcript and a resumed TUI recognise one."""


@dataclass(frozen=True, slots=True)
class UserCommandOutcome:
    result: str
    """The terminal tool's formatted result (exit code, stdout, stderr), or why it did not run."""
    ran: bool
    context: str | None
    """The user message to store for the next turn; None when the command did not run."""


def shell_command(text: str) -> str | None:
    """The command of a `!cmd` prompt (None: not one; "" for a bare `!`)."""
    stripped = text.strip()
    if not stripped.startswith(SHELL_PREFIX):
        return None
    return stripped[len(SHELL_PREFIX) :].strip()


def context_message(command: str, cwd: Path, result: str, limit: int) -> str:
    return f"{CONTEXT_HEAD}\n$ {command}\n(in {cwd})\n{cap_output(result, limit)}"


async def run_user_command(
    command: str,
    cwd: Path,
    launcher: ToolLauncher,
    *,
    session_id: str,
    approve: ApprovalCallback | None,
    output_limit: int,
    on_output: Callable[[bytes], None] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> UserCommandOutcome:
    """Gate `command` as the terminal tool does, run it in `cwd`, and return its outcome."""
    verdict = classify_command(command, cwd=cwd, sandboxed=launcher.sandbox.active, policy=launcher.confinement)
    if verdict.level == "block":
        return UserCommandOutcome(blocked_message("this command", verdict), False, None)
    if verdict.level == "approve":
        request = ApprovalRequest(
            session_id=session_id,
            call_id="user-shell",
            tool_name="terminal",
            command=command,
            reason=verdict.reason,
            rule=verdict.rule,
        )
        decision = ApprovalDecision.DENY if approve is None else await approve(request)
        if decision == ApprovalDecision.DENY:
            return UserCommandOutcome(f"not run: it needs approval ({verdict.reason}) and was denied", False, None)
    result = await run_command(command, cwd, timeout, launcher, writable=cwd, on_data=on_output)
    return UserCommandOutcome(result, True, context_message(command, cwd, result, output_limit))
