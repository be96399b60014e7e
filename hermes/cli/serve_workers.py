"""`hermes serve --workers N`: one supervising parent, N full server processes, one port.

Design (SO_REUSEPORT, not a pre-forked shared listening socket):

- The parent binds the port once, without SO_REUSEPORT first, so a port held by anyone
  else (another `hermes serve`, with or without workers) is refused with exit 75 exactly
  as in single-process mode; it then turns SO_REUSEPORT on for that socket and keeps it
  bound but never listens. That resolves `--port 0` to one port and holds it while
  workers restart. A bound socket that does not listen receives no connections.
- Each worker is a real subprocess, `python -m hermes serve --worker-channel FD`, that
  builds the whole app (agent, stores, repair) and binds the same address with
  SO_REUSEPORT (aiohttp `TCPSite(reuse_port=True)`). The kernel spreads incoming
  connections over the listening workers by a hash of each connection, so a busy worker
  does not starve the others the way a shared accept queue lets the most idle process
  win every `accept()`; and workers share no file descriptor, so one worker's crash
  cannot disturb another's socket.
- Parent and worker talk over a private socketpair (the FD), newline-delimited JSON:
  the parent sends `{"index": i, "overrides": {...}}` (the command-line flags, with the
  resolved port; they travel here rather than in argv or the environment so a `--key`
  or a database password never shows in `ps` or reaches tool processes), the worker
  answers `{"ready": true, "pid": …, "notices": [...]}` once its socket is bound. The
  parent prints the one ready line when every worker has answered.
- Lifetime: the worker watches its end of the socketpair; end-of-file means the parent
  is gone (even after `kill -9`, since the kernel closes the parent's end), and the
  worker shuts down as on SIGTERM. Workers run in their own process group, so a
  terminal's Ctrl-C reaches the parent only, which forwards SIGTERM to each worker,
  waits at most `STOP_BUDGET` seconds in all, SIGKILLs what is left and exits 0.
- A worker that exits while the parent runs is restarted after a growing delay
  (`RESTART_DELAYS`, back to the shortest once a worker stayed up `STABLE_AFTER`
  seconds), and each restart is logged on stderr. A worker that fails before the first
  ready line fails the whole start (its exit code becomes the parent's).

Workers need PostgreSQL (`database_url`): on SQLite, run events, stop and approval live
in one process's memory, so a second process could not serve another's runs, and the
SQLite files would serialise every worker's writes (`check_workers`). The parent brings
the schema up to date once before starting workers (the migration lock makes
concurrent starts safe anyway), so an unreachable database is one line, not N.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import UsageError

__all__ = [
    "MAX_WORKERS",
    "STOP_BUDGET",
    "Hello",
    "PortInUse",
    "ReservedPort",
    "WorkerLink",
    "check_workers",
    "reserve_port",
    "supervise",
]

MAX_WORKERS = 64
"""More workers than this is a typo, not a deployment (each one holds a full server)."""
STOP_BUDGET = 10.0
"""Seconds from SIGTERM/SIGINT to the parent's exit, every worker gone (SIGKILL at the end)."""
KILL_GRACE = 0.5
"""Seconds of the budget kept for SIGKILL and reaping the stragglers."""
START_TIMEOUT = 120.0
"""Seconds a worker has to report ready (building the agent may load a local model)."""
HELLO_TIMEOUT = 30.0
"""Seconds a worker waits for the parent's first message before giving up."""
RESTART_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
"""Delay before the 1st, 2nd, … consecutive restart of one worker (the last one repeats)."""
STABLE_AFTER = 60.0
"""A worker that stayed up this long counts as healthy: its next restart waits the shortest delay."""
EXIT_PORT_IN_USE = 75


def check_workers(count: int, database_url: str | None) -> None:
    """Refuse a worker count the server cannot run (UsageError → exit 2).

    Also validates `database_url` (ConfigError, exit 2, for an unsupported URL).
    """
    from hermes.store.api import caps_of
    from hermes.store.configured import backend_for

    if count < 1 or count > MAX_WORKERS:
        raise UsageError(f"--workers must be between 1 and {MAX_WORKERS} (got {count})")
    if count > 1 and not caps_of(backend_for(database_url)).multi_instance:
        raise UsageError(
            "--workers needs PostgreSQL: set database_url (--database-url or HERMES_DATABASE_URL); "
            "on SQLite a run lives in one process"
        )


# ---- the port ---------------------------------------------------------------------------


@dataclass
class ReservedPort:
    """The parent's bound, non-listening SO_REUSEPORT socket that holds the port."""

    sock: socket.socket
    port: int

    def close(self) -> None:
        self.sock.close()


