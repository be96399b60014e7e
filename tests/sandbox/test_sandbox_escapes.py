"""Nothing a tool command starts outlives its call, with the sandbox off and on.

Each command starts a `sleep 300` that leaves the command's process group or parent (setsid,
nohup, a double fork, a daemon that closes its file descriptors) under a unique argv[0]
(the marker). When the call returns, whether the command exited, timed out or was
interrupted, no process with that marker may still run; and the call must not wait for
such a process to close the output pipe it holds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import bwrap_works, pids_with, wait_until

from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.tools.terminal import run_command

SANDBOX_MODES = ["off", pytest.param("on", marks=pytest.mark.skipif(not bwrap_works(), reason="no working bwrap"))]

DAEMON = """
import os, sys
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
os.closerange(0, 1024)
os.execv("/bin/sleep", [sys.argv[1], "300"])
"""

ESCAPES = {
    # Holds the output pipe: the call must not wait for it.
    "setsid": "setsid bash -c 'exec -a {m} sleep 300' &",
    "nohup": "nohup bash -c 'exec -a {m} sleep 300' >/dev/null 2>&1 &",
    "double-fork": "(bash -c 'exec -a {m} sleep 300' >/dev/null 2>&1 &) &",
    "daemon": "python3 -c '{daemon}' {m}",
}


def escape(kind: str, marker: str) -> str:
    return ESCAPES[kind].format(m=marker, daemon=DAEMON.replace("'", '"'))


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"hermes-escape-{uuid.uuid4().hex[:10]}"
    yield name
    for pid in pids_with(name):  # never leave strays behind, even when a test fails
        os.kill(pid, signal.SIGKILL)


def launcher(mode: str) -> ToolLauncher:
    return ToolLauncher(sandbox=resolve_sandbox(SandboxConfig(mode="on" if mode == "on" else "off")))


def running(marker: str) -> list[int]:
    return pids_with(marker, program=True)


@pytest.mark.parametrize("kind", sorted(ESCAPES))
@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_escaped_processes_end_with_the_call(mode: str, kind: str, marker: str, tmp_path: Path) -> None:
    # The command waits until its escapee runs, so the call cannot end before it exists.
    wait = f"for i in $(seq 100); do pgrep -f '^{marker}' >/dev/null && break; sleep 0.05; done"
    command = f"{escape(kind, marker)}\n{wait}; echo started"
    began = time.monotonic()
    result = await asyncio.wait_for(run_command(command, tmp_path, 60, launcher(mode)), 30)
    elapsed = time.monotonic() - began

    assert "--- stdout ---\nstarted" in result, result
    assert running(marker) == [], f"{kind} outlived the call: {result}"
    assert "still held its output open" not in result
    assert elapsed < 10, f"the call took {elapsed:.1f} s"


@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_escaped_processes_end_when_the_call_times_out(mode: str, marker: str, tmp_path: Path) -> None:
    command = f"{escape('setsid', marker)}\n{escape('double-fork', marker)}\ntrap '' TERM; sleep 100"
    result = await asyncio.wait_for(run_command(command, tmp_path, 2, launcher(mode)), 30)

    assert "timed out after 2 s" in result
    assert running(marker) == []


@pytest.mark.parametrize("mode", SANDBOX_MODES)
async def test_escaped_processes_end_when_the_call_is_interrupted(mode: str, marker: str, tmp_path: Path) -> None:
    command = f"{escape('setsid', marker)}\n{escape('daemon', marker)}\nsleep 100"
    task = asyncio.create_task(run_command(command, tmp_path, 60, launcher(mode)))
    assert await asyncio.to_thread(wait_until, lambda: len(running(marker)) == 2, 20), "the command did not start"

    task.cancel()
    await asyncio.wait([task], timeout=30)

    assert task.cancelled()
    assert running(marker) == []
