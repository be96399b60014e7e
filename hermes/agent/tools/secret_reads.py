"""The read guard of the file tools in server mode: secrets are read only with approval.

A server's tool calls come from remote clients, so when a turn's source is `api_server`,
read_file, patch and search_files refuse /etc/shadow, /etc/gshadow, private keys,
credential stores and $HERMES_HOME unless the approval callback says yes (like a risky
command). Local front ends (cli, tui) act for the user at the keyboard and are not guarded.
"""

from __future__ import annotations

from pathlib import Path

from hermes.agent.tools.approval import Verdict, denied_message
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.protected_paths import PRIVATE_KEY_MARKER, secret_read

GUARDED_SOURCES = frozenset({"api_server"})

_NOT_READ = "was not done (nothing was read)"


def guards_reads(ctx: ToolContext) -> bool:
    return ctx.source in GUARDED_SOURCES


async def read_refusal(ctx: ToolContext, tool_name: str, path: Path) -> str | None:
    """None when `path` may be read in this turn; otherwise the result text of the refusal."""
    if not guards_reads(ctx):
        return None
    found = secret_read(str(path))
    if found is None:
        return None
    rule, what = found
    if await ctx.request_approval(tool_name, str(path), f"read {what}", rule):
        return None
    verdict = Verdict("approve", f"read {what}", rule)
    return denied_message(f"reading {path}", verdict, approver_available=ctx.approve is not None, outcome=_NOT_READ)


def is_secret_file(path: Path, text: str) -> bool:
    """For search_files in a guarded turn: skip this file (secret place or private key content)."""
    return PRIVATE_KEY_MARKER.decode() in text or secret_read(str(path), sniff=False) is not None
