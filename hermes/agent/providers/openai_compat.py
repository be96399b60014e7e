"""OpenAI Chat Completions over one pooled aiohttp session, for any compatible base URL.

The request body is serialised once and sent in one write (each tool schema's JSON is
kept and reused: a tool schema dict is never changed once sent); SSE frames and JSON
replies are decoded with `json.loads` (no SDK models, no per-request schema transformation).
HTTP statuses and transport exceptions are translated to `hermes.errors.ProviderError`
subclasses here, and nowhere else. Nothing retries here: the engine owns retries so it
can tell whether anything was delivered.

Invariants:
- The provider owns one `aiohttp.ClientSession` (keep-alive pool), created on first use
  on the running loop and closed by `aclose()`. The proxy comes from the environment
  (`HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, proxy credentials from netrc), looked up once
  per session rather than in a worker thread per request as aiohttp's `trust_env` does;
  TLS roots are OpenSSL's defaults (which honour `SSL_CERT_FILE`/`SSL_CERT_DIR`).
- A stream abandoned before its end (cancellation, `aclose`) closes its connection,
  which is what stops the upstream request; a stream read to its end returns the
  connection to the pool.
- A pooled connection the server closed while it sat idle (its keep-alive timeout
  passed before this process noticed) never fails a request: a POST that dies on a
  reused connection before any response is sent again at once, on another connection,
  without using up one of the engine's retries. With `keep_alive=False` (the local
  llama.cpp server, whose keep-alive is short) every request opens its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from hermes import __version__
from hermes.agent.output_format import response_format_body
from hermes.agent.prefix_memo import PrefixMemo
from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    Provider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes.agent.types import Usage
from hermes.errors import (
    ContextLengthExceeded,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    StreamingUnsupported,
)
from hermes.redact import redact_url

# API errors without a status whose text means the connection, not the request, failed.
_CONNECTION_LOST = re.compile(
    r"connection (lost|reset|closed|terminated|error)|peer closed|reset by peer|"
    r"upstream connect error|incomplete chunked read|server disconnected|network error",
    re.IGNORECASE,
)
_STREAM_UNSUPPORTED = re.compile(r"stream(ing)?\b.*\bnot (supported|available|allowed)", re.IGNORECASE)
_STREAM_OPTIONS_REJECTED = re.compile(r"stream_options", re.IGNORECASE)
_JSON_BODY = {"Content-Type": "application/json"}
_STALE_CONNECTION_ERRORS = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)
"""What a request sent over a connection the server had already closed fails with."""
_ENCODED_TOOLS = 256
"""Tool schemas whose JSON the provider keeps (the cache starts over when full)."""
_STALE_RESENDS = 8
"""Idle pooled connections one request tries before giving up on the pool's idle ones
(each failed one is dropped; once none is left the request opens a fresh connection)."""


class _Attempt:
    """Per-request tracing context: whether the connector handed out a pooled connection."""

    __slots__ = ("reused",)

    def __init__(self) -> None:
        self.reused = False


async def _mark_reused(_session: object, context: Any, _params: object) -> None:
    attempt = context.trace_request_ctx
    if isinstance(attempt, _Attempt):
        attempt.reused = True


def _reuse_trace() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_mark_reused)
    return trace


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _error_detail(status: int, text: str) -> tuple[str, str | None]:
    """(the upstream's message, its error code): the OpenAI envelope's error.message and
    error.code, else the body and None."""
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
            code = error.get("code")
            return str(error["message"]), code if isinstance(code, str) else None
        if isinstance(error, str) and error:
            return error, None
    return text.strip()[:500] or f"HTTP {status}", None


_IMAGES_REFUSED = re.compile(r"image|vision|multi-?modal", re.IGNORECASE)
"""A client error naming these is the endpoint refusing a prompt's images (unless it is about
length: a context overflow may count image tokens)."""
_TOO_LONG = re.compile(r"context|too long|too many tokens|maximum.*tokens", re.IGNORECASE)


def status_error(status: int, text: str, headers: Mapping[str, str] | None, provider: str) -> ProviderError:
    """The ProviderError for an upstream's non-2xx reply (`text` is its body)."""
    detail, code = _error_detail(status, text)
    if status in (401, 403):
        return ProviderAuthError(
            f"authentication failed ({status}): check HERMES_API_KEY — {detail}",
            status=status,
            provider=provider,
        )
    if status == 429:
        return ProviderRateLimited(
            f"rate limited by the model endpoint (429): {detail}",
            status=status,
            retryable=True,
            retry_after=_retry_after(headers),
            provider=provider,
        )
    if code == "context_length_exceeded":
        return ContextLengthExceeded(
            f"the request is too long for the model's context ({status}): {detail}", status=status, provider=provider
        )
    if _STREAM_UNSUPPORTED.search(detail):
        return StreamingUnsupported(detail, status=status, provider=provider)
    if status in (400, 415, 422) and _IMAGES_REFUSED.search(detail) and not _TOO_LONG.search(detail):
        return ProviderError(
            f"the model does not accept images ({status}): {detail} — send the prompt without images, "
            "or choose a model that reads them",
            status=status,
            provider=provider,
        )
    if status >= 500 or status == 408:
        return ProviderError(
            f"model endpoint error ({status}): {detail}",
            status=status,
            retryable=True,
            retry_after=_retry_after(headers),
            provider=provider,
        )
    return ProviderError(f"model endpoint rejected the request ({status}): {detail}", status=status, provider=provider)


