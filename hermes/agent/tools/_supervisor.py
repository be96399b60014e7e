"""Supervisor of one tool command: makes the command's process group die with hermes.

Run as a script, never imported by hermes (stdlib only, started with `python -I -S`):

    python -I -S _supervisor.py PARENT_PID PROGRAM [ARG ...]

Invariants:
- it is started as a session leader by hermes (PARENT_PID), so its process group holds the
  command and every process the command starts without leaving the group;
- it asks the kernel (prctl PR_SET_PDEATHSIG) for PARENT_GONE when hermes dies, even by
  SIGKILL, and then SIGKILLs its whole process group (itself included); if hermes died
  before the request took effect, it notices (getppid changed) and does the same;
- otherwise it is transparent: the command gets default signal dispositions, and the
  supervisor exits with the command's exit code, or dies of the signal that killed it;
- SIGTERM/SIGINT/SIGHUP sent to the group reach the command directly; the supervisor
  itself waits for the command instead of dying first.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_GONE = signal.SIGUSR1
_CORE_SIGNALS = {
    signal.SIGQUIT, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS,
    signal.SIGFPE, signal.SIGSEGV, signal.SIGSYS, signal.SIGXCPU, signal.SIGXFSZ,
}  # fmt: skip
"""Signals re-raised as an exit code 128+N instead (no core file of the supervisor)."""


def _kill_group() -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main() -> int:
    parent = int(sys.argv[1])
    argv = sys.argv[2:]

    def on_signal(signum: int, frame: object) -> None:
        if signum == PARENT_GONE and os.getppid() != parent:
            _kill_group()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, PARENT_GONE):
        signal.signal(sig, on_signal)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(PARENT_GONE), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the command is still killed with its group on timeout and interrupt
    if os.getppid() != parent:
        _kill_group()

    try:
        # Handled signals reset to default on exec; ignored ones (Python ignores SIGPIPE) do not.
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as exc:
        sys.stderr.write(f"hermes: cannot start {argv[0]}: {exc.strerror or exc}\n")
        return 127
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status))
        if sig not in _CORE_SIGNALS:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # SIGKILL and SIGSTOP are always default
            os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
