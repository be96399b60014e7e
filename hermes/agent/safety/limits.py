"""How the per-call limits of `[tool_limits]` are enforced here (Linux), decided once per process.

    state = resolve_limits(settings.tool_limits)     # probes the pids cgroup once per process
    argv_options = state.supervisor_args()           # for _supervisor.py
    state.detail                                     # one line for `hermes doctor`

The supervisor (_supervisor.py) applies the limits to the command and everything it starts:
- memory_mb: RLIMIT_AS of each process; cpu_seconds: RLIMIT_CPU of each process;
- processes, by the first mechanism that works:
  1. a pids cgroup per call, made under PIDS_PARENT in the cgroup v2 hierarchy (when its
     root offers the pids controller) or else the v1 `pids` hierarchy, when hermes can
     write there (root, in practice); created at the start of the call, removed at its end;
  2. RLIMIT_NPROC when hermes does not run as root: the uid's task count at the start of
     the call plus `processes` (the kernel counts every process of the real uid, so other
     processes of the user starting meanwhile use up the same room);
  3. none: root without a writable pids cgroup (RLIMIT_NPROC does not bind root); `detail`
     says so and `enforced` is False.

Invariants: probing creates at most the empty PIDS_PARENT folder (kept for later calls) and
one probe cgroup it removes again; nothing here raises for a missing mechanism.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermes.limits_config import ToolLimits

PIDS_PARENT = "hermes"
"""Folder, at the root of the pids hierarchy, that holds the per-call cgroups `call-PID`."""
MOUNTINFO = Path("/proc/self/mountinfo")

ProcessMechanism = Literal["cgroup", "rlimit", "none", "unlimited"]


@dataclass(frozen=True, slots=True)
class LimitsState:
    """The resolved limits: what is asked, and how the process limit is enforced."""

    limits: ToolLimits = ToolLimits(processes=0)
    mechanism: ProcessMechanism = "unlimited"
    pids_parent: Path | None = None
    """Where the supervisor makes each call's pids cgroup (mechanism "cgroup")."""
    why_not: str = ""
    """Why no mechanism enforces the process limit (mechanism "none")."""

    @property
    def enforced(self) -> bool:
        """False only when a process limit is asked for and nothing here can enforce it."""
        return self.mechanism != "none"

    def supervisor_args(self) -> list[str]:
        """The supervisor's options for these limits (before its `--`)."""
        args: list[str] = []
        if self.limits.processes > 0 and self.mechanism in ("cgroup", "rlimit"):
            args += ["--processes", str(self.limits.processes)]
        if self.pids_parent is not None:
            args += ["--pids-cgroup", str(self.pids_parent)]
        if self.limits.memory_mb > 0:
            args += ["--memory-mb", str(self.limits.memory_mb)]
        if self.limits.cpu_seconds > 0:
            args += ["--cpu-seconds", str(self.limits.cpu_seconds)]
        return args

    @property
    def detail(self) -> str:
        """One line for `hermes doctor`."""
        limits = self.limits
        if self.mechanism == "cgroup":
            processes = f"processes ≤ {limits.processes} per call (pids cgroup under {self.pids_parent})"
        elif self.mechanism == "rlimit":
            processes = f"processes ≤ {limits.processes} per call (RLIMIT_NPROC above the user's current count)"
        elif self.mechanism == "none":
            processes = f"processes: {limits.processes} asked but NOT enforced ({self.why_not})"
        else:
            processes = "processes: no limit"
        memory = "memory: no limit"
        if limits.memory_mb:
            memory = f"memory ≤ {limits.memory_mb} MiB address space per process"
        cpu = f"CPU ≤ {limits.cpu_seconds} s per process" if limits.cpu_seconds else "CPU: no limit"
        return f"{processes}; {memory}; {cpu}"


NO_LIMITS = LimitsState()
"""The state of a tool set built without settings (tests, library use)."""

_CGROUP_PROBES: dict[Path, Path | str] = {}


def resolve_limits(limits: ToolLimits, *, mountinfo: Path | None = None, euid: int | None = None) -> LimitsState:
    """Decide how `limits` are enforced here (`euid` default: ours); the cgroup probe is
    cached per mountinfo file (default: MOUNTINFO, this process's mounts)."""
    mountinfo = MOUNTINFO if mountinfo is None else mountinfo
    if limits.processes <= 0:
        return LimitsState(limits, "unlimited")
    if not sys.platform.startswith("linux"):
        return LimitsState(limits, "none", why_not=f"needs Linux (this is {sys.platform})")
    if mountinfo not in _CGROUP_PROBES:
        _CGROUP_PROBES[mountinfo] = probe_pids_cgroup(mountinfo)
    found = _CGROUP_PROBES[mountinfo]
    if isinstance(found, Path):
        return LimitsState(limits, "cgroup", pids_parent=found)
    if (os.geteuid() if euid is None else euid) != 0:
        return LimitsState(limits, "rlimit")
    return LimitsState(limits, "none", why_not=f"hermes runs as root and {found}")


def pids_hierarchies(mountinfo: Path) -> list[Path]:
    """Roots offering the pids controller: the cgroup v2 mount first, then the v1 `pids` one."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return []
    v2: list[Path] = []
    v1: list[Path] = []
    for line in lines:
        before, sep, after = line.partition(" - ")
        mount_fields, fs_fields = before.split(), after.split()
        if not sep or len(mount_fields) < 5 or len(fs_fields) < 3:
            continue
        point = Path(_unescape(mount_fields[4]))
        if fs_fields[0] == "cgroup2":
            with contextlib.suppress(OSError):
                if "pids" in (point / "cgroup.controllers").read_text().split():
                    v2.append(point)
        elif fs_fields[0] == "cgroup" and "pids" in fs_fields[2].split(","):
            v1.append(point)
    return v2 + v1


def probe_pids_cgroup(mountinfo: Path) -> Path | str:
    """The folder for per-call pids cgroups, ready (and tried once), or why there is none."""
    roots = pids_hierarchies(mountinfo)
    if not roots:
        return "no pids cgroup controller is mounted"
    problems = []
    for root in roots:
        try:
            return _prepare(root)
        except OSError as exc:
            problems.append(f"{root}: {exc.strerror or exc}")
    return "no pids cgroup is writable (" + "; ".join(problems) + ")"


def _prepare(root: Path) -> Path:
    """PIDS_PARENT under `root` with the pids controller for its children; a probe child must
    take a pids.max. Raises OSError when this hierarchy cannot be used."""
    v2 = (root / "cgroup.controllers").exists()
    if v2:
        _enable_pids(root)
    parent = root / PIDS_PARENT
    parent.mkdir(exist_ok=True)
    if v2:
        _enable_pids(parent)
    probe = parent / f"probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    try:
        (probe / "pids.max").write_text("1")
    finally:
        probe.rmdir()
    return parent


def _enable_pids(cgroup: Path) -> None:
    """Let `cgroup`'s children use the pids controller (cgroup v2)."""
    control = cgroup / "cgroup.subtree_control"
    if "pids" not in control.read_text().split():
        control.write_text("+pids")


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040 …)."""
    for code in ("\\040", "\\011", "\\012", "\\134"):
        text = text.replace(code, chr(int(code[1:], 8)))
    return text
