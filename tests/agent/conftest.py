"""Engine fixtures: a scripted upstream on loopback, a real SQLite store, test tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.errors import ToolError
from hermes.store.sqlite.state_db import SqliteSessions
from hermes.testing.state_db import SyncStateDb, open_sync_state
from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> SyncStateDb:
    db = open_sync_state(tmp_path / "state.db")
    yield db
    db.close()


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"echo:{args.get('text', '')}"


async def _nap(args: dict[str, Any], ctx: ToolContext) -> str:
    await asyncio.sleep(float(args.get("seconds", 0.3)))
    return f"slept {args.get('seconds', 0.3)}"


async def _fail(args: dict[str, Any], ctx: ToolContext) -> str:
    raise RuntimeError("disk on fire")


async def _refuse(args: dict[str, Any], ctx: ToolContext) -> str:
    raise ToolError("no such file: nope.txt")


async def _big(args: dict[str, Any], ctx: ToolContext) -> str:
    return "x" * int(args.get("size", 10_000))


async def _risky(args: dict[str, Any], ctx: ToolContext) -> str:
    ok = await ctx.request_approval("risky", args.get("command", "rm -r build"), "recursive delete", "rm-recursive")
    return "ran it" if ok else "denied: not run"


def _tool(name: str, handler: Any, *, read_only: bool = False) -> Tool:
    return Tool(name, f"test tool {name}", {"type": "object", "properties": {}}, handler, read_only=read_only)


@pytest.fixture
def test_tools() -> ToolRegistry:
    return ToolRegistry(
        [
            _tool("echo", _echo, read_only=True),
            _tool("nap", _nap, read_only=True),
            _tool("nap_write", _nap),
            _tool("fail", _fail),
            _tool("refuse", _refuse),
            _tool("big", _big, read_only=True),
            _tool("risky", _risky),
        ]
    )


FAST_OPTIONS = EngineOptions(
    stream_retries=2, stale_timeout=2.0, retry_base_delay=0.01, retry_max_delay=0.5, tool_output_limit=2_000
)


def _async_store(store: SyncStateDb | None) -> SqliteSessions | None:
    if store is None or isinstance(store, SqliteSessions):
        return store
    assert isinstance(store, SyncStateDb)
    return store.sessions


@pytest.fixture
async def make_agent(
    upstream: ScriptedUpstream, store: SyncStateDb, test_tools: ToolRegistry
) -> AsyncIterator[Callable[..., Agent]]:
    """Agents over the scripted upstream; each one's HTTP client is closed on this test's loop."""
    agents: list[Agent] = []

    def make(**overrides: Any) -> Agent:
        opts = overrides.pop("opts", None) or FAST_OPTIONS
        agent = Agent(
            OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
            store=_async_store(overrides.pop("store", store)),
            model="scripted-model",
            tools=overrides.pop("tools", test_tools),
            options=opts,
        )
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


@pytest.fixture
def fast_options() -> EngineOptions:
    return FAST_OPTIONS
