"""Real `hermes serve` processes on one PostgreSQL database, and the clients that drive them.

`ServeProcess` is one `hermes serve … --database-url URL` subprocess (its own HERMES_HOME,
the model a `ScriptedUpstream` on loopback in the test process, `API_SERVER_KEY` set); its
stderr lines are collected by a thread, so the pipe never fills and a failing test can
show them. `Node` is the HTTP side of one server: every request goes over a fresh
connection (with `--workers N` each one may land on another worker).

`Sleepers` finds the terminal tool's `sleep` process in /proc by an argument unique to
the test, and kills whatever is left of them in teardown.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from hermes.testing.upstream import ScriptedUpstream

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "
SERVER_KEY = "sk-scale-test-key"
START_TIMEOUT = 90.0
"""Start-up of a server process on a loaded 2-core machine (imports, migration check, bind)."""
STOP_TIMEOUT = 20.0
"""A SIGTERMed server gets this long to exit before it is killed."""
REQUEST_TIMEOUT = 30.0


def serve_env(home: Path, upstream: ScriptedUpstream, **extra: str) -> dict[str, str]:
    """The environment of one server: nothing inherited from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        HERMES_PROVIDER="openai",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_API_KEY="test-upstream-key",
        HERMES_SANDBOX="off",
        HERMES_STREAM_RETRIES="0",
        API_SERVER_KEY=SERVER_KEY,
    )
    env.update(extra)
    return env


class ServeProcess:
    """One `hermes serve` process (or the supervising parent of `--workers N`)."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        """Every stderr line read so far (by `next_line`, or drained by `output`)."""
        self._pump_thread = threading.Thread(target=self._pump, name=f"stderr-{name}", daemon=True)
        self._pump_thread.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    async def next_line(self, timeout: float = START_TIMEOUT) -> str | None:
        """The next stderr line; None once the process closed its stderr."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{self.name}: no stderr line within {timeout} s: {self.output()}") from None
                await asyncio.sleep(0.05)
                continue
            if line is not None:
                self.seen.append(line)
            return line

    async def wait_for_line(self, prefix: str, timeout: float = START_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = await self.next_line(max(deadline - time.monotonic(), 0.01))
            assert line is not None, f"{self.name}: exited ({self.proc.poll()}) before {prefix!r}: {self.seen}"
            if line.startswith(prefix):
                return line

    async def ready(self) -> str:
        """Wait for the ready line; the server's base URL."""
        line = await self.wait_for_line(READY_PREFIX)
        return line[len(READY_PREFIX) :].strip()

    def output(self) -> str:
        """Every stderr line so far, for failure messages."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.seen.append(line)
        return "\n".join(self.seen[-60:])

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL if it does not exit in time; always reaps the process.

        Returns the exit code the SIGTERM led to (None when the process had exited before).
        """
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(timeout=STOP_TIMEOUT)
        self._pump_thread.join(timeout=STOP_TIMEOUT)
        return code


@dataclass(frozen=True)
class Frame:
    """One SSE frame of a run's event stream."""

    id: int | None
    data: dict[str, Any]

    @property
    def event(self) -> str:
        return str(self.data["event"])


@dataclass
class Node:
    """The HTTP side of one server (or of the shared port of `--workers N`)."""

    name: str
    base: str
    process: ServeProcess
    worker_pids: list[int] = field(default_factory=list)
    """With `--workers N`: the workers' pids (the parent's ready report)."""

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {SERVER_KEY}"}

    def session(self) -> aiohttp.ClientSession:
        """A client whose every request uses a new connection (no keep-alive)."""
        return aiohttp.ClientSession(
            self.base,
            headers=self.headers,
            connector=aiohttp.TCPConnector(force_close=True),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=REQUEST_TIMEOUT),
        )

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any, dict[str, str]]:
        """One request over a fresh connection: (status, JSON body, headers)."""
        async with self.session() as client:
            async with client.request(
                method, path, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT), **kwargs
            ) as resp:
                text = await resp.text()
                body = json.loads(text) if text else None
                return resp.status, body, dict(resp.headers)

    async def run_status(self, run_id: str) -> dict[str, Any]:
        status, body, _ = await self.call("GET", f"/v1/runs/{run_id}")
        assert status == 200, (self.name, status, body)
        assert isinstance(body, dict)
        return body

    async def start_run(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
        status, data, _ = await self.call("POST", "/v1/runs", json=body, headers=headers or {})
        assert status == 202, (self.name, status, data)
        return str(data["run_id"])

    async def events(
        self,
        run_id: str,
        *,
        headers: dict[str, str] | None = None,
        query: str = "",
        until: Callable[[Frame], bool] | None = None,
        timeout: float = 60.0,
    ) -> list[Frame]:
        """Read `/v1/runs/{id}/events` over a fresh connection until the stream ends, or
        until `until(frame)` is true (then the connection is dropped)."""
        async with self.session() as client:
            async with client.get(f"/v1/runs/{run_id}/events{query}", headers=headers or {}) as resp:
                assert resp.status == 200, (self.name, resp.status, await resp.text())
                return await asyncio.wait_for(read_frames(resp, until=until), timeout)


Serve = Callable[..., Awaitable[list[Node]]]
"""The `serve` fixture: `await serve("a", "b", lease_ttl=3, workers=1)` → one Node per name."""


def parse_block(block: str) -> Frame | None:
    fid, data = None, []
    for line in block.splitlines():
        if line.startswith("id: "):
            fid = int(line[4:])
        elif line.startswith("data: "):
            data.append(line[6:])
    return Frame(fid, json.loads("\n".join(data))) if data else None


async def read_frames(resp: aiohttp.ClientResponse, *, until: Callable[[Frame], bool] | None = None) -> list[Frame]:
    frames: list[Frame] = []
    buffer = ""
    async for chunk in resp.content.iter_any():
        buffer += chunk.decode()
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            frame = parse_block(block)
            if frame is None:
                continue
            frames.append(frame)
            if until is not None and until(frame):
                return frames
    return frames


async def wait_until(
    condition: Callable[[], Awaitable[Any] | Any], *, timeout: float, what: Callable[[], Any] | str = ""
) -> Any:
    """Poll `condition` (sync or async) until it is truthy; fail with `what` after `timeout` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"not within {timeout} s: {detail}")
        await asyncio.sleep(0.05)


class Sleepers:
    """The terminal tool's `sleep SECONDS` processes of one test, found by a unique argument."""

    def __init__(self, seconds: int) -> None:
        self.argument = f"{seconds}.{uuid.uuid4().int % 10**9:09d}"
        self.command = f"sleep {self.argument}"

    def pids(self) -> list[int]:
        wanted = b"sleep\0" + self.argument.encode() + b"\0"
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if (entry / "cmdline").read_bytes() != wanted:
                    continue
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                found.append(int(entry.name))
        return found

    def kill_all(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
