"""Server test fixtures: the real app from `create_app`, the real engine and SQLite
stores, and a `ScriptedUpstream` on loopback as the model.

    async def test_x(make_server, upstream):
        upstream.enqueue(text_reply("Hi"))
        srv = await make_server(server_key="sk-secret")       # any Settings field
        resp = await srv.client.post("/v1/chat/completions", json=..., headers=srv.auth)

`server` / `auth_server` are ready-made (no key / key "sk-secret"). Helpers
(`parse_sse`, `Server`, `harness_tools`, `SERVER_KEY`) live in `_api_harness.py`.
Shared with the runs/sessions tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _api_harness import SERVER_KEY, MakeServer, Server, harness_tools
from aiohttp.test_utils import TestClient, TestServer

from hermes.agent.factory import build_agent
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.server import create_app
from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as up:
        yield up


@pytest.fixture
async def make_server(hermes_home: Path, upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[MakeServer]:
    servers: list[tuple[Server, Any]] = []

    async def factory(*, tools: ToolRegistry | None = None, **overrides: Any) -> Server:
        values: dict[str, Any] = {
            "home": hermes_home,
            "provider": "openai",
            "base_url": upstream.base_url,
            "model": upstream.model,
            "api_key": "sk-upstream",
            "stream_retries": 0,
            "stream_stale_timeout": 5.0,
        }
        values.update(overrides)
        settings = Settings(**values)
        settings.ensure_home()
        from hermes.store.sqlite.assemble import open_sqlite_storage

        storage = open_sqlite_storage(settings.home, response_store_size=settings.server_response_store_size)
        agent = build_agent(settings, storage.sessions, tools=tools if tools is not None else harness_tools())
        # The idempotency cache comes from the factory itself.
        app = create_app(settings, storage=storage, agent=agent)
        client = TestClient(TestServer(app))
        await client.start_server()
        auth = {"Authorization": f"Bearer {settings.server_key}"} if settings.server_key else {}
        server = Server(client, app, settings, upstream, auth)
        servers.append((server, storage))
        return server

    yield factory
    for server, storage in servers:
        await server.client.close()
        await server.agent.aclose()
        await storage.aclose()


@pytest.fixture
async def server(make_server: MakeServer) -> Server:
    return await make_server()


@pytest.fixture
async def auth_server(make_server: MakeServer) -> Server:
    return await make_server(server_key=SERVER_KEY)
