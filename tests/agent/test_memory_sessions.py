"""Memory across sessions through the real engine, store and scripted upstream: what one
session saves with the memory tool is in the next session's system prompt, never in the
running session's; `memory = false` gives no tool and no section; the server follows
`server_memory`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.engine import Agent
from hermes.agent.events import ToolCompleted
from hermes.agent.factory import build_agent
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.registry import default_registry
from hermes.agent.types import TurnRequest
from hermes.config import Settings
from hermes.server import create_app
from hermes.testing.state_db import open_sync_state
from hermes.testing.turns import collect_turn
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

FACT = "the repo builds with `just build`"


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


def settings_for(home: Path, upstream: ScriptedUpstream, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home, "provider": "openai", "base_url": upstream.base_url, "model": upstream.model,
        "stream_retries": 0, "stream_stale_timeout": 5.0, "lsp": False,
    }  # fmt: skip
    values.update(changes)
    return Settings(**values)


@pytest.fixture
async def make_agent(upstream: ScriptedUpstream, hermes_home: Path, tmp_path: Path) -> AsyncIterator[Any]:
    made: list[tuple[Agent, Any]] = []

    def make(**changes: Any) -> Agent:
        db = open_sync_state(tmp_path / "state.db")
        settings = settings_for(hermes_home, upstream, **changes)
        provider = OpenAICompatProvider(base_url=upstream.base_url, api_key="k")
        agent = build_agent(settings, db.sessions, provider=provider, tools=default_registry())
        made.append((agent, db))
        return agent

    yield make
    for agent, db in made:
        await agent.aclose()
        db.close()


def system_of(upstream: ScriptedUpstream, index: int) -> str:
    first = upstream.requests[index].messages[0]
    assert first["role"] == "system"
    return str(first["content"])


async def test_memory_saved_in_one_session_reaches_the_next_not_the_running_one(
    upstream: ScriptedUpstream, make_agent: Any, hermes_home: Path, tmp_path: Path
) -> None:
    agent = make_agent()
    saving = call("memory", {"action": "add", "target": "memory", "content": FACT}, id="m1")
    upstream.enqueue(tool_reply([saving]), text_reply("Noted."))
    events, first = await collect_turn(agent, TurnRequest(input="remember how to build", cwd=str(tmp_path)))
    (saved,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert not saved.is_error and "Saved in MEMORY.md" in saved.result
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == f"- {FACT}\n"
    started_with = system_of(upstream, 0)
    assert FACT not in started_with and "# Memory" not in started_with
    assert system_of(upstream, 1) == started_with  # the same turn's next call

    upstream.enqueue(text_reply("Hello again."))
    await collect_turn(agent, TurnRequest(input="how do I build?", cwd=str(tmp_path)))
    fresh = system_of(upstream, 2)
    assert "# Memory" in fresh and "## MEMORY.md" in fresh and f"- {FACT}" in fresh
    assert "USER.md" not in fresh  # an empty file has no part

    upstream.enqueue(text_reply("Still here."))
    await collect_turn(agent, TurnRequest(input="and now?", session_id=first.session_id, cwd=str(tmp_path)))
    assert system_of(upstream, 3) == started_with  # the running session keeps its prompt (the cache holds)
    assert agent.store is not None
    stored = await agent.store.get_session(first.session_id)
    assert stored.system_prompt == started_with


async def test_both_files_go_into_a_new_prompt_each_under_its_cap(
    upstream: ScriptedUpstream, make_agent: Any, hermes_home: Path
) -> None:
    folder = hermes_home / "memories"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- " + "m" * 100 + "\n")
    (folder / "USER.md").write_text("- Ana; answers in French\x1b[2J\n")
    agent = make_agent(memory_max_chars=50)
    upstream.enqueue(text_reply("ok"))
    await collect_turn(agent, "hi")
    system = system_of(upstream, 0)
    memory = system[system.index("# Memory") :]
    assert "- " + "m" * 48 + "\n[MEMORY.md was cut at its cap of 50 characters.]" in memory
    assert "## USER.md (who the user is and what they prefer)\n- Ana; answers in French^[[2J" in memory
    assert "\x1b" not in system
    assert "memory" in upstream.requests[0].tool_names


async def test_memory_off_gives_no_tool_and_no_section(
    upstream: ScriptedUpstream, make_agent: Any, hermes_home: Path
) -> None:
    folder = hermes_home / "memories"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(f"- {FACT}\n")
    agent = make_agent(memory=False)
    upstream.enqueue(text_reply("ok"))
    await collect_turn(agent, "hi")
    assert "memory" not in upstream.requests[0].tool_names
    assert FACT not in system_of(upstream, 0) and "# Memory" not in system_of(upstream, 0)
    assert agent.tools.get("memory") is None


async def test_plan_mode_turn_cannot_write_memory(
    upstream: ScriptedUpstream, make_agent: Any, hermes_home: Path
) -> None:
    agent = make_agent()
    upstream.enqueue(tool_reply([call("memory", {"action": "add", "content": FACT}, id="m")]), text_reply("ok"))
    events, _ = await collect_turn(agent, TurnRequest(input="remember", mode="plan"))
    (refused,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert refused.is_error and "plan mode is on" in refused.result
    assert not (hermes_home / "memories" / "MEMORY.md").exists()


@pytest.mark.parametrize("server_memory", [True, False])
async def test_the_server_uses_memory_unless_server_memory_is_off(
    upstream: ScriptedUpstream, hermes_home: Path, server_memory: bool
) -> None:
    folder = hermes_home / "memories"
    folder.mkdir(parents=True)
    (folder / "USER.md").write_text("- prefers terse answers\n")
    settings = settings_for(hermes_home, upstream, server_memory=server_memory)
    settings.ensure_home()
    client = TestClient(TestServer(create_app(settings)))  # storage and agent as `hermes serve` opens them
    await client.start_server()
    try:
        upstream.enqueue(text_reply("Hi."))
        body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hello"}]}
        resp = await client.post("/v1/chat/completions", json=body)
        assert resp.status == 200, await resp.text()
    finally:
        await client.close()
    assert ("prefers terse answers" in system_of(upstream, 0)) is server_memory
    assert ("memory" in upstream.requests[0].tool_names) is server_memory
