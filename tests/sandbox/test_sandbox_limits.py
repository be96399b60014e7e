"""The per-call [tool_limits] with real processes: process count, memory, CPU seconds.

As root (this project's CI machine) the process limit is a pids cgroup per call; as an
unprivileged user it is RLIMIT_NPROC: those tests run the supervisor as `nobody` (setpriv).
Fork bombs run against small limits for a few seconds; every test ends the call, checks
that no marked process is left, and kills any stray on the way out.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import bwrap_works, pids_with

from hermes.agent.safety.launch import SUPERVISOR, ToolLauncher
from hermes.agent.safety.limits import LimitsState, resolve_limits
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.tools.terminal import run_command
from hermes.limits_config import ToolLimits

SANDBOX_MODES = ["off", pytest.param("on", marks=pytest.mark.skipif(not bwrap_works(), reason="no working bwrap"))]
NOBODY = 65534
PROCESSES = 32

PYTHON = shlex.quote(os.path.realpath(sys.executable))
"""A real interpreter, not a wrapper script (pyenv's shim would lose the `exec -a` marker),
and not a venv link that may live under /tmp, which the sandbox's private /tmp covers."""
PYTHON_BOMB = f"{PYTHON} -c 'import os\nwhile 1: os.fork()'"
BASH_BOMB = "bash -c ':(){ :|:& };:'"
COUNT_FORKS = PYTHON + """ -c '
import os, time
n = 0
for _ in range(100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print("forked", n)
'"""
"""Prints how many sleeping children it could start, up to 100."""


def cgroup_limits(processes: int) -> LimitsState:
    state = resolve_limits(ToolLimits(processes=processes))
    if state.mechanism != "cgroup":
        pytest.skip(f"no pids cgroup for the process limit here ({state.detail})")
    return state


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the pids cgroup path is taken when hermes runs as root")
needs_setpriv = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to become nobody"
)


def launcher(mode: str, limits: LimitsState) -> ToolLauncher:
    return ToolLauncher(sandbox=resolve_sandbox(SandboxConfig(mode="on" if mode == "on" else "off")), limits=limits)


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"hermes-limit-{uuid.uuid4().hex[:10]}"
    yield name
    for _ in range(50):  # never leave strays behind, even when a test fails (a bomb may still fork)
        strays = pids_with(name)
        if not strays:
            break
        for pid in strays:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


