"""Fixtures for the scale tests: real `hermes serve` processes sharing one PostgreSQL database.

    async def test_x(serve, upstream, sleepers):
        a, b = await serve("a", "b")                     # two single-process instances
        shared = (await serve("pool", workers=2))[0]     # `--workers 2` behind one port

Every process is stopped in teardown (SIGTERM, then SIGKILL), also when the test failed,
and every `sleep` the test's terminal tool started is killed; a server that does not exit
0 on that SIGTERM, or that printed a traceback, is an error of the test. The database is `pg_url`
(tests/pg_fixtures.py): the tests skip with the reason where PostgreSQL is missing and
fail under CI=true.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from _serve_procs import Node, Serve, ServeProcess, Sleepers, serve_env

from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    """The model, on its own loop in a thread: it answers while the test's loop waits."""
    with ScriptedUpstream.in_thread() as server:
        yield server


@pytest.fixture
def sleepers() -> Iterator[Sleepers]:
    """A `sleep` command unique to this test (long enough to outlive any wait in it)."""
    found = Sleepers(seconds=300)
    yield found
    found.kill_all()


@pytest.fixture
def serve(pg_url: str, upstream: ScriptedUpstream, tmp_path: Path) -> Iterator[Serve]:
    processes: list[ServeProcess] = []
    worker_pids: list[int] = []

    async def start(*names: str, lease_ttl: float | None = None, workers: int = 1) -> list[Node]:
        """Start one server per name (all at once), wait for every ready line."""
        extra = {"HERMES_INSTANCE_LEASE_TTL": str(lease_ttl)} if lease_ttl is not None else {}
        args = ["--port", "0", "--database-url", pg_url]
        if workers > 1:
            args += ["--workers", str(workers)]
        started = []
        for name in names:
            home = tmp_path / name
            home.mkdir()
            process = ServeProcess(name, args, serve_env(home / "hermes", upstream, **extra), cwd=home)
            processes.append(process)
            started.append(process)
        nodes = []
        for process in started:
            base = await process.ready()
            pids = []
            if workers > 1:
                line = await process.wait_for_line(f"hermes serve: {workers} workers (pids ")
                pids = [int(p) for p in line.split("(pids ", 1)[1].rstrip(")").split(", ")]
                worker_pids.extend(pids)
            nodes.append(Node(process.name, base, process, pids))
        return nodes

    yield start
    unclean = []
    for process in processes:
        code = process.stop()
        if code not in (None, 0) or "Traceback" in process.output():
            unclean.append(f"{process.name} (exit {code}):\n{process.output()}")
    for pid in worker_pids:  # a worker whose parent had to be killed exits by itself, soon
        if _is_worker(pid):
            os.kill(pid, signal.SIGKILL)
    assert not unclean, "a server did not shut down cleanly on SIGTERM:\n" + "\n".join(unclean)


def _is_worker(pid: int) -> bool:
    """Whether `pid` is still a live `hermes serve` worker (not a recycled pid)."""
    try:
        return b"--worker-channel" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
