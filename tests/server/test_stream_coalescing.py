"""A stream behind a client that stopped reading (chat completions, Responses): the text
arrives whole and in order, and the deltas that piled up meanwhile go out merged (fewer
frames than upstream chunks). A Responses stream keeps its event sequence: the same event
types in the same order, sequence numbers rising by one, the completed response with the
whole text, and the openai SDK's `responses.stream()` helper assembles the same text.

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

import openai
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


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The JSON of each `data:` line of an SSE body."""
    return [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: {")]


def collapsed(types: list[str]) -> list[str]:
    """`types` with each run of one delta type written once."""
    return [t for i, t in enumerate(types) if not (t.endswith(".delta") and i and types[i - 1] == t)]


RESPONSE_SHAPE = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


async def test_a_stalled_responses_client_gets_the_whole_text_in_order_in_fewer_events(tmp_path: Path) -> None:
    thought, answer = BIG + "".join(WORDS), BIG + "".join(WORDS).upper()
    async with Answering() as upstream:
        steps = [
            *(Chunk(delta={"reasoning_content": part}) for part in (BIG, *WORDS)),
            *(Chunk(delta={"content": part}) for part in (BIG, *(word.upper() for word in WORDS))),
        ]
        upstream.enqueue(Reply([*steps, Chunk(delta={}, finish_reason="stop")]))
        body = json.dumps({"model": "m", "input": "go", "stream": True}).encode()
        request = (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: stalled\r\n"
            b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        async with hermes_app(tmp_path / "home", upstream.base_url, upstream.model) as app:
            async with serving(app, ConnectionLimits()) as (port, _):
                reader, writer = await stalled_client(port, request)
                # The first reasoning delta fills every buffer; the rest of the reply queues up.
                await asyncio.wait_for(upstream.answered.wait(), WAIT)
                raw = await wait_closed_by_server(reader)
                writer.close()
                # The same request again: the recorded (merged) events, read by the SDK's helper.
                sdk = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
                async with (
                    sdk,
                    sdk.responses.stream(model="m", input="go", extra_headers={"Idempotency-Key": "stalled"}) as stream,
                ):
                    helper_deltas = [
                        event.delta async for event in stream if event.type == "response.output_text.delta"
                    ]
                    final = await stream.get_final_response()
    events = sse_events(dechunk(raw))
    types = [event["type"] for event in events]
    assert collapsed(types) == RESPONSE_SHAPE
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    reasoning = [e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta"]
    text = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(reasoning) == thought
    assert "".join(text) == answer
    assert len(reasoning) < 1 + len(WORDS)  # the reasoning that waited was merged
    assert len(text) < 1 + len(WORDS)  # and the text too
    completed = events[-1]["response"]
    assert completed["status"] == "completed"
    assert [item["type"] for item in completed["output"]] == ["reasoning", "message"]
    assert completed["output"][0]["summary"] == [{"type": "summary_text", "text": thought}]
    assert completed["output"][1]["content"][0]["text"] == answer
    assert helper_deltas == text
    assert final.output_text == answer
    assert len(upstream.requests) == 1  # the SDK's request was the replay
