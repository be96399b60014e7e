"""How tool processes start: an allowlisted environment, a supervisor, and the optional sandbox.

    launcher = ToolLauncher(sandbox=state, env_policy=ToolEnvPolicy(passthrough=("GITHUB_TOKEN",)))
    argv = launcher.argv([shell, "-c", command], cwd)
    env = launcher.env()

Invariants:
- `env()` is `env_policy.environment(os.environ)`: the core variables (PATH, HOME, LANG, …),
  those `tool_env_passthrough` names, PAGER=cat and GIT_PAGER=cat, and nothing else; never
  hermes's own keys or database URL (see tool_env.py);
- `argv()` starts the command under the supervisor script (_supervisor.py), which kills
  every process the command started (also those that left its process group) when the
  command exits, when `end_call` asks, and when hermes dies, even by SIGKILL; it applies
  the `[tool_limits]` (`limits`) unless `limited=False`; inside it, the command runs in the
  bubblewrap sandbox when `sandbox.active`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.safety.confinement import Confinement, private_tmp
from hermes.agent.safety.limits import NO_LIMITS, LimitsState, resolve_limits
from hermes.agent.safety.sandbox import OFF, SandboxConfig, SandboxState, resolve_sandbox
from hermes.agent.safety.tool_env import ToolEnvPolicy

if TYPE_CHECKING:
    from hermes.config import Settings

SUPERVISOR = Path(__file__).with_name("_supervisor.py")
END_CALL = signal.SIGUSR2
"""Asks a supervisor to kill everything its command started and exit (= _supervisor.END_CALL)."""


def end_call(pid: int) -> None:
    """Ask the supervisor `pid` to end its call now (it kills every process of the call)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, END_CALL)


@dataclass(frozen=True, slots=True)
class ToolLauncher:
    """Everything the terminal tool needs to start a command; one per tool set."""

    sandbox: SandboxState = OFF
    env_policy: ToolEnvPolicy = ToolEnvPolicy()
    confinement: Confinement | None = None
    """The policy the file tools check (the sandbox mounts follow the same one); None:
    `Confinement.default()` at each use."""
    limits: LimitsState = NO_LIMITS

    @classmethod
    def from_settings(cls, settings: Settings) -> ToolLauncher:
        """Resolves the sandbox (ConfigError for `sandbox = on` without a working bwrap)."""
        confinement = Confinement.from_settings(settings)
        sandbox = resolve_sandbox(SandboxConfig.from_settings(settings, confinement))
        return cls(
            sandbox=sandbox,
            env_policy=ToolEnvPolicy.from_settings(settings),
            confinement=confinement,
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
        if self.sandbox.active:
            expose = (*expose, *self.tool_folders())
        inner = self.sandbox.wrap(command, cwd, writable=writable, expose=expose)
        options = self.limits.supervisor_args() if limited else []
        return [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), *options, "--", *inner]

    def tool_folders(self) -> tuple[Path, ...]:
        """Where a tool's programs come from: every folder on the tool environment's PATH and its
        virtual environment (VIRTUAL_ENV). The sandbox keeps them visible, read-only, where its
        private /tmp would cover them (a venv or a PATH folder under /tmp)."""
        return tool_folders(self.env_policy.environment(os.environ))

    def env(self) -> dict[str, str]:
        """The environment of a tool process started now (read from os.environ at each call).

        TMPDIR is the private tmp, a writable root of the confinement policy (the same path
        inside the sandbox)."""
        return {**self.env_policy.environment(os.environ), "TMPDIR": str(private_tmp())}


def tool_folders(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The PATH folders and VIRTUAL_ENV of a tool environment `env`, absolute ones only."""
    named = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    if env.get("VIRTUAL_ENV"):
        named.append(env["VIRTUAL_ENV"])
    return tuple(dict.fromkeys(Path(p) for p in named if os.path.isabs(p)))
