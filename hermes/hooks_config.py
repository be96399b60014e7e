"""The `[[hooks.EVENT]]` tables of config.toml, and the one parser of hook entries.

    [[hooks.PreToolUse]]
    matcher = "terminal|Bash"       # a regex over the tool's name; "" or "*": every tool
    command = "./scripts/check.sh"  # a shell command line, run in the working folder
    timeout = 30                    # seconds, default 60

Claude Code's nested form is read too, in config.toml and in `.claude/settings.json`
(hermes/agent/hooks/claude_settings.py), by the same `parse_event_entries`:

    [[hooks.PreToolUse]]
    matcher = "Bash"
    hooks = [{ type = "command", command = "./scripts/check.sh", timeout = 30 }]

Invariants: every HookConfig has a known event, a non-empty command, a matcher that
compiles as a regular expression and a positive, finite timeout; anything else is a
ConfigError naming the file and the entry.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.errors import ConfigError

TABLE = "hooks"
EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
DEFAULT_TIMEOUT = 60.0
CONFIG_SOURCE = "config.toml"


@dataclass(frozen=True, slots=True)
class HookConfig:
    event: str
    command: str
    matcher: str = ""
    """A regex matched (whole) against the tool's hermes name and its Claude Code name; "" or "*": all."""
    timeout: float = DEFAULT_TIMEOUT
    source: str = CONFIG_SOURCE
    """Where it was configured: "config.toml" or the path of a `.claude/settings.json`."""

    @property
    def from_claude(self) -> bool:
        return self.source != CONFIG_SOURCE

    def matches(self, *names: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        pattern = re.compile(self.matcher)
        return any(pattern.fullmatch(name) for name in names if name)


def parse_hooks(raw: object, where: str, source: str = CONFIG_SOURCE) -> tuple[HookConfig, ...]:
    """Every hook of a `hooks` table ({EVENT: [entry, …]})."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: hooks is a table of events ({', '.join(EVENTS)}), each a list of entries")
    hooks: list[HookConfig] = []
    for event, entries in raw.items():
        hooks.extend(parse_event_entries(str(event), entries, where, source))
    return tuple(hooks)


def parse_event_entries(event: str, entries: object, where: str, source: str) -> list[HookConfig]:
    """The hooks of one event: entries with `matcher` and `command` (and `timeout`), or
    Claude Code's `matcher` with a list `hooks` of {type = "command", command, timeout}."""
    label = f"{where}: hooks.{event}"
    if event not in EVENTS:
        raise ConfigError(f"{label}: unknown event (use one of {', '.join(EVENTS)})")
    if not isinstance(entries, list):
        raise ConfigError(f"{label}: a list of entries ([[hooks.{event}]] in TOML)")
    found: list[HookConfig] = []
    for index, entry in enumerate(entries):
        at = f"{label}[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{at}: an entry is a table with matcher and command")
        matcher = _matcher(entry.get("matcher", ""), at)
        if "hooks" in entry:
            unknown = set(entry) - {"matcher", "hooks"}
            inner = entry["hooks"]
            if unknown or not isinstance(inner, list):
                raise ConfigError(f'{at}: takes matcher and a list hooks = [{{type = "command", command = …}}]')
            for k, hook in enumerate(inner):
                if not isinstance(hook, Mapping) or hook.get("type", "command") != "command":
                    raise ConfigError(f'{at}.hooks[{k}]: only {{type = "command", command = …}} hooks are supported')
                found.append(_hook(event, matcher, hook, f"{at}.hooks[{k}]", source, allowed={"type"}))
        else:
            found.append(_hook(event, matcher, entry, at, source, allowed={"matcher"}))
    return found


def _hook(event: str, matcher: str, entry: Mapping[str, Any], at: str, source: str, *, allowed: set[str]) -> HookConfig:
    unknown = sorted(set(entry) - {"command", "timeout", *allowed})
    if unknown:
        raise ConfigError(f"{at}: unknown key(s) {', '.join(unknown)} (a hook takes matcher, command and timeout)")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{at}: command must be a non-empty string (a shell command line)")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"{at}: timeout must be a positive number of seconds")
    return HookConfig(event=event, command=command, matcher=matcher, timeout=float(timeout), source=source)


def _matcher(value: object, at: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{at}: matcher must be a string (a regex over tool names)")
    if value not in ("", "*"):
        try:
            re.compile(value)
        except re.error as exc:
            raise ConfigError(f"{at}: matcher {value!r} is not a valid regular expression ({exc})") from None
    return value
