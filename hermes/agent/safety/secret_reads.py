"""The read guards of the file tools.

- Hidden paths (the confinement policy's one list: $HERMES_HOME, credential stores,
  password databases) are never read, listed or searched by any tool, in every mode:
  `hidden_refusal`.
- Private keys elsewhere (by name or by content) are read in server mode only with
  approval: a server's tool calls come from remote clients, so when a turn's source is
  `api_server`, read_file, patch and search_files ask first (like a risky command).
  Local front ends (cli, tui) act for the user at the keyboard and are not asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from hermes.agent.safety.approval import blocked_message, denied_message
from hermes.agent.safety.confinement import Confinement
from hermes.agent.safety.grants import Grant, path_grant
from hermes.agent.safety.protected_paths import PRIVATE_KEY_MARKER, secret_read
from hermes.agent.safety.verdict import Verdict

GUARDED_SOURCES = frozenset({"api_server"})

_NOT_READ = "was not done (nothing was read)"


class ReadGuardContext(Protocol):
    """What the read guards need of a tool call (hermes/agent/tools/base.py's ToolContext has it);
    a protocol, so the policy never imports the tools (they depend on it, not the reverse)."""

    @property
    def cwd(self) -> Path: ...

    @property
    def source(self) -> str: ...

    @property
    def approve(self) -> object:
        """The front end's approval callback, or None when nobody can approve."""
        ...

    @property
    def policy(self) -> Confinement: ...

    async def request_approval(
        self, tool_name: str, command: str, reason: str, rule: str, grant: Grant | None = None
    ) -> bool: ...


def hidden_refusal(ctx: ReadGuardContext, path: Path, *, verb: str = "reading") -> str | None:
    """None unless `path` is hidden by the turn's confinement policy; then the refusal text."""
    hidden = ctx.policy.hidden_entry(path, ctx.cwd)
    if hidden is None:
        return None
    verdict = Verdict("block", f"{hidden} is hidden from tools (credentials or hermes's own files)", "hidden_path")
    return blocked_message(f"{verb} {path}", verdict, outcome="was not done")


def guards_reads(ctx: ReadGuardContext) -> bool:
    return ctx.source in GUARDED_SOURCES


async def read_refusal(ctx: ReadGuardContext, tool_name: str, path: Path) -> str | None:
    """None when `path` may be read in this turn; otherwise the result text of the refusal."""
    if not guards_reads(ctx):
        return None
    found = secret_read(str(path))
    if found is None:
        return None
    rule, what = found
    if await ctx.request_approval(tool_name, str(path), f"read {what}", rule, path_grant("read", path)):
        return None
    verdict = Verdict("approve", f"read {what}", rule)
    return denied_message(f"reading {path}", verdict, approver_available=ctx.approve is not None, outcome=_NOT_READ)


def is_secret_file(path: Path, text: str) -> bool:
    """For search_files in a guarded turn: skip this file (secret place or private key content)."""
    return PRIVATE_KEY_MARKER.decode() in text or secret_read(str(path), sniff=False) is not None