class PortInUse(Exception):
    """Someone else holds the port (exit 75)."""


def reserve_port(host: str, port: int) -> ReservedPort:
    """Bind `host:port` (0: any free port) for the workers to share.

    Raises:
        PortInUse: someone else holds the port.
        OSError: the address cannot be bound for another reason.
    """
    infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            sock.bind(address)  # without SO_REUSEPORT: fails when anyone holds the port
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse() from None
            raise
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # now our workers may join
    except BaseException:
        sock.close()
        raise
    return ReservedPort(sock, int(sock.getsockname()[1]))


# ---- the worker's side of the channel -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    """The parent's first message to a worker."""

    index: int
    overrides: dict[str, Any]
    """Settings overrides (the parent's command-line flags, with the resolved port)."""


class WorkerLink:
    """A worker's end of the socketpair to its parent."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.index = -1

    @classmethod
    def from_fd(cls, fd: int) -> WorkerLink:
        try:
            sock = socket.socket(fileno=fd)
        except OSError as exc:
            raise UsageError(f"--worker-channel {fd} is not a socket ({exc.strerror or exc})") from None
        return cls(sock)

    def receive_hello(self, timeout: float = HELLO_TIMEOUT) -> Hello:
        """Read the parent's first message (UsageError when the parent sends none)."""
        self._sock.settimeout(timeout)
        data = b""
        try:
            while not data.endswith(b"\n"):
                chunk = self._sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        try:
            message = json.loads(data)
            hello = Hello(index=int(message["index"]), overrides=dict(message["overrides"]))
        except (ValueError, KeyError, TypeError):
            raise UsageError("--worker-channel is for `hermes serve --workers` only (no parent spoke)") from None
        self.index = hello.index
        return hello

    def report_ready(self, notices: list[str]) -> None:
        message = {"ready": True, "pid": os.getpid(), "notices": notices}
        self._sock.settimeout(5.0)
        with contextlib.suppress(OSError):
            self._sock.sendall(json.dumps(message).encode() + b"\n")

    def watch_parent(self, loop: asyncio.AbstractEventLoop, on_gone: Callable[[], None]) -> None:
        """Call `on_gone` once the parent's end closes (the parent exited or was killed)."""
        self._sock.setblocking(False)
        fd = self._sock.fileno()

        def readable() -> None:
            try:
                chunk = self._sock.recv(4096)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                loop.remove_reader(fd)
                on_gone()

        loop.add_reader(fd, readable)

    def close(self) -> None:
        self._sock.close()


# ---- the parent -----------------------------------------------------------------------------


@dataclass
class _Worker:
    index: int
    process: asyncio.subprocess.Process | None = None
    channel: socket.socket | None = None
    writer: asyncio.StreamWriter | None = None
    started_at: float = 0.0
    failures: int = 0
    """Consecutive unexpected exits (reset once the worker stays up STABLE_AFTER seconds)."""
    notices: list[str] = field(default_factory=list)


