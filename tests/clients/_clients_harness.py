"""Harness for the real-client tests: one real `hermes serve` subprocess per test module,
pointed at a `ScriptedUpstream` running in a thread, driven by unmodified client libraries.
The fixtures (`hermes_serve`) live in conftest.py.

    def test_x(hermes_serve):
        hermes_serve.script(text_reply("Hello!"))          # queue upstream replies
        client = OpenAI(base_url=hermes_serve.base_url, api_key=hermes_serve.key)
        ...

The server runs with a bearer key, in its own working directory (tools run there), with
`--yolo` off. Each test starts from an empty upstream queue; `script` asserts the previous
test left nothing unplayed. `TOOL_COMMAND` / `TOOL_OUTPUT` / `tool_turn_script` give the
standard server-run tool turn: the model calls `terminal` with `echo hi`, hermes runs it,
then the model answers with `TOOL_ANSWER`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hermes.testing.upstream import (
    Reply,
    ScriptedUpstream,
    call,
    text_reply,
    tool_reply,
)

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "
SERVER_KEY = "sk-clients-test-key"
MODEL_NAME = "hermes-agent"
START_TIMEOUT = 30.0

TOOL_COMMAND = "echo hi-from-hermes"
TOOL_OUTPUT = "hi-from-hermes"
TOOL_PREAMBLE = "Let me run that."
TOOL_ANSWER = "The command printed hi-from-hermes."


def tool_turn_script() -> list[Reply]:
    """Upstream replies for one server-run tool turn: call `terminal`, then answer."""
    return [
        tool_reply([call("terminal", {"command": TOOL_COMMAND})], text=TOOL_PREAMBLE),
        text_reply(TOOL_ANSWER),
    ]


@dataclass
class HermesServe:
    """A running `hermes serve` and the upstream it talks to."""

    proc: subprocess.Popen[str]
    root: str
    """http://127.0.0.1:PORT"""
    upstream: ScriptedUpstream
    workdir: Path
    key: str = SERVER_KEY
    model: str = MODEL_NAME

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    def script(self, *replies: Reply) -> None:
        self.upstream.enqueue(*replies)

    def upstream_tool_results(self) -> list[str]:
        """Contents of every `tool` message hermes sent upstream so far (proof a tool ran)."""
        out: list[str] = []
        for req in self.upstream.requests:
            for msg in req.messages:
                if msg.get("role") == "tool":
                    content = msg.get("content")
                    out.append(content if isinstance(content, str) else str(content))
        return out

    def upstream_calls(self) -> int:
        return len(self.upstream.requests)


def serve_env(home: Path, upstream: ScriptedUpstream, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(
        HERMES_PROVIDER="openai",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL=upstream.model,
        HERMES_API_KEY="sk-upstream",
        HERMES_STREAM_RETRIES="0",
        HERMES_SANDBOX="off",  # about the protocol, not the sandbox: runs where bwrap cannot
    )
    env.update(extra)
    return env


def start_serve(
    home: Path, workdir: Path, upstream: ScriptedUpstream
) -> tuple[subprocess.Popen[str], str, threading.Thread]:
    """The process, its root URL, and the thread draining its stderr (join it, then close the pipe)."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "serve", "--port", "0", "--key", SERVER_KEY, "--model-name", MODEL_NAME],
        env=serve_env(home, upstream),
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if not line.startswith(READY_PREFIX):
        proc.kill()
        raise AssertionError("hermes serve did not start: " + line + proc.stderr.read())
    # Keep draining stderr so a chatty server can never block on a full pipe.

    drain = threading.Thread(target=proc.stderr.read, daemon=True)
    drain.start()
    return proc, line[len(READY_PREFIX) :].strip(), drain


@contextlib.contextmanager
def running_serve(base: Path, upstream: ScriptedUpstream) -> Iterator[HermesServe]:
    """A `hermes serve` on `upstream` with its home and working directory under `base`,
    stopped (terminate, then kill) on exit."""
    proc, root, drain = start_serve(base / "home", base / "work", upstream)
    try:
        yield HermesServe(proc=proc, root=root, upstream=upstream, workdir=base / "work")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        drain.join(timeout=10)  # EOF once the process is gone
        if proc.stderr is not None:
            proc.stderr.close()
