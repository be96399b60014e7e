"""The `hooks` section of a project's Claude Code settings (`hooks_claude_compat = true`).

    hooks, problems = claude_hooks(cwd)

Reads `.claude/settings.json` and `.claude/settings.local.json` in the working folder, in
Claude Code's format:

    {"hooks": {"PreToolUse": [{"matcher": "Bash",
                               "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}}

Invariants: a missing file is no hooks; an unreadable or invalid one is no hooks from it
and one problem line (shown, never raised: a project's file must not stop a turn); a
file larger than MAX_BYTES is not read.
"""

from __future__ import annotations

import json
from pathlib import Path

from hermes.errors import ConfigError
from hermes.hooks_config import HookConfig, parse_hooks

FILES = (".claude/settings.json", ".claude/settings.local.json")
MAX_BYTES = 1024 * 1024


def claude_hooks(cwd: Path) -> tuple[list[HookConfig], list[str]]:
    """(the hooks of the folder's Claude Code settings, problems with those files)."""
    hooks: list[HookConfig] = []
    problems: list[str] = []
    for name in FILES:
        path = cwd / name
        try:
            if not path.is_file():
                continue
            if path.stat().st_size > MAX_BYTES:
                problems.append(f"{path}: larger than {MAX_BYTES} bytes, not read")
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"{path}: not read ({exc})")
            continue
        section = data.get("hooks") if isinstance(data, dict) else None
        if section is None:
            continue
        try:
            hooks.extend(parse_hooks(section, str(path), source=str(path)))
        except ConfigError as exc:
            problems.append(str(exc))
    return hooks, problems
