"""What "allow for this session" covers: the one rule for every front end.

    session_grant(tool_name, shown, rule, grant) -> Grant | None

Every front end (the TUI modal, `chat -q`'s prompt, ACP's permission request, the server's
`POST /v1/runs/{id}/approval`) only answers ONCE, SESSION or DENY; ToolContext.request_approval
turns a SESSION answer into the Grant built here, so they cannot differ.

Invariants:
- a grant covers exactly what the request showed: a command (`terminal`) byte for byte as
  written, one resolved path for a write or read (`path_grant`), one tool of an MCP server
  (`tool_grant`); never a rule, so `rm -r junk1` granted does not cover `rm -rf /tmp/other`
  and a write of /tmp/outside/a.txt does not cover /tmp/outside/b.txt or ~/.bashrc;
- the request says what a grant would cover (ApprovalRequest.grant); None there means none
  is offered and a SESSION answer counts as ONCE;
- no grant for the always-ask rules (NEVER_GRANTED): /etc, ~/.ssh, hermes's own files and
  the files that run code later (shell start-up files, .git/config and hooks, .envrc,
  ~/.gitconfig, ~/.config, ~/.local/bin: runs_later.py). A verdict that merges rules
  ("outside_write+shell_rc_write") is never granted when any of them is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes.agent.safety.runs_later import RUNS_LATER_RULES

NEVER_GRANTED = frozenset(
    {"etc_write", "ssh_write", "hermes_config_write", "hermes_home_write", "protected_link", *RUNS_LATER_RULES}
)
"""Rules that ask every time, whatever was granted before."""


@dataclass(frozen=True, slots=True)
class Grant:
    """One "allow for this session": `key` is remembered, `covers` is shown before it is given."""

    key: str
    covers: str


HOOK_NEVER_APPROVES = NEVER_GRANTED | {"secret_file_read", "private_key_read"}
"""Rules a hook's "approve" never answers: the always-ask writes and the secret reads."""


def hook_may_approve(rule: str) -> bool:
    """Whether a PreToolUse hook's "approve" may stand in for the person (no rule of a
    merged verdict is one of HOOK_NEVER_APPROVES)."""
    return not any(part in HOOK_NEVER_APPROVES for part in rule.split("+"))


def grantable(rule: str) -> bool:
    """False when any rule of a merged verdict ("a+b") is one that always asks."""
    return not any(part in NEVER_GRANTED for part in rule.split("+"))


def command_grant(tool_name: str, shown: str, where: Path | None = None) -> Grant:
    """The grant of one action exactly as shown (a terminal command byte for byte, run in the
    folder `where` when given: `rm -r junk1` elsewhere is another action)."""
    what = "command" if tool_name == "terminal" else "call"
    if where is None:
        return Grant(f"{tool_name}\0{shown}", f"this exact {what}: {shown}")
    return Grant(f"{tool_name}\0{where}\0{shown}", f"this exact {what} in {where}: {shown}")


def path_grant(action: str, path: Path | str) -> Grant:
    """The grant of `action` ("write", "read") on one resolved path, no other file."""
    return Grant(f"{action}\0{path}", f"{action}s of the file {path} only")


def tool_grant(tool_name: str, server: str) -> Grant:
    """The grant of one MCP tool (any arguments): what an MCP server set to `approval = "ask"` asks about."""
    return Grant(f"mcp\0{server}\0{tool_name}", f"every call of the tool {tool_name} of the MCP server {server}")


def session_grant(tool_name: str, shown: str, rule: str, grant: Grant | None) -> Grant | None:
    """The grant a SESSION answer gives for this request (`grant`, default: `shown` exactly),
    or None when the rule always asks."""
    if not grantable(rule):
        return None
    return grant if grant is not None else command_grant(tool_name, shown)
