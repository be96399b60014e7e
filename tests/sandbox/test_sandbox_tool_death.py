"""Tool processes die with hermes, even on kill -9, with the sandbox off and on.

Each test starts a real process that runs the terminal tool (a small harness, or a real
`hermes chat -q` driven by the scripted upstream), waits until the command's grandchildren
run, kills that process with SIGKILL, and waits (with a timeout) until every process
carrying the command's marker is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import bwrap_works, pids_with, wait_until

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

HARNESS = """
import asyncio, sys
from pathlib import Path
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.terminal import run_command

mode, command, cwd = sys.argv[1:4]
launcher = ToolLauncher(sandbox=resolve_sandbox(SandboxConfig(mode=mode)))
asyncio.run(run_command(command, Path(cwd), 3000, launcher))
"""

SANDBOX_MODES = ["off", pytest.param("on", marks=pytest.mark.skipif(not bwrap_works(), reason="no working bwrap"))]


def tree_command(marker: str) -> str:
    """A shell that starts two grandchildren named after `marker`, one in a subshell, and waits."""
    return f"(exec -a {marker}-a sleep 1000) & (bash -c 'exec -a {marker}-b sleep 1000') & wait; : {marker}"


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"hermes-death-{uuid.uuid4().hex[:10]}"
    yield name
    for pid in pids_with(name):  # never leave strays behind, even when a test fails
        os.kill(pid, signal.SIGKILL)


def kill_and_expect_tree_gone(proc: subprocess.Popen[Any], marker: str) -> None:
    def running() -> bool:  # the sleeps themselves, renamed by exec -a (not the harness's argv)
        return bool(pids_with(f"{marker}-a", program=True)) and bool(pids_with(f"{marker}-b", program=True))

    started = wait_until(running, 30)
    assert started, f"the command did not start (exit code {proc.poll()})"
    proc.kill()
    proc.wait(timeout=10)
    assert wait_until(lambda: not pids_with(marker), 10), f"still running: {pids_with(marker)}"


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_kill_9_of_the_tool_runner_kills_the_whole_tree(mode: str, marker: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HARNESS, mode, tree_command(marker), str(tmp_path)],
        stdin=subprocess.DEVNULL,
    )
    try:
        kill_and_expect_tree_gone(proc, marker)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_kill_9_of_the_tool_runner_kills_processes_that_left_the_group(mode: str, marker: str, tmp_path: Path) -> None:
    # setsid'd (a new session) and double-forked (re-parented) grandchildren.
    command = (
        f"setsid bash -c 'exec -a {marker}-a sleep 1000' & "
        f"(setsid bash -c 'exec -a {marker}-b sleep 1000' &) & sleep 1000; : {marker}"
    )
    proc = subprocess.Popen([sys.executable, "-c", HARNESS, mode, command, str(tmp_path)], stdin=subprocess.DEVNULL)
    try:
        kill_and_expect_tree_gone(proc, marker)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_kill_9_of_hermes_chat_mid_tool_kills_the_tool(mode: str, marker: str, tmp_path: Path) -> None:
    with ScriptedUpstream.in_thread() as upstream:
        upstream.enqueue(
            tool_reply([call("terminal", {"command": tree_command(marker), "timeout": 3000})]), text_reply("done")
        )
        env = {
            **os.environ,
            "HERMES_BASE_URL": upstream.base_url,
            "HERMES_MODEL": "scripted-model",
            "HERMES_SANDBOX": mode,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "chat", "-q", "run it"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd=tmp_path,
            env=env,
        )
        try:
            kill_and_expect_tree_gone(proc, marker)
        finally:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_kill_9_of_hermes_serve_mid_tool_kills_the_tool(mode: str, marker: str, tmp_path: Path) -> None:
    import json
    import threading
    import urllib.request

    with ScriptedUpstream.in_thread() as upstream:
        upstream.enqueue(
            tool_reply([call("terminal", {"command": tree_command(marker), "timeout": 3000})]), text_reply("done")
        )
        env = {
            **os.environ,
            "HERMES_BASE_URL": upstream.base_url,
            "HERMES_MODEL": "scripted-model",
            "HERMES_SANDBOX": mode,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        try:
            assert proc.stderr is not None
            ready = proc.stderr.readline()
            assert ready.startswith("hermes serve: listening on "), ready
            base = ready.rsplit(" ", 1)[1].strip()
            body = json.dumps({"model": "hermes-agent", "messages": [{"role": "user", "content": "run it"}]})
            request = urllib.request.Request(
                f"{base}/v1/chat/completions", data=body.encode(), headers={"Content-Type": "application/json"}
            )

            def post() -> None:  # blocks until the server dies; its failure is expected
                try:
                    urllib.request.urlopen(request, timeout=60).read()
                except OSError:
                    pass

            client = threading.Thread(target=post, daemon=True)
            client.start()
            kill_and_expect_tree_gone(proc, marker)
            client.join(timeout=30)
        finally:
            proc.kill()
            proc.wait(timeout=10)
            proc.stderr.close()  # type: ignore[union-attr]  # warnings are errors: no pipe is left to the GC
