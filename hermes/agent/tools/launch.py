"""How tool processes start: a scrubbed environment, a supervisor, and the optional sandbox.

    launcher = ToolLauncher(sandbox=state, env_passthrough=("GITHUB_TOKEN",))
    argv = launcher.argv([shell, "-c", command], cwd)
    env = launcher.env()

Invariants:
- `env()` never contains hermes's own secrets (API_SERVER_KEY, HERMES_API_KEY,
  OPENAI_API_KEY) nor any variable named *_KEY, *_TOKEN, *_SECRET, *_PASSWORD (and a few
  more, see SECRET_PATTERNS), unless a glob in `env_passthrough` names it; nor, whatever
  its name, a variable whose value is the configured provider or server key;
- `argv()` starts the command under the supervisor script (_supervisor.py), which kills
  every process the command started (also those that left its process group) when the
  command exits, when `end_call` asks, and when hermes dies, even by SIGKILL; it applies
  the `[tool_limits]` (`limits`) unless `limited=False`; inside it, the command runs in the
  bubblewrap sandbox when `sandbox.active`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.sandbox import OFF, SandboxConfig, SandboxState, resolve_sandbox
from hermes.agent.tools.limits import NO_LIMITS, LimitsState, resolve_limits

if TYPE_CHECKING:
    from hermes.config import Settings

SECRET_NAMES = frozenset({"API_SERVER_KEY", "HERMES_API_KEY", "OPENAI_API_KEY"})
SECRET_PATTERNS: tuple[str, ...] = (
    "*_KEY", "*_TOKEN", "*_SECRET", "*_PASSWORD", "*_PASSWD", "*_CREDENTIALS", "*_SECRET_*",
)  # fmt: skip
"""Globs (matched on the upper-cased name) of variables tools never see unless passed through."""
TOOL_ENV_EXTRA = {"PAGER": "cat", "GIT_PAGER": "cat"}
"""Set for every tool command: nothing may wait for a pager."""
SUPERVISOR = Path(__file__).with_name("_supervisor.py")
END_CALL = signal.SIGUSR2
"""Asks a supervisor to kill everything its command started and exit (= _supervisor.END_CALL)."""


def end_call(pid: int) -> None:
    """Ask the supervisor `pid` to end its call now (it kills every process of the call)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, END_CALL)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_NAMES or any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def scrubbed_env(environ: Mapping[str, str], passthrough: tuple[str, ...] = ()) -> dict[str, str]:
    """`environ` without secret-looking variables, except those a passthrough glob names."""
    return {
        name: value
        for name, value in environ.items()
        if not is_secret_name(name) or any(fnmatch.fnmatchcase(name, glob) for glob in passthrough)
    }


@dataclass(frozen=True, slots=True)
class ToolLauncher:
    """Everything the terminal tool needs to start a command; one per tool set."""

    sandbox: SandboxState = OFF
    env_passthrough: tuple[str, ...] = ()
    secret_values: frozenset[str] = field(default=frozenset(), repr=False)
    """The provider and server keys as configured; a variable holding one is dropped."""
    limits: LimitsState = NO_LIMITS

    @classmethod
    def from_settings(cls, settings: Settings) -> ToolLauncher:
        """Resolves the sandbox (ConfigError for `sandbox = on` without a working bwrap)."""
        sandbox = resolve_sandbox(SandboxConfig.from_settings(settings))
        keys = frozenset(k for k in (settings.api_key, settings.server_key) if k)
        return cls(
            sandbox=sandbox,
            env_passthrough=settings.tool_env_passthrough,
            secret_values=keys,
            limits=resolve_limits(settings.tool_limits),
        )

    def argv(
        self,
        command: list[str],
        cwd: Path,
        *,
        writable: Path | None = None,
        expose: tuple[Path, ...] = (),
        limited: bool = True,
    ) -> list[str]:
        """The program line to start (as a new session) in `cwd`; `writable` and `expose` as in
        SandboxState.wrap; `limited=False` leaves out the per-call limits."""
        inner = self.sandbox.wrap(command, cwd, writable=writable, expose=expose)
        options = self.limits.supervisor_args() if limited else []
        return [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), *options, "--", *inner]

    def env(self) -> dict[str, str]:
        env = scrubbed_env(os.environ, self.env_passthrough)
        return {**{k: v for k, v in env.items() if v not in self.secret_values}, **TOOL_ENV_EXTRA}
