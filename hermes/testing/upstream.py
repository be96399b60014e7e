"""A scripted OpenAI-compatible upstream served over HTTP on loopback.

    async with ScriptedUpstream() as upstream:          # or upstream.start()/stop()
        upstream.enqueue(text_reply("Hello!"))
        upstream.enqueue(tool_reply([call("terminal", {"command": "ls"})]))
        upstream.enqueue(tool_reply([call("get_weather", {"city": "Paris"})]))  # a client's tool
        ... point hermes at upstream.base_url ...
        assert upstream.requests[0].body["stream"] is True

Each POST /v1/chat/completions takes the next queued `Reply` (or `default`; when
nothing is queued, a request with a ``response_format`` gets JSON that fits it,
`sample_json`, and any other a 500). A reply is a list of steps played in order: `Chunk` (one SSE
`data:` frame), `Sleep`, `Stall` (go silent, keeping the connection open), `Drop`
(close the connection abruptly). For non-streaming requests the chunks are folded into
one chat.completion body. `ScriptedUpstream.in_thread()` runs the server on its own
loop for synchronous callers (subprocess and CliRunner tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

# ---- script building blocks -----------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One `data:` frame: a choice delta, or (with usage) the final usage frame."""

    delta: dict[str, Any] | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Stall:
    """Send nothing more; hold the connection open for `seconds` (or until the client leaves)."""

    seconds: float = 3600.0


@dataclass(frozen=True)
class Drop:
    """Close the TCP connection without finishing the response."""


@dataclass(frozen=True)
class Raw:
    """Bytes written as they are (e.g. an SSE error event)."""

    data: bytes


Step = Chunk | Sleep | Stall | Drop | Raw


@dataclass
class Reply:
    steps: list[Step] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None
    """Error body for a non-200 reply."""
    headers: dict[str, str] = field(default_factory=dict)
    chunk_delay: float = 0.0
    """Pause before each Chunk (simulates generation speed)."""

    def stall_after(self, n_chunks: int, seconds: float = 3600.0) -> Reply:
        """Keep the first n chunks, then go silent."""
        return Reply(self._first_chunks(n_chunks) + [Stall(seconds)], chunk_delay=self.chunk_delay)

    def drop_after(self, n_chunks: int) -> Reply:
        """Keep the first n chunks, then cut the connection."""
        return Reply(self._first_chunks(n_chunks) + [Drop()], chunk_delay=self.chunk_delay)

    def _first_chunks(self, n: int) -> list[Step]:
        out: list[Step] = []
        count = 0
        for step in self.steps:
            if isinstance(step, Chunk):
                if count == n:
                    break
                count += 1
            out.append(step)
        return out


@dataclass(frozen=True)
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


def call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> ToolCallSpec:
    return ToolCallSpec(name, {} if arguments is None else arguments, id)


