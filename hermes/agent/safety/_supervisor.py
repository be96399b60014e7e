"""Supervisor of one tool call: nothing the command starts outlives the call, or hermes.

Run as a script, never imported by hermes (stdlib only, started with `python -I -S`):

    python -I -S _supervisor.py PARENT_PID [--processes N] [--memory-mb N] [--cpu-seconds N]
                                [--pids-cgroup DIR] -- PROGRAM [ARG ...]

Invariants:
- it is started as a session leader by hermes (PARENT_PID) and makes itself a child
  subreaper (PR_SET_CHILD_SUBREAPER), so every process the command starts stays its
  descendant until it dies, also one that leaves the process group (setsid, nohup and
  `&`, double forks, daemons): an orphan is re-parented to the supervisor, not to init;
- the call ends when the command exits, when hermes sends END_CALL (timeout, interrupt),
  or when hermes dies (the kernel sends PARENT_GONE, asked with PR_SET_PDEATHSIG, even on
  SIGKILL of hermes; a death before the request took effect is seen in getppid). Then it
  SIGKILLs every remaining descendant, again until none is left (at most END_BOUND
  seconds), reaps them, and only then exits; when hermes died it also SIGKILLs its own
  process group, itself included;
- while the command runs, orphans that exit are reaped (no zombies pile up);
- limits bind the command and everything it starts, never the supervisor: RLIMIT_AS
  (--memory-mb), RLIMIT_CPU (--cpu-seconds, per process: SIGXCPU at the limit, SIGKILL one
  second later), and the number of processes (--processes): a pids cgroup `call-PID` made
  under DIR for this call and removed once its processes are dead, else, when the real uid
  is not root, RLIMIT_NPROC set to the uid's current task count plus N (the kernel counts
  per uid, and ignores RLIMIT_NPROC for root). A missing option or 0 means no limit;
- otherwise it is transparent: the command gets default signal dispositions and the
  supervisor's initial signal mask, and the supervisor exits with the command's exit code,
  or dies of the signal that killed it (SIGKILL when END_CALL or PARENT_GONE ended it);
- SIGTERM/SIGINT/SIGHUP sent to the group reach the command directly; the supervisor
  itself waits for the command instead of dying first.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import time
from typing import NamedTuple, NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_GONE = signal.SIGUSR1
END_CALL = signal.SIGUSR2
"""Sent by hermes to the supervisor alone: kill everything and end the call now."""
END_BOUND = 3.0
"""Seconds the supervisor keeps killing and reaping descendants before it gives up."""
_STOPS = {PARENT_GONE, END_CALL}
_PASSED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CORE_SIGNALS = {
    signal.SIGQUIT, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS,
    signal.SIGFPE, signal.SIGSEGV, signal.SIGSYS, signal.SIGXCPU, signal.SIGXFSZ,
}  # fmt: skip
"""Signals re-raised as an exit code 128+N instead (no core file of the supervisor)."""


_Mask = set[signal.Signals | int]
"""A signal mask as pthread_sigmask returns it."""


class Limits(NamedTuple):
    processes: int = 0
    memory_mb: int = 0
    cpu_seconds: int = 0
    pids_cgroup: str | None = None


class _Stop(Exception):
    """Raised by the END_CALL and PARENT_GONE handlers: end the call now."""


class _Call:
    """The command's pid and, once reaped, its wait status."""

    def __init__(self) -> None:
        self.pid = 0
        self.status: int | None = None

    def reap(self) -> bool:
        """Reap every child that has exited; False when no child is left at all."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.pid:
                self.status = status

    def wait(self) -> None:
        """Reap children (the command and exited orphans) until the command is reaped."""
        while self.status is None:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return
            if pid == self.pid:
                self.status = status


def parse(args: list[str]) -> tuple[int, Limits, list[str]]:
    """PARENT_PID [--name value ...] -- PROGRAM [ARG ...]"""
    parent = int(args[0])
    split = args.index("--", 1)
    options = args[1:split]
    values: dict[str, str] = dict(zip(options[::2], options[1::2], strict=True))
    limits = Limits(
        processes=int(values.pop("--processes", "0")),
        memory_mb=int(values.pop("--memory-mb", "0")),
        cpu_seconds=int(values.pop("--cpu-seconds", "0")),
        pids_cgroup=values.pop("--pids-cgroup", None),
    )
    if values:
        raise ValueError(f"unknown options {sorted(values)}")
    return parent, limits, args[split + 1 :]


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the command's group is still killed on timeout and interrupt


def _warn(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"hermes: {text}\n".encode(errors="replace"))


# ---- processes under /proc ---------------------------------------------------------------


def _proc_entries() -> list[str]:
    try:
        return [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def descendants(root: int) -> list[int]:
    """Every process below `root` (zombies too), by the parent pids in /proc/PID/stat."""
    children: dict[int, list[int]] = {}
    for name in _proc_entries():
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def tasks_of(uid: int) -> int:
    """Tasks (threads) whose real uid is `uid`: what the kernel compares with RLIMIT_NPROC."""
    count = 0
    for name in _proc_entries():
        try:
            with open(f"/proc/{name}/status", "rb") as status:
                lines = status.read().split(b"\n")
        except OSError:
            continue
        fields = {line.split(b":", 1)[0]: line.split()[1:] for line in lines if b":" in line}
        with contextlib.suppress(KeyError, IndexError, ValueError):
            if int(fields[b"Uid"][0]) == uid:
                count += int(fields[b"Threads"][0])
    return count


def end_all(call: _Call) -> None:
    """SIGKILL and reap every descendant, round after round, until none is left (or END_BOUND).

    As a subreaper the supervisor has a descendant exactly when it has a child, so "no child
    left to reap" means "no process of the call left"."""
    deadline = time.monotonic() + END_BOUND
    while call.reap():
        for pid in descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            _warn("some processes of the command could not be killed")
            return
        time.sleep(0.005)