@contextlib.contextmanager
def translate_errors(provider: str, base_url: str) -> Iterator[None]:
    """Map transport exceptions to ProviderError subclasses (credentials in the URL masked).

    ProviderErrors (statuses, error frames) pass through unchanged.
    """
    try:
        yield
    except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
        # Connect timeouts and sock_read timeouts (no byte for `read_timeout` seconds).
        raise ProviderTimeout(
            f"timed out talking to {redact_url(base_url)} ({type(exc).__name__})", retryable=True, provider=provider
        ) from None
    except aiohttp.ClientConnectorError as exc:
        raise ProviderConnectionError(
            f"cannot reach the model endpoint {redact_url(base_url)} ({type(exc).__name__}: {exc.os_error})",
            retryable=True,
            provider=provider,
        ) from None
    except (aiohttp.ClientError, OSError) as exc:
        # Disconnects, truncated bodies, malformed responses, refused proxies.
        raise ProviderConnectionError(
            f"connection to {redact_url(base_url)} failed ({type(exc).__name__}: {exc})",
            retryable=True,
            provider=provider,
        ) from None


_raw_decode = json.JSONDecoder().raw_decode


def _chunk_events(data: str) -> list[ProviderEvent]:
    """ProviderEvents of one `data:` frame of a chat.completion.chunk stream (`data` is
    stripped: decoded without `json.loads`' whitespace scans, and whole or not at all)."""
    try:
        chunk, end = _raw_decode(data)
    except json.JSONDecodeError:
        chunk = None
    else:
        if end != len(data):
            chunk = None  # trailing garbage
    if not isinstance(chunk, dict):
        raise ProviderError(f"malformed streaming data from the model endpoint: {data[:120]!r}", retryable=True)
    return _payload_events(chunk, "delta")


