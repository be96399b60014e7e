"""Hooks in `hermes serve`: config.toml's hooks run for the server's turns, in the session's
folder, and a blocking hook's stderr is what the model reads; a refused prompt is an error
response that carries the hook's reason, and nothing reaches the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from _api_harness import MakeServer

from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.registry import default_registry
from hermes.config import Settings
from hermes.hooks_config import HookConfig
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

GUARD = 'cat > seen.json; echo "no deletes through the API" >&2; exit 2'


async def test_a_pre_tool_hook_blocks_a_server_turns_command(
    make_server: MakeServer, upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    (work / "victim.txt").write_text("keep\n")
    monkeypatch.chdir(work)
    hooks = (HookConfig("PreToolUse", GUARD, matcher="Bash"),)
    launcher = ToolLauncher.from_settings(Settings(home=hermes_home, sandbox="off"))
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm victim.txt"})]), text_reply("could not"))
    server = await make_server(tools=default_registry(launcher), hooks=hooks, sandbox="off")
    reply = await server.client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "go"}]})
    assert reply.status == 200
    assert (work / "victim.txt").exists()
    results = [m["content"] for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert results == ["no deletes through the API"]
    assert '"hook_event_name": "PreToolUse"' in (work / "seen.json").read_text()


async def test_a_refused_prompt_never_reaches_the_model(
    make_server: MakeServer, upstream: ScriptedUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    hooks = (HookConfig("UserPromptSubmit", "echo 'that prompt is not allowed' >&2; exit 2"),)
    server = await make_server(hooks=hooks, sandbox="off")
    reply = await server.client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    body = await reply.json()
    assert reply.status >= 400, body
    assert "that prompt is not allowed" in body["error"]["message"]
    assert upstream.requests == []
