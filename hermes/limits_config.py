"""The `[tool_limits]` table of config.toml: per-call limits of tool commands.

    [tool_limits]
    processes = 512      # processes (tasks) one call may run at once; 0: no limit
    memory_mb = 0        # address space (RLIMIT_AS) of each process, in MiB; 0: no limit
    cpu_seconds = 0      # CPU seconds each process may use (RLIMIT_CPU); 0: no limit

Each key can be overridden by an environment variable (HERMES_TOOL_PROCESSES,
HERMES_TOOL_MEMORY_MB, HERMES_TOOL_CPU_SECONDS); precedence: environment > config.toml >
default. There is no command-line flag form.

memory_mb has no default: RLIMIT_AS caps reserved address space, not memory in use, and
common runtimes (the JVM, V8/Node, sanitizers) reserve gigabytes they never touch, so
any default small enough to matter would break ordinary tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from hermes.errors import ConfigError

TABLE = "tool_limits"
ENV: dict[str, str] = {
    "processes": "HERMES_TOOL_PROCESSES",
    "memory_mb": "HERMES_TOOL_MEMORY_MB",
    "cpu_seconds": "HERMES_TOOL_CPU_SECONDS",
}
"""Key of the table -> the environment variable that overrides it."""


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """What the settings ask for; 0 means no limit. Enforced by the tool supervisor."""

    processes: int = 512
    memory_mb: int = 0
    cpu_seconds: int = 0

    def items(self) -> list[tuple[str, int]]:
        """(key, value) in table order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


def parse_table(raw: object, where: str) -> dict[str, int]:
    """The keys the `[tool_limits]` table sets, checked; ConfigError names the bad key."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: {TABLE} must be a table ([{TABLE}])")
    unknown = sorted(set(raw) - set(ENV))
    if unknown:
        raise ConfigError(f"{where}: [{TABLE}]: unknown key(s) {', '.join(unknown)} (use {', '.join(ENV)})")
    return {str(key): _count(f"{where}: [{TABLE}] {key}", value) for key, value in raw.items()}


def resolve_limits(table: Mapping[str, int], env: Mapping[str, str]) -> ToolLimits:
    """Defaults, then the table's keys, then non-empty environment variables."""
    values = dict(table)
    for key, name in ENV.items():
        raw = env.get(name)
        if raw not in (None, ""):
            values[key] = _count(name, raw)
    return replace(ToolLimits(), **values)


def _count(label: str, value: object) -> int:
    """A whole number >= 0 (from TOML, or the text of an environment variable)."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or number < 0:
        raise ConfigError(f"invalid value for {label}: {value!r} (a whole number, 0 for no limit)")
    return number