def _payload_events(payload: dict[str, Any], part: str) -> list[ProviderEvent]:
    """ProviderEvents of a chat.completion.chunk (`part="delta"`) or a whole
    chat.completion (`part="message"`, first choice only): one parser for both shapes."""
    error = payload.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        message = message or "the model endpoint reported an error mid-stream"
        if _STREAM_UNSUPPORTED.search(message):
            raise StreamingUnsupported(message)
        transient = bool(_CONNECTION_LOST.search(message))
        raise ProviderError(f"model endpoint error: {message}", retryable=transient)
    events: list[ProviderEvent] = []
    usage = payload.get("usage")
    if isinstance(usage, dict):
        prompt = usage.get("prompt_tokens") or 0
        completion = usage.get("completion_tokens") or 0
        details = usage.get("prompt_tokens_details")
        cached = (details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
        total = usage.get("total_tokens") or prompt + completion
        events.append(UsageChunk(Usage(prompt, completion, total, cached)))
    choices = payload.get("choices") or ()
    for choice in choices if part == "delta" else choices[:1]:
        body = choice.get(part) or {}
        reasoning = body.get("reasoning_content") or body.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            events.append(ReasoningChunk(reasoning))
        content = body.get("content")
        if isinstance(content, str) and content:
            events.append(TextChunk(content))
        for position, tc in enumerate(body.get("tool_calls") or ()):
            fn = tc.get("function") or {}
            index = tc.get("index")
            events.append(
                ToolCallChunk(
                    index=index if isinstance(index, int) else position,
                    id=tc.get("id") or None,
                    name=fn.get("name") or None,
                    arguments=fn.get("arguments") or "",
                )
            )
        if choice.get("finish_reason"):
            events.append(FinishChunk(choice["finish_reason"]))
        elif part == "message":
            events.append(FinishChunk("stop"))
    return events


class OpenAICompatProvider(Provider):
    name: ClassVar[str] = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        connect_timeout: float = 30.0,
        read_timeout: float = 600.0,
        default_headers: dict[str, str] | None = None,
        keep_alive: bool = True,
    ) -> None:
        """Args:
            keep_alive: pool connections between requests; False opens a connection per
                request (for a loopback server whose keep-alive timeout is shorter than
                the pause between two model calls).
        """
        self.base_url = base_url.rstrip("/")
        endpoint = URL(self.base_url)
        self._headers: dict[str, str] = {
            # Local servers accept any key; some insist on a non-empty one.
            "Authorization": f"Bearer {api_key or 'not-needed'}",
            "User-Agent": f"hermes/{__version__}",
            "Accept": "application/json",
            **(default_headers or {}),
        }
        if endpoint.user is not None or endpoint.password is not None:
            # Credentials in the URL are sent as Basic auth, in place of the key.
            self._headers["Authorization"] = aiohttp.encode_basic_auth(endpoint.user or "", endpoint.password or "")
            endpoint = endpoint.with_user(None)
        self._chat_url = _join(endpoint, "chat/completions")
        self._models_url = _join(endpoint, "models")
        self._timeout = aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_read=read_timeout)
        self._keep_alive = keep_alive
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._proxy: URL | None = None
        self._proxy_auth: aiohttp.BasicAuth | None = None
        self._include_usage = True
        """Cleared for good once the endpoint rejects stream_options."""
        self._encoded_tools: dict[int, tuple[Any, bytes]] = {}
        """id(tool schema) -> (the schema, its JSON); see `_encode`."""
        self._encoded_history: PrefixMemo[tuple[bytes, list[int]]] = PrefixMemo()
        """(the JSON of a request's messages after the system prompt, comma-separated; where
        each message's JSON ends in it), by their leading messages (`hermes.agent.prefix_memo`)."""

    def describe(self) -> str:
        return f"openai-compatible endpoint {redact_url(self.base_url)}"

    def _http(self) -> aiohttp.ClientSession:
        """The pooled session of the running loop (created on first use)."""
        session = self._session
        loop = asyncio.get_running_loop()
        if session is None or session.closed or self._session_loop is not loop:
            if session is not None and not session.closed:
                # Made on another loop (an earlier asyncio.run) that was left without
                # `aclose()`: drop the pool (a closed loop's sockets can only be reported).
                connector = session.connector
                session.detach()
                if connector is not None:
                    with contextlib.suppress(Exception):
                        connector._close()
            # No cap on connections: how many turns run at once is the server's admission
            # (`max_concurrent_runs`), and aiohttp's default cap (100) would make the 101st
            # stream wait, unseen, for another one to end.
            connector = aiohttp.TCPConnector(limit=0, force_close=not self._keep_alive)
            session = self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=self._timeout, connector=connector, trace_configs=[_reuse_trace()]
            )
            self._session_loop = loop
            self._proxy, self._proxy_auth = _env_proxy(self._chat_url)
        return session

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.output_format is not None:
            body["response_format"] = response_format_body(request.output_format)
        body.update(request.extra)
        return body

    def _encode(self, body: dict[str, Any]) -> bytes:
        """The body as compact ASCII JSON, joined once from parts kept by identity: each
        tool schema's JSON (the same schemas go with every request of a turn and of the
        next ones: `ToolRegistry.schemas()` hands out the same dicts), and the messages'
        after the system prompt (a session's history comes as the same dicts turn after
        turn, `hermes.agent.history`, and a turn's context grows at its end)."""
        tools = body.get("tools")
        messages = body.get("messages")
        rest = {key: value for key, value in body.items() if key != "tools" and key != "messages"}
        parts = [_compact(rest)[:-1]] if rest else [b"{"]
        if messages is not None:
            parts.append(b',"messages":[' if rest else b'"messages":[')
            self._add_messages(parts, messages)
            parts.append(b"]")
        if tools:
            parts.append(b',"tools":[' if rest or messages is not None else b'"tools":[')
            parts.append(b",".join(map(self._tool_json, tools)))
            parts.append(b"]")
        parts.append(b"}")
        return b"".join(parts)

    def _add_messages(self, parts: list[bytes], messages: list[Any]) -> None:
        """Append the messages' JSON, comma-separated, to `parts`: the messages after the
        system prompt that an earlier request had too (the same dicts: `_encoded_history`)
        come from there, and only what follows them is encoded."""
        if not messages:
            return
        rest = messages[1:]
        found = self._encoded_history.find(rest)
        shared, (encoded, ends) = found if found is not None else (0, (b"", []))
        if shared < len(rest):
            ends = ends[:shared]
            kept = encoded[: ends[-1]] if ends else b""
            new = list(map(_compact, rest[shared:]))
            encoded = b",".join((kept, *new)) if kept else b",".join(new)
            at = len(kept)
            for data in new:
                at += len(data) + (1 if at else 0)
                ends.append(at)
            self._encoded_history.keep(rest, (encoded, ends), weight=len(encoded))
        parts.append(_compact(messages[0]))
        if rest:
            end = ends[len(rest) - 1]
            parts += (b",", encoded if end == len(encoded) else encoded[:end])

    def _tool_json(self, tool: Any) -> bytes:
        hit = self._encoded_tools.get(id(tool))
        if hit is not None and hit[0] is tool:
            return hit[1]
        data = _compact(tool)
        if len(self._encoded_tools) >= _ENCODED_TOOLS:
            self._encoded_tools.clear()  # a client's own tools come new with every request
        self._encoded_tools[id(tool)] = (tool, data)  # the schema is held: its id stays its own
        return data

    async def _post(self, body: dict[str, Any]) -> aiohttp.ClientResponse:
        """POST the body in one write; a non-2xx reply is read, closed and raised as ProviderError."""
        data = self._encode(body)
        session = self._http()
        resends = 0
        while True:
            attempt = _Attempt()
            try:
                response = await session.post(
                    self._chat_url,
                    data=data,
                    headers=_JSON_BODY,
                    proxy=self._proxy,
                    proxy_auth=self._proxy_auth,
                    trace_request_ctx=attempt,
                )
                break
            except _STALE_CONNECTION_ERRORS:
                # Died on a pooled connection before any response: the server closed it
                # while it sat idle here. Send the request again on another connection.
                if not attempt.reused or resends >= _STALE_RESENDS:
                    raise
                resends += 1
        if response.status >= 300:
            try:
                text = await response.text(errors="replace")
            finally:
                response.release()
            raise status_error(response.status, text, response.headers, self.name)
        return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        body: dict[str, Any] = {**self._body(request), "stream": True}
        with translate_errors(self.name, self.base_url):
            include_usage = request.include_usage and self._include_usage
            try:
                response = await self._post(
                    {**body, "stream_options": {"include_usage": True}} if include_usage else body
                )
            except ProviderError as exc:
                # Some servers reject stream_options; drop it once and for all.
                if not (include_usage and exc.status == 400 and _STREAM_OPTIONS_REJECTED.search(exc.message)):
                    raise
                self._include_usage = False
                response = await self._post(body)
            finished = False
            try:
                payloads = _SSEData()
                async for piece in response.content.iter_any():
                    for data in payloads.feed(piece):
                        for event in _chunk_events(data):
                            yield event
                for data in payloads.end():
                    for event in _chunk_events(data):
                        yield event
                finished = True
            finally:
                # Read to the end: the connection goes back to the pool. Abandoned:
                # closing it is what stops the upstream request.
                if finished:
                    response.release()
                else:
                    response.close()

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        with translate_errors(self.name, self.base_url):
            response = await self._post(self._body(request))
            try:
                raw = await response.read()
            finally:
                response.release()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise ProviderError("the model endpoint sent a response that is not a JSON object", retryable=True)
        return _payload_events(payload, "message")

    async def list_models(self) -> list[str]:
        """Model ids the endpoint offers (used by `hermes doctor`)."""
        with translate_errors(self.name, self.base_url):
            session = self._http()
            async with session.get(self._models_url, proxy=self._proxy, proxy_auth=self._proxy_auth) as response:
                text = await response.text(errors="replace")
                if response.status >= 300:
                    raise status_error(response.status, text, response.headers, self.name)
        try:
            page = json.loads(text)
        except ValueError:
            page = None
        models = page.get("data") if isinstance(page, dict) else None
        if not isinstance(models, list):
            raise ProviderError("the model endpoint's model list is not an OpenAI list object", provider=self.name)
        return [str(model["id"]) for model in models if isinstance(model, dict) and "id" in model]

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _compact(value: Any) -> bytes:
    # ASCII-escaped: text decoded with surrogateescape (tool output) still encodes.
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def _join(base: URL, path: str) -> URL:
    """`base` with `/path` appended to its path (its query, if any, kept)."""
    return base.with_path(f"{base.path.rstrip('/')}/{path}", keep_query=True)


