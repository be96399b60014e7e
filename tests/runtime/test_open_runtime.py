"""open_runtime: storage, repair, prepare, agent and MCP in one order, closed in reverse."""

from __future__ import annotations

import pytest

from hermes.agent.engine import Agent
from hermes.agent.types import TurnRequest
from hermes.config import Settings
from hermes.errors import SessionNotFound, StoreError
from hermes.runtime import open_runtime
from hermes.store.api import Storage
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.testing.provider import ScriptedProvider, register_scripted, unregister_scripted
from hermes.testing.upstream import text_reply


@pytest.fixture
def scripted():
    provider = ScriptedProvider()
    register_scripted(provider)
    yield provider
    unregister_scripted()


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings.load({"provider": "scripted", "model": "fake", "home": str(tmp_path)})


async def test_the_runtime_opens_in_order_runs_turns_and_closes_what_it_opened(scripted, settings):
    steps: list[str] = []

    async def repair(storage: Storage) -> None:
        steps.append("repair")
        await storage.sessions.repair_abandoned_turns()

    async def prepare(storage: Storage) -> None:
        steps.append("prepare")

    async with open_runtime(settings, repair=repair, prepare=prepare) as runtime:
        assert steps == ["repair", "prepare"]
        assert runtime.agent.store is runtime.storage.sessions
        assert runtime.mcp is None  # no MCP servers configured
        scripted.enqueue(text_reply("hello"))
        async with runtime.agent.start(TurnRequest(input="hi")) as handle:
            events = [event async for event in handle.events()]
        assert handle.result is not None and handle.result.final_text == "hello"
        assert events[-1].type == "turn.completed"
    with pytest.raises(StoreError, match="closed"):
        await runtime.storage.sessions.latest_session()


async def test_what_is_given_is_left_open_and_gets_no_mcp(settings, tmp_path):
    storage = open_sqlite_storage(tmp_path)
    agent = Agent(ScriptedProvider(), store=storage.sessions, model="fake")
    try:
        async with open_runtime(settings, storage=storage, agent=agent) as runtime:
            assert runtime.storage is storage and runtime.agent is agent and runtime.mcp is None
        assert await storage.sessions.latest_session() is None  # still open
    finally:
        await storage.aclose()


async def test_a_failing_prepare_closes_an_owned_storage_before_any_agent_is_built(settings, tmp_path):
    # No scripted provider is registered here: building the agent would fail differently.
    storage = open_sqlite_storage(tmp_path)

    async def prepare(opened: Storage) -> None:
        raise SessionNotFound("nope")

    with pytest.raises(SessionNotFound):
        async with open_runtime(settings, storage=storage, owned=True, prepare=prepare):
            pytest.fail("the runtime must not open")
    with pytest.raises(StoreError, match="closed"):
        await storage.sessions.latest_session()
