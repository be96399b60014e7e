"""A real `hermes serve` subprocess and a streaming client for the kill -9 tests."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes.testing.upstream import ScriptedUpstream

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "


def serve_env(home: Path, upstream: ScriptedUpstream) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        HERMES_PROVIDER="openai",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_API_KEY="test",
        HERMES_SANDBOX="off",
    )
    return env


class Serve:
    """`hermes serve --port 0` on `home`; its stderr is drained into `log`."""

    def __init__(self, home: Path, upstream: ScriptedUpstream, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", "--port", "0"],
            env=serve_env(home, upstream),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if not line.startswith(READY_PREFIX):
            self.proc.kill()
            rest = self.proc.stderr.read()
            raise AssertionError(f"hermes serve did not start: {line}{rest}")
        self.base = line[len(READY_PREFIX) :].strip()
        self.log: list[str] = []
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def close(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and close its pipe."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._drainer.join(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


@dataclass
class StreamRecorder:
    """POST a streaming request in a thread; record each SSE event with its arrival time."""

    base: str
    path: str
    body: dict[str, Any]
    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    ended: threading.Event = field(default_factory=threading.Event)

    def start(self) -> StreamRecorder:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        url = urlsplit(self.base)
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
        try:
            conn.request("POST", self.path, json.dumps(self.body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            self.headers = dict(resp.getheaders())
            for raw in resp:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith("data: ") and line != "data: [DONE]":
                    self.events.append((time.monotonic(), json.loads(line[6:])))
        except (OSError, http.client.HTTPException, ValueError):
            pass  # the server was killed mid-stream: expected
        finally:
            conn.close()
            self.ended.set()

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [event for _, event in list(self.events) if event.get("type") == kind]

    def text_before(self, moment: float) -> str:
        """The output text deltas that had arrived by `moment` (time.monotonic())."""
        return "".join(
            event["delta"]
            for at, event in list(self.events)
            if at <= moment and event.get("type") == "response.output_text.delta"
        )


def pids_with(marker: str) -> list[int]:
    """Processes whose command line contains `marker`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found
