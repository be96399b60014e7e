"""`hermes serve --workers N` as a real process tree: refusals, one port, restarts, stopping.

The PostgreSQL cases use the `pg_url` fixture (tests/pg_fixtures.py): they skip with the
reason where PostgreSQL is missing, and fail under CI.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "
WAIT = 60.0
"""Generous bound for conditions on a loaded machine (start-up of every worker, etc.)."""


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def _env(home: Path, upstream: ScriptedUpstream | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if upstream is not None:
        env.update(
            HERMES_PROVIDER="openai", HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model",
            HERMES_API_KEY="test", HERMES_SANDBOX="off",
        )  # fmt: skip
    env.update(extra)
    return env


class Serve:
    """A `hermes serve` process whose stderr lines are collected by a thread."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_line(self, timeout: float = WAIT) -> str | None:
        """The next stderr line (None at end of output)."""
        line = self.lines.get(timeout=timeout)
        if line is not None:
            self.seen.append(line)
        return line

    def wait_for(self, prefix: str, timeout: float = WAIT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = self.next_line(max(deadline - time.monotonic(), 0.01))
            assert line is not None, f"no {prefix!r} line before exit: {self.seen}"
            if line.startswith(prefix):
                return line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        self._pump_thread.join(timeout=WAIT)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_until(condition: object, timeout: float = WAIT) -> bool:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


def _health_pid(base: str) -> int:
    """GET /health/detailed over a fresh connection; the answering worker's pid."""
    request = urllib.request.Request(base + "/health/detailed", headers={"Connection": "close"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read())["pid"])


def _start_workers(
    tmp_path: Path, upstream: ScriptedUpstream, url: str, count: int = 2
) -> tuple[Serve, str, list[int]]:
    serve = Serve(
        ["--workers", str(count), "--port", "0", "--database-url", url], _env(tmp_path / "home", upstream), tmp_path
    )
    ready = serve.wait_for(READY_PREFIX)
    assert all(line.startswith("hermes serve: project instructions: ") for line in serve.seen[:-1]), serve.seen
    pids_line = serve.next_line()
    assert pids_line is not None and pids_line.startswith(f"hermes serve: {count} workers (pids "), serve.seen
    pids = [int(p) for p in pids_line.split("(pids ", 1)[1].rstrip(")").split(", ")]
    assert len(set(pids)) == count and serve.proc.pid not in pids
    return serve, ready[len(READY_PREFIX) :], pids


# ---- refusals -------------------------------------------------------------------------------


def test_workers_on_sqlite_exit_2_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hermes", "serve", "--workers", "2", "--port", "0"],
        env=_env(tmp_path / "home", HERMES_BASE_URL="http://127.0.0.1:9/v1", HERMES_MODEL="m"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--workers needs PostgreSQL" in done.stderr
    assert "database_url" in done.stderr


@pytest.mark.parametrize("count", ["0", "-3", "100000"])
def test_absurd_worker_counts_exit_2(tmp_path: Path, count: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hermes", "serve", "--workers", count],
        env=_env(tmp_path / "home", HERMES_DATABASE_URL="postgresql://u@127.0.0.1:1/x"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"hermes serve: --workers must be between 1 and 64 (got {count})\n"


def test_worker_channel_without_a_parent_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hermes", "serve", "--worker-channel", "0"],
        env=_env(tmp_path / "home"),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--worker-channel" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.usefixtures("pg_driver")  # the driver is what reports an unreachable server
def test_unreachable_database_is_one_masked_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hermes",
            "serve",
            "--workers",
            "2",
            "--database-url",
            "postgresql://u:pw-secret@127.0.0.1:1/x",
        ],
        env=_env(tmp_path / "home", HERMES_BASE_URL="http://127.0.0.1:9/v1", HERMES_MODEL="m"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "pw-secret" not in done.stderr and "u:****@" in done.stderr


def test_port_in_use_exits_75(tmp_path: Path, upstream: ScriptedUpstream, pg_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "hermes", "serve", "--workers", "2", "--port", str(port), "--database-url", pg_url],
            env=_env(tmp_path / "home", upstream),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
    assert done.returncode == 75, done.stderr
    assert done.stderr.splitlines() == [f"hermes serve: port {port} on 127.0.0.1 is already in use"]


# ---- running ----------------------------------------------------------------------------------


def test_two_workers_share_the_port_restart_and_stop_on_sigterm(
    tmp_path: Path, upstream: ScriptedUpstream, pg_url: str
) -> None:
    url = pg_url.replace("postgres@", "postgres:pw-secret@")  # trust auth ignores the password
    serve, base, pids = _start_workers(tmp_path, upstream, url)
    try:
        answered: set[int] = set()
        assert _wait_until(lambda: answered.add(_health_pid(base)) or answered == set(pids)), (answered, pids)

        # a worker that dies is restarted, and the new one serves on the same port
        os.kill(pids[0], signal.SIGKILL)
        restarted = serve.wait_for("hermes serve: worker 0 restarted (pid ")
        new_pid = int(restarted.rsplit("(pid ", 1)[1].rstrip(")"))
        assert new_pid not in pids
        answered.clear()
        assert _wait_until(lambda: answered.add(_health_pid(base)) or new_pid in answered), (answered, new_pid)
        everyone = [new_pid, pids[1]]

        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(timeout=10) == 0, serve.seen  # the supervisor's budget is 10 s
        assert [pid for pid in everyone if _alive(pid)] == []
        while serve.next_line() is not None:
            pass
        assert not any("pw-secret" in line for line in serve.seen), serve.seen
        assert not any("Traceback" in line for line in serve.seen), serve.seen
    finally:
        serve.stop()


def test_workers_exit_by_themselves_when_the_parent_is_killed(
    tmp_path: Path, upstream: ScriptedUpstream, pg_url: str
) -> None:
    serve, _base, pids = _start_workers(tmp_path, upstream, pg_url)
    try:
        serve.proc.kill()
        serve.proc.wait(timeout=WAIT)
        assert _wait_until(lambda: not any(_alive(pid) for pid in pids)), [p for p in pids if _alive(p)]
    finally:
        for pid in pids:  # never leave a worker behind, even when the assertion failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        serve.stop()


def test_one_process_on_postgresql_with_project_instructions(
    tmp_path: Path, upstream: ScriptedUpstream, pg_url: str
) -> None:
    """`--database-url` alone: one process (the agent is built in the app's start-up);
    AGENTS.md is reported before the ready line, as on SQLite. With workers the parent
    reports the first worker's."""
    (tmp_path / "AGENTS.md").write_text("Answer briefly.\n")
    single = Serve(["--port", "0", "--database-url", pg_url], _env(tmp_path / "home", upstream), tmp_path)
    try:
        first = single.next_line()
        assert first is not None and first.startswith("hermes serve: project instructions: "), single.seen
        ready = single.wait_for(READY_PREFIX)
        assert _health_pid(ready[len(READY_PREFIX) :]) == single.proc.pid
        single.proc.send_signal(signal.SIGTERM)
        assert single.proc.wait(timeout=WAIT) == 0, single.seen
    finally:
        single.stop()

    parent, _base, _pids = _start_workers(tmp_path, upstream, pg_url)
    try:
        assert parent.seen[0].startswith("hermes serve: project instructions: "), parent.seen
        parent.proc.send_signal(signal.SIGTERM)
        assert parent.proc.wait(timeout=WAIT) == 0, parent.seen
    finally:
        parent.stop()


def _chat(base: str, key: str) -> tuple[int, dict[str, object], str | None]:
    """POST a non-streamed chat completion over a fresh connection."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(
        base + "/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Idempotency-Key": key, "Connection": "close"},
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return response.status, json.loads(response.read()), response.headers.get("X-Hermes-Session-Id")


def test_a_retried_chat_completion_on_another_worker_runs_once(
    tmp_path: Path, upstream: ScriptedUpstream, pg_url: str
) -> None:
    """The worker that answered is gone (every worker is killed and restarted), so the
    retry lands on another process: it gets the same answer, and the model is asked once."""
    from hermes.testing.upstream import text_reply

    serve, base, pids = _start_workers(tmp_path, upstream, pg_url)
    everyone = list(pids)
    try:
        upstream.enqueue(text_reply("answered once"), text_reply("asked twice"))
        first = _chat(base, "worker-key-1")
        assert first[0] == 200 and first[2] is not None
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        restarted: set[str] = set()
        while len(restarted) < len(pids):
            line = serve.wait_for("hermes serve: worker ")
            if " restarted (pid " in line:
                restarted.add(line.split()[3])
        new_pids = {int(line.rsplit("(pid ", 1)[1].rstrip(")")) for line in serve.seen if " restarted (pid " in line}
        everyone.extend(new_pids)
        answered: set[int] = set()
        assert _wait_until(lambda: answered.add(_health_pid(base)) or answered == new_pids), (answered, new_pids)

        retried = _chat(base, "worker-key-1")
        assert retried == first  # status, body (same id) and session header
        assert first[1]["choices"][0]["message"]["content"] == "answered once"  # type: ignore[index]
        assert len(upstream.requests) == 1
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(timeout=WAIT) == 0, serve.seen
    finally:
        for pid in everyone:  # never leave a worker behind, even when an assertion failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        serve.stop()