class _StartFailed(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class Supervisor:
    """Starts, watches, restarts and stops the worker processes (see the module docstring)."""

    def __init__(
        self,
        count: int,
        overrides: dict[str, Any],
        *,
        say: Callable[[str], None],
        command: list[str] | None = None,
    ) -> None:
        self.workers = [_Worker(i) for i in range(count)]
        self.overrides = overrides
        self.say = say
        self.command = command or [sys.executable, "-m", "hermes", "serve"]
        self._stop = asyncio.Event()
        self._keepers: list[asyncio.Task[None]] = []

    async def run(self, ready_lines: Callable[[list[str]], list[str]]) -> int:
        """Start every worker, print `ready_lines(first worker's notices)`, supervise until a
        signal, stop everything. Returns the process exit code."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop.set)
        try:
            starts = [asyncio.ensure_future(self._start(worker)) for worker in self.workers]
            stop_wait = asyncio.ensure_future(self._stop.wait())
            pending: set[asyncio.Future[Any]] = set(starts)
            while pending and not self._stop.is_set():
                done, pending = await asyncio.wait(pending | {stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(stop_wait)
                failures = [task.exception() for task in done if task is not stop_wait]
                failure = next((exc for exc in failures if exc is not None), None)
                if failure is not None:
                    for other in pending:
                        other.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    await self._shutdown()
                    if not isinstance(failure, _StartFailed):
                        raise failure
                    self.say(f"hermes serve: {failure.reason}")
                    return failure.code
            if self._stop.is_set():
                for task in starts:
                    task.cancel()
                await asyncio.gather(*starts, return_exceptions=True)
                await self._shutdown()
                return 0
            for line in ready_lines(self.workers[0].notices):
                self.say(line)
            self.say(f"hermes serve: {len(self.workers)} workers (pids {', '.join(map(str, self.pids))})")
            self._keepers = [asyncio.ensure_future(self._keep_alive(worker)) for worker in self.workers]
            await stop_wait
            await self._shutdown()
            return 0
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers if w.process is not None and w.process.returncode is None]

    async def _start(self, worker: _Worker) -> None:
        """Spawn `worker` and wait until it reports ready (raises _StartFailed)."""
        parent_end, child_end = socket.socketpair()
        try:
            process = await asyncio.create_subprocess_exec(
                *self.command,
                "--worker-channel",
                str(child_end.fileno()),
                pass_fds=(child_end.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                process_group=0,  # a terminal's Ctrl-C reaches the parent, which forwards it
            )
        except OSError as exc:
            parent_end.close()
            raise _StartFailed(1, f"cannot start worker {worker.index}: {exc.strerror or exc}") from None
        finally:
            child_end.close()
        worker.process, worker.channel, worker.started_at = process, parent_end, time.monotonic()
        hello = {"index": worker.index, "overrides": self.overrides}
        reader, writer = await asyncio.open_connection(sock=parent_end)
        worker.writer = writer  # kept open for the worker's life: closing it tells the worker to stop
        writer.write(json.dumps(hello).encode() + b"\n")
        await writer.drain()
        exited = asyncio.ensure_future(process.wait())
        answered = asyncio.ensure_future(reader.readline())
        try:
            await asyncio.wait({exited, answered}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            if not answered.done():
                answered.cancel()
        line = answered.result() if not answered.cancelled() and answered.exception() is None else b""
        try:
            message = json.loads(line) if line else {}
        except ValueError:
            message = {}
        if not message.get("ready"):
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
                raise _StartFailed(1, f"worker {worker.index} did not start within {START_TIMEOUT:g} s")
            code = process.returncode
            raise _StartFailed(code if code > 0 else 1, f"worker {worker.index} exited with code {code} while starting")
        worker.notices = [str(n) for n in message.get("notices", [])]

    async def _keep_alive(self, worker: _Worker) -> None:
        """Restart `worker` whenever it exits, until the parent stops."""
        while not self._stop.is_set():
            assert worker.process is not None
            code = await worker.process.wait()
            if self._stop.is_set():
                return
            self._close_channel(worker)
            if time.monotonic() - worker.started_at >= STABLE_AFTER:
                worker.failures = 0
            delay = RESTART_DELAYS[min(worker.failures, len(RESTART_DELAYS) - 1)]
            worker.failures += 1
            self.say(
                f"hermes serve: worker {worker.index} (pid {worker.process.pid}) exited with code {code}; "
                f"restarting it in {delay:g} s"
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            if self._stop.is_set():
                return
            try:
                await self._start(worker)
            except _StartFailed as exc:
                self.say(f"hermes serve: {exc.reason}")
                continue  # its process has exited: the loop waits on it and backs off again
            self.say(f"hermes serve: worker {worker.index} restarted (pid {worker.process.pid})")

    async def _shutdown(self) -> None:
        """SIGTERM every worker, wait within STOP_BUDGET, SIGKILL the rest, reap them all."""
        deadline = time.monotonic() + STOP_BUDGET - KILL_GRACE
        for task in self._keepers:
            task.cancel()
        await asyncio.gather(*self._keepers, return_exceptions=True)
        running = [w.process for w in self.workers if w.process is not None and w.process.returncode is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        if running:
            waits = [asyncio.ensure_future(process.wait()) for process in running]
            await asyncio.wait(waits, timeout=max(deadline - time.monotonic(), 0.0))
            for process in running:
                if process.returncode is None:
                    self.say(f"hermes serve: worker pid {process.pid} did not stop in time; killing it")
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
            await asyncio.wait(waits, timeout=KILL_GRACE)
        for worker in self.workers:
            self._close_channel(worker)

    @staticmethod
    def _close_channel(worker: _Worker) -> None:
        if worker.writer is not None:
            worker.writer.close()
            worker.writer = None
        if worker.channel is not None:
            worker.channel.close()
            worker.channel = None


def supervise(
    count: int,
    overrides: dict[str, Any],
    *,
    say: Callable[[str], None],
    ready_lines: Callable[[list[str]], list[str]],
) -> int:
    """Run `count` workers until SIGTERM/SIGINT; returns the exit code (0 after a signal)."""
    supervisor = Supervisor(count, overrides, say=say)
    return asyncio.run(supervisor.run(ready_lines))
