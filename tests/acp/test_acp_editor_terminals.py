"""An editor that offers terminals: hermes' sandbox does not reach them, so its commands are
classified as with `sandbox = off` (item 5 of issue 29), and permission requests say what
"allow for this session" covers (the exact command) or leave it out (always-ask paths)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _acp_harness import TerminalEditorClient, capabilities, hermes_acp
from acp import PROTOCOL_VERSION, text_block

from hermes.agent.safety.approval import classify_command
from hermes.agent.safety.confinement import Confinement
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply


def _unsandboxed_only(hermes_home: Path) -> list[str]:
    """Commands that the sandboxed classification allows and `sandbox = off` asks about."""
    return [
        "python3 -c 'import os; os.system(\"id\")'",
        "echo aWQK | base64 -d | sh",
        f"cat {hermes_home}/state.db",
    ]


async def test_editor_terminal_commands_ask_as_with_the_sandbox_off(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    commands = _unsandboxed_only(hermes_home)
    policy = Confinement.build(hermes_home)
    for command in commands:  # the attack: classified as sandboxed, these ran unasked
        assert classify_command(command, tmp_path, sandboxed=True, policy=policy).level == "allow"
        assert classify_command(command, tmp_path, sandboxed=False, policy=policy).level == "approve"
    upstream.enqueue(
        tool_reply([call("terminal", {"command": command}, id=f"call_{i}") for i, command in enumerate(commands)]),
        text_reply("done"),
    )
    client = TerminalEditorClient(answer="reject_once")
    async with hermes_acp(client, hermes_home, upstream, sandbox="auto") as conn:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs=True, terminal=True)
        )
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    assert [p.title for p in client.permissions] == commands
    assert client.commands == []  # every one was refused, none reached the editor's terminal
    results = [m["content"] for m in upstream.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and all(r.startswith("DENIED") for r in results)


async def test_an_approved_editor_terminal_command_runs_there(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path
) -> None:
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "python3 -c 'print(1)'"}, id="call_py")]),
        text_reply("done"),
    )
    client = TerminalEditorClient(answer="allow_once")
    async with hermes_acp(client, hermes_home, upstream, sandbox="auto") as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(terminal=True))
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    assert len(client.permissions) == 1
    assert client.commands == [["bash", "-c", "python3 -c 'print(1)'"]]


@pytest.mark.parametrize(
    ("command", "offers_session"),
    [("rm -r build", True), ("echo x >> .git/config", False)],
)
async def test_permission_requests_say_what_a_session_grant_covers(
    upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path, command: str, offers_session: bool
) -> None:
    (tmp_path / "build").mkdir()
    upstream.enqueue(tool_reply([call("terminal", {"command": command}, id="call_1")]), text_reply("done"))
    client = TerminalEditorClient(answer="reject_once")
    async with hermes_acp(client, hermes_home, upstream) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    (asked,) = client.permissions
    text = asked.content[0].content.text
    if offers_session:
        assert client.offered == [["allow_once", "allow_always", "reject_once"]]
        assert f"Allow for this session covers this exact command in {tmp_path}: {command}." in text
        assert asked.raw_input["grant"] == f"this exact command in {tmp_path}: {command}"
    else:
        assert client.offered == [["allow_once", "reject_once"]]
        assert "asked every time" in text and asked.raw_input["grant"] is None
