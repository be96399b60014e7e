"""The bubblewrap sandbox for tool processes (Linux), modelled on Codex CLI's workspace-write.

    config = SandboxConfig.from_settings(settings)
    state = resolve_sandbox(config)          # probes bwrap once per process
    argv = state.wrap(["bash", "-c", cmd], cwd, writable=session_dir)

Inside the sandbox (when `state.active`):
- the whole file system is mounted read-only; the writable roots of the confinement policy
  (hermes/agent/safety/confinement.py: the session's working directory, `writable_roots`, the
  private tmp that is every command's `TMPDIR`) read-write, except hermes's own files
  and the files that run code later (.git/config, .git/hooks, .envrc, shell start-up
  files, ~/.config …: hermes/agent/safety/runs_later.py) inside them; a command may start
  elsewhere (`cwd`), which stays read-only;
- `/tmp` is a private tmpfs, `/dev` and `/proc` are fresh (a new PID namespace);
- the policy's hidden paths ($HERMES_HOME, credential stores, password databases) are
  covered: folders by an empty read-only tmpfs, files by /dev/null, so they can be neither
  read nor written, also through symlinks (mounts are by real path);
- bwrap dies with its parent (`--die-with-parent`) and is PID 1 of a new PID namespace,
  so when it dies every process of the command dies with it, daemons included;
- network is shared with the host unless `network` is false (`--unshare-net`).

Modes: `off` never wraps; `on` wraps or raises ConfigError when bwrap is missing or does
not work here (e.g. user namespaces are restricted); `auto` wraps where bwrap works and
otherwise runs unwrapped with one `notice` line for the front end to print at start, and
`fallback` saying why. That fallback is for a person at the keyboard (`hermes chat`);
`hermes serve` refuses to start on it (see cli/serve.py `check_sandbox`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes.agent.safety.confinement import Confinement, private_tmp
from hermes.agent.safety.runs_later import sandbox_mounts
from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.config import Settings

SandboxMode = Literal["auto", "on", "off"]

PROBE_TIMEOUT = 10.0
"""Seconds the bwrap probe may take before bwrap is declared not working."""


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """What the settings ask for. `hidden` holds absolute paths to cover."""

    mode: SandboxMode = "auto"
    network: bool = True
    hidden: tuple[Path, ...] = ()
    bwrap: str | None = None
    """Path of the bwrap program; None looks it up on PATH."""
    protected: tuple[Path, ...] = ()
    """Kept read-only even inside a writable root (hermes's own files)."""
    writable_roots: tuple[Path, ...] = ()
    """Writable besides the command's own writable folder and the private tmp."""

    @classmethod
    def from_settings(cls, settings: Settings, confinement: Confinement | None = None) -> SandboxConfig:
        """The sandbox for `settings`; its mounts follow `confinement` (default: the settings' own)."""
        policy = confinement if confinement is not None else Confinement.from_settings(settings)
        mode: SandboxMode
        if settings.sandbox == "on":
            mode = "on"
        elif settings.sandbox == "off":
            mode = "off"
        elif settings.sandbox == "auto":
            mode = "auto"
        else:
            raise ConfigError(f"invalid value for sandbox: {settings.sandbox!r} (use auto, on, off)")
        return cls(
            mode=mode,
            network=settings.sandbox_network,
            hidden=policy.hidden,
            protected=policy.protected,
            writable_roots=policy.writable_roots,
        )


@dataclass(frozen=True, slots=True)
class SandboxState:
    """The resolved sandbox: whether tool commands are wrapped, and how."""

    active: bool
    mode: SandboxMode
    network: bool
    detail: str
    """One line for `hermes doctor`: what is in force and why."""
    notice: str | None = None
    """The one line a front end prints at start (auto fell back to off), else None."""
    fallback: str | None = None
    """Why `auto` fell back to off (bwrap missing or not working here), else None. A front
    end nobody watches (hermes serve) refuses to start when this is set."""
    bwrap: str | None = None
    hidden: tuple[Path, ...] = field(default=())
    protected: tuple[Path, ...] = field(default=())
    writable_roots: tuple[Path, ...] = field(default=())

    def wrap(
        self, argv: list[str], cwd: Path, *, writable: Path | None = None, expose: tuple[Path, ...] = ()
    ) -> list[str]:
        """`argv` as run in `cwd`: wrapped in bwrap when active, unchanged otherwise.

        `writable` is the command's own writable folder (default: `cwd`); the configured
        writable roots and the private tmp (`TMPDIR`) are writable too. `expose` are paths
        the command needs to read that the private /tmp would otherwise cover.
        """
        if not self.active:
            return list(argv)
        assert self.bwrap is not None
        sandbox = bwrap_arguments(
            self.bwrap,
            cwd,
            self.hidden,
            network=self.network,
            writable=writable,
            expose=expose,
            extra_writable=(*self.writable_roots, private_tmp()),
            protected=self.protected,
        )
        return [*sandbox, "--", *argv]


OFF = SandboxState(active=False, mode="off", network=True, detail="off (sandbox = off)")
"""The state of a tool set built without settings (tests, library use)."""


def bwrap_arguments(
    bwrap: str,
    cwd: Path,
    hidden: tuple[Path, ...],
    *,
    network: bool,
    writable: Path | None = None,
    expose: tuple[Path, ...] = (),
    extra_writable: tuple[Path, ...] = (),
    protected: tuple[Path, ...] = (),
) -> list[str]:
    """The bwrap command line up to (not including) "--". Order matters: later mounts win,
    so protected paths stay read-only inside writable roots, and hidden ones stay hidden
    whatever `expose` or the writable roots name."""
    work = Path(os.path.realpath(writable if writable is not None else cwd))
    args = [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
    ]  # fmt: skip
    tmp = Path("/tmp")
    for path in dict.fromkeys(Path(os.path.realpath(p)) for p in expose):
        if path.exists() and tmp in path.parents:
            args += ["--ro-bind", str(path), str(path)]
    roots = list(dict.fromkeys([work, *(Path(os.path.realpath(p)) for p in extra_writable if os.path.isdir(p))]))
    for root in roots:
        args += ["--bind", str(root), str(root)]
    # Files that run code later (.git/config, hooks, .envrc, shell start-up files) stay
    # read-only inside the writable roots; how, and what is not covered: runs_later.py.
    tmp_root = Path(os.path.realpath(private_tmp()))
    args += sandbox_mounts(roots, Path.home(), scan_roots=[r for r in roots if r != tmp_root])
    for path in dict.fromkeys(Path(os.path.realpath(p)) for p in protected):
        if path.exists() and any(root == path or root in path.parents for root in roots):
            args += ["--ro-bind", str(path), str(path)]
    covered = False
    for path in dict.fromkeys(Path(os.path.realpath(p)) for p in hidden):
        if path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
        else:
            continue
        covered = covered or work == path or path in work.parents
    if covered:
        # The user chose to work inside a hidden folder: the working directory stays usable.
        args += ["--bind", str(work), str(work)]
    args += ["--unshare-pid", "--die-with-parent", "--chdir", os.path.realpath(cwd)]
    if not network:
        args.append("--unshare-net")
    return args


_PROBES: dict[tuple[str, bool], str | None] = {}


def probe_bwrap(bwrap: str, *, network: bool = True) -> str | None:
    """None when bwrap can build a sandbox here, else why not (one line). Cached per process."""
    key = (bwrap, network)
    if key not in _PROBES:
        _PROBES[key] = _run_probe(bwrap, network)
    return _PROBES[key]


def _run_probe(bwrap: str, network: bool) -> str | None:
    with tempfile.TemporaryDirectory(prefix="hermes-sandbox-probe-") as tmp:
        hidden_dir = Path(tmp) / "hidden"
        hidden_dir.mkdir()
        argv = [*bwrap_arguments(bwrap, Path(tmp), (hidden_dir,), network=network), "--", "/bin/sh", "-c", ":"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=PROBE_TIMEOUT, check=False, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            return f"{bwrap} did not finish a test run within {PROBE_TIMEOUT:g} s"
        except OSError as exc:
            return f"{bwrap} cannot be started: {exc.strerror or exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        why = err[-1] if err else f"exit code {done.returncode}"
        return f"{bwrap} failed a test run: {why}"
    return None


def resolve_sandbox(config: SandboxConfig) -> SandboxState:
    """Decide whether tool commands run in bwrap. Raises ConfigError for `on` without a working bwrap."""
    if config.mode == "off":
        return SandboxState(False, "off", config.network, "off (sandbox = off)")
    bwrap = config.bwrap or shutil.which("bwrap")
    problem = _unavailable(bwrap, config.network)
    net = "network on" if config.network else "network off"
    if problem is None:
        assert bwrap is not None
        detail = f"on (bubblewrap {bwrap}, sandbox = {config.mode}, {net}; working directory writable)"
        return SandboxState(
            True,
            config.mode,
            config.network,
            detail,
            bwrap=bwrap,
            hidden=config.hidden,
            protected=config.protected,
            writable_roots=config.writable_roots,
        )
    if config.mode == "on":
        raise ConfigError(f"sandbox = on, but {problem}; install bubblewrap (bwrap) or set sandbox = off")
    return SandboxState(
        False,
        "auto",
        config.network,
        f"off ({problem}; sandbox = auto)",
        notice=f"tool sandbox off: {problem} (set sandbox = off to silence this notice)",
        fallback=problem,
    )


def sandbox_notice(settings: Settings) -> str | None:
    """The start-up notice line for these settings (None unless `auto` fell back to off).

    Raises ConfigError like resolve_sandbox; the probe is cached, so this costs nothing
    once the tools have been built.
    """
    return resolve_sandbox(SandboxConfig.from_settings(settings)).notice


def _unavailable(bwrap: str | None, network: bool) -> str | None:
    """Why the sandbox cannot run here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap sandboxing needs Linux (this is {sys.platform})"
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    return probe_bwrap(bwrap, network=network)
