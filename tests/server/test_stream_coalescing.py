"""A chat stream behind a client that stopped reading: the text arrives whole and in order,
and the deltas that piled up meanwhile go out merged (fewer frames than upstream chunks).

The client is a raw socket with a tiny receive buffer; the first delta is larger than
every buffer between hermes and it, so hermes' stream waits on it while the other deltas
queue up. Assertions are about the text and its order, and that merging happened, never
about where one frame ends.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

from _raw_http import WAIT, hermes_app, serving, wait_closed_by_server
from aiohttp import web

from hermes.server.http.protocol import ConnectionLimits
from hermes.testing.upstream import Chunk, Reply, ScriptedUpstream

BIG = "big " * 250_000
"""1 MB: more than the kernel's buffers and the transport's high-water mark together."""
WORDS = [f"w{i} " for i in range(64)]


class Answering(ScriptedUpstream):
    """The scripted upstream, which also says when it has written a whole reply."""

    def __init__(self) -> None:
        super().__init__()
        self.answered = asyncio.Event()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            return await super()._chat(request)
        finally:
            self.answered.set()


def dechunk(raw: bytes) -> bytes:
    """The body of an HTTP/1.1 response sent with chunked transfer encoding."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"chunked" in head.lower(), head
    body = b""
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        body, rest = body + rest[:size], rest[size + 2 :]
    return body


def content_frames(body: bytes) -> list[str]:
    frames: list[str] = []
    for line in body.decode().split("\n"):
        if line.startswith("data: {"):
            delta: dict[str, Any] = json.loads(line[6:])["choices"][0]["delta"]
            if delta.get("content"):
                frames.append(delta["content"])
    return frames


async def stalled_client(port: int, request: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection with a tiny receive buffer that has sent `request` and reads nothing yet."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window stays small
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(request)
    await writer.drain()
    return reader, writer


async def test_a_stalled_client_gets_the_whole_text_in_order_in_fewer_frames(tmp_path: Path) -> None:
    async with Answering() as upstream:
        steps = [Chunk(delta={"content": BIG}), *(Chunk(delta={"content": word}) for word in WORDS)]
        upstream.enqueue(Reply([*steps, Chunk(delta={}, finish_reason="stop")]))
        body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}).encode()
        request = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        async with hermes_app(tmp_path / "home", upstream.base_url, upstream.model) as app:
            async with serving(app, ConnectionLimits()) as (port, _):
                reader, writer = await stalled_client(port, request)
                # The upstream has written every delta; the client has read nothing, so
                # hermes is still writing the first one while the others wait behind it.
                await asyncio.wait_for(upstream.answered.wait(), WAIT)
                raw = await wait_closed_by_server(reader)
                writer.close()
    frames = content_frames(dechunk(raw))
    assert "".join(frames) == BIG + "".join(WORDS)
    assert len(frames) < 1 + len(WORDS)  # the words that waited were merged
