"""OpenAI Chat Completions through the official SDK, for any compatible base URL.

SDK and transport exceptions are translated to `hermes.errors.ProviderError`
subclasses here (`translate_errors`), and nowhere else. The SDK's own retries are off:
the engine owns retries so it can tell whether anything was delivered.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import openai

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
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    StreamingUnsupported,
)
from hermes.redact import redact_url

try:  # the SDK moved to httpx2; older releases use httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _httpx  # type: ignore[no-redef,import-not-found,unused-ignore]

# API errors without a status whose text means the connection, not the request, failed.
_CONNECTION_LOST = re.compile(
    r"connection (lost|reset|closed|terminated|error)|peer closed|reset by peer|"
    r"upstream connect error|incomplete chunked read|server disconnected|network error",
    re.IGNORECASE,
)
_STREAM_UNSUPPORTED = re.compile(r"stream(ing)?\b.*\bnot (supported|available|allowed)", re.IGNORECASE)
_STREAM_OPTIONS_REJECTED = re.compile(r"stream_options", re.IGNORECASE)
# Tells the SDK to return the response unread (what `with_streaming_response` does).
_RAW_STREAM_HEADER = "X-Stainless-Raw-Response"


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _status_error(exc: openai.APIStatusError, provider: str) -> ProviderError:
    status = exc.status_code
    detail = exc.message
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
            retry_after=_retry_after(exc.response.headers),
            provider=provider,
        )
    if _STREAM_UNSUPPORTED.search(detail or ""):
        return StreamingUnsupported(detail, status=status, provider=provider)
    if status >= 500 or status == 408:
        return ProviderError(
            f"model endpoint error ({status}): {detail}",
            status=status,
            retryable=True,
            retry_after=_retry_after(exc.response.headers),
            provider=provider,
        )
    return ProviderError(f"model endpoint rejected the request ({status}): {detail}", status=status, provider=provider)


@contextlib.contextmanager
def translate_errors(provider: str, base_url: str) -> Iterator[None]:
    """Map SDK/transport exceptions to ProviderError subclasses (credentials in the URL masked)."""
    base_url = redact_url(base_url)
    try:
        yield
    except openai.APITimeoutError:
        raise ProviderTimeout(f"timed out talking to {base_url}", retryable=True, provider=provider) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise ProviderConnectionError(
            f"cannot reach the model endpoint {base_url} ({type(cause).__name__}: {cause})",
            retryable=True,
            provider=provider,
        ) from None
    except openai.APIStatusError as exc:
        raise _status_error(exc, provider) from None
    except openai.APIError as exc:  # no status: e.g. an SSE error event mid-stream
        message = exc.message or str(exc)
        if _STREAM_UNSUPPORTED.search(message):
            raise StreamingUnsupported(message, provider=provider) from None
        transient = bool(_CONNECTION_LOST.search(message))
        raise ProviderConnectionError(message, retryable=True, provider=provider) if transient else ProviderError(
            f"model endpoint error: {message}", provider=provider
        ) from None
    except _httpx.TimeoutException as exc:
        raise ProviderTimeout(f"timed out reading from {base_url} ({type(exc).__name__})", retryable=True, provider=provider) from None
    except _httpx.TransportError as exc:
        raise ProviderConnectionError(
            f"connection to {base_url} failed ({type(exc).__name__}: {exc})", retryable=True, provider=provider
        ) from None
    except (ConnectionError, OSError) as exc:
        raise ProviderConnectionError(f"connection to {base_url} failed ({exc})", retryable=True, provider=provider) from None


def _chunk_events(data: str) -> list[ProviderEvent]:
    """ProviderEvents of one `data:` frame of a chat.completion.chunk stream."""
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        chunk = None
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
        events.append(UsageChunk(Usage(prompt, completion, usage.get("total_tokens") or prompt + completion)))
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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            # Local servers accept any key; the SDK insists on a non-empty one.
            api_key=api_key or "not-needed",
            max_retries=0,
            timeout=_httpx.Timeout(read_timeout, connect=connect_timeout),
            default_headers=default_headers,
        )
        self._include_usage = True
        """Cleared for good once the endpoint rejects stream_options."""

    def describe(self) -> str:
        return f"openai-compatible endpoint {redact_url(self.base_url)}"

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.tools:
            body["tools"] = request.tools
        body.update(request.extra)
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        body = self._body(request)
        with translate_errors(self.name, self.base_url):
            async with contextlib.AsyncExitStack() as stack:
                try:
                    response = await stack.enter_async_context(
                        self._open(body, request.include_usage and self._include_usage)
                    )
                except openai.BadRequestError as exc:
                    # Some servers reject stream_options; drop it once and for all.
                    if not (self._include_usage and _STREAM_OPTIONS_REJECTED.search(exc.message or "")):
                        raise
                    self._include_usage = False
                    response = await stack.enter_async_context(self._open(body, False))
                # Leaving the stack closes the response: on cancellation that is what
                # stops the upstream request.
                done = False
                async for line in response.aiter_lines():
                    if done or not line.startswith("data:"):
                        continue  # comments (keepalives), event names, separators; after
                        # [DONE] the body is drained so the connection can be reused
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        continue
                    for event in _chunk_events(data):
                        yield event

    @contextlib.asynccontextmanager
    async def _open(self, body: dict[str, Any], include_usage: bool) -> AsyncIterator[Any]:
        """POST the request through the SDK and hand back the raw streaming response.

        The SDK still owns the transport, auth, base URL and status-error mapping; the
        body goes out as built (no per-request type transformation of the tool schemas)
        and the SSE frames are decoded with `json.loads` rather than the SDK's pydantic
        models, which cost several times more CPU per chunk than the rest of the engine.
        """
        payload: dict[str, Any] = {**body, "stream": True}
        if include_usage:
            payload["stream_options"] = {"include_usage": True}
        response = await self._client.post(
            "/chat/completions",
            cast_to=_httpx.Response,
            body=payload,
            options={"headers": {_RAW_STREAM_HEADER: "stream"}},
        )
        try:
            yield response
        finally:
            await response.aclose()

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        with translate_errors(self.name, self.base_url):
            response = await self._client.post("/chat/completions", cast_to=_httpx.Response, body=self._body(request))
            try:
                payload = response.json()
            except ValueError:
                payload = None
        if not isinstance(payload, dict):
            raise ProviderError("the model endpoint sent a response that is not a JSON object", retryable=True)
        return _payload_events(payload, "message")

    async def list_models(self) -> list[str]:
        """Model ids the endpoint offers (used by `hermes doctor`)."""
        with translate_errors(self.name, self.base_url):
            page = await self._client.models.list()
        return [model.id for model in page.data]

    async def aclose(self) -> None:
        await self._client.close()