def _env_proxy(endpoint: URL) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy the environment sets for the endpoint, or (None, None)."""
    try:
        return get_env_proxy_for_url(endpoint)
    except (LookupError, ValueError):
        return None, None


class _SSEData:
    """The `data:` payloads of an SSE body, up to `[DONE]`, read piece by piece (`feed`,
    then `end`); what follows `[DONE]` is read and dropped, so the connection can be reused.

    Comments (keepalives), event names and blank separators are skipped; lines may end
    in LF or CRLF and may be split across network reads. A plain object, not an async
    generator: the body's pieces are read by the provider's own loop.
    """

    __slots__ = ("done", "pending")

    def __init__(self) -> None:
        self.pending = b""
        self.done = False

    def feed(self, piece: bytes) -> list[str]:
        if self.done:
            return []
        lines = (self.pending + piece).split(b"\n")
        self.pending = lines.pop()
        payloads: list[str] = []
        for raw in lines:
            if not raw.startswith(b"data:"):
                continue
            data = raw[5:].strip().decode()
            if data == "[DONE]":
                self.done = True
                break
            payloads.append(data)
        return payloads

    def end(self) -> list[str]:
        """The payload of an unterminated last line, if any."""
        if not self.done and self.pending.startswith(b"data:"):
            data = self.pending[5:].strip().decode()
            if data != "[DONE]":
                return [data]
        return []
