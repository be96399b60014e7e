"""A real `hermes serve`-style listener (HermesAppRunner on loopback) and raw-socket helpers.

    async with serving(app, limits) as (port, server):
        status, headers, body = await exchange(port, b"GET /health HTTP/1.1\\r\\n\\r\\n")
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from hermes.server.http.protocol import ConnectionLimits, HermesAppRunner, HermesServer

WAIT = 20.0


@contextlib.asynccontextmanager
async def serving(app: web.Application, limits: ConnectionLimits) -> AsyncIterator[tuple[int, HermesServer]]:
    runner = HermesAppRunner(app, limits=limits, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = runner.server
    assert isinstance(server, HermesServer)
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield port, server
    finally:
        await runner.cleanup()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await asyncio.wait_for(reader.readexactly(length), WAIT) if length else b""
    return status, headers, body


async def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        return await read_response(reader)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def envelope(body: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(body)
    error = data["error"]
    assert set(error) >= {"message", "type", "param", "code"}, data
    return error


async def wait_closed_by_server(reader: asyncio.StreamReader, timeout: float = WAIT) -> bytes:
    """Read until the server closes the connection (EOF or reset); returns what came.

    Raises TimeoutError when the server keeps the connection open past `timeout`.
    """
    received = b""
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), timeout):
            received += chunk
    except ConnectionError:
        pass
    return received


@contextlib.asynccontextmanager
async def hermes_app(home: Any, upstream_url: str, model: str, **overrides: Any) -> AsyncIterator[web.Application]:
    """The real app (real engine, SQLite stores under `home`) pointed at a scripted upstream."""
    from _api_harness import harness_tools

    from hermes.agent.factory import build_agent
    from hermes.config import Settings
    from hermes.server import create_app
    from hermes.store.sqlite.assemble import open_sqlite_storage

    values: dict[str, Any] = {
        "home": home,
        "provider": "openai",
        "base_url": upstream_url,
        "model": model,
        "api_key": "sk-upstream",
        "stream_retries": 0,
        "stream_stale_timeout": 5.0,
        **overrides,
    }
    settings = Settings(**values)
    settings.ensure_home()
    storage = open_sqlite_storage(settings.home, response_store_size=settings.server_response_store_size)
    agent = build_agent(settings, storage.sessions, tools=harness_tools())
    try:
        yield create_app(settings, storage=storage, agent=agent)
    finally:
        await agent.aclose()
        await storage.aclose()
