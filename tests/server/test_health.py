"""/health/detailed: a real readiness check, counters that count, the last upstream error."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _api_harness import SERVER_KEY, MakeServer, Server

from hermes.server.http.state import STORAGE
from hermes.testing.upstream import ScriptedUpstream, error_reply, text_reply

CHAT = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hello"}]}


async def detailed(srv: Server) -> tuple[int, dict[str, Any], str]:
    resp = await srv.client.get("/health/detailed", headers=srv.auth)
    text = await resp.text()
    return resp.status, await resp.json(), text


async def test_fresh_server_is_ready_with_zero_counters(server: Server) -> None:
    status, data, _ = await detailed(server)
    assert status == 200
    assert data["status"] == "ok"
    assert data["checks"] == {"session_store": "ok", "response_store": "ok", "run_store": "ok"}
    assert data["pid"] == os.getpid()
    assert data["instance_id"] == server.app[STORAGE].instance_id
    assert data["instance_id"].startswith("inst_")
    assert data["storage"] == {"backend": "sqlite"}  # never its location
    api = data["api_server"]
    assert api["turns"] == 0
    assert api["active_turns"] == 0
    assert api["active_streams"] == 0
    assert api["last_upstream_error"] is None


async def test_requests_and_turns_are_counted(server: Server, upstream: ScriptedUpstream) -> None:
    upstream.default = text_reply("hi there")
    for _ in range(2):
        resp = await server.client.post("/v1/chat/completions", json=CHAT)
        assert resp.status == 200
    resp = await server.client.post("/v1/responses", json={"model": "hermes-agent", "input": "hi"})
    assert resp.status == 200
    await server.client.get("/v1/models")
    status, data, _ = await detailed(server)
    api = data["api_server"]
    assert api["turns"] == 3
    assert api["requests"] == 5  # 2 chat + 1 responses + models + this request
    assert api["last_request_at"] is not None


async def test_active_turns_and_streams_are_counted(server: Server, upstream: ScriptedUpstream) -> None:
    upstream.default = text_reply("one two three four").stall_after(2)
    resp = await server.client.post("/v1/chat/completions", json={**CHAT, "stream": True})
    assert resp.status == 200
    await resp.content.readline()  # the head and the first frame are out: the turn runs
    for _ in range(500):
        _, data, _ = await detailed(server)
        if data["api_server"]["active_streams"] == 1:
            break
        await asyncio.sleep(0.02)
    assert data["api_server"]["active_turns"] == 1
    assert data["api_server"]["active_streams"] == 1
    resp.close()
    for _ in range(500):
        _, data, _ = await detailed(server)
        if data["api_server"]["active_streams"] == 0 and data["api_server"]["active_turns"] == 0:
            break
        await asyncio.sleep(0.02)
    assert data["api_server"]["active_streams"] == 0
    assert data["api_server"]["active_turns"] == 0


async def test_last_upstream_error_is_reported_without_urls_or_keys(
    make_server: MakeServer, upstream: ScriptedUpstream
) -> None:
    srv = await make_server(server_key=SERVER_KEY)
    upstream.default = error_reply(500, "upstream exploded")
    resp = await srv.client.post("/v1/chat/completions", json=CHAT, headers=srv.auth)
    assert resp.status >= 400
    status, data, text = await detailed(srv)
    assert status == 200  # an upstream failure does not make the server unready
    error = data["api_server"]["last_upstream_error"]
    assert error is not None
    assert error["code"] == "provider_error"
    assert error["at"]
    assert upstream.base_url not in text
    assert "127.0.0.1" not in text
    assert SERVER_KEY not in text
    assert "sk-upstream" not in text
    assert str(srv.settings.home) not in text


async def test_unreachable_store_makes_it_unready(server: Server) -> None:
    server.sessions.close()
    status, data, text = await detailed(server)
    assert status == 503
    assert data["status"] == "unavailable"
    assert data["checks"]["session_store"] == "error"
    assert data["checks"]["response_store"] == "error"  # one file, state.db, holds both
    assert str(server.settings.home) not in text