def split(text: str, pieces: int) -> list[str]:
    """Split text into `pieces` nearly equal parts (never splitting a character)."""
    pieces = max(1, min(pieces, len(text) or 1))
    size, extra = divmod(len(text), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return [p for p in out if p] or [text]


def _usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    """A usage frame; `cached` (part of `prompt`) goes in `prompt_tokens_details` as OpenAI reports it."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def text_reply(
    text: str,
    *,
    pieces: int | None = None,
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    finish_reason: str = "stop",
    usage: tuple[int, int] | tuple[int, int, int] | None = (10, 5),
    chunk_delay: float = 0.0,
) -> Reply:
    """A plain answer streamed in `pieces` chunks (default: one per word)."""
    steps: list[Step] = []
    if reasoning:
        for part in split(reasoning, max(1, len(reasoning.split()))):
            steps.append(Chunk(delta={reasoning_field: part}))
    parts = split(text, pieces) if pieces else _words(text)
    for i, part in enumerate(parts):
        delta: dict[str, Any] = {"content": part}
        if i == 0:
            delta["role"] = "assistant"
        steps.append(Chunk(delta=delta))
    steps.append(Chunk(delta={}, finish_reason=finish_reason))
    if usage is not None:
        steps.append(Chunk(usage=_usage(*usage)))
    return Reply(steps, chunk_delay=chunk_delay)


def tool_reply(
    calls: Sequence[ToolCallSpec],
    *,
    text: str | None = None,
    arg_pieces: int = 3,
    finish_reason: str = "tool_calls",
    usage: tuple[int, int] | tuple[int, int, int] | None = (20, 8),
    start_index: int = 0,
    chunk_delay: float = 0.0,
) -> Reply:
    """An assistant message with tool calls; arguments stream in `arg_pieces` fragments."""
    steps: list[Step] = []
    if text:
        for i, part in enumerate(_words(text)):
            steps.append(Chunk(delta={"content": part, **({"role": "assistant"} if i == 0 else {})}))
    for offset, spec in enumerate(calls):
        index = start_index + offset
        call_id = spec.id or f"call_{index}_{spec.name}"
        args = spec.arguments if isinstance(spec.arguments, str) else json.dumps(spec.arguments)
        fragments = split(args, arg_pieces) if args else [""]
        steps.append(
            Chunk(
                delta={
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": spec.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for fragment in fragments:
            steps.append(Chunk(delta={"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
    steps.append(Chunk(delta={}, finish_reason=finish_reason))
    if usage is not None:
        steps.append(Chunk(usage=_usage(*usage)))
    return Reply(steps, chunk_delay=chunk_delay)


def error_reply(
    status: int,
    message: str,
    *,
    type: str = "server_error",
    code: str | None = None,
    retry_after: float | None = None,
) -> Reply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(
        status=status,
        error={"error": {"message": message, "type": type, "param": None, "code": code}},
        headers=headers,
    )


def json_reply(value: Any, **kwargs: Any) -> Reply:
    """An answer whose text is `value` as JSON (for a request that asks for a format)."""
    return text_reply(json.dumps(value), **kwargs)


def sample_json(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """A small value that fits `schema` (JSON Schema; `$ref`s into the root's `$defs`/`definitions`).

    Objects get every listed property; strings are "text", numbers 1, booleans true,
    arrays one item; `enum`/`const` take their first value and `anyOf`/`oneOf` their first branch.
    """
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > 12:
        return {}
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return sample_json(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return sample_json(schema[key][0], root, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    match kind:
        case "object":
            props = schema.get("properties") or {}
            return {name: sample_json(spec, root, depth + 1) for name, spec in props.items()}
        case "array":
            return [sample_json(schema.get("items") or {"type": "string"}, root, depth + 1)]
        case "string":
            return "text"
        case "integer":
            return 1
        case "number":
            return 1.0
        case "boolean":
            return True
        case _:
            return None


def format_reply(response_format: dict[str, Any]) -> Reply:
    """The JSON answer to a request with this `response_format` (`sample_json` of its schema)."""
    spec = response_format.get("json_schema") if response_format.get("type") == "json_schema" else None
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return json_reply(sample_json(schema) if isinstance(schema, dict) else {"answer": "text"})


def _words(text: str) -> list[str]:
    """Split keeping whitespace attached, so the pieces join back to `text`."""
    out: list[str] = []
    current = ""
    for ch in text:
        current += ch
        if ch == " ":
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return out or [""]


# ---- recording ----------------------------------------------------------------------


@dataclass
class RecordedRequest:
    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    client_disconnected: bool = False
    """True when the client closed the connection before the reply was complete."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def response_format(self) -> dict[str, Any] | None:
        """The `response_format` the request carried (None: none)."""
        value = self.body.get("response_format")
        return value if isinstance(value, dict) else None

    @property
    def tool_names(self) -> list[str]:
        """The names of the function tools the request offered (hermes' and a client's)."""
        return [str((tool.get("function") or {}).get("name")) for tool in self.body.get("tools") or ()]


# ---- the server ---------------------------------------------------------------------


class ScriptedUpstream:
    """See the module docstring."""

    def __init__(
        self, *, model: str = "scripted-model", api_key: str | None = None, keepalive_timeout: float = 75.0
    ) -> None:
        self.model = model
        self.keepalive_timeout = keepalive_timeout
        """Seconds an idle keep-alive connection stays open before the server closes it."""
        self.api_key = api_key
        """When set, requests without `Authorization: Bearer <api_key>` get 401."""
        self.replies: deque[Reply] = deque()
        self.default: Reply | None = None
        """Played when the queue is empty (instead of a 500)."""
        self.requests: list[RecordedRequest] = []
        self.reject_stream_options = False
        """Answer 400 to requests that carry stream_options (old servers do)."""
        self.streaming_unsupported = False
        """Answer 400 "Streaming is not supported" to stream=true requests."""
        self._runner: web.AppRunner | None = None
        self._ids = itertools.count(1)
        self.port = 0

    # lifecycle

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> ScriptedUpstream:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=0.5,
            keepalive_timeout=self.keepalive_timeout,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        (address,) = self._runner.addresses  # one TCP site, bound to port 0: the real port is here
        self.port = int(address[1])
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedUpstream:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @classmethod
    @contextlib.contextmanager
    def in_thread(cls, **kwargs: Any) -> Iterator[ScriptedUpstream]:
        """Run an upstream on a private loop in a daemon thread (for sync callers).

        `enqueue` is safe to call from the caller's thread (deque appends are atomic).
        """
        upstream = cls(**kwargs)
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(upstream.start())
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, name="scripted-upstream", daemon=True)
        thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted upstream did not start")
        try:
            yield upstream
        finally:
            asyncio.run_coroutine_threadsafe(upstream.stop(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

    # scripting

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def assert_complete(self) -> None:
        if self.replies:
            raise AssertionError(f"{len(self.replies)} scripted replies were never requested")

    # handlers

    async def _models(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._unauthorized()
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "scripted"}]}
        )

    def _authorized(self, request: web.Request) -> bool:
        return self.api_key is None or request.headers.get("Authorization") == f"Bearer {self.api_key}"

    @staticmethod
    def _unauthorized() -> web.Response:
        return web.json_response(
            {
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            status=401,
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": {"message": "bad json", "type": "invalid_request_error"}}, status=400)
        record = RecordedRequest(body=body, headers=dict(request.headers), started=time.monotonic())
        self.requests.append(record)
        try:
            if not self._authorized(request):
                return self._unauthorized()
            stream = bool(body.get("stream"))
            if stream and self.streaming_unsupported:
                return self._error(400, "Streaming is not supported for this model")
            if stream and self.reject_stream_options and "stream_options" in body:
                return self._error(400, "Unrecognized request argument supplied: stream_options")
            reply = self.replies.popleft() if self.replies else self.default
            if reply is None and record.response_format is not None:
                reply = format_reply(record.response_format)
            if reply is None:
                return self._error(500, "scripted upstream: no reply queued")
            if reply.status != 200:
                return web.json_response(reply.error or {}, status=reply.status, headers=reply.headers)
            if stream:
                return await self._play_stream(request, record, reply, body)
            return await self._play_json(request, record, reply)
        finally:
            record.finished.set()

    @staticmethod
    def _error(status: int, message: str) -> web.Response:
        return web.json_response(
            {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}},
            status=status,
        )

    def _frame(self, completion_id: str, created: int, chunk: Chunk) -> bytes:
        if chunk.usage is not None:
            payload: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model,
                "choices": [],
                "usage": chunk.usage,
            }
        else:
            payload = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model,
                "choices": [{"index": 0, "delta": chunk.delta or {}, "finish_reason": chunk.finish_reason}],
            }
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    async def _play_stream(
        self, request: web.Request, record: RecordedRequest, reply: Reply, body: dict[str, Any]
    ) -> web.StreamResponse:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        completion_id = f"chatcmpl-{next(self._ids)}"
        created = int(time.time())
        try:
            for step in reply.steps:
                if isinstance(step, Chunk):
                    if step.usage is not None and not include_usage:
                        continue
                    if reply.chunk_delay:
                        await asyncio.sleep(reply.chunk_delay)
                    await response.write(self._frame(completion_id, created, step))
                elif isinstance(step, Sleep):
                    if await self._wait_or_disconnect(request, step.seconds):
                        record.client_disconnected = True
                        return response
                elif isinstance(step, Stall):
                    if await self._wait_or_disconnect(request, step.seconds):
                        record.client_disconnected = True
                    return response
                elif isinstance(step, Drop):
                    if request.transport is not None:
                        request.transport.abort()
                    return response
                elif isinstance(step, Raw):
                    await response.write(step.data)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
            record.client_disconnected = True
            raise
        return response

    @staticmethod
    async def _wait_or_disconnect(request: web.Request, seconds: float) -> bool:
        """Sleep up to `seconds`; True as soon as the client has gone away."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            transport = request.transport
            if transport is None or transport.is_closing():
                return True
            await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
        return False

    async def _play_json(self, request: web.Request, record: RecordedRequest, reply: Reply) -> web.StreamResponse:
        content, reasoning, finish, usage = "", "", None, None
        calls: dict[int, dict[str, Any]] = {}
        for step in reply.steps:
            if isinstance(step, (Stall, Sleep)):
                if await self._wait_or_disconnect(request, step.seconds):
                    record.client_disconnected = True
                    return web.Response(status=499)
                if isinstance(step, Stall):
                    return web.Response(status=504)
                continue
            if isinstance(step, Drop):
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=499)
            if not isinstance(step, Chunk):
                continue
            if step.usage is not None:
                usage = step.usage
                continue
            delta = step.delta or {}
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
            for tc in delta.get("tool_calls") or []:
                empty = {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                slot = calls.setdefault(tc["index"], empty)
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] = fn.get("name") or slot["function"]["name"]
                slot["function"]["arguments"] += fn.get("arguments") or ""
            finish = step.finish_reason or finish
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return web.json_response(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish or "stop"}],
                "usage": usage or _usage(0, 0),
            }
        )
