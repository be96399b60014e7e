"""Fixtures for the runs and sessions tests: the real app over a scripted upstream.

`serve(**settings)` builds `create_app` with a real Agent (OpenAI-compatible provider
pointed at a `ScriptedUpstream` on loopback), a real SQLite session store, test tools
(`echo`, `nap`, `risky` — which asks for approval), and returns an aiohttp TestClient.
Import the fixtures into a test module with `from _runs_fixtures import *`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import Tool, ToolContext, ToolRegistry
from hermes.config import Settings
from hermes.server.http.app import create_app
from hermes.server.http.state import RUNS
from hermes.store.api import Storage
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.testing.state_db import SyncStateDb
from hermes.testing.upstream import ScriptedUpstream

__all__ = ["Frame", "read_frames", "serve", "sessions_db", "storage", "upstream", "wait_for"]

FAST = EngineOptions(stream_retries=1, stale_timeout=5.0, retry_base_delay=0.01, retry_max_delay=0.1)


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"echo:{args.get('text', '')}"


async def _nap(args: dict[str, Any], ctx: ToolContext) -> str:
    await asyncio.sleep(float(args.get("seconds", 30)))
    return "rested"


async def _risky(args: dict[str, Any], ctx: ToolContext) -> str:
    ok = await ctx.request_approval(
        "risky", str(args.get("command", "rm -r build")), "recursive delete", "rm-recursive"
    )
    return "ran it" if ok else "denied: not run"


def tools() -> ToolRegistry:
    schema = {"type": "object", "properties": {}}
    return ToolRegistry(
        [
            Tool("echo", "echo text", schema, _echo, read_only=True),
            Tool("nap", "sleep a while", schema, _nap),
            Tool("risky", "asks for approval", schema, _risky, preview_key="command"),
        ]
    )


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Storage]:
    """A SQLite storage on the apps' files (`tmp_path/home`), for the test's own reads."""
    opened = open_sqlite_storage(tmp_path / "home")
    yield opened
    await opened.aclose()


@pytest.fixture
def sessions_db(storage: Storage) -> SyncStateDb:
    """A sync session store on the apps' state.db, for the test's own reads and writes."""
    return SyncStateDb.wrap(storage.sessions.state)  # type: ignore[attr-defined]


@pytest.fixture
async def serve(
    upstream: ScriptedUpstream, sessions_db: SyncStateDb, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[TestClient]]]:
    """Each app gets its own storage on the shared files, as a fresh process would."""
    clients: list[TestClient] = []
    agents: list[Agent] = []
    storages: list[Storage] = []

    async def make(**overrides: Any) -> TestClient:
        approval_timeout = overrides.pop("approval_timeout", 5.0)
        settings = Settings.load({"home": str(tmp_path / "home"), "model": "scripted-model", **overrides}, env={})
        app_storage = open_sqlite_storage(tmp_path / "home")
        storages.append(app_storage)
        agent = Agent(
            OpenAICompatProvider(base_url=upstream.base_url, api_key="test-key"),
            store=app_storage.sessions,
            model="scripted-model",
            tools=tools(),
            options=FAST,
            system_prompt="You are a test agent.",
        )
        agents.append(agent)
        app = create_app(settings, storage=app_storage, agent=agent)
        app[RUNS].approval_timeout = approval_timeout
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()
    for agent in agents:
        await agent.aclose()
    for opened in storages:
        await opened.aclose()


@dataclass
class Frame:
    id: int | None
    event: str | None
    data: dict[str, Any]


def parse_frames(text: str) -> list[Frame]:
    frames = []
    for block in text.split("\n\n"):
        fid, name, data = None, None, []
        for line in block.splitlines():
            if line.startswith("id: "):
                fid = int(line[4:])
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            frames.append(Frame(fid, name, json.loads("\n".join(data))))
    return frames


async def read_frames(resp: ClientResponse, *, until: Callable[[Frame], bool] | None = None) -> list[Frame]:
    """Read SSE frames until the stream ends, or until `until(frame)` is true."""
    frames: list[Frame] = []
    buffer = ""
    async for chunk in resp.content.iter_any():
        buffer += chunk.decode()
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            for frame in parse_frames(block + "\n\n"):
                frames.append(frame)
                if until is not None and until(frame):
                    return frames
    return frames


async def wait_for(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll `predicate` (sync or returning an awaitable) until truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)
