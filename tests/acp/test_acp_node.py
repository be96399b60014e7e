"""One `hermes acp` turn driven from Node by the ACP TypeScript SDK (`@agentclientprotocol/sdk`),
a second client nobody on the project wrote. The client advertises terminals, so the
terminal tool's command runs through its `terminal/*` methods.

The Node project is tests/acp/node (pinned in its package-lock.json; `npm ci` runs once per
checkout, see tests/clients/_node_modules.py). Without node, npm or the modules the test
skips locally and fails under CI=true, like the other Node client tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from _acp_harness import hermes_env
from clients._node_modules import ensure_node_modules

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_TIMEOUT = 60.0


def _node_problem() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (it runs the ACP TypeScript SDK's client)"
    return ensure_node_modules(NODE_DIR)


async def test_a_turn_from_the_typescript_sdk_runs_its_command_in_the_clients_terminal(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    problem = await asyncio.to_thread(_node_problem)
    if problem is not None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(problem)
        pytest.skip(problem)
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "echo hello-from-node-terminal"}, id="call_echo")]),
        text_reply("The command printed hello."),
    )
    node = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "drive_hermes.mjs"),
        str(tmp_path),
        "run echo",
        "--",
        sys.executable,
        "-m",
        "hermes",
        "acp",
        env=hermes_env(hermes_home, upstream),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(node.communicate(), NODE_TIMEOUT)
    assert node.returncode == 0
    result = json.loads(out)
    assert result["init"]["agentInfo"]["name"] == "hermes"
    assert result["stopReason"] == "end_turn"
    assert result["terminalCommands"] == [["bash", "-c", "echo hello-from-node-terminal"]]
    kinds = [update["sessionUpdate"] for update in result["updates"]]
    assert kinds[:2] == ["tool_call", "tool_call_update"]
    started, done = result["updates"][:2]
    assert (started["toolCallId"], started["kind"], started["title"]) == (
        "call_echo",
        "execute",
        "echo hello-from-node-terminal",
    )
    assert done["status"] == "completed" and "hello-from-node-terminal" in done["content"][-1]["content"]["text"]
    answer = "".join(u["content"]["text"] for u in result["updates"] if u["sessionUpdate"] == "agent_message_chunk")
    assert answer == "The command printed hello."
    tool_message = upstream.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and "exit code: 0" in tool_message["content"]
    store = open_sync_state(hermes_home / "state.db")
    try:
        assert store.get_session(result["sessionId"]).source == "acp"
    finally:
        store.close()
