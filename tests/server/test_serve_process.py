"""The real `hermes serve` process: ready line, refusals, port in use, signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from state_db import stored_run

from hermes.testing.upstream import ScriptedUpstream, text_reply

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread() as server:
        yield server


def _env(home: Path, upstream: ScriptedUpstream | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["HERMES_SANDBOX"] = "off"  # not about the sandbox: runs where bwrap cannot (serve would refuse auto)
    if upstream is not None:
        env.update(HERMES_PROVIDER="openai", HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model",
                   HERMES_API_KEY="test")
    env.update(extra)
    return env


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ready(proc: subprocess.Popen[str]) -> str:
    """Wait for the ready line; returns the base URL."""
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith(READY_PREFIX), line + (proc.stderr.read() if proc.poll() is not None else "")
    return line[len(READY_PREFIX):].strip()


def _request(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _stop(proc: subprocess.Popen[str], signum: int = signal.SIGTERM) -> tuple[int, str]:
    """Signal the server and wait for it to exit; a server that ignores the signal fails the
    test (TimeoutExpired) after a generous wait, and is killed."""
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


def test_ready_line_health_and_sigterm_exit_0(tmp_path, upstream):
    proc = _spawn(["--port", "0"], _env(tmp_path / "home", upstream))
    try:
        base = _ready(proc)
        assert base.startswith("http://127.0.0.1:")
        status, body = _request(base + "/health")
        assert status == 200 and body["status"] == "ok"
    finally:
        code, err = _stop(proc)
    assert code == 0, err


def test_sigint_also_exits_0(tmp_path, upstream):
    proc = _spawn(["--port", "0", "--model-name", "my-agent"], _env(tmp_path / "home", upstream))
    try:
        base = _ready(proc)
        status, body = _request(base + "/v1/models")
        assert status == 200
        assert body["data"][0]["id"] == "my-agent"
    finally:
        code, err = _stop(proc, signal.SIGINT)
    assert code == 0, err


def test_non_loopback_host_without_key_is_refused(tmp_path):
    for args, extra in ((["--host", "0.0.0.0"], {}), ([], {"API_SERVER_HOST": "192.0.2.1"})):
        proc = _spawn(args, _env(tmp_path / "home", **extra))
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2, err
        assert len(err.strip().splitlines()) == 1, err
        assert "without an API key" in err
        assert out == ""


def test_port_in_use_exits_75(tmp_path, upstream):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _spawn(["--port", str(port)], _env(tmp_path / "home", upstream))
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 75, err
    assert err.strip().splitlines() == [f"hermes serve: port {port} on 127.0.0.1 is already in use"]


def test_sigterm_interrupts_in_flight_run_and_marks_it(tmp_path, upstream):
    upstream.enqueue(text_reply("this answer never ends").stall_after(1))
    home = tmp_path / "home"
    proc = _spawn(["--port", "0", "--key", "sk-serve-test-key"], _env(home, upstream))
    try:
        base = _ready(proc)
        auth = {"Authorization": "Bearer sk-serve-test-key", "Content-Type": "application/json"}
        req = urllib.request.Request(base + "/v1/runs", data=json.dumps({"input": "go"}).encode(), headers=auth)
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 202
            run_id = json.loads(resp.read())["run_id"]
        deadline = time.monotonic() + 10
        while True:
            check = urllib.request.Request(base + f"/v1/runs/{run_id}", headers=auth)
            with urllib.request.urlopen(check, timeout=10) as resp:
                if json.loads(resp.read())["status"] == "running" and upstream.requests:
                    break
            assert time.monotonic() < deadline, "run never started"
            time.sleep(0.05)
    finally:
        code, err = _stop(proc)
    assert code == 0, err
    record = stored_run(home, run_id)
    assert record is not None and record.status == "interrupted"
