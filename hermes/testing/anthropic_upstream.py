"""A scripted Anthropic Messages API on loopback, for tests (no network, no key).

    with ScriptedAnthropic.in_thread() as api:
        api.enqueue(anthropic_text("Hello"), anthropic_tools([("read_file", {"path": "a.py"})]))
        ... AnthropicProvider(base_url=api.base_url, api_key="test") ...
        api.requests[0]   # the JSON body the client sent, with its headers

`POST /v1/messages` plays the next scripted reply: a stream of Messages API events as SSE
(`stream: true`) or the assembled message (otherwise); an `AnthropicError` reply answers
with that HTTP status and Anthropic's error body. `GET /v1/models` lists `models`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class AnthropicReply:
    """Content blocks to stream: ("text", str), ("thinking", str), ("tool_use", (name, input))."""

    blocks: tuple[tuple[str, Any], ...]
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(
        default_factory=lambda: {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 0,
                                 "cache_creation_input_tokens": 0}
    )  # fmt: skip
    error_event: str | None = None
    """An `error` event of this type sent after the blocks (e.g. "overloaded_error")."""


@dataclass(frozen=True)
class AnthropicError:
    status: int
    type: str
    message: str
    retry_after: float | None = None


def anthropic_text(text: str, *, thinking: str | None = None, usage: dict[str, int] | None = None) -> AnthropicReply:
    blocks: list[tuple[str, Any]] = [("thinking", thinking)] if thinking else []
    blocks.append(("text", text))
    return AnthropicReply(tuple(blocks), usage=usage) if usage else AnthropicReply(tuple(blocks))


def anthropic_tools(calls: list[tuple[str, dict[str, Any]]], *, text: str | None = None,
                    thinking: str | None = None) -> AnthropicReply:  # fmt: skip
    blocks: list[tuple[str, Any]] = [("thinking", thinking)] if thinking else []
    if text:
        blocks.append(("text", text))
    blocks.extend(("tool_use", call) for call in calls)
    return AnthropicReply(tuple(blocks), stop_reason="tool_use")


@dataclass
class RecordedMessages:
    body: dict[str, Any]
    headers: dict[str, str]
    """Lower-case names."""


class ScriptedAnthropic:
    def __init__(self, *, models: tuple[str, ...] = ("claude-test-1", "claude-test-2")) -> None:
        self.models = models
        self.replies: deque[AnthropicReply | AnthropicError] = deque()
        self.requests: list[RecordedMessages] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *replies: AnthropicReply | AnthropicError) -> None:
        self.replies.extend(replies)

    async def start(self) -> ScriptedAnthropic:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @classmethod
    @contextmanager
    def in_thread(cls, **kwargs: Any) -> Iterator[ScriptedAnthropic]:
        api = cls(**kwargs)
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(api.start())
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, name="scripted-anthropic", daemon=True)
        thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted Anthropic API did not start")
        try:
            yield api
        finally:
            asyncio.run_coroutine_threadsafe(api.stop(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

    async def _models(self, request: web.Request) -> web.Response:
        created = "2026-01-01T00:00:00Z"
        data = [{"type": "model", "id": m, "display_name": m, "created_at": created} for m in self.models]
        return web.json_response({"data": data, "has_more": False, "first_id": None, "last_id": None})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(RecordedMessages(body, {k.lower(): v for k, v in request.headers.items()}))
        if not self.replies:
            return self._error(AnthropicError(500, "api_error", "no scripted reply left"))
        reply = self.replies.popleft()
        if isinstance(reply, AnthropicError):
            return self._error(reply)
        message_id = f"msg_{next(self._ids):04d}"
        if not body.get("stream"):
            return web.json_response(self._message(message_id, body["model"], reply))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for name, data in self._events(message_id, body["model"], reply):
            await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        await response.write_eof()
        return response

    def _error(self, error: AnthropicError) -> web.Response:
        headers = {"retry-after": str(error.retry_after)} if error.retry_after is not None else None
        body = {"type": "error", "error": {"type": error.type, "message": error.message}}
        return web.json_response(body, status=error.status, headers=headers)

    def _message(self, message_id: str, model: str, reply: AnthropicReply) -> dict[str, Any]:
        content = []
        for index, (kind, value) in enumerate(reply.blocks):
            if kind == "text":
                content.append({"type": "text", "text": value})
            elif kind == "thinking":
                content.append({"type": "thinking", "thinking": value, "signature": f"sig-{index}"})
            else:
                name, arguments = value
                call_id = f"toolu_{message_id}_{index}"
                content.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
        return {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": reply.usage,
        }  # fmt: skip

    def _events(self, message_id: str, model: str, reply: AnthropicReply) -> Iterator[tuple[str, dict[str, Any]]]:
        message: dict[str, Any] = {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**reply.usage, "output_tokens": 1},
        }  # fmt: skip
        yield "message_start", {"type": "message_start", "message": message}
        yield "ping", {"type": "ping"}
        for index, (kind, value) in enumerate(reply.blocks):
            if kind == "text":
                yield _start(index, {"type": "text", "text": ""})
                for word in _pieces(value):
                    yield _delta(index, {"type": "text_delta", "text": word})
            elif kind == "thinking":
                yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
                for word in _pieces(value):
                    yield _delta(index, {"type": "thinking_delta", "thinking": word})
                yield _delta(index, {"type": "signature_delta", "signature": f"sig-{index}"})
            else:
                name, arguments = value
                call_id = f"toolu_{message_id}_{index}"
                yield _start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})
                raw = json.dumps(arguments)
                for piece in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
                    yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        if reply.error_event is not None:
            yield "error", {"type": "error", "error": {"type": reply.error_event, "message": "Overloaded"}}
            return
        delta = {"stop_reason": reply.stop_reason, "stop_sequence": None}
        usage = {"output_tokens": reply.usage["output_tokens"]}
        yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
        yield "message_stop", {"type": "message_stop"}


def _start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word + (" " if i < len(words) - 1 else "") for i, word in enumerate(words)]
