"""The default system prompt: short on purpose (small local models read it every turn)."""

from __future__ import annotations

import datetime as _dt
import os
import platform

BASE_PROMPT = """You are hermes, an AI agent working in the user's terminal.
Be direct and concise. Use the tools to inspect and change files and to run commands
instead of guessing; read a file before you patch it. Prefer read_file, search_files and
list_files over shell commands for reading. Never run destructive commands unless the
user asked for them. When you are done, answer in plain Markdown."""


def default_system_prompt(cwd: str | None = None, *, now: _dt.datetime | None = None) -> str:
    """The built-in prompt plus the facts a model needs: where, what OS, what date."""
    where = cwd or os.getcwd()
    today = (now or _dt.datetime.now()).strftime("%Y-%m-%d")
    return f"{BASE_PROMPT}\n\nWorking directory: {where}\nOS: {platform.system()}\nDate: {today}"
