"""A throwaway PostgreSQL server for the tests and benchmarks, started from the installed binaries.

`PostgresServer.start()` runs `initdb` and `pg_ctl` (as the `postgres` user when the
tests run as root, since PostgreSQL refuses root) in a private temporary folder, on a
free loopback port, with trust authentication for 127.0.0.1 only, durability off unless
`durable=True` (a test database is disposable; a benchmark wants the real commit cost),
and returns once the server accepts connections.
`stop()` shuts it down and removes the folder.

`crash()` kills the postmaster and every process it started with SIGKILL, as a crash of
the database server would (the operating system's page cache survives it: what
PostgreSQL wrote survives, what sat only in its own WAL buffers does not), and returns
once they are all gone; `restart()` starts it again on the same data directory and port
(crash recovery replays the WAL) with the same settings.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SEARCH_BINDIRS = ("/usr/lib/postgresql/15/bin", *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True))
START_TIMEOUT = 60
CRASH_TIMEOUT = 30
"""Seconds for the killed server's processes to be gone (reaped: init may take a second)."""


def find_bindir() -> Path | None:
    """The folder holding initdb and pg_ctl: HERMES_TEST_PG_BIN when set (and only it),
    else Debian's PostgreSQL folders, then PATH."""
    override = os.environ.get("HERMES_TEST_PG_BIN")
    candidates = [override] if override is not None else list(SEARCH_BINDIRS)
    on_path = shutil.which("pg_ctl")
    if on_path and override is None:
        candidates.append(str(Path(on_path).parent))
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _exists(pid: int) -> bool:
    """Whether `pid` is a process, a zombie not yet reaped included: PostgreSQL takes the
    pid in a lock file for a live server as long as `kill(pid, 0)` succeeds."""
    return Path(f"/proc/{pid}").exists()


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


@dataclass
class PostgresServer:
    bindir: Path
    root: Path
    port: int = 0
    durable: bool = False
    """PostgreSQL's own defaults (fsync, synchronous_commit, full_page_writes on); else all
    three off, for speed."""

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, cwd=self.root)

    def _pg_ctl_start(self) -> subprocess.CompletedProcess[str]:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root} "
            "-c max_connections=200"
        )
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        return self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
            "-w", "-t", str(START_TIMEOUT), "start",
        )  # fmt: skip

    def _failure(self, done: subprocess.CompletedProcess[str]) -> str:
        error = done.stderr.strip() or done.stdout.strip()
        with contextlib.suppress(OSError):
            error += " | " + (self.root / "server.log").read_text(encoding="utf-8")[-500:]
        return error

    @classmethod
    def start(cls, bindir: Path, *, durable: bool = False) -> PostgresServer:
        root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
        server = cls(bindir=bindir, root=root, durable=durable)
        try:
            if os.geteuid() == 0:
                account = pwd.getpwnam("postgres")
                os.chown(root, account.pw_uid, account.pw_gid)
            done = server._run(
                "initdb", "-D", str(server.data), "-U", "postgres", "--auth=trust",
                "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync",
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
            (server.data / "pg_hba.conf").write_text(
                "local all all trust\nhost all all 127.0.0.1/32 trust\n", encoding="utf-8"
            )
            last_error = ""
            for _ in range(5):
                server.port = _free_port()
                done = server._pg_ctl_start()
                if done.returncode == 0:
                    return server
                last_error = server._failure(done)
            raise RuntimeError(f"pg_ctl start failed: {last_error}")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def crash(self) -> None:
        """SIGKILL the postmaster and all its processes; returns once every one is gone and reaped."""
        postmaster = int((self.data / "postmaster.pid").read_text(encoding="utf-8").split("\n", 1)[0])
        family = [postmaster, *_children(postmaster)]
        # pg_ctl starts the postmaster in a session of its own: one killpg reaches the
        # whole server at once, so no process of it outlives another by a scheduling slice.
        with contextlib.suppress(OSError):
            if os.getpgid(postmaster) == postmaster:
                os.killpg(postmaster, signal.SIGKILL)
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + CRASH_TIMEOUT
        while any(_exists(pid) for pid in family):  # the orphaned postmaster is reaped by init
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL processes still alive {CRASH_TIMEOUT} s after SIGKILL: {family}")
            time.sleep(0.02)

    def restart(self) -> None:
        """Start again on the same data directory, port and settings, after `crash()`."""
        done = self._pg_ctl_start()
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl restart failed: {self._failure(done)}")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop", timeout=40)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
