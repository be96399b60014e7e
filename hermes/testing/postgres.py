"""A throwaway PostgreSQL server for the tests and benchmarks, started from the installed binaries.

`PostgresServer.start()` runs `initdb` and `pg_ctl` (as the `postgres` user when the
tests run as root, since PostgreSQL refuses root) in a private temporary folder, on a
free loopback port, with trust authentication for 127.0.0.1 only, durability off unless
`durable=True` (a test database is disposable; a benchmark wants the real commit cost),
and returns once the server accepts connections.
`stop()` shuts it down and removes the folder.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SEARCH_BINDIRS = ("/usr/lib/postgresql/15/bin", *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True))
START_TIMEOUT = 60


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


@dataclass
class PostgresServer:
    bindir: Path
    root: Path
    port: int = 0

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

    @classmethod
    def start(cls, bindir: Path, *, durable: bool = False) -> PostgresServer:
        root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
        server = cls(bindir=bindir, root=root)
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
                options = (
                    f"-c listen_addresses=127.0.0.1 -p {server.port} -c unix_socket_directories={root} "
                    "-c max_connections=200"
                )
                if not durable:
                    options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                done = server._run(
                    "pg_ctl", "-D", str(server.data), "-l", str(root / "server.log"), "-o", options,
                    "-w", "-t", str(START_TIMEOUT), "start",
                )  # fmt: skip
                if done.returncode == 0:
                    return server
                last_error = done.stderr.strip() or done.stdout.strip()
                with contextlib.suppress(OSError):
                    last_error += " | " + (root / "server.log").read_text(encoding="utf-8")[-500:]
            raise RuntimeError(f"pg_ctl start failed: {last_error}")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop", timeout=40)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
