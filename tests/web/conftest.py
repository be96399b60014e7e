"""A scripted web site on loopback for the web tools' tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest_asyncio
from aiohttp import web
from web_site import PAGE, Site


@pytest_asyncio.fixture
async def site() -> AsyncIterator[Site]:
    hits: list[str] = []
    release = asyncio.Event()  # ends a /slow answer at teardown

    async def page(request: web.Request) -> web.StreamResponse:
        hits.append(request.path_qs)
        path = request.path
        if path == "/docs":
            return web.Response(text=PAGE, content_type="text/html", charset="utf-8")
        if path == "/big":
            return web.Response(text="<p>" + "word " * 20_000 + "</p>", content_type="text/html")
        if path == "/plain":
            return web.Response(text="just text\nline two\n", content_type="text/plain")
        if path == "/data.json":
            return web.Response(text='{"name": "hermes", "ok": true}', content_type="application/json")
        if path == "/logo.png":
            return web.Response(body=b"\x89PNG\r\n\x1a\n" + b"\0" * 64, content_type="image/png")
        if path == "/missing":
            return web.Response(status=404, text="nope")
        if path == "/hop":
            raise web.HTTPFound(request.query.get("to", "/docs"))
        if path == "/loop":
            raise web.HTTPFound("/loop")
        if path == "/slow":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(release.wait(), 30)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = runner.addresses[0][1]
    try:
        yield Site(f"http://localhost:{port}", port, hits)
    finally:
        release.set()
        await runner.cleanup()
