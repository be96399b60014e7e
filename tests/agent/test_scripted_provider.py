"""The in-process ScriptedProvider plays the same scripts as the HTTP upstream, through the seam."""

from __future__ import annotations

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.testing.provider import ScriptedProvider, register_scripted, unregister_scripted
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import Drop, Reply, call, error_reply, text_reply, tool_reply


@pytest.fixture
def scripted(tmp_path):
    provider = ScriptedProvider()
    register_scripted(provider)
    yield provider
    unregister_scripted()


async def test_selected_by_name_through_settings(scripted, store, test_tools, tmp_path):
    settings = Settings.load({"provider": "scripted", "model": "fake", "home": str(tmp_path)})
    agent = build_agent(settings, store.sessions, tools=test_tools)
    assert agent.provider is scripted
    scripted.enqueue(tool_reply([call("echo", {"text": "hi"})], text="Checking."), text_reply("Done."))
    events, result = await collect_turn(agent, "go")
    assert result.status == "completed" and result.final_text == "Done."
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2]["content"] == "echo:hi"
    assert scripted.requests[0].model == "fake" and scripted.requests[0].tools
    scripted.assert_complete()


async def test_errors_and_drops_follow_the_engine_rules(scripted, store, tmp_path):
    settings = Settings.load({"provider": "scripted", "model": "fake", "home": str(tmp_path), "stream_retries": 2})
    agent = build_agent(settings, store.sessions, tools=ToolRegistry())
    agent.options.retry_base_delay = 0.0
    scripted.enqueue(Reply([Drop()]), error_reply(500, "boom"), text_reply("third"))
    _, result = await collect_turn(agent, "go")
    assert result.final_text == "third" and len(scripted.requests) == 3
    scripted.enqueue(error_reply(401, "nope"))
    _, result = await collect_turn(agent, "again")
    assert result.status == "failed" and result.error_code == "authentication_failed"