class PeakCounter:
    """Counts, in a thread, the live processes whose argv[0] is `marker`; keeps the peak."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, len(pids_with(self.marker, program=True)))
            time.sleep(0.02)

    def __enter__(self) -> PeakCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def call_cgroups(parent: Path) -> set[str]:
    return {entry.name for entry in parent.iterdir() if entry.name.startswith("call-")}


# ---- root: a pids cgroup per call ---------------------------------------------------------


@needs_root
@pytest.mark.parametrize("bomb", [PYTHON_BOMB, BASH_BOMB], ids=["python", "bash"])
@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_a_fork_bomb_stops_at_the_limit_and_ends_with_the_call(
    mode: str, bomb: str, marker: str, tmp_path: Path
) -> None:
    limits = cgroup_limits(PROCESSES)
    assert limits.pids_parent is not None
    before = call_cgroups(limits.pids_parent)
    tools = launcher(mode, limits)
    began = time.monotonic()
    with PeakCounter(marker) as counter:
        # The shell outlives the bomb's first process, so the call ends by its timeout.
        bombing = asyncio.create_task(run_command(f"(exec -a {marker} {bomb}); sleep 100", tmp_path, 3, tools))
        await asyncio.sleep(1)
        # hermes keeps answering, and another call gets its own room.
        alive = await asyncio.wait_for(run_command("echo alive", tmp_path, 30, tools), 30)
        result = await asyncio.wait_for(bombing, 60)

    assert alive == "exit code: 0\n--- stdout ---\nalive"
    assert "timed out after 3 s" in result
    assert time.monotonic() - began < 30
    assert 1 < counter.peak <= PROCESSES, f"peak {counter.peak} processes"
    assert pids_with(marker, program=True) == []
    assert call_cgroups(limits.pids_parent) <= before, "a per-call cgroup was left behind"


@needs_root
@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_a_call_cannot_start_more_processes_than_the_limit(mode: str, tmp_path: Path) -> None:
    result = await asyncio.wait_for(run_command(COUNT_FORKS, tmp_path, 60, launcher(mode, cgroup_limits(16))), 60)

    assert result.startswith("exit code: 0\n--- stdout ---\nforked "), result
    forked = int(result.split("forked ", 1)[1].split()[0])
    assert 5 < forked < 16  # the shell and python count too (and bwrap's two processes)


# ---- not root: RLIMIT_NPROC ----------------------------------------------------------------


BECOME_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture(scope="module")
def nobody_python() -> str:
    """An interpreter nobody may run (hermes's own may live under root's private home)."""
    for candidate in ("/usr/bin/python3", sys.executable):
        probe = [*BECOME_NOBODY, candidate, "-I", "-S", "-c", "import resource"]
        if subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0:
            return candidate
    pytest.skip("no Python interpreter that nobody can run")


def as_nobody(command: str, cwd: Path, processes: int, python: str, supervisor: str) -> list[str]:
    """The supervisor's program line for `command`, run as nobody with the RLIMIT_NPROC limits
    (`python` both runs the supervisor and replaces {python} in `command`; `supervisor` is a
    copy of the supervisor script that nobody can read)."""
    tools = ToolLauncher(limits=LimitsState(ToolLimits(processes=processes), "rlimit"))
    argv = tools.argv(["bash", "-c", command.replace(PYTHON, shlex.quote(python))], cwd)
    readable = [supervisor if word == str(SUPERVISOR) else word for word in argv[1:]]
    assert readable != argv[1:], "the supervisor is no longer on the program line"
    return [*BECOME_NOBODY, python, *readable]


@pytest.fixture(scope="module")
def nobody_supervisor() -> Iterator[str]:
    """A copy of the supervisor that nobody can read: the checkout may sit in a folder private
    to its owner (0700, a home directory), which nobody cannot enter."""
    folder = Path(tempfile.mkdtemp(prefix="hermes-nobody-"))
    try:
        folder.chmod(0o755)
        copy = folder / "_supervisor.py"
        shutil.copyfile(SUPERVISOR, copy)
        copy.chmod(0o644)
        yield str(copy)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def nobody_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "nobody"
    folder.mkdir()
    os.chown(folder, NOBODY, NOBODY)
    tmp_path.chmod(0o755)
    return folder


def run_as_nobody(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=60, start_new_session=True, stdin=subprocess.DEVNULL
    )


@needs_setpriv
def test_as_an_unprivileged_user_rlimit_nproc_bounds_the_call(
    nobody_dir: Path, nobody_python: str, nobody_supervisor: str
) -> None:
    done = run_as_nobody(as_nobody(COUNT_FORKS, nobody_dir, 16, nobody_python, nobody_supervisor), nobody_dir)

    assert done.returncode == 0, done.stderr
    forked = int(done.stdout.split("forked ", 1)[1].split()[0])
    assert 5 < forked < 16  # the shell and python count too


@needs_setpriv
def test_as_an_unprivileged_user_a_fork_bomb_stops_at_the_limit(
    marker: str, nobody_dir: Path, nobody_python: str, nobody_supervisor: str
) -> None:
    # The bomb never ends by itself: `timeout` ends the call's inner shell after 3 s, the
    # supervisor every process left when the outer shell exits.
    command = f'timeout -s KILL 3 bash -c "(exec -a {marker} {PYTHON_BOMB}); sleep 100"; echo ended'
    began = time.monotonic()
    with PeakCounter(marker) as counter:
        done = run_as_nobody(as_nobody(command, nobody_dir, PROCESSES, nobody_python, nobody_supervisor), nobody_dir)

    assert done.stdout == "ended\n", done.stderr[-2000:]
    assert time.monotonic() - began < 30
    assert 1 < counter.peak <= PROCESSES, f"peak {counter.peak} processes"
    assert pids_with(marker, program=True) == []


# ---- memory and CPU ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_memory_beyond_the_limit_cannot_be_allocated(mode: str, tmp_path: Path) -> None:
    limits = LimitsState(ToolLimits(processes=0, memory_mb=200))
    command = f"{PYTHON} -c 'block = bytearray(400 * 1024 * 1024); print(\"allocated\")'"

    result = await asyncio.wait_for(run_command(command, tmp_path, 60, launcher(mode, limits)), 60)

    assert result.startswith("exit code: 1\n"), result
    assert "MemoryError" in result and "allocated" not in result


@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_a_busy_loop_is_killed_at_the_cpu_limit(mode: str, marker: str, tmp_path: Path) -> None:
    limits = LimitsState(ToolLimits(processes=0, cpu_seconds=1))
    began = time.monotonic()

    result = await asyncio.wait_for(
        run_command(f"exec -a {marker} {PYTHON} -c 'while 1: pass'", tmp_path, 30, launcher(mode, limits)), 60
    )

    assert "timed out" not in result
    # 152 = 128 + SIGXCPU: the supervisor reports core-dumping signals as exit codes.
    assert result.splitlines()[0] == f"exit code: {128 + signal.SIGXCPU}", result
    assert time.monotonic() - began < 20
    assert pids_with(marker, program=True) == []


def test_the_supervisor_gets_the_limits_and_mcp_servers_do_not(tmp_path: Path) -> None:
    from hermes.agent.mcp.spawn import stdio_command
    from hermes.mcp_config import McpServerConfig

    limits = LimitsState(ToolLimits(processes=8, memory_mb=64, cpu_seconds=3), "cgroup", pids_parent=Path("/cg"))
    tools = ToolLauncher(limits=limits)

    argv = tools.argv(["true"], tmp_path)
    server = stdio_command(McpServerConfig(name="s", command=sys.executable, args=("-V",)), tmp_path, tools)

    assert argv[4:] == [
        str(os.getpid()), "--processes", "8", "--pids-cgroup", "/cg", "--memory-mb", "64", "--cpu-seconds", "3",
        "--", "true",
    ]  # fmt: skip
    assert server.args[3:6] == (str(os.getpid()), "--", sys.executable)


async def test_a_cgroup_that_cannot_be_made_is_reported_and_the_command_still_runs(tmp_path: Path) -> None:
    limits = LimitsState(ToolLimits(processes=8), "cgroup", pids_parent=tmp_path / "no-such-hierarchy")

    result = await asyncio.wait_for(run_command("echo ran", tmp_path, 30, ToolLauncher(limits=limits)), 30)

    stderr = "--- stderr ---\nhermes: cannot set up the pids cgroup "
    assert result.startswith(f"exit code: 0\n--- stdout ---\nran\n{stderr}")
    instead = "the process limit is not enforced" if os.getuid() == 0 else "RLIMIT_NPROC instead"
    assert result.endswith(f"(No such file or directory); {instead}")