# ---- the per-call pids cgroup ------------------------------------------------------------


def make_cgroup(base: str, processes: int) -> str | None:
    """A fresh pids cgroup `base/call-PID` allowing `processes` tasks; None (and a warning) if
    it cannot be made. Also removes the cgroups of supervisors that died without cleaning up.
    Without it a non-root command still gets RLIMIT_NPROC (see `start`)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            owner = name.removeprefix("call-")
            if name.startswith("call-") and owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(base, name))  # fails while it still holds processes
    path = os.path.join(base, f"call-{os.getpid()}")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(path)  # left by an earlier process with this pid
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as limit:
            limit.write(str(processes))
    except OSError as exc:
        instead = "RLIMIT_NPROC instead" if os.getuid() != 0 else "the process limit is not enforced"
        _warn(f"cannot set up the pids cgroup {path} ({exc.strerror or exc}); {instead}")
        remove_cgroup(path, tries=1)
        return None
    return path


def remove_cgroup(path: str, tries: int = 100) -> None:
    """Remove an emptied cgroup; the kernel may need a moment after the last task exited."""
    for attempt in range(tries):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt + 1 < tries:
                time.sleep(0.01)


# ---- starting the command ----------------------------------------------------------------


def _lower(limit: int, soft: int, hard: int | None = None) -> None:
    """Lower a resource limit to `soft` (and its hard limit to `hard`, default `soft`)."""
    _, current_hard = resource.getrlimit(limit)
    new_hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        new_hard = min(new_hard, current_hard)
    resource.setrlimit(limit, (min(soft, new_hard), new_hard))


def start(argv: list[str], limits: Limits, cgroup: str | None, mask: _Mask) -> int:
    """Fork the command with its limits; returns its pid. Runs with _STOPS blocked."""
    nproc = 0
    if limits.processes > 0 and cgroup is None and os.getuid() != 0:
        nproc = tasks_of(os.getuid()) + limits.processes
    pid = os.fork()
    if pid == 0:
        _exec(argv, limits, cgroup, nproc, mask)
    return pid


def _exec(argv: list[str], limits: Limits, cgroup: str | None, nproc: int, mask: _Mask) -> NoReturn:
    """In the forked child: default signals, the limits, then the program (exit 127 if it cannot start)."""
    try:
        # Handled signals would reset on exec anyway; ignored ones (Python ignores SIGPIPE) would not.
        for sig in (*_PASSED, *_STOPS, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if cgroup is not None:
            try:
                with open(os.path.join(cgroup, "cgroup.procs"), "w") as procs:
                    procs.write(str(os.getpid()))
            except OSError as exc:
                _warn(f"the process limit is not enforced: cannot join {cgroup} ({exc.strerror or exc})")
        if limits.memory_mb > 0:
            _lower(resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024)
        if limits.cpu_seconds > 0:
            _lower(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1)
        if nproc > 0:
            _lower(resource.RLIMIT_NPROC, nproc)
        os.execvp(argv[0], argv)
    except OSError as exc:
        _warn(f"cannot start {argv[0]}: {exc.strerror or exc}")
    finally:
        os._exit(127)


def _exit_like(status: int | None, mask: _Mask) -> int:
    """The command's exit code; or die of the signal that killed it (not for core signals)."""
    if status is None:
        return 128 + signal.SIGKILL  # never reaped (it could not be killed in time)
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    sig = signal.Signals(os.WTERMSIG(status))
    if sig not in _CORE_SIGNALS:
        for stop in _STOPS:
            signal.signal(stop, signal.SIG_IGN)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP are always default
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask - {sig})
        os.kill(os.getpid(), sig)
    return 128 + sig


def main() -> int:
    parent, limits, argv = parse(sys.argv[1:])
    parent_gone = stopping = False

    def on_signal(signum: int, frame: object) -> None:
        # Raises _Stop at most once, and only while the stops are unblocked (in the try below).
        nonlocal parent_gone, stopping
        if signum == PARENT_GONE and os.getppid() != parent:
            parent_gone = True
        elif signum != END_CALL:
            return
        if not stopping:
            stopping = True
            raise _Stop

    for sig in (*_PASSED, *_STOPS):
        signal.signal(sig, on_signal)
    # Until the command has started (and again while ending the call) the stops wait.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, int(PARENT_GONE))
    call = _Call()
    cgroup = None
    if os.getppid() != parent:
        parent_gone = True
    else:
        if limits.processes > 0 and limits.pids_cgroup:
            cgroup = make_cgroup(limits.pids_cgroup, limits.processes)
        call.pid = start(argv, limits, cgroup, mask)
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            call.wait()
            # A stop that arrived meanwhile is handled inside this call (CPython checks signals
            # when the mask changes), so _Stop can only come from within this try.
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        except _Stop:
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    end_all(call)
    if cgroup is not None:
        remove_cgroup(cgroup)
    if parent_gone:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    return _exit_like(call.status, mask)


if __name__ == "__main__":
    sys.exit(main())
